//! Support for integration tests that run against a real control plane.
//!
//! Tests find the cluster through `KUBECONFIG` (`make test` starts one with
//! `hack/cluster up` and exports it). A missing or unreachable cluster is a test
//! failure with a message that says how to start one, never a silent skip.
//!
//! [`mock_api`] is the exception: a mocked API server for tests of what a controller
//! writes, which need no cluster.
//!
//! This is test support: failing loudly is its job, so it panics instead of returning
//! errors.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

pub mod aggregation;
pub mod audit;
pub mod examples;
pub mod mock_api;
pub mod servers;
pub mod stack;
pub mod users;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DeleteParams, DynamicObject, ObjectMeta, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::{Api, Client, ResourceExt};
use serde::Deserialize;

const HOW_TO_START: &str = "integration tests need a cluster: run `make test`, or \
     `export KUBECONFIG=$(hack/cluster up | tail -n1)` and then `cargo test --test '*'`";

/// A client for the cluster named by `KUBECONFIG`. Panics with instructions when
/// `KUBECONFIG` is unset, so a forgotten cluster never turns into passing tests.
pub async fn client() -> Client {
    match std::env::var("KUBECONFIG") {
        Ok(path) if !path.is_empty() => {}
        _ => panic!("KUBECONFIG is not set; {HOW_TO_START}"),
    }
    let client = Client::try_default().await.unwrap_or_else(|err| {
        panic!("failed to build a client from KUBECONFIG: {err}; {HOW_TO_START}")
    });
    if let Err(err) = client.apiserver_version().await {
        panic!("the cluster in KUBECONFIG does not answer: {err}; {HOW_TO_START}");
    }
    client
}

/// A random DNS-label-safe name: `<prefix>-<8 hex digits>`.
pub fn unique_name(prefix: &str) -> String {
    use rand::Rng;
    let suffix: u32 = rand::rng().random();
    format!("{prefix}-{suffix:08x}")
}

/// A namespace that exists for one test. Call [`TestNamespace::delete`] at the end;
/// a failing test leaves it behind for inspection (the cluster is thrown away anyway).
pub struct TestNamespace {
    client: Client,
    name: String,
}

impl TestNamespace {
    /// Creates a namespace named `<prefix>-<random>`.
    pub async fn create(client: &Client, prefix: &str) -> Self {
        let name = unique_name(prefix);
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .unwrap_or_else(|err| panic!("failed to create namespace {name}: {err}"));
        Self {
            client: client.clone(),
            name,
        }
    }

    /// The namespace's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// An `Api` for a namespaced kind in this namespace.
    pub fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.name)
    }

    /// Starts deleting the namespace (and everything in it).
    pub async fn delete(self) {
        Api::<Namespace>::all(self.client)
            .delete(&self.name, &DeleteParams::background())
            .await
            .unwrap_or_else(|err| panic!("failed to delete namespace {}: {err}", self.name));
    }
}

/// Polls `probe` every 100 ms until it returns `Some`, and returns that value. Panics
/// with `what` and the last observation when `timeout` passes.
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let started = Instant::now();
    loop {
        let last = match probe().await {
            Ok(value) => return value,
            Err(observation) => observation,
        };
        if started.elapsed() > timeout {
            panic!("timed out after {timeout:?} waiting for {what}; last observed: {last}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Deletes `name` through `api` and waits (up to `timeout`) until it is gone, finalizers
/// included; panics naming what is still there.
pub async fn delete_and_wait<K>(api: &Api<K>, name: &str, timeout: Duration)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.delete(name, &DeleteParams::default())
        .await
        .unwrap_or_else(|err| panic!("failed to delete {name}: {err}"));
    wait_for(&format!("{name} to be deleted"), timeout, || async {
        match api.get_opt(name).await.map_err(|e| e.to_string())? {
            None => Ok(()),
            Some(object) => Err(format!(
                "still there: {:?}",
                object.meta().deletion_timestamp
            )),
        }
    })
    .await;
}

/// Runs `task` on a thread with a Tokio runtime of its own, for the rest of the test
/// process. Each `#[tokio::test]` has its own runtime, which ends with the test; controllers
/// and servers shared by several tests must live on one that does not. Join the returned
/// handle to wait for a task that ends.
pub fn spawn_background<F, Fut>(task: F) -> std::thread::JoinHandle<()>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = ()>,
{
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().expect("failed to start a background runtime");
        runtime.block_on(task());
    })
}

