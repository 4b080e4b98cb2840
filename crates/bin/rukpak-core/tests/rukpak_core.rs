//! rukpak-core against the real control plane: unpacking from ConfigMaps, http and
//! uploads (image and git sources are covered by the content crate's tests against a
//! real registry and git server), failure messages, a bundle of more than 20 MiB, and
//! BundleDeployment pivots. The controllers run in this process, on a runtime of their
//! own that outlives each test.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kit::metrics::ReconcileMetrics;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use rukpak_api::{Bundle, BundleDeployment, BundlePhase, bundle_name, template_hash};
use rukpak_core::{bundle, deployment_bundles};
use serde_json::json;
use testkit::{client, unique_name, wait_for};

const TIMEOUT: Duration = Duration::from_secs(60);

/// How often this process's rukpak-core sweeps unreferenced content.
const SWEEP_INTERVAL: Duration = Duration::from_secs(2);

/// The denied networks of this process's rukpak-core: the defaults plus one loopback
/// address that tests can listen on.
const DENIED: &str = "169.254.0.0/16,fe80::/10,fd00:ec2::254/128,127.0.0.99/32";

fn system_namespace() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| unique_name("rukpak-system"))
}

/// Only objects labelled for this process are handled: the cluster is shared with other
/// test binaries, whose leftovers must not be unpacked here.
fn test_selector() -> String {
    format!("olmv1-test={}", system_namespace())
}

async fn setup() -> Client {
    static STARTED: OnceLock<()> = OnceLock::new();
    let client = client().await;
    if STARTED.get().is_none() {
        testkit::install_rukpak(&client, system_namespace()).await;
        if STARTED.set(()).is_ok() {
            testkit::spawn_background(move || async move {
                let client = Client::try_default().await.unwrap();
                let registry = prometheus::Registry::new();
                let reconciles = ReconcileMetrics::register(&registry, "rukpak_core_test").unwrap();
                let unpacks = bundle::UnpackMetrics::register(&registry).unwrap();
                let readiness = kit::admin::Readiness::default();
                let token = tokio_util::sync::CancellationToken::new();
                let bundles = Arc::new(
                    bundle::Context::new(
                        client.clone(),
                        system_namespace(),
                        content::source::UnpackOptions {
                            // One loopback address stands for the metadata endpoint a tenant
                            // might point a source at (see the denied-network test).
                            denied_networks: DENIED.parse().unwrap(),
                            ..content::source::UnpackOptions::default()
                        },
                        reconciles.clone(),
                        unpacks,
                        Some(test_selector()),
                    )
                    // Sweeps a test can wait for (production: every 10 minutes).
                    .with_sweep_interval(SWEEP_INTERVAL),
                );
                let deployments = Arc::new(deployment_bundles::Context::new(
                    client,
                    reconciles,
                    Some(test_selector()),
                ));
                tokio::join!(
                    bundle::run(bundles, &readiness, token.clone()),
                    deployment_bundles::run(deployments, &readiness, token)
                );
            });
        }
    }
    client
}

fn bundle_object(name: &str, source: serde_json::Value) -> Bundle {
    serde_json::from_value(json!({
        "apiVersion": "core.rukpak.io/v1alpha1", "kind": "Bundle",
        "metadata": { "name": name, "labels": { "olmv1-test": system_namespace() } },
        "spec": { "provisionerClassName": "core-rukpak-io-plain", "source": source }
    }))
    .unwrap()
}

/// Waits until the Bundle reaches `phase`, returning it.
async fn wait_phase(client: &Client, name: &str, phase: BundlePhase) -> Bundle {
    let bundles: Api<Bundle> = Api::all(client.clone());
    wait_for(&format!("Bundle {name} {phase:?}"), TIMEOUT, || async {
        let bundle = bundles.get(name).await.map_err(|e| e.to_string())?;
        let status = bundle.status.clone().unwrap_or_default();
        if status.phase == Some(phase) {
            Ok(bundle)
        } else {
            Err(format!(
                "{:?}: {:?}",
                status.phase,
                status.conditions.first().map(|c| &c.message)
            ))
        }
    })
    .await
}

