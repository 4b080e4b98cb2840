//! `kubectl olm` against the real control plane (`KUBECONFIG`, as `make test` provides):
//! the commands that read and write the cluster, as an administrator and as a user who
//! may not install.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Output};

use deppy_api::{ActiveResolution, Catalog};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use platform_api::PlatformOperator;
use rukpak_api::BundleDeployment;
use serde_json::json;

fn olm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kubectl-olm"))
        .args(args)
        .output()
        .unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

#[tokio::test]
async fn catalogs_are_listed_with_whether_they_serve_and_why_not() {
    let client = testkit::client().await;
    testkit::install_crds(&client).await;
    let name = testkit::unique_name("olm-catalogs");
    let catalogs: Api<Catalog> = Api::all(client);
    let catalog: Catalog = serde_json::from_value(json!({
        "apiVersion": "deppy.io/v1alpha1", "kind": "Catalog",
        "metadata": {"name": name},
        "spec": {"source": {"image": {"ref": "registry.example.com/catalog:latest"}}},
    }))
    .unwrap();
    catalogs
        .create(&PostParams::default(), &catalog)
        .await
        .unwrap();
    // What deppy-resolver would write when the image cannot be pulled.
    catalogs
        .patch_status(
            &name,
            &PatchParams::apply("deppy-resolver").force(),
            &Patch::Apply(json!({
                "apiVersion": "deppy.io/v1alpha1", "kind": "Catalog",
                "status": {"conditions": [{
                    "type": "Serving", "status": "False", "reason": "UnpackFailed",
                    "message": "failed to pull registry.example.com/catalog:latest: not found",
                    "lastTransitionTime": "2026-11-29T00:00:00Z"}]},
            })),
        )
        .await
        .unwrap();

    let listed = olm(&["catalogs", "-o", "json"]);
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    let rows: Vec<serde_json::Value> = serde_json::from_str(&stdout(&listed)).unwrap();
    let row = rows.iter().find(|r| r["name"] == name.as_str()).unwrap();
    assert_eq!(row["source"], "registry.example.com/catalog:latest");
    assert_eq!(row["serving"], "False");
    assert_eq!(
        row["message"],
        "failed to pull registry.example.com/catalog:latest: not found"
    );
    // Other tests' Catalogs share the table, so its columns may be wider: compare cells.
    let table = stdout(&olm(&["catalogs"]));
    let line = table
        .lines()
        .find(|l| l.starts_with(name.as_str()))
        .unwrap();
    let cells: Vec<&str> = line
        .split("  ")
        .map(str::trim)
        .filter(|cell| !cell.is_empty())
        .collect();
    assert_eq!(
        cells,
        [
            name.as_str(),
            "False",
            "-",
            "-",
            "registry.example.com/catalog:latest",
            "failed to pull registry.example.com/catalog:latest: not found"
        ],
        "{line}"
    );
    catalogs
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
}

#[tokio::test]
async fn install_creates_a_platform_operator_and_uninstall_deletes_it_as_the_user() {
    let client = testkit::client().await;
    testkit::install_crds(&client).await;
    testkit::install_admission(&client).await;
    let name = testkit::unique_name("olm-install");
    let operators: Api<PlatformOperator> = Api::all(client);

    let installed = olm(&[
        "install",
        "etcd-operator",
        "--name",
        &name,
        "--channel",
        "stable",
        "--version",
        ">=0.9.0 <2.0.0",
    ]);
    assert_eq!(installed.status.code(), Some(0), "{}", stderr(&installed));
    assert_eq!(
        stdout(&installed),
        format!(
            "platformoperator/{name} created: installing package etcd-operator; follow it with `kubectl get platformoperator {name} -w`\n"
        )
    );
    let created = operators.get(&name).await.unwrap();
    assert_eq!(created.spec.package.name, "etcd-operator");
    assert_eq!(created.spec.package.channel.as_deref(), Some("stable"));
    assert_eq!(
        created.spec.package.version_range.as_deref(),
        Some(">=0.9.0 <2.0.0")
    );

    // Again: the API server's refusal, as a sentence, exit code 2.
    let again = olm(&["install", "etcd-operator", "--name", &name]);
    assert_eq!(again.status.code(), Some(2));
    let message = stderr(&again);
    assert!(
        message.starts_with(&format!(
            "kubectl olm: the API server refused to create PlatformOperator {name}: "
        )) && message.contains("already exists"),
        "{message}"
    );

    // A user who is not a cluster administrator may not install, nor uninstall.
    let other = testkit::unique_name("olm-mallory");
    let forbidden = olm(&[
        "install",
        "etcd-operator",
        "--name",
        &other,
        "--as",
        "mallory",
    ]);
    assert_eq!(forbidden.status.code(), Some(2));
    assert!(
        stderr(&forbidden).contains("forbidden"),
        "{}",
        stderr(&forbidden)
    );
    assert!(operators.get_opt(&other).await.unwrap().is_none());
    let kept = olm(&["uninstall", &name, "--as", "mallory"]);
    assert_eq!(kept.status.code(), Some(2));
    assert!(operators.get_opt(&name).await.unwrap().is_some());

    let uninstalled = olm(&["uninstall", &name]);
    assert_eq!(
        uninstalled.status.code(),
        Some(0),
        "{}",
        stderr(&uninstalled)
    );
    testkit::wait_for(
        "the PlatformOperator to be gone",
        std::time::Duration::from_secs(30),
        || async {
            match operators.get_opt(&name).await {
                Ok(None) => Ok(()),
                Ok(Some(_)) => Err("still there".to_owned()),
                Err(err) => Err(err.to_string()),
            }
        },
    )
    .await;
    let gone = olm(&["uninstall", &name]);
    assert_eq!(gone.status.code(), Some(1));
    assert!(stderr(&gone).contains("not found"), "{}", stderr(&gone));
}

