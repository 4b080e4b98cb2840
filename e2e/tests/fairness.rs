//! Fairness: one tenant's failing BundleDeployments do not slow the others down. With
//! 20 BundleDeployments whose sources keep failing (an http server answering 404), a
//! healthy BundleDeployment installs within a small multiple of its time on a quiet
//! cluster. Before the hot-loop fix each failing source was fetched about 70 times a
//! second and an unrelated install took 50 times as long.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use kube::Api;
use kube::api::{DeleteParams, PostParams};
use rukpak_api::BundleDeployment;
use serde_json::json;
use testkit::stack::{Component, Stack};
use testkit::{unique_name, wait_for};

const FAILING: usize = 20;

#[tokio::test]
async fn failing_bundle_deployments_do_not_slow_down_a_healthy_install() {
    let stack = Stack::shared(&[Component::RukpakCore, Component::PlainProvisioner]).await;
    let client = testkit::client().await;
    // Warm up (first discovery, first content write), then the quiet baseline.
    e2e::install_healthy(&client, stack).await;
    let quiet = e2e::install_healthy(&client, stack).await;

    let (base, hits) = e2e::failing_http_server().await;
    let api: Api<BundleDeployment> = Api::all(client.clone());
    let mut failing = Vec::new();
    for i in 0..FAILING {
        let name = unique_name(&format!("failing-{i}"));
        let bd = e2e::plain_deployment(
            stack,
            &name,
            json!({ "type": "http", "http": { "url": format!("{base}/missing-{i}.tgz") } }),
        );
        api.create(&PostParams::default(), &bd).await.unwrap();
        failing.push(name);
    }
    wait_for(
        "every failing source to be tried",
        Duration::from_secs(60),
        || async {
            let tried = hits.load(Ordering::SeqCst);
            if tried >= FAILING {
                Ok(())
            } else {
                Err(format!("{tried} tried"))
            }
        },
    )
    .await;

    let before = hits.load(Ordering::SeqCst);
    let window = Instant::now();
    let loaded = e2e::install_healthy(&client, stack).await;
    tokio::time::sleep(Duration::from_secs(10).saturating_sub(window.elapsed())).await;
    let fetches = hits.load(Ordering::SeqCst) - before;
    let per_second = fetches as f64 / window.elapsed().as_secs_f64();
    eprintln!(
        "fairness: a healthy install took {quiet:?} on a quiet stack and {loaded:?} with {FAILING} failing \
         BundleDeployments present ({:.1}x); the failing sources were fetched {per_second:.2} times a second",
        loaded.as_secs_f64() / quiet.as_secs_f64()
    );
    // The failing ones wait out their backoff: 20 sources, each at most about once a
    // second even at the start of its backoff.
    assert!(
        per_second <= FAILING as f64,
        "{per_second:.1} fetches a second: a hot loop"
    );
    assert!(
        loaded <= quiet * 5 + Duration::from_secs(2),
        "a healthy install took {loaded:?} beside failing ones, {quiet:?} alone"
    );
    for name in failing {
        let _ = api.delete(&name, &DeleteParams::default()).await;
    }
}
