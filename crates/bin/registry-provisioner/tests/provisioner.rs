//! The registry provisioner against the real control plane: `rukpak-core` and
//! `registry-provisioner` run as processes (testkit::stack); each test pushes a registry+v1
//! bundle image to a local OCI registry and installs it with a BundleDeployment.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, Role};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use kube::{Api, Client, ResourceExt};
use rukpak_api::conditions::{TYPE_HAS_VALID_BUNDLE, TYPE_HEALTHY, TYPE_INSTALLED};
use rukpak_api::{BundleDeployment, bundle_name, template_hash};
use serde_json::json;
use support::create_deployment;
use testkit::servers::CraneRegistry;
use testkit::stack::{Component, Stack};
use testkit::{client, unique_name, wait_for};

mod support;

const TIMEOUT: Duration = Duration::from_secs(90);
const CSV_FILE: &str = "manifests/own-namespace-operator.clusterserviceversion.yaml";

async fn stack() -> &'static Stack {
    Stack::shared(&[Component::RukpakCore, Component::RegistryProvisioner]).await
}

/// A copy of the `own-namespace` golden bundle (an OwnNamespace-only operator) whose names
/// (package, CSV, Deployment, ServiceAccount, suggested namespace, CRD group) are unique to
/// one test, so tests never share a cluster-scoped object.
struct TestBundle {
    id: String,
    group: String,
    namespace: String,
    operator: String,
    csv: String,
    files: Vec<(String, Vec<u8>)>,
}

impl TestBundle {
    fn new() -> Self {
        let id = unique_name("own");
        let group = format!("{id}.example.com");
        let files = support::golden_bundle(
            "own-namespace",
            &[("own.example.com", &group), ("own-namespace-operator", &id)],
        );
        Self {
            namespace: format!("{id}-system"),
            operator: format!("{id}-controller-manager"),
            csv: format!("{id}.v1.0.0"),
            id,
            group,
            files,
        }
    }

    /// Pushes the bundle as a one-layer image and returns its reference.
    fn push(&self, registry: &CraneRegistry) -> String {
        support::push_bundle(
            registry,
            &self.files,
            &format!("bundles/{}:v1.0.0", self.namespace),
        )
    }

    fn crd_name(&self) -> String {
        format!("widgets.{}", self.group)
    }
}

/// Waits until condition `type_` of BundleDeployment `name` has `status`; returns its
/// message. On timeout, prints the controllers' logs.
async fn wait_condition(
    client: &Client,
    stack: &Stack,
    name: &str,
    type_: &str,
    status: &str,
) -> String {
    wait_reason(client, stack, name, type_, status, None).await
}

/// Like [`wait_condition`], also waiting for `reason` when given.
async fn wait_reason(
    client: &Client,
    stack: &Stack,
    name: &str,
    type_: &str,
    status: &str,
    reason: Option<&str>,
) -> String {
    let deployments: Api<BundleDeployment> = Api::all(client.clone());
    let what = format!("{name} {type_}={status}");
    let probe = wait_for(&what, TIMEOUT, || async {
        let bd = deployments.get(name).await.map_err(|e| e.to_string())?;
        let conditions = bd
            .status
            .as_ref()
            .map(|s| s.conditions.clone())
            .unwrap_or_default();
        match kit::conditions::find(&conditions, type_) {
            Some(c) if c.status == status && reason.is_none_or(|r| r == c.reason) => {
                Ok(c.message.clone())
            }
            _ => Err(format!("{conditions:?}")),
        }
    });
    match tokio::time::timeout(TIMEOUT + Duration::from_secs(5), probe).await {
        Ok(message) => message,
        Err(_) => panic!(
            "{what} timed out; rukpak-core:\n{}\nregistry-provisioner:\n{}",
            stack.logs(Component::RukpakCore),
            stack.logs(Component::RegistryProvisioner)
        ),
    }
}

async fn delete_and_wait(client: &Client, name: &str) {
    testkit::delete_and_wait(&Api::<BundleDeployment>::all(client.clone()), name, TIMEOUT).await;
}

/// Whether the object is gone or being deleted.
fn gone<K: kube::Resource>(object: Option<K>) -> bool {
    object.is_none_or(|o| o.meta().deletion_timestamp.is_some())
}

fn widget_resource(bundle: &TestBundle) -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(&bundle.group, "v1", "Widget"))
}

fn widget_api(client: &Client, bundle: &TestBundle) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), &bundle.namespace, &widget_resource(bundle))
}

