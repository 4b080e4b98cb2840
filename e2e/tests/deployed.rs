//! The controllers as users deploy them: Pods from their image, on the real node
//! (`hack/test-deployed`: `make run` on its own cluster, then this suite with
//! `E2E_DEPLOYED=1`). What a stack of local processes cannot show: every controller's Pod
//! from the pinned image, each one deleted in the middle of an install, and a standby
//! replica taking over from a leader that is stopped or dies.
//!
//! Without deployed controllers (the local stack of `make test`'s main run) these tests
//! print why and end.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use deppy_api::ActiveResolution;
use e2e::sample_operator::{
    create_platform_operator, operator_pod_ready, uninstall, wait_installed, webhook_refusal,
};
use e2e::{TIMEOUT, deployed_namespace, env};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, Client, ResourceExt};
use rukpak_api::BundleDeployment;
use testkit::examples::sample;
use testkit::stack::Component;
use testkit::wait_for;

/// One test at a time: they replace the controllers' Pods under each other.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Whether the controllers are deployed (`E2E_DEPLOYED=1`) on a cluster with the real node;
/// prints why not otherwise.
async fn deployed(client: &Client) -> bool {
    if env().await.stack().is_some() {
        eprintln!(
            "the controllers run as local processes here: the deployed suite runs in hack/test-deployed (E2E_DEPLOYED=1)"
        );
        return false;
    }
    e2e::real_node(client).await
}

/// The running (not terminating) Pods of `component`'s Deployment.
async fn pods_of(client: &Client, component: Component) -> Vec<Pod> {
    Api::<Pod>::namespaced(client.clone(), deployed_namespace(component))
        .list(
            &ListParams::default()
                .labels(&format!("app.kubernetes.io/name={}", component.binary())),
        )
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect()
}

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// Waits until `component` has one Ready Pod that is not `old`, and returns its name.
async fn replaced(client: &Client, component: Component, old: &str) -> String {
    wait_for(
        &format!("a new Ready {} Pod", component.binary()),
        TIMEOUT,
        || async {
            let pods = pods_of(client, component).await;
            pods.iter()
                .find(|p| p.name_any() != old && is_ready(p))
                .map(ResourceExt::name_any)
                .ok_or_else(|| {
                    format!(
                        "{:?}",
                        pods.iter().map(ResourceExt::name_any).collect::<Vec<_>>()
                    )
                })
        },
    )
    .await
}

/// Waits until `api` holds an object named `name`.
async fn wait_exists<K>(api: &Api<K>, name: &str)
where
    K: kube::Resource + Clone + k8s_openapi::serde::de::DeserializeOwned + std::fmt::Debug,
{
    wait_for(&format!("{name} to exist"), TIMEOUT, || async {
        api.get_opt(name)
            .await
            .map_err(|e| e.to_string())?
            .map(|_| ())
            .ok_or_else(|| "not yet".to_owned())
    })
    .await;
}

/// Deletes `component`'s Pod (a graceful stop, as a node drain or `kubectl delete pod`
/// does) and returns its name.
async fn delete_pod(client: &Client, component: Component) -> String {
    let pod = pods_of(client, component)
        .await
        .pop()
        .unwrap_or_else(|| panic!("{} has no Pod", component.binary()));
    let name = pod.name_any();
    Api::<Pod>::namespaced(client.clone(), deployed_namespace(component))
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    name
}

#[tokio::test]
async fn every_controller_runs_from_its_pinned_image_on_the_real_node() {
    let _serial = SERIAL.lock().await;
    let client = testkit::client().await;
    if !deployed(&client).await {
        return;
    }
    let mut images = BTreeMap::new();
    for component in Component::ALL {
        let pods = pods_of(&client, component).await;
        let [pod] = pods.as_slice() else {
            panic!("{}: {} Pods, not one", component.binary(), pods.len());
        };
        let spec = pod.spec.as_ref().unwrap();
        assert_eq!(
            spec.node_name.as_deref(),
            Some(e2e::REAL_NODE),
            "{}",
            pod.name_any()
        );
        assert!(is_ready(pod), "{} is not Ready", pod.name_any());
        let container = &spec.containers[0];
        let image = container.image.clone().unwrap_or_default();
        assert!(
            image.contains("/olmv1-rs/olmv1@sha256:"),
            "{}: image {image}, not pinned by digest",
            pod.name_any()
        );
        let limit = container
            .resources
            .as_ref()
            .and_then(|r| r.limits.as_ref())
            .and_then(|l| l.get("memory"));
        assert!(limit.is_some(), "{} has no memory limit", pod.name_any());
        let status = &pod
            .status
            .as_ref()
            .unwrap()
            .container_statuses
            .as_ref()
            .unwrap()[0];
        assert!(
            status
                .container_id
                .as_deref()
                .is_some_and(|id| id.starts_with("containerd://")),
            "{}: {:?}",
            pod.name_any(),
            status.container_id
        );
        // Never killed for memory (a restart the other tests cause is a SIGKILL, not this).
        let last = status
            .last_state
            .as_ref()
            .and_then(|s| s.terminated.as_ref());
        assert_ne!(
            last.map(|t| t.reason.as_deref().unwrap_or_default()),
            Some("OOMKilled"),
            "{} was OOMKilled",
            pod.name_any()
        );
        images.insert(image, component.binary());
    }
    assert_eq!(
        images.len(),
        1,
        "one image for every controller: {images:?}"
    );
}

