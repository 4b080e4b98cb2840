//! The stack launcher and the sample catalog: controllers started as processes see only
//! objects carrying the stack's label, serve the published sample catalog, and come back
//! after a restart.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use kube::api::{ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;
use testkit::stack::{Component, Stack};
use testkit::unique_name;

fn catalogs(client: &Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("deppy.io", "v1alpha1", "Catalog");
    Api::all_with(client.clone(), &ApiResource::from_gvk(&gvk))
}

async fn create_catalog(client: &Client, name: &str, image: &str, labels: serde_json::Value) {
    let catalog: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "deppy.io/v1alpha1", "kind": "Catalog",
        "metadata": { "name": name, "labels": labels },
        "spec": { "source": { "image": { "ref": image } } }
    }))
    .unwrap();
    catalogs(client)
        .create(&PostParams::default(), &catalog)
        .await
        .unwrap();
}

#[tokio::test]
async fn controllers_run_as_processes_see_only_labelled_objects_and_survive_restarts() {
    let stack = Stack::shared(&[Component::DeppyResolver]).await;
    let client = testkit::client().await;
    // Serving when examples() returns: published, and named in a labelled Catalog.
    let served = stack.examples().await;
    let published = &served.published;
    assert_eq!(
        published.bundle_image("metrics-agent", "1.0.0"),
        format!(
            "{}/olmv1-examples/metrics-agent-bundle:v1.0.0",
            published.registry
        )
    );
    let labelled = served.catalog.clone();
    let unlabelled = unique_name("examples-other");
    create_catalog(&client, &unlabelled, &published.catalog, json!({})).await;
    let catalog = catalogs(&client).get(&labelled).await.unwrap();
    assert_eq!(catalog.labels()["olmv1-test"], stack.id);
    let status = catalog.data["status"].clone();
    // memcached-operator, metrics-agent, own-namespace-operator; five bundles.
    assert_eq!(status["packages"], 3, "{status}");
    assert_eq!(status["bundles"], 5, "{status}");
    let other = catalogs(&client).get(&unlabelled).await.unwrap();
    assert!(
        other.data.get("status").is_none_or(|s| s.is_null()),
        "an unlabelled Catalog must not be touched: {:?}",
        other.data.get("status")
    );

    stack.restart(Component::DeppyResolver).await;
    // Stopped with SIGTERM (a graceful shutdown), then started again and ready.
    let logs = stack.logs(Component::DeppyResolver);
    assert!(logs.contains("shutdown signal received"), "{logs}");
    assert_eq!(logs.matches("admin server listening").count(), 2, "{logs}");
}