fn unpacked_message(bundle: &Bundle) -> String {
    let status = bundle.status.clone().unwrap_or_default();
    kit::conditions::find(&status.conditions, "Unpacked")
        .map(|c| c.message.clone())
        .unwrap_or_default()
}

async fn configmap(client: &Client, name: &str, immutable: bool, data: serde_json::Value) {
    let cm: ConfigMap = serde_json::from_value(
        json!({ "metadata": { "name": name }, "immutable": immutable, "data": data }),
    )
    .unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), system_namespace())
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
}

/// Reads a Bundle's content back from the store (digest verified) as a file map.
async fn files_of(client: &Client, bundle: &Bundle) -> content::FileMap {
    let status = bundle.status.clone().unwrap();
    let digest = status.content.unwrap().digest.parse().unwrap();
    let store = content::store::Store::new(client.clone(), system_namespace());
    store
        .read(&digest)
        .await
        .unwrap()
        .files(&content::Limits::default())
        .unwrap()
}

#[tokio::test]
async fn an_immutable_config_map_bundle_unpacks_into_the_content_store() {
    let client = setup().await;
    let cm = unique_name("manifests");
    configmap(
        &client,
        &cm,
        true,
        json!({ "cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n" }),
    )
    .await;
    let name = unique_name("cmb");
    let source = json!({ "type": "configMaps", "configMaps": [{ "configMap": { "name": cm }, "path": "manifests" }] });
    Api::<Bundle>::all(client.clone())
        .create(&PostParams::default(), &bundle_object(&name, source))
        .await
        .unwrap();

    let bundle = wait_phase(&client, &name, BundlePhase::Unpacked).await;
    assert_eq!(
        unpacked_message(&bundle),
        "Successfully unpacked the configMaps Bundle"
    );
    let files = files_of(&client, &bundle).await;
    assert!(
        files
            .get("manifests/cm.yaml")
            .is_some_and(|b| b.starts_with(b"apiVersion: v1"))
    );
}