/// Each controller's Pod is deleted while it has work in flight: the resolver and activator
/// and platform-operators once the PlatformOperator has its resolution, rukpak-core and the
/// provisioners once its BundleDeployments exist. Their replacements finish the install:
/// the operator's Pod Ready, its webhook answering.
#[tokio::test]
async fn deleting_each_controller_pod_mid_install_still_ends_in_a_working_operator() {
    let _serial = SERIAL.lock().await;
    let client = testkit::client().await;
    if !deployed(&client).await {
        return;
    }
    let name = "memcached-operator-restarts";
    let began = Instant::now();
    create_platform_operator(&client, name, sample::MEMCACHED, None).await;

    wait_exists(&Api::<ActiveResolution>::all(client.clone()), name).await;
    let mut deleted = Vec::new();
    for component in [
        Component::DeppyResolver,
        Component::ResolutionActivator,
        Component::PlatformOperators,
    ] {
        deleted.push((component, delete_pod(&client, component).await));
    }
    wait_exists(&Api::<BundleDeployment>::all(client.clone()), name).await;
    for component in [
        Component::RukpakCore,
        Component::PlainProvisioner,
        Component::RegistryProvisioner,
    ] {
        deleted.push((component, delete_pod(&client, component).await));
    }
    for (component, old) in &deleted {
        replaced(&client, *component, old).await;
    }

    wait_installed(&client, name).await;
    wait_for("the operator's pod Ready on the real node", TIMEOUT, || {
        operator_pod_ready(&client)
    })
    .await;
    let refusal = webhook_refusal(&client, "default").await;
    eprintln!(
        "six controller Pods deleted mid-install; operator working {:.1}s after the PlatformOperator was created ({refusal})",
        began.elapsed().as_secs_f64()
    );
    uninstall(&client, name).await;
}

/// The Lease `component` holds while it leads.
async fn holder(client: &Client, component: Component) -> Option<String> {
    Api::<Lease>::namespaced(client.clone(), deployed_namespace(component))
        .get_opt(component.binary())
        .await
        .unwrap()
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity)
        .filter(|h| !h.is_empty())
}

