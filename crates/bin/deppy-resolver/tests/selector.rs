//! `deppy-resolver run` as a process, limited by `--watch-selector` to this test's objects:
//! with no Catalog serving, a resolution says so (instead of "no operators found"), and
//! resolves as soon as a Catalog serves.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use deppy_api::conditions::{TYPE_RESOLVED, reasons};
use deppy_api::{ActiveResolution, Catalog};
use kube::Api;
use kube::api::PostParams;
use serde_json::json;
use testkit::servers::CraneRegistry;
use testkit::stack::{Component, Stack};
use testkit::{unique_name, wait_for};

async fn resolved(api: &Api<ActiveResolution>, name: &str, reason: &str) -> ActiveResolution {
    wait_for(
        &format!("ActiveResolution {name} {reason}"),
        Duration::from_secs(60),
        || async {
            let resolution = api.get(name).await.map_err(|e| e.to_string())?;
            let status = resolution.status.clone().unwrap_or_default();
            match kit::conditions::find(&status.conditions, TYPE_RESOLVED) {
                Some(c) if c.reason == reason => Ok(resolution),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await
}

#[tokio::test]
async fn without_a_serving_catalog_a_resolution_waits_and_says_why() {
    let stack = Stack::shared(&[Component::DeppyResolver]).await;
    let client = testkit::client().await;
    let resolutions: Api<ActiveResolution> = Api::all(client.clone());
    let name = unique_name("waits");
    let resolution: ActiveResolution = serde_json::from_value(json!({
        "apiVersion": "deppy.io/v1alpha1", "kind": "ActiveResolution",
        "metadata": { "name": name, "labels": stack.labels() },
        "spec": { "constraints": [{ "required": { "name": "metrics-agent" } }] }
    }))
    .unwrap();
    resolutions
        .create(&PostParams::default(), &resolution)
        .await
        .unwrap();
    let waiting = resolved(&resolutions, &name, reasons::SOURCE_UNAVAILABLE).await;
    let condition = kit::conditions::find(&waiting.status.unwrap().conditions, TYPE_RESOLVED)
        .cloned()
        .unwrap();
    assert_eq!(condition.status, "False");
    assert_eq!(
        condition.message,
        "no Catalog is serving yet; resolving once one is"
    );

    let registry = CraneRegistry::start();
    let examples = testkit::examples::publish(&registry);
    let catalog: Catalog = serde_json::from_value(json!({
        "apiVersion": "deppy.io/v1alpha1", "kind": "Catalog",
        "metadata": { "name": unique_name("examples"), "labels": stack.labels() },
        "spec": { "source": { "image": { "ref": examples.catalog } } }
    }))
    .unwrap();
    Api::<Catalog>::all(client.clone())
        .create(&PostParams::default(), &catalog)
        .await
        .unwrap();
    let done = resolved(&resolutions, &name, reasons::SUCCEEDED).await;
    let selections = done.status.unwrap().selections;
    assert_eq!(selections.len(), 1, "{selections:?}");
    assert!(
        selections[0].contains(":metrics-agent:1.1.0:stable"),
        "{selections:?}"
    );
}