/// Content goes a couple of sweeps after the last Bundle using it, and not before: a Bundle
/// sharing the digest keeps it through every sweep, and its sharers wrote nothing.
#[tokio::test]
async fn content_is_swept_once_no_bundle_references_it() {
    let client = setup().await;
    let cm = unique_name("swept");
    configmap(
        &client,
        &cm,
        true,
        json!({ "cm.yaml": format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {cm}}}\n") }),
    )
    .await;
    let source = json!({ "type": "configMaps", "configMaps": [{ "configMap": { "name": cm }, "path": "manifests" }] });
    let bundles: Api<Bundle> = Api::all(client.clone());
    let (first, second) = (unique_name("sweep-a"), unique_name("sweep-b"));
    for name in [&first, &second] {
        bundles
            .create(&PostParams::default(), &bundle_object(name, source.clone()))
            .await
            .unwrap();
    }
    let unpacked = wait_phase(&client, &first, BundlePhase::Unpacked).await;
    wait_phase(&client, &second, BundlePhase::Unpacked).await;
    let digest: content::Digest = unpacked
        .status
        .unwrap()
        .content
        .unwrap()
        .digest
        .parse()
        .unwrap();
    let store = content::store::Store::new(client.clone(), system_namespace());

    // One Bundle goes; the other still references the content through several sweeps.
    testkit::delete_and_wait(&bundles, &first, TIMEOUT).await;
    tokio::time::sleep(SWEEP_INTERVAL * 4).await;
    assert!(
        store.read(&digest).await.is_ok(),
        "swept while still referenced"
    );

    // The last one goes: a sweep marks the content, the next deletes it.
    testkit::delete_and_wait(&bundles, &second, TIMEOUT).await;
    wait_for("the content to be swept", TIMEOUT, || async {
        match store.stat(&digest).await {
            Ok(None) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let left = Api::<ConfigMap>::namespaced(client.clone(), system_namespace())
        .list(&kube::api::ListParams::default().labels(&content::store::Store::selector(&digest)))
        .await
        .unwrap();
    assert!(left.items.is_empty(), "chunks left: {}", left.items.len());
}

#[tokio::test]
async fn a_mutable_or_missing_config_map_fails_the_unpack_with_its_name() {
    let client = setup().await;
    let mutable = unique_name("mutable");
    configmap(&client, &mutable, false, json!({ "a.yaml": "x: 1" })).await;
    let name = unique_name("mut");
    let source =
        json!({ "type": "configMaps", "configMaps": [{ "configMap": { "name": mutable } }] });
    Api::<Bundle>::all(client.clone())
        .create(&PostParams::default(), &bundle_object(&name, source))
        .await
        .unwrap();
    let bundle = wait_phase(&client, &name, BundlePhase::Failing).await;
    let message = unpacked_message(&bundle);
    assert!(
        message.contains(&mutable) && message.contains("immutable"),
        "{message}"
    );

    let name = unique_name("missing");
    let source = json!({ "type": "configMaps", "configMaps": [{ "configMap": { "name": "does-not-exist" } }] });
    Api::<Bundle>::all(client.clone())
        .create(&PostParams::default(), &bundle_object(&name, source))
        .await
        .unwrap();
    let bundle = wait_phase(&client, &name, BundlePhase::Failing).await;
    assert_eq!(
        unpacked_message(&bundle),
        format!("ConfigMap {}/does-not-exist not found", system_namespace())
    );
}

/// A gzip'd tar of `files`.
fn tar_gz(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    for (path, data) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append_data(&mut header, path, *data).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

/// Serves `body` at `/bundle.tgz` on a loopback port; other paths are 404.
async fn serve(body: Vec<u8>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let app = axum::Router::new().route(
        "/bundle.tgz",
        axum::routing::get(move || {
            let body = body.clone();
            async move { body }
        }),
    );
    testkit::spawn_background(move || async move {
        let listener = tokio::net::TcpListener::from_std(listener.into_std().unwrap()).unwrap();
        axum::serve(listener, app).await.unwrap();
    });
    format!("http://{address}")
}

#[tokio::test]
async fn an_http_bundle_unpacks_and_records_its_sha256_and_bad_downloads_say_why() {
    let client = setup().await;
    let archive = tar_gz(&[(
        "manifests/a.yaml",
        b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
    )]);
    let sha256 = {
        use std::fmt::Write as _;
        let digest = <sha2::Sha256 as sha2::Digest>::digest(&archive);
        digest.iter().fold(String::new(), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
    };
    let base = serve(archive).await;
    let bundles: Api<Bundle> = Api::all(client.clone());

    let ok = unique_name("http");
    bundles
        .create(
            &PostParams::default(),
            &bundle_object(
                &ok,
                json!({ "type": "http", "http": { "url": format!("{base}/bundle.tgz") } }),
            ),
        )
        .await
        .unwrap();
    let bundle = wait_phase(&client, &ok, BundlePhase::Unpacked).await;
    let resolved = bundle.status.clone().unwrap().resolved_source.unwrap();
    assert_eq!(resolved.http.unwrap().sha256, Some(sha256));

    let missing = unique_name("http404");
    bundles
        .create(
            &PostParams::default(),
            &bundle_object(
                &missing,
                json!({ "type": "http", "http": { "url": format!("{base}/nope.tgz") } }),
            ),
        )
        .await
        .unwrap();
    let message = unpacked_message(&wait_phase(&client, &missing, BundlePhase::Failing).await);
    assert!(message.contains("404"), "{message}");

    let mismatch = unique_name("httpsha");
    let wrong = "0".repeat(64);
    bundles.create(&PostParams::default(), &bundle_object(&mismatch, json!({ "type": "http", "http": { "url": format!("{base}/bundle.tgz"), "sha256": wrong } }))).await.unwrap();
    let message = unpacked_message(&wait_phase(&client, &mismatch, BundlePhase::Failing).await);
    assert!(message.contains("sha256"), "{message}");
}

#[tokio::test]
async fn an_upload_bundle_waits_for_its_content_and_a_20_mib_upload_round_trips() {
    let client = setup().await;
    let name = unique_name("upload");
    Api::<Bundle>::all(client.clone())
        .create(
            &PostParams::default(),
            &bundle_object(&name, json!({ "type": "upload", "upload": {} })),
        )
        .await
        .unwrap();
    let pending = wait_phase(&client, &name, BundlePhase::Pending).await;
    assert!(unpacked_message(&pending).contains("Waiting for the bundle content to be uploaded"));

    // 24 MiB of manifests that do not compress well, so the content spans several chunks.
    let dir = std::env::temp_dir().join(unique_name("upload"));
    std::fs::create_dir_all(dir.join("manifests")).unwrap();
    for i in 0..24 {
        let mut file =
            std::fs::File::create(dir.join("manifests").join(format!("cm-{i}.yaml"))).unwrap();
        let mut noise = vec![0u8; 1024 * 1024];
        rand::Rng::fill(&mut rand::rng(), noise.as_mut_slice());
        let noise: String = noise
            .iter()
            .map(|b| char::from(b"0123456789abcdef"[usize::from(b & 15)]))
            .collect();
        writeln!(file, "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm-{i}}}\ndata:\n  blob: \"{noise}\"").unwrap();
    }
    let stored = rukpak_core::upload::upload(
        &client,
        system_namespace(),
        &name,
        dir.clone(),
        &content::Limits::default(),
    )
    .await
    .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(stored.chunks >= 10, "{stored:?}");
    let bundle = wait_phase(&client, &name, BundlePhase::Unpacked).await;
    assert_eq!(
        bundle.status.clone().unwrap().content.unwrap().digest,
        stored.digest.to_string()
    );
    let files = files_of(&client, &bundle).await;
    assert_eq!(
        files
            .iter()
            .filter(|(p, _)| p.starts_with("manifests/"))
            .count(),
        24
    );

    // A corrupted chunk is detected on read, never used.
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), system_namespace());
    let chunk = configmaps
        .list(&ListParams::default().labels(&content::store::Store::selector(&stored.digest)))
        .await
        .unwrap()
        .items
        .into_iter()
        .last()
        .unwrap();
    let chunk_name = chunk.name_any();
    configmaps
        .delete(&chunk_name, &DeleteParams::default())
        .await
        .unwrap();
    let mut corrupted = chunk.clone();
    corrupted.metadata = kube::api::ObjectMeta {
        name: Some(chunk_name),
        labels: chunk.metadata.labels.clone(),
        annotations: chunk.metadata.annotations.clone(),
        ..Default::default()
    };
    if let Some(data) = corrupted.binary_data.as_mut() {
        for value in data.values_mut() {
            if let Some(byte) = value.0.get_mut(100) {
                *byte ^= 0xff;
            }
        }
    }
    wait_for("the old chunk to be gone", TIMEOUT, || async {
        match configmaps.create(&PostParams::default(), &corrupted).await {
            Ok(_) => Ok(()),
            Err(err) => Err(err.to_string()),
        }
    })
    .await;
    let store = content::store::Store::new(client.clone(), system_namespace());
    let err = store.read(&stored.digest).await.unwrap_err();
    assert!(
        rukpak_core::error_chain(&err).contains("digest"),
        "{}",
        rukpak_core::error_chain(&err)
    );
}

fn deployment(name: &str, cm: &str) -> BundleDeployment {
    serde_json::from_value(json!({
        "apiVersion": "core.rukpak.io/v1alpha1", "kind": "BundleDeployment",
        "metadata": { "name": name, "labels": { "olmv1-test": system_namespace() } },
        "spec": {
            "provisionerClassName": "core-rukpak-io-plain",
            "template": { "metadata": { "labels": { "app": "demo", "olmv1-test": system_namespace() } }, "spec": {
                "provisionerClassName": "core-rukpak-io-plain",
                "source": { "type": "configMaps", "configMaps": [{ "configMap": { "name": cm } }] }
            }}
        }
    }))
    .unwrap()
}

#[tokio::test]
async fn a_template_change_creates_a_new_bundle_and_the_old_one_goes_once_the_new_one_is_active() {
    let client = setup().await;
    let (v1, v2) = (unique_name("v1"), unique_name("v2"));
    configmap(&client, &v1, true, json!({ "a.yaml": "x: 1" })).await;
    configmap(&client, &v2, true, json!({ "a.yaml": "x: 2" })).await;
    let name = unique_name("pivot");
    let deployments: Api<BundleDeployment> = Api::all(client.clone());
    let bundles: Api<Bundle> = Api::all(client.clone());
    let created = deployments
        .create(&PostParams::default(), &deployment(&name, &v1))
        .await
        .unwrap();
    let first = bundle_name(&name, &template_hash(&created.spec.template));
    let bundle = wait_phase(&client, &first, BundlePhase::Unpacked).await;
    assert_eq!(
        bundle.labels().get("core.rukpak.io/owner-name"),
        Some(&name)
    );
    assert_eq!(bundle.labels().get("app").map(String::as_str), Some("demo"));
    assert_eq!(bundle.owner_references()[0].name, name);

    // The provisioner installs it (simulated), then the template changes.
    let active = json!({ "status": { "activeBundle": first } });
    deployments
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&active))
        .await
        .unwrap();
    let updated = deployments
        .patch(
            &name,
            &PatchParams::apply("test").force(),
            &Patch::Apply(&deployment(&name, &v2)),
        )
        .await
        .unwrap();
    let second = bundle_name(&name, &template_hash(&updated.spec.template));
    assert_ne!(first, second);
    wait_phase(&client, &second, BundlePhase::Unpacked).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        bundles.get_opt(&first).await.unwrap().is_some(),
        "the active Bundle is kept until the provisioner moves"
    );

    let moved = json!({ "status": { "activeBundle": second } });
    deployments
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&moved))
        .await
        .unwrap();
    wait_for("the old Bundle to be deleted", TIMEOUT, || async {
        match bundles.get_opt(&first).await.map_err(|e| e.to_string())? {
            None => Ok(()),
            Some(b) if b.metadata.deletion_timestamp.is_some() => Ok(()),
            Some(_) => Err("still there".to_owned()),
        }
    })
    .await;

    // A deleted active Bundle is generated again.
    bundles
        .delete(&second, &DeleteParams::default())
        .await
        .unwrap();
    wait_for("the deleted Bundle to be regenerated", TIMEOUT, || async {
        match bundles.get_opt(&second).await.map_err(|e| e.to_string())? {
            Some(b) if b.metadata.deletion_timestamp.is_none() => Ok(()),
            _ => Err("not regenerated".to_owned()),
        }
    })
    .await;
}

