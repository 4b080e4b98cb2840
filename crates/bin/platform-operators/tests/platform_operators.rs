//! PlatformOperators in the full stack: deppy-resolver, rukpak-core, both provisioners,
//! the resolution activator and platform-operators run as the real binaries
//! (`testkit::stack`) against a real control plane, installing the sample catalog's
//! operators from a loopback registry.
//!
//! The aggregated ClusterOperator is one cluster-wide object and the child
//! BundleDeployments are named after packages, so the scenarios take turns
//! ([`exclusive`]) and each leaves no PlatformOperator behind.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use deppy_api::ActiveResolution;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use platform_api::{
    ClusterOperator, ClusterOperatorStatusCondition, ClusterVersion, PlatformOperator,
};
use rukpak_api::BundleDeployment;
use serde_json::json;
use testkit::stack::{Component, Stack};
use testkit::wait_for;
use tokio::sync::{Mutex, MutexGuard};

/// Installing: resolving, unpacking the wrapper and two bundle images, applying two operators.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(180);
/// Removing an installation.
const REMOVE_TIMEOUT: Duration = Duration::from_secs(180);
/// A status that follows from objects already there.
const STATUS_TIMEOUT: Duration = Duration::from_secs(60);

const MEMCACHED: &str = "memcached-operator";
const METRICS: &str = "metrics-agent";
/// The child BundleDeployments installing them.
const MEMCACHED_BD: &str = "package-memcached-operator";
const METRICS_BD: &str = "package-metrics-agent";
const MEMCACHED_NAMESPACE: &str = "memcached-operator-system";
const MEMCACHED_DEPLOYMENT: &str = "memcached-operator-controller-manager";
const CO: &str = platform_api::AGGREGATED_CLUSTER_OPERATOR;

/// What every scenario shares: the controllers, serving the sample catalog.
async fn fixture() -> &'static Stack {
    let stack = Stack::shared(&Component::ALL).await;
    stack.examples().await;
    stack
}

/// One scenario at a time: they share the ClusterOperator and the package names.
async fn exclusive() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::const_new(());
    LOCK.lock().await
}

/// The last lines of every component's log, for failure messages.
fn logs(fixture: &Stack) -> String {
    fixture.log_tails(15)
}

fn platform_operator(
    fixture: &Stack,
    name: &str,
    package: &str,
    range: Option<&str>,
) -> PlatformOperator {
    let mut package = json!({"name": package});
    if let Some(range) = range {
        package["versionRange"] = json!(range);
    }
    let mut labels = fixture.labels();
    labels["team"] = json!("platform");
    serde_json::from_value(json!({
        "apiVersion": "platform.openshift.io/v1alpha1",
        "kind": "PlatformOperator",
        "metadata": {"name": name, "labels": labels},
        "spec": {"package": package},
    }))
    .unwrap()
}

async fn create(client: &Client, operator: &PlatformOperator) {
    Api::<PlatformOperator>::all(client.clone())
        .create(&PostParams::default(), operator)
        .await
        .unwrap();
}

fn installed(operator: &PlatformOperator) -> Option<Condition> {
    operator
        .status
        .as_ref()
        .and_then(|s| kit::conditions::find(&s.conditions, "Installed"))
        .cloned()
}

/// Waits until PlatformOperator `name`'s `Installed` condition, for its current
/// generation, has `status` and `reason`; returns the PlatformOperator.
async fn wait_installed(
    fixture: &Stack,
    client: &Client,
    name: &str,
    status: &str,
    reason: &str,
    timeout: Duration,
) -> PlatformOperator {
    let api = Api::<PlatformOperator>::all(client.clone());
    wait_for(
        &format!("PlatformOperator {name} to be Installed={status} ({reason})"),
        timeout,
        || async {
            let operator = api.get(name).await.map_err(|e| e.to_string())?;
            let condition = installed(&operator);
            match &condition {
                Some(c)
                    if c.status == status
                        && c.reason == reason
                        && c.observed_generation == operator.metadata.generation =>
                {
                    Ok(operator)
                }
                _ => Err(format!("{condition:?}{}", logs(fixture))),
            }
        },
    )
    .await
}