#[test]
fn an_unreadable_kubeconfig_is_exit_code_3_naming_the_file() {
    let output = olm(&["catalogs", "--kubeconfig", "/nonexistent/kubeconfig"]);
    assert_eq!(output.status.code(), Some(3));
    assert!(
        stderr(&output)
            .starts_with("kubectl olm: cannot read kubeconfig /nonexistent/kubeconfig: "),
        "{}",
        stderr(&output)
    );
}

/// Applies `status` to the status subresource of `api`'s object `name`, as a controller
/// would write it.
async fn write_status<K>(
    api: &Api<K>,
    name: &str,
    api_version: &str,
    kind: &str,
    status: serde_json::Value,
) where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.patch_status(
        name,
        &PatchParams::apply("kubectl-olm-test").force(),
        &Patch::Apply(json!({"apiVersion": api_version, "kind": kind, "status": status})),
    )
    .await
    .unwrap();
}

/// Creates the object `value` describes with `api`.
async fn create<K>(api: &Api<K>, value: serde_json::Value)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    api.create(
        &PostParams::default(),
        &serde_json::from_value(value).unwrap(),
    )
    .await
    .unwrap();
}

/// A BundleDeployment of the plain class, with `labels`.
fn bundle_deployment(name: &str, labels: serde_json::Value) -> serde_json::Value {
    json!({
        "apiVersion": "core.rukpak.io/v1alpha1", "kind": "BundleDeployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {"provisionerClassName": "core-rukpak-io-plain", "template": {"spec": {
            "provisionerClassName": "core-rukpak-io-plain",
            "source": {"type": "image", "image": {"ref": "registry.example.com/b:v1"}}}}},
    })
}

/// A PlatformOperator for etcd-operator, with `spec` added.
fn platform_operator(name: &str, spec: serde_json::Value) -> serde_json::Value {
    let mut value = json!({
        "apiVersion": "platform.openshift.io/v1alpha1", "kind": "PlatformOperator",
        "metadata": {"name": name}, "spec": {"package": {"name": "etcd-operator"}},
    });
    if let (Some(all), Some(more)) = (value["spec"].as_object_mut(), spec.as_object()) {
        all.extend(more.clone());
    }
    value
}

fn condition(type_: &str, status: &str, reason: &str, message: &str) -> serde_json::Value {
    json!({"type": type_, "status": status, "reason": reason, "message": message,
        "lastTransitionTime": "2026-11-29T00:00:00Z"})
}