#[tokio::test]
async fn an_image_bundle_by_tag_unpacks_and_pins_the_digest() {
    let client = setup().await;
    let registry = testkit::servers::CraneRegistry::start();
    let layer = testkit::servers::tar(&[(
        "manifests/cm.yaml",
        b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-image}\n",
    )]);
    let digest_ref = registry.push("bundles/demo:v1", &[layer]);
    let name = unique_name("image");
    let source = json!({ "type": "image", "image": { "ref": format!("{}/bundles/demo:v1", registry.addr) } });
    Api::<Bundle>::all(client.clone())
        .create(&PostParams::default(), &bundle_object(&name, source))
        .await
        .unwrap();
    let bundle = wait_phase(&client, &name, BundlePhase::Unpacked).await;
    let pinned = bundle
        .status
        .clone()
        .unwrap()
        .resolved_source
        .unwrap()
        .image
        .unwrap()
        .ref_;
    let digest = digest_ref.rsplit('@').next().unwrap();
    assert!(
        pinned.ends_with(&format!("@{digest}")),
        "{pinned} vs {digest_ref}"
    );
    assert!(
        files_of(&client, &bundle)
            .await
            .get("manifests/cm.yaml")
            .is_some()
    );

    let missing = unique_name("image404");
    let source = json!({ "type": "image", "image": { "ref": format!("{}/bundles/demo:v9", registry.addr) } });
    Api::<Bundle>::all(client.clone())
        .create(&PostParams::default(), &bundle_object(&missing, source))
        .await
        .unwrap();
    let message = unpacked_message(&wait_phase(&client, &missing, BundlePhase::Failing).await);
    assert!(message.contains("v9"), "{message}");
}

