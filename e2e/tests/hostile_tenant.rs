//! A hostile tenant against the whole system, one test per way into an install that the
//! tenancy model of docs/operations.md ("Multi-tenant clusters") closes: activating an
//! ActiveResolution with the activator's rights, deleting or relabelling what is not hers,
//! squatting a PlatformOperator's future child, and a refused install leaving its namespace
//! and CRD behind. The tenant is set up by the docs' own shared-cluster recipe
//! ([`e2e::shared_cluster_recipe`]) and acts through impersonation; every test asserts the
//! cluster state afterwards, not only the refusal.
//!
//! Tests that install the sample operator share its package names, so those run one at a
//! time (a process-wide lock).

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use deppy_api::ActiveResolution;
use e2e::{Env, Recipe, TIMEOUT, env};
use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use platform_api::PlatformOperator;
use rukpak_api::BundleDeployment;
use rukpak_api::labels::{CREATED_BY, OWNER_KIND, OWNER_NAME};
use serde_json::json;
use testkit::examples::sample;
use testkit::users::{grant, impersonating};
use testkit::{unique_name, wait_for};

/// One install of the sample packages at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// How long the API server may take to apply new RBAC and policies.
const SETTLE: Duration = Duration::from_secs(60);

/// The tenant of the docs' recipe, once per test process.
async fn tenant() -> &'static Recipe {
    static RECIPE: tokio::sync::OnceCell<Recipe> = tokio::sync::OnceCell::const_new();
    RECIPE
        .get_or_init(|| async {
            env().await;
            e2e::shared_cluster_recipe()
        })
        .await
}

/// A plain BundleDeployment `name` of `files` (stored as a ConfigMap source), with `extra`
/// spec fields, as the stack's controllers see it.
async fn plain(
    admin: &Client,
    env: &Env,
    name: &str,
    files: &[(String, String)],
    extra: serde_json::Value,
) -> BundleDeployment {
    let stack = env
        .stack()
        .expect("these tests run the controllers locally");
    let source = e2e::bundle_config_map(admin, stack, name, files).await;
    let mut deployment = serde_json::to_value(e2e::plain_deployment(stack, name, source)).unwrap();
    if let (Some(spec), Some(extra)) = (deployment["spec"].as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    serde_json::from_value(deployment).unwrap()
}

/// Creates `object` through `api` once RBAC and policies allow it (they apply asynchronously).
async fn admitted<K>(api: &Api<K>, object: &K) -> K
where
    K: kube::Resource
        + Clone
        + k8s_openapi::serde::Serialize
        + k8s_openapi::serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    wait_for("the create to be admitted", SETTLE, || async {
        api.create(&PostParams::default(), object)
            .await
            .map_err(|e| e.to_string())
    })
    .await
}

/// Runs `attempt` until it is refused with a message containing `expected`, and returns the
/// message; panics if it succeeds.
async fn refused<F, Fut, T>(what: &str, expected: &str, mut attempt: F) -> String
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, kube::Error>>,
{
    wait_for(&format!("{what} to be refused"), SETTLE, || {
        let attempt = attempt();
        async move {
            match attempt.await {
                Ok(_) => panic!("{what} was allowed"),
                Err(err) if err.to_string().contains(expected) => Ok(err.to_string()),
                Err(err) => Err(err.to_string()),
            }
        }
    })
    .await
}

/// Whether `user` may do everything everywhere (`kubectl auth can-i '*' '*' -A`).
async fn is_cluster_admin(user: &str) -> bool {
    let review: SelfSubjectAccessReview = serde_json::from_value(json!({
        "spec": { "resourceAttributes": { "verb": "*", "group": "*", "resource": "*" } }
    }))
    .unwrap();
    Api::<SelfSubjectAccessReview>::all(impersonating(user).await)
        .create(&PostParams::default(), &review)
        .await
        .unwrap()
        .status
        .is_some_and(|s| s.allowed)
}

