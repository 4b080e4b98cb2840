//! The plain provisioner against the real control plane. One controller runs in this
//! process for all tests (on its own runtime, so it outlives each test's runtime); each
//! test plays rukpak-core's part by storing the bundle content and marking its Bundle
//! unpacked.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use support::{configmap, deploy, deployment, namespace, setup};

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use rukpak_api::conditions::{TYPE_HEALTHY, TYPE_INSTALLED, TYPE_PROGRESSING, reasons};
use rukpak_api::{BundleDeployment, bundle_name, template_hash};
use serde_json::json;
use testkit::{unique_name, wait_for};

const TIMEOUT: Duration = Duration::from_secs(60);

async fn wait_condition(client: &Client, name: &str, type_: &str, status: &str) -> String {
    support::wait_condition(client, name, type_, status, TIMEOUT).await
}

fn crd(group: &str) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.{group}\nspec:\n  group: {group}\n  scope: Namespaced\n  names: {{kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec: {{type: object, x-kubernetes-preserve-unknown-fields: true}}\n"
    )
}

fn deployment_manifest(namespace: &str, name: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  replicas: 1\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n      containers: [{{name: main, image: example.invalid/operator:1.0}}]\n"
    )
}

#[tokio::test]
async fn a_bundle_with_a_crd_its_custom_resource_and_a_deployment_installs_and_becomes_healthy() {
    let client = setup().await;
    let name = unique_name("install");
    let ns = unique_name("ns");
    let group = format!("{}.example.com", unique_name("g"));
    let widget = format!(
        "apiVersion: {group}/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: {ns}\nspec:\n  size: 3\n"
    );
    let manifests = [
        ("00-namespace.yaml", namespace(&ns)),
        ("crd.yaml", crd(&group)),
        ("widget.yaml", widget),
        ("config.yaml", configmap(&ns, "settings", "v1")),
        ("operator.yaml", deployment_manifest(&ns, "operator")),
    ];
    deploy(&client, &deployment(&name, "v1", json!({})), &manifests).await;

    wait_condition(&client, &name, TYPE_INSTALLED, "True").await;
    wait_condition(&client, &name, TYPE_HEALTHY, "True").await;
    let bd = Api::<BundleDeployment>::all(client.clone())
        .get(&name)
        .await
        .unwrap();
    let status = bd.status.unwrap();
    let kinds: Vec<&str> = status.inventory.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "Namespace",
            "CustomResourceDefinition",
            "ConfigMap",
            "Widget",
            "Deployment"
        ]
    );
    assert_eq!(
        status.active_bundle.as_deref(),
        Some(bundle_name(&name, &template_hash(&bd.spec.template)).as_str())
    );
    let cm = Api::<ConfigMap>::namespaced(client.clone(), &ns)
        .get("settings")
        .await
        .unwrap();
    assert_eq!(cm.labels().get("core.rukpak.io/owner-name"), Some(&name));
}

#[tokio::test]
async fn a_second_bundle_deployment_claiming_an_object_fails_and_leaves_the_first_untouched() {
    let client = setup().await;
    let ns = unique_name("ns");
    let first = unique_name("first");
    deploy(
        &client,
        &deployment(&first, "v1", json!({})),
        &[
            ("a.yaml", namespace(&ns)),
            ("b.yaml", configmap(&ns, "shared", "first")),
        ],
    )
    .await;
    wait_condition(&client, &first, TYPE_INSTALLED, "True").await;

    let second = unique_name("second");
    deploy(
        &client,
        &deployment(&second, "v1", json!({})),
        &[("b.yaml", configmap(&ns, "shared", "second"))],
    )
    .await;
    let message = wait_condition(&client, &second, TYPE_INSTALLED, "False").await;
    assert!(
        message.contains(&format!(
            "ConfigMap {ns}/shared already exists and is managed by BundleDeployment {first}"
        )),
        "{message}"
    );
    let cm = Api::<ConfigMap>::namespaced(client.clone(), &ns)
        .get("shared")
        .await
        .unwrap();
    assert_eq!(cm.data.as_ref().unwrap()["key"], "first");
    assert_eq!(cm.labels().get("core.rukpak.io/owner-name"), Some(&first));
}

/// The reasons and notes of the Events about BundleDeployment `name`.
async fn events_about(client: &Client, name: &str) -> Vec<(String, String)> {
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::all(client.clone());
    events
        .list(&kube::api::ListParams::default().fields(&format!(
            "involvedObject.kind=BundleDeployment,involvedObject.name={name}"
        )))
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
        .collect()
}

