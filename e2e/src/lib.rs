//! End-to-end support: where the system under test runs, and how to reach it.
//!
//! The same tests run in two modes:
//! - **local** (default, `make test`): the controllers run as processes of this test
//!   (`testkit::stack`) against the cluster in `KUBECONFIG`, the sample catalog is published
//!   to a registry on loopback, and every object carries the stack's label;
//! - **deployed** (`E2E_DEPLOYED=1`, e.g. kind in CI): the controllers run as the deployed
//!   images (`kubectl apply -k deploy/overlays/kind`), the sample Catalog `examples`
//!   (`E2E_CATALOG` to override) already exists, and restarts go through the Deployments.
//!
//! This is test support: it panics with a message instead of returning errors.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

pub mod sample_operator;

use std::process::Command;
use std::time::Duration;

use kube::api::ObjectMeta;
use testkit::stack::{Component, Stack};
use tokio::sync::OnceCell;

/// How long a whole install may take.
pub const TIMEOUT: Duration = Duration::from_secs(180);

/// The system under test.
pub struct Env {
    /// Labels every object a test creates must carry (empty when deployed).
    pub labels: std::collections::BTreeMap<String, String>,
    /// The Catalog the PlatformOperators resolve against.
    pub catalog: String,
    stack: Option<&'static Stack>,
}

impl Env {
    /// Object metadata named `name`, with [`Env::labels`].
    pub fn metadata(&self, name: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(self.labels.clone()).filter(|l| !l.is_empty()),
            ..ObjectMeta::default()
        }
    }

    /// Restarts `component`: the process (local) or the Deployment's pods (deployed),
    /// returning once it is ready again.
    pub async fn restart(&self, component: Component) {
        match self.stack {
            Some(stack) => stack.restart(component).await,
            None => {
                let namespace = deployed_namespace(component);
                let name = component.binary();
                kubectl(&["rollout", "restart", "-n", namespace, "deployment", name]);
                kubectl(&[
                    "rollout",
                    "status",
                    "-n",
                    namespace,
                    "deployment",
                    name,
                    "--timeout=180s",
                ]);
            }
        }
    }

    /// The controllers run as local processes of this test (not deployed).
    pub fn stack(&self) -> Option<&'static Stack> {
        self.stack
    }

    /// The log of `component` so far, for failure messages (local mode only).
    pub fn logs(&self, component: Component) -> String {
        self.stack
            .map(|stack| stack.logs(component))
            .unwrap_or_else(|| format!("(see kubectl logs deployment/{})", component.binary()))
    }
}

/// The namespace `component` is deployed to (deploy/).
pub fn deployed_namespace(component: Component) -> &'static str {
    match component {
        Component::DeppyResolver => "deppy-system",
        Component::PlatformOperators => "platform-operators-system",
        _ => "rukpak-system",
    }
}

fn kubectl(args: &[&str]) {
    let output = Command::new("kubectl")
        .args(args)
        .output()
        .unwrap_or_else(|err| panic!("failed to run kubectl: {err}"));
    assert!(
        output.status.success(),
        "kubectl {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The system under test, set up once per test process.
pub async fn env() -> &'static Env {
    static ENV: OnceCell<Env> = OnceCell::const_new();
    ENV.get_or_init(|| async {
        if std::env::var("E2E_DEPLOYED").is_ok_and(|v| v == "1") {
            Env {
                labels: Default::default(),
                catalog: std::env::var("E2E_CATALOG").unwrap_or_else(|_| "examples".to_owned()),
                stack: None,
            }
        } else {
            local().await
        }
    })
    .await
}

async fn local() -> Env {
    let stack = Stack::shared(&Component::ALL).await;
    let catalog = stack.examples().await.catalog.clone();
    Env {
        labels: serde_json::from_value(stack.labels()).unwrap(),
        catalog,
        stack: Some(stack),
    }
}

/// A loopback http server that answers 404 to every request, and the number of requests it
/// has had: a source that keeps failing, for tests of retries and fairness.
pub async fn failing_http_server() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    loopback_http_server(true).await
}

/// A loopback HTTP server that accepts connections, reads the request and never answers,
/// keeping every connection open (a source that hangs until the client gives up), and the
/// number of connections it has accepted.
pub async fn silent_http_server() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    loopback_http_server(false).await
}

/// A loopback server that answers each connection's request with a 404 when `answer`, or
/// reads until the client closes and says nothing; its base URL and a connection count.
async fn loopback_http_server(
    answer: bool,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::Ordering;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let connections = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = connections.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buffer = [0u8; 4096];
                if answer {
                    let _ = socket.read(&mut buffer).await;
                    let _ = socket
                        .write_all(
                            b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                        )
                        .await;
                } else {
                    while matches!(socket.read(&mut buffer).await, Ok(n) if n > 0) {}
                }
            });
        }
    });
    (format!("http://{address}"), connections)
}