fn resolution(env: &Env, name: &str, annotations: serde_json::Value) -> ActiveResolution {
    let mut metadata = serde_json::to_value(env.metadata(name)).unwrap();
    metadata["annotations"] = annotations;
    serde_json::from_value(json!({
        "apiVersion": "deppy.io/v1alpha1", "kind": "ActiveResolution",
        "metadata": metadata,
        "spec": { "constraints": [{ "required": { "name": sample::MEMCACHED } }] }
    }))
    .unwrap()
}

/// Path 1 of the tenancy issue: a user who may create ActiveResolutions cannot make the
/// activator install for her with its own rights, and one who may create PlatformOperators
/// is not thereby a cluster administrator. Naming her own account is allowed, and the
/// install then can do only what that account may.
#[tokio::test]
async fn an_activation_never_borrows_the_activators_rights() {
    let env = env().await;
    let _serial = SERIAL.lock().await;
    let admin = testkit::client().await;
    let r = tenant().await;
    // What the report's attacker had: ActiveResolutions, Catalogs and ConfigMaps.
    grant(
        &admin,
        &r.tenant,
        &unique_name("resolver"),
        json!([
            { "apiGroups": ["deppy.io"], "resources": ["activeresolutions", "catalogs"],
              "verbs": ["create", "get", "list", "watch", "update", "patch", "delete"] },
            { "apiGroups": ["platform.openshift.io"], "resources": ["platformoperators"],
              "verbs": ["create", "get", "list", "watch"] }
        ]),
    )
    .await;
    let mallory = impersonating(&r.tenant).await;
    let resolutions: Api<ActiveResolution> = Api::all(mallory.clone());

    let name = unique_name("escalate");
    let activated = resolution(
        env,
        &name,
        json!({ deppy_api::ACTIVATOR_CLASS_ANNOTATION: "PlatformOperator" }),
    );
    let message = refused(
        "an ActiveResolution installing as the activator's identity",
        "may not activate ActiveResolution",
        || async { resolutions.create(&PostParams::default(), &activated).await },
    )
    .await;
    assert!(
        message.contains(&format!("user \"{}\"", r.tenant)) && message.contains("impersonate"),
        "{message}"
    );

    // Resolving alone installs nothing and stays allowed; adding the class later is refused.
    let plain = unique_name("resolve-only");
    admitted(&resolutions, &resolution(env, &plain, json!({}))).await;
    refused(
        "adding the activator class",
        "may not activate ActiveResolution",
        || async {
            resolutions
                .patch(
                    &plain,
                    &PatchParams::default(),
                    &Patch::Merge(json!({ "metadata": { "annotations": {
                        deppy_api::ACTIVATOR_CLASS_ANNOTATION: "PlatformOperator" } } })),
                )
                .await
        },
    )
    .await;
    assert!(
        Api::<BundleDeployment>::all(admin.clone())
            .get_opt(&plain)
            .await
            .unwrap()
            .is_none()
    );

    // A PlatformOperator installs cluster-wide: RBAC's create is not enough.
    let po: PlatformOperator = serde_json::from_value(json!({
        "apiVersion": "platform.openshift.io/v1alpha1", "kind": "PlatformOperator",
        "metadata": env.metadata(&unique_name("po")),
        "spec": { "package": { "name": sample::MEMCACHED } }
    }))
    .unwrap();
    let message = refused(
        "a tenant's PlatformOperator",
        "may not create PlatformOperator",
        || async {
            Api::<PlatformOperator>::all(mallory.clone())
                .create(&PostParams::default(), &po)
                .await
        },
    )
    .await;
    assert!(message.contains("cluster administrators"), "{message}");

    // Nor may she choose what PlatformOperators install through the catalogs they resolve
    // from: neither a Catalog of her own (offering a newer version wins) nor repointing the
    // administrator's, though RBAC grants her both.
    let catalogs: Api<deppy_api::Catalog> = Api::all(mallory.clone());
    let hers: deppy_api::Catalog = serde_json::from_value(json!({
        "apiVersion": "deppy.io/v1alpha1", "kind": "Catalog",
        "metadata": env.metadata(&unique_name("hers")),
        "spec": { "source": { "image": { "ref": "registry.example/mallory-catalog:1" } } }
    }))
    .unwrap();
    refused("a tenant's Catalog", "may not create Catalog", || async {
        catalogs.create(&PostParams::default(), &hers).await
    })
    .await;
    refused(
        "repointing the administrator's Catalog",
        "may not change Catalog",
        || async {
            catalogs
                .patch(
                    &env.catalog,
                    &PatchParams::default(),
                    &Patch::Merge(json!({ "spec": { "source": { "image": {
                    "ref": "registry.example/mallory-catalog:1" } } } })),
                )
                .await
        },
    )
    .await;

    // Her own account: admitted, and the install applies as it, so it fails for want of
    // rights instead of succeeding with the activator's.
    let own = unique_name("own-account");
    let deployer = r.deployer();
    admitted(
        &resolutions,
        &resolution(
            env,
            &own,
            json!({ deppy_api::ACTIVATOR_CLASS_ANNOTATION: "PlatformOperator",
                    deppy_api::SERVICE_ACCOUNT_ANNOTATION: deployer.to_string() }),
        ),
    )
    .await;
    let message = e2e::wait_condition(&admin, &own, "Installed", "False").await;
    let wrapper = Api::<BundleDeployment>::all(admin.clone())
        .get(&own)
        .await
        .unwrap();
    assert_eq!(wrapper.spec.service_account.as_ref(), Some(&deployer));
    assert!(
        message.contains(&deployer.username()),
        "the wrapper applies as her account: {message}"
    );
    assert!(
        !is_cluster_admin(&r.tenant).await,
        "{} became cluster-admin",
        r.tenant
    );
    for name in [&name, &plain, &own] {
        let _ = Api::<ActiveResolution>::all(admin.clone())
            .delete(name, &DeleteParams::foreground())
            .await;
    }
}