#[tokio::test]
async fn installed_and_healthy_at_once_are_told_in_one_event() {
    let client = setup().await;
    let ns = unique_name("ns");
    let name = unique_name("told");
    deploy(
        &client,
        &deployment(&name, "v1", json!({})),
        &[
            ("a.yaml", namespace(&ns)),
            ("b.yaml", configmap(&ns, "settings", "one")),
        ],
    )
    .await;
    wait_condition(&client, &name, TYPE_HEALTHY, "True").await;
    // Events are written after the status: wait for the one that tells the install.
    let told = wait_for("the install's Event", TIMEOUT, || {
        let client = client.clone();
        let name = name.clone();
        async move {
            let events = events_about(&client, &name).await;
            if events
                .iter()
                .any(|(reason, _)| reason == reasons::INSTALLATION_SUCCEEDED)
            {
                Ok(events)
            } else {
                Err(format!("{events:?}"))
            }
        }
    })
    .await;
    let installed: Vec<&(String, String)> = told
        .iter()
        .filter(|(reason, _)| reason == reasons::INSTALLATION_SUCCEEDED)
        .collect();
    assert_eq!(installed.len(), 1, "{told:?}");
    assert!(
        installed[0].1.starts_with("Installed: ") && installed[0].1.contains(" Healthy: "),
        "{told:?}"
    );
    assert!(
        !told.iter().any(|(_, note)| note.starts_with("Healthy: ")),
        "Healthy has an Event of its own: {told:?}"
    );
    Api::<BundleDeployment>::all(client)
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
}

#[tokio::test]
async fn deleting_or_editing_a_managed_object_is_undone() {
    let client = setup().await;
    let ns = unique_name("ns");
    let name = unique_name("drift");
    deploy(
        &client,
        &deployment(&name, "v1", json!({})),
        &[
            ("a.yaml", namespace(&ns)),
            ("b.yaml", configmap(&ns, "watched", "desired")),
        ],
    )
    .await;
    wait_condition(&client, &name, TYPE_INSTALLED, "True").await;
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);

    configmaps
        .patch(
            "watched",
            &PatchParams::default(),
            &Patch::Merge(json!({ "data": { "key": "edited" } })),
        )
        .await
        .unwrap();
    wait_for("the edit to be reverted", TIMEOUT, || async {
        let cm = configmaps.get("watched").await.map_err(|e| e.to_string())?;
        let value = cm
            .data
            .unwrap_or_default()
            .get("key")
            .cloned()
            .unwrap_or_default();
        if value == "desired" {
            Ok(())
        } else {
            Err(value)
        }
    })
    .await;

    configmaps
        .delete("watched", &DeleteParams::default())
        .await
        .unwrap();
    wait_for("the deleted object to be recreated", TIMEOUT, || async {
        match configmaps
            .get_opt("watched")
            .await
            .map_err(|e| e.to_string())?
        {
            Some(cm) if cm.metadata.deletion_timestamp.is_none() => Ok(()),
            _ => Err("missing".to_owned()),
        }
    })
    .await;
}

#[tokio::test]
async fn a_pivot_prunes_objects_the_new_bundle_no_longer_has() {
    let client = setup().await;
    let ns = unique_name("ns");
    let name = unique_name("pivot");
    deploy(
        &client,
        &deployment(&name, "v1", json!({})),
        &[
            ("a.yaml", namespace(&ns)),
            ("b.yaml", configmap(&ns, "kept", "v1")),
            ("c.yaml", configmap(&ns, "dropped", "v1")),
        ],
    )
    .await;
    wait_condition(&client, &name, TYPE_INSTALLED, "True").await;

    deploy(
        &client,
        &deployment(&name, "v2", json!({})),
        &[
            ("a.yaml", namespace(&ns)),
            ("b.yaml", configmap(&ns, "kept", "v2")),
        ],
    )
    .await;
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    wait_for(
        "the pivot to prune the dropped object and update the kept one",
        TIMEOUT,
        || async {
            let dropped = configmaps
                .get_opt("dropped")
                .await
                .map_err(|e| e.to_string())?;
            let kept = configmaps.get("kept").await.map_err(|e| e.to_string())?;
            let value = kept
                .data
                .unwrap_or_default()
                .get("key")
                .cloned()
                .unwrap_or_default();
            if dropped.is_none() && value == "v2" {
                Ok(())
            } else {
                Err(format!(
                    "dropped present: {}, kept={value}",
                    dropped.is_some()
                ))
            }
        },
    )
    .await;
    // The status follows the objects: the pivot records the new Bundle once it is done.
    wait_for("the new Bundle to be active", TIMEOUT, || async {
        let bd = Api::<BundleDeployment>::all(client.clone())
            .get(&name)
            .await
            .map_err(|e| e.to_string())?;
        let wanted = bundle_name(&name, &template_hash(&bd.spec.template));
        let active = bd.status.unwrap_or_default().active_bundle;
        (active.as_deref() == Some(wanted.as_str()))
            .then_some(())
            .ok_or(format!("{active:?}"))
    })
    .await;
}

