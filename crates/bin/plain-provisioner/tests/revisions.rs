//! Revisions against the real control plane: phases gated by probes, declared health
//! checks, the progress deadline, rollback to the last healthy revision, and manual
//! approval. One plain provisioner runs in this process; each test plays rukpak-core's
//! part (stores the bundle content and marks its Bundle unpacked).

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use support::{configmap, deploy, deployment, namespace, setup};

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node};
use kube::api::{DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Api, Client, ResourceExt};
use rukpak_api::conditions::{TYPE_HEALTHY, TYPE_INSTALLED, TYPE_PROGRESSING, reasons};
use rukpak_api::{Bundle, BundleDeployment, RevisionOutcome};
use serde_json::json;
use testkit::{unique_name, wait_for};

const TIMEOUT: Duration = Duration::from_secs(90);

async fn get(client: &Client, name: &str) -> BundleDeployment {
    Api::<BundleDeployment>::all(client.clone())
        .get(name)
        .await
        .unwrap()
}

/// Waits until condition `type_` has `reason`; returns its message.
async fn wait_reason(client: &Client, name: &str, type_: &str, reason: &str) -> String {
    wait_for(
        &format!("{name} {type_} reason {reason}"),
        TIMEOUT,
        || async {
            let bd = get(client, name).await;
            match support::condition(&bd, type_) {
                Some((_, r, message)) if r == reason => Ok(message),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await
}

/// A Deployment whose pods only run on a node labelled `olmv1-test-node=<node_label>`.
fn pinned_deployment(namespace: &str, name: &str, node_label: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  replicas: 1\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n      nodeSelector: {{olmv1-test-node: {node_label}}}\n      containers: [{{name: main, image: example.invalid/op:1.0}}]\n"
    )
}

fn admission_policy(name: &str) -> String {
    format!(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata:\n  name: {name}\nspec:\n  failurePolicy: Ignore\n  matchConstraints:\n    resourceRules:\n    - apiGroups: [example.invalid]\n      apiVersions: [v1]\n      operations: [CREATE]\n      resources: [nothings]\n  validations:\n  - expression: 'true'\n"
    )
}

fn cluster_role(name: &str) -> String {
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {name}\nrules:\n- apiGroups: [apps]\n  resources: [deployments]\n  verbs: [get, list, watch]\n"
    )
}

async fn label_node(client: &Client, value: Option<&str>) {
    let patch = json!({ "metadata": { "labels": { "olmv1-test-node": value } } });
    Api::<Node>::all(client.clone())
        .patch(
            "kwok-node-0",
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .unwrap();
}

async fn configmap_value(client: &Client, ns: &str, name: &str) -> Option<String> {
    Api::<ConfigMap>::namespaced(client.clone(), ns)
        .get_opt(name)
        .await
        .unwrap()
        .and_then(|cm| cm.data?.get("key").cloned())
}

async fn approve(client: &Client, name: &str, digest: &str) {
    let patch = json!({ "spec": { "approvedRevision": digest } });
    Api::<BundleDeployment>::all(client.clone())
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

fn policies(client: &Client) -> Api<DynamicObject> {
    Api::all_with(
        client.clone(),
        &ApiResource::from_gvk(&GroupVersionKind::gvk(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicy",
        )),
    )
}

#[tokio::test]
async fn a_phase_waits_for_a_deployment_that_is_not_available_and_status_names_it() {
    let client = setup().await;
    let name = unique_name("phases");
    let ns = unique_name("ns");
    let node_label = unique_name("phases");
    let policy = unique_name("policy");
    deploy(
        &client,
        &deployment(&name, "v1", json!({})),
        &[
            ("a.yaml", namespace(&ns)),
            ("b.yaml", pinned_deployment(&ns, "op", &node_label)),
            ("c.yaml", admission_policy(&policy)),
        ],
    )
    .await;

    let message = wait_reason(
        &client,
        &name,
        TYPE_PROGRESSING,
        reasons::WAITING_FOR_PROBES,
    )
    .await;
    assert!(message.contains("phase 4 of 4"), "{message}");
    assert!(
        message.contains(&format!("Deployment {ns}/op")),
        "{message}"
    );
    let installed = support::condition(&get(&client, &name).await, TYPE_INSTALLED).unwrap();
    assert_eq!(
        (installed.0.as_str(), installed.1.as_str()),
        ("False", reasons::WAITING_FOR_PROBES)
    );
    // Written up to the phase that waits, and recorded for deletion; the policy is not.
    assert!(policies(&client).get_opt(&policy).await.unwrap().is_none());
    let inventory = get(&client, &name).await.status.unwrap().inventory;
    assert!(
        inventory.iter().any(|e| e.kind == "Deployment"),
        "{inventory:?}"
    );

    label_node(&client, Some(&node_label)).await;
    support::wait_condition(&client, &name, TYPE_INSTALLED, "True", TIMEOUT).await;
    assert!(policies(&client).get_opt(&policy).await.unwrap().is_some());
    label_node(&client, None).await;
    Api::<BundleDeployment>::all(client.clone())
        .delete(&name, &Default::default())
        .await
        .unwrap();
}

#[tokio::test]
async fn a_declared_health_check_turns_healthy_both_ways_and_a_bad_one_is_reported() {
    let client = setup().await;
    let name = unique_name("cel");
    let ns = unique_name("ns");
    let has = "has(self.metadata.labels) && 'health' in self.metadata.labels";
    let checks = json!({ "healthChecks": [{
        "group": "", "kind": "ConfigMap", "name": "watched",
        "ready": format!("{has} && self.metadata.labels['health'] == 'ok'"),
        "failed": format!("{has} && self.metadata.labels['health'] == 'broken'"),
    }]});
    deploy(
        &client,
        &deployment(&name, "v1", checks),
        &[
            ("a.yaml", namespace(&ns)),
            ("b.yaml", configmap(&ns, "watched", "v1")),
        ],
    )
    .await;
    support::wait_condition(&client, &name, TYPE_INSTALLED, "True", TIMEOUT).await;
    let waiting = support::wait_condition(&client, &name, TYPE_HEALTHY, "False", TIMEOUT).await;
    assert!(waiting.contains("waiting for"), "{waiting}");

    // A label is not part of the bundle: drift correction leaves it alone.
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let set_health = |value: &'static str| {
        let configmaps = configmaps.clone();
        async move {
            let patch = json!({ "metadata": { "labels": { "health": value } } });
            configmaps
                .patch("watched", &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .unwrap();
        }
    };
    set_health("ok").await;
    support::wait_condition(&client, &name, TYPE_HEALTHY, "True", TIMEOUT).await;
    set_health("broken").await;
    let failed = support::wait_condition(&client, &name, TYPE_HEALTHY, "False", TIMEOUT).await;
    assert!(failed.contains("health check failed"), "{failed}");
    set_health("ok").await;
    support::wait_condition(&client, &name, TYPE_HEALTHY, "True", TIMEOUT).await;

    // An expression that does not compile: nothing applied, the check named.
    let bad = unique_name("cel-bad");
    let bad_ns = unique_name("ns");
    deploy(
        &client,
        &deployment(
            &bad,
            "v1",
            json!({ "healthChecks": [{ "kind": "ConfigMap", "ready": "self.status.(" }] }),
        ),
        &[("a.yaml", namespace(&bad_ns))],
    )
    .await;
    let message = wait_reason(&client, &bad, TYPE_INSTALLED, reasons::INVALID_HEALTH_CHECK).await;
    assert!(message.contains("spec.healthChecks[0]"), "{message}");
    assert!(
        Api::<Namespace>::all(client.clone())
            .get_opt(&bad_ns)
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn a_revision_that_misses_its_deadline_is_reported_naming_what_is_not_ready() {
    let client = setup().await;
    let name = unique_name("deadline");
    let ns = unique_name("ns");
    deploy(
        &client,
        &deployment(&name, "v1", json!({ "progressDeadlineSeconds": 5 })),
        &[
            ("a.yaml", namespace(&ns)),
            ("b.yaml", pinned_deployment(&ns, "op", "no-such-node")),
        ],
    )
    .await;
    let message = wait_reason(
        &client,
        &name,
        TYPE_INSTALLED,
        reasons::PROGRESS_DEADLINE_EXCEEDED,
    )
    .await;
    assert!(
        message.contains(&format!("Deployment {ns}/op"))
            || message.contains(&format!("Deployment.apps {ns}/op")),
        "{message}"
    );
    assert!(message.contains("progressDeadlineSeconds"), "{message}");
    let status = get(&client, &name).await.status.unwrap();
    assert_eq!(status.revisions.len(), 1);
    assert_eq!(status.revisions[0].outcome, RevisionOutcome::Failed);
}

#[tokio::test]
async fn a_failed_revision_is_rolled_back_to_the_last_healthy_one_from_stored_content() {
    let client = setup().await;
    let name = unique_name("rollback");
    let ns = unique_name("ns");
    let settings = json!({ "progressDeadlineSeconds": 8, "rollbackOnFailure": true });
    deploy(
        &client,
        &deployment(&name, "v1", settings.clone()),
        &[
            ("a.yaml", namespace(&ns)),
            ("b.yaml", configmap(&ns, "settings", "v1")),
        ],
    )
    .await;
    support::wait_condition(&client, &name, TYPE_HEALTHY, "True", TIMEOUT).await;
    let good = get(&client, &name)
        .await
        .status
        .unwrap()
        .active_bundle
        .unwrap();
    let bundles: Api<Bundle> = Api::all(client.clone());
    let good_content = bundles.get(&good).await.unwrap().status.unwrap().content;

    deploy(
        &client,
        &deployment(&name, "v2", settings),
        &[
            ("a.yaml", namespace(&ns)),
            ("b.yaml", configmap(&ns, "settings", "v2")),
            ("c.yaml", pinned_deployment(&ns, "op", "no-such-node")),
        ],
    )
    .await;
    // v2 is applied, then misses its deadline and v1 comes back.
    wait_for("v2 applied", TIMEOUT, || async {
        match configmap_value(&client, &ns, "settings").await.as_deref() {
            Some("v2") => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let message = wait_reason(&client, &name, TYPE_INSTALLED, reasons::ROLLED_BACK).await;
    assert!(message.contains("progressDeadlineSeconds"), "{message}");
    let status = get(&client, &name).await.status.unwrap();
    assert_eq!(status.active_bundle.as_deref(), Some(good.as_str()));
    assert_eq!(
        configmap_value(&client, &ns, "settings").await.as_deref(),
        Some("v1")
    );
    assert!(
        Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(client.clone(), &ns)
            .get_opt("op")
            .await
            .unwrap()
            .is_none(),
        "the failed revision's Deployment is pruned"
    );
    // The old revision's own stored content was used: the same Bundle and digest, and no
    // new Bundle was made for it.
    let owned = bundles
        .list(
            &kube::api::ListParams::default().labels(&format!("core.rukpak.io/owner-name={name}")),
        )
        .await
        .unwrap()
        .items;
    assert_eq!(owned.len(), 2);
    assert_eq!(
        bundles.get(&good).await.unwrap().status.unwrap().content,
        good_content
    );
    let failed = status.revisions.iter().find(|r| r.bundle != good).unwrap();
    assert_eq!(failed.outcome, RevisionOutcome::Failed);
    // Each Bundle shows what became of it, for `kubectl get bundles`.
    wait_for("Bundle outcomes shown", TIMEOUT, || async {
        let outcomes: Vec<_> = bundles
            .list(
                &kube::api::ListParams::default()
                    .labels(&format!("core.rukpak.io/owner-name={name}")),
            )
            .await
            .unwrap()
            .items
            .iter()
            .map(|b| {
                (
                    b.name_any(),
                    b.status.as_ref().and_then(|s| s.revision_outcome),
                )
            })
            .collect();
        let failed_shown = outcomes
            .iter()
            .any(|(b, o)| *b == failed.bundle && *o == Some(RevisionOutcome::Failed));
        let good_shown = outcomes
            .iter()
            .any(|(b, o)| *b == good && *o == Some(RevisionOutcome::Healthy));
        (failed_shown && good_shown)
            .then_some(())
            .ok_or(format!("{outcomes:?}"))
    })
    .await;
}

#[tokio::test]
async fn manual_approval_applies_exactly_the_approved_digest_and_nothing_before() {
    let client = setup().await;
    let name = unique_name("approve");
    let ns = unique_name("ns");
    let role = unique_name("role");
    let manual = json!({ "upgradeApproval": "Manual" });
    let bundle_of = |value: &str| {
        vec![
            ("a.yaml", namespace(&ns)),
            ("b.yaml", configmap(&ns, "settings", value)),
            ("c.yaml", cluster_role(&role)),
        ]
    };
    deploy(
        &client,
        &deployment(&name, "v1", manual.clone()),
        &bundle_of("v1"),
    )
    .await;
    wait_reason(&client, &name, TYPE_INSTALLED, reasons::AWAITING_APPROVAL).await;
    let pending = get(&client, &name)
        .await
        .status
        .unwrap()
        .pending_revision
        .unwrap();
    assert!(
        pending.added.contains(&format!("ConfigMap {ns}/settings")),
        "{pending:?}"
    );
    assert!(
        pending
            .permissions_added
            .iter()
            .any(|p| p.contains(&role) && p.contains("deployments")),
        "{pending:?}"
    );
    let progressing = support::condition(&get(&client, &name).await, TYPE_PROGRESSING).unwrap();
    assert_eq!(progressing.1, reasons::AWAITING_APPROVAL);
    assert!(progressing.2.contains(&pending.digest), "{progressing:?}");
    // Nothing was applied before approval.
    assert!(
        Api::<Namespace>::all(client.clone())
            .get_opt(&ns)
            .await
            .unwrap()
            .is_none()
    );

    approve(&client, &name, &pending.digest).await;
    support::wait_condition(&client, &name, TYPE_INSTALLED, "True", TIMEOUT).await;
    assert_eq!(
        configmap_value(&client, &ns, "settings").await.as_deref(),
        Some("v1")
    );
    assert!(
        get(&client, &name)
            .await
            .status
            .unwrap()
            .pending_revision
            .is_none()
    );

    // A new revision waits; what runs stays.
    deploy(
        &client,
        &deployment(&name, "v2", manual.clone()),
        &bundle_of("v2"),
    )
    .await;
    wait_reason(&client, &name, TYPE_PROGRESSING, reasons::AWAITING_APPROVAL).await;
    let second = get(&client, &name)
        .await
        .status
        .unwrap()
        .pending_revision
        .unwrap();
    assert_ne!(second.digest, pending.digest);
    assert_eq!(second.changed, vec![format!("ConfigMap {ns}/settings")]);
    assert!(second.permissions_added.is_empty(), "{second:?}");
    assert_eq!(
        configmap_value(&client, &ns, "settings").await.as_deref(),
        Some("v1")
    );

    // Approved: exactly v2 runs. Then the source changes while v2's digest stays approved:
    // v3 is not applied without its own approval.
    approve(&client, &name, &second.digest).await;
    wait_for("v2 applied", TIMEOUT, || async {
        match configmap_value(&client, &ns, "settings").await.as_deref() {
            Some("v2") => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    deploy(
        &client,
        &deployment(&name, "v3", manual.clone()),
        &bundle_of("v3"),
    )
    .await;
    let third = wait_for("v3 pending", TIMEOUT, || async {
        match get(&client, &name).await.status.unwrap().pending_revision {
            Some(p) if p.digest != second.digest => Ok(p),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        configmap_value(&client, &ns, "settings").await.as_deref(),
        Some("v2")
    );
    approve(&client, &name, &third.digest).await;
    wait_for("v3 applied", TIMEOUT, || async {
        match configmap_value(&client, &ns, "settings").await.as_deref() {
            Some("v3") => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
}