/// Installs a plain bundle of 4 ConfigMaps from an immutable ConfigMap source and returns
/// how long until its BundleDeployment is Installed.
pub async fn install_healthy(client: &kube::Client, stack: &Stack) -> Duration {
    let name = testkit::unique_name("healthy");
    let namespace = testkit::unique_name("fair");
    let mut files = vec![(
        "00-namespace.yaml".to_owned(),
        format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {namespace}\n"),
    )];
    for i in 0..3 {
        files.push((
            format!("cm-{i}.yaml"),
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\n  namespace: {namespace}\ndata:\n  key: value\n"
            ),
        ));
    }
    let source = bundle_config_map(client, stack, &name, &files).await;
    let started = std::time::Instant::now();
    let bd = plain_deployment(stack, &name, source);
    let api: kube::Api<rukpak_api::BundleDeployment> = kube::Api::all(client.clone());
    api.create(&kube::api::PostParams::default(), &bd)
        .await
        .unwrap();
    testkit::wait_for(
        &format!("{name} Installed"),
        Duration::from_secs(180),
        || async {
            let bd = api.get(&name).await.map_err(|e| e.to_string())?;
            let installed = bd.status.as_ref().and_then(|s| {
                s.conditions
                    .iter()
                    .find(|c| c.type_ == "Installed" && c.status == "True")
            });
            installed
                .map(|_| ())
                .ok_or_else(|| format!("{:?}", bd.status))
        },
    )
    .await;
    started.elapsed()
}

/// Stores `files` (name, YAML) as the immutable ConfigMap `name` in the stack's RukPak
/// namespace and returns the `configMaps` bundle source that names it.
pub async fn bundle_config_map(
    client: &kube::Client,
    stack: &Stack,
    name: &str,
    files: &[(String, String)],
) -> serde_json::Value {
    let data: serde_json::Map<String, serde_json::Value> = files
        .iter()
        .map(|(file, yaml)| (file.clone(), serde_json::json!(yaml)))
        .collect();
    let source: k8s_openapi::api::core::v1::ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": { "name": name }, "immutable": true, "data": data
    }))
    .unwrap();
    kube::Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(
        client.clone(),
        &stack.rukpak_namespace,
    )
    .create(&kube::api::PostParams::default(), &source)
    .await
    .unwrap();
    serde_json::json!({ "type": "configMaps", "configMaps": [{ "configMap": { "name": name }, "path": "manifests" }] })
}

/// The shared-cluster recipe of docs/operations.md ("Shared clusters"), run as it is written
/// (bash and kubectl, as the cluster administrator) with its fixed names made unique, so
/// that the tests hold the docs to what they claim. `name` tells the names apart.
pub struct Recipe {
    /// The tenant user (`alice` in the docs).
    pub tenant: String,
    /// The tenant's namespace (`team-a`), where her account `deployer` lives.
    pub team: String,
    /// The default identity of BundleDeployments without `spec.serviceAccount`
    /// (`rukpak-system/tenant-default`).
    pub tenant_default: rukpak_api::ServiceAccountRef,
    /// The identity PlatformOperators install as (`rukpak-system/operator-installer`).
    pub installer: rukpak_api::ServiceAccountRef,
}

impl Recipe {
    /// The tenant's ServiceAccount, `deployer` in her namespace.
    pub fn deployer(&self) -> rukpak_api::ServiceAccountRef {
        rukpak_api::ServiceAccountRef {
            namespace: self.team.clone(),
            name: "deployer".to_owned(),
        }
    }
}

