//! How the activator reads Catalogs: from the bundle index deppy-resolver stores beside the
//! catalog (`status.bundleIndex`), never the whole catalog, falling back to the catalog's
//! content for a Catalog served without an index; and how it fails when the index is
//! missing, malformed, tampered with or lacks the selected bundle: a clear `Activated`
//! message and an Event, nothing written, no panic.
//!
//! Only the activator runs (`testkit::stack`); the tests play deppy-resolver, writing the
//! content store, the Catalog status and the ActiveResolution's `Resolved` and `selections`.
//! No deppy-resolver watches these Catalogs, so the statuses stay as written.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use deppy_api::conditions::{TYPE_ACTIVATED, TYPE_RESOLVED};
use deppy_api::{
    ActiveResolution, BUNDLE_INDEX_FILE, BundleIndex, Catalog, ContentRef, IndexedBundle,
};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Event};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use resolution_activator::reasons;
use resolution_activator::resolve_set::RESOLUTION_LABEL;
use rukpak_api::BundleDeployment;
use serde_json::json;
use testkit::stack::{Component, Stack};
use testkit::{unique_name, wait_for};

const TIMEOUT: Duration = Duration::from_secs(60);

async fn stack() -> &'static Stack {
    Stack::shared(&[Component::ResolutionActivator]).await
}

fn store(client: &Client, stack: &Stack) -> content::Store {
    content::Store::new(client.clone(), &stack.deppy_namespace)
}

/// Files of stored content: path and bytes.
type Files<'a> = Vec<(&'a str, Vec<u8>)>;

/// Content holding `files`, as deppy-resolver stores it.
fn content_of(files: &[(&str, Vec<u8>)]) -> content::Content {
    let mut extractor = content::Extractor::new(content::Limits::default());
    for (path, data) in files {
        extractor.add_file(path, data.clone(), false).unwrap();
    }
    extractor.finish().unwrap()
}

async fn write(client: &Client, stack: &Stack, content: &content::Content) -> ContentRef {
    let stored = store(client, stack)
        .write(content, "Catalog")
        .await
        .unwrap();
    ContentRef {
        digest: stored.digest.to_string(),
        size: i64::try_from(stored.size).unwrap(),
        chunks: i32::try_from(stored.chunks).unwrap(),
    }
}

/// A bundle index listing `package` at each of `versions` in channel `stable`.
fn index(package: &str, versions: &[&str]) -> BundleIndex {
    let mut index = BundleIndex::default();
    for version in versions {
        index.add_bundle(
            package,
            IndexedBundle {
                name: format!("{package}.v{version}"),
                version: (*version).to_owned(),
                image: format!("registry.example/{package}-bundle:v{version}"),
                max_openshift_version: None,
            },
        );
    }
    index.add_channel(
        package,
        "stable",
        versions.iter().map(|v| format!("{package}.v{v}")).collect(),
    );
    index
}

/// A whole file-based catalog of `package` at `version`, as an older deppy-resolver
/// stored it (with an inline manifest the activator has no use for).
fn catalog_json(package: &str, version: &str) -> Vec<u8> {
    [
        json!({"schema": "olm.package", "name": package, "defaultChannel": "stable"}),
        json!({"schema": "olm.channel", "package": package, "name": "stable",
               "entries": [{"name": format!("{package}.v{version}")}]}),
        json!({"schema": "olm.bundle", "package": package, "name": format!("{package}.v{version}"),
        "image": format!("registry.example/{package}-bundle:v{version}"),
        "properties": [
            {"type": "olm.package", "value": {"packageName": package, "version": version}},
            {"type": "olm.bundle.object", "value": {"data": "e30="}},
        ]}),
    ]
    .iter()
    .map(|blob| blob.to_string() + "\n")
    .collect::<String>()
    .into_bytes()
}

/// A digest nothing is stored under.
fn absent_digest() -> String {
    let text = unique_name("absent");
    content::Digest::of(text.as_bytes()).to_string()
}

/// Creates a Catalog for the stack and writes its status, as deppy-resolver would.
async fn catalog(client: &Client, stack: &Stack, status: serde_json::Value) -> String {
    let name = unique_name("idx");
    let api = Api::<Catalog>::all(client.clone());
    let catalog: Catalog = serde_json::from_value(json!({
        "apiVersion": "deppy.io/v1alpha1",
        "kind": "Catalog",
        "metadata": {"name": name, "labels": stack.labels()},
        "spec": {"source": {"image": {"ref": "registry.invalid/catalog:latest"}}},
    }))
    .unwrap();
    api.create(&PostParams::default(), &catalog).await.unwrap();
    api.patch_status(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": status})),
    )
    .await
    .unwrap();
    name
}