fn co_condition(operator: &ClusterOperator, type_: &str) -> Option<ClusterOperatorStatusCondition> {
    operator
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == type_))
        .cloned()
}

/// Waits until the ClusterOperator's condition `type_` has `status` and `reason` and its
/// message contains `message`; returns the ClusterOperator.
async fn wait_co(
    fixture: &Stack,
    client: &Client,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
) -> ClusterOperator {
    let api = Api::<ClusterOperator>::all(client.clone());
    wait_for(
        &format!("ClusterOperator {CO} {type_}={status} ({reason}) saying {message:?}"),
        STATUS_TIMEOUT,
        || async {
            let operator = api.get(CO).await.map_err(|e| e.to_string())?;
            let condition = co_condition(&operator, type_);
            match &condition {
                Some(c)
                    if c.status == status
                        && c.reason.as_deref() == Some(reason)
                        && c.message.as_deref().unwrap_or_default().contains(message) =>
                {
                    Ok(operator)
                }
                _ => Err(format!("{condition:?}{}", logs(fixture))),
            }
        },
    )
    .await
}

async fn delete_and_wait_gone(fixture: &Stack, client: &Client, name: &str) {
    let api = Api::<PlatformOperator>::all(client.clone());
    api.delete(name, &DeleteParams::background()).await.unwrap();
    let resolutions = Api::<ActiveResolution>::all(client.clone());
    let deployments = Api::<BundleDeployment>::all(client.clone());
    wait_for(
        &format!("PlatformOperator {name}, its ActiveResolution and wrapper to be gone"),
        REMOVE_TIMEOUT,
        || async {
            let left = (
                api.get_opt(name)
                    .await
                    .map_err(|e| e.to_string())?
                    .is_some(),
                resolutions
                    .get_opt(name)
                    .await
                    .map_err(|e| e.to_string())?
                    .is_some(),
                deployments
                    .get_opt(name)
                    .await
                    .map_err(|e| e.to_string())?
                    .is_some(),
            );
            if left == (false, false, false) {
                Ok(())
            } else {
                Err(format!("left (po, ar, bd): {left:?}{}", logs(fixture)))
            }
        },
    )
    .await;
}

/// The image of a child BundleDeployment's template.
fn child_image(deployment: &BundleDeployment) -> String {
    deployment
        .spec
        .template
        .spec
        .source
        .image
        .as_ref()
        .map(|i| i.ref_.clone())
        .unwrap_or_default()
}

async fn set_cluster_version(client: &Client, version: &str) {
    let api = Api::<ClusterVersion>::all(client.clone());
    if api.get_opt("version").await.unwrap().is_none() {
        let object: ClusterVersion = serde_json::from_value(json!({
            "apiVersion": "config.openshift.io/v1",
            "kind": "ClusterVersion",
            "metadata": {"name": "version"},
            "spec": {},
        }))
        .unwrap();
        api.create(&PostParams::default(), &object).await.unwrap();
    }
    api.patch_status(
        "version",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {
            "desired": {"version": version},
            "history": [{"state": "Completed", "version": version}],
        }})),
    )
    .await
    .unwrap();
}

