//! The resolution activator in the full stack: deppy-resolver, rukpak-core, both
//! provisioners and the activator run as the real binaries (`testkit::stack`) against a real
//! control plane, installing the sample catalog's operators from a loopback registry.
//!
//! The child BundleDeployments are named after packages (cluster-wide names), so the
//! scenarios take turns ([`exclusive`]) and each leaves the cluster as it found it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use deppy_api::ActiveResolution;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Api, Client, ResourceExt};
use resolution_activator::resolve_set::{RESOLUTION_LABEL, wrapper_config_map};
use rukpak_api::BundleDeployment;
use serde_json::json;
use testkit::examples::sample::{
    MEMCACHED, MEMCACHED_BD, MEMCACHED_CRD, MEMCACHED_DEPLOYMENT, MEMCACHED_NAMESPACE, METRICS,
    METRICS_BD, METRICS_CRD, METRICS_DEPLOYMENT, METRICS_NAMESPACE,
};
use testkit::stack::{Component, Stack};
use testkit::wait_for;
use tokio::sync::{Mutex, MutexGuard, OnceCell};

/// Installing a resolution: unpacking two bundle images and applying two operators.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(180);
/// Removing an installation, namespaces included.
const REMOVE_TIMEOUT: Duration = Duration::from_secs(180);

/// What every scenario shares: the controllers and the Catalog serving the sample catalog.
struct Fixture {
    stack: &'static Stack,
    /// The Catalog serving the sample catalog.
    catalog: String,
}

async fn fixture() -> &'static Fixture {
    static FIXTURE: OnceCell<Fixture> = OnceCell::const_new();
    FIXTURE
        .get_or_init(|| async {
            let stack = Stack::shared(&[
                Component::DeppyResolver,
                Component::RukpakCore,
                Component::PlainProvisioner,
                Component::RegistryProvisioner,
                Component::ResolutionActivator,
            ])
            .await;
            let catalog = stack.examples().await.catalog.clone();
            Fixture { stack, catalog }
        })
        .await
}

/// One scenario at a time: they install the same packages.
async fn exclusive() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::const_new(());
    LOCK.lock().await
}

fn logs(fixture: &Fixture) -> String {
    fixture.stack.log_tails(30)
}

/// The activator-class annotation key.
fn class_annotation() -> &'static str {
    deppy_api::ACTIVATOR_CLASS_ANNOTATION
}

/// An ActiveResolution of class PlatformOperator requiring memcached-operator in `range`.
fn resolution(fixture: &Fixture, name: &str, range: &str) -> ActiveResolution {
    serde_json::from_value(json!({
        "apiVersion": "deppy.io/v1alpha1",
        "kind": "ActiveResolution",
        "metadata": {
            "name": name,
            "labels": fixture.stack.labels(),
            "annotations": {class_annotation(): "PlatformOperator"},
        },
        "spec": {
            "sources": [fixture.catalog],
            "constraints": [{"required": {"name": MEMCACHED, "versionRange": range}}],
        },
    }))
    .unwrap()
}

async fn set_range(client: &Client, name: &str, range: &str) {
    Api::<ActiveResolution>::all(client.clone())
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"constraints": [
                {"required": {"name": MEMCACHED, "versionRange": range}}
            ]}})),
        )
        .await
        .unwrap();
}

fn condition_true(conditions: &[Condition], type_: &str) -> bool {
    kit::conditions::is_true(conditions, type_, None)
}

/// Waits until BundleDeployment `name` is Installed and Healthy for its current generation,
/// with the image of its template's source containing `image` (when given).
async fn wait_installed(fixture: &Fixture, client: &Client, name: &str, image: Option<&str>) {
    let api = Api::<BundleDeployment>::all(client.clone());
    wait_for(
        &format!("BundleDeployment {name} to be Installed and Healthy"),
        INSTALL_TIMEOUT,
        || async {
            let Some(bd) = api.get_opt(name).await.map_err(|e| e.to_string())? else {
                return Err(format!("missing{}", logs(fixture)));
            };
            let source_image = bd
                .spec
                .template
                .spec
                .source
                .image
                .as_ref()
                .map(|i| i.ref_.clone())
                .unwrap_or_default();
            let status = bd.status.clone().unwrap_or_default();
            let current = status.observed_generation == bd.metadata.generation;
            if current
                && image.is_none_or(|image| source_image.contains(image))
                && condition_true(&status.conditions, "Installed")
                && condition_true(&status.conditions, "Healthy")
            {
                Ok(())
            } else {
                Err(format!(
                    "image {source_image}, status {:?}{}",
                    status.conditions,
                    logs(fixture)
                ))
            }
        },
    )
    .await;
}