/// A path relative to the workspace root (e.g. `deploy/crds`).
///
/// Found at run time from the package cargo is testing (`CARGO_MANIFEST_DIR` of the test
/// process) up to the directory holding `Cargo.lock`: a path compiled into this library
/// would name whichever checkout built it first, and a target directory shared by two
/// checkouts (a CI clone and a working copy, with cargo keying crates by their path
/// relative to the workspace) then points every test at the other checkout.
pub fn workspace_path(relative: impl AsRef<Path>) -> PathBuf {
    let compiled = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..");
    let root = runtime_package_dir()
        .and_then(|package| {
            package
                .ancestors()
                .find(|dir| dir.join("Cargo.lock").is_file())
                .map(Path::to_path_buf)
        })
        .unwrap_or(compiled);
    root.join(relative)
}

/// `relative` under the directory of the package whose test or bench is running (its
/// fixtures), found at run time for the reason given at [`workspace_path`]: a path
/// compiled into the test binary names whichever checkout built it.
pub fn package_path(relative: impl AsRef<Path>) -> PathBuf {
    runtime_package_dir()
        .expect("cargo sets CARGO_MANIFEST_DIR for the tests and benches it runs")
        .join(relative)
}

/// `CARGO_MANIFEST_DIR` as cargo sets it for the test it runs.
fn runtime_package_dir() -> Option<PathBuf> {
    std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from)
}

/// Server-side applies every document of a multi-document YAML manifest (field manager
/// `testkit`) and returns the applied objects. Kinds are looked up by discovery, so CRDs
/// must be established before their custom resources are applied.
pub async fn apply_manifests(client: &Client, yaml: &str) -> Vec<DynamicObject> {
    let mut applied = Vec::new();
    for document in serde_yaml_ng::Deserializer::from_str(yaml) {
        let value = serde_json::Value::deserialize(document)
            .unwrap_or_else(|err| panic!("failed to parse manifest: {err}"));
        if value.is_null() {
            continue;
        }
        let object: DynamicObject = serde_json::from_value(value)
            .unwrap_or_else(|err| panic!("failed to read object from manifest: {err}"));
        let types = object
            .types
            .clone()
            .expect("manifest object without apiVersion/kind");
        let gvk = GroupVersionKind::try_from(&types)
            .unwrap_or_else(|err| panic!("bad apiVersion {}: {err}", types.api_version));
        let (resource, capabilities) = kube::discovery::pinned_kind(client, &gvk)
            .await
            .unwrap_or_else(|err| panic!("failed to discover {gvk:?}: {err}"));
        let api: Api<DynamicObject> = match (&capabilities.scope, object.namespace()) {
            (kube::discovery::Scope::Namespaced, Some(ns)) => {
                Api::namespaced_with(client.clone(), &ns, &resource)
            }
            (kube::discovery::Scope::Namespaced, None) => {
                Api::default_namespaced_with(client.clone(), &resource)
            }
            (kube::discovery::Scope::Cluster, _) => Api::all_with(client.clone(), &resource),
        };
        let name = object.name_any();
        let result = api
            .patch(
                &name,
                &PatchParams::apply("testkit").force(),
                &Patch::Apply(&object),
            )
            .await
            .unwrap_or_else(|err| panic!("failed to apply {} {name}: {err}", types.kind));
        applied.push(result);
    }
    applied
}

/// Applies every `.yaml` file of a directory of the workspace (sorted by name, skipping
/// `kustomization.yaml`).
pub async fn apply_dir(client: &Client, relative: impl AsRef<Path>) -> Vec<DynamicObject> {
    let dir = workspace_path(relative);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|err| panic!("failed to read {}: {err}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| {
            path.extension().is_some_and(|ext| ext == "yaml")
                && path
                    .file_name()
                    .is_some_and(|name| name != "kustomization.yaml")
        })
        .collect();
    files.sort();
    let mut applied = Vec::new();
    for file in files {
        let yaml = std::fs::read_to_string(&file)
            .unwrap_or_else(|err| panic!("failed to read {}: {err}", file.display()));
        applied.extend(apply_manifests(client, &yaml).await);
    }
    applied
}