/// Install, duplicates, Upgradeable, health, upgrade by editing `versionRange`, a resync
/// that writes nothing, and deletion: one PlatformOperator's life (installing is the slow
/// part, so the steps share one install).
#[tokio::test]
async fn a_platform_operator_installs_upgrades_reports_and_cleans_up() {
    let fixture = fixture().await;
    let _turn = exclusive().await;
    let client = testkit::client().await;
    let name = testkit::unique_name("memcached");
    let operators = Api::<PlatformOperator>::all(client.clone());
    let deployments = Api::<BundleDeployment>::all(client.clone());
    let cluster_operators = Api::<ClusterOperator>::all(client.clone());

    // Install 0.1.0.
    let started = std::time::Instant::now();
    create(
        &client,
        &platform_operator(fixture, &name, MEMCACHED, Some(">=0.1.0 <0.2.0")),
    )
    .await;
    let operator = wait_installed(
        fixture,
        &client,
        &name,
        "True",
        "InstallSuccessful",
        INSTALL_TIMEOUT,
    )
    .await;
    eprintln!(
        "measured: PlatformOperator {name} created -> Installed=True in {:?}",
        started.elapsed()
    );
    let condition = installed(&operator).unwrap();
    assert_eq!(
        condition.message,
        format!("Successfully applied the {name} BundleDeployment resource")
    );
    assert_eq!(
        operator
            .status
            .as_ref()
            .unwrap()
            .active_bundle_deployment
            .as_ref()
            .unwrap()
            .name,
        name
    );

    // The chain below it: the ActiveResolution is owned, annotated and labelled, and
    // the labels reach the wrapper and both children.
    let resolution = Api::<ActiveResolution>::all(client.clone())
        .get(&name)
        .await
        .unwrap();
    let owner = &resolution.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.controller),
        ("PlatformOperator", name.as_str(), Some(true))
    );
    assert_eq!(
        resolution
            .annotations()
            .get(deppy_api::ACTIVATOR_CLASS_ANNOTATION)
            .map(String::as_str),
        Some("PlatformOperator")
    );
    let required = resolution.spec.constraints[0].required.as_ref().unwrap();
    assert_eq!(
        (required.name.as_str(), required.version_range.as_deref()),
        (MEMCACHED, Some(">=0.1.0 <0.2.0"))
    );
    for bd in [name.as_str(), MEMCACHED_BD, METRICS_BD] {
        let bd = deployments.get(bd).await.unwrap();
        assert_eq!(
            bd.labels().get("team").map(String::as_str),
            Some("platform"),
            "labels of {}",
            bd.name_any()
        );
    }
    assert!(child_image(&deployments.get(MEMCACHED_BD).await.unwrap()).ends_with(":v0.1.0"));

    // The ClusterOperator: available, the BundleDeployments related, the release version.
    let co = wait_co(
        fixture,
        &client,
        "Available",
        "True",
        "AsExpected",
        "All platform operators are in a successful state",
    )
    .await;
    let status = co.status.clone().unwrap();
    assert_eq!(status.versions.len(), 1);
    assert_eq!(
        (
            status.versions[0].name.as_str(),
            status.versions[0].version.as_str()
        ),
        ("operator", fixture.release_version.as_str())
    );
    let related: Vec<(&str, &str)> = status
        .related_objects
        .iter()
        .map(|r| (r.resource.as_str(), r.name.as_str()))
        .collect();
    assert!(
        related.contains(&("namespaces", fixture.platform_namespace.as_str())),
        "{related:?}"
    );
    assert!(related.contains(&("platformoperators", "")), "{related:?}");
    for bd in [name.as_str(), MEMCACHED_BD, METRICS_BD] {
        assert!(
            related.contains(&("bundledeployments", bd)),
            "{bd} in {related:?}"
        );
    }
    assert_eq!(co_condition(&co, "Degraded").unwrap().status, "False");
    assert_eq!(co_condition(&co, "Progressing").unwrap().status, "False");

    // Two more PlatformOperators want the package, or its dependency: both are refused
    // by name, and the first one is not touched.
    // Generation and uid: a spec change or a re-creation would show (status writes by the
    // provisioners may come at any time and do not count).
    let identity = |bd: BundleDeployment| (bd.metadata.uid, bd.metadata.generation);
    let wrapper_before = identity(deployments.get(&name).await.unwrap());
    let child_before = identity(deployments.get(MEMCACHED_BD).await.unwrap());
    let installed_since = installed(&operators.get(&name).await.unwrap())
        .unwrap()
        .last_transition_time;
    let again = testkit::unique_name("memcached-again");
    let agent = testkit::unique_name("agent");
    create(
        &client,
        &platform_operator(fixture, &again, MEMCACHED, None),
    )
    .await;
    create(&client, &platform_operator(fixture, &agent, METRICS, None)).await;
    let refused = wait_installed(
        fixture,
        &client,
        &again,
        "False",
        "DuplicatePackage",
        STATUS_TIMEOUT,
    )
    .await;
    assert_eq!(
        installed(&refused).unwrap().message,
        format!("package {MEMCACHED} is already installed by PlatformOperator {name}")
    );
    let refused = wait_installed(
        fixture,
        &client,
        &agent,
        "False",
        "DuplicatePackage",
        STATUS_TIMEOUT,
    )
    .await;
    assert_eq!(
        installed(&refused).unwrap().message,
        format!(
            "package {METRICS} is already installed by PlatformOperator {name} (as a dependency of {MEMCACHED})"
        )
    );
    assert!(
        Api::<ActiveResolution>::all(client.clone())
            .get_opt(&again)
            .await
            .unwrap()
            .is_none()
    );
    wait_co(
        fixture,
        &client,
        "Available",
        "False",
        "PlatformOperatorError",
        &format!(
            "encountered the failing {again} platform operator with reason \"DuplicatePackage\""
        ),
    )
    .await;
    assert_eq!(
        identity(deployments.get(&name).await.unwrap()),
        wrapper_before
    );
    assert_eq!(
        identity(deployments.get(MEMCACHED_BD).await.unwrap()),
        child_before
    );
    assert_eq!(
        installed(&operators.get(&name).await.unwrap())
            .unwrap()
            .last_transition_time,
        installed_since
    );
    assert_eq!(
        installed(&operators.get(&name).await.unwrap())
            .unwrap()
            .status,
        "True"
    );
    delete_and_wait_gone(fixture, &client, &again).await;
    delete_and_wait_gone(fixture, &client, &agent).await;
    wait_co(
        fixture,
        &client,
        "Available",
        "True",
        "AsExpected",
        "All platform operators are in a successful state",
    )
    .await;

    // Upgradeable: 0.1.0 supports OpenShift up to 4.16, so a 4.16 cluster cannot move on.
    set_cluster_version(&client, "4.16.2").await;
    let co = wait_co(
        fixture,
        &client,
        "Upgradeable",
        "False",
        "IncompatibleOperatorsInstalled",
        &format!("{name} ({MEMCACHED} has olm.maxOpenShiftVersion 4.16)"),
    )
    .await;
    assert!(
        co_condition(&co, "Upgradeable")
            .unwrap()
            .message
            .unwrap()
            .contains("prior to upgrading cluster to version 4.17")
    );
    set_cluster_version(&client, "4.15.9").await;
    wait_co(
        fixture,
        &client,
        "Upgradeable",
        "True",
        "AsExpected",
        "support OpenShift 4.16",
    )
    .await;
    set_cluster_version(&client, "4.16.2").await;
    wait_co(
        fixture,
        &client,
        "Upgradeable",
        "False",
        "IncompatibleOperatorsInstalled",
        &name,
    )
    .await;

    // A resync writes nothing: restart platform-operators (a full re-list and reconcile)
    // and the ClusterOperator and PlatformOperator keep their resourceVersions.
    let available_since = co_condition(&cluster_operators.get(CO).await.unwrap(), "Available")
        .unwrap()
        .last_transition_time;
    let co_version = cluster_operators.get(CO).await.unwrap().resource_version();
    let po_version = operators.get(&name).await.unwrap().resource_version();
    const RECONCILED: &str = "reconciled ClusterOperator platform-operators-aggregated";
    const APPLIED: &str = "applied ActiveResolution";
    let logs_before = fixture.logs(Component::PlatformOperators);
    let before = logs_before.matches(RECONCILED).count();
    let applied_before = logs_before.matches(APPLIED).count();
    fixture.restart(Component::PlatformOperators).await;
    let line = wait_for(
        "the restarted platform-operators to reconcile the ClusterOperator",
        STATUS_TIMEOUT,
        || async {
            let logs = fixture.logs(Component::PlatformOperators);
            let lines: Vec<&str> = logs.lines().filter(|l| l.contains(RECONCILED)).collect();
            if lines.len() > before {
                Ok(lines[lines.len() - 1].to_owned())
            } else {
                Err(format!("{} reconcile lines", lines.len()))
            }
        },
    )
    .await;
    assert!(line.contains("written=false"), "{line}");
    assert_eq!(
        fixture
            .logs(Component::PlatformOperators)
            .matches(APPLIED)
            .count(),
        applied_before,
        "the restart re-applied an ActiveResolution"
    );
    assert_eq!(
        cluster_operators.get(CO).await.unwrap().resource_version(),
        co_version
    );
    assert_eq!(
        operators.get(&name).await.unwrap().resource_version(),
        po_version
    );
    assert_eq!(
        co_condition(&cluster_operators.get(CO).await.unwrap(), "Available")
            .unwrap()
            .last_transition_time,
        available_since
    );

    // Health after install is reflected: a Deployment that cannot roll out makes the
    // operator unhealthy, and fixing it brings it back.
    let operator_deployments = Api::<Deployment>::namespaced(client.clone(), MEMCACHED_NAMESPACE);
    let stuck = json!({"spec": {"template": {"spec": {"nodeSelector": {"olmv1-test/no-such-node": "true"}}}}});
    operator_deployments
        .patch(
            MEMCACHED_DEPLOYMENT,
            &PatchParams::default(),
            &Patch::Strategic(&stuck),
        )
        .await
        .unwrap();
    let sick = wait_installed(
        fixture,
        &client,
        &name,
        "False",
        "Unhealthy",
        STATUS_TIMEOUT,
    )
    .await;
    let message = installed(&sick).unwrap().message;
    assert!(
        message.starts_with(&format!("BundleDeployment {MEMCACHED_BD}: ")),
        "{message}"
    );
    wait_co(
        fixture,
        &client,
        "Available",
        "False",
        "PlatformOperatorError",
        &format!("encountered the failing {name} platform operator with reason \"Unhealthy\""),
    )
    .await;
    operator_deployments
        .patch(
            MEMCACHED_DEPLOYMENT,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"template": {"spec": {"nodeSelector": null}}}})),
        )
        .await
        .unwrap();
    wait_installed(
        fixture,
        &client,
        &name,
        "True",
        "InstallSuccessful",
        STATUS_TIMEOUT,
    )
    .await;

    // Upgrade by editing versionRange: the children pivot to 0.2.0, and 0.2.0 has no
    // maximum OpenShift version.
    let started = std::time::Instant::now();
    operators
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"package": {"versionRange": ">=0.2.0"}}})),
        )
        .await
        .unwrap();
    let upgraded = wait_installed(
        fixture,
        &client,
        &name,
        "True",
        "InstallSuccessful",
        INSTALL_TIMEOUT,
    )
    .await;
    eprintln!(
        "measured: versionRange edited -> Installed=True on 0.2.0 in {:?}",
        started.elapsed()
    );
    assert_eq!(upgraded.metadata.generation, Some(2));
    let child = deployments.get(MEMCACHED_BD).await.unwrap();
    assert!(
        child_image(&child).ends_with(":v0.2.0"),
        "{}",
        child_image(&child)
    );
    let required = Api::<ActiveResolution>::all(client.clone())
        .get(&name)
        .await
        .unwrap()
        .spec
        .constraints[0]
        .required
        .clone()
        .unwrap();
    assert_eq!(required.version_range.as_deref(), Some(">=0.2.0"));
    wait_co(
        fixture,
        &client,
        "Upgradeable",
        "True",
        "AsExpected",
        "support OpenShift 4.17",
    )
    .await;
    Api::<ClusterVersion>::all(client.clone())
        .delete("version", &DeleteParams::default())
        .await
        .unwrap();

    // Deletion cascades down to the operator, and the ClusterOperator has nothing to report.
    delete_and_wait_gone(fixture, &client, &name).await;
    wait_for(
        "the children and the operator Deployment to be gone",
        REMOVE_TIMEOUT,
        || async {
            let left = (
                deployments
                    .get_opt(MEMCACHED_BD)
                    .await
                    .map_err(|e| e.to_string())?
                    .is_some(),
                deployments
                    .get_opt(METRICS_BD)
                    .await
                    .map_err(|e| e.to_string())?
                    .is_some(),
                operator_deployments
                    .get_opt(MEMCACHED_DEPLOYMENT)
                    .await
                    .map_err(|e| e.to_string())?
                    .is_some(),
            );
            if left == (false, false, false) {
                Ok(())
            } else {
                Err(format!("left: {left:?}{}", logs(fixture)))
            }
        },
    )
    .await;
    let co = wait_co(
        fixture,
        &client,
        "Available",
        "True",
        "AsExpected",
        "No platform operators are present in the cluster",
    )
    .await;
    assert_eq!(
        co_condition(&co, "Progressing").unwrap().message.as_deref(),
        Some("No platform operators are present in the cluster")
    );
    let related = co.status.unwrap().related_objects;
    assert!(
        related.iter().all(|r| r.resource != "bundledeployments"),
        "{related:?}"
    );
}