#[tokio::test]
async fn a_crd_with_custom_resources_survives_deletion_of_its_bundle_deployment() {
    let client = setup().await;
    let ns = unique_name("ns");
    let group = format!("{}.example.com", unique_name("g"));
    let name = unique_name("keepcrd");
    deploy(
        &client,
        &deployment(&name, "v1", json!({})),
        &[
            ("a.yaml", namespace(&ns)),
            ("b.yaml", crd(&group)),
            ("c.yaml", configmap(&ns, "plain", "v1")),
        ],
    )
    .await;
    wait_condition(&client, &name, TYPE_INSTALLED, "True").await;
    // A user creates a custom resource: their data.
    let resource =
        kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(&group, "v1", "Widget"));
    let widgets: Api<kube::api::DynamicObject> =
        Api::namespaced_with(client.clone(), &ns, &resource);
    let widget = kube::api::DynamicObject::new("user-data", &resource)
        .data(json!({ "spec": { "size": 1 } }));
    widgets
        .create(&PostParams::default(), &widget)
        .await
        .unwrap();

    let deployments: Api<BundleDeployment> = Api::all(client.clone());
    testkit::delete_and_wait(&deployments, &name, TIMEOUT).await;
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> = Api::all(client.clone());
    let crd = crds
        .get(&format!("widgets.{group}"))
        .await
        .expect("the CRD is kept");
    assert!(
        crd.labels().get("core.rukpak.io/owner-name").is_none(),
        "the orphaned CRD is released"
    );
    assert!(
        widgets.get_opt("user-data").await.unwrap().is_some(),
        "user data survives"
    );
    assert!(
        Api::<ConfigMap>::namespaced(client.clone(), &ns)
            .get_opt("plain")
            .await
            .unwrap()
            .is_none_or(|cm| cm.metadata.deletion_timestamp.is_some())
    );
    assert!(
        Api::<Namespace>::all(client.clone())
            .get(&ns)
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_none(),
        "a namespace with user data is kept"
    );
}

