//! The examples' memcached-operator, installed through a PlatformOperator and really running
//! on the real node: what the tests of working installs share.

use k8s_openapi::api::core::v1::Pod;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams,
};
use kube::{Api, Client};
use platform_api::PlatformOperator;
use platform_api::conditions::{TYPE_INSTALLED, reasons};
use serde_json::json;
use testkit::examples::sample;
use testkit::wait_for;

use crate::{REAL_NODE, TIMEOUT, env};

/// `Memcached` objects (the operator's custom resource) in `namespace`.
pub fn memcacheds(client: &Client, namespace: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("cache.example.com", "v1alpha1", "Memcached");
    Api::namespaced_with(client.clone(), namespace, &ApiResource::from_gvk(&gvk))
}

/// A `Memcached` named `name` asking for `size` instances.
pub fn memcached(name: &str, size: i64) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
        "metadata": { "name": name }, "spec": { "size": size }
    }))
    .unwrap()
}

/// The operator's pod once it is Ready on the real node, with a container containerd runs.
pub async fn operator_pod_ready(client: &Client) -> Result<Pod, String> {
    let pods = Api::<Pod>::namespaced(client.clone(), sample::MEMCACHED_NAMESPACE)
        .list(&ListParams::default().labels("app.kubernetes.io/name=memcached-operator"))
        .await
        .map_err(|e| e.to_string())?;
    let pod = pods
        .items
        .into_iter()
        .find(|p| p.metadata.deletion_timestamp.is_none())
        .ok_or("no operator pod yet")?;
    let spec = pod.spec.as_ref().ok_or("no spec")?;
    if spec.node_name.as_deref() != Some(REAL_NODE) {
        return Err(format!("scheduled to {:?}", spec.node_name));
    }
    let status = pod.status.as_ref().ok_or("no status")?;
    let ready = status
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    let container = status
        .container_statuses
        .iter()
        .flatten()
        .next()
        .ok_or("no container status")?;
    match (&container.container_id, ready) {
        (Some(id), true) if id.starts_with("containerd://") => Ok(pod),
        _ => Err(format!("not Ready: {:?}", container.state)),
    }
}

/// Creates the PlatformOperator `name` for `package`, optionally within `range`, labelled
/// for the system under test ([`crate::Env::metadata`]).
pub async fn create_platform_operator(
    client: &Client,
    name: &str,
    package: &str,
    range: Option<&str>,
) {
    let env = env().await;
    let mut spec = json!({ "package": { "name": package } });
    if let Some(range) = range {
        spec["package"]["versionRange"] = json!(range);
    }
    let po = PlatformOperator {
        metadata: env.metadata(name),
        spec: serde_json::from_value(spec).unwrap(),
        status: None,
    };
    Api::<PlatformOperator>::all(client.clone())
        .create(&PostParams::default(), &po)
        .await
        .unwrap();
}

/// Waits until the PlatformOperator `name` is Installed.
pub async fn wait_installed(client: &Client, name: &str) {
    wait_for(
        &format!("PlatformOperator {name} Installed"),
        TIMEOUT,
        || async {
            let po = Api::<PlatformOperator>::all(client.clone())
                .get(name)
                .await
                .map_err(|e| e.to_string())?;
            let condition = po
                .status
                .unwrap_or_default()
                .conditions
                .into_iter()
                .find(|c| c.type_ == TYPE_INSTALLED)
                .ok_or("no Installed condition")?;
            if condition.status == "True" && condition.reason == reasons::INSTALL_SUCCESSFUL {
                Ok(())
            } else {
                Err(format!("{}: {}", condition.reason, condition.message))
            }
        },
    )
    .await;
}

/// Waits until the operator's webhook refuses a `Memcached` of size -1 in `namespace`, and
/// returns its message. The first calls may race the webhook's registration reaching the API
/// server's cache: only a refusal naming the size rule counts, anything else is retried.
pub async fn webhook_refusal(client: &Client, namespace: &str) -> String {
    let api = memcacheds(client, namespace);
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    wait_for(
        "the webhook to refuse size -1",
        std::time::Duration::from_secs(30),
        || async {
            match api.create(&dry_run, &memcached("minus-one", -1)).await {
                Err(kube::Error::Api(status))
                    if status.message.contains("size must be between 0 and 10") =>
                {
                    Ok(status.message)
                }
                Err(err) => Err(format!("refused, but not by the webhook: {err}")),
                Ok(_) => Err("admitted".to_owned()),
            }
        },
    )
    .await
}

/// Deletes the PlatformOperator and waits until the operator's namespace holds no pod.
pub async fn uninstall(client: &Client, name: &str) {
    let _ = Api::<PlatformOperator>::all(client.clone())
        .delete(name, &DeleteParams::foreground())
        .await;
    wait_for("the operator's pod to stop", TIMEOUT, || async {
        let pos = Api::<PlatformOperator>::all(client.clone())
            .get_opt(name)
            .await
            .map_err(|e| e.to_string())?;
        let pods = Api::<Pod>::namespaced(client.clone(), sample::MEMCACHED_NAMESPACE)
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?;
        match (pos, pods.items.len()) {
            (None, 0) => Ok(()),
            (po, n) => Err(format!(
                "PlatformOperator present: {}, pods: {n}",
                po.is_some()
            )),
        }
    })
    .await;
}
