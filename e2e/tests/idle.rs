//! Idle cost: what each controller spends while nothing changes. With an operator installed
//! through a PlatformOperator (so all six controllers hold objects), the test waits for the
//! system to settle, then counts for [`WINDOW`] each controller's API requests (from the API
//! server's audit log, by user agent) and CPU time (from /proc).
//!
//! It records the numbers in `$OLMV1_STACK_DIR/idle.stats`; `hack/process-budgets` prints
//! them with the rest of the budget table at the end of `make test` and fails the run when a
//! controller goes over its idle budget. The test itself checks that the measurement works:
//! every controller's requests are attributed to it during the install, and every process
//! is found.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client};
use platform_api::PlatformOperator;
use platform_api::conditions::{TYPE_INSTALLED, reasons};
use serde_json::json;
use testkit::stack::{Component, Stack};
use testkit::{unique_name, wait_for};

/// How long the idle system is watched. Long enough to hold the provisioners' test resync
/// (30 s) twice.
const WINDOW: Duration = Duration::from_secs(60);

/// Time for the last writes of an install (status, Events) to finish before the window.
const SETTLE: Duration = Duration::from_secs(15);

/// Requests per binary (by the `<binary>/<version>` user agent every controller sends)
/// received in `[from, to]`.
fn requests_by_binary(from: Timestamp, to: Timestamp) -> BTreeMap<&'static str, u64> {
    let mut counts: BTreeMap<&'static str, u64> =
        Component::ALL.iter().map(|c| (c.binary(), 0)).collect();
    for request in testkit::audit::requests(from, to) {
        let binary = request.user_agent.split('/').next().unwrap_or_default();
        if let Some(count) = counts.get_mut(binary) {
            *count += 1;
        }
    }
    counts
}

/// CPU time so far (user + system, clock ticks) of each of the stack's controller
/// processes, found by the stack's watch selector on their command line.
fn cpu_ticks(stack: &Stack) -> BTreeMap<&'static str, u64> {
    let selector = stack.selector();
    let mut ticks = BTreeMap::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let path = entry.path();
        let Ok(cmdline) = std::fs::read(path.join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if !args.contains(&selector) {
            continue;
        }
        let program = args.first().map(PathBuf::from).unwrap_or_default();
        let Some(component) = Component::ALL
            .iter()
            .find(|c| program.file_name().is_some_and(|n| n == c.binary()))
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(path.join("stat")) else {
            continue;
        };
        // Fields after the command name (which may hold spaces) start at field 3.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        let utime: u64 = fields.get(11).and_then(|f| f.parse().ok()).unwrap_or(0);
        let stime: u64 = fields.get(12).and_then(|f| f.parse().ok()).unwrap_or(0);
        ticks.insert(component.binary(), utime + stime);
    }
    ticks
}

async fn install(client: &Client, stack: &Stack, name: &str) {
    // The sample catalog, published and served to this stack.
    stack.examples().await;
    let po: PlatformOperator = serde_json::from_value(json!({
        "apiVersion": "platform.openshift.io/v1alpha1", "kind": "PlatformOperator",
        "metadata": { "name": name, "labels": stack.labels() },
        "spec": { "package": { "name": "memcached-operator" } }
    }))
    .unwrap();
    let api: Api<PlatformOperator> = Api::all(client.clone());
    api.create(&PostParams::default(), &po).await.unwrap();
    wait_for(
        &format!("PlatformOperator {name} Installed"),
        Duration::from_secs(240),
        || async {
            let po = api.get(name).await.map_err(|e| e.to_string())?;
            let status = po.status.unwrap_or_default();
            match status.conditions.iter().find(|c| c.type_ == TYPE_INSTALLED) {
                Some(c) if c.status == "True" && c.reason == reasons::INSTALL_SUCCESSFUL => Ok(()),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
}

#[tokio::test]
async fn an_idle_system_costs_little() {
    let stack = Stack::shared(&Component::ALL).await;
    let client = testkit::client().await;
    let name = unique_name("idle");
    let install_started = Timestamp::now();
    install(&client, stack, &name).await;
    let installed = Timestamp::now();

    // The measurement works: during the install every controller sent requests under its
    // own user agent, and every process is found.
    let during_install = requests_by_binary(install_started, installed);
    for (binary, count) in &during_install {
        assert!(
            *count > 0,
            "no API request of {binary} attributed during the install: {during_install:?}"
        );
    }

    tokio::time::sleep(SETTLE).await;
    let before = cpu_ticks(stack);
    assert_eq!(
        before.len(),
        Component::ALL.len(),
        "not every controller process was found: {before:?}"
    );
    let from = Timestamp::now();
    tokio::time::sleep(WINDOW).await;
    let to = Timestamp::now();
    let after = cpu_ticks(stack);
    let requests = requests_by_binary(from, to);

    // /proc counts in USER_HZ, 100 on every Linux this runs on.
    let ticks_per_second = 100.0;
    let seconds = WINDOW.as_secs_f64();
    let mut table = String::new();
    let mut stats = String::new();
    for component in Component::ALL {
        let binary = component.binary();
        let cpu = after[binary].saturating_sub(before[binary]) as f64 / ticks_per_second;
        let rate = requests[binary] as f64 / seconds;
        table.push_str(&format!(
            "{binary:<22} {rate:>8.2} requests/s {:>7.2}% CPU\n",
            100.0 * cpu / seconds
        ));
        stats.push_str(&format!(
            "{binary} idle_requests_per_second={rate:.3} idle_cpu_percent={:.3}\n",
            100.0 * cpu / seconds
        ));
    }
    eprintln!("idle for {seconds:.0} s with one operator installed:\n{table}");
    if let Some(dir) = std::env::var_os("OLMV1_STACK_DIR") {
        std::fs::write(PathBuf::from(dir).join("idle.stats"), stats).unwrap();
    }

    // Leave nothing behind for the next test binary (it installs the same operator).
    let api: Api<PlatformOperator> = Api::all(client.clone());
    api.delete(&name, &DeleteParams::foreground())
        .await
        .unwrap();
    let deployments: Api<rukpak_api::BundleDeployment> = Api::all(client.clone());
    wait_for(
        "the PlatformOperator and its BundleDeployments to go",
        Duration::from_secs(180),
        || async {
            let po = api.get_opt(&name).await.map_err(|e| e.to_string())?;
            let left = deployments
                .list(&kube::api::ListParams::default().labels(&stack.selector()))
                .await
                .map_err(|e| e.to_string())?
                .items
                .len();
            if po.is_none() && left == 0 {
                Ok(())
            } else {
                Err(format!(
                    "PlatformOperator present: {}, BundleDeployments: {left}",
                    po.is_some()
                ))
            }
        },
    )
    .await;
}
