//! The Catalog and ActiveResolution controllers against the real control plane. Both run in
//! this process for all tests (on their own runtime, so they outlive each test's runtime),
//! with a system namespace of their own. Catalogs are cluster-scoped and every controller
//! in the cluster sees every test's Catalogs, so each test uses its own catalog names and
//! names them in `spec.sources`.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::OnceLock;
use std::time::Duration;

use deppy_api::conditions::{TYPE_RESOLVED, TYPE_SERVING, TYPE_UNPACKED, reasons};
use deppy_api::{ActiveResolution, BUNDLE_INDEX_FILE, BundleIndex, Catalog};
use deppy_resolver::controller::{self, Metrics, ServedCatalogs, Settings};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::json;
use testkit::{client, install_crds, unique_name, wait_for};

const TIMEOUT: Duration = Duration::from_secs(60);

/// The system namespace of this test process; the catalogs' ConfigMaps live there too.
fn system_namespace() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| unique_name("deppy-system"))
}

/// The readiness gates of the controllers of this process.
fn readiness() -> &'static kit::admin::Readiness {
    static READINESS: OnceLock<kit::admin::Readiness> = OnceLock::new();
    READINESS.get_or_init(kit::admin::Readiness::default)
}

/// The catalogs the controllers of this process serve.
fn served() -> &'static ServedCatalogs {
    static SERVED: OnceLock<ServedCatalogs> = OnceLock::new();
    SERVED.get_or_init(ServedCatalogs::default)
}

/// Installs the CRDs and starts the controllers, once per process.
async fn setup() -> Client {
    static STARTED: OnceLock<()> = OnceLock::new();
    let client = client().await;
    if STARTED.get().is_none() {
        install_crds(&client).await;
        let ns: Namespace =
            serde_json::from_value(json!({ "metadata": { "name": system_namespace() } })).unwrap();
        let _ = Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await;
        if STARTED.set(()).is_ok() {
            testkit::spawn_background(move || async move {
                let client = Client::try_default().await.unwrap();
                let metrics = Metrics::register(&prometheus::Registry::new()).unwrap();
                let settings = Settings {
                    system_namespace: system_namespace().to_owned(),
                    default_poll_interval: Duration::from_secs(600),
                    unpack: content::UnpackOptions::default(),
                    selector: None,
                    content_sweep_interval: Duration::from_secs(600),
                    api: None,
                };
                controller::run(
                    client,
                    settings,
                    metrics,
                    served().clone(),
                    readiness(),
                    tokio_util::sync::CancellationToken::new(),
                )
                .await;
            });
        }
    }
    client
}

/// A bundle blob of `package` at `version`, optionally requiring another package.
fn bundle(package: &str, version: &str, requires: Option<&str>) -> String {
    let mut out = format!(
        "---\nschema: olm.bundle\nname: {package}.v{version}\npackage: {package}\nimage: example.com/{package}:v{version}\nproperties:\n- type: olm.package\n  value: {{packageName: {package}, version: {version}}}\n"
    );
    if let Some(required) = requires {
        out.push_str(&format!(
            "- type: olm.package.required\n  value: {{packageName: {required}, versionRange: \">=1.0.0\"}}\n"
        ));
    }
    out
}

/// A package with one `stable` channel holding `versions` in upgrade order.
fn package(name: &str, versions: &[&str], requires: Option<&str>) -> String {
    let mut out = format!(
        "---\nschema: olm.package\nname: {name}\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: {name}\nname: stable\nentries:\n"
    );
    for (i, version) in versions.iter().enumerate() {
        out.push_str(&format!("- name: {name}.v{version}\n"));
        if i > 0 {
            out.push_str(&format!("  replaces: {name}.v{}\n", versions[i - 1]));
        }
    }
    for version in versions {
        out.push_str(&bundle(name, version, requires));
    }
    out
}

/// The test FBC: `app` (1.0.0, 1.1.0 plus `extra`) requiring `lib` (1.0.0 plus `extra`).
fn fbc(extra: &[&str]) -> String {
    let mut app = vec!["1.0.0", "1.1.0"];
    app.extend(extra);
    let mut lib = vec!["1.0.0"];
    lib.extend(extra);
    format!(
        "{}{}",
        package("app", &app, Some("lib")),
        package("lib", &lib, None)
    )
}