async fn wait_available(client: &Client, namespace: &str, name: &str) {
    let api = Api::<Deployment>::namespaced(client.clone(), namespace);
    wait_for(
        &format!("Deployment {namespace}/{name} to be Available"),
        INSTALL_TIMEOUT,
        || async {
            let deployment = api
                .get_opt(name)
                .await
                .map_err(|e| e.to_string())?
                .ok_or("missing")?;
            let available = deployment
                .status
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Available" && c.status == "True");
            if available {
                Ok(())
            } else {
                Err("not Available".to_owned())
            }
        },
    )
    .await;
}

/// The ActiveResolution once its `Activated` condition describes the current generation
/// and satisfies `accept`.
async fn wait_activated(
    fixture: &Fixture,
    client: &Client,
    name: &str,
    what: &str,
    accept: impl Fn(&Condition) -> bool,
) -> ActiveResolution {
    let api = Api::<ActiveResolution>::all(client.clone());
    wait_for(
        &format!("ActiveResolution {name}: {what}"),
        INSTALL_TIMEOUT,
        || async {
            let resolution = api.get(name).await.map_err(|e| e.to_string())?;
            let status = resolution.status.clone().unwrap_or_default();
            let activated = kit::conditions::find(&status.conditions, "Activated");
            match activated {
                Some(c) if c.observed_generation == resolution.metadata.generation && accept(c) => {
                    Ok(resolution)
                }
                _ => Err(format!("{status:?}{}", logs(fixture))),
            }
        },
    )
    .await
}

/// Installs `name` requiring memcached-operator in `range`, and waits for the wrapper, both
/// children and both Deployments.
async fn install(
    fixture: &Fixture,
    client: &Client,
    name: &str,
    range: &str,
    memcached_image: &str,
) {
    let started = std::time::Instant::now();
    Api::<ActiveResolution>::all(client.clone())
        .create(&PostParams::default(), &resolution(fixture, name, range))
        .await
        .unwrap();
    wait_activated(fixture, client, name, "Activated", |c| {
        c.status == "True" && c.reason == "Activated"
    })
    .await;
    let activated = started.elapsed();
    wait_installed(fixture, client, name, None).await;
    wait_installed(fixture, client, MEMCACHED_BD, Some(memcached_image)).await;
    wait_installed(
        fixture,
        client,
        METRICS_BD,
        Some("metrics-agent-bundle:v1.1.0"),
    )
    .await;
    wait_available(client, MEMCACHED_NAMESPACE, MEMCACHED_DEPLOYMENT).await;
    wait_available(client, METRICS_NAMESPACE, METRICS_DEPLOYMENT).await;
    eprintln!(
        "{name}: Activated after {activated:?}; wrapper, children and Deployments ready after {:?}",
        started.elapsed()
    );
}

/// The resolution's ResolveSet ConfigMaps, by name.
async fn resolve_sets(fixture: &Fixture, client: &Client, name: &str) -> Vec<String> {
    let mut names: Vec<String> =
        Api::<ConfigMap>::namespaced(client.clone(), &fixture.stack.rukpak_namespace)
            .list(&ListParams::default().labels(&format!("{RESOLUTION_LABEL}={name}")))
            .await
            .unwrap()
            .items
            .iter()
            .map(|cm| cm.name_any())
            .collect();
    names.sort();
    names
}