#[tokio::test]
async fn a_git_bundle_on_a_branch_unpacks_its_directory_and_pins_the_commit() {
    let client = setup().await;
    let fixture = testkit::servers::GitFixture::create();
    let daemon = testkit::servers::GitDaemon::start(fixture.root.path());
    let name = unique_name("git");
    let source = json!({ "type": "git", "git": {
        "repository": format!("git://127.0.0.1:{}/repo.git", daemon.port),
        "directory": "manifests",
        "ref": { "branch": "main" }
    }});
    Api::<Bundle>::all(client.clone())
        .create(&PostParams::default(), &bundle_object(&name, source))
        .await
        .unwrap();
    let bundle = wait_phase(&client, &name, BundlePhase::Unpacked).await;
    let pinned = bundle
        .status
        .clone()
        .unwrap()
        .resolved_source
        .unwrap()
        .git
        .unwrap()
        .ref_;
    assert_eq!(pinned.commit.as_deref(), Some(fixture.second.as_str()));
    let files = files_of(&client, &bundle).await;
    assert_eq!(
        files.get("a.yaml").map(|b| b.as_ref()),
        Some(b"v2".as_slice())
    );

    let unknown = unique_name("gitref");
    let source = json!({ "type": "git", "git": {
        "repository": format!("git://127.0.0.1:{}/repo.git", daemon.port), "ref": { "branch": "no-such-branch" }
    }});
    Api::<Bundle>::all(client.clone())
        .create(&PostParams::default(), &bundle_object(&unknown, source))
        .await
        .unwrap();
    let message = unpacked_message(&wait_phase(&client, &unknown, BundlePhase::Failing).await);
    assert!(message.contains("no-such-branch"), "{message}");
}

