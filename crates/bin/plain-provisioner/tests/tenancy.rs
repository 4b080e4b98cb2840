//! A hostile tenant against the plain provisioner and the admission policies in
//! `deploy/admission`, on the real control plane. The tenant (`mallory`, an impersonated
//! user) may create BundleDeployments and use the plain class, as docs/operations.md tells
//! administrators to grant; she may not create ClusterRoles or read Secrets. Every refusal
//! asserts that nothing was applied.
//!
//! The provisioner of this test process runs with `--default-service-account` set, so a
//! BundleDeployment without `spec.serviceAccount` applies as that account.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::OnceLock;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::PostParams;
use kube::{Api, Client};
use rukpak_api::conditions::TYPE_INSTALLED;
use rukpak_api::{BundleDeployment, ProvisionerClass, ServiceAccountRef};
use serde_json::json;
use testkit::{apply_dir, client, install_crds, unique_name, wait_for};

const TIMEOUT: Duration = Duration::from_secs(60);

/// Names shared by every test of this process.
struct World {
    /// The content store namespace, also the label value the provisioner selects on.
    system_namespace: String,
    /// The tenant's namespace: `deployer` and the default installer may write here only.
    team: String,
    /// The account BundleDeployments without `spec.serviceAccount` apply as.
    installer: ServiceAccountRef,
    /// The tenant's own ServiceAccount in `team`.
    deployer: ServiceAccountRef,
    /// A privileged account of another namespace (bound to cluster-admin).
    privileged: ServiceAccountRef,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let team = unique_name("team");
        let tenants = unique_name("tenants");
        World {
            system_namespace: unique_name("rukpak-system"),
            installer: ServiceAccountRef {
                namespace: tenants.clone(),
                name: "installer".into(),
            },
            deployer: ServiceAccountRef {
                namespace: team.clone(),
                name: "deployer".into(),
            },
            privileged: ServiceAccountRef {
                namespace: tenants,
                name: "cluster-installer".into(),
            },
            team,
        }
    })
}

/// Creates a cluster-scoped object.
async fn create<K>(client: &Client, object: serde_json::Value)
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::ClusterResourceScope>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let object: K = serde_json::from_value(object).unwrap();
    Api::<K>::all(client.clone())
        .create(&PostParams::default(), &object)
        .await
        .unwrap();
}

/// Creates a namespaced object.
async fn create_in<K>(client: &Client, namespace: &str, object: serde_json::Value)
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let object: K = serde_json::from_value(object).unwrap();
    Api::<K>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &object)
        .await
        .unwrap();
}

/// Binds cluster role `role` to `subject` inside `namespace`.
async fn bind_in(admin: &Client, namespace: &str, role: &str, subject: serde_json::Value) {
    create_in::<RoleBinding>(
        admin,
        namespace,
        json!({
            "metadata": { "name": unique_name("binding") },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role },
            "subjects": [subject]
        }),
    )
    .await;
}

fn account_subject(account: &ServiceAccountRef) -> serde_json::Value {
    json!({ "kind": "ServiceAccount", "namespace": account.namespace, "name": account.name })
}

fn user_subject(user: &str) -> serde_json::Value {
    json!({ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user })
}