fn serving(content: Option<&ContentRef>, index: Option<&ContentRef>) -> serde_json::Value {
    let mut status = json!({"packages": 1, "bundles": 1});
    if let Some(content) = content {
        status["content"] = serde_json::to_value(content).unwrap();
    }
    if let Some(index) = index {
        status["bundleIndex"] = serde_json::to_value(index).unwrap();
    }
    status
}

/// An ActiveResolution of class PlatformOperator whose `Resolved` is True with `selection`,
/// as deppy-resolver would leave it.
async fn resolved(client: &Client, stack: &Stack, catalog: &str, selection: &str) -> String {
    let name = unique_name("idx");
    let package = selection.split(':').nth(1).unwrap();
    let api = Api::<ActiveResolution>::all(client.clone());
    let resolution: ActiveResolution = serde_json::from_value(json!({
        "apiVersion": "deppy.io/v1alpha1",
        "kind": "ActiveResolution",
        "metadata": {
            "name": name,
            "labels": stack.labels(),
            "annotations": {deppy_api::ACTIVATOR_CLASS_ANNOTATION: "PlatformOperator"},
        },
        "spec": {"sources": [catalog], "constraints": [{"required": {"name": package}}]},
    }))
    .unwrap();
    let created = api
        .create(&PostParams::default(), &resolution)
        .await
        .unwrap();
    api.patch_status(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {
            "selections": [selection],
            "conditions": [{
                "type": TYPE_RESOLVED, "status": "True", "reason": "Succeeded",
                "message": "resolved", "observedGeneration": created.metadata.generation,
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }],
        }})),
    )
    .await
    .unwrap();
    name
}

/// Waits until `Activated` has `status` and returns the resolution.
async fn wait_activated(
    client: &Client,
    stack: &Stack,
    name: &str,
    status: &str,
) -> (ActiveResolution, Condition) {
    let api = Api::<ActiveResolution>::all(client.clone());
    wait_for(
        &format!("ActiveResolution {name} Activated={status}"),
        TIMEOUT,
        || async {
            let resolution = api.get(name).await.map_err(|e| e.to_string())?;
            let conditions = resolution.status.clone().unwrap_or_default().conditions;
            match kit::conditions::find(&conditions, TYPE_ACTIVATED) {
                Some(c) if c.status == status => Ok((resolution, c.clone())),
                other => Err(format!(
                    "Activated {other:?}\n{}",
                    stack.logs(Component::ResolutionActivator)
                )),
            }
        },
    )
    .await
}

/// ResolveSets and the wrapper written for `name`.
async fn written(client: &Client, stack: &Stack, name: &str) -> (usize, bool) {
    let config_maps = Api::<ConfigMap>::namespaced(client.clone(), &stack.rukpak_namespace)
        .list(&ListParams::default().labels(&format!("{RESOLUTION_LABEL}={name}")))
        .await
        .unwrap()
        .items
        .len();
    let wrapper = Api::<BundleDeployment>::all(client.clone())
        .get_opt(name)
        .await
        .unwrap()
        .is_some();
    (config_maps, wrapper)
}

/// Waits for a warning Event on `name` with `reason` and returns its message.
async fn wait_event(client: &Client, name: &str, reason: &str) -> String {
    let events = Api::<Event>::all(client.clone());
    wait_for(&format!("a {reason} Event on {name}"), TIMEOUT, || async {
        let list = events
            .list(&ListParams::default().fields(&format!("involvedObject.name={name}")))
            .await
            .map_err(|e| e.to_string())?;
        list.items
            .iter()
            .find(|e| e.reason.as_deref() == Some(reason))
            .map(|e| e.message.clone().unwrap_or_default())
            .ok_or_else(|| {
                format!(
                    "events: {:?}",
                    list.items.iter().map(|e| &e.reason).collect::<Vec<_>>()
                )
            })
    })
    .await
}

