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
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use platform_api::{
    ClusterOperator, ClusterOperatorStatusCondition, ClusterVersion, PlatformOperator,
};
use rukpak_api::BundleDeployment;
use serde_json::json;
use testkit::examples::sample::{
    MEMCACHED, MEMCACHED_BD, MEMCACHED_DEPLOYMENT, MEMCACHED_NAMESPACE, METRICS, METRICS_BD,
};
use testkit::stack::{Component, Stack};
use testkit::wait_for;
use tokio::sync::{Mutex, MutexGuard};

/// Installing: resolving, unpacking the wrapper and two bundle images, applying two operators.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(180);
/// Removing an installation.
const REMOVE_TIMEOUT: Duration = Duration::from_secs(180);
/// A status that follows from objects already there.
const STATUS_TIMEOUT: Duration = Duration::from_secs(60);

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
    wait_po_condition(
        fixture,
        client,
        name,
        ("Installed", status, Some(reason)),
        timeout,
    )
    .await
}

/// Waits until PlatformOperator `name`'s condition `type_`, for its current generation,
/// has `status` and (when given) `reason`; returns the PlatformOperator.
async fn wait_po_condition(
    fixture: &Stack,
    client: &Client,
    name: &str,
    (type_, status, reason): (&str, &str, Option<&str>),
    timeout: Duration,
) -> PlatformOperator {
    let api = Api::<PlatformOperator>::all(client.clone());
    wait_for(
        &format!("PlatformOperator {name} to be {type_}={status} ({reason:?})"),
        timeout,
        || async {
            let operator = api.get(name).await.map_err(|e| e.to_string())?;
            let condition = operator
                .status
                .as_ref()
                .and_then(|s| kit::conditions::find(&s.conditions, type_))
                .cloned();
            match &condition {
                Some(c)
                    if c.status == status
                        && reason.is_none_or(|r| c.reason == r)
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
    // The nested package BundleDeployments too: they carry finalizers this stack's
    // provisioners remove, and one left deleting after the stack stops keeps its operator's
    // objects, which the next test binary's installs of the same operator collide with.
    let children = ListParams::default().labels(&format!("deppy.io/resolution={name}"));
    wait_for(
        &format!("PlatformOperator {name}, its ActiveResolution, wrapper and packages to be gone"),
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
                deployments
                    .list(&children)
                    .await
                    .map_err(|e| e.to_string())?
                    .items
                    .len(),
            );
            if left == (false, false, false, 0) {
                Ok(())
            } else {
                Err(format!(
                    "left (po, ar, bd, package bds): {left:?}{}",
                    logs(fixture)
                ))
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
    edit_package(&operators, &name, json!({"versionRange": ">=0.2.0"})).await;
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

/// Merges `package` into PlatformOperator `name`'s `spec.package`.
async fn edit_package(operators: &Api<PlatformOperator>, name: &str, package: serde_json::Value) {
    operators
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"package": package}})),
        )
        .await
        .unwrap();
}

/// Waits until PlatformOperator `name` reports `Progressing=False/UpgradeBlocked` for its
/// current spec with a message containing `expected` (so a block left over from an earlier
/// step does not count), while what runs stays `Installed=True`; returns it and the message.
async fn blocked_upgrade(
    fixture: &Stack,
    client: &Client,
    name: &str,
    expected: &str,
) -> (PlatformOperator, String) {
    let api = Api::<PlatformOperator>::all(client.clone());
    let blocked = wait_for(
        &format!("PlatformOperator {name} to be UpgradeBlocked saying {expected:?}"),
        INSTALL_TIMEOUT,
        || async {
            let operator = api.get(name).await.map_err(|e| e.to_string())?;
            let condition = operator
                .status
                .as_ref()
                .and_then(|s| kit::conditions::find(&s.conditions, "Progressing"))
                .cloned();
            match &condition {
                Some(c)
                    if c.reason == "UpgradeBlocked"
                        && c.observed_generation == operator.metadata.generation
                        && c.message.contains(expected) =>
                {
                    Ok(operator)
                }
                _ => Err(format!("{condition:?}{}", logs(fixture))),
            }
        },
    )
    .await;
    let message = progressing_message(&blocked);
    eprintln!("UpgradeBlocked ({expected}): {message}");
    assert_eq!(
        installed(&blocked).unwrap().status,
        "True",
        "what runs is still installed: {message}"
    );
    (blocked, message)
}