#[tokio::test]
async fn a_paused_bundle_deployment_does_not_undo_changes() {
    let client = setup().await;
    let ns = unique_name("ns");
    let name = unique_name("paused");
    deploy(
        &client,
        &deployment(&name, "v1", json!({})),
        &[
            ("a.yaml", namespace(&ns)),
            ("b.yaml", configmap(&ns, "c", "desired")),
        ],
    )
    .await;
    wait_condition(&client, &name, TYPE_INSTALLED, "True").await;
    let deployments: Api<BundleDeployment> = Api::all(client.clone());
    deployments
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "paused": true } })),
        )
        .await
        .unwrap();
    wait_for("the Paused reason", TIMEOUT, || async {
        let bd = deployments.get(&name).await.map_err(|e| e.to_string())?;
        match support::condition(&bd, TYPE_INSTALLED) {
            Some((_, reason, _)) if reason == "Paused" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    configmaps
        .patch(
            "c",
            &PatchParams::default(),
            &Patch::Merge(json!({ "data": { "key": "edited" } })),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        configmaps.get("c").await.unwrap().data.unwrap()["key"],
        "edited",
        "paused: no correction"
    );
}

#[tokio::test]
async fn a_service_account_without_rights_fails_the_install_naming_the_forbidden_object() {
    let client = setup().await;
    let ns = unique_name("ns");
    let name = unique_name("limited");
    // The account may manage ConfigMaps in its namespace and nothing else.
    let setup_objects = format!(
        "{}---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: installer, namespace: {ns}}}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {{name: cm, namespace: {ns}}}\nrules: [{{apiGroups: [''], resources: [configmaps], verbs: ['*']}}]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {{name: cm, namespace: {ns}}}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: cm}}\nsubjects: [{{kind: ServiceAccount, name: installer, namespace: {ns}}}]\n",
        namespace(&ns)
    );
    testkit::apply_manifests(&client, &setup_objects).await;
    let role = format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {name}-escalate\nrules:\n- apiGroups: ['*']\n  resources: ['*']\n  verbs: ['*']\n"
    );
    let extra = json!({ "serviceAccount": { "namespace": ns, "name": "installer" } });
    deploy(
        &client,
        &deployment(&name, "v1", extra),
        &[
            ("a.yaml", configmap(&ns, "allowed", "v1")),
            ("b.yaml", role),
        ],
    )
    .await;

    let message = wait_condition(&client, &name, TYPE_INSTALLED, "False").await;
    assert!(
        message.contains(&format!(
            "ClusterRole.rbac.authorization.k8s.io {name}-escalate"
        )),
        "{message}"
    );
    assert!(message.contains("forbidden"), "{message}");
    let roles: Api<k8s_openapi::api::rbac::v1::ClusterRole> = Api::all(client.clone());
    assert!(
        roles
            .get_opt(&format!("{name}-escalate"))
            .await
            .unwrap()
            .is_none(),
        "no privilege escalation"
    );
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    assert!(
        configmaps.get_opt("allowed").await.unwrap().is_none(),
        "nothing else was applied"
    );
}

#[tokio::test]
async fn a_bundle_of_a_thousand_objects_installs() {
    let client = setup().await;
    let ns = unique_name("ns");
    let name = unique_name("big");
    let mut many = String::new();
    for i in 0..1000 {
        many.push_str(&format!(
            "---\n{}",
            configmap(&ns, &format!("cm-{i:04}"), &format!("v{i}"))
        ));
    }
    deploy(
        &client,
        &deployment(&name, "v1", json!({})),
        &[("a.yaml", namespace(&ns)), ("b.yaml", many)],
    )
    .await;
    wait_condition(&client, &name, TYPE_INSTALLED, "True").await;
    let bd = Api::<BundleDeployment>::all(client.clone())
        .get(&name)
        .await
        .unwrap();
    assert_eq!(bd.status.unwrap().inventory.len(), 1001);
    let listed = Api::<ConfigMap>::namespaced(client.clone(), &ns)
        .list(
            &kube::api::ListParams::default().labels(&format!("core.rukpak.io/owner-name={name}")),
        )
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1000);
}

#[tokio::test]
async fn health_goes_false_when_a_deployment_loses_availability_and_true_when_it_recovers() {
    let client = setup().await;
    let ns = unique_name("ns");
    let name = unique_name("health");
    // Pods may only run on a node carrying this test's label.
    let node_label = unique_name("health");
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(client.clone());
    let label_node = |value: Option<&str>| {
        let nodes = nodes.clone();
        let patch = json!({ "metadata": { "labels": { "olmv1-test-health": value } } });
        async move {
            nodes
                .patch(
                    "kwok-node-0",
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await
                .unwrap();
        }
    };
    let manifest = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: op\n  namespace: {ns}\nspec:\n  replicas: 1\n  selector: {{matchLabels: {{app: op}}}}\n  template:\n    metadata: {{labels: {{app: op}}}}\n    spec:\n      nodeSelector: {{olmv1-test-health: {node_label}}}\n      containers: [{{name: main, image: example.invalid/op:1.0}}]\n"
    );
    label_node(Some(&node_label)).await;
    deploy(
        &client,
        &deployment(&name, "v1", json!({})),
        &[("a.yaml", namespace(&ns)), ("b.yaml", manifest)],
    )
    .await;
    wait_condition(&client, &name, TYPE_HEALTHY, "True").await;

    // The node stops accepting this Deployment's pods and the running pod goes away.
    label_node(None).await;
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client.clone(), &ns);
    pods.delete_collection(
        &DeleteParams::default(),
        &kube::api::ListParams::default().labels("app=op"),
    )
    .await
    .unwrap();
    let message = wait_condition(&client, &name, TYPE_HEALTHY, "False").await;
    assert!(
        message.contains(&format!("Deployment.apps {ns}/op")),
        "{message}"
    );

    label_node(Some(&node_label)).await;
    wait_condition(&client, &name, TYPE_HEALTHY, "True").await;
    label_node(None).await;
}