#[tokio::test]
async fn status_draws_what_a_platform_operator_made_with_the_health_of_each_part() {
    let client = testkit::client().await;
    testkit::install_crds(&client).await;
    testkit::install_admission(&client).await;
    let namespace = testkit::TestNamespace::create(&client, "olm-status").await;
    let ns = namespace.name().to_owned();
    let name = testkit::unique_name("olm-status");
    let child = format!("package-{name}");

    // What the controllers would have made: the PlatformOperator, its ActiveResolution,
    // the wrapper BundleDeployment and one child, and the operator's Deployment (0
    // replicas, so its readiness does not depend on the simulated node).
    let operators: Api<PlatformOperator> = Api::all(client.clone());
    create(&operators, platform_operator(&name, json!({}))).await;
    write_status(
        &operators,
        &name,
        "platform.openshift.io/v1alpha1",
        "PlatformOperator",
        json!({
        "conditions": [
            condition("Installed", "False", "InstallFailed", "the operator is not healthy"),
            condition("Progressing", "False", "Settled", "nothing to do"),
        ]}),
    )
    .await;
    let resolutions: Api<ActiveResolution> = Api::all(client.clone());
    create(
        &resolutions,
        json!({
            "apiVersion": "deppy.io/v1alpha1", "kind": "ActiveResolution",
            "metadata": {"name": name},
            "spec": {"constraints": [{"required": {"name": "etcd-operator"}}]},
        }),
    )
    .await;
    write_status(
        &resolutions,
        &name,
        "deppy.io/v1alpha1",
        "ActiveResolution",
        json!({
        "conditions": [
            condition("Resolved", "True", "Resolved", "resolved"),
            condition("Activated", "True", "Activated", "activated"),
        ]}),
    )
    .await;
    let deployments: Api<BundleDeployment> = Api::all(client.clone());
    for bd in [&name, &child] {
        create(&deployments, bundle_deployment(bd, json!({}))).await;
    }
    write_status(
        &deployments,
        &name,
        "core.rukpak.io/v1alpha1",
        "BundleDeployment",
        json!({
        "activeBundle": format!("{name}-1"),
        "inventory": [{"group": "core.rukpak.io", "version": "v1alpha1",
            "kind": "BundleDeployment", "name": child}],
        "conditions": [
            condition("Installed", "True", "InstallationSucceeded", "installed"),
            condition("Healthy", "True", "Healthy", "healthy"),
        ]}),
    )
    .await;
    write_status(&deployments, &child, "core.rukpak.io/v1alpha1", "BundleDeployment", json!({
        "activeBundle": format!("{child}-2"),
        "inventory": [
            {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": ns, "name": "manager"},
            {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": ns, "name": "gone"},
            {"group": "", "version": "v1", "kind": "ServiceAccount", "namespace": ns, "name": "manager"},
        ],
        "conditions": [
            condition("Installed", "True", "InstallationSucceeded", "installed"),
            condition("Healthy", "False", "Unhealthy", "Deployment manager: 0 of 1 replicas available"),
        ]})).await;
    let apps: Api<k8s_openapi::api::apps::v1::Deployment> = Api::namespaced(client.clone(), &ns);
    apps.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "metadata": {"name": "manager"},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "manager"}},
                "template": {"metadata": {"labels": {"app": "manager"}},
                    "spec": {"containers": [{"name": "manager", "image": "registry.example.com/manager:v1"}]}}},
        }))
        .unwrap(),
    )
    .await
    .unwrap();

    let shown = olm(&["status", &name]);
    assert_eq!(shown.status.code(), Some(0), "{}", stderr(&shown));
    let expected = [
        format!("PlatformOperator {name}: Installed=False, Progressing=False"),
        "    InstallFailed: the operator is not healthy".to_owned(),
        format!("└─ ActiveResolution {name}: Resolved=True, Activated=True"),
        format!("   └─ BundleDeployment {name}: Installed=True, Healthy=True, Bundle {name}-1"),
        format!(
            "      └─ BundleDeployment {child}: Installed=True, Healthy=False, Bundle {child}-2"
        ),
        "             Unhealthy: Deployment manager: 0 of 1 replicas available".to_owned(),
        format!("         ├─ Deployment {ns}/manager: 0/0 ready"),
        format!("         └─ Deployment {ns}/gone: missing"),
    ];
    assert_eq!(stdout(&shown), expected.join("\n") + "\n");
    let json = olm(&["status", &name, "-o", "json"]);
    let trees: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(
        trees[0]["children"][0]["children"][0]["children"][0]["name"],
        child.as_str()
    );

    // A PlatformOperator that does not exist: nothing found.
    let unknown = olm(&["status", "no-such-operator"]);
    assert_eq!(unknown.status.code(), Some(1));

    for bd in [&name, &child] {
        deployments
            .delete(bd, &DeleteParams::default())
            .await
            .unwrap();
    }
    resolutions
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    operators
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    namespace.delete().await;
}