fn progressing_message(operator: &PlatformOperator) -> String {
    operator
        .status
        .as_ref()
        .and_then(|s| kit::conditions::find(&s.conditions, "Progressing"))
        .map(|c| c.message.clone())
        .unwrap_or_default()
}

/// Waits until PlatformOperator `name` reports exactly `expected` (package, version) as
/// installed, with `Progressing=False` (`Succeeded`) for its current generation.
async fn wait_installed_bundles(
    fixture: &Stack,
    client: &Client,
    name: &str,
    expected: &[(&str, &str)],
) -> PlatformOperator {
    let api = Api::<PlatformOperator>::all(client.clone());
    wait_for(
        &format!("PlatformOperator {name} to have installed {expected:?}"),
        INSTALL_TIMEOUT,
        || async {
            let operator = api.get(name).await.map_err(|e| e.to_string())?;
            let status = operator.status.clone().unwrap_or_default();
            let installed: Vec<(String, String)> = status
                .installed_bundles
                .iter()
                .map(|b| (b.package.clone(), b.version.clone()))
                .collect();
            let settled =
                kit::conditions::find(&status.conditions, "Progressing").is_some_and(|c| {
                    c.reason == "Succeeded" && c.observed_generation == operator.metadata.generation
                });
            let want: Vec<(String, String)> = expected
                .iter()
                .map(|(p, v)| ((*p).to_owned(), (*v).to_owned()))
                .collect();
            if installed == want && settled {
                Ok(operator)
            } else {
                Err(format!(
                    "installed {installed:?}, conditions {:?}{}",
                    status.conditions,
                    logs(fixture)
                ))
            }
        },
    )
    .await
}

/// One bundle of the upgrade-graph catalog.
struct GraphBundle<'a> {
    package: &'a str,
    version: &'a str,
    channel: &'a str,
    image: String,
    replaces: Option<&'a str>,
    requires: Option<(&'a str, &'a str)>,
}