async fn wrapper_resolve_set(client: &Client, name: &str) -> String {
    let wrapper = Api::<BundleDeployment>::all(client.clone())
        .get(name)
        .await
        .unwrap();
    wrapper_config_map(&wrapper).unwrap().to_owned()
}

/// Deletes `name` and waits until everything it installed is gone, so the next scenario
/// starts clean.
async fn uninstall(fixture: &Fixture, client: &Client, name: &str) {
    let _ = Api::<ActiveResolution>::all(client.clone())
        .delete(name, &DeleteParams::background())
        .await;
    wait_gone(fixture, client, name).await;
}

async fn wait_gone(fixture: &Fixture, client: &Client, name: &str) {
    let bds = Api::<BundleDeployment>::all(client.clone());
    let namespaces = Api::<Namespace>::all(client.clone());
    wait_for(
        &format!("everything of ActiveResolution {name} to be removed"),
        REMOVE_TIMEOUT,
        || async {
            let mut left = Vec::new();
            for bd in [name, MEMCACHED_BD, METRICS_BD] {
                if bds.get_opt(bd).await.map_err(|e| e.to_string())?.is_some() {
                    left.push(format!("BundleDeployment {bd}"));
                }
            }
            for ns in [MEMCACHED_NAMESPACE, METRICS_NAMESPACE] {
                if namespaces
                    .get_opt(ns)
                    .await
                    .map_err(|e| e.to_string())?
                    .is_some()
                {
                    left.push(format!("Namespace {ns}"));
                }
            }
            if left.is_empty() {
                Ok(())
            } else {
                Err(format!("left: {}{}", left.join(", "), logs(fixture)))
            }
        },
    )
    .await;
}

#[tokio::test]
async fn a_resolution_with_a_dependency_installs_both_operators_as_one_unit() {
    let fixture = fixture().await;
    let _turn = exclusive().await;
    let client = testkit::client().await;
    let name = testkit::unique_name("two");
    install(
        fixture,
        &client,
        &name,
        ">=0.1.0",
        "memcached-operator-bundle:v0.2.0",
    )
    .await;

    let resolution = Api::<ActiveResolution>::all(client.clone())
        .get(&name)
        .await
        .unwrap();
    let status = resolution.status.unwrap();
    let packages: Vec<&str> = status.entities.iter().map(|e| e.package.as_str()).collect();
    assert_eq!(packages, [MEMCACHED, METRICS]);
    assert!(
        status.entities[0]
            .image
            .ends_with("/olmv1-examples/memcached-operator-bundle:v0.2.0"),
        "{:?}",
        status.entities
    );

    // One ResolveSet, immutable, owned by the resolution, named by it, labelled like it.
    let sets = resolve_sets(fixture, &client, &name).await;
    assert_eq!(sets.len(), 1, "{sets:?}");
    assert_eq!(wrapper_resolve_set(&client, &name).await, sets[0]);
    let cm = Api::<ConfigMap>::namespaced(client.clone(), &fixture.stack.rukpak_namespace)
        .get(&sets[0])
        .await
        .unwrap();
    assert_eq!(cm.immutable, Some(true));
    assert!(sets[0].starts_with(&format!("{name}-")));
    assert_eq!(cm.owner_references()[0].name, name);
    let mut keys: Vec<&String> = cm.data.as_ref().unwrap().keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        ["memcached-operator-bd.yaml", "metrics-agent-bd.yaml"]
    );

    // Labels follow the chain: resolution -> wrapper -> children.
    let bds = Api::<BundleDeployment>::all(client.clone());
    for bd in [name.as_str(), MEMCACHED_BD, METRICS_BD] {
        let bd = bds.get(bd).await.unwrap();
        assert_eq!(
            bd.labels().get(testkit::stack::LABEL),
            Some(&fixture.stack.id),
            "{}",
            bd.name_any()
        );
    }
    let memcached = bds.get(MEMCACHED_BD).await.unwrap();
    assert_eq!(
        memcached.spec.provisioner_class_name,
        "core-rukpak-io-registry"
    );
    // v0.2.0 has no olm.maxOpenShiftVersion.
    assert!(
        !memcached
            .annotations()
            .contains_key(platform_api::MAX_OPENSHIFT_VERSION_ANNOTATION)
    );

    uninstall(fixture, &client, &name).await;
}