#[tokio::test]
async fn plan_shows_what_waits_and_approve_approves_exactly_that_digest() {
    let client = testkit::client().await;
    testkit::install_crds(&client).await;
    testkit::install_admission(&client).await;
    let name = testkit::unique_name("olm-approve");
    let child = format!("package-{name}");
    let digest = format!("sha256:{}", "ab".repeat(32));

    let operators: Api<PlatformOperator> = Api::all(client.clone());
    create(
        &operators,
        platform_operator(&name, json!({"upgradeApproval": "Manual"})),
    )
    .await;
    let deployments: Api<BundleDeployment> = Api::all(client.clone());
    for (bd, labels) in [
        (&name, json!({})),
        (
            &child,
            json!({"core.rukpak.io/owner-kind": "BundleDeployment", "core.rukpak.io/owner-name": name}),
        ),
    ] {
        create(&deployments, bundle_deployment(bd, labels)).await;
    }
    write_status(
        &deployments,
        &name,
        "core.rukpak.io/v1alpha1",
        "BundleDeployment",
        json!({
        "inventory": [{"group": "core.rukpak.io", "version": "v1alpha1",
            "kind": "BundleDeployment", "name": child}]}),
    )
    .await;
    write_status(
        &deployments,
        &child,
        "core.rukpak.io/v1alpha1",
        "BundleDeployment",
        json!({
        "pendingRevision": {
            "revision": 2, "bundle": format!("{child}-2"), "digest": digest,
            "added": ["Deployment etcd/etcd-operator-metrics"],
            "permissionsAdded": ["ClusterRole etcd-operator: get, list, watch secrets"],
        }}),
    )
    .await;

    let plan = olm(&["plan", &name]);
    assert_eq!(plan.status.code(), Some(0), "{}", stderr(&plan));
    assert_eq!(
        stdout(&plan),
        format!(
            "BundleDeployment {child}: revision 2 is waiting for approval\n  bundle: {child}-2\n  digest: {digest}\n\n\
             To approve it:\n  kubectl olm approve {name} --digest {digest}\n\n\
             Added (1):\n  - Deployment etcd/etcd-operator-metrics\n\n\
             Permissions added (1):\n  - ClusterRole etcd-operator: get, list, watch secrets\n"
        )
    );

    // A digest that is not the one waiting approves nothing.
    let other = format!("sha256:{}", "cd".repeat(32));
    let wrong = olm(&["approve", &name, "--digest", &other]);
    assert_eq!(wrong.status.code(), Some(2));
    assert!(
        stderr(&wrong).contains("nothing was approved"),
        "{}",
        stderr(&wrong)
    );
    assert_eq!(
        operators.get(&name).await.unwrap().spec.approved_revision,
        None
    );
    // Nor does someone who may not change the PlatformOperator.
    let forbidden = olm(&["approve", &name, "--digest", &digest, "--as", "mallory"]);
    assert_eq!(forbidden.status.code(), Some(2));
    assert!(
        stderr(&forbidden).contains("forbidden"),
        "{}",
        stderr(&forbidden)
    );
    assert_eq!(
        operators.get(&name).await.unwrap().spec.approved_revision,
        None
    );
    // The child's own spec would be overwritten by its wrapper: refused, naming where.
    let managed = olm(&["approve", &child]);
    assert_eq!(managed.status.code(), Some(2));
    assert!(
        stderr(&managed).contains(&format!(
            "approve through its PlatformOperator: kubectl olm approve {name}"
        )),
        "{}",
        stderr(&managed)
    );

    let approved = olm(&["approve", &name, "--digest", &digest]);
    assert_eq!(approved.status.code(), Some(0), "{}", stderr(&approved));
    assert_eq!(
        stdout(&approved),
        format!("approved revision 2 of BundleDeployment {child} ({digest})\n")
    );
    assert_eq!(
        operators
            .get(&name)
            .await
            .unwrap()
            .spec
            .approved_revision
            .as_deref(),
        Some(digest.as_str())
    );

    // Nothing waits under the wrapper alone once its status says so.
    write_status(
        &deployments,
        &child,
        "core.rukpak.io/v1alpha1",
        "BundleDeployment",
        json!({}),
    )
    .await;
    let nothing = olm(&["plan", &name]);
    assert_eq!(nothing.status.code(), Some(1));
    assert_eq!(
        stderr(&nothing),
        format!("kubectl olm: nothing under {name} waits for approval\n")
    );

    for bd in [&name, &child] {
        deployments
            .delete(bd, &DeleteParams::default())
            .await
            .unwrap();
    }
    operators
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
}