/// A file-based catalog of `bundles` (each package's default channel is `stable`).
fn graph_catalog(bundles: &[GraphBundle<'_>]) -> String {
    let mut documents = Vec::new();
    let mut packages: Vec<&str> = bundles.iter().map(|b| b.package).collect();
    packages.sort_unstable();
    packages.dedup();
    for package in packages {
        documents
            .push(json!({"schema": "olm.package", "name": package, "defaultChannel": "stable"}));
        let mut channels: Vec<&str> = bundles
            .iter()
            .filter(|b| b.package == package)
            .map(|b| b.channel)
            .collect();
        channels.sort();
        channels.dedup();
        for channel in channels {
            let entries: Vec<serde_json::Value> = bundles
                .iter()
                .filter(|b| b.package == package && b.channel == channel)
                .map(|b| {
                    let mut entry = json!({"name": format!("{package}.v{}", b.version)});
                    if let Some(replaces) = b.replaces {
                        entry["replaces"] = json!(format!("{package}.v{replaces}"));
                    }
                    entry
                })
                .collect();
            documents.push(json!({"schema": "olm.channel", "package": package, "name": channel, "entries": entries}));
        }
    }
    for bundle in bundles {
        let mut properties = vec![
            json!({"type": "olm.package", "value": {"packageName": bundle.package, "version": bundle.version}}),
        ];
        if let Some((package, range)) = bundle.requires {
            properties.push(json!({"type": "olm.package.required", "value": {"packageName": package, "versionRange": range}}));
        }
        documents.push(json!({
            "schema": "olm.bundle",
            "name": format!("{}.v{}", bundle.package, bundle.version),
            "package": bundle.package,
            "image": bundle.image,
            "properties": properties,
        }));
    }
    documents
        .iter()
        .map(|d| serde_json::to_string(d).unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Serves `bundles` from Catalog `name` (labelled for the stack) through a new immutable
/// ConfigMap `<name>-<version>`, as a catalog update would.
async fn publish_catalog(
    fixture: &Stack,
    client: &Client,
    name: &str,
    version: u32,
    bundles: &[GraphBundle<'_>],
) {
    publish_fbc(fixture, client, name, version, graph_catalog(bundles)).await;
}

/// Serves the file-based catalog `fbc` as [`publish_catalog`] does.
async fn publish_fbc(fixture: &Stack, client: &Client, name: &str, version: u32, fbc: String) {
    use k8s_openapi::api::core::v1::ConfigMap;
    let namespace = fixture.deppy_namespace.as_str();
    let config_map = format!("{name}-{version}");
    let object: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": config_map, "namespace": namespace, "labels": fixture.labels()},
        "immutable": true,
        "data": {"catalog.json": fbc},
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &object)
        .await
        .unwrap();
    let catalog = json!({
        "apiVersion": "deppy.io/v1alpha1", "kind": "Catalog",
        "metadata": {"name": name, "labels": fixture.labels()},
        "spec": {"source": {"configMap": {"name": config_map, "namespace": namespace}}},
    });
    Api::<deppy_api::Catalog>::all(client.clone())
        .patch(
            name,
            &PatchParams::apply("test").force(),
            &Patch::Apply(&catalog),
        )
        .await
        .unwrap();
}

/// The sample memcached-operator 0.2.0 bundle with the `size` field dropped from its CRD:
/// a change the CRD upgrade safety check refuses.
fn unsafe_bundle() -> Vec<u8> {
    let dir = testkit::workspace_path("examples/bundles/memcached-operator.v0.2.0");
    let read = |path: &str| std::fs::read_to_string(dir.join(path)).unwrap();
    let crd = read("manifests/memcacheds.cache.example.com.crd.yaml");
    let without_size = crd.replace(
        "            properties:\n              size:\n                description: How many replicas to run, 0 to 10 (the operator's webhook checks it).\n                type: integer\n",
        "",
    );
    assert_ne!(
        crd, without_size,
        "the sample CRD changed: update unsafe_bundle"
    );
    let csv = read("manifests/memcached-operator.clusterserviceversion.yaml");
    let annotations = read("metadata/annotations.yaml");
    testkit::servers::tar(&[
        (
            "manifests/memcacheds.cache.example.com.crd.yaml",
            without_size.as_bytes(),
        ),
        (
            "manifests/memcached-operator.clusterserviceversion.yaml",
            csv.as_bytes(),
        ),
        ("metadata/annotations.yaml", annotations.as_bytes()),
    ])
}

/// The sample memcached-operator 0.1.0 bundle with 0.2.0's CRD (two versions, v1beta1
/// stored): a bundle 0.2.0 can be downgraded to without removing a stored version. Its
/// operator image is the one published to `registry` (`${REGISTRY}` in the examples).
fn downgradable_bundle(registry: &str) -> Vec<u8> {
    let examples = testkit::workspace_path("examples/bundles");
    let read = |path: &str| std::fs::read_to_string(examples.join(path)).unwrap();
    let crd = read("memcached-operator.v0.2.0/manifests/memcacheds.cache.example.com.crd.yaml");
    let csv =
        read("memcached-operator.v0.1.0/manifests/memcached-operator.clusterserviceversion.yaml")
            .replace("${REGISTRY}", registry);
    let annotations = read("memcached-operator.v0.1.0/metadata/annotations.yaml");
    testkit::servers::tar(&[
        (
            "manifests/memcacheds.cache.example.com.crd.yaml",
            crd.as_bytes(),
        ),
        (
            "manifests/memcached-operator.clusterserviceversion.yaml",
            csv.as_bytes(),
        ),
        ("metadata/annotations.yaml", annotations.as_bytes()),
    ])
}

/// What the operator's Deployment and the child BundleDeployment are: the Deployment's
/// uid (a re-creation would change it) and the version the child's template installs.
async fn running_operator(client: &Client, child: &str) -> (Option<String>, Option<String>) {
    let deployment = Api::<Deployment>::namespaced(client.clone(), MEMCACHED_NAMESPACE)
        .get_opt(MEMCACHED_DEPLOYMENT)
        .await
        .unwrap();
    let child = Api::<BundleDeployment>::all(client.clone())
        .get_opt(child)
        .await
        .unwrap();
    let version = child.and_then(|c| {
        c.spec.template.metadata.and_then(|m| {
            m.annotations
                .get(platform_api::BUNDLE_VERSION_ANNOTATION)
                .cloned()
        })
    });
    (deployment.and_then(|d| d.metadata.uid), version)
}

/// A PlatformOperator follows its catalog's upgrade graph: it upgrades along `replaces`
/// when the catalog gains a version (its dependency too, along its own graph); a channel
/// whose head does not replace what runs, a narrower range and a catalog that drops the
/// installed bundle all leave the running operator exactly as it is, with
/// `Progressing=False` (`UpgradeBlocked`) saying why; `SelfCertified` allows the downgrade.
#[tokio::test]
async fn upgrades_follow_the_catalog_upgrade_graph_and_never_break_what_runs() {
    let fixture = fixture().await;
    let examples = &fixture.examples().await.published;
    let _turn = exclusive().await;
    let client = testkit::client().await;
    let operators = Api::<PlatformOperator>::all(client.clone());
    let catalog = testkit::unique_name("graph");
    let name = testkit::unique_name("graph");
    const DEMO: &str = "graph-demo";
    const DEP: &str = "graph-dep";
    let demo_child =
        rukpak_api::names::bundle_deployment_name(&platform_api::package_bundle_deployment(DEMO));
    let memcached = |version: &str| examples.bundle_image(MEMCACHED, version);
    // 0.1.0 with 0.2.0's CRD, so the self-certified downgrade below is one the CRD upgrade
    // safety check allows: the sample 0.1.0 lacks the version 0.2.0 stores (v1beta1).
    let registry = testkit::servers::CraneRegistry::start();
    let demo_0_1 = registry.push(
        "graph/demo-bundle:v0.1.0",
        &[downgradable_bundle(&examples.registry)],
    );
    let agent = |version: &str| examples.bundle_image(METRICS, version);
    let demo =
        |version: &'static str, channel: &'static str, image: String, replaces| GraphBundle {
            package: DEMO,
            version,
            channel,
            image,
            replaces,
            requires: Some((DEP, ">=1.0.0")),
        };
    let dep = |version: &'static str, replaces| GraphBundle {
        package: DEP,
        version,
        channel: "stable",
        image: agent(if version == "1.0.0" { "1.0.0" } else { "1.1.0" }),
        replaces,
        requires: None,
    };

    // A fresh install: nothing installed, so no `installed` constraint.
    publish_catalog(
        fixture,
        &client,
        &catalog,
        1,
        &[
            demo("0.1.0", "stable", demo_0_1.clone(), None),
            dep("1.0.0", None),
        ],
    )
    .await;
    create(&client, &platform_operator(fixture, &name, DEMO, None)).await;
    wait_installed_bundles(fixture, &client, &name, &[(DEMO, "0.1.0"), (DEP, "1.0.0")]).await;
    let resolution = Api::<ActiveResolution>::all(client.clone())
        .get(&name)
        .await
        .unwrap();
    let constraints: Vec<(String, String)> = resolution
        .spec
        .constraints
        .iter()
        .filter_map(|c| c.installed.as_ref())
        .map(|i| (i.name.clone(), i.version.clone()))
        .collect();
    assert_eq!(
        constraints,
        [
            (DEMO.to_owned(), "0.1.0".to_owned()),
            (DEP.to_owned(), "1.0.0".to_owned())
        ]
    );
    let (deployment_uid, version) = running_operator(&client, &demo_child).await;
    assert!(deployment_uid.is_some(), "the operator Deployment runs");
    assert_eq!(version.as_deref(), Some("0.1.0"));

    // spec.config reaches the operator's own Deployment (OLM's Subscription config), and
    // leaves with it.
    let env_of = |deployment: Option<Deployment>| -> Vec<(String, Option<String>)> {
        deployment
            .and_then(|d| d.spec)
            .and_then(|s| s.template.spec)
            .map(|s| s.containers[0].env.clone().unwrap_or_default())
            .unwrap_or_default()
            .into_iter()
            .map(|e| (e.name, e.value))
            .collect()
    };
    let operator_deployments = Api::<Deployment>::namespaced(client.clone(), MEMCACHED_NAMESPACE);
    let log_level = ("LOG_LEVEL".to_owned(), Some("debug".to_owned()));
    operators
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"config": {"deploymentConfig": {"env": [{"name": "LOG_LEVEL", "value": "debug"}]}}}})),
        )
        .await
        .unwrap();
    let wait_env = |present: bool| {
        let (operator_deployments, log_level) = (&operator_deployments, &log_level);
        async move {
            wait_for(
                &format!("LOG_LEVEL on the operator's Deployment to be {present}"),
                INSTALL_TIMEOUT,
                || async move {
                    let env = env_of(
                        operator_deployments
                            .get_opt(MEMCACHED_DEPLOYMENT)
                            .await
                            .map_err(|e| e.to_string())?,
                    );
                    if env.contains(log_level) == present {
                        Ok(())
                    } else {
                        Err(format!("env {env:?}{}", logs(fixture)))
                    }
                },
            )
            .await;
        }
    };
    wait_env(true).await;
    assert_eq!(
        running_operator(&client, &demo_child).await.0,
        deployment_uid,
        "updated in place"
    );
    operators
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"config": null}})),
        )
        .await
        .unwrap();
    wait_env(false).await;

    // (1) The catalog gains 0.2.0 replacing 0.1.0, and the dependency 1.1.0 replacing
    // 1.0.0: both move along their own graph.
    let v2 = |extra: Vec<GraphBundle<'static>>| {
        let mut bundles = vec![
            demo("0.1.0", "stable", demo_0_1.clone(), None),
            demo("0.2.0", "stable", memcached("0.2.0"), Some("0.1.0")),
            dep("1.0.0", None),
            dep("1.1.0", Some("1.0.0")),
        ];
        bundles.extend(extra);
        bundles
    };
    publish_catalog(fixture, &client, &catalog, 2, &v2(vec![])).await;
    wait_installed_bundles(fixture, &client, &name, &[(DEMO, "0.2.0"), (DEP, "1.1.0")]).await;
    let (uid, version) = running_operator(&client, &demo_child).await;
    assert_eq!(uid, deployment_uid, "upgraded in place");
    assert_eq!(version.as_deref(), Some("0.2.0"));
    assert!(
        child_image(
            &Api::<BundleDeployment>::all(client.clone())
                .get(&demo_child)
                .await
                .unwrap()
        )
        .ends_with(":v0.2.0")
    );

    // (6) The catalog deprecates the installed bundle and its channel: the conditions say
    // so with the catalog's words, nothing moves, and they clear with the notices.
    let notices = json!({
        "schema": "olm.deprecations",
        "package": DEMO,
        "entries": [
            {"reference": {"schema": "olm.bundle", "name": format!("{DEMO}.v0.2.0")}, "message": "0.2.0 leaks connections: move to 0.2.1 when it ships"},
            {"reference": {"schema": "olm.channel", "name": "stable"}, "message": "stable is frozen: use the fast channel"},
        ],
    });
    publish_fbc(
        fixture,
        &client,
        &catalog,
        20,
        format!("{}\n{notices}", graph_catalog(&v2(vec![]))),
    )
    .await;
    let deprecated = wait_po_condition(
        fixture,
        &client,
        &name,
        ("Deprecated", "True", None),
        STATUS_TIMEOUT,
    )
    .await;
    let conditions = deprecated.status.clone().unwrap().conditions;
    let of = |type_: &str| kit::conditions::find(&conditions, type_).cloned().unwrap();
    assert_eq!(
        of("Deprecated").message,
        "stable is frozen: use the fast channel; 0.2.0 leaks connections: move to 0.2.1 when it ships"
    );
    assert_eq!(
        (
            of("BundleDeprecated").status.as_str(),
            of("ChannelDeprecated").status.as_str()
        ),
        ("True", "True")
    );
    assert_eq!(of("PackageDeprecated").status, "False");
    assert_eq!(installed(&deprecated).unwrap().status, "True");
    assert_eq!(
        running_operator(&client, &demo_child).await,
        (deployment_uid.clone(), Some("0.2.0".to_owned()))
    );
    publish_catalog(fixture, &client, &catalog, 21, &v2(vec![])).await;
    wait_po_condition(
        fixture,
        &client,
        &name,
        ("Deprecated", "False", None),
        STATUS_TIMEOUT,
    )
    .await;

    // (2) A channel whose head (0.3.0) does not replace the installed 0.2.0: not taken.
    publish_catalog(
        fixture,
        &client,
        &catalog,
        3,
        &v2(vec![demo("0.3.0", "fast", memcached("0.2.0"), None)]),
    )
    .await;
    edit_package(&operators, &name, json!({"channel": "fast"})).await;
    let (_, message) = blocked_upgrade(fixture, &client, &name, "it is not in channel fast").await;
    assert!(message.contains(&format!("{DEMO} 0.2.0")), "{message}");
    assert!(message.contains("fast"), "{message}");
    assert_eq!(
        running_operator(&client, &demo_child).await,
        (deployment_uid.clone(), Some("0.2.0".to_owned()))
    );
    wait_co(
        fixture,
        &client,
        "Progressing",
        "False",
        "PlatformOperatorUpgradeBlocked",
        &name,
    )
    .await;

    // (3) A narrower range asks for a downgrade: refused, then allowed when the
    // administrator self-certifies it.
    edit_package(
        &operators,
        &name,
        json!({"channel": null, "versionRange": "<0.2.0"}),
    )
    .await;
    let (_, message) = blocked_upgrade(fixture, &client, &name, "it is not in range <0.2.0").await;
    assert!(message.contains("<0.2.0"), "{message}");
    assert_eq!(
        running_operator(&client, &demo_child).await,
        (deployment_uid.clone(), Some("0.2.0".to_owned()))
    );
    edit_package(
        &operators,
        &name,
        json!({"upgradeConstraintPolicy": "SelfCertified"}),
    )
    .await;
    wait_installed_bundles(fixture, &client, &name, &[(DEMO, "0.1.0"), (DEP, "1.1.0")]).await;
    assert_eq!(
        running_operator(&client, &demo_child).await.1.as_deref(),
        Some("0.1.0")
    );

    // Back under the catalog's graph with no range: 0.1.0 moves to its successor 0.2.0,
    // not to the fast channel's 0.3.0.
    edit_package(
        &operators,
        &name,
        json!({"upgradeConstraintPolicy": null, "versionRange": null}),
    )
    .await;
    wait_installed_bundles(fixture, &client, &name, &[(DEMO, "0.2.0"), (DEP, "1.1.0")]).await;

    // SelfCertified is no licence to break stored objects: a bundle whose CRD drops a field
    // is refused by the CRD upgrade safety check, nothing of it is applied, and the
    // PlatformOperator names the CRD and the field.
    let unsafe_image = registry.push("graph/unsafe-bundle:v0.0.9", &[unsafe_bundle()]);
    publish_catalog(
        fixture,
        &client,
        &catalog,
        30,
        &v2(vec![demo("0.0.9", "unsafe", unsafe_image, None)]),
    )
    .await;
    edit_package(
        &operators,
        &name,
        json!({"channel": "unsafe", "upgradeConstraintPolicy": "SelfCertified"}),
    )
    .await;
    let refused = wait_for(
        "the unsafe CRD change to be refused",
        INSTALL_TIMEOUT,
        || async {
            let operator = operators.get(&name).await.map_err(|e| e.to_string())?;
            match installed(&operator) {
                Some(c)
                    if c.status == "False"
                        && c.message.contains("memcacheds.cache.example.com") =>
                {
                    Ok(operator)
                }
                other => Err(format!("{other:?}{}", logs(fixture))),
            }
        },
    )
    .await;
    let message = installed(&refused).unwrap().message;
    eprintln!("CRD upgrade safety: {message}");
    assert!(message.contains("size"), "names the field: {message}");
    let crd = Api::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>::all(client.clone())
        .get("memcacheds.cache.example.com")
        .await
        .unwrap();
    let schema = serde_json::to_value(&crd.spec.versions[0].schema).unwrap();
    assert!(
        schema["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"].is_object(),
        "the stored CRD keeps its field"
    );
    assert_eq!(
        running_operator(&client, &demo_child).await.0,
        deployment_uid
    );
    assert_eq!(
        refused
            .status
            .unwrap()
            .installed_bundles
            .iter()
            .find(|b| b.package == DEMO)
            .map(|b| b.version.as_str()),
        Some("0.2.0"),
        "what runs is still known while the pivot is refused"
    );
    edit_package(
        &operators,
        &name,
        json!({"channel": null, "upgradeConstraintPolicy": null}),
    )
    .await;
    wait_installed_bundles(fixture, &client, &name, &[(DEMO, "0.2.0"), (DEP, "1.1.0")]).await;

    // A catalog update whose channel has two heads (0.2.0 and 0.2.5 both replace 0.1.0):
    // the package is set aside with the catalog's error, and what runs stays.
    publish_catalog(
        fixture,
        &client,
        &catalog,
        31,
        &v2(vec![demo(
            "0.2.5",
            "stable",
            memcached("0.2.0"),
            Some("0.1.0"),
        )]),
    )
    .await;
    let (_, message) = blocked_upgrade(fixture, &client, &name, "several heads").await;
    assert!(message.contains("heads"), "{message}");
    assert!(message.contains(&format!("{DEMO}.v0.2.5")), "{message}");
    assert_eq!(
        running_operator(&client, &demo_child).await,
        (deployment_uid.clone(), Some("0.2.0".to_owned()))
    );

    // (4) The catalog drops the installed bundle: nothing is uninstalled or moved.
    publish_catalog(
        fixture,
        &client,
        &catalog,
        4,
        &[
            demo("0.3.0", "stable", memcached("0.2.0"), None),
            dep("1.0.0", None),
            dep("1.1.0", Some("1.0.0")),
        ],
    )
    .await;
    let (blocked, message) =
        blocked_upgrade(fixture, &client, &name, "which no catalog offers any more").await;
    assert!(message.contains("0.2.0"), "{message}");
    assert_eq!(
        running_operator(&client, &demo_child).await,
        (deployment_uid.clone(), Some("0.2.0".to_owned()))
    );
    let status = blocked.status.unwrap();
    assert_eq!(
        status.installed_bundles.len(),
        2,
        "{:?}",
        status.installed_bundles
    );

    delete_and_wait_gone(fixture, &client, &name).await;
    Api::<deppy_api::Catalog>::all(client.clone())
        .delete(&catalog, &DeleteParams::default())
        .await
        .unwrap();
}
