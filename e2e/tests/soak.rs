//! The soak: for `SOAK_MINUTES` (default 10) the whole stack is kept busy creating,
//! upgrading, breaking and deleting BundleDeployments and PlatformOperators, with failures
//! mixed in (a source answering 404, a pull Secret that does not exist, a port nobody
//! listens on). Then it asserts that failing sources were retried on their backoff (no hot
//! loop), that no controller's memory kept growing, and that nothing is left behind once
//! everything is deleted (Bundles, content ConfigMaps, ResolveSets, BundleDeployments).
//!
//! Not part of `make test` (it runs for minutes): `make soak`, or
//! `SOAK_MINUTES=2 cargo test -p e2e --test soak -- --ignored --nocapture` on a cluster.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use platform_api::PlatformOperator;
use rukpak_api::{Bundle, BundleDeployment};
use serde_json::json;
use testkit::stack::{Component, Stack};
use testkit::{unique_name, wait_for};

const TIMEOUT: Duration = Duration::from_secs(180);

/// An immutable ConfigMap holding a plain bundle of one ConfigMap with `value`.
async fn bundle_config_map(client: &Client, stack: &Stack, name: &str, value: &str) {
    let manifest = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\ndata:\n  value: \"{value}\"\n"
    );
    let source: ConfigMap = serde_json::from_value(json!({
        "metadata": { "name": format!("{name}-{value}"), "labels": stack.labels() },
        "immutable": true, "data": { "cm.yaml": manifest }
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), &stack.rukpak_namespace)
        .create(&PostParams::default(), &source)
        .await
        .unwrap();
}

fn config_maps_source(name: &str, value: &str) -> serde_json::Value {
    json!({ "type": "configMaps", "configMaps": [{ "configMap": { "name": format!("{name}-{value}") }, "path": "manifests" }] })
}

async fn wait_installed(client: &Client, name: &str) {
    let api: Api<BundleDeployment> = Api::all(client.clone());
    wait_for(&format!("{name} Installed"), TIMEOUT, || async {
        let bd = api.get(name).await.map_err(|e| e.to_string())?;
        let generation = bd.metadata.generation;
        let status = bd.status.unwrap_or_default();
        let ok = status.observed_generation == generation
            && status
                .conditions
                .iter()
                .any(|c| c.type_ == "Installed" && c.status == "True");
        if ok {
            Ok(())
        } else {
            Err(format!("{:?}", status.conditions))
        }
    })
    .await;
}

/// Peak and current RSS (KiB) of the stack's processes, by binary.
fn memory(stack: &Stack) -> Vec<(String, u64)> {
    let selector = stack.selector();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let path = entry.path();
        let Ok(cmdline) = std::fs::read(path.join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if args.first().is_some_and(|a| a.ends_with("bash")) || !args.contains(&selector) {
            continue;
        }
        let binary = args
            .first()
            .and_then(|a| a.rsplit('/').next())
            .unwrap_or_default();
        let status = std::fs::read_to_string(path.join("status")).unwrap_or_default();
        let rss = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0);
        found.push((binary.to_owned(), rss));
    }
    found.sort();
    found
}

