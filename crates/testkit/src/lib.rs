//! Support for integration tests that run against a real control plane.
//!
//! Tests find the cluster through `KUBECONFIG` (`make test` starts one with
//! `hack/cluster up` and exports it). A missing or unreachable cluster is a test
//! failure with a message that says how to start one, never a silent skip.
//!
//! This is test support: failing loudly is its job, so it panics instead of returning
//! errors.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::future::Future;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use kube::{Api, Client};

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