/// Path 2: with the recipe's cluster-wide grant of update and delete, a tenant still
/// cannot delete, relabel or add finalizers to an administrator's BundleDeployment or
/// another tenant's; she may delete her own, and the recorded author cannot be forged.
#[tokio::test]
async fn a_tenant_changes_and_deletes_only_what_is_hers() {
    let env = env().await;
    let admin = testkit::client().await;
    let r = tenant().await;
    let mallory = impersonating(&r.tenant).await;
    let theirs: Api<BundleDeployment> = Api::all(mallory.clone());

    let name = unique_name("admins");
    let target = unique_name("admins-ns");
    let deployment = plain(
        &admin,
        env,
        &name,
        &[
            ("00-ns.yaml".into(), e2e::namespace_manifest(&target)),
            ("cm.yaml".into(), e2e::config_map_manifest(&target, "kept")),
        ],
        json!({}),
    )
    .await;
    Api::<BundleDeployment>::all(admin.clone())
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    e2e::wait_condition(&admin, &name, "Installed", "True").await;

    let message = refused(
        "deleting an administrator's install",
        "may not delete",
        || async { theirs.delete(&name, &DeleteParams::default()).await },
    )
    .await;
    assert!(
        message.contains(&format!("user \"{}\"", r.tenant)) && message.contains(&name),
        "{message}"
    );
    // A spec change is refused by the identity rule or this one, whichever the API server
    // evaluates first; both name her.
    for (what, patch, expected) in [
        (
            "relabelling",
            json!({ "metadata": { "labels": { OWNER_NAME: "someone-else" } } }),
            "may not change",
        ),
        (
            "adding a finalizer",
            json!({ "metadata": { "finalizers": ["example.com/hold"] } }),
            "may not change",
        ),
        ("pausing", json!({ "spec": { "paused": true } }), "may not "),
    ] {
        let message = refused(what, expected, || async {
            theirs
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
        })
        .await;
        assert!(
            message.contains(&format!("user \"{}\"", r.tenant)),
            "{message}"
        );
    }
    let live = Api::<BundleDeployment>::all(admin.clone())
        .get(&name)
        .await
        .unwrap();
    assert!(live.metadata.deletion_timestamp.is_none());
    assert!(!live.labels().contains_key(OWNER_NAME));
    assert!(!live.finalizers().iter().any(|f| f == "example.com/hold"));
    assert_ne!(live.spec.paused, Some(true));
    Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(admin.clone(), &target)
        .get("kept")
        .await
        .expect("the administrator's object is still there");

    // Her own: the author is recorded whatever she claims, and she may delete it.
    let own = unique_name("hers");
    let mut mine = plain(
        &admin,
        env,
        &own,
        &[("cm.yaml".into(), e2e::config_map_manifest(&r.team, &own))],
        json!({ "serviceAccount": { "namespace": r.team, "name": "deployer" } }),
    )
    .await;
    mine.annotations_mut()
        .insert(CREATED_BY.into(), "system:admin".into());
    e2e::let_read(&admin, &r.tenant, &own).await;
    let created = admitted(&theirs, &mine).await;
    assert_eq!(
        created.annotations().get(CREATED_BY),
        Some(&r.tenant),
        "the API server records the real author"
    );
    refused("rewriting the recorded author", "created-by", || async {
        theirs
            .patch(
                &own,
                &PatchParams::default(),
                &Patch::Merge(
                    json!({ "metadata": { "annotations": { CREATED_BY: "system:admin" } } }),
                ),
            )
            .await
    })
    .await;
    // Another tenant with the same grants may not touch it.
    let other = e2e::shared_cluster_recipe();
    let bob = impersonating(&other.tenant).await;
    refused("another tenant deleting it", "may not delete", || async {
        Api::<BundleDeployment>::all(bob.clone())
            .delete(&own, &DeleteParams::default())
            .await
    })
    .await;
    theirs.delete(&own, &DeleteParams::default()).await.unwrap();
    testkit::delete_and_wait(&Api::<BundleDeployment>::all(admin.clone()), &own, TIMEOUT).await;
    testkit::delete_and_wait(&Api::<BundleDeployment>::all(admin.clone()), &name, TIMEOUT).await;
}