/// Serves `body` slowly (in 16 pieces over about `seconds`), so an unpack is in flight
/// for a while.
async fn serve_slowly(body: Vec<u8>, seconds: u64) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let body = Arc::new(body);
    let handler = move || {
        let body = body.clone();
        async move {
            let pieces: Vec<bytes::Bytes> = body
                .chunks(body.len().div_ceil(16))
                .map(bytes::Bytes::copy_from_slice)
                .collect();
            let pause = Duration::from_millis(seconds * 1000 / 16);
            let stream = futures::stream::iter(pieces).then(move |piece| async move {
                tokio::time::sleep(pause).await;
                Ok::<_, std::io::Error>(piece)
            });
            axum::body::Body::from_stream(stream)
        }
    };
    let app = axum::Router::new().route("/bundle.tgz", axum::routing::get(handler));
    testkit::spawn_background(move || async move {
        let listener = tokio::net::TcpListener::from_std(listener.into_std().unwrap()).unwrap();
        axum::serve(listener, app).await.unwrap();
    });
    format!("http://{address}")
}

#[tokio::test]
async fn killing_rukpak_core_mid_unpack_and_restarting_it_converges_without_duplicate_content() {
    let client = setup().await;
    let archive = tar_gz(&[(
        "manifests/a.yaml",
        b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: slow}\n",
    )]);
    let base = serve_slowly(archive, 6).await;
    // This test runs the real binary, scoped to its own label so the in-process
    // controllers of this test process leave the Bundle to it.
    let label = unique_name("restart");
    let start = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_rukpak-core"))
            .args([
                "--system-namespace",
                system_namespace(),
                "--watch-selector",
                &format!("olmv1-restart={label}"),
                "run",
                "--admin-address",
                "127.0.0.1:0",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let name = unique_name("slow");
    let mut bundle = bundle_object(
        &name,
        json!({ "type": "http", "http": { "url": format!("{base}/bundle.tgz") } }),
    );
    bundle.metadata.labels = Some([("olmv1-restart".to_owned(), label.clone())].into());
    Api::<Bundle>::all(client.clone())
        .create(&PostParams::default(), &bundle)
        .await
        .unwrap();

    let mut first = start();
    wait_phase(&client, &name, BundlePhase::Unpacking).await;
    first.kill().unwrap();
    first.wait().unwrap();
    assert_ne!(
        Api::<Bundle>::all(client.clone())
            .get(&name)
            .await
            .unwrap()
            .status
            .unwrap()
            .phase,
        Some(BundlePhase::Unpacked),
        "killed before the download finished"
    );

    let mut second = start();
    let bundle = wait_phase(&client, &name, BundlePhase::Unpacked).await;
    second.kill().unwrap();
    second.wait().unwrap();
    let content = bundle.status.unwrap().content.unwrap();
    let digest: content::Digest = content.digest.parse().unwrap();
    let chunks = Api::<ConfigMap>::namespaced(client.clone(), system_namespace())
        .list(&ListParams::default().labels(&content::store::Store::selector(&digest)))
        .await
        .unwrap()
        .items;
    assert_eq!(
        chunks.len(),
        usize::try_from(content.chunks).unwrap(),
        "exactly one copy of the content"
    );
}

/// Creates a Bundle of an http source at `url` that cannot be unpacked, and returns its
/// name and the Bundle once it is Failing.
async fn failing_http_bundle(client: &Client, prefix: &str, url: &str) -> (String, Bundle) {
    let name = unique_name(prefix);
    Api::<Bundle>::all(client.clone())
        .create(
            &PostParams::default(),
            &bundle_object(&name, json!({ "type": "http", "http": { "url": url } })),
        )
        .await
        .unwrap();
    let failed = wait_phase(client, &name, BundlePhase::Failing).await;
    (name, failed)
}

/// Serves `archive` at `/bundle.tgz` and 404 everywhere else, counting every request.
async fn serve_counting(archive: Vec<u8>) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let app = axum::Router::new()
        .route(
            "/bundle.tgz",
            axum::routing::get(move || {
                let archive = archive.clone();
                async move { archive }
            }),
        )
        .layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                let counter = counter.clone();
                async move {
                    counter.fetch_add(1, Ordering::SeqCst);
                    next.run(request).await
                }
            },
        ));
    testkit::spawn_background(move || async move {
        let listener = tokio::net::TcpListener::from_std(listener.into_std().unwrap()).unwrap();
        axum::serve(listener, app).await.unwrap();
    });
    (format!("http://{address}"), hits)
}

