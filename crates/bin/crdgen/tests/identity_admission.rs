//! The identity rule of `deploy/admission/identity-policy.yaml`: creating a
//! BundleDeployment needs the `impersonate` verb on the identity it applies as. Each case
//! uses a ProvisionerClass of its own whose default identity the test publishes the way a
//! provisioner would (its key in the ConfigMap `rukpak-system/bundle-identities`, the
//! policy's parameter), so every branch of the policy is exercised without one.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use rukpak_api::{BUNDLE_IDENTITIES_CONFIG_MAP, BundleDeployment, ProvisionerClass};
use serde_json::json;
use testkit::users::{grant, impersonating};
use testkit::{apply_dir, client, install_crds, unique_name, wait_for};

const TIMEOUT: Duration = Duration::from_secs(60);

/// A user who may create BundleDeployments and use every class, plus `extra` rules.
async fn user_with(admin: &Client, extra: &[serde_json::Value]) -> (String, Client) {
    let user = unique_name("carol");
    let mut rules = vec![
        json!({ "apiGroups": ["core.rukpak.io"], "resources": ["bundledeployments"], "verbs": ["create", "delete"] }),
        json!({ "apiGroups": ["core.rukpak.io"], "resources": ["provisionerclasses"], "verbs": ["use"] }),
    ];
    rules.extend(extra.iter().cloned());
    grant(admin, &user, &user, serde_json::Value::Array(rules)).await;
    let client = impersonating(&user).await;
    (user, client)
}

/// A class of its own, with the user name `identity` (if any) published as its default
/// identity.
async fn class(admin: &Client, identity: Option<&str>) -> String {
    let name = unique_name("tenant-class");
    let class: ProvisionerClass = serde_json::from_value(json!({
        "apiVersion": "core.rukpak.io/v1alpha1", "kind": "ProvisionerClass",
        "metadata": { "name": name }, "spec": { "provisioner": unique_name("nobody") }
    }))
    .unwrap();
    let classes: Api<ProvisionerClass> = Api::all(admin.clone());
    classes
        .create(&PostParams::default(), &class)
        .await
        .unwrap();
    if let Some(identity) = identity {
        Api::<ConfigMap>::namespaced(admin.clone(), testkit::ADMISSION_NAMESPACE)
            .patch(
                BUNDLE_IDENTITIES_CONFIG_MAP,
                &PatchParams::default(),
                &Patch::Merge(json!({ "data": { &name: identity } })),
            )
            .await
            .unwrap();
    }
    name
}

fn deployment(name: &str, class: &str, account: Option<(&str, &str)>) -> BundleDeployment {
    let mut spec = json!({
        "provisionerClassName": class,
        "template": { "spec": { "provisionerClassName": class,
            "source": { "type": "image", "image": { "ref": "registry.example/bundle:v1" } } } }
    });
    if let Some((namespace, name)) = account {
        spec["serviceAccount"] = json!({ "namespace": namespace, "name": name });
    }
    serde_json::from_value(json!({
        "apiVersion": "core.rukpak.io/v1alpha1", "kind": "BundleDeployment",
        "metadata": { "name": name }, "spec": spec
    }))
    .unwrap()
}

/// Waits until creating `deployment` as `client` is denied with a message containing
/// `expected` (the policy's parameters arrive through an informer), and returns it.
async fn denial(client: &Client, deployment: &BundleDeployment, expected: &str) -> String {
    let api: Api<BundleDeployment> = Api::all(client.clone());
    wait_for("the identity denial", TIMEOUT, || async {
        match api.create(&PostParams::default(), deployment).await {
            Ok(_) => panic!("admitted: {deployment:?}"),
            Err(err) if err.to_string().contains(expected) => Ok(err.to_string()),
            Err(err) => Err(err.to_string()),
        }
    })
    .await
}

async fn admitted(client: &Client, deployment: &BundleDeployment) {
    let api: Api<BundleDeployment> = Api::all(client.clone());
    wait_for("the BundleDeployment to be admitted", TIMEOUT, || async {
        api.create(&PostParams::default(), deployment)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    })
    .await;
}

async fn setup() -> Client {
    let admin = client().await;
    install_crds(&admin).await;
    apply_dir(&admin, "deploy/provisioner-classes").await;
    testkit::install_admission(&admin).await;
    admin
}

#[tokio::test]
async fn without_a_published_identity_only_those_who_may_impersonate_every_account_may_omit_it() {
    let admin = setup().await;
    let class = class(&admin, None).await;
    let (user, carol) = user_with(&admin, &[]).await;
    let message = denial(
        &carol,
        &deployment(&unique_name("bd"), &class, None),
        "has not published",
    )
    .await;
    assert!(
        message.contains(&format!(
            "user \"{user}\" may not create a BundleDeployment of class \"{class}\" without spec.serviceAccount"
        )),
        "{message}"
    );
    // The cluster administrator may.
    admitted(&admin, &deployment(&unique_name("bd"), &class, None)).await;
}