/// Path 3: a BundleDeployment squatting the name of a PlatformOperator's future child, with
/// forged owner labels, her account and her health checks, is never adopted: the install
/// says whose it is, leaves it as she wrote it, and proceeds once it is gone.
#[tokio::test]
async fn a_squatted_child_is_never_adopted() {
    let env = env().await;
    let _serial = SERIAL.lock().await;
    let admin = testkit::client().await;
    let r = tenant().await;
    let mallory = impersonating(&r.tenant).await;
    let po_name = unique_name("memcached");
    let child = sample::MEMCACHED_BD;

    let mut squatter = plain(
        &admin,
        env,
        child,
        &[(
            "cm.yaml".into(),
            e2e::config_map_manifest(&r.team, "squatter"),
        )],
        json!({
            "serviceAccount": { "namespace": r.team, "name": "deployer" },
            "healthChecks": [{ "group": "", "kind": "ConfigMap", "ready": "true" }]
        }),
    )
    .await;
    e2e::let_read(&admin, &r.tenant, child).await;
    squatter
        .labels_mut()
        .insert(OWNER_KIND.into(), "BundleDeployment".into());
    squatter
        .labels_mut()
        .insert(OWNER_NAME.into(), po_name.clone());
    admitted(&Api::<BundleDeployment>::all(mallory.clone()), &squatter).await;

    let po: PlatformOperator = serde_json::from_value(json!({
        "apiVersion": "platform.openshift.io/v1alpha1", "kind": "PlatformOperator",
        "metadata": env.metadata(&po_name),
        "spec": { "package": { "name": sample::MEMCACHED } }
    }))
    .unwrap();
    let pos: Api<PlatformOperator> = Api::all(admin.clone());
    pos.create(&PostParams::default(), &po).await.unwrap();
    let message = e2e::wait_condition(&admin, &po_name, "Installed", "False").await;
    assert!(
        message.contains(child)
            && message.contains(&format!("was created by user \"{}\"", r.tenant))
            && message.contains("never takes over"),
        "{message}"
    );
    let left = Api::<BundleDeployment>::all(admin.clone())
        .get(child)
        .await
        .unwrap();
    assert_eq!(
        left.spec.service_account,
        Some(r.deployer()),
        "her spec is untouched"
    );
    assert_eq!(left.spec.provisioner_class_name, "core-rukpak-io-plain");
    assert_eq!(left.annotations().get(CREATED_BY), Some(&r.tenant));

    // Once an administrator removes it, the operator installs as its own identity.
    testkit::delete_and_wait(&Api::<BundleDeployment>::all(admin.clone()), child, TIMEOUT).await;
    e2e::wait_condition(&admin, &po_name, "Installed", "True").await;
    let adopted = Api::<BundleDeployment>::all(admin.clone())
        .get(child)
        .await
        .unwrap();
    assert_ne!(adopted.annotations().get(CREATED_BY), Some(&r.tenant));
    assert_eq!(
        adopted.spec.provisioner_class_name,
        "core-rukpak-io-registry"
    );
    assert!(adopted.spec.health_checks.is_empty());
    let _ = pos.delete(&po_name, &DeleteParams::foreground()).await;
    wait_for("the sample operator to be uninstalled", TIMEOUT, || async {
        let left = Api::<BundleDeployment>::all(admin.clone())
            .get_opt(child)
            .await
            .map_err(|e| e.to_string())?;
        match left {
            None => Ok(()),
            Some(_) => Err(format!("{child} still there")),
        }
    })
    .await;
}