/// Creates an immutable ConfigMap holding `catalog` as `catalog.yaml`.
async fn create_config_map(client: &Client, name: &str, catalog: &str) {
    let config_map: ConfigMap = serde_json::from_value(json!({
        "metadata": { "name": name, "namespace": system_namespace() },
        "immutable": true,
        "data": { "catalog.yaml": catalog }
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), system_namespace())
        .create(&PostParams::default(), &config_map)
        .await
        .unwrap();
}

/// Creates or updates Catalog `name` to serve ConfigMap `config_map`.
async fn apply_catalog(client: &Client, name: &str, config_map: &str) {
    let catalog = json!({
        "apiVersion": "deppy.io/v1alpha1", "kind": "Catalog",
        "metadata": { "name": name },
        "spec": { "source": { "configMap": { "name": config_map, "namespace": system_namespace() } } }
    });
    Api::<Catalog>::all(client.clone())
        .patch(
            name,
            &PatchParams::apply("test").force(),
            &Patch::Apply(&catalog),
        )
        .await
        .unwrap();
}

/// A serving Catalog of `fbc(extra)`, under a fresh name.
async fn serving_catalog(client: &Client, extra: &[&str]) -> String {
    let name = unique_name("cat");
    create_config_map(client, &name, &fbc(extra)).await;
    apply_catalog(client, &name, &name).await;
    wait_for_serving(client, &name, None).await;
    name
}

/// Waits until the Catalog is Serving (from ConfigMap `config_map` when given).
async fn wait_for_serving(client: &Client, name: &str, config_map: Option<&str>) -> Catalog {
    let api: Api<Catalog> = Api::all(client.clone());
    wait_for(&format!("Catalog {name} to serve"), TIMEOUT, || async {
        let catalog = api.get(name).await.map_err(|e| e.to_string())?;
        let status = catalog.status.clone().unwrap_or_default();
        let serving = kit::conditions::is_true(
            &status.conditions,
            TYPE_SERVING,
            catalog.metadata.generation,
        );
        let from = config_map.is_none_or(|cm| {
            status
                .resolved_source
                .as_deref()
                .is_some_and(|s| s.contains(&format!("/{cm}@")))
        });
        if serving && from {
            Ok(catalog)
        } else {
            Err(format!("{status:?}"))
        }
    })
    .await
}

/// Creates an ActiveResolution over `sources` with `constraints` (API form).
async fn create_resolution(
    client: &Client,
    sources: &[&str],
    constraints: serde_json::Value,
) -> String {
    let name = unique_name("ar");
    let resolution: ActiveResolution = serde_json::from_value(json!({
        "apiVersion": "deppy.io/v1alpha1", "kind": "ActiveResolution",
        "metadata": { "name": name },
        "spec": { "sources": sources, "constraints": constraints }
    }))
    .unwrap();
    Api::<ActiveResolution>::all(client.clone())
        .create(&PostParams::default(), &resolution)
        .await
        .unwrap();
    name
}

/// Waits until the ActiveResolution's `Resolved` condition has `reason` for its current
/// generation and `accept` holds, and returns it.
async fn wait_for_resolved(
    client: &Client,
    name: &str,
    reason: &str,
    accept: impl Fn(&ActiveResolution) -> bool,
) -> ActiveResolution {
    let api: Api<ActiveResolution> = Api::all(client.clone());
    wait_for(
        &format!("ActiveResolution {name} to be {reason}"),
        TIMEOUT,
        || async {
            let resolution = api.get(name).await.map_err(|e| e.to_string())?;
            let status = resolution.status.clone().unwrap_or_default();
            let matches =
                kit::conditions::find(&status.conditions, TYPE_RESOLVED).is_some_and(|c| {
                    c.reason == reason && c.observed_generation == resolution.metadata.generation
                });
            if matches && accept(&resolution) {
                Ok(resolution)
            } else {
                Err(format!("{status:?}"))
            }
        },
    )
    .await
}

fn selections(resolution: &ActiveResolution) -> Vec<String> {
    resolution.status.clone().unwrap_or_default().selections
}

#[tokio::test]
async fn a_catalog_from_an_immutable_configmap_serves_with_its_package_and_bundle_counts() {
    let client = setup().await;
    let name = serving_catalog(&client, &[]).await;
    let catalog = wait_for_serving(&client, &name, Some(&name)).await;
    let status = catalog.status.unwrap();
    assert_eq!(status.packages, Some(2));
    assert_eq!(status.bundles, Some(3));
    assert!(kit::conditions::is_true(
        &status.conditions,
        TYPE_UNPACKED,
        catalog.metadata.generation
    ));
    let content = status.content.expect("content stored");
    assert!(content.digest.starts_with("sha256:"), "{content:?}");
    assert!(content.chunks >= 1 && content.size > 0, "{content:?}");
    assert_eq!(status.observed_generation, catalog.metadata.generation);
}

#[tokio::test]
async fn a_served_catalog_stores_its_bundle_index_beside_its_content() {
    let client = setup().await;
    let name = serving_catalog(&client, &["1.2.0"]).await;
    let status = wait_for_serving(&client, &name, Some(&name))
        .await
        .status
        .unwrap();
    let reference = status.bundle_index.expect("bundle index stored");
    assert_ne!(Some(&reference), status.content.as_ref());
    let digest: content::Digest = reference.digest.parse().unwrap();
    let stored = content::Store::new(client.clone(), system_namespace())
        .read(&digest)
        .await
        .unwrap();
    assert_eq!(i64::try_from(stored.size()).unwrap(), reference.size);
    let files = stored.files(&content::Limits::default()).unwrap();
    assert_eq!(files.len(), 1, "one file");
    let index = BundleIndex::from_json(files.get(BUNDLE_INDEX_FILE).unwrap()).unwrap();
    assert_eq!(index.bundle_count(), 5);
    let app = index.find("app", "1.2.0", "stable").unwrap();
    assert_eq!(app.name, "app.v1.2.0");
    assert_eq!(app.image, "example.com/app:v1.2.0");
    assert_eq!(
        index.packages["lib"].channels["stable"],
        ["lib.v1.0.0", "lib.v1.2.0"]
    );

    // The same catalog under another name shares both the content and the index.
    let twin_name = unique_name("cat");
    apply_catalog(&client, &twin_name, &name).await;
    let twin = wait_for_serving(&client, &twin_name, Some(&name))
        .await
        .status
        .unwrap();
    assert_eq!(twin.bundle_index, Some(reference));
    assert_eq!(twin.content, status.content);
    // ... and holds the parsed catalog once.
    let first = served().get(&name).unwrap().index;
    let second = served().get(&twin_name).unwrap().index;
    assert!(std::sync::Arc::ptr_eq(&first, &second), "one parsed index");

    // The sweep keeps what Catalogs reference: the index as well as the content.
    let referenced = controller::referenced_content(client.clone())
        .await
        .unwrap();
    assert!(referenced.contains(&digest.to_string()), "{referenced:?}");
}

#[tokio::test]
async fn a_mutable_configmap_is_refused_as_unpack_failed() {
    let client = setup().await;
    let name = unique_name("cat");
    let config_map: ConfigMap = serde_json::from_value(json!({
        "metadata": { "name": name, "namespace": system_namespace() },
        "data": { "catalog.yaml": fbc(&[]) }
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), system_namespace())
        .create(&PostParams::default(), &config_map)
        .await
        .unwrap();
    apply_catalog(&client, &name, &name).await;
    let api: Api<Catalog> = Api::all(client.clone());
    let message = wait_for("the Catalog to fail unpacking", TIMEOUT, || async {
        let catalog = api.get(&name).await.map_err(|e| e.to_string())?;
        let status = catalog.status.unwrap_or_default();
        kit::conditions::find(&status.conditions, TYPE_UNPACKED)
            .filter(|c| c.reason == reasons::UNPACK_FAILED)
            .map(|c| c.message.clone())
            .ok_or_else(|| format!("{:?}", status.conditions))
    })
    .await;
    assert!(message.contains("not immutable"), "{message}");
}

#[tokio::test]
async fn a_catalog_updated_to_invalid_content_stops_serving_and_says_why() {
    let client = setup().await;
    let name = serving_catalog(&client, &[]).await;
    let broken = unique_name("broken");
    // A channel entry naming a bundle that does not exist.
    let catalog = "---\nschema: olm.package\nname: app\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: app\nname: stable\nentries:\n- name: app.v9.9.9\n";
    create_config_map(&client, &broken, catalog).await;
    apply_catalog(&client, &name, &broken).await;
    let api: Api<Catalog> = Api::all(client.clone());
    let status = wait_for("the Catalog to be invalid", TIMEOUT, || async {
        let catalog = api.get(&name).await.map_err(|e| e.to_string())?;
        let status = catalog.status.unwrap_or_default();
        if kit::conditions::find(&status.conditions, TYPE_SERVING)
            .is_some_and(|c| c.reason == reasons::INVALID_CATALOG)
        {
            Ok(status)
        } else {
            Err(format!("{:?}", status.conditions))
        }
    })
    .await;
    let condition = kit::conditions::find(&status.conditions, TYPE_SERVING).unwrap();
    assert_eq!(condition.status, "False");
    assert!(
        condition.message.contains("app.v9.9.9"),
        "{}",
        condition.message
    );
    // Nothing of the previous content is left to mislead.
    assert_eq!(status.content, None);
    assert_eq!(status.bundle_index, None);
    assert_eq!(status.packages, None);
    assert_eq!(status.bundles, None);
}

#[tokio::test]
async fn a_required_package_resolves_to_its_newest_bundle_and_its_dependency_and_a_repeat_answer_is_not_rewritten()
 {
    let client = setup().await;
    let catalog = serving_catalog(&client, &[]).await;
    let name = create_resolution(
        &client,
        &[&catalog],
        json!([{ "required": { "name": "app" } }]),
    )
    .await;
    let resolution = wait_for_resolved(&client, &name, reasons::SUCCEEDED, |_| true).await;
    assert_eq!(
        selections(&resolution),
        [
            format!("{catalog}:app:1.1.0:stable"),
            format!("{catalog}:lib:1.0.0:stable")
        ]
    );
    let condition = kit::conditions::find(
        &resolution.status.clone().unwrap_or_default().conditions,
        TYPE_RESOLVED,
    )
    .cloned()
    .unwrap();
    assert_eq!(condition.status, "True");

    // Another catalog starting to serve resolves every ActiveResolution again; this one's
    // answer is the same, so its status must not be written.
    let version = resolution.metadata.resource_version.clone();
    serving_catalog(&client, &[]).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = Api::<ActiveResolution>::all(client.clone())
        .get(&name)
        .await
        .unwrap();
    assert_eq!(after.metadata.resource_version, version);
}

#[tokio::test]
async fn unsatisfiable_constraints_are_explained_in_the_condition() {
    let client = setup().await;
    let catalog = serving_catalog(&client, &[]).await;
    let name = create_resolution(
        &client,
        &[&catalog],
        json!([
            { "required": { "name": "app" } },
            { "prohibited": { "name": "lib" } }
        ]),
    )
    .await;
    let resolution =
        wait_for_resolved(&client, &name, reasons::CONSTRAINTS_NOT_SATISFIABLE, |_| {
            true
        })
        .await;
    let condition = kit::conditions::find(
        &resolution.status.clone().unwrap_or_default().conditions,
        TYPE_RESOLVED,
    )
    .cloned()
    .unwrap();
    assert_eq!(condition.status, "False");
    assert!(
        condition.message.contains(&format!(
            "bundle {catalog}:lib:1.0.0:stable is prohibited by prohibited(\"lib\")"
        )),
        "{}",
        condition.message
    );
    assert!(selections(&resolution).is_empty());
}

#[tokio::test]
async fn an_expression_with_an_invalid_range_is_an_invalid_spec() {
    let client = setup().await;
    let catalog = serving_catalog(&client, &[]).await;
    let name = create_resolution(
        &client,
        &[&catalog],
        json!([{ "expression": "required(\"app\", \"not a range\")" }]),
    )
    .await;
    let resolution = wait_for_resolved(&client, &name, reasons::INVALID_SPEC, |_| true).await;
    let condition = kit::conditions::find(
        &resolution.status.clone().unwrap_or_default().conditions,
        TYPE_RESOLVED,
    )
    .cloned()
    .unwrap();
    assert!(condition.message.contains("range"), "{}", condition.message);
}

#[tokio::test]
async fn a_source_that_is_not_a_serving_catalog_is_unavailable() {
    let client = setup().await;
    let missing = unique_name("missing");
    let name = create_resolution(
        &client,
        &[&missing],
        json!([{ "required": { "name": "app" } }]),
    )
    .await;
    let resolution = wait_for_resolved(&client, &name, reasons::SOURCE_UNAVAILABLE, |_| true).await;
    let condition = kit::conditions::find(
        &resolution.status.clone().unwrap_or_default().conditions,
        TYPE_RESOLVED,
    )
    .cloned()
    .unwrap();
    assert!(
        condition.message.contains(&missing),
        "{}",
        condition.message
    );
}

#[tokio::test]
async fn pointing_the_catalog_at_a_newer_configmap_changes_the_selection_and_keeps_the_activators_entities()
 {
    let client = setup().await;
    let catalog = serving_catalog(&client, &[]).await;
    let name = create_resolution(
        &client,
        &[&catalog],
        json!([{ "required": { "name": "app" } }]),
    )
    .await;
    wait_for_resolved(&client, &name, reasons::SUCCEEDED, |r| {
        selections(r).contains(&format!("{catalog}:app:1.1.0:stable"))
    })
    .await;

    // The activator's field, which the resolver must leave alone.
    Api::<ActiveResolution>::all(client.clone())
        .patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": { "entities": [{ "package": "app", "image": "example.com/app:v1.1.0" }] } })),
        )
        .await
        .unwrap();

    let newer = unique_name("cat-v2");
    create_config_map(&client, &newer, &fbc(&["2.0.0"])).await;
    apply_catalog(&client, &catalog, &newer).await;
    let served = wait_for_serving(&client, &catalog, Some(&newer)).await;
    assert_eq!(served.status.unwrap().bundles, Some(5));

    let resolution = wait_for_resolved(&client, &name, reasons::SUCCEEDED, |r| {
        selections(r).contains(&format!("{catalog}:app:2.0.0:stable"))
    })
    .await;
    assert_eq!(
        selections(&resolution),
        [
            format!("{catalog}:app:2.0.0:stable"),
            format!("{catalog}:lib:2.0.0:stable")
        ]
    );
    let entities = resolution.status.unwrap_or_default().entities;
    assert_eq!(entities.len(), 1, "{entities:?}");
    assert_eq!(entities[0].package, "app");
}

/// `crane registry serve` on a free loopback port, killed when dropped.
struct Registry {
    child: std::process::Child,
    addr: String,
}

impl Registry {
    fn start() -> Self {
        let addr = format!("127.0.0.1:{}", testkit::servers::free_port());
        let child = std::process::Command::new("crane")
            .args(["registry", "serve", "--address", &addr])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|err| {
                panic!(
                    "failed to start `crane registry serve` ({err}); crane must be on PATH: \
                     run via `make test`, or add the output of hack/build-tools to PATH"
                )
            });
        let started = std::time::Instant::now();
        while std::net::TcpStream::connect(&addr).is_err() {
            assert!(started.elapsed() < TIMEOUT, "crane registry did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        Self { child, addr }
    }

    /// Pushes a catalog image (the FBC under `configs/`) as `repository:tag`.
    fn push(&self, repository_and_tag: &str, catalog: &str) {
        let dir = std::env::temp_dir().join(unique_name("catalog-image"));
        std::fs::create_dir_all(dir.join("configs")).unwrap();
        std::fs::write(dir.join("configs/catalog.yaml"), catalog).unwrap();
        let layer = dir.join("layer.tar");
        let tar = std::process::Command::new("tar")
            .arg("-cf")
            .arg(&layer)
            .arg("-C")
            .arg(&dir)
            .arg("configs")
            .output()
            .unwrap();
        assert!(
            tar.status.success(),
            "{}",
            String::from_utf8_lossy(&tar.stderr)
        );
        let push = std::process::Command::new("crane")
            .arg("append")
            .arg("-f")
            .arg(&layer)
            .arg("-t")
            .arg(format!("{}/{repository_and_tag}", self.addr))
            .output()
            .unwrap();
        assert!(
            push.status.success(),
            "{}",
            String::from_utf8_lossy(&push.stderr)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn a_catalog_image_by_tag_is_served_pinned_to_its_digest_and_polled_for_updates() {
    let client = setup().await;
    let registry = Registry::start();
    registry.push("catalogs/test:latest", &fbc(&[]));
    let name = unique_name("cat-image");
    let catalog = json!({
        "apiVersion": "deppy.io/v1alpha1", "kind": "Catalog",
        "metadata": { "name": name },
        "spec": {
            "source": { "image": { "ref": format!("{}/catalogs/test:latest", registry.addr) } },
            "pollInterval": "1s"
        }
    });
    Api::<Catalog>::all(client.clone())
        .patch(
            &name,
            &PatchParams::apply("test").force(),
            &Patch::Apply(&catalog),
        )
        .await
        .unwrap();
    let served = wait_for_serving(&client, &name, None).await;
    let status = served.status.unwrap();
    let first = status.resolved_source.clone().unwrap();
    assert!(
        first.starts_with(&format!("{}/catalogs/test@sha256:", registry.addr)),
        "{first}"
    );
    assert_eq!(status.bundles, Some(3));

    registry.push("catalogs/test:latest", &fbc(&["2.0.0"]));
    let api: Api<Catalog> = Api::all(client.clone());
    let updated = wait_for("the poll to pick up the new image", TIMEOUT, || async {
        let status = api
            .get(&name)
            .await
            .map_err(|e| e.to_string())?
            .status
            .unwrap_or_default();
        if status.bundles == Some(5) {
            Ok(status)
        } else {
            Err(format!("{status:?}"))
        }
    })
    .await;
    assert_ne!(updated.resolved_source.as_deref(), Some(first.as_str()));
}

#[tokio::test]
async fn deleting_a_catalog_makes_its_resolutions_source_unavailable() {
    let client = setup().await;
    let catalog = serving_catalog(&client, &[]).await;
    let name = create_resolution(
        &client,
        &[&catalog],
        json!([{ "required": { "name": "lib" } }]),
    )
    .await;
    wait_for_resolved(&client, &name, reasons::SUCCEEDED, |_| true).await;
    Api::<Catalog>::all(client.clone())
        .delete(&catalog, &kube::api::DeleteParams::default())
        .await
        .unwrap();
    let resolution = wait_for_resolved(&client, &name, reasons::SOURCE_UNAVAILABLE, |_| true).await;
    // The last good answer stays for the activator; the condition says it is stale.
    assert_eq!(
        selections(&resolution),
        [format!("{catalog}:lib:1.0.0:stable")]
    );
}

#[tokio::test]
async fn the_controllers_become_ready_once_both_watches_have_synced() {
    setup().await;
    let pending = wait_for("the controllers to be ready", TIMEOUT, || async {
        let pending = readiness().pending();
        if pending.is_empty() {
            Ok(pending)
        } else {
            Err(format!("{pending:?}"))
        }
    })
    .await;
    assert!(pending.is_empty());
}

#[tokio::test]
async fn a_restarted_controller_serves_a_catalog_from_the_content_store_without_fetching_it() {
    let client = setup().await;
    let name = serving_catalog(&client, &[]).await;
    let before = wait_for_serving(&client, &name, Some(&name)).await;
    let polled = before.status.clone().unwrap().last_polled;
    assert!(polled.is_some());
    // lastPolled has second precision: a fetch now would change it.
    tokio::time::sleep(Duration::from_millis(1100)).await;

    // A second instance, as after a restart: nothing served in memory yet.
    let served = ServedCatalogs::default();
    let shutdown = tokio_util::sync::CancellationToken::new();
    let instance = {
        let served = served.clone();
        let shutdown = shutdown.clone();
        testkit::spawn_background(move || async move {
            let client = Client::try_default().await.unwrap();
            let metrics = Metrics::register(&prometheus::Registry::new()).unwrap();
            let settings = Settings {
                system_namespace: system_namespace().to_owned(),
                default_poll_interval: Duration::from_secs(600),
                unpack: content::UnpackOptions::default(),
                selector: None,
                content_sweep_interval: Duration::from_secs(600),
                api: None,
            };
            controller::run(
                client,
                settings,
                metrics,
                served,
                &kit::admin::Readiness::default(),
                shutdown,
            )
            .await;
        })
    };
    let index = wait_for(
        "the second instance to serve the catalog",
        TIMEOUT,
        || async {
            served
                .get(&name)
                .map(|catalog| catalog.index)
                .ok_or_else(|| "not served".to_owned())
        },
    )
    .await;
    shutdown.cancel();
    instance.join().unwrap();

    assert_eq!(index.catalog().bundles.len(), 3);
    let after = Api::<Catalog>::all(client.clone())
        .get(&name)
        .await
        .unwrap();
    assert_eq!(after.status.unwrap().last_polled, polled);
}