/// Installs CRDs, classes and policies, creates the namespaces and accounts, and starts
/// the provisioner, once per process.
async fn setup() -> Client {
    static STARTED: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    let admin = client().await;
    STARTED
        .get_or_init(|| async {
            let w = world();
            install_crds(&admin).await;
            apply_dir(&admin, "deploy/provisioner-classes").await;
            testkit::install_admission(&admin).await;
            for ns in [&w.system_namespace, &w.team, &w.installer.namespace] {
                create::<Namespace>(&admin, json!({ "metadata": { "name": ns } })).await;
            }
            for account in [&w.installer, &w.deployer, &w.privileged] {
                create_in::<ServiceAccount>(
                    &admin,
                    &account.namespace,
                    json!({ "metadata": { "name": account.name } }),
                )
                .await;
            }
            // The tenant's accounts may write the team namespace and nothing else.
            bind_in(&admin, &w.team, "edit", account_subject(&w.deployer)).await;
            bind_in(&admin, &w.team, "edit", account_subject(&w.installer)).await;
            create::<ClusterRoleBinding>(
                &admin,
                json!({
                    "metadata": { "name": unique_name("privileged") },
                    "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin" },
                    "subjects": [account_subject(&w.privileged)]
                }),
            )
            .await;

            let default = w.installer.clone();
            let system_namespace = w.system_namespace.clone();
            support::start_provisioner(system_namespace, Some(default));

            // The provisioner publishes its default identity for the admission policy.
            let classes: Api<ProvisionerClass> = Api::all(admin.clone());
            wait_for("the default identity to be published", TIMEOUT, || async {
                let class = classes
                    .get("core-rukpak-io-plain")
                    .await
                    .map_err(|e| e.to_string())?;
                let published = class.status.and_then(|s| s.default_identity);
                match published.and_then(|p| p.service_account) {
                    Some(account) if account == w.installer => Ok(()),
                    other => Err(format!("{other:?}")),
                }
            })
            .await;
        })
        .await;
    admin
}

/// A new tenant user who may create BundleDeployments and use the plain class (the
/// shipped `provisioner-class-user:core-rukpak-io-plain` role), and nothing else.
async fn tenant(admin: &Client) -> (String, Client) {
    let user = unique_name("mallory");
    testkit::users::grant(
        admin,
        &user,
        &unique_name("bd-author"),
        json!([{
            "apiGroups": ["core.rukpak.io"], "resources": ["bundledeployments"],
            "verbs": ["create", "get", "list", "watch", "update", "patch", "delete"]
        }]),
    )
    .await;
    testkit::users::bind(
        admin,
        &user,
        &unique_name("tenant"),
        "provisioner-class-user:core-rukpak-io-plain",
    )
    .await;
    let client = testkit::users::impersonating(&user).await;
    (user, client)
}

/// Lets `user` impersonate `account`.
async fn allow_impersonation(admin: &Client, user: &str, account: &ServiceAccountRef) {
    let role = unique_name("impersonate");
    create_in::<Role>(
        admin,
        &account.namespace,
        json!({ "metadata": { "name": role }, "rules": [{
            "apiGroups": [""], "resources": ["serviceaccounts"],
            "resourceNames": [account.name], "verbs": ["impersonate"]
        }]}),
    )
    .await;
    create_in::<RoleBinding>(
        admin,
        &account.namespace,
        json!({
            "metadata": { "name": role },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role },
            "subjects": [user_subject(user)]
        }),
    )
    .await;
}

/// A plain BundleDeployment of an upload bundle, selected by this process's provisioner.
fn deployment(name: &str, extra: serde_json::Value) -> BundleDeployment {
    let mut spec = json!({
        "provisionerClassName": "core-rukpak-io-plain",
        "installNamespace": world().team,
        "template": { "spec": { "provisionerClassName": "core-rukpak-io-plain",
            "source": { "type": "upload", "upload": {} } } }
    });
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    serde_json::from_value(json!({
        "apiVersion": "core.rukpak.io/v1alpha1", "kind": "BundleDeployment",
        "metadata": { "name": name, "labels": { "olmv1-test": world().system_namespace } },
        "spec": spec
    }))
    .unwrap()
}

fn with_account(account: &ServiceAccountRef) -> serde_json::Value {
    json!({ "serviceAccount": { "namespace": account.namespace, "name": account.name } })
}