/// A package no catalog has: SourceFailed with the resolver's explanation, and the
/// ClusterOperator unavailable until the PlatformOperator is deleted.
#[tokio::test]
async fn a_platform_operator_for_a_missing_package_fails_to_source() {
    let fixture = fixture().await;
    let _turn = exclusive().await;
    let client = testkit::client().await;
    let name = testkit::unique_name("missing");
    create(
        &client,
        &platform_operator(fixture, &name, "no-such-operator", None),
    )
    .await;
    let operator = wait_installed(
        fixture,
        &client,
        &name,
        "False",
        "SourceFailed",
        STATUS_TIMEOUT,
    )
    .await;
    let message = installed(&operator).unwrap().message;
    assert!(
        message.contains("no operators found in package no-such-operator"),
        "{message}"
    );
    eprintln!("SourceFailed message: {message}");
    assert!(operator.status.unwrap().active_bundle_deployment.is_none());
    wait_co(
        fixture,
        &client,
        "Available",
        "False",
        "PlatformOperatorError",
        &format!("encountered the failing {name} platform operator with reason \"SourceFailed\""),
    )
    .await;
    delete_and_wait_gone(fixture, &client, &name).await;
    wait_co(
        fixture,
        &client,
        "Available",
        "True",
        "AsExpected",
        "No platform operators are present in the cluster",
    )
    .await;
}