#[tokio::test]
async fn editing_the_constraint_pivots_the_children_and_keeps_the_previous_resolve_set() {
    let fixture = fixture().await;
    let _turn = exclusive().await;
    let client = testkit::client().await;
    let name = testkit::unique_name("pivot");
    install(
        fixture,
        &client,
        &name,
        "0.1.0",
        "memcached-operator-bundle:v0.1.0",
    )
    .await;
    let first = wrapper_resolve_set(&client, &name).await;
    let bds = Api::<BundleDeployment>::all(client.clone());
    let memcached = bds.get(MEMCACHED_BD).await.unwrap();
    assert_eq!(
        memcached
            .annotations()
            .get(platform_api::MAX_OPENSHIFT_VERSION_ANNOTATION)
            .map(String::as_str),
        Some("4.16"),
        "v0.1.0 carries olm.maxOpenShiftVersion"
    );
    let metrics_generation = bds.get(METRICS_BD).await.unwrap().metadata.generation;

    set_range(&client, &name, "0.2.0").await;
    wait_activated(fixture, &client, &name, "activated again", |c| {
        c.status == "True" && c.reason == "Activated"
    })
    .await;
    wait_installed(
        fixture,
        &client,
        MEMCACHED_BD,
        Some("memcached-operator-bundle:v0.2.0"),
    )
    .await;
    wait_installed(fixture, &client, &name, None).await;
    wait_available(&client, MEMCACHED_NAMESPACE, MEMCACHED_DEPLOYMENT).await;

    let second = wrapper_resolve_set(&client, &name).await;
    assert_ne!(first, second, "a new decision is a new ResolveSet");
    let sets = resolve_sets(fixture, &client, &name).await;
    assert!(sets.contains(&first), "history keeps {first}: {sets:?}");
    assert!(sets.contains(&second), "{sets:?}");
    let memcached = bds.get(MEMCACHED_BD).await.unwrap();
    assert!(
        !memcached
            .annotations()
            .contains_key(platform_api::MAX_OPENSHIFT_VERSION_ANNOTATION),
        "the annotation goes with v0.1.0"
    );
    // The unchanged child was not touched by the pivot.
    assert_eq!(
        bds.get(METRICS_BD).await.unwrap().metadata.generation,
        metrics_generation
    );
    let resolution = Api::<ActiveResolution>::all(client.clone())
        .get(&name)
        .await
        .unwrap();
    let entities = resolution.status.unwrap().entities;
    assert!(
        entities[0]
            .image
            .ends_with("memcached-operator-bundle:v0.2.0"),
        "{entities:?}"
    );

    uninstall(fixture, &client, &name).await;
}