/// Creates `deployment` as `tenant` once the API server's policies and RBAC caches allow
/// it; on success plays rukpak-core with `manifests`.
async fn create_as(
    admin: &Client,
    tenant: &Client,
    deployment: &BundleDeployment,
    manifests: &[(&str, String)],
) {
    let api: Api<BundleDeployment> = Api::all(tenant.clone());
    let live = wait_for(
        "the tenant's BundleDeployment to be admitted",
        TIMEOUT,
        || async {
            api.create(&PostParams::default(), deployment)
                .await
                .map_err(|e| e.to_string())
        },
    )
    .await;
    support::store_bundle(admin, &world().system_namespace, &live, manifests).await;
}

/// Tries to create `deployment` as `tenant` until the denial containing `expected` shows
/// (policies and RBAC take effect asynchronously), and returns the message. Panics if the
/// BundleDeployment is admitted.
async fn refused(tenant: &Client, deployment: &BundleDeployment, expected: &str) -> String {
    let api: Api<BundleDeployment> = Api::all(tenant.clone());
    wait_for("the admission denial", TIMEOUT, || async {
        match api.create(&PostParams::default(), deployment).await {
            Ok(_) => panic!("admitted although it must be refused: {deployment:?}"),
            Err(err) if err.to_string().contains(expected) => Ok(err.to_string()),
            Err(err) => Err(err.to_string()),
        }
    })
    .await
}

async fn assert_absent<K>(api: &Api<K>, name: &str)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let found = api.get_opt(name).await.unwrap();
    assert!(found.is_none(), "{name} exists: {found:?}");
}

fn configmap(namespace: &str, name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\ndata:\n  key: value\n"
    )
}

fn escalation(role: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "role.yaml",
            format!(
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {role}\nrules:\n- apiGroups: ['*']\n  resources: ['*']\n  verbs: ['*']\n"
            ),
        ),
        (
            "binding.yaml",
            format!(
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: {role}\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: {role}\nsubjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: Group\n  name: system:authenticated\n"
            ),
        ),
        (
            "config.yaml",
            configmap(&world().team, &format!("{role}-cm")),
        ),
    ]
}

#[tokio::test]
async fn a_cluster_role_escalation_applied_as_the_tenants_account_is_refused_and_nothing_is_applied()
 {
    let admin = setup().await;
    let w = world();
    let (user, mallory) = tenant(&admin).await;
    allow_impersonation(&admin, &user, &w.deployer).await;
    let name = unique_name("escalate");
    let role = unique_name("everything");
    create_as(
        &admin,
        &mallory,
        &deployment(&name, with_account(&w.deployer)),
        &escalation(&role),
    )
    .await;

    let message = support::wait_condition(&admin, &name, TYPE_INSTALLED, "False", TIMEOUT).await;
    assert!(
        message.contains("is forbidden: User \"system:serviceaccount:"),
        "{message}"
    );
    assert!(
        message.contains("cannot get resource \"clusterrole"),
        "{message}"
    );
    assert!(
        !message.contains("Status {"),
        "Rust Debug output in: {message}"
    );
    // The dry run refused the whole bundle before the first write: not even the ConfigMap
    // the account could have written exists.
    assert_absent(&Api::<ClusterRole>::all(admin.clone()), &role).await;
    assert_absent(&Api::<ClusterRoleBinding>::all(admin.clone()), &role).await;
    assert_absent(
        &Api::<ConfigMap>::namespaced(admin.clone(), &w.team),
        &format!("{role}-cm"),
    )
    .await;
}

#[tokio::test]
async fn naming_a_privileged_account_of_another_namespace_is_refused_at_admission() {
    let admin = setup().await;
    let w = world();
    let (user, mallory) = tenant(&admin).await;
    let name = unique_name("borrow");
    let message = refused(
        &mallory,
        &deployment(&name, with_account(&w.privileged)),
        "may not impersonate ServiceAccount",
    )
    .await;
    assert!(
        message.contains(&format!(
            "user \"{user}\" may not impersonate ServiceAccount \"{}\" named in spec.serviceAccount",
            w.privileged
        )),
        "{message}"
    );
    assert!(
        message.contains(&format!(
            "grant the verb \"impersonate\" on serviceaccounts/{} in namespace {}",
            w.privileged.name, w.privileged.namespace
        )),
        "{message}"
    );
    assert_absent(&Api::<BundleDeployment>::all(admin.clone()), &name).await;
}

