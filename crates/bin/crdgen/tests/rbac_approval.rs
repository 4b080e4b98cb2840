//! RBAC approval of provisioner classes, enforced by the ValidatingAdmissionPolicy in
//! `deploy/provisioner-classes`: a user needs the `use` verb on a class to create or
//! change Bundles and BundleDeployments of it.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use kube::Api;
use kube::api::{DeleteParams, PostParams};
use rukpak_api::BundleDeployment;
use serde_json::json;
use testkit::users::{grant, impersonating};
use testkit::{apply_dir, client, install_crds, unique_name, wait_for};

/// The ServiceAccount the test's BundleDeployments apply as: users of these tests may
/// impersonate it, so the identity policy (tested in `identity_admission.rs`) never stands
/// between them and the class check tested here.
const ACCOUNT: &str = "rbac-approval";

/// The grant that lets a user impersonate [`ACCOUNT`].
fn impersonate_account() -> serde_json::Value {
    json!({ "apiGroups": [""], "resources": ["serviceaccounts"], "resourceNames": [ACCOUNT], "verbs": ["impersonate"] })
}

fn deployment(name: &str, class: &str, template_class: &str) -> BundleDeployment {
    serde_json::from_value(json!({
        "apiVersion": "core.rukpak.io/v1alpha1", "kind": "BundleDeployment",
        "metadata": { "name": name },
        "spec": {
            "serviceAccount": { "namespace": "default", "name": ACCOUNT },
            "provisionerClassName": class,
            "template": { "spec": {
                "provisionerClassName": template_class,
                "source": { "type": "image", "image": { "ref": "registry.example/bundle:v1" } }
            }}
        }
    }))
    .unwrap()
}

#[tokio::test]
async fn a_user_needs_use_on_every_class_a_bundle_deployment_names() {
    let admin = client().await;
    install_crds(&admin).await;
    apply_dir(&admin, "deploy/provisioner-classes").await;
    testkit::install_admission(&admin).await;

    let user = unique_name("alice");
    grant(
        &admin,
        &user,
        &unique_name("bd-editor"),
        json!([{
            "apiGroups": ["core.rukpak.io"],
            "resources": ["bundledeployments", "bundles"],
            "verbs": ["create", "get", "update", "delete"]
        }, impersonate_account()]),
    )
    .await;
    let alice: Api<BundleDeployment> = Api::all(impersonating(&user).await);

    // The policy and the RBAC grant take effect asynchronously: wait until the denial shows.
    let name = unique_name("bd");
    let message = wait_for(
        "the policy to deny a user without `use`",
        Duration::from_secs(60),
        || async {
            match alice
                .create(
                    &PostParams::default(),
                    &deployment(&name, "core-rukpak-io-plain", "core-rukpak-io-registry"),
                )
                .await
            {
                Err(err) if err.to_string().contains("may not use provisioner class") => {
                    Ok(err.to_string())
                }
                Err(err) => Err(err.to_string()),
                Ok(_) => {
                    alice
                        .delete(&name, &DeleteParams::default())
                        .await
                        .map_err(|e| e.to_string())?;
                    Err("created: the policy is not active yet".to_owned())
                }
            }
        },
    )
    .await;
    assert!(
        message.contains(&format!(
            "user \"{user}\" may not use provisioner class \"core-rukpak-io-plain\""
        )),
        "{message}"
    );
    assert!(
        message.contains(
            "grant the verb \"use\" on provisionerclasses.core.rukpak.io/core-rukpak-io-plain"
        ),
        "{message}"
    );

    // `use` on the BundleDeployment's class alone is not enough: the template's class counts too.
    grant(
        &admin,
        &user,
        &unique_name("use-plain"),
        json!([{
            "apiGroups": ["core.rukpak.io"], "resources": ["provisionerclasses"],
            "resourceNames": ["core-rukpak-io-plain"], "verbs": ["use"]
        }]),
    )
    .await;
    let message = wait_for(
        "the denial to name the template's class",
        Duration::from_secs(30),
        || async {
            match alice
                .create(
                    &PostParams::default(),
                    &deployment(&name, "core-rukpak-io-plain", "core-rukpak-io-registry"),
                )
                .await
            {
                Err(err) if err.to_string().contains("\"core-rukpak-io-registry\"") => {
                    Ok(err.to_string())
                }
                Err(err) => Err(err.to_string()),
                Ok(_) => Err("created without use on the template's class".to_owned()),
            }
        },
    )
    .await;
    assert!(
        message.contains("may not use provisioner class \"core-rukpak-io-registry\""),
        "{message}"
    );

    // A user approved for both classes may create it.
    grant(
        &admin,
        &user,
        &unique_name("use-registry"),
        json!([{
            "apiGroups": ["core.rukpak.io"], "resources": ["provisionerclasses"],
            "resourceNames": ["core-rukpak-io-registry"], "verbs": ["use"]
        }]),
    )
    .await;
    wait_for(
        "the approved user to create the BundleDeployment",
        Duration::from_secs(30),
        || async {
            alice
                .create(
                    &PostParams::default(),
                    &deployment(&name, "core-rukpak-io-plain", "core-rukpak-io-registry"),
                )
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        },
    )
    .await;
}

#[tokio::test]
async fn changing_the_spec_is_checked_but_metadata_only_updates_are_not() {
    let admin = client().await;
    install_crds(&admin).await;
    apply_dir(&admin, "deploy/provisioner-classes").await;
    testkit::install_admission(&admin).await;

    // The admin creates a BundleDeployment; a user who may edit BundleDeployments but use no
    // class then edits it.
    let name = unique_name("bd");
    Api::<BundleDeployment>::all(admin.clone())
        .create(
            &PostParams::default(),
            &deployment(&name, "core-rukpak-io-plain", "core-rukpak-io-registry"),
        )
        .await
        .unwrap();
    let user = unique_name("bob");
    grant(&admin, &user, &unique_name("bd-updater"), json!([{
        "apiGroups": ["core.rukpak.io"], "resources": ["bundledeployments"], "verbs": ["get", "update"]
    }, impersonate_account()])).await;
    let bob: Api<BundleDeployment> = Api::all(impersonating(&user).await);

    // Metadata-only updates (what controllers and the garbage collector do) pass.
    wait_for(
        "a metadata-only update by a user without `use`",
        Duration::from_secs(30),
        || async {
            let mut current = bob.get(&name).await.map_err(|e| e.to_string())?;
            current.metadata.labels = Some([("touched".to_owned(), unique_name("v"))].into());
            bob.replace(&name, &PostParams::default(), &current)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        },
    )
    .await;

    // Changing the spec, even without touching a class, needs `use`.
    let mut changed = bob.get(&name).await.unwrap();
    if let Some(image) = changed.spec.template.spec.source.image.as_mut() {
        image.ref_ = "registry.example/bundle:v2".to_owned();
    }
    let err = bob
        .replace(&name, &PostParams::default(), &changed)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!(
            "user \"{user}\" may not use provisioner class \"core-rukpak-io-plain\""
        )),
        "{err}"
    );
    let stored = Api::<BundleDeployment>::all(admin)
        .get(&name)
        .await
        .unwrap();
    let stored_ref = stored.spec.template.spec.source.image.map(|i| i.ref_);
    assert_eq!(
        stored_ref.as_deref(),
        Some("registry.example/bundle:v1"),
        "the denied change was not stored"
    );
}