#[tokio::test]
async fn an_unsatisfiable_edit_leaves_the_installed_operators_untouched_and_says_why() {
    let fixture = fixture().await;
    let _turn = exclusive().await;
    let client = testkit::client().await;
    let name = testkit::unique_name("unsat");
    install(
        fixture,
        &client,
        &name,
        ">=0.1.0",
        "memcached-operator-bundle:v0.2.0",
    )
    .await;
    let bds = Api::<BundleDeployment>::all(client.clone());
    let before: Vec<(Option<i64>, serde_json::Value)> = {
        let mut specs = Vec::new();
        for bd in [name.as_str(), MEMCACHED_BD, METRICS_BD] {
            let bd = bds.get(bd).await.unwrap();
            specs.push((
                bd.metadata.generation,
                serde_json::to_value(&bd.spec).unwrap(),
            ));
        }
        specs
    };
    let sets_before = resolve_sets(fixture, &client, &name).await;

    set_range(&client, &name, ">=9.0.0").await;
    let resolution = wait_activated(fixture, &client, &name, "NotResolved", |c| {
        c.status == "False" && c.reason == "NotResolved"
    })
    .await;
    let status = resolution.status.unwrap();
    let resolved = kit::conditions::find(&status.conditions, "Resolved").unwrap();
    assert_eq!(resolved.status, "False");
    assert_eq!(resolved.reason, "ConstraintsNotSatisfiable");
    assert!(
        resolved.message.contains(MEMCACHED),
        "Resolved says why: {}",
        resolved.message
    );
    let activated = kit::conditions::find(&status.conditions, "Activated").unwrap();
    assert!(
        activated.message.contains("ConstraintsNotSatisfiable")
            && activated.message.contains(MEMCACHED),
        "Activated says what stays: {}",
        activated.message
    );
    assert_eq!(
        status.entities.len(),
        2,
        "entities still describe what is installed"
    );

    // Nothing moved: same specs, same generations, same ResolveSets, operators still up.
    for (bd, (generation, spec)) in [name.as_str(), MEMCACHED_BD, METRICS_BD]
        .iter()
        .zip(&before)
    {
        let current = bds.get(bd).await.unwrap();
        assert_eq!(&current.metadata.generation, generation, "{bd}");
        assert_eq!(&serde_json::to_value(&current.spec).unwrap(), spec, "{bd}");
    }
    assert_eq!(resolve_sets(fixture, &client, &name).await, sets_before);
    wait_installed(
        fixture,
        &client,
        MEMCACHED_BD,
        Some("memcached-operator-bundle:v0.2.0"),
    )
    .await;
    wait_available(&client, MEMCACHED_NAMESPACE, MEMCACHED_DEPLOYMENT).await;
    wait_available(&client, METRICS_NAMESPACE, METRICS_DEPLOYMENT).await;

    uninstall(fixture, &client, &name).await;
}

#[tokio::test]
async fn deleting_the_resolution_removes_everything_but_crds_that_still_have_custom_resources() {
    let fixture = fixture().await;
    let _turn = exclusive().await;
    let client = testkit::client().await;
    let name = testkit::unique_name("delete");
    install(
        fixture,
        &client,
        &name,
        ">=0.1.0",
        "memcached-operator-bundle:v0.2.0",
    )
    .await;
    assert_eq!(resolve_sets(fixture, &client, &name).await.len(), 1);

    // A custom resource of memcached-operator's CRD, in a namespace of the test's own. The
    // operator's webhooks admit and convert it, so it needs the operator really running.
    let has_data = testkit::real_node(&client).await;
    let namespace = testkit::TestNamespace::create(&client, "memcached-user").await;
    let memcacheds_at = |version: &str| {
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("cache.example.com", version, "Memcached"),
            "memcacheds",
        );
        Api::<DynamicObject>::namespaced_with(client.clone(), namespace.name(), &resource)
    };
    // Read and deleted at the storage version (0.2.0's v1beta1): once the operator is gone,
    // the kept CRD's conversion webhook is too.
    let memcacheds = memcacheds_at("v1beta1");
    if has_data {
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "cache.example.com/v1alpha1",
            "kind": "Memcached",
            "metadata": {"name": "keep-me"},
            "spec": {"size": 1},
        }))
        .unwrap();
        memcacheds_at("v1alpha1")
            .create(&PostParams::default(), &object)
            .await
            .unwrap();
    }

    Api::<ActiveResolution>::all(client.clone())
        .delete(&name, &DeleteParams::background())
        .await
        .unwrap();
    wait_gone(fixture, &client, &name).await;
    for (deployment_namespace, deployment) in [
        (MEMCACHED_NAMESPACE, MEMCACHED_DEPLOYMENT),
        (METRICS_NAMESPACE, METRICS_DEPLOYMENT),
    ] {
        let gone = Api::<Deployment>::namespaced(client.clone(), deployment_namespace)
            .get_opt(deployment)
            .await
            .unwrap()
            .is_none();
        assert!(gone, "Deployment {deployment_namespace}/{deployment}");
    }
    wait_for(
        "the ResolveSets to be garbage collected",
        REMOVE_TIMEOUT,
        || async {
            let sets = resolve_sets(fixture, &client, &name).await;
            if sets.is_empty() {
                Ok(())
            } else {
                Err(format!("{sets:?}"))
            }
        },
    )
    .await;

    // The CRD with a custom resource stays (and the resource with it); the other goes.
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    if has_data {
        assert!(crds.get_opt(MEMCACHED_CRD).await.unwrap().is_some());
        assert!(memcacheds.get_opt("keep-me").await.unwrap().is_some());
    }
    wait_for(
        &format!("CRD {METRICS_CRD} to be removed"),
        REMOVE_TIMEOUT,
        || async {
            match crds.get_opt(METRICS_CRD).await.map_err(|e| e.to_string())? {
                None => Ok(()),
                Some(_) => Err("still there".to_owned()),
            }
        },
    )
    .await;

    // Leave the cluster clean for the other scenarios.
    if has_data {
        memcacheds
            .delete("keep-me", &DeleteParams::default())
            .await
            .unwrap();
        crds.delete(MEMCACHED_CRD, &DeleteParams::default())
            .await
            .unwrap();
    }
    wait_for(
        &format!("CRD {MEMCACHED_CRD} to be removed"),
        REMOVE_TIMEOUT,
        || async {
            match crds
                .get_opt(MEMCACHED_CRD)
                .await
                .map_err(|e| e.to_string())?
            {
                None => Ok(()),
                Some(_) => Err("still there".to_owned()),
            }
        },
    )
    .await;
    namespace.delete().await;
}

