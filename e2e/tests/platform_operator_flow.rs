//! The PlatformOperator flow of DESIGN.md §4 end to end: an administrator asks for an
//! operator by package name and gets it installed, upgraded, repaired and removed, with the
//! health visible on the PlatformOperator and the aggregated ClusterOperator.
//!
//! The tests share one cluster-wide ClusterOperator and the sample packages, so they run one
//! at a time (a process-wide lock), each cleaning up what it created.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use deppy_api::ActiveResolution;
use e2e::sample_operator::{create_platform_operator, wait_installed};
use e2e::{TIMEOUT, env};
use e2e::{deployment_available, wait_available};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::{Api, Client, ResourceExt};
use platform_api::conditions::{TYPE_INSTALLED, cluster_operator, reasons};
use platform_api::{AGGREGATED_CLUSTER_OPERATOR, ClusterOperator, PlatformOperator};
use rukpak_api::BundleDeployment;
use serde_json::json;
use testkit::examples::sample;
use testkit::stack::Component;
use testkit::wait_for;

/// One scenario at a time: they share the ClusterOperator and the sample packages.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Each sample operator's (namespace, Deployment).
const MEMCACHED: (&str, &str) = (sample::MEMCACHED_NAMESPACE, sample::MEMCACHED_DEPLOYMENT);
const METRICS_AGENT: (&str, &str) = (sample::METRICS_NAMESPACE, sample::METRICS_DEPLOYMENT);

/// `(status, reason, message)` of the PlatformOperator's `Installed` condition.
async fn installed(client: &Client, name: &str) -> Result<(String, String, String), String> {
    let po = Api::<PlatformOperator>::all(client.clone())
        .get(name)
        .await
        .map_err(|e| e.to_string())?;
    let status = po.status.unwrap_or_default();
    let condition = status
        .conditions
        .iter()
        .find(|c| c.type_ == TYPE_INSTALLED)
        .ok_or("no Installed condition yet")?;
    Ok((
        condition.status.clone(),
        condition.reason.clone(),
        condition.message.clone(),
    ))
}

/// The aggregated ClusterOperator's condition `type`: `(status, reason, message)`.
async fn cluster_operator_condition(
    client: &Client,
    type_: &str,
) -> Result<(String, String, String), String> {
    let co = Api::<ClusterOperator>::all(client.clone())
        .get(AGGREGATED_CLUSTER_OPERATOR)
        .await
        .map_err(|e| e.to_string())?;
    let condition = co
        .status
        .unwrap_or_default()
        .conditions
        .into_iter()
        .find(|c| c.type_ == type_)
        .ok_or_else(|| format!("no {type_} condition"))?;
    Ok((
        condition.status,
        condition.reason.unwrap_or_default(),
        condition.message.unwrap_or_default(),
    ))
}

/// The child BundleDeployments the wrapper `name` applied.
async fn children(client: &Client, wrapper: &str) -> Vec<BundleDeployment> {
    Api::<BundleDeployment>::all(client.clone())
        .list(
            &kube::api::ListParams::default()
                .labels(&format!("{}={wrapper}", rukpak_api::labels::OWNER_NAME)),
        )
        .await
        .unwrap()
        .items
}

/// Deletes the PlatformOperator and waits until its resolution, wrapper, children and the
/// operators' Deployments are gone.
async fn delete_po(client: &Client, name: &str) {
    let _ = Api::<PlatformOperator>::all(client.clone())
        .delete(name, &DeleteParams::foreground())
        .await;
    wait_for(
        &format!("PlatformOperator {name} and everything it installed to go"),
        TIMEOUT,
        || async {
            let po = Api::<PlatformOperator>::all(client.clone())
                .get_opt(name)
                .await
                .map_err(|e| e.to_string())?;
            let ar = Api::<ActiveResolution>::all(client.clone())
                .get_opt(name)
                .await
                .map_err(|e| e.to_string())?;
            let wrapper = Api::<BundleDeployment>::all(client.clone())
                .get_opt(name)
                .await
                .map_err(|e| e.to_string())?;
            let children = children(client, name).await;
            let mut left = Vec::new();
            if po.is_some() {
                left.push("PlatformOperator".to_owned());
            }
            if ar.is_some() {
                left.push("ActiveResolution".to_owned());
            }
            if wrapper.is_some() {
                left.push("wrapper BundleDeployment".to_owned());
            }
            left.extend(children.iter().map(|c| format!("child {}", c.name_any())));
            for (namespace, deployment) in [MEMCACHED, METRICS_AGENT] {
                if Api::<Deployment>::namespaced(client.clone(), namespace)
                    .get_opt(deployment)
                    .await
                    .map_err(|e| e.to_string())?
                    .is_some()
                {
                    left.push(format!("Deployment {namespace}/{deployment}"));
                }
            }
            if left.is_empty() {
                Ok(())
            } else {
                Err(format!("still there: {}", left.join(", ")))
            }
        },
    )
    .await;
}