/// Write requests the API server has served for one resource, from its own metrics. A
/// collection delete (`DELETE` at namespace scope) is left out: the namespace controller
/// sends one for every served resource whenever any namespace is deleted (other tests here
/// delete theirs), which says nothing about what the provisioner wrote.
async fn writes_to(client: &Client, group: &str, resource: &str) -> u64 {
    let text = client
        .request_text(http::Request::get("/metrics").body(Vec::new()).unwrap())
        .await
        .unwrap();
    text.lines()
        .filter(|l| l.starts_with("apiserver_request_total{"))
        .filter(|l| {
            l.contains(&format!("group=\"{group}\""))
                && l.contains(&format!("resource=\"{resource}\""))
        })
        .filter(|l| !(l.contains("verb=\"DELETE\"") && l.contains("scope=\"namespace\"")))
        .filter(|l| {
            [
                "verb=\"PATCH\"",
                "verb=\"APPLY\"",
                "verb=\"POST\"",
                "verb=\"PUT\"",
                "verb=\"DELETE\"",
                "verb=\"CREATE\"",
                "verb=\"UPDATE\"",
            ]
            .iter()
            .any(|v| l.contains(v))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|v| v as u64)
        .sum()
}

#[tokio::test]
async fn a_resync_of_an_unchanged_bundle_deployment_sends_no_writes() {
    let client = setup().await;
    let ns = unique_name("ns");
    let group = format!("{}.example.com", unique_name("quiet"));
    let name = unique_name("quiet");
    let widgets: String = (0..4).map(|i| format!("---\napiVersion: {group}/v1\nkind: Widget\nmetadata:\n  name: w{i}\n  namespace: {ns}\nspec:\n  size: {i}\n")).collect();
    deploy(
        &client,
        &deployment(&name, "v1", json!({})),
        &[
            ("a.yaml", namespace(&ns)),
            ("b.yaml", crd(&group)),
            ("c.yaml", widgets),
        ],
    )
    .await;
    wait_condition(&client, &name, TYPE_INSTALLED, "True").await;
    tokio::time::sleep(Duration::from_secs(2)).await;

    let before = writes_to(&client, &group, "widgets").await;
    assert!(before >= 4, "the install wrote the widgets ({before})");
    // Force several reconciles: each touches the BundleDeployment's metadata.
    let deployments: Api<BundleDeployment> = Api::all(client.clone());
    for i in 0..3 {
        let patch = json!({ "metadata": { "annotations": { "test/resync": i.to_string() } } });
        deployments
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    assert_eq!(
        writes_to(&client, &group, "widgets").await,
        before,
        "no writes when nothing drifted"
    );
}

#[tokio::test]
async fn api_server_warnings_during_apply_are_reported_on_the_status() {
    let client = setup().await;
    let ns = unique_name("ns");
    let group = format!("{}.example.com", unique_name("old"));
    let name = unique_name("warned");
    let deprecated_crd = crd(&group).replace(
        "    served: true\n",
        "    served: true\n    deprecated: true\n    deprecationWarning: \"widgets v1 is going away\"\n",
    );
    assert!(deprecated_crd.contains("deprecationWarning"));
    let widget = format!(
        "apiVersion: {group}/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: {ns}\nspec:\n  size: 1\n"
    );
    deploy(
        &client,
        &deployment(&name, "v1", json!({})),
        &[
            ("a.yaml", namespace(&ns)),
            ("b.yaml", deprecated_crd),
            ("c.yaml", widget),
        ],
    )
    .await;
    let message = wait_condition(&client, &name, TYPE_INSTALLED, "True").await;
    assert!(
        message.contains("the API server warned: widgets v1 is going away"),
        "{message}"
    );
}

fn unnamespaced_configmap(name: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  key: v\n")
}

#[tokio::test]
async fn a_missing_install_namespace_is_created_and_an_existing_one_is_used_without_being_claimed()
{
    let client = setup().await;
    let namespaces: Api<Namespace> = Api::all(client.clone());

    let created = unique_name("created");
    let name = unique_name("mkns");
    deploy(
        &client,
        &deployment(&name, "v1", json!({ "installNamespace": created })),
        &[("a.yaml", unnamespaced_configmap("c"))],
    )
    .await;
    wait_condition(&client, &name, TYPE_INSTALLED, "True").await;
    let ns = namespaces.get(&created).await.unwrap();
    assert_eq!(
        ns.labels().get("core.rukpak.io/owner-name"),
        Some(&name),
        "created and managed"
    );
    assert!(
        Api::<ConfigMap>::namespaced(client.clone(), &created)
            .get_opt("c")
            .await
            .unwrap()
            .is_some()
    );

    let existing = unique_name("existing");
    let ns: Namespace =
        serde_json::from_value(json!({ "metadata": { "name": existing } })).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let other = unique_name("usens");
    deploy(
        &client,
        &deployment(&other, "v1", json!({ "installNamespace": existing })),
        &[("a.yaml", unnamespaced_configmap("c"))],
    )
    .await;
    wait_condition(&client, &other, TYPE_INSTALLED, "True").await;
    assert!(
        namespaces
            .get(&existing)
            .await
            .unwrap()
            .labels()
            .get("core.rukpak.io/owner-name")
            .is_none(),
        "not claimed"
    );
    assert!(
        Api::<ConfigMap>::namespaced(client.clone(), &existing)
            .get_opt("c")
            .await
            .unwrap()
            .is_some()
    );
}

#[tokio::test]
async fn an_unsafe_crd_upgrade_fails_the_pivot_naming_the_crd_and_rule_and_keeps_the_old_objects() {
    let client = setup().await;
    let ns = unique_name("ns");
    let group = format!("{}.example.com", unique_name("safe"));
    let name = unique_name("crdsafety");
    let schema = |properties: &str| {
        format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: gadgets.{group}\nspec:\n  group: {group}\n  scope: Namespaced\n  names: {{kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties: {{{properties}}}\n"
        )
    };
    let v1 = schema("size: {type: integer}, color: {type: string}");
    deploy(
        &client,
        &deployment(&name, "v1", json!({})),
        &[
            ("a.yaml", namespace(&ns)),
            ("b.yaml", v1),
            ("c.yaml", configmap(&ns, "old", "v1")),
        ],
    )
    .await;
    wait_condition(&client, &name, TYPE_INSTALLED, "True").await;

    // v2 removes the `color` field and drops the ConfigMap.
    let v2 = schema("size: {type: integer}");
    deploy(
        &client,
        &deployment(&name, "v2", json!({})),
        &[("a.yaml", namespace(&ns)), ("b.yaml", v2)],
    )
    .await;
    let message = wait_condition(&client, &name, TYPE_INSTALLED, "False").await;
    assert!(
        message.contains(&format!("gadgets.{group}")) && message.contains("color"),
        "{message}"
    );
    assert!(
        message.contains("UpgradeFailed") || message.contains("Failed to upgrade"),
        "{message}"
    );
    assert!(
        Api::<ConfigMap>::namespaced(client.clone(), &ns)
            .get_opt("old")
            .await
            .unwrap()
            .is_some(),
        "the old objects stay"
    );
    let crd = Api::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>::all(client.clone())
        .get(&format!("gadgets.{group}"))
        .await
        .unwrap();
    let spec = serde_json::to_value(&crd.spec.versions[0].schema).unwrap();
    assert!(
        spec.to_string().contains("color"),
        "the CRD was not changed"
    );
}

#[tokio::test]
async fn a_long_install_shows_the_step_in_flight_then_settles() {
    let client = setup().await;
    let name = unique_name("progress");
    let ns = unique_name("ns");
    // Enough objects that the apply takes well over the 2 s after which steps are shown
    // (each is read, dry-run and written).
    let mut manifests = vec![("00-namespace.yaml".to_owned(), namespace(&ns))];
    for i in 0..800 {
        manifests.push((
            format!("cm-{i:03}.yaml"),
            configmap(&ns, &format!("cm-{i:03}"), "v1"),
        ));
    }
    let manifests: Vec<(&str, String)> = manifests
        .iter()
        .map(|(file, yaml)| (file.as_str(), yaml.clone()))
        .collect();
    // Watch the status from before the Bundle is unpacked, recording every Progressing
    // message seen.
    let watching = {
        let client = client.clone();
        let name = name.clone();
        tokio::spawn(async move {
            let api: Api<BundleDeployment> = Api::all(client);
            let mut seen: Vec<(String, String, String)> = Vec::new();
            let deadline = std::time::Instant::now() + Duration::from_secs(120);
            while std::time::Instant::now() < deadline {
                if let Ok(Some(bd)) = api.get_opt(&name).await
                    && let Some(progressing) = support::condition(&bd, TYPE_PROGRESSING)
                {
                    if seen.last() != Some(&progressing) {
                        seen.push(progressing.clone());
                    }
                    if progressing.1 == reasons::SETTLED {
                        break;
                    }
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            seen
        })
    };
    deploy(&client, &deployment(&name, "v1", json!({})), &manifests).await;
    let seen = watching.await.unwrap();
    let reasons_seen: Vec<&str> = seen.iter().map(|(_, reason, _)| reason.as_str()).collect();
    assert!(
        reasons_seen.contains(&reasons::APPLYING),
        "the apply step never showed in status: {seen:?}"
    );
    assert!(
        seen.iter().any(|(status, _, message)| status == "True"
            && message.contains(
                "applying phase 2 of 4 (RBAC, configuration and custom resources, 800 objects)"
            )),
        "no step named the configuration phase: {seen:?}"
    );
    assert_eq!(
        seen.last().map(|(s, r, _)| (s.as_str(), r.as_str())),
        Some(("False", reasons::SETTLED)),
        "{seen:?}"
    );
    wait_condition(&client, &name, TYPE_INSTALLED, "True").await;
}

#[tokio::test]
async fn a_failing_apply_is_retried_on_the_backoff_schedule_not_in_a_loop() {
    let client = setup().await;
    let name = unique_name("collides");
    let ns = testkit::TestNamespace::create(&client, "collides").await;
    // Someone else's ConfigMap where the bundle wants one: every apply fails on the
    // collision, before any write.
    let taken = unique_name("taken");
    let existing: ConfigMap = serde_json::from_value(json!({
        "metadata": { "name": taken, "namespace": ns.name() }, "data": { "key": "theirs" }
    }))
    .unwrap();
    ns.api::<ConfigMap>()
        .create(&PostParams::default(), &existing)
        .await
        .unwrap();
    deploy(
        &client,
        &deployment(&name, "v1", json!({})),
        &[("cm.yaml", configmap(ns.name(), &taken, "mine"))],
    )
    .await;
    let message = wait_condition(&client, &name, TYPE_INSTALLED, "False").await;
    assert!(message.contains("already exists"), "{message}");

    // Every attempt reads the colliding object once. With a backoff starting at about 1 s
    // and doubling, 20 s hold at most 6 attempts; a retry loop makes dozens.
    let from = k8s_openapi::jiff::Timestamp::now();
    tokio::time::sleep(Duration::from_secs(20)).await;
    let to = k8s_openapi::jiff::Timestamp::now();
    let attempts = testkit::audit::requests(from, to)
        .iter()
        .filter(|r| {
            r.verb == "get"
                && r.resource.as_deref() == Some("configmaps")
                && r.name.as_deref() == Some(taken.as_str())
        })
        .count();
    eprintln!("a colliding apply was attempted {attempts} times in 20 s");
    assert!(
        (1..=6).contains(&attempts),
        "{attempts} apply attempts in 20 s (want 1 to 6: exponential backoff)"
    );
    ns.delete().await;
}

/// An optional object of a kind the cluster does not serve (a "ServiceMonitor where
/// Prometheus is installed") is skipped and listed in status, the rest installs; once a CRD
/// of its group appears, the object is applied without any change to the BundleDeployment.
#[tokio::test]
async fn an_optional_object_is_skipped_until_its_kind_is_served_then_applied() {
    let client = setup().await;
    let name = unique_name("optional");
    let ns = unique_name("ns");
    let group = format!("{}.example.com", unique_name("mon"));
    let widget = |optional: bool| {
        format!(
            "apiVersion: {group}/v1\nkind: Widget\nmetadata:\n  name: monitor\n  namespace: {ns}\n  annotations:\n    core.rukpak.io/optional: \"{optional}\"\nspec:\n  interval: 30s\n"
        )
    };
    let manifests = [
        ("00-namespace.yaml", namespace(&ns)),
        ("config.yaml", configmap(&ns, "settings", "v1")),
        ("monitor.yaml", widget(true)),
    ];
    deploy(&client, &deployment(&name, "v1", json!({})), &manifests).await;
    let message = wait_condition(&client, &name, TYPE_INSTALLED, "True").await;
    assert!(
        message.contains(&format!(
            "optional object skipped because the cluster does not serve its kind: Widget.{group} {ns}/monitor"
        )),
        "{message}"
    );
    let deployments: Api<BundleDeployment> = Api::all(client.clone());
    let status = deployments.get(&name).await.unwrap().status.unwrap();
    assert_eq!(status.skipped.len(), 1);
    assert_eq!(status.skipped[0].group, group);
    assert!(status.inventory.iter().any(|e| e.name == "settings"));

    // The kind appears (an administrator installs the CRD): the object follows.
    testkit::apply_manifests(&client, &crd(&group)).await;
    let widgets: Api<kube::api::DynamicObject> = Api::namespaced_with(
        client.clone(),
        &ns,
        &kube::api::ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk(
            &group, "v1", "Widget",
        )),
    );
    // Well within the provisioner's 30 s resync: only the CRD watch can have woken it.
    wait_for(
        "the optional Widget to be applied",
        Duration::from_secs(15),
        || async {
            match widgets.get_opt("monitor").await {
                Ok(Some(_)) => Ok(()),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
    wait_for("status to stop listing it", TIMEOUT, || async {
        let status = deployments
            .get(&name)
            .await
            .map_err(|e| e.to_string())?
            .status;
        match status {
            Some(s) if s.skipped.is_empty() && s.inventory.iter().any(|e| e.name == "monitor") => {
                Ok(())
            }
            other => Err(format!("{other:?}")),
        }
    })
    .await;

    // Without the annotation, a kind nobody serves still fails the install, saying so.
    let other = unique_name("required");
    let missing = format!("{}.example.com", unique_name("none"));
    let manifests = [(
        "thing.yaml",
        format!("apiVersion: {missing}/v1\nkind: Thing\nmetadata:\n  name: t\n  namespace: {ns}\n"),
    )];
    deploy(&client, &deployment(&other, "v1", json!({})), &manifests).await;
    let message = wait_condition(&client, &other, TYPE_INSTALLED, "False").await;
    assert!(
        message.contains(&format!(
            "failed to find kind Thing in API group version {missing}/v1"
        )),
        "{message}"
    );
    testkit::delete_and_wait(&deployments, &other, TIMEOUT).await;
    testkit::delete_and_wait(&deployments, &name, TIMEOUT).await;
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client.clone());
    // The CRD came from the administrator, not the bundle: it stays.
    assert!(
        crds.get_opt(&format!("widgets.{group}"))
            .await
            .unwrap()
            .is_some()
    );
    let _ = crds
        .delete(&format!("widgets.{group}"), &DeleteParams::default())
        .await;
}

/// `deletionPolicy: Orphan` leaves every object in place and only drops the ownership
/// labels, so nothing the tenant relies on disappears with the BundleDeployment.
#[tokio::test]
async fn orphan_deletion_leaves_every_object_without_ownership_labels() {
    let client = setup().await;
    let name = unique_name("orphan");
    let ns = unique_name("ns");
    let manifests = [
        ("00-namespace.yaml", namespace(&ns)),
        ("config.yaml", configmap(&ns, "settings", "v1")),
        ("operator.yaml", deployment_manifest(&ns, "operator")),
    ];
    deploy(
        &client,
        &deployment(&name, "v1", json!({"deletionPolicy": "Orphan"})),
        &manifests,
    )
    .await;
    wait_condition(&client, &name, TYPE_INSTALLED, "True").await;
    let deployments: Api<BundleDeployment> = Api::all(client.clone());
    testkit::delete_and_wait(&deployments, &name, TIMEOUT).await;

    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let settings = config_maps.get("settings").await.unwrap();
    assert!(settings.metadata.deletion_timestamp.is_none());
    assert!(
        !settings.labels().contains_key("core.rukpak.io/owner-name"),
        "{:?}",
        settings.labels()
    );
    let operator = Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(client.clone(), &ns)
        .get("operator")
        .await
        .unwrap();
    assert!(!operator.labels().contains_key("core.rukpak.io/owner-name"));
    let namespace = Api::<Namespace>::all(client.clone())
        .get(&ns)
        .await
        .unwrap();
    assert!(namespace.metadata.deletion_timestamp.is_none());
    assert!(!namespace.labels().contains_key("core.rukpak.io/owner-name"));
    let _ = Api::<Namespace>::all(client.clone())
        .delete(&ns, &DeleteParams::default())
        .await;
}