/// Waits until activation is refused with `reason` and checks that nothing was written and
/// that an Event says the same; returns the condition's message.
async fn refused(client: &Client, stack: &Stack, name: &str, reason: &str) -> String {
    let (resolution, condition) = wait_activated(client, stack, name, "False").await;
    assert_eq!(condition.reason, reason, "{condition:?}");
    assert!(
        resolution.status.unwrap_or_default().entities.is_empty(),
        "no entities for a refused activation"
    );
    assert_eq!(
        written(client, stack, name).await,
        (0, false),
        "nothing written"
    );
    let event = wait_event(client, name, reason).await;
    assert!(
        event.contains(&condition.message),
        "{event} / {}",
        condition.message
    );
    condition.message
}

#[tokio::test]
async fn a_catalog_with_a_bundle_index_is_activated_from_the_index_alone() {
    let stack = stack().await;
    let client = testkit::client().await;
    let package = unique_name("pkg");
    let stored = write(
        &client,
        stack,
        &content_of(&[(
            BUNDLE_INDEX_FILE,
            index(&package, &["1.0.0", "1.1.0"]).to_json().unwrap(),
        )]),
    )
    .await;
    // The content the status names is not in the store: reading it would fail.
    let content = ContentRef {
        digest: absent_digest(),
        size: 1,
        chunks: 1,
    };
    let catalog = catalog(&client, stack, serving(Some(&content), Some(&stored))).await;
    let name = resolved(
        &client,
        stack,
        &catalog,
        &format!("{catalog}:{package}:1.1.0:stable"),
    )
    .await;
    let (resolution, condition) = wait_activated(&client, stack, &name, "True").await;
    assert_eq!(condition.reason, reasons::ACTIVATED);
    let entities = resolution.status.unwrap().entities;
    assert_eq!(entities.len(), 1);
    assert_eq!(entities[0].package, package);
    assert_eq!(
        entities[0].image,
        format!("registry.example/{package}-bundle:v1.1.0")
    );
    assert_eq!(written(&client, stack, &name).await, (1, true));
}

#[tokio::test]
async fn a_catalog_served_without_an_index_is_read_from_its_content() {
    let stack = stack().await;
    let client = testkit::client().await;
    let package = unique_name("pkg");
    let stored = write(
        &client,
        stack,
        &content_of(&[(
            &format!("{package}/catalog.json"),
            catalog_json(&package, "0.3.0"),
        )]),
    )
    .await;
    let catalog = catalog(&client, stack, serving(Some(&stored), None)).await;
    let name = resolved(
        &client,
        stack,
        &catalog,
        &format!("{catalog}:{package}:0.3.0:stable"),
    )
    .await;
    let (resolution, _) = wait_activated(&client, stack, &name, "True").await;
    let entities = resolution.status.unwrap().entities;
    assert_eq!(entities.len(), 1);
    assert_eq!(
        entities[0].image,
        format!("registry.example/{package}-bundle:v0.3.0")
    );
}

#[tokio::test]
async fn a_missing_bundle_index_is_reported_and_nothing_is_written() {
    let stack = stack().await;
    let client = testkit::client().await;
    let package = unique_name("pkg");
    let missing = ContentRef {
        digest: absent_digest(),
        size: 100,
        chunks: 1,
    };
    let catalog = catalog(&client, stack, serving(None, Some(&missing))).await;
    let name = resolved(
        &client,
        stack,
        &catalog,
        &format!("{catalog}:{package}:1.0.0:stable"),
    )
    .await;
    let message = refused(&client, stack, &name, reasons::CATALOG_UNAVAILABLE).await;
    assert!(
        message.contains(&format!(
            "failed to read the bundle index of Catalog {catalog}"
        )) && message.contains("not found"),
        "{message}"
    );
}

