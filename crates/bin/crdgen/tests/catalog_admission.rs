//! `deploy/admission/catalog-references-policy.yaml`: a Catalog may name only the pull
//! Secret and ConfigMap its author may read.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use kube::api::{DynamicObject, GroupVersionKind, PostParams};
use kube::discovery::ApiResource;
use kube::{Api, Client};
use serde_json::json;
use testkit::users::{grant, impersonating};
use testkit::{client, install_crds, unique_name, wait_for};

async fn catalog_author(admin: &Client) -> (String, Api<DynamicObject>) {
    let user = unique_name("dave");
    grant(
        admin,
        &user,
        &user,
        json!([{ "apiGroups": ["deppy.io"], "resources": ["catalogs"], "verbs": ["create"] }]),
    )
    .await;
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("deppy.io", "v1alpha1", "Catalog"));
    let catalogs = Api::all_with(impersonating(&user).await, &resource);
    (user, catalogs)
}

fn catalog(source: serde_json::Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "deppy.io/v1alpha1", "kind": "Catalog",
        "metadata": { "name": unique_name("catalog") }, "spec": { "source": source }
    }))
    .unwrap()
}

#[tokio::test]
async fn a_catalog_may_name_only_secrets_and_configmaps_its_author_may_read() {
    let admin = client().await;
    install_crds(&admin).await;
    testkit::install_admission(&admin).await;
    let (user, catalogs) = catalog_author(&admin).await;
    let cases = [
        (
            catalog(
                json!({ "image": { "ref": "registry.example/catalog:1", "pullSecret": "index-creds" } }),
            ),
            format!(
                "user \"{user}\" may not read Secret \"index-creds\" in namespace deppy-system named in spec.source.image.pullSecret"
            ),
        ),
        (
            catalog(
                json!({ "configMap": { "name": "cluster-config", "namespace": "kube-system" } }),
            ),
            format!(
                "user \"{user}\" may not read ConfigMap \"cluster-config\" in namespace kube-system named in spec.source.configMap"
            ),
        ),
    ];
    for (object, expected) in cases {
        wait_for("the catalog denial", Duration::from_secs(60), || async {
            match catalogs.create(&PostParams::default(), &object).await {
                Ok(_) => panic!("admitted: {object:?}"),
                Err(err) if err.to_string().contains(&expected) => Ok(()),
                Err(err) => Err(err.to_string()),
            }
        })
        .await;
    }
    // A Catalog that names nothing secret is the author's to create.
    let plain = catalog(json!({ "image": { "ref": "registry.example/catalog:1" } }));
    wait_for("a plain catalog", Duration::from_secs(60), || async {
        catalogs
            .create(&PostParams::default(), &plain)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    })
    .await;
}
