//! Sources that never answer do not hold up anyone else's install. rukpak-core unpacks a
//! bounded number of Bundles at once (`--max-concurrent-unpacks`, 4 by default); a tenant
//! who points more BundleDeployments than that at an address that accepts connections and
//! then says nothing must not keep every unpack waiting for the 5-minute unpack timeout.
//! Each unpack counts against the limit for at most 10 s (`rukpak_core::slots`).

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::Ordering;
use std::time::Duration;

use kube::api::{DeleteParams, PostParams};
use kube::{Api, ResourceExt};
use rukpak_api::{Bundle, BundleDeployment};
use serde_json::json;
use testkit::stack::{Component, Stack};
use testkit::{unique_name, wait_for};

/// Twice the default number of unpacks at once.
const STUCK: usize = 8;

#[tokio::test]
async fn sources_that_never_answer_do_not_hold_up_a_healthy_install() {
    let stack = Stack::shared(&[Component::RukpakCore, Component::PlainProvisioner]).await;
    let client = testkit::client().await;
    e2e::install_healthy(&client, stack).await;
    let quiet = e2e::install_healthy(&client, stack).await;

    let (base, accepted) = e2e::silent_http_server().await;
    let api: Api<BundleDeployment> = Api::all(client.clone());
    let mut stuck = Vec::new();
    for i in 0..STUCK {
        let name = unique_name(&format!("stuck-{i}"));
        let bd = e2e::plain_deployment(
            stack,
            &name,
            json!({ "type": "http", "http": { "url": format!("{base}/bundle-{i}.tgz") } }),
        );
        api.create(&PostParams::default(), &bd).await.unwrap();
        stuck.push(name);
    }
    // Every unpack slot is taken by a source that will not answer.
    wait_for(
        "the silent server to be waited on",
        Duration::from_secs(60),
        || async {
            let waiting = accepted.load(Ordering::SeqCst);
            if waiting >= 4 {
                Ok(())
            } else {
                Err(format!("{waiting} connections"))
            }
        },
    )
    .await;

    let loaded = e2e::install_healthy(&client, stack).await;
    eprintln!(
        "stuck sources: a healthy install took {quiet:?} on a quiet stack and {loaded:?} with \
         {STUCK} BundleDeployments waiting on a silent server ({} connections)",
        accepted.load(Ordering::SeqCst)
    );
    // At most one slot hold (10 s) of waiting, plus the install itself.
    assert!(
        loaded <= quiet * 5 + Duration::from_secs(15),
        "a healthy install took {loaded:?} beside sources that never answer, {quiet:?} alone"
    );
    // The stuck ones are still waiting, not failed: nothing gave up on them early.
    let bundles: Api<Bundle> = Api::all(client.clone());
    let unpacked = bundles
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|b| {
            stuck
                .iter()
                .any(|name| b.name_any().starts_with(name.as_str()))
        })
        .filter(|b| {
            b.status.as_ref().is_some_and(|s| {
                s.conditions
                    .iter()
                    .any(|c| c.type_ == "Unpacked" && c.status == "True")
            })
        })
        .count();
    assert_eq!(unpacked, 0, "a silent source cannot have been unpacked");
    for name in stuck {
        let _ = api.delete(&name, &DeleteParams::default()).await;
    }
}
