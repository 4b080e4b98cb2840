//! Who may change and delete ActiveResolutions (`deploy/admission/resolution-author-policy.yaml`
//! and `resolution-ownership-policy.yaml`), and which annotation changes count as activating
//! one again (`activation-policy.yaml`). ActiveResolutions are cluster-scoped, so every user
//! here holds a cluster-wide grant of every verb on them: the policies, not RBAC, must keep
//! one tenant's hands off another's.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use deppy_api::{ActiveResolution, CREATED_BY_ANNOTATION as CREATED_BY};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;
use testkit::users::{grant, impersonating};
use testkit::{client, install_crds, unique_name, wait_for};

const TIMEOUT: Duration = Duration::from_secs(60);

/// A user with every verb on ActiveResolutions, plus `extra` rules.
async fn tenant(admin: &Client, extra: &[serde_json::Value]) -> (String, Api<ActiveResolution>) {
    let user = unique_name("tenant");
    let mut rules = vec![json!({
        "apiGroups": ["deppy.io"], "resources": ["activeresolutions"],
        "verbs": ["create", "get", "list", "watch", "update", "patch", "delete"]
    })];
    rules.extend(extra.iter().cloned());
    grant(admin, &user, &user, serde_json::Value::Array(rules)).await;
    (user.clone(), Api::all(impersonating(&user).await))
}

fn resolution(name: &str, package: &str, annotations: serde_json::Value) -> ActiveResolution {
    serde_json::from_value(json!({
        "apiVersion": "deppy.io/v1alpha1", "kind": "ActiveResolution",
        "metadata": { "name": name, "annotations": annotations },
        "spec": { "constraints": [{ "required": { "name": package } }] }
    }))
    .unwrap()
}

async fn setup() -> Client {
    let admin = client().await;
    install_crds(&admin).await;
    testkit::install_admission(&admin).await;
    admin
}

/// Waits until `attempt` is refused with a message containing `expected` (policies arrive
/// through an informer), and returns the message.
async fn refused<F, Fut, T>(what: &str, expected: &str, attempt: F) -> String
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, kube::Error>>,
{
    wait_for(what, TIMEOUT, || async {
        match attempt().await {
            Ok(_) => Err(format!("{what}: admitted")),
            Err(err) if err.to_string().contains(expected) => Ok(err.to_string()),
            Err(err) => Err(err.to_string()),
        }
    })
    .await
}

/// Merges `patch` into the ActiveResolution `name`.
async fn merge(
    api: &Api<ActiveResolution>,
    name: &str,
    patch: &serde_json::Value,
) -> Result<ActiveResolution, kube::Error> {
    api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
}

fn labels(value: &str) -> Patch<serde_json::Value> {
    Patch::Merge(json!({ "metadata": { "labels": { "team": value } } }))
}

#[tokio::test]
async fn only_its_author_may_change_or_delete_an_active_resolution() {
    let admin = setup().await;
    let (alice, alices) = tenant(&admin, &[]).await;
    let (bob, bobs) = tenant(&admin, &[]).await;
    let name = unique_name("alices");

    // Created by server-side apply: the API server records alice.
    let apply = PatchParams::apply("alice").force();
    let mine = resolution(&name, "etcd", json!({}));
    let created = wait_for("alice's ActiveResolution", TIMEOUT, || async {
        alices
            .patch(&name, &apply, &Patch::Apply(&mine))
            .await
            .map_err(|e| e.to_string())
    })
    .await;
    assert_eq!(created.annotations().get(CREATED_BY), Some(&alice));

    // Applying a changed spec again keeps the stamp (the API server set it, so it is not the
    // applier's to drop; an apply that leaves no annotation at all is no error) and is hers
    // to do.
    let changed = resolution(&name, "prometheus", json!({}));
    let reapplied = alices
        .patch(&name, &apply, &Patch::Apply(&changed))
        .await
        .unwrap();
    assert_eq!(reapplied.annotations().get(CREATED_BY), Some(&alice));
    assert_eq!(reapplied.spec.constraints, changed.spec.constraints);
    alices
        .patch(&name, &PatchParams::default(), &labels("a"))
        .await
        .unwrap();

    // A forged stamp is overwritten with the real author. Bob's apply named the key, so it
    // is his applier's: applying again without it would remove the stamp, which is refused
    // with the reason (not a CEL error: with nothing left, the apply sends the annotations
    // as null).
    let forged = unique_name("forged");
    let bob_apply = PatchParams::apply("bob").force();
    let bobs_own = bobs
        .patch(
            &forged,
            &bob_apply,
            &Patch::Apply(&resolution(&forged, "etcd", json!({ CREATED_BY: alice }))),
        )
        .await
        .unwrap();
    assert_eq!(bobs_own.annotations().get(CREATED_BY), Some(&bob));
    let dropped = bobs
        .patch(
            &forged,
            &bob_apply,
            &Patch::Apply(&resolution(&forged, "etcd", json!({}))),
        )
        .await
        .unwrap_err();
    assert!(
        dropped.to_string().contains(&format!(
            "may not change the annotation {CREATED_BY} of ActiveResolution \"{forged}\""
        )),
        "{dropped}"
    );
    bobs.delete(&forged, &DeleteParams::default())
        .await
        .unwrap();

    // Bob, with the same cluster-wide grant, may neither relabel, change nor delete it.
    let expected = format!(
        "user \"{bob}\" may not change ActiveResolution \"{name}\": it has its author \"{alice}\"; only its author and holders of the verb \"manage\" on activeresolutions.deppy.io may"
    );
    refused("bob relabelling alice's", &expected, || async {
        bobs.patch(&name, &PatchParams::default(), &labels("b"))
            .await
    })
    .await;
    refused("bob changing alice's spec", "may not change", || async {
        merge(
            &bobs,
            &name,
            &json!({ "spec": { "sources": ["bobs-catalog"] } }),
        )
        .await
    })
    .await;
    refused("bob deleting alice's", "may not delete", || async {
        bobs.delete(&name, &DeleteParams::default()).await
    })
    .await;

    // Nor may alice hand it to someone else by rewriting the stamp.
    refused("alice rewriting the author", CREATED_BY, || async {
        merge(
            &alices,
            &name,
            &json!({ "metadata": { "annotations": { CREATED_BY: bob } } }),
        )
        .await
    })
    .await;

    // Nothing bob tried landed; alice may delete her own.
    let kept = alices.get(&name).await.unwrap();
    assert_eq!(kept.labels().get("team").map(String::as_str), Some("a"));
    assert!(kept.spec.sources.is_empty());
    alices
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();

    // An administrator (the verb "manage", through cluster-admin) may act on anyone's.
    let (_, carols) = tenant(&admin, &[]).await;
    let other = unique_name("carols");
    carols
        .create(
            &PostParams::default(),
            &resolution(&other, "etcd", json!({})),
        )
        .await
        .unwrap();
    let resolutions: Api<ActiveResolution> = Api::all(admin);
    resolutions
        .patch(&other, &PatchParams::default(), &labels("admin"))
        .await
        .unwrap();
    resolutions
        .delete(&other, &DeleteParams::default())
        .await
        .unwrap();
}

