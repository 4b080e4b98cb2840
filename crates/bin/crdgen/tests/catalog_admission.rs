//! `deploy/admission/catalog-references-policy.yaml`: a Catalog may name only the pull
//! Secret and ConfigMap its author may read; `catalog-writers-policy.yaml`: only holders of
//! the verb `manage` on Catalogs (curators) may create, change or delete one, whatever else
//! RBAC grants.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use kube::api::{DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use kube::{Api, Client};
use serde_json::json;
use testkit::users::{grant, impersonating};
use testkit::{client, install_crds, unique_name, wait_for};

/// A user with `verbs` on Catalogs.
async fn catalog_author(admin: &Client, verbs: &[&str]) -> (String, Api<DynamicObject>) {
    let user = unique_name("dave");
    grant(
        admin,
        &user,
        &user,
        json!([{ "apiGroups": ["deppy.io"], "resources": ["catalogs"], "verbs": verbs }]),
    )
    .await;
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("deppy.io", "v1alpha1", "Catalog"));
    let catalogs = Api::all_with(impersonating(&user).await, &resource);
    (user, catalogs)
}

/// Waits until creating `object` is denied with a message containing `expected` (policies
/// arrive through an informer).
async fn create_denied(catalogs: &Api<DynamicObject>, object: &DynamicObject, expected: &str) {
    wait_for("the catalog denial", Duration::from_secs(60), || async {
        match catalogs.create(&PostParams::default(), object).await {
            Ok(_) => panic!("admitted: {object:?}"),
            Err(err) if err.to_string().contains(expected) => Ok(()),
            Err(err) => Err(err.to_string()),
        }
    })
    .await;
}

fn assert_refused(err: &kube::Error, expected: &str) {
    assert!(err.to_string().contains(expected), "{err}");
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
    // A curator: creating Catalogs at all takes "manage".
    let (user, catalogs) = catalog_author(&admin, &["create", "manage"]).await;
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
        create_denied(&catalogs, &object, &expected).await;
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

/// Every unrestricted resolution draws from every Catalog, PlatformOperators' cluster-admin
/// installs included: a user granted create, update and delete on Catalogs, but not
/// `manage`, may neither add one nor touch an administrator's.
#[tokio::test]
async fn only_catalog_curators_may_write_catalogs() {
    let admin = client().await;
    install_crds(&admin).await;
    testkit::install_admission(&admin).await;
    let (mallory, mallorys) =
        catalog_author(&admin, &["create", "get", "update", "patch", "delete"]).await;

    let hers = catalog(json!({ "image": { "ref": "registry.example/mallory:1" } }));
    let name = hers.metadata.name.clone().unwrap();
    let expected = format!(
        "user \"{mallory}\" may not create Catalog \"{name}\": a Catalog offers bundles to every resolution that does not name its sources, PlatformOperators' cluster-wide installs among them, so only holders of the verb \"manage\" on catalogs.deppy.io may create, change or delete one"
    );
    create_denied(&mallorys, &hers, &expected).await;

    // An administrator's Catalog: she may read it, not repoint, relabel or delete it.
    let theirs = catalog(json!({ "image": { "ref": "registry.example/catalog:1" } }));
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("deppy.io", "v1alpha1", "Catalog"));
    let catalogs: Api<DynamicObject> = Api::all_with(admin.clone(), &resource);
    let created = catalogs
        .create(&PostParams::default(), &theirs)
        .await
        .unwrap();
    let name = created.metadata.name.clone().unwrap();
    mallorys.get(&name).await.unwrap();
    // Repointing, relabelling, deleting: each refused with the verb that was tried.
    let repoint =
        json!({ "spec": { "source": { "image": { "ref": "registry.example/mallory:1" } } } });
    let relabel = json!({ "metadata": { "labels": { "tier": "mallory" } } });
    for patch in [repoint, relabel] {
        let err = mallorys
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap_err();
        assert_refused(&err, &format!("may not change Catalog \"{name}\""));
    }
    let err = mallorys
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap_err();
    assert_refused(&err, &format!("may not delete Catalog \"{name}\""));
    let kept = catalogs.get(&name).await.unwrap();
    assert_eq!(
        kept.data["spec"]["source"]["image"]["ref"],
        "registry.example/catalog:1"
    );
    assert!(kept.metadata.labels.is_none_or(|l| !l.contains_key("tier")));

    // A curator may do all three.
    let (_, curators) =
        catalog_author(&admin, &["create", "update", "patch", "delete", "manage"]).await;
    curators
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "labels": { "tier": "curated" } } })),
        )
        .await
        .unwrap();
    curators
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
}