/// Waits until the Lease names a holder other than `old`, and returns it with the time taken.
async fn new_holder(
    client: &Client,
    component: Component,
    old: &str,
    since: Instant,
) -> (String, Duration) {
    let holder = wait_for("another replica to hold the Lease", TIMEOUT, || async {
        match holder(client, component).await {
            Some(h) if h != old => Ok(h),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    (holder, since.elapsed())
}

/// The host process of the container of Pod `pod` (its `POD_NAME`), when this test runs on
/// the node, as it does with the local real node.
fn process_of(pod: &str) -> Option<u32> {
    let wanted = format!("POD_NAME={pod}");
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let environ = std::fs::read(entry.path().join("environ")).ok()?;
            environ
                .split(|b| *b == 0)
                .any(|var| var == wanted.as_bytes())
                .then_some(pid)
        })
}

/// Two replicas of rukpak-core contend for its Lease (the Deployment's Pod and a standby
/// Deployment's, as host-network Pods on one node need their own admin ports). The leader
/// stopped gracefully releases the Lease and the standby takes it at once; a leader that
/// dies (SIGKILL) releases nothing, and the standby takes over when the Lease expires (15 s).
#[tokio::test]
async fn a_standby_takes_over_from_a_leader_that_stops_or_dies() {
    let _serial = SERIAL.lock().await;
    let client = testkit::client().await;
    if !deployed(&client).await {
        return;
    }
    let component = Component::RukpakCore;
    let namespace = deployed_namespace(component);
    let deployments = Api::<Deployment>::namespaced(client.clone(), namespace);
    let mut standby = deployments.get(component.binary()).await.unwrap();
    let standby_name = "rukpak-core-standby";
    standby.metadata = kube::api::ObjectMeta {
        name: Some(standby_name.to_owned()),
        namespace: Some(namespace.to_owned()),
        ..Default::default()
    };
    let spec = standby.spec.as_mut().unwrap();
    let labels = BTreeMap::from([("app.kubernetes.io/name".to_owned(), standby_name.to_owned())]);
    spec.selector.match_labels = Some(labels.clone());
    spec.template.metadata.as_mut().unwrap().labels = Some(labels);
    let container = &mut spec.template.spec.as_mut().unwrap().containers[0];
    for arg in container.args.iter_mut().flatten() {
        if arg.starts_with("--admin-address=") {
            *arg = "--admin-address=127.0.0.1:18491".to_owned();
        }
    }
    container.ports.as_mut().unwrap()[0].container_port = 18491;
    standby.status = None;
    deployments
        .create(&PostParams::default(), &standby)
        .await
        .unwrap();
    let standby_pod = wait_for("the standby Ready", TIMEOUT, || async {
        let pods = Api::<Pod>::namespaced(client.clone(), namespace)
            .list(&ListParams::default().labels(&format!("app.kubernetes.io/name={standby_name}")))
            .await
            .map_err(|e| e.to_string())?;
        pods.items
            .iter()
            .find(|p| is_ready(p))
            .map(ResourceExt::name_any)
            .ok_or_else(|| "not Ready".to_owned())
    })
    .await;

    // Stopped: the leader (the Deployment's own Pod) releases the Lease on SIGTERM, and a
    // waiting replica takes it at once: the standby, or the Pod replacing the leader if it
    // starts first.
    let leader = holder(&client, component).await.unwrap();
    let leader_pod = pods_of(&client, component).await.pop().unwrap().name_any();
    assert!(
        leader.starts_with(&leader_pod),
        "{leader} is not {leader_pod}"
    );
    let stopped = Instant::now();
    delete_pod(&client, component).await;
    let (after_stop, stop_takeover) = new_holder(&client, component, &leader, stopped).await;
    assert!(
        !after_stop.starts_with(&leader_pod),
        "{after_stop} is the stopped leader"
    );
    assert!(
        stop_takeover < Duration::from_secs(10),
        "took over {stop_takeover:?} after a graceful stop"
    );

    // Dies: the new leader is killed and releases nothing.
    let replacement = replaced(&client, component, &leader_pod).await;
    let new_leader_pod = [&standby_pod, &replacement]
        .into_iter()
        .find(|pod| after_stop.starts_with(pod.as_str()))
        .unwrap_or_else(|| panic!("{after_stop} is neither {standby_pod} nor {replacement}"));
    let killed = match process_of(new_leader_pod) {
        Some(pid) => {
            let died = Instant::now();
            let status = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status()
                .unwrap();
            assert!(status.success(), "kill -KILL {pid}");
            let (after_death, death_takeover) =
                new_holder(&client, component, &after_stop, died).await;
            // Nothing is released: the Lease must run out first (15 s), and then the
            // waiting replica's next try takes it.
            assert!(
                death_takeover >= Duration::from_secs(10)
                    && death_takeover <= Duration::from_secs(30),
                "took over {death_takeover:?} after the leader died (lease 15 s): {after_death}"
            );
            Some(death_takeover)
        }
        None => {
            eprintln!("the leader's process is not on this host: its death is not tried");
            None
        }
    };
    eprintln!(
        "leader failover: {:.1}s after a graceful stop ({after_stop} took over), {} after a SIGKILL",
        stop_takeover.as_secs_f64(),
        killed.map_or("not measured".to_owned(), |d| format!(
            "{:.1}s",
            d.as_secs_f64()
        ))
    );

    deployments
        .delete(standby_name, &DeleteParams::default())
        .await
        .unwrap();
    // The system still installs.
    wait_for("rukpak-core to lead again", TIMEOUT, || async {
        match holder(&client, component).await {
            Some(h) if !h.starts_with(standby_name) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
}