fn memcached_api(client: &Client, namespace: &str) -> Api<DynamicObject> {
    memcached_api_at(client, namespace, "v1alpha1")
}

fn memcached_api_at(client: &Client, namespace: &str, version: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("cache.example.com", version, "Memcached");
    Api::namespaced_with(client.clone(), namespace, &ApiResource::from_gvk(&gvk))
}

#[tokio::test]
async fn a_platform_operator_installs_its_package_and_dependency_and_deletion_keeps_crds_with_data()
{
    let _serial = SERIAL.lock().await;
    env().await;
    let client = testkit::client().await;
    let name = "memcached-operator";
    create_platform_operator(&client, name, "memcached-operator", None).await;
    wait_installed(&client, name).await;

    // The newest bundle of the default channel, and the package it requires.
    let resolution = Api::<ActiveResolution>::all(client.clone())
        .get(name)
        .await
        .unwrap();
    let selections = resolution.status.unwrap_or_default().selections;
    assert!(
        selections
            .iter()
            .any(|s| s.contains(":memcached-operator:0.2.0")),
        "{selections:?}"
    );
    assert!(
        selections
            .iter()
            .any(|s| s.contains(":metrics-agent:1.1.0")),
        "{selections:?}"
    );
    let po = Api::<PlatformOperator>::all(client.clone())
        .get(name)
        .await
        .unwrap();
    assert_eq!(
        po.status.unwrap().active_bundle_deployment.unwrap().name,
        name
    );
    assert_eq!(children(&client, name).await.len(), 2);
    wait_available(&client, MEMCACHED).await;
    wait_available(&client, METRICS_AGENT).await;
    wait_for("ClusterOperator Available", TIMEOUT, || async {
        match cluster_operator_condition(&client, cluster_operator::AVAILABLE).await? {
            (status, reason, _)
                if status == "True" && reason == cluster_operator::reasons::AS_EXPECTED =>
            {
                Ok(())
            }
            other => Err(format!("{other:?}")),
        }
    })
    .await;

    // A custom resource holds user data: its CRD must survive the uninstall. The operator's
    // webhook admits it, so it needs the operator really running (the real node).
    let has_data = e2e::real_node(&client).await;
    if has_data {
        let data: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
            "metadata": { "name": "keep-me" }, "spec": { "size": 3 }
        }))
        .unwrap();
        memcached_api(&client, "default")
            .create(&PostParams::default(), &data)
            .await
            .unwrap();
    }

    delete_po(&client, name).await;
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    if has_data {
        assert!(
            crds.get_opt("memcacheds.cache.example.com")
                .await
                .unwrap()
                .is_some(),
            "a CRD with data must be kept"
        );
        // Read at the storage version (0.2.0's v1beta1, where size is `replicas`): the kept
        // CRD's conversion webhook left with the operator (docs/operations.md).
        assert_eq!(
            memcached_api_at(&client, "default", "v1beta1")
                .get("keep-me")
                .await
                .unwrap()
                .data["spec"]["replicas"],
            3
        );
    }
    wait_for("the CRD without data to be removed", TIMEOUT, || async {
        match crds
            .get_opt("agents.metrics.example.com")
            .await
            .map_err(|e| e.to_string())?
        {
            None => Ok(()),
            Some(_) => Err("agents.metrics.example.com still there".to_owned()),
        }
    })
    .await;
    wait_for(
        "ClusterOperator back to Available with no operators",
        TIMEOUT,
        || async {
            match cluster_operator_condition(&client, cluster_operator::AVAILABLE).await? {
                (status, _, message)
                    if status == "True"
                        && message.contains("No platform operators are present") =>
                {
                    Ok(())
                }
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
    if has_data {
        memcached_api_at(&client, "default", "v1beta1")
            .delete("keep-me", &DeleteParams::default())
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn editing_the_version_range_upgrades_the_operator() {
    let _serial = SERIAL.lock().await;
    env().await;
    let client = testkit::client().await;
    let name = "memcached-upgrade";
    create_platform_operator(&client, name, "memcached-operator", Some("<0.2.0")).await;
    wait_installed(&client, name).await;
    let image_of = |children: Vec<BundleDeployment>| {
        children
            .iter()
            .filter_map(|c| serde_json::to_value(&c.spec.template.spec.source).ok())
            .map(|s| s.to_string())
            .find(|s| s.contains("memcached-operator-bundle"))
            .unwrap_or_default()
    };
    assert!(image_of(children(&client, name).await).contains(":v0.1.0"));

    Api::<PlatformOperator>::all(client.clone())
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "package": { "versionRange": ">=0.2.0" } } })),
        )
        .await
        .unwrap();
    wait_for(
        "the child BundleDeployment to move to v0.2.0",
        TIMEOUT,
        || async {
            let image = image_of(children(&client, name).await);
            if image.contains(":v0.2.0") {
                Ok(())
            } else {
                Err(image)
            }
        },
    )
    .await;
    wait_installed(&client, name).await;
    wait_available(&client, MEMCACHED).await;
    delete_po(&client, name).await;
}