#[tokio::test]
async fn a_registry_bundle_installs_becomes_healthy_and_deletion_keeps_user_data() {
    let stack = stack().await;
    let client = client().await;
    let registry = CraneRegistry::start();
    let bundle = TestBundle::new();
    let image = bundle.push(&registry);
    let name = unique_name("reg");
    create_deployment(&client, stack, &name, &image, None).await;

    let message = wait_condition(&client, stack, &name, TYPE_INSTALLED, "True").await;
    assert!(!message.is_empty());
    // The suggested namespace did not exist: it was created, and belongs to the deployment.
    let namespace = Api::<Namespace>::all(client.clone())
        .get(&bundle.namespace)
        .await
        .unwrap();
    assert_eq!(
        namespace.labels().get("core.rukpak.io/owner-name"),
        Some(&name)
    );
    // OwnNamespace by default: the operator watches its own namespace.
    let operator = Api::<Deployment>::namespaced(client.clone(), &bundle.namespace)
        .get(&bundle.operator)
        .await
        .unwrap();
    let annotations = operator
        .spec
        .as_ref()
        .and_then(|s| s.template.metadata.as_ref())
        .and_then(|m| m.annotations.clone())
        .unwrap_or_default();
    assert_eq!(
        annotations.get("olm.targetNamespaces"),
        Some(&bundle.namespace)
    );
    let roles = Api::<Role>::namespaced(client.clone(), &bundle.namespace)
        .list(&Default::default())
        .await
        .unwrap();
    assert_eq!(roles.items.len(), 1, "one Role for the one permission");
    let owned = ListParams::default().labels(&format!("core.rukpak.io/owner-name={name}"));
    let cluster_roles = Api::<ClusterRole>::all(client.clone())
        .list(&owned)
        .await
        .unwrap()
        .items;
    assert_eq!(
        cluster_roles.len(),
        1,
        "one ClusterRole for the cluster permission"
    );
    let cluster_role_name = cluster_roles[0].name_any();
    assert!(
        cluster_role_name.starts_with(&bundle.id[..10]),
        "{cluster_role_name}"
    );

    // kwok runs the operator's pod, the Deployment becomes Available, the bundle Healthy.
    wait_condition(&client, stack, &name, TYPE_HEALTHY, "True").await;

    // The administrator's data: a custom resource, and a ConfigMap in the install namespace.
    let widgets = widget_api(&client, &bundle);
    let widget = DynamicObject::new("user-data", &widget_resource(&bundle))
        .data(json!({ "spec": { "size": 1 } }));
    widgets
        .create(&PostParams::default(), &widget)
        .await
        .unwrap();
    let user_config: ConfigMap = serde_json::from_value(json!({
        "metadata": { "name": "user-config" }, "data": { "a": "b" }
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), &bundle.namespace)
        .create(&PostParams::default(), &user_config)
        .await
        .unwrap();

    delete_and_wait(&client, &name).await;

    // The operator is gone: its Deployment, ServiceAccount and RBAC.
    let deployments = Api::<Deployment>::namespaced(client.clone(), &bundle.namespace);
    assert!(gone(deployments.get_opt(&bundle.operator).await.unwrap()));
    let accounts = Api::<ServiceAccount>::namespaced(client.clone(), &bundle.namespace);
    assert!(gone(accounts.get_opt(&bundle.operator).await.unwrap()));
    let cluster_roles = Api::<ClusterRole>::all(client.clone());
    assert!(gone(
        cluster_roles.get_opt(&cluster_role_name).await.unwrap()
    ));
    // The CRD holding a custom resource stays, released, with the resource.
    let crd = Api::<CustomResourceDefinition>::all(client.clone())
        .get(&bundle.crd_name())
        .await
        .expect("the CRD with a custom resource is kept");
    assert!(crd.metadata.deletion_timestamp.is_none());
    assert!(crd.labels().get("core.rukpak.io/owner-name").is_none());
    assert!(widgets.get_opt("user-data").await.unwrap().is_some());
    // The namespace holds the administrator's ConfigMap: it stays too.
    let namespace = Api::<Namespace>::all(client.clone())
        .get(&bundle.namespace)
        .await
        .unwrap();
    assert!(namespace.metadata.deletion_timestamp.is_none());
    assert!(
        Api::<ConfigMap>::namespaced(client.clone(), &bundle.namespace)
            .get_opt("user-config")
            .await
            .unwrap()
            .is_some()
    );
}

#[tokio::test]
async fn deleting_leaves_nothing_behind_when_nothing_else_was_added() {
    let stack = stack().await;
    let client = client().await;
    let registry = CraneRegistry::start();
    let bundle = TestBundle::new();
    let image = bundle.push(&registry);
    let name = unique_name("reg");
    create_deployment(&client, stack, &name, &image, None).await;
    wait_condition(&client, stack, &name, TYPE_INSTALLED, "True").await;

    delete_and_wait(&client, &name).await;
    // No custom resource, no foreign object: the CRD and the namespace the bundle created go.
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    assert!(gone(crds.get_opt(&bundle.crd_name()).await.unwrap()));
    let namespaces = Api::<Namespace>::all(client.clone());
    assert!(gone(namespaces.get_opt(&bundle.namespace).await.unwrap()));
}

#[tokio::test]
async fn an_unsupported_install_mode_fails_with_upstreams_message() {
    let stack = stack().await;
    let client = client().await;
    let registry = CraneRegistry::start();
    let bundle = TestBundle::new();
    let image = bundle.push(&registry);
    let name = unique_name("reg");
    // The operator supports only OwnNamespace; watching another namespace is refused.
    let created = create_deployment(
        &client,
        stack,
        &name,
        &image,
        Some(json!({ "targetNamespaces": ["other"] })),
    )
    .await;

    let message = wait_reason(
        &client,
        stack,
        &name,
        TYPE_HAS_VALID_BUNDLE,
        "False",
        Some("BundleLoadFailed"),
    )
    .await;
    let bundle_object = bundle_name(&name, &template_hash(&created.spec.template));
    assert_eq!(
        message,
        format!(
            "Failed to load the {bundle_object} Bundle: failed to validate target namespaces \
             against ClusterServiceVersion \"{}\" in {CSV_FILE}: \
             supported install modes [OwnNamespace] do not support target namespaces [other]",
            bundle.csv
        )
    );
    // Nothing was installed: no namespace, no CRD.
    let namespaces = Api::<Namespace>::all(client.clone());
    assert!(
        namespaces
            .get_opt(&bundle.namespace)
            .await
            .unwrap()
            .is_none()
    );
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    assert!(crds.get_opt(&bundle.crd_name()).await.unwrap().is_none());
    delete_and_wait(&client, &name).await;
}

#[tokio::test]
async fn an_existing_install_namespace_from_the_config_is_used_but_never_claimed() {
    let stack = stack().await;
    let client = client().await;
    let registry = CraneRegistry::start();
    let bundle = TestBundle::new();
    let image = bundle.push(&registry);
    let existing = unique_name("admin-ns");
    let namespaces = Api::<Namespace>::all(client.clone());
    let namespace: Namespace =
        serde_json::from_value(json!({ "metadata": { "name": existing } })).unwrap();
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    let name = unique_name("reg");
    create_deployment(
        &client,
        stack,
        &name,
        &image,
        Some(json!({ "installNamespace": existing })),
    )
    .await;
    wait_condition(&client, stack, &name, TYPE_HEALTHY, "True").await;
    let operator = Api::<Deployment>::namespaced(client.clone(), &existing)
        .get(&bundle.operator)
        .await
        .unwrap();
    assert_eq!(
        operator.labels().get("core.rukpak.io/owner-name"),
        Some(&name)
    );
    let live = namespaces.get(&existing).await.unwrap();
    assert!(live.labels().get("core.rukpak.io/owner-name").is_none());
    // The suggested namespace was not used.
    assert!(
        namespaces
            .get_opt(&bundle.namespace)
            .await
            .unwrap()
            .is_none()
    );

    delete_and_wait(&client, &name).await;
    let deployments = Api::<Deployment>::namespaced(client.clone(), &existing);
    assert!(gone(deployments.get_opt(&bundle.operator).await.unwrap()));
    let live = namespaces.get(&existing).await.unwrap();
    assert!(live.metadata.deletion_timestamp.is_none());
}

/// Every golden `render` output is accepted by the API server as it is (server-side apply,
/// dry run): converted v1beta1 CRDs are valid v1, names are valid, quoting is right. Kinds
/// the test cluster does not serve (ServiceMonitor, ConsoleYAMLSample, ...) are skipped.
/// Namespaced objects are checked in a namespace of the test's own, so no namespace a
/// golden bundle names is created on the shared cluster.
#[tokio::test]
async fn golden_outputs_are_accepted_by_the_api_server() {
    let client = client().await;
    let scratch = testkit::TestNamespace::create(&client, "golden").await;
    let root = testkit::package_path("").join("tests/golden");
    let mut checked = 0;
    for entry in std::fs::read_dir(&root).unwrap() {
        let expected = entry.unwrap().path().join("expected.yaml");
        let Ok(yaml) = std::fs::read_to_string(&expected) else {
            continue;
        };
        for document in serde_yaml_ng::Deserializer::from_str(&yaml) {
            let mut object: DynamicObject = serde::Deserialize::deserialize(document).unwrap();
            let types = object.types.clone().unwrap();
            let gvk = GroupVersionKind::try_from(&types).unwrap();
            let Ok((resource, _)) = kube::discovery::pinned_kind(&client, &gvk).await else {
                continue;
            };
            let api: Api<DynamicObject> = if object.metadata.namespace.is_some() {
                object.metadata.namespace = Some(scratch.name().to_owned());
                Api::namespaced_with(client.clone(), scratch.name(), &resource)
            } else {
                Api::all_with(client.clone(), &resource)
            };
            // Forced: what is checked is that the API server accepts the object. Other tests
            // of this binary install the same cluster-scoped CRDs at the same time, and a
            // field-manager conflict with them says nothing about the golden output.
            let params = kube::api::PatchParams::apply("golden-test")
                .force()
                .dry_run();
            api.patch(
                &object.name_any(),
                &params,
                &kube::api::Patch::Apply(&object),
            )
            .await
            .unwrap_or_else(|err| {
                panic!(
                    "{}: {} {} refused: {err}",
                    expected.display(),
                    types.kind,
                    object.name_any()
                )
            });
            checked += 1;
        }
    }
    assert!(checked > 50, "only {checked} objects checked");
    scratch.delete().await;
}

/// The `olm-shapes` bundle (pod and ConfigMap webhooks without a selector that keeps them out
/// of kube-system, a Service under OLM's name, a RoleBinding in two files, fields Kubernetes
/// does not have in its Deployment) installs; what was changed is in `status.adjustments`
/// and told once by a `BundleAdjusted` Event, and the live objects are the adjusted ones.
#[tokio::test]
async fn a_bundle_olm_installs_is_installed_adjusted_and_the_adjustments_are_reported() {
    let client = client().await;
    let stack = stack().await;
    let id = unique_name("shapes");
    // The CSV suggests its package's name as the install namespace.
    let namespace = id.clone();
    // Unique names, and webhooks that never refuse: no server answers on simulated nodes,
    // and the cluster is shared with other tests.
    let files = support::golden_bundle(
        "olm-shapes",
        &[
            ("failurePolicy: Fail", "failurePolicy: Ignore"),
            ("telemetry.example.io", &format!("{id}.example.io")),
            ("telemetry-operator", &id),
        ],
    );
    let registry = CraneRegistry::start();
    let image = support::push_bundle(&registry, &files, &format!("bundles/{id}:v0.98.0"));
    let name = id.clone();
    create_deployment(&client, stack, &name, &image, None).await;
    wait_condition(&client, stack, &name, TYPE_INSTALLED, "True").await;

    let deployment = Api::<BundleDeployment>::all(client.clone())
        .get(&name)
        .await
        .unwrap();
    let status = deployment.status.unwrap();
    assert_eq!(status.adjustments.len(), 5, "{:#?}", status.adjustments);
    let installed = kit::conditions::find(&status.conditions, TYPE_INSTALLED).unwrap();
    assert!(
        installed
            .message
            .contains("adjusted to install safely (5 changes, see status.adjustments)"),
        "{}",
        installed.message
    );

    // What is live is what the adjustments say.
    let live: Deployment = Api::namespaced(client.clone(), &namespace)
        .get(&format!("{id}-controller-manager"))
        .await
        .unwrap();
    let spec = serde_json::to_value(live.spec.unwrap()).unwrap();
    let container = &spec["template"]["spec"]["containers"][0];
    assert!(container["readinessProbe"].get("resources").is_none());
    let pods =
        Api::<k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration>::all(
            client.clone(),
        )
        .get(&format!("mpod.{id}.example.io"))
        .await
        .unwrap();
    let selector = pods.webhooks.unwrap()[0]
        .namespace_selector
        .clone()
        .unwrap();
    let excluded = &selector.match_expressions.unwrap()[0];
    assert_eq!(excluded.operator, "NotIn");
    assert!(
        excluded
            .values
            .as_ref()
            .unwrap()
            .contains(&"kube-system".to_owned())
    );

    // Told once, not on every reconcile: a resync later there is still one Event.
    let count_events = || async {
        Api::<k8s_openapi::api::core::v1::Event>::all(client.clone())
            .list(&ListParams::default().fields(&format!("involvedObject.name={name}")))
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some("BundleAdjusted"))
            .map(|e| e.count.unwrap_or(1))
            .sum::<i32>()
    };
    assert_eq!(count_events().await, 1);
    let annotated = json!({"metadata": {"annotations": {"olmv1-test/poke": "1"}}});
    Api::<BundleDeployment>::all(client.clone())
        .patch(
            &name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&annotated),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(count_events().await, 1);
    delete_and_wait(&client, &name).await;
}