/// Runs the shared-cluster recipe of docs/operations.md (between the markers
/// `<!-- shared-cluster-recipe -->` and `<!-- /shared-cluster-recipe -->`) with unique names.
pub fn shared_cluster_recipe() -> Recipe {
    let docs = std::fs::read_to_string(testkit::workspace_path("docs/operations.md")).unwrap();
    let start = docs
        .find("<!-- shared-cluster-recipe -->")
        .expect("docs/operations.md has the shared-cluster recipe");
    let end = docs[start..]
        .find("<!-- /shared-cluster-recipe -->")
        .map(|end| start + end)
        .expect("the recipe ends");
    let block = &docs[start..end];
    let script = block
        .split("```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the recipe is a sh block");
    let recipe = Recipe {
        tenant: testkit::unique_name("alice"),
        team: testkit::unique_name("team"),
        tenant_default: rukpak_api::ServiceAccountRef {
            namespace: "rukpak-system".to_owned(),
            name: testkit::unique_name("tenant-default"),
        },
        installer: rukpak_api::ServiceAccountRef {
            namespace: "rukpak-system".to_owned(),
            name: testkit::unique_name("operator-installer"),
        },
    };
    let role = testkit::unique_name("bd-author");
    // Longest names first: "operator-installer" is inside other names of the recipe.
    let script = script
        .replace("operator-installer", &recipe.installer.name)
        .replace("tenant-default", &recipe.tenant_default.name)
        .replace("bd-author", &role)
        .replace("team-a", &recipe.team)
        .replace("alice", &recipe.tenant);
    let output = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &script])
        .output()
        .unwrap_or_else(|err| panic!("failed to run bash: {err}"));
    assert!(
        output.status.success(),
        "the shared-cluster recipe of docs/operations.md failed:\n{script}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    recipe
}

/// Lets `user` read the content ConfigMap `name` in RukPak's namespace, as the admission
/// rule on references requires of whoever names it in a spec (a tenant names only content
/// she may read).
pub async fn let_read(admin: &kube::Client, user: &str, name: &str) {
    use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
    let role = testkit::unique_name("read-content");
    let namespace = testkit::ADMISSION_NAMESPACE;
    let object: Role = serde_json::from_value(serde_json::json!({
        "metadata": { "name": role },
        "rules": [{ "apiGroups": [""], "resources": ["configmaps"], "resourceNames": [name], "verbs": ["get"] }]
    }))
    .unwrap();
    kube::Api::<Role>::namespaced(admin.clone(), namespace)
        .create(&kube::api::PostParams::default(), &object)
        .await
        .unwrap();
    let binding: RoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": { "name": role },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user }]
    }))
    .unwrap();
    kube::Api::<RoleBinding>::namespaced(admin.clone(), namespace)
        .create(&kube::api::PostParams::default(), &binding)
        .await
        .unwrap();
}

/// A plain BundleDeployment of `source` carrying the stack's labels (on its Bundle too, so
/// the stack's rukpak-core sees that).
pub fn plain_deployment(
    stack: &Stack,
    name: &str,
    source: serde_json::Value,
) -> rukpak_api::BundleDeployment {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "core.rukpak.io/v1alpha1", "kind": "BundleDeployment",
        "metadata": { "name": name, "labels": stack.labels() },
        "spec": {
            "provisionerClassName": "core-rukpak-io-plain",
            "template": {
                "metadata": { "labels": stack.labels() },
                "spec": { "provisionerClassName": "core-rukpak-io-plain", "source": source }
            }
        }
    }))
    .unwrap()
}

/// `Ok` when the Deployment `(namespace, name)` is Available, else why not.
pub async fn deployment_available(
    client: &kube::Client,
    (namespace, name): (&str, &str),
) -> Result<(), String> {
    let deployment =
        kube::Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(client.clone(), namespace)
            .get(name)
            .await
            .map_err(|e| format!("{namespace}/{name}: {e}"))?;
    let available = deployment
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .iter()
        .any(|c| c.type_ == "Available" && c.status == "True");
    if available {
        Ok(())
    } else {
        Err(format!("{namespace}/{name} not Available"))
    }
}

/// Waits until the Deployment `(namespace, name)` is Available.
pub async fn wait_available(client: &kube::Client, deployment: (&str, &str)) {
    testkit::wait_for(
        &format!("Deployment {}/{} Available", deployment.0, deployment.1),
        TIMEOUT,
        || deployment_available(client, deployment),
    )
    .await;
}

/// Waits until the BundleDeployment `name` has condition `type_` with `status`, and
/// returns the condition's message.
pub async fn wait_condition(
    client: &kube::Client,
    name: &str,
    type_: &str,
    status: &str,
) -> String {
    let api: kube::Api<rukpak_api::BundleDeployment> = kube::Api::all(client.clone());
    testkit::wait_for(&format!("{name} {type_}={status}"), TIMEOUT, || async {
        let bd = api.get(name).await.map_err(|e| e.to_string())?;
        let found = bd
            .status
            .as_ref()
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == type_));
        match found {
            Some(c) if c.status == status => Ok(c.message.clone()),
            other => Err(format!("{other:?}")),
        }
    })
    .await
}

/// A manifest of one ConfigMap `namespace/name`.
pub fn config_map_manifest(namespace: &str, name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\ndata:\n  key: value\n"
    )
}

/// A manifest of one Namespace.
pub fn namespace_manifest(name: &str) -> String {
    format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n")
}

pub use testkit::{REAL_NODE, real_node};
