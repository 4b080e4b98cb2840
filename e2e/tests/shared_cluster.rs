//! Shared-cluster mode as docs/operations.md sets it up: the provisioners run with
//! `--default-service-account` (the tenants' default identity) and platform-operators with
//! `--install-service-account`, both from the docs' recipe, run as written. PlatformOperators
//! and administrators' BundleDeployments keep installing; a tenant's BundleDeployment without
//! `serviceAccount` applies as the tenants' default and can do no more than it.
//!
//! It needs controllers started with settings of their own, so it has a stack of its own and
//! does not run in deployed mode.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use e2e::TIMEOUT;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use platform_api::PlatformOperator;
use rukpak_api::BundleDeployment;
use serde_json::json;
use testkit::examples::sample;
use testkit::stack::{Component, Stack};
use testkit::users::impersonating;
use testkit::{unique_name, wait_for};

#[tokio::test]
async fn platform_operators_administrators_and_tenants_install_in_shared_cluster_mode() {
    let admin = testkit::client().await;
    testkit::install_admission(&admin).await;
    let recipe = e2e::shared_cluster_recipe();
    let default = recipe.tenant_default.to_string();
    let installer = recipe.installer.to_string();
    let stack = Stack::start_with_env(
        &Component::ALL,
        &[
            ("DEFAULT_SERVICE_ACCOUNT", default.as_str()),
            ("INSTALL_SERVICE_ACCOUNT", installer.as_str()),
        ],
    )
    .await;
    let examples = stack.examples().await;
    let _ = &examples.catalog;

    // A PlatformOperator installs as the install identity, wrapper and children alike, and
    // its operator runs.
    let po_name = unique_name("memcached");
    let po: PlatformOperator = serde_json::from_value(json!({
        "apiVersion": "platform.openshift.io/v1alpha1", "kind": "PlatformOperator",
        "metadata": { "name": po_name, "labels": stack.labels() },
        "spec": { "package": { "name": sample::MEMCACHED } }
    }))
    .unwrap();
    let pos: Api<PlatformOperator> = Api::all(admin.clone());
    pos.create(&PostParams::default(), &po).await.unwrap();
    e2e::wait_condition(&admin, &po_name, "Installed", "True").await;
    let deployments: Api<BundleDeployment> = Api::all(admin.clone());
    for name in [po_name.as_str(), sample::MEMCACHED_BD] {
        let bd = deployments.get(name).await.unwrap();
        assert_eq!(
            bd.spec.service_account.as_ref(),
            Some(&recipe.installer),
            "{name} applies as the install identity"
        );
    }
    e2e::wait_available(
        &admin,
        (sample::MEMCACHED_NAMESPACE, sample::MEMCACHED_DEPLOYMENT),
    )
    .await;

    // An administrator's BundleDeployment naming the install identity installs a
    // cluster-wide object; without a serviceAccount it applies as the tenants' default and is
    // refused whole.
    let admin_ns = unique_name("admin-ns");
    let files = [
        (
            "00-ns.yaml".to_owned(),
            format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {admin_ns}\n"),
        ),
        (
            "cm.yaml".to_owned(),
            e2e::config_map_manifest(&admin_ns, "settings"),
        ),
    ];
    let named = unique_name("admin-named");
    let source = e2e::bundle_config_map(&admin, &stack, &named, &files).await;
    let mut bd = serde_json::to_value(e2e::plain_deployment(&stack, &named, source)).unwrap();
    bd["spec"]["serviceAccount"] =
        json!({ "namespace": recipe.installer.namespace, "name": recipe.installer.name });
    let bd: BundleDeployment = serde_json::from_value(bd).unwrap();
    deployments
        .create(&PostParams::default(), &bd)
        .await
        .unwrap();
    e2e::wait_condition(&admin, &named, "Installed", "True").await;

    let unnamed = unique_name("admin-unnamed");
    let other_ns = unique_name("other-ns");
    let source = e2e::bundle_config_map(
        &admin,
        &stack,
        &unnamed,
        &[(
            "00-ns.yaml".to_owned(),
            format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {other_ns}\n"),
        )],
    )
    .await;
    let bd = e2e::plain_deployment(&stack, &unnamed, source);
    deployments
        .create(&PostParams::default(), &bd)
        .await
        .unwrap();
    let message = e2e::wait_condition(&admin, &unnamed, "Installed", "False").await;
    assert!(
        message.contains(&recipe.tenant_default.username()),
        "applies as the tenants' default: {message}"
    );

    // The tenant installs into her namespace as her account.
    let alice = impersonating(&recipe.tenant).await;
    let hers = unique_name("hers");
    let source = e2e::bundle_config_map(
        &admin,
        &stack,
        &hers,
        &[(
            "cm.yaml".to_owned(),
            e2e::config_map_manifest(&recipe.team, &hers),
        )],
    )
    .await;
    let mut bd = serde_json::to_value(e2e::plain_deployment(&stack, &hers, source)).unwrap();
    bd["spec"]["serviceAccount"] = json!({ "namespace": recipe.team, "name": "deployer" });
    let bd: BundleDeployment = serde_json::from_value(bd).unwrap();
    e2e::let_read(&admin, &recipe.tenant, &hers).await;
    let tenant_api: Api<BundleDeployment> = Api::all(alice.clone());
    wait_for(
        "the tenant's BundleDeployment to be admitted",
        Duration::from_secs(60),
        || async {
            tenant_api
                .create(&PostParams::default(), &bd)
                .await
                .map_err(|e| e.to_string())
        },
    )
    .await;
    e2e::wait_condition(&admin, &hers, "Installed", "True").await;
    Api::<ConfigMap>::namespaced(admin.clone(), &recipe.team)
        .get(&hers)
        .await
        .unwrap();

    for name in [&hers, &named, &unnamed] {
        testkit::delete_and_wait(&deployments, name, TIMEOUT).await;
    }
    let _ = pos.delete(&po_name, &DeleteParams::foreground()).await;
    wait_for("the sample operator to be uninstalled", TIMEOUT, || async {
        match deployments
            .get_opt(sample::MEMCACHED_BD)
            .await
            .map_err(|e| e.to_string())?
        {
            None => Ok(()),
            Some(_) => Err("still installed".to_owned()),
        }
    })
    .await;
}