#[tokio::test]
async fn a_malformed_bundle_index_is_reported_and_nothing_is_written() {
    let stack = stack().await;
    let client = testkit::client().await;
    let package = unique_name("pkg");
    // Verifies (it is what the store holds) but is no index: JSON of another shape, another
    // schema, and no index file at all.
    let cases: [(Files, &str); 3] = [
        (
            vec![(
                BUNDLE_INDEX_FILE,
                format!(
                    "{{\"schema\":\"deppy.io/bundle-index/v1\",\"packages\":{{\"{package}\":7}}}}"
                )
                .into_bytes(),
            )],
            "invalid type",
        ),
        (
            vec![(
                BUNDLE_INDEX_FILE,
                br#"{"schema":"deppy.io/bundle-index/v9","packages":{}}"#.to_vec(),
            )],
            "deppy.io/bundle-index/v9",
        ),
        (
            vec![("other.json", package.clone().into_bytes())],
            "holds no bundle-index.json",
        ),
    ];
    for (files, expected) in cases {
        let stored = write(&client, stack, &content_of(&files)).await;
        let catalog = catalog(&client, stack, serving(None, Some(&stored))).await;
        let name = resolved(
            &client,
            stack,
            &catalog,
            &format!("{catalog}:{package}:1.0.0:stable"),
        )
        .await;
        let message = refused(&client, stack, &name, reasons::CATALOG_UNAVAILABLE).await;
        assert!(
            message.contains(&format!(
                "failed to read the bundle index of Catalog {catalog}"
            )) && message.contains(expected)
                && message.contains("deppy-resolver writes it again"),
            "{message}"
        );
    }
}

#[tokio::test]
async fn a_bundle_index_whose_digest_does_not_verify_is_refused() {
    let stack = stack().await;
    let client = testkit::client().await;
    let package = unique_name("pkg");
    let content = content_of(&[(
        BUNDLE_INDEX_FILE,
        index(&package, &["1.0.0"]).to_json().unwrap(),
    )]);
    let stored = write(&client, stack, &content).await;
    // An attacker swaps the stored bytes for an index naming another image.
    let mut evil = index(&package, &["1.0.0"]);
    evil.packages.get_mut(&package).unwrap().bundles[0].image = "evil.example/x:1".to_owned();
    let evil = content_of(&[(BUNDLE_INDEX_FILE, evil.to_json().unwrap())]);
    let config_maps = Api::<ConfigMap>::namespaced(client.clone(), &stack.deppy_namespace);
    let chunk = content::Store::chunk_name(content.digest(), 0);
    let mut tampered = config_maps.get(&chunk).await.unwrap();
    tampered.metadata.resource_version = None;
    tampered.metadata.uid = None;
    tampered.metadata.creation_timestamp = None;
    tampered.metadata.managed_fields = None;
    let data = tampered.binary_data.get_or_insert_with(Default::default);
    let key = data.keys().next().cloned().unwrap();
    data.insert(key, ByteString(evil.to_bytes().unwrap().to_vec()));
    config_maps
        .delete(&chunk, &Default::default())
        .await
        .unwrap();
    config_maps
        .create(&PostParams::default(), &tampered)
        .await
        .unwrap();

    let catalog = catalog(&client, stack, serving(None, Some(&stored))).await;
    let name = resolved(
        &client,
        stack,
        &catalog,
        &format!("{catalog}:{package}:1.0.0:stable"),
    )
    .await;
    let message = refused(&client, stack, &name, reasons::CATALOG_UNAVAILABLE).await;
    assert!(
        message.contains(&format!(
            "failed to read the bundle index of Catalog {catalog}"
        )) && message.contains("corrupted"),
        "{message}"
    );
    assert!(!message.contains("evil.example"), "{message}");
}

#[tokio::test]
async fn a_bundle_index_without_the_selected_bundle_names_what_is_missing() {
    let stack = stack().await;
    let client = testkit::client().await;
    let package = unique_name("pkg");
    let stored = write(
        &client,
        stack,
        &content_of(&[(
            BUNDLE_INDEX_FILE,
            index(&package, &["1.0.0"]).to_json().unwrap(),
        )]),
    )
    .await;
    let catalog = catalog(&client, stack, serving(None, Some(&stored))).await;
    let name = resolved(
        &client,
        stack,
        &catalog,
        &format!("{catalog}:{package}:9.9.9:stable"),
    )
    .await;
    let message = refused(&client, stack, &name, reasons::SELECTION_NOT_FOUND).await;
    assert!(
        message.contains(&format!(
            "channel stable of package {package} in catalog {catalog} has no bundle of version 9.9.9"
        )),
        "{message}"
    );
    // The activator kept running: a resolution against a good index still activates.
    let good = resolved(
        &client,
        stack,
        &catalog,
        &format!("{catalog}:{package}:1.0.0:stable"),
    )
    .await;
    wait_activated(&client, stack, &good, "True").await;
    assert!(
        !stack
            .logs(Component::ResolutionActivator)
            .contains("panicked"),
        "no panic"
    );
}