#[tokio::test]
async fn a_published_service_account_must_be_impersonable() {
    let admin = setup().await;
    let class = class(
        &admin,
        Some("system:serviceaccount:rukpak-system:plain-provisioner"),
    )
    .await;
    let (user, carol) = user_with(&admin, &[]).await;
    let message = denial(
        &carol,
        &deployment(&unique_name("bd"), &class, None),
        "may not impersonate ServiceAccount",
    )
    .await;
    assert!(
        message.contains(&format!(
            "user \"{user}\" may not impersonate ServiceAccount \"rukpak-system/plain-provisioner\", the identity BundleDeployments of class \"{class}\" apply as without spec.serviceAccount"
        )),
        "{message}"
    );

    // Who may impersonate it (the activator's grant in deploy/) may create it.
    let (_, trusted) = user_with(
        &admin,
        &[json!({ "apiGroups": [""], "resources": ["serviceaccounts"],
                  "resourceNames": ["plain-provisioner"], "verbs": ["impersonate"] })],
    )
    .await;
    admitted(&trusted, &deployment(&unique_name("bd"), &class, None)).await;
}

#[tokio::test]
async fn a_published_user_must_be_impersonable() {
    let admin = setup().await;
    let class = class(&admin, Some("provisioner-admin")).await;
    let (user, carol) = user_with(&admin, &[]).await;
    let message = denial(
        &carol,
        &deployment(&unique_name("bd"), &class, None),
        "may not impersonate user",
    )
    .await;
    assert!(
        message.contains(&format!(
            "user \"{user}\" may not impersonate user \"provisioner-admin\", the identity BundleDeployments of class \"{class}\""
        )),
        "{message}"
    );
    assert!(
        message.contains("the verb \"impersonate\" on users/provisioner-admin"),
        "{message}"
    );
}

#[tokio::test]
async fn a_named_account_must_be_impersonable_whatever_the_class_publishes() {
    let admin = setup().await;
    // Even a class that publishes nothing, or a class that does not exist, checks the account.
    let class = class(&admin, None).await;
    let (user, carol) = user_with(&admin, &[]).await;
    for class in [class.as_str(), "no-such-class"] {
        let message = denial(
            &carol,
            &deployment(
                &unique_name("bd"),
                class,
                Some(("kube-system", "deployment-controller")),
            ),
            "named in spec.serviceAccount",
        )
        .await;
        assert!(
            message.contains(&format!(
                "user \"{user}\" may not impersonate ServiceAccount \"kube-system/deployment-controller\" named in spec.serviceAccount"
            )),
            "{message}"
        );
    }
    // Metadata-only updates of an existing BundleDeployment are not re-checked by the
    // identity rule. They are by the ownership rule (bundle-ownership.core.rukpak.io): a user
    // who may only update is refused; one who holds "manage", as the provisioners do, may.
    let name = unique_name("bd");
    let created = Api::<BundleDeployment>::all(admin.clone())
        .create(
            &PostParams::default(),
            &deployment(
                &name,
                &class,
                Some(("kube-system", "deployment-controller")),
            ),
        )
        .await
        .unwrap();
    let relabel = |api: Api<BundleDeployment>| {
        let name = name.clone();
        async move {
            let mut current = api.get(&name).await.map_err(|e| e.to_string())?;
            current.metadata.labels = Some([("touched".to_owned(), "yes".to_owned())].into());
            api.replace(&name, &PostParams::default(), &current)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        }
    };
    let (user, updater) = user_with(
        &admin,
        &[json!({ "apiGroups": ["core.rukpak.io"], "resources": ["bundledeployments"], "verbs": ["get", "update"] })],
    )
    .await;
    let refused = wait_for("the ownership refusal", TIMEOUT, || async {
        match relabel(Api::all(updater.clone())).await {
            Ok(()) => panic!("{user} relabelled a BundleDeployment that is not theirs"),
            Err(err) if err.contains("may not change BundleDeployment") => Ok(err),
            Err(err) => Err(err),
        }
    })
    .await;
    assert!(refused.contains(&format!("user \"{user}\"")), "{refused}");
    let (_, labeller) = user_with(
        &admin,
        &[json!({ "apiGroups": ["core.rukpak.io"], "resources": ["bundledeployments"], "verbs": ["get", "update", "manage"] })],
    )
    .await;
    wait_for("a metadata-only update", TIMEOUT, || {
        relabel(Api::all(labeller.clone()))
    })
    .await;
    assert_eq!(
        created.spec.service_account.map(|a| a.name).as_deref(),
        Some("deployment-controller")
    );
}

#[tokio::test]
async fn a_user_name_that_only_looks_like_an_account_is_checked_as_a_user() {
    let admin = setup().await;
    // Five parts: not a ServiceAccount's user name, so impersonating the account
    // "ns/name" must not be enough.
    let odd = "system:serviceaccount:team-a:deployer:extra";
    let class = class(&admin, Some(odd)).await;
    let (_, carol) = user_with(
        &admin,
        &[json!({ "apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"] })],
    )
    .await;
    let message = denial(
        &carol,
        &deployment(&unique_name("bd"), &class, None),
        "may not impersonate user",
    )
    .await;
    assert!(message.contains(&format!("users/{odd}")), "{message}");
}

#[tokio::test]
async fn another_class_publishing_does_not_speak_for_an_unpublished_one() {
    let admin = setup().await;
    // A class whose identity carol may impersonate is published beside one that is not.
    let _published = class(&admin, Some("system:serviceaccount:kube-system:carols")).await;
    let unpublished = class(&admin, None).await;
    let (_, carol) = user_with(
        &admin,
        &[json!({ "apiGroups": [""], "resources": ["serviceaccounts"],
                  "resourceNames": ["carols"], "verbs": ["impersonate"] })],
    )
    .await;
    denial(
        &carol,
        &deployment(&unique_name("bd"), &unpublished, None),
        "has not published",
    )
    .await;
}
