//! Recovery from a control-plane failure: kube-apiserver is killed and kept down for 10 s
//! while the whole stack runs. `/readyz` must say not-ready while the watches fail and ready
//! again once they have resumed, and a change made right after must still be carried out;
//! how long that takes is printed.
//!
//! Needs the local control plane of `hack/cluster` (it restarts its API server), so it
//! does nothing against a deployed system (`E2E_DEPLOYED=1`).

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;
use std::time::{Duration, Instant};

use e2e::{TIMEOUT, env};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use platform_api::PlatformOperator;
use rukpak_api::BundleDeployment;
use serde_json::json;
use testkit::stack::Component;
use testkit::wait_for;

/// How long kube-apiserver stays down.
const OUTAGE: Duration = Duration::from_secs(10);

/// The memcached-operator bundle image tag the PlatformOperator's child installs.
async fn installed_tag(client: &Client, wrapper: &str) -> String {
    let children = Api::<BundleDeployment>::all(client.clone())
        .list(
            &ListParams::default().labels(&format!("{}={wrapper}", rukpak_api::labels::OWNER_NAME)),
        )
        .await
        .map(|list| list.items)
        .unwrap_or_default();
    children
        .iter()
        .filter_map(|c| c.spec.template.spec.source.image.as_ref())
        .map(|image| image.ref_.as_str())
        .find(|image| image.contains("memcached-operator-bundle"))
        .and_then(|image| image.rsplit(':').next())
        .unwrap_or_default()
        .to_owned()
}

/// Sets the PlatformOperator's version range and returns how long until its child
/// BundleDeployment names `tag`.
async fn pivot(client: &Client, name: &str, range: &str, tag: &str) -> Duration {
    let started = Instant::now();
    wait_for("the version range edit", TIMEOUT, || async {
        Api::<PlatformOperator>::all(client.clone())
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "spec": { "package": { "versionRange": range } } })),
            )
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    })
    .await;
    wait_for(
        &format!("the operator to move to {tag}"),
        TIMEOUT,
        || async {
            let installed = installed_tag(client, name).await;
            if installed == tag {
                Ok(())
            } else {
                Err(installed)
            }
        },
    )
    .await;
    started.elapsed()
}

/// The name of the `hack/cluster` cluster the KUBECONFIG belongs to.
fn cluster_name() -> String {
    let kubeconfig = std::env::var("KUBECONFIG").unwrap();
    let dir = std::path::Path::new(&kubeconfig).parent().unwrap();
    dir.file_name().unwrap().to_string_lossy().into_owned()
}

async fn ready(address: &str) -> Option<bool> {
    let response = reqwest::Client::new()
        .get(format!("http://{address}/readyz"))
        .timeout(Duration::from_secs(1))
        .send()
        .await
        .ok()?;
    Some(response.status().is_success())
}