#[tokio::test]
async fn a_missing_package_fails_on_the_platform_operator_and_the_cluster_operator() {
    let _serial = SERIAL.lock().await;
    env().await;
    let client = testkit::client().await;
    let name = "no-such-operator";
    create_platform_operator(&client, name, "no-such-package", None).await;
    let message = wait_for("SourceFailed", TIMEOUT, || async {
        match installed(&client, name).await? {
            (status, reason, message) if status == "False" && reason == reasons::SOURCE_FAILED => {
                Ok(message)
            }
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert!(message.contains("no-such-package"), "{message}");
    wait_for(
        "ClusterOperator Available=False naming the PlatformOperator",
        TIMEOUT,
        || async {
            match cluster_operator_condition(&client, cluster_operator::AVAILABLE).await? {
                (status, reason, message)
                    if status == "False"
                        && reason == cluster_operator::reasons::PLATFORM_OPERATOR_ERROR
                        && message.contains(name) =>
                {
                    Ok(())
                }
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
    delete_po(&client, name).await;
}

#[tokio::test]
async fn drift_is_repaired_and_every_controller_can_restart_mid_flow() {
    let _serial = SERIAL.lock().await;
    let env = env().await;
    let client = testkit::client().await;
    let name = "memcached-restarts";
    create_platform_operator(&client, name, "memcached-operator", None).await;
    // Restart every controller while the flow is under way: the end state is the same.
    for component in Component::ALL {
        env.restart(component).await;
    }
    wait_installed(&client, name).await;
    wait_available(&client, MEMCACHED).await;

    // Drift: the operator's Deployment is deleted behind the system's back; it comes back.
    let deployments = Api::<Deployment>::namespaced(client.clone(), MEMCACHED.0);
    let before = deployments.get(MEMCACHED.1).await.unwrap().uid().unwrap();
    deployments
        .delete(MEMCACHED.1, &DeleteParams::default())
        .await
        .unwrap();
    wait_for(
        "the deleted Deployment to come back, Available",
        TIMEOUT,
        || async {
            let deployment = deployments
                .get_opt(MEMCACHED.1)
                .await
                .map_err(|e| e.to_string())?;
            match deployment {
                Some(d) if d.uid().as_deref() != Some(before.as_str()) => {
                    deployment_available(&client, MEMCACHED).await
                }
                _ => Err("not recreated yet".to_owned()),
            }
        },
    )
    .await;
    wait_installed(&client, name).await;
    if let Err(err) = deployment_available(&client, MEMCACHED).await {
        panic!(
            "{err}; registry-provisioner log:\n{}",
            env.logs(Component::RegistryProvisioner)
        );
    }
    delete_po(&client, name).await;
}

/// The pending revision a child BundleDeployment shows, once it shows one.
async fn pending_digest(client: &Client, child: &str) -> Result<String, String> {
    let bd = Api::<BundleDeployment>::all(client.clone())
        .get_opt(child)
        .await
        .map_err(|e| e.to_string())?
        .ok_or(format!("{child} not created yet"))?;
    bd.status
        .and_then(|s| s.pending_revision)
        .map(|p| p.digest)
        .ok_or(format!("{child} has no pending revision"))
}

async fn approve_on_po(client: &Client, name: &str, digest: &str) {
    Api::<PlatformOperator>::all(client.clone())
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "approvedRevision": digest } })),
        )
        .await
        .unwrap();
}

async fn wait_pending(client: &Client, child: &str) -> String {
    wait_for(&format!("{child} to wait for approval"), TIMEOUT, || {
        pending_digest(client, child)
    })
    .await
}

#[tokio::test]
async fn with_manual_approval_nothing_runs_until_each_revision_is_approved_on_the_platform_operator()
 {
    let _serial = SERIAL.lock().await;
    let env = env().await;
    let client = testkit::client().await;
    let name = "memcached-manual";
    let po = PlatformOperator {
        metadata: env.metadata(name),
        spec: serde_json::from_value(json!({
            "package": { "name": sample::MEMCACHED, "versionRange": "<0.2.0" },
            "upgradeApproval": "Manual",
        }))
        .unwrap(),
        status: None,
    };
    Api::<PlatformOperator>::all(client.clone())
        .create(&PostParams::default(), &po)
        .await
        .unwrap();

    // Every child waits, each with the digest of its own content; nothing is installed.
    let mut approved = Vec::new();
    for child in [sample::METRICS_BD, sample::MEMCACHED_BD] {
        let digest = wait_pending(&client, child).await;
        let (status, reason, message) =
            wait_for("the PlatformOperator to say it waits", TIMEOUT, || async {
                match installed(&client, name).await? {
                    (s, r, m) if r == reasons::AWAITING_APPROVAL && m.contains("sha256:") => {
                        Ok((s, r, m))
                    }
                    other => Err(format!("{other:?}")),
                }
            })
            .await;
        assert_eq!(status, "False", "{reason}: {message}");
        for (namespace, deployment) in [MEMCACHED, METRICS_AGENT] {
            let running = Api::<Deployment>::namespaced(client.clone(), namespace)
                .get_opt(deployment)
                .await
                .unwrap();
            let expected = approved.contains(&namespace);
            assert_eq!(
                running.is_some(),
                expected,
                "{namespace}/{deployment} before approval of {child}"
            );
        }
        // Approving on the PlatformOperator reaches the child, which applies that digest.
        approve_on_po(&client, name, &digest).await;
        wait_for(&format!("{child} installed"), TIMEOUT, || async {
            let bd = Api::<BundleDeployment>::all(client.clone())
                .get(child)
                .await
                .map_err(|e| e.to_string())?;
            let status = bd.status.unwrap_or_default();
            let active_digest = status
                .revisions
                .iter()
                .find(|r| Some(&r.bundle) == status.active_bundle.as_ref())
                .map(|r| r.digest.clone());
            (active_digest.as_deref() == Some(digest.as_str()))
                .then_some(())
                .ok_or(format!("{:?}", status.revisions))
        })
        .await;
        approved.push(if child == sample::METRICS_BD {
            METRICS_AGENT.0
        } else {
            MEMCACHED.0
        });
    }
    wait_installed(&client, name).await;
    wait_available(&client, MEMCACHED).await;

    // An upgrade waits too, while the installed version keeps running.
    Api::<PlatformOperator>::all(client.clone())
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "package": { "versionRange": ">=0.2.0" } } })),
        )
        .await
        .unwrap();
    let upgrade = wait_for("the upgrade to wait for approval", TIMEOUT, || async {
        let digest = pending_digest(&client, sample::MEMCACHED_BD).await?;
        match installed(&client, name).await? {
            (s, r, m) if s == "True" && r == reasons::AWAITING_APPROVAL && m.contains(&digest) => {
                Ok(digest)
            }
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let active_digest = || async {
        let bd = Api::<BundleDeployment>::all(client.clone())
            .get(sample::MEMCACHED_BD)
            .await
            .map_err(|e| e.to_string())?;
        let status = bd.status.unwrap_or_default();
        status
            .revisions
            .iter()
            .find(|r| Some(&r.bundle) == status.active_bundle.as_ref())
            .map(|r| r.digest.clone())
            .ok_or(format!("no active revision: {:?}", status.revisions))
    };
    assert_ne!(
        active_digest().await.unwrap(),
        upgrade,
        "not applied before approval"
    );
    approve_on_po(&client, name, &upgrade).await;
    wait_for("the approved upgrade to run", TIMEOUT, || async {
        let now = active_digest().await?;
        (now == upgrade).then_some(()).ok_or(now)
    })
    .await;
    // A dependency the new resolution moved would wait for its own approval.
    if let Ok(digest) = pending_digest(&client, sample::METRICS_BD).await {
        approve_on_po(&client, name, &digest).await;
    }
    wait_installed(&client, name).await;
    delete_po(&client, name).await;
}