/// The namespace `deploy/admission` puts the identity policy's parameter in (the ConfigMap
/// `bundle-identities`): provisioners under test publish there, whatever their own system
/// namespace.
pub const ADMISSION_NAMESPACE: &str = "rukpak-system";

/// Applies the admission policies of `deploy/admission`, first creating the namespace of
/// their parameter when it is missing (the deploy bases create it with the rest of
/// `deploy/namespaces`).
pub async fn install_admission(client: &Client) {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let namespace = serde_json::from_value(serde_json::json!({
        "metadata": { "name": ADMISSION_NAMESPACE }
    }))
    .expect("a Namespace");
    match namespaces
        .create(&kube::api::PostParams::default(), &namespace)
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(err) => panic!("failed to create namespace {ADMISSION_NAMESPACE}: {err}"),
    }
    apply_dir(client, "deploy/admission").await;
}

/// What a test process running RukPak's controllers in-process needs on the cluster: the
/// CRDs, the provisioner classes, the admission policies, and its own content store namespace
/// (`system_namespace`; one that exists already is fine).
pub async fn install_rukpak(client: &Client, system_namespace: &str) {
    install_crds(client).await;
    apply_dir(client, "deploy/provisioner-classes").await;
    install_admission(client).await;
    let namespace = serde_json::from_value(serde_json::json!({
        "metadata": { "name": system_namespace }
    }))
    .expect("a Namespace");
    let _ = Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone())
        .create(&kube::api::PostParams::default(), &namespace)
        .await;
}

/// Applies the project's CRDs (`deploy/crds` and `deploy/compat`) and waits until every
/// one is Established.
pub async fn install_crds(client: &Client) {
    let mut names: Vec<String> = apply_dir(client, "deploy/crds")
        .await
        .iter()
        .map(|o| o.name_any())
        .collect();
    names.extend(
        apply_dir(client, "deploy/compat")
            .await
            .iter()
            .map(|o| o.name_any()),
    );
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for name in names {
        wait_for(
            &format!("CRD {name} to be Established"),
            Duration::from_secs(60),
            || async {
                let crd = crds.get(&name).await.map_err(|e| e.to_string())?;
                let established = crd
                    .status
                    .and_then(|s| s.conditions)
                    .unwrap_or_default()
                    .iter()
                    .any(|c| c.type_ == "Established" && c.status == "True");
                if established {
                    Ok(())
                } else {
                    Err("not Established".to_owned())
                }
            },
        )
        .await;
    }
}

/// The real node's name (`hack/clusterctl/node.go`): containerd and a kubelet, where
/// host-network pods really run.
pub const REAL_NODE: &str = "localhost";

/// Whether this cluster has the real node. Without it (a host that cannot run containers)
/// this prints that what needs running pods is left out, unless `OLMV1_REAL_NODE=1`
/// (`hack/test-integration` sets it when it started one) demands the node: then it fails.
pub async fn real_node(client: &kube::Client) -> bool {
    let found = kube::Api::<k8s_openapi::api::core::v1::Node>::all(client.clone())
        .get_opt(REAL_NODE)
        .await
        .unwrap()
        .is_some();
    if !found {
        assert!(
            std::env::var("OLMV1_REAL_NODE").as_deref() != Ok("1"),
            "OLMV1_REAL_NODE=1 but the cluster has no node {REAL_NODE}"
        );
        eprintln!(
            "no real node in this cluster (hack/node-runtime says why): what needs a running operator is left out"
        );
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_names_are_dns_labels_and_differ() {
        let a = unique_name("ns");
        let b = unique_name("ns");
        assert_ne!(a, b);
        assert!(a.len() <= 63);
        assert!(
            a.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        );
    }

    #[tokio::test]
    async fn wait_for_returns_the_first_success() {
        let mut calls = 0;
        let value = wait_for("the third call", Duration::from_secs(5), || {
            calls += 1;
            let n = calls;
            async move {
                if n >= 3 {
                    Ok(n)
                } else {
                    Err(format!("call {n}"))
                }
            }
        })
        .await;
        assert_eq!(value, 3);
    }

    #[tokio::test]
    #[should_panic(expected = "timed out after")]
    async fn wait_for_panics_with_the_last_observation_on_timeout() {
        wait_for("never", Duration::from_millis(250), || async {
            Err::<(), _>("still no".to_owned())
        })
        .await;
    }
}