/// The number of Events recorded for `object` with `reason`, counting each series.
async fn event_count(client: &Client, object: &str, reason: &str) -> i32 {
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::all(client.clone());
    events
        .list(&ListParams::default().fields(&format!("involvedObject.name={object}")))
        .await
        .unwrap()
        .items
        .iter()
        .filter(|e| e.reason.as_deref() == Some(reason))
        .map(|e| e.count.unwrap_or(1).max(1))
        .sum()
}

#[tokio::test]
async fn a_failing_source_is_retried_on_the_backoff_schedule_not_in_a_hot_loop() {
    use std::sync::atomic::Ordering;
    let client = setup().await;
    let (base, hits) = serve_counting(Vec::new()).await;
    let bundles: Api<Bundle> = Api::all(client.clone());
    let (name, failed) =
        failing_http_bundle(&client, "hotloop", &format!("{base}/missing.tgz")).await;
    let resource_version = failed.resource_version();

    // Backoff from 1 s doubling (each delay a random time in [d/2, d]): at most 6 attempts
    // start within 20 s. Before the fix a 404 on loopback was fetched ~78 times a second.
    let window = Duration::from_secs(20);
    tokio::time::sleep(window).await;
    let attempts = hits.load(Ordering::SeqCst);
    eprintln!("a 404 http source was fetched {attempts} times in {window:?}");
    assert!(
        attempts >= 2,
        "the failing source was not retried: {attempts}"
    );
    assert!(
        attempts <= 8,
        "{attempts} fetches in {window:?}: a hot loop"
    );

    // Identical failures do not rewrite status or re-emit Events (series may count up).
    let bundle = bundles.get(&name).await.unwrap();
    assert_eq!(
        bundle.resource_version(),
        resource_version,
        "status was rewritten by identical failures"
    );
    assert_eq!(bundle.status.unwrap().phase, Some(BundlePhase::Failing));
    let failures = event_count(&client, &name, "UnpackFailed").await;
    assert_eq!(failures, 1, "UnpackFailed events: {failures}");
}