/// An activated ActiveResolution installs as an identity: who may impersonate it could write
/// that install directly, so may change it; nobody else but its author. And every annotation
/// the activator turns into the install is checked like the spec.
#[tokio::test]
async fn an_activated_resolution_is_changed_only_by_those_who_could_install_as_it() {
    let admin = setup().await;
    let namespace = unique_name("team");
    let account = "deployer";
    let impersonate = json!({
        "apiGroups": [""], "resources": ["serviceaccounts"],
        "resourceNames": [account], "verbs": ["impersonate"]
    });
    let use_plain = json!({
        "apiGroups": ["core.rukpak.io"], "resources": ["provisionerclasses"],
        "resourceNames": ["core-rukpak-io-plain"], "verbs": ["use"]
    });
    // Dave may impersonate the install's identity but not use the plain class; mallory
    // neither.
    let (dave, daves) = tenant(&admin, &[impersonate]).await;
    let (mallory, mallorys) = tenant(&admin, &[use_plain]).await;

    let name = unique_name("installs");
    let identity = format!("{namespace}/{account}");
    let resolutions: Api<ActiveResolution> = Api::all(admin.clone());
    let created = wait_for("the administrator's ActiveResolution", TIMEOUT, || async {
        resolutions
            .create(
                &PostParams::default(),
                &resolution(
                    &name,
                    "etcd",
                    json!({
                        "deppy.io/activator-class": "PlatformOperator",
                        "deppy.io/service-account": identity,
                    }),
                ),
            )
            .await
            .map_err(|e| e.to_string())
    })
    .await;
    let admin_name = created.annotations().get(CREATED_BY).cloned().unwrap();

    // Mallory could not have written this install: no change, no delete, no new config.
    let expected = format!(
        "user \"{mallory}\" may not delete ActiveResolution \"{name}\": it installs as \"system:serviceaccount:{namespace}:{account}\" and has its author \"{admin_name}\"; only its author, those who may impersonate that identity (grant the verb \"impersonate\" on serviceaccounts/{account} in namespace {namespace}) and holders of the verb \"manage\" on activeresolutions.deppy.io may"
    );
    refused("mallory deleting the install", &expected, || async {
        mallorys.delete(&name, &DeleteParams::default()).await
    })
    .await;
    let config = json!({ "metadata": { "annotations": {
        "platform.openshift.io/config": r#"{"deploymentConfig":{"env":[{"name":"X","value":"y"}]}}"#
    } } });
    // Refused twice over (not hers, and not an install she could write): either message.
    let not_hers = format!("user \"{mallory}\" may not");
    refused("mallory configuring the install", &not_hers, || async {
        merge(&mallorys, &name, &config).await
    })
    .await;

    // Dave could impersonate the identity, so he may relabel it...
    daves
        .patch(&name, &PatchParams::default(), &labels("dave"))
        .await
        .unwrap();
    // ...but configuring the install is activating it again, which also needs the class.
    let denied = refused(
        "dave configuring the install",
        "may not activate",
        || async { merge(&daves, &name, &config).await },
    )
    .await;
    assert!(denied.contains(&format!("user \"{dave}\"")), "{denied}");
    refused(
        "dave approving for the install",
        "may not activate",
        || async {
            merge(
                &daves,
                &name,
                &json!({ "metadata": { "annotations": {
                    "platform.openshift.io/approval": r#"{"upgradeApproval":"Automatic"}"#
                } } }),
            )
            .await
        },
    )
    .await;
    let kept = resolutions.get(&name).await.unwrap();
    assert!(
        !kept
            .annotations()
            .contains_key("platform.openshift.io/config")
            && !kept
                .annotations()
                .contains_key("platform.openshift.io/approval"),
        "{:?}",
        kept.annotations()
    );
    daves.delete(&name, &DeleteParams::default()).await.unwrap();
}