#[tokio::test]
async fn without_a_service_account_the_tenant_needs_to_impersonate_the_default_and_its_limits_hold()
{
    let admin = setup().await;
    let w = world();
    let (user, mallory) = tenant(&admin).await;
    let name = unique_name("default");
    let message = refused(
        &mallory,
        &deployment(&name, json!({})),
        "the identity BundleDeployments of class",
    )
    .await;
    assert!(
        message.contains(&format!(
            "may not impersonate ServiceAccount \"{}\", the identity BundleDeployments of class \"core-rukpak-io-plain\" apply as without spec.serviceAccount",
            w.installer
        )),
        "{message}"
    );
    assert_absent(&Api::<BundleDeployment>::all(admin.clone()), &name).await;

    // Allowed to impersonate the default account, the tenant installs into the namespace
    // that account may write...
    allow_impersonation(&admin, &user, &w.installer).await;
    create_as(
        &admin,
        &mallory,
        &deployment(&name, json!({})),
        &[("config.yaml", configmap(&w.team, &name))],
    )
    .await;
    support::wait_condition(&admin, &name, TYPE_INSTALLED, "True", TIMEOUT).await;
    Api::<ConfigMap>::namespaced(admin.clone(), &w.team)
        .get(&name)
        .await
        .unwrap();

    // ...and nothing outside it: the default account's limits are the BundleDeployment's.
    let outside = unique_name("outside");
    let elsewhere = unique_name("elsewhere");
    create::<Namespace>(&admin, json!({ "metadata": { "name": elsewhere } })).await;
    create_as(
        &admin,
        &mallory,
        &deployment(&outside, json!({})),
        &[("config.yaml", configmap(&elsewhere, &outside))],
    )
    .await;
    let message = support::wait_condition(&admin, &outside, TYPE_INSTALLED, "False", TIMEOUT).await;
    assert!(
        message.contains(&format!(
            "is forbidden: User \"{}\"",
            w.installer.username()
        )),
        "{message}"
    );
    assert_absent(
        &Api::<ConfigMap>::namespaced(admin.clone(), &elsewhere),
        &outside,
    )
    .await;
}

#[tokio::test]
async fn naming_secrets_or_configmaps_the_tenant_cannot_read_is_refused_at_admission() {
    let admin = setup().await;
    let w = world();
    let (user, mallory) = tenant(&admin).await;
    allow_impersonation(&admin, &user, &w.deployer).await;
    let cases = [
        (
            json!({ "type": "image", "image": { "ref": "registry.example/b:1", "pullSecret": "registry-creds" } }),
            "may not read Secret \"registry-creds\" in namespace rukpak-system named in spec.template.spec.source.image.pullSecret",
        ),
        (
            json!({ "type": "http", "http": { "url": "http://tenant.example/b.tgz", "auth": { "secret": { "name": "http-creds" } } } }),
            "may not read Secret \"http-creds\" in namespace rukpak-system named in spec.template.spec.source.http.auth.secret",
        ),
        (
            json!({ "type": "git", "git": { "repository": "https://tenant.example/r.git", "ref": { "branch": "main" }, "auth": { "secret": { "name": "git-creds" } } } }),
            "may not read Secret \"git-creds\" in namespace rukpak-system named in spec.template.spec.source.git.auth.secret",
        ),
        (
            json!({ "type": "configMaps", "configMaps": [{ "configMap": { "name": "someone-elses-content" } }] }),
            "may not read every ConfigMap named in spec.template.spec.source.configMaps (someone-elses-content) in namespace rukpak-system",
        ),
    ];
    for (source, expected) in cases {
        let name = unique_name("secret");
        let mut bd = deployment(&name, with_account(&w.deployer));
        bd.spec.template.spec.source = serde_json::from_value(source).unwrap();
        let message = refused(&mallory, &bd, expected).await;
        assert!(message.contains(&format!("user \"{user}\"")), "{message}");
        assert_absent(&Api::<BundleDeployment>::all(admin.clone()), &name).await;
    }
}