#[tokio::test]
async fn a_missing_secret_is_watched_so_creating_it_retries_at_once() {
    use std::sync::atomic::Ordering;
    let client = setup().await;
    let (base, hits) = serve_counting(tar_gz(&[(
        "manifests/a.yaml",
        b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
    )]))
    .await;
    let secret = unique_name("creds");
    let name = unique_name("needs-secret");
    Api::<Bundle>::all(client.clone())
        .create(
            &PostParams::default(),
            &bundle_object(
                &name,
                json!({ "type": "http", "http": { "url": format!("{base}/bundle.tgz"),
                        "auth": { "secret": { "name": secret } } } }),
            ),
        )
        .await
        .unwrap();
    let message = unpacked_message(&wait_phase(&client, &name, BundlePhase::Failing).await);
    assert!(message.contains(&secret), "{message}");
    // A missing Secret waits for a change (no retries, no requests) ...
    let failing_version = Api::<Bundle>::all(client.clone())
        .get(&name)
        .await
        .unwrap()
        .resource_version();
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(hits.load(Ordering::SeqCst), 0, "fetched without its Secret");
    assert_eq!(
        Api::<Bundle>::all(client.clone())
            .get(&name)
            .await
            .unwrap()
            .resource_version(),
        failing_version,
        "status rewritten while waiting for the Secret"
    );

    // ... and its creation retries at once.
    let created = std::time::Instant::now();
    let object: k8s_openapi::api::core::v1::Secret = serde_json::from_value(json!({
        "metadata": { "name": secret },
        "stringData": { "username": "u", "password": "p" }
    }))
    .unwrap();
    Api::<k8s_openapi::api::core::v1::Secret>::namespaced(client.clone(), system_namespace())
        .create(&PostParams::default(), &object)
        .await
        .unwrap();
    wait_phase(&client, &name, BundlePhase::Unpacked).await;
    let waited = created.elapsed();
    eprintln!("unpacked {waited:?} after its Secret was created");
    assert!(
        waited < Duration::from_secs(5),
        "the Bundle waited {waited:?} for its backoff instead of reacting to the Secret"
    );
}

#[tokio::test]
async fn a_source_at_a_denied_address_is_refused_without_a_connection_and_not_retried() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let client = setup().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.99:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    tokio::spawn(async move {
        while let Ok(_connection) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
        }
    });
    let bundles: Api<Bundle> = Api::all(client.clone());
    let (name, failed) = failing_http_bundle(
        &client,
        "metadata",
        &format!("http://127.0.0.99:{port}/latest/meta-data"),
    )
    .await;
    let message = unpacked_message(&failed);
    assert!(
        message.contains(
            "refused to connect to 127.0.0.99: 127.0.0.99 is in a denied network (127.0.0.99/32); an administrator can change the denied ranges with --denied-networks"
        ),
        "{message}"
    );
    // Terminal: waits for a change of the spec, so no retry rewrites status.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        bundles.get(&name).await.unwrap().resource_version(),
        failed.resource_version()
    );
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        0,
        "the denied address was connected to"
    );
}
