//! The admin server against the real API server: `/readyz` stays unready until every
//! registered watch has synced, and `/metrics` and `/livez` answer.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kit::admin::Admin;
use kit::metrics::ReconcileMetrics;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use testkit::{TestNamespace, client, wait_for};
use tokio_util::sync::CancellationToken;

async fn get(url: &str) -> (u16, String) {
    let response = reqwest::get(url).await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

#[tokio::test]
async fn readyz_turns_ready_only_after_every_watch_has_synced() {
    let client = client().await;
    let ns = TestNamespace::create(&client, "readyz").await;
    let admin = Admin::new();
    let shutdown = CancellationToken::new();
    let server = admin
        .serve("127.0.0.1:0".parse().unwrap(), shutdown.clone())
        .await
        .unwrap();
    let base = format!("http://{}", server.address);

    let (store, writer) = reflector::store::<ConfigMap>();
    kit::watch::track_store(&admin.readiness, "watch:configmaps", store.clone());
    // A second waiter on the same store, as a Controller has: kube-runtime wakes only the
    // latest waiter, and the gate must open anyway.
    let competitor = store.clone();
    tokio::spawn(async move {
        loop {
            let _ = competitor.wait_until_ready().await;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    // A second watch that can never sync: its kind does not exist on this cluster.
    let missing = ApiResource::from_gvk(&GroupVersionKind::gvk(
        "nonexistent.olmv1.io",
        "v1",
        "Ghost",
    ));
    let ghost_writer = reflector::store::Writer::<DynamicObject>::new(missing.clone());
    let ghost_store = ghost_writer.as_reader();
    kit::watch::track_store(&admin.readiness, "watch:ghosts", ghost_store);

    let (status, body) = get(&format!("{base}/readyz")).await;
    assert_eq!(status, 503, "not ready before any watch runs");
    assert!(
        body.contains("watch:configmaps") && body.contains("watch:ghosts"),
        "{body}"
    );
    assert_eq!(
        get(&format!("{base}/livez")).await.0,
        200,
        "alive while not ready"
    );

    let configmaps: Api<ConfigMap> = ns.api();
    tokio::spawn(
        reflector(writer, watcher(configmaps, watcher::Config::default()))
            .default_backoff()
            .applied_objects()
            .for_each(|_| async {}),
    );
    let ghosts: Api<DynamicObject> = Api::all_with(client.clone(), &missing);
    tokio::spawn(
        reflector(ghost_writer, watcher(ghosts, watcher::Config::default()))
            .default_backoff()
            .applied_objects()
            .for_each(|_| async {}),
    );

    // The ConfigMap watch syncs; the ghost watch keeps failing, so /readyz names only it.
    let body = wait_for(
        "the configmap watch to sync",
        Duration::from_secs(30),
        || async {
            let (status, body) = get(&format!("{base}/readyz")).await;
            if status == 503 && !body.contains("watch:configmaps") {
                Ok(body)
            } else {
                Err(body)
            }
        },
    )
    .await;
    assert!(body.contains("watch:ghosts"), "{body}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        get(&format!("{base}/readyz")).await.0,
        503,
        "a failing watch keeps it unready"
    );

    // Once the only remaining gate opens, the process is ready.
    admin.readiness.register("watch:ghosts").open();
    let (status, body) = get(&format!("{base}/readyz")).await;
    assert_eq!((status, body.as_str()), (200, "ok"));

    shutdown.cancel();
    server.task.await.unwrap().unwrap();
    ns.delete().await;
}

#[tokio::test]
async fn metrics_are_served_in_prometheus_text_format() {
    let admin = Admin::new();
    let metrics = ReconcileMetrics::register(&admin.registry, "kit_test").unwrap();
    metrics.start("widget").finish("success");
    let shutdown = CancellationToken::new();
    let server = admin
        .serve("127.0.0.1:0".parse().unwrap(), shutdown.clone())
        .await
        .unwrap();

    let response = reqwest::get(format!("http://{}/metrics", server.address))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    let body = response.text().await.unwrap();
    assert!(
        body.contains(r#"kit_test_reconcile_total{controller="widget",result="success"} 1"#),
        "{body}"
    );
    shutdown.cancel();
    server.task.await.unwrap().unwrap();
}