#[tokio::test]
#[ignore = "runs for SOAK_MINUTES (default 10): make soak"]
async fn the_stack_stays_bounded_through_minutes_of_churn_and_failures() {
    let minutes: u64 = std::env::var("SOAK_MINUTES")
        .ok()
        .and_then(|m| m.parse().ok())
        .unwrap_or(10);
    let stack = Stack::shared(&Component::ALL).await;
    let client = testkit::client().await;
    let catalog = stack.examples().await.catalog.clone();
    let bds: Api<BundleDeployment> = Api::all(client.clone());
    let pos: Api<PlatformOperator> = Api::all(client.clone());
    // Sources that fail for the whole soak (counted) and ones that come and go.
    let (base, hits) = e2e::failing_http_server().await;
    let (flaky_base, _) = e2e::failing_http_server().await;
    let closed_port = testkit::servers::free_port();

    // Failures that stay for the whole soak: their retries are what is measured.
    let mut failing = Vec::new();
    for (i, source) in [
        json!({ "type": "http", "http": { "url": format!("{base}/missing.tgz") } }),
        json!({ "type": "http", "http": { "url": format!("{base}/missing-2.tgz") } }),
        json!({ "type": "image", "image": { "ref": format!("127.0.0.1:{closed_port}/nothing:1") } }),
        json!({ "type": "image", "image": { "ref": "registry.invalid/x:1", "pullSecret": "no-such-secret" } }),
    ]
    .into_iter()
    .enumerate()
    {
        let name = unique_name(&format!("broken-{i}"));
        bds.create(&PostParams::default(), &e2e::plain_deployment(stack, &name, source)).await.unwrap();
        failing.push(name);
    }
    let http_failing = 2;

    tokio::time::sleep(Duration::from_secs(20)).await;
    let memory_start = memory(stack);
    let hits_start = hits.load(Ordering::SeqCst);
    let started = Instant::now();
    let mut rounds = 0;
    while started.elapsed() < Duration::from_secs(minutes * 60) {
        rounds += 1;
        // A healthy BundleDeployment: install, upgrade (pivot), delete.
        let name = unique_name("churn");
        bundle_config_map(&client, stack, &name, "v1").await;
        bundle_config_map(&client, stack, &name, "v2").await;
        bds.create(
            &PostParams::default(),
            &e2e::plain_deployment(stack, &name, config_maps_source(&name, "v1")),
        )
        .await
        .unwrap();
        wait_installed(&client, &name).await;
        let patch = json!({ "spec": { "template": { "spec": { "source": config_maps_source(&name, "v2") } } } });
        bds.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
        wait_installed(&client, &name).await;
        // A broken one that comes and goes.
        let broken = unique_name("flaky");
        bds.create(
            &PostParams::default(),
            &e2e::plain_deployment(
                stack,
                &broken,
                json!({ "type": "http", "http": { "url": format!("{flaky_base}/flaky.tgz") } }),
            ),
        )
        .await
        .unwrap();
        // A PlatformOperator every third round: install, upgrade, delete.
        if rounds % 3 == 1 {
            let po = unique_name("soak-po");
            let object: PlatformOperator = serde_json::from_value(json!({
                "apiVersion": "platform.openshift.io/v1alpha1", "kind": "PlatformOperator",
                "metadata": { "name": po, "labels": stack.labels() },
                "spec": { "package": { "name": "metrics-agent", "versionRange": "<1.1.0" } }
            }))
            .unwrap();
            pos.create(&PostParams::default(), &object).await.unwrap();
            wait_installed(&client, &po).await;
            let patch = json!({ "spec": { "package": { "versionRange": ">=1.1.0" } } });
            pos.patch(&po, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_secs(3)).await;
            wait_installed(&client, &po).await;
            pos.delete(&po, &DeleteParams::foreground()).await.unwrap();
        }
        bds.delete(&name, &DeleteParams::default()).await.unwrap();
        tokio::time::sleep(Duration::from_secs(2)).await;
        bds.delete(&broken, &DeleteParams::default()).await.unwrap();
    }
    let elapsed = started.elapsed();
    let fetches = hits.load(Ordering::SeqCst) - hits_start;
    let memory_end = memory(stack);
    let _ = catalog;

    // Everything goes, and nothing is left behind.
    for name in &failing {
        bds.delete(name, &DeleteParams::default()).await.unwrap();
    }
    let labels = stack.selector();
    wait_for("every object of the soak to be gone", TIMEOUT, || async {
        let left_bds = bds.list(&ListParams::default().labels(&labels)).await.map_err(|e| e.to_string())?.items;
        let left_pos = pos.list(&ListParams::default().labels(&labels)).await.map_err(|e| e.to_string())?.items;
        let bundles = Api::<Bundle>::all(client.clone())
            .list(&ListParams::default().labels(&labels))
            .await
            .map_err(|e| e.to_string())?
            .items;
        let chunks = Api::<ConfigMap>::namespaced(client.clone(), &stack.rukpak_namespace)
            .list(&ListParams::default().labels(content::store::LABEL_DIGEST))
            .await
            .map_err(|e| e.to_string())?
            .items;
        let resolve_sets = Api::<ConfigMap>::namespaced(client.clone(), &stack.rukpak_namespace)
            .list(&ListParams::default().labels("deppy.io/resolution"))
            .await
            .map_err(|e| e.to_string())?
            .items;
        let left = left_bds.len() + left_pos.len() + bundles.len() + chunks.len() + resolve_sets.len();
        if left == 0 {
            Ok(())
        } else {
            Err(format!(
                "left: {} BundleDeployments {:?}, {} PlatformOperators, {} Bundles, {} content ConfigMaps, {} ResolveSets",
                left_bds.len(),
                left_bds.iter().map(|b| b.name_any()).collect::<Vec<_>>(),
                left_pos.len(),
                bundles.len(),
                chunks.len(),
                resolve_sets.len()
            ))
        }
    })
    .await;

    let per_failing_per_minute =
        fetches as f64 / http_failing as f64 / (elapsed.as_secs_f64() / 60.0);
    eprintln!(
        "soak: {rounds} rounds in {elapsed:?}; the {http_failing} always-failing http sources were fetched {fetches} times: {per_failing_per_minute:.1} per failing source per minute"
    );
    eprintln!("soak: RSS KiB at start {memory_start:?}");
    eprintln!("soak: RSS KiB at end   {memory_end:?}");
    // Backoff caps at 5 minutes: a source that fails all the time is fetched a handful of
    // times a minute at first and about once in five minutes later; each flaky source of
    // a round adds its first attempts.
    assert!(
        per_failing_per_minute <= 20.0,
        "{per_failing_per_minute:.1} fetches per failing source per minute"
    );
    for ((binary, start), (_, end)) in memory_start.iter().zip(&memory_end) {
        assert!(
            *end <= start + 64 * 1024,
            "{binary} grew from {start} KiB to {end} KiB over the soak"
        );
    }
}
