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

fn deployed_namespace(component: Component) -> &'static str {
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
    let mut manifests = serde_json::Map::new();
    manifests.insert(
        "00-namespace.yaml".into(),
        serde_json::json!(format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {namespace}\n"
        )),
    );
    for i in 0..3 {
        manifests.insert(
            format!("cm-{i}.yaml"),
            serde_json::json!(format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\n  namespace: {namespace}\ndata:\n  key: value\n"
            )),
        );
    }
    let source: k8s_openapi::api::core::v1::ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": { "name": name }, "immutable": true, "data": manifests
    }))
    .unwrap();
    kube::Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(
        client.clone(),
        &stack.rukpak_namespace,
    )
    .create(&kube::api::PostParams::default(), &source)
    .await
    .unwrap();
    let started = std::time::Instant::now();
    let bd = plain_deployment(
        stack,
        &name,
        serde_json::json!({ "type": "configMaps", "configMaps": [{ "configMap": { "name": name }, "path": "manifests" }] }),
    );
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