/// Path 4: a bundle whose namespace and CRD are written before one of its objects is
/// refused leaves neither behind, and deleting it leaves nothing either; the CRD can then be
/// installed by another bundle.
#[tokio::test]
async fn a_refused_install_leaves_nothing_behind() {
    let env = env().await;
    let admin = testkit::client().await;
    let name = unique_name("refused");
    let target = unique_name("refused-ns");
    let group = format!("{}.example.com", unique_name("leak"));
    let crd_name = format!("widgets.{group}");
    let crd = format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: {crd_name}\nspec:\n  group: {group}\n  names: {{kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}\n"
    );
    let deployment = plain(
        &admin,
        env,
        &name,
        &[
            ("00-ns.yaml".into(), e2e::namespace_manifest(&target)),
            ("01-crd.yaml".into(), crd.clone()),
            (
                "02-bad.yaml".into(),
                e2e::config_map_manifest(&target, "Bad_Name"),
            ),
        ],
        json!({}),
    )
    .await;
    let deployments: Api<BundleDeployment> = Api::all(admin.clone());
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    let message = e2e::wait_condition(&admin, &name, "Installed", "False").await;
    assert!(message.contains("Bad_Name"), "{message}");
    let crds: Api<CustomResourceDefinition> = Api::all(admin.clone());
    let namespaces: Api<Namespace> = Api::all(admin.clone());
    wait_for(
        "the refused install's CRD and namespace to go",
        TIMEOUT,
        || async {
            let crd = crds.get_opt(&crd_name).await.map_err(|e| e.to_string())?;
            let ns = namespaces
                .get_opt(&target)
                .await
                .map_err(|e| e.to_string())?;
            let ns_left = ns.is_some_and(|ns| ns.metadata.deletion_timestamp.is_none());
            if crd.is_none() && !ns_left {
                Ok(())
            } else {
                Err(format!(
                    "CRD left: {}, namespace left: {ns_left}",
                    crd.is_some()
                ))
            }
        },
    )
    .await;
    testkit::delete_and_wait(&deployments, &name, TIMEOUT).await;
    assert!(crds.get_opt(&crd_name).await.unwrap().is_none());

    // Nothing blocks the next bundle that ships the CRD.
    let next = unique_name("next");
    let deployment = plain(&admin, env, &next, &[("crd.yaml".into(), crd)], json!({})).await;
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    e2e::wait_condition(&admin, &next, "Installed", "True").await;
    testkit::delete_and_wait(&deployments, &next, TIMEOUT).await;
}