#[tokio::test]
async fn a_nested_bundle_deployment_is_created_as_the_outer_identity_and_held_to_the_same_rules() {
    let admin = setup().await;
    let w = world();
    let (user, mallory) = tenant(&admin).await;
    allow_impersonation(&admin, &user, &w.deployer).await;
    // The tenant's account may create BundleDeployments, but may not use the registry class.
    let role = unique_name("deployer-bds");
    create::<ClusterRole>(
        &admin,
        json!({ "metadata": { "name": role }, "rules": [{
            "apiGroups": ["core.rukpak.io"], "resources": ["bundledeployments"],
            "verbs": ["create", "get", "list", "watch", "update", "patch"]
        }]}),
    )
    .await;
    create::<ClusterRoleBinding>(
        &admin,
        json!({
            "metadata": { "name": role },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role },
            "subjects": [account_subject(&w.deployer)]
        }),
    )
    .await;
    let outer = unique_name("outer");
    let inner = unique_name("inner");
    let nested = format!(
        "apiVersion: core.rukpak.io/v1alpha1\nkind: BundleDeployment\nmetadata:\n  name: {inner}\nspec:\n  provisionerClassName: core-rukpak-io-registry\n  template:\n    spec:\n      provisionerClassName: core-rukpak-io-registry\n      source: {{type: image, image: {{ref: 'registry.example/operator-bundle:1'}}}}\n"
    );
    create_as(
        &admin,
        &mallory,
        &deployment(&outer, with_account(&w.deployer)),
        &[("inner.yaml", nested)],
    )
    .await;
    let message = support::wait_condition(&admin, &outer, TYPE_INSTALLED, "False", TIMEOUT).await;
    // Created as the outer identity: the deployer account is the one refused (for the
    // class it may not use, or the registry class's identity it may not impersonate,
    // whichever policy the API server evaluates first).
    assert!(
        message.contains(&format!(
            "user \"system:serviceaccount:{}:{}\" may not",
            w.deployer.namespace, w.deployer.name
        )),
        "{message}"
    );
    assert!(message.contains("core-rukpak-io-registry"), "{message}");
    assert_absent(&Api::<BundleDeployment>::all(admin.clone()), &inner).await;
}

#[tokio::test]
async fn a_tenant_installs_namespaced_objects_into_a_namespace_its_account_may_write() {
    let admin = setup().await;
    let w = world();
    let (user, mallory) = tenant(&admin).await;
    allow_impersonation(&admin, &user, &w.deployer).await;
    let name = unique_name("app");
    let deployment_yaml = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  replicas: 1\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n      containers: [{{name: main, image: registry.k8s.io/pause:3.10}}]\n"
    );
    create_as(
        &admin,
        &mallory,
        &deployment(&name, with_account(&w.deployer)),
        &[
            ("config.yaml", configmap(&w.team, &name)),
            ("app.yaml", deployment_yaml),
        ],
    )
    .await;
    support::wait_condition(&admin, &name, TYPE_INSTALLED, "True", TIMEOUT).await;
    let bd = Api::<BundleDeployment>::all(admin.clone())
        .get(&name)
        .await
        .unwrap();
    let namespaces: Vec<Option<String>> = bd
        .status
        .unwrap()
        .inventory
        .iter()
        .map(|e| e.namespace.clone())
        .collect();
    assert_eq!(namespaces, [Some(w.team.clone()), Some(w.team.clone())]);
}
