//! A cluster without the ClusterOperator API (plain Kubernetes): platform-operators says so
//! once, keeps running the PlatformOperator controller, and starts maintaining the
//! aggregated ClusterOperator as soon as the API is installed.
//!
//! The test deletes the cluster-wide ClusterOperator CRD, so it is a test binary of its
//! own (cargo runs test binaries one after another) and puts the CRD back at the end;
//! `testkit::install_crds` (which every stack runs) restores it too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Stdio};
use std::time::Duration;

use deppy_api::ActiveResolution;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use platform_api::{ClusterOperator, PlatformOperator};
use serde_json::json;
use testkit::servers::{ChildGuard, free_port};
use testkit::wait_for;

const CRD: &str = "clusteroperators.config.openshift.io";
const WARNING: &str =
    "the ClusterOperator API (clusteroperators.config.openshift.io) is not installed";

/// `GET http://<admin>/metrics`, or an empty string while it does not answer.
async fn metrics(admin: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut stream) = tokio::net::TcpStream::connect(admin).await else {
        return String::new();
    };
    let request = format!("GET /metrics HTTP/1.0\r\nHost: {admin}\r\n\r\n");
    if stream.write_all(request.as_bytes()).await.is_err() {
        return String::new();
    }
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response).await;
    response
}

/// The value of the counter line starting with `prefix`.
fn counter(text: &str, prefix: &str) -> u64 {
    text.lines()
        .find(|line| line.starts_with(prefix))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn without_the_cluster_operator_api_platform_operators_keep_working_and_catch_up_later() {
    let client = testkit::client().await;
    testkit::install_crds(&client).await;
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    crds.delete(CRD, &DeleteParams::default()).await.unwrap();
    wait_for(
        "the ClusterOperator CRD to be gone",
        Duration::from_secs(60),
        || async {
            match crds.get_opt(CRD).await.map_err(|e| e.to_string())? {
                None => Ok(()),
                Some(_) => Err("still there".to_owned()),
            }
        },
    )
    .await;

    let id = testkit::unique_name("no-co-api");
    let admin = format!("127.0.0.1:{}", free_port());
    let log = std::env::temp_dir().join(format!("{id}.log"));
    let file = std::fs::File::create(&log).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_platform-operators"))
        .args(["run", "--watch-selector", &format!("olmv1-test={id}")])
        .args(["--admin-address", &admin, "--system-namespace", "default"])
        .args(["--api-recheck", "1s"])
        .env("LOG_LEVEL", "info")
        .env_remove("WATCH_SELECTOR")
        .env_remove("LEADER_ELECT")
        .stdin(Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .spawn()
        .unwrap();
    let _guard = ChildGuard(child);
    let read_log = || std::fs::read_to_string(&log).unwrap_or_default();

    // Several rechecks find no API, and it is said once.
    wait_for("three checks for the ClusterOperator API", Duration::from_secs(60), || async {
        let text = metrics(&admin).await;
        let checks = counter(
            &text,
            r#"platform_operators_reconcile_total{controller="clusteroperator",result="api_missing"}"#,
        );
        if checks >= 3 { Ok(()) } else { Err(format!("{checks} checks; log:\n{}", read_log())) }
    })
    .await;
    assert_eq!(read_log().matches(WARNING).count(), 1, "{}", read_log());

    // The PlatformOperator controller works meanwhile.
    let name = id.clone();
    let operator: PlatformOperator = serde_json::from_value(json!({
        "apiVersion": "platform.openshift.io/v1alpha1",
        "kind": "PlatformOperator",
        "metadata": {"name": name, "labels": {"olmv1-test": id}},
        "spec": {"package": {"name": "memcached-operator"}},
    }))
    .unwrap();
    let operators = Api::<PlatformOperator>::all(client.clone());
    operators
        .create(&PostParams::default(), &operator)
        .await
        .unwrap();
    let resolutions = Api::<ActiveResolution>::all(client.clone());
    wait_for(
        "the ActiveResolution and the Installed condition",
        Duration::from_secs(60),
        || async {
            let resolution = resolutions
                .get_opt(&name)
                .await
                .map_err(|e| e.to_string())?;
            let operator = operators.get(&name).await.map_err(|e| e.to_string())?;
            let installed = operator
                .status
                .as_ref()
                .and_then(|s| kit::conditions::find(&s.conditions, "Installed"))
                .map(|c| (c.status.clone(), c.reason.clone()));
            match (resolution, installed) {
                (Some(_), Some((status, reason)))
                    if status == "False" && reason == "UnpackPending" =>
                {
                    Ok(())
                }
                (resolution, installed) => Err(format!(
                    "{:?} {installed:?}; log:\n{}",
                    resolution.is_some(),
                    read_log()
                )),
            }
        },
    )
    .await;

    // The API arrives: the ClusterOperator is created and reports the PlatformOperator.
    testkit::install_crds(&client).await;
    let cluster_operators = Api::<ClusterOperator>::all(client.clone());
    wait_for(
        "the ClusterOperator to report the PlatformOperator",
        Duration::from_secs(60),
        || async {
            let current = cluster_operators
                .get_opt(platform_api::AGGREGATED_CLUSTER_OPERATOR)
                .await
                .map_err(|e| e.to_string())?;
            let available = current
                .and_then(|co| co.status)
                .and_then(|s| s.conditions.into_iter().find(|c| c.type_ == "Available"));
            match available {
                Some(c)
                    if c.status == "False"
                        && c.message.as_deref().unwrap_or_default().contains(&name) =>
                {
                    Ok(())
                }
                other => Err(format!("{other:?}; log:\n{}", read_log())),
            }
        },
    )
    .await;
    assert!(
        read_log().contains("the ClusterOperator API is installed now"),
        "{}",
        read_log()
    );

    operators
        .delete(&name, &DeleteParams::background())
        .await
        .unwrap();
    wait_for(
        "the ClusterOperator to have no PlatformOperators",
        Duration::from_secs(60),
        || async {
            let current = cluster_operators
                .get(platform_api::AGGREGATED_CLUSTER_OPERATOR)
                .await
                .map_err(|e| e.to_string())?;
            let available = current
                .status
                .and_then(|s| s.conditions.into_iter().find(|c| c.type_ == "Available"));
            match available {
                Some(c) if c.status == "True" => Ok(()),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
}