/// A PlatformOperator whose resolution needs a package another PlatformOperator installed
/// directly (memcached-operator depends on metrics-agent) is refused with a message naming
/// that PlatformOperator, and the other one is left alone.
#[tokio::test]
async fn a_dependency_installed_by_another_platform_operator_refuses_the_newcomer() {
    let fixture = fixture().await;
    let _turn = exclusive().await;
    let client = testkit::client().await;
    let deployments = Api::<BundleDeployment>::all(client.clone());
    let operators = Api::<PlatformOperator>::all(client.clone());
    let agent = testkit::unique_name("agent");
    create(&client, &platform_operator(fixture, &agent, METRICS, None)).await;
    wait_installed(
        fixture,
        &client,
        &agent,
        "True",
        "InstallSuccessful",
        INSTALL_TIMEOUT,
    )
    .await;
    let identity = |bd: BundleDeployment| (bd.metadata.uid, bd.metadata.generation);
    let child_before = identity(deployments.get(METRICS_BD).await.unwrap());

    let memcached = testkit::unique_name("memcached");
    create(
        &client,
        &platform_operator(fixture, &memcached, MEMCACHED, None),
    )
    .await;
    let refused = wait_installed(
        fixture,
        &client,
        &memcached,
        "False",
        "DuplicatePackage",
        INSTALL_TIMEOUT,
    )
    .await;
    assert_eq!(
        installed(&refused).unwrap().message,
        format!(
            "package {METRICS} (a dependency of {MEMCACHED}) is already installed by PlatformOperator {agent}"
        )
    );
    assert!(
        deployments.get_opt(MEMCACHED_BD).await.unwrap().is_none(),
        "nothing of the newcomer was applied"
    );
    assert_eq!(
        identity(deployments.get(METRICS_BD).await.unwrap()),
        child_before
    );
    let agent_now = operators.get(&agent).await.unwrap();
    assert_eq!(installed(&agent_now).unwrap().reason, "InstallSuccessful");

    delete_and_wait_gone(fixture, &client, &memcached).await;
    delete_and_wait_gone(fixture, &client, &agent).await;
    wait_for("the children to be gone", REMOVE_TIMEOUT, || async {
        match deployments
            .get_opt(METRICS_BD)
            .await
            .map_err(|e| e.to_string())?
        {
            None => Ok(()),
            Some(_) => Err(format!("{METRICS_BD} left{}", logs(fixture))),
        }
    })
    .await;
    wait_co(
        fixture,
        &client,
        "Available",
        "True",
        "AsExpected",
        "No platform operators are present in the cluster",
    )
    .await;
}