#[tokio::test]
async fn a_second_resolution_of_the_same_package_fails_clearly_and_leaves_the_first_alone() {
    let fixture = fixture().await;
    let _turn = exclusive().await;
    let client = testkit::client().await;
    let first = testkit::unique_name("first");
    install(
        fixture,
        &client,
        &first,
        ">=0.1.0",
        "memcached-operator-bundle:v0.2.0",
    )
    .await;
    let bds = Api::<BundleDeployment>::all(client.clone());
    let memcached_before = bds.get(MEMCACHED_BD).await.unwrap();

    let second = testkit::unique_name("second");
    Api::<ActiveResolution>::all(client.clone())
        .create(
            &PostParams::default(),
            &resolution(fixture, &second, "0.1.0"),
        )
        .await
        .unwrap();
    wait_activated(fixture, &client, &second, "Activated", |c| {
        c.status == "True"
    })
    .await;
    let message = wait_for(
        &format!("wrapper {second} to fail on the collision"),
        INSTALL_TIMEOUT,
        || async {
            let wrapper = bds
                .get_opt(&second)
                .await
                .map_err(|e| e.to_string())?
                .ok_or("missing")?;
            let conditions = wrapper.status.map(|s| s.conditions).unwrap_or_default();
            match kit::conditions::find(&conditions, "Installed") {
                Some(c) if c.status == "False" && c.message.contains(MEMCACHED) => {
                    Ok(c.message.clone())
                }
                _ => Err(format!("{conditions:?}{}", logs(fixture))),
            }
        },
    )
    .await;
    assert!(
        message.contains("BundleDeployment"),
        "names the colliding object: {message}"
    );
    let memcached = bds.get(MEMCACHED_BD).await.unwrap();
    assert_eq!(memcached.spec, memcached_before.spec, "first one untouched");
    assert_eq!(
        memcached.owner_references(),
        memcached_before.owner_references()
    );

    // Deleting the loser removes only what it installed: nothing.
    Api::<ActiveResolution>::all(client.clone())
        .delete(&second, &DeleteParams::background())
        .await
        .unwrap();
    wait_for(
        &format!("wrapper {second} to be removed"),
        REMOVE_TIMEOUT,
        || async {
            match bds.get_opt(&second).await.map_err(|e| e.to_string())? {
                None => Ok(()),
                Some(_) => Err(format!("still there{}", logs(fixture))),
            }
        },
    )
    .await;
    wait_installed(
        fixture,
        &client,
        MEMCACHED_BD,
        Some("memcached-operator-bundle:v0.2.0"),
    )
    .await;
    wait_available(&client, MEMCACHED_NAMESPACE, MEMCACHED_DEPLOYMENT).await;

    uninstall(fixture, &client, &first).await;
}