#[tokio::test]
async fn after_the_api_server_restarts_every_controller_resumes_within_seconds() {
    let env = env().await;
    let Some(stack) = env.stack() else {
        eprintln!("recovery: skipped against a deployed system (needs hack/cluster's API server)");
        return;
    };
    let client = testkit::client().await;
    let name = &testkit::unique_name("recovery-memcached");
    let po: PlatformOperator = serde_json::from_value(json!({
        "apiVersion": "platform.openshift.io/v1alpha1", "kind": "PlatformOperator",
        "metadata": env.metadata(name),
        // SelfCertified: the test moves the operator down as well as up (a pivot either way
        // shows the controllers are back); under the catalog's upgrade graph the way down
        // would be refused.
        "spec": { "package": {
            "name": "memcached-operator", "versionRange": "<0.2.0",
            "upgradeConstraintPolicy": "SelfCertified"
        } }
    }))
    .unwrap();
    Api::<PlatformOperator>::all(client.clone())
        .create(&PostParams::default(), &po)
        .await
        .unwrap();
    wait_for("v0.1.0 installed", TIMEOUT, || async {
        let tag = installed_tag(&client, name).await;
        if tag == "v0.1.0" { Ok(()) } else { Err(tag) }
    })
    .await;
    let quiet = pivot(&client, name, ">=0.2.0", "v0.2.0").await;

    // Kill kube-apiserver and watch /readyz of every controller while it is down.
    let admins: Vec<(Component, String)> = Component::ALL
        .iter()
        .filter_map(|&c| stack.admin_address(c).map(|a| (c, a)))
        .collect();
    let restart = tokio::task::spawn_blocking(move || {
        Command::new(testkit::workspace_path("hack/cluster"))
            .args(["restart-apiserver", "--name", &cluster_name()])
            .arg(format!("--down={}s", OUTAGE.as_secs()))
            .output()
            .unwrap()
    });
    let mut seen_unready = std::collections::BTreeSet::new();
    while !restart.is_finished() {
        for (component, address) in &admins {
            if ready(address).await == Some(false) {
                seen_unready.insert(component.binary());
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let output = restart.await.unwrap();
    assert!(
        output.status.success(),
        "hack/cluster restart-apiserver: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let back = Instant::now();

    // Every controller is ready again once its watches have resumed...
    let mut ready_again = Duration::ZERO;
    for (component, address) in &admins {
        wait_for(
            &format!("{} ready", component.binary()),
            TIMEOUT,
            || async {
                match ready(address).await {
                    Some(true) => Ok(()),
                    other => Err(format!("{other:?}")),
                }
            },
        )
        .await;
        ready_again = ready_again.max(back.elapsed());
    }
    // ...and a change made right after is carried out.
    let after = pivot(&client, name, "<0.2.0", "v0.1.0").await;
    eprintln!(
        "recovery: a PlatformOperator pivot took {quiet:?} on a quiet cluster and {after:?} right after \
         kube-apiserver came back from a {OUTAGE:?} outage; all controllers ready again within {ready_again:?}; \
         not ready during the outage: {seen_unready:?}"
    );
    let everyone: std::collections::BTreeSet<&str> =
        admins.iter().map(|(c, _)| c.binary()).collect();
    assert_eq!(
        seen_unready, everyone,
        "/readyz stayed 200 while the watches failed"
    );
    // The time to pivot is reported, not asserted (timing goals live in benchmarks): before
    // kit::watch::WatchBackoff it was about 3 minutes. The pivot itself must happen, within
    // `pivot`'s timeout. While the identity admission policy had a custom resource as its
    // parameter, the API server refused every BundleDeployment write for up to a minute
    // after it started (it could not resolve the parameter kind yet); its parameter is a
    // ConfigMap now, and no controller may have met that refusal.
    for component in Component::ALL {
        let logs = stack.logs(component);
        assert!(
            !logs.contains("referenced by paramKind"),
            "{} was refused by an admission policy that could not resolve its parameter:\n{}",
            component.binary(),
            logs.lines()
                .filter(|l| l.contains("paramKind"))
                .take(3)
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    // Leave nothing behind for the next test process (its controllers would not own it).
    let _ = Api::<PlatformOperator>::all(client.clone())
        .delete(name, &kube::api::DeleteParams::foreground())
        .await;
    wait_for(
        "the PlatformOperator and its children to go",
        TIMEOUT,
        || async {
            let left = Api::<BundleDeployment>::all(client.clone())
                .list(
                    &ListParams::default()
                        .labels(&format!("{}={name}", rukpak_api::labels::OWNER_NAME)),
                )
                .await
                .map_err(|e| e.to_string())?
                .items
                .len();
            let po = Api::<PlatformOperator>::all(client.clone())
                .get_opt(name)
                .await
                .map_err(|e| e.to_string())?;
            if left == 0 && po.is_none() {
                Ok(())
            } else {
                Err(format!("{left} children left"))
            }
        },
    )
    .await;
}
