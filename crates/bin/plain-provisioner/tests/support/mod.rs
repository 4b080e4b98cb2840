//! What the apply engine's cluster tests share (run with the plain format): playing rukpak-core (a Bundle with
//! stored content, marked unpacked) and waiting for conditions.

// Each test binary uses its own subset of these helpers.
#![allow(dead_code)]

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use apply_engine::drift::DriftWatches;
use kit::metrics::ReconcileMetrics;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use plain_provisioner::PlainFormat;
use provisioner::controller::{self, Context, Settings};
use rukpak_api::{Bundle, BundleDeployment, ServiceAccountRef, bundle_name, template_hash};
use serde_json::json;
use testkit::{unique_name, wait_for};

/// Starts a plain provisioner in this process, on a runtime of its own that outlives each
/// test, handling BundleDeployments labelled `olmv1-test=<system_namespace>`.
pub fn start_provisioner(
    system_namespace: String,
    default_service_account: Option<ServiceAccountRef>,
) {
    testkit::spawn_background(move || async move {
        let config = kube::Config::infer().await.unwrap();
        let client = Client::try_from(config.clone()).unwrap();
        let registry = prometheus::Registry::new();
        let metrics = ReconcileMetrics::register(&registry, "plain_provisioner_test").unwrap();
        let shutdown = tokio_util::sync::CancellationToken::new();
        let (drift, requests) = DriftWatches::new(client.clone(), shutdown.clone());
        let settings = Settings {
            resync: Duration::from_secs(30),
            limits: content::Limits::default(),
            selector: Some(format!("olmv1-test={system_namespace}")),
            system_namespace,
            default_service_account,
            identity_namespace: testkit::ADMISSION_NAMESPACE.to_owned(),
            concurrency: 4,
            certificates: provisioner::certificates::Policy::default(),
            debounce: Duration::from_millis(100),
            content_cache_bytes: 8 * 1024 * 1024,
        };
        let ctx = Arc::new(Context::new(
            client,
            config,
            PlainFormat,
            settings,
            metrics,
            drift,
        ));
        controller::run(ctx, requests, &kit::admin::Readiness::default(), shutdown).await;
    });
}

/// Creates the BundleDeployment, or applies it over the existing one, as `client`.
pub async fn create_or_update(client: &Client, deployment: &BundleDeployment) -> BundleDeployment {
    let deployments: Api<BundleDeployment> = Api::all(client.clone());
    let name = deployment.name_any();
    match deployments.get_opt(&name).await.unwrap() {
        Some(_) => deployments
            .patch(
                &name,
                &PatchParams::apply("test").force(),
                &Patch::Apply(deployment),
            )
            .await
            .unwrap(),
        None => deployments
            .create(&PostParams::default(), deployment)
            .await
            .unwrap(),
    }
}

/// Plays rukpak-core for `live`: creates the Bundle of its template, stores `manifests`
/// (file name -> YAML) as its content in `system_namespace` and marks it unpacked.
pub async fn store_bundle(
    client: &Client,
    system_namespace: &str,
    live: &BundleDeployment,
    manifests: &[(&str, String)],
) {
    let name = live.name_any();
    let bundle_name = bundle_name(&name, &template_hash(&live.spec.template));
    let bundles: Api<Bundle> = Api::all(client.clone());
    // Numbered as rukpak-core numbers them: one more than the Bundles there are.
    let revision = bundles
        .list(
            &kube::api::ListParams::default().labels(&format!("core.rukpak.io/owner-name={name}")),
        )
        .await
        .unwrap()
        .items
        .len()
        + 1;
    let bundle: Bundle = serde_json::from_value(json!({
        "apiVersion": "core.rukpak.io/v1alpha1", "kind": "Bundle",
        "metadata": {
            "name": bundle_name,
            "labels": { "core.rukpak.io/owner-kind": "BundleDeployment", "core.rukpak.io/owner-name": name,
                        "core.rukpak.io/revision": revision.to_string() },
            "ownerReferences": [{
                "apiVersion": "core.rukpak.io/v1alpha1", "kind": "BundleDeployment", "name": name,
                "uid": live.uid().unwrap(), "controller": true
            }]
        },
        "spec": live.spec.template.spec
    }))
    .unwrap();
    let bundle = bundles
        .create(&PostParams::default(), &bundle)
        .await
        .unwrap();

    let dir = std::env::temp_dir().join(unique_name("bundle"));
    std::fs::create_dir_all(dir.join("manifests")).unwrap();
    for (file, yaml) in manifests {
        std::fs::write(dir.join("manifests").join(file), yaml).unwrap();
    }
    let store = content::store::Store::new(client.clone(), system_namespace);
    let stored = content::upload::upload(
        &store,
        "Bundle",
        content::upload::UploadInput::Directory(dir.clone()),
        &content::Limits::default(),
    )
    .await
    .unwrap();
    std::fs::remove_dir_all(dir).unwrap();
    let status = json!({ "status": {
        "phase": "Unpacked",
        "content": { "digest": stored.digest.to_string(), "size": stored.size, "chunks": stored.chunks },
        "conditions": [{ "type": "Unpacked", "status": "True", "reason": "UnpackSuccessful",
                         "message": "unpacked by the test", "lastTransitionTime": "2026-01-01T00:00:00Z" }]
    }});
    bundles
        .patch_status(
            &bundle.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&status),
        )
        .await
        .unwrap();
}

/// The `(status, reason, message)` of condition `type_`.
pub fn condition(deployment: &BundleDeployment, type_: &str) -> Option<(String, String, String)> {
    let status = deployment.status.as_ref()?;
    let c = kit::conditions::find(&status.conditions, type_)?;
    Some((c.status.clone(), c.reason.clone(), c.message.clone()))
}

/// Waits until `type_` has `status`, returning the condition's message.
pub async fn wait_condition(
    client: &Client,
    name: &str,
    type_: &str,
    status: &str,
    timeout: Duration,
) -> String {
    let deployments: Api<BundleDeployment> = Api::all(client.clone());
    wait_for(&format!("{name} {type_}={status}"), timeout, || async {
        let bd = deployments.get(name).await.map_err(|e| e.to_string())?;
        match condition(&bd, type_) {
            Some((s, _, message)) if s == status => Ok(message),
            other => Err(format!("{other:?}")),
        }
    })
    .await
}

/// The content store namespace of this test process (and the value of the `olmv1-test`
/// label its in-process provisioner handles).
pub fn system_namespace() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| unique_name("rukpak-system"))
}

/// Installs the CRDs, classes and policies and starts the plain provisioner, once per process.
pub async fn setup() -> Client {
    static STARTED: OnceLock<()> = OnceLock::new();
    let client = testkit::client().await;
    if STARTED.get().is_none() {
        testkit::install_rukpak(&client, system_namespace()).await;
        if STARTED.set(()).is_ok() {
            start_provisioner(system_namespace().to_owned(), None);
        }
    }
    client
}

/// A BundleDeployment of the plain class whose template is an upload bundle named by `tag`
/// (so a new tag is a new template, hence a new Bundle), with `extra` spec fields.
pub fn deployment(name: &str, tag: &str, extra: serde_json::Value) -> BundleDeployment {
    let mut spec = json!({
        "provisionerClassName": "core-rukpak-io-plain",
        "template": {
            "metadata": { "labels": { "test-content": tag } },
            "spec": { "provisionerClassName": "core-rukpak-io-plain", "source": { "type": "upload", "upload": {} } }
        }
    });
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    serde_json::from_value(json!({
        "apiVersion": "core.rukpak.io/v1alpha1", "kind": "BundleDeployment",
        "metadata": { "name": name, "labels": { "olmv1-test": system_namespace() } }, "spec": spec
    }))
    .unwrap()
}

/// Creates or updates the BundleDeployment, then plays rukpak-core for it.
pub async fn deploy(client: &Client, deployment: &BundleDeployment, manifests: &[(&str, String)]) {
    let live = create_or_update(client, deployment).await;
    store_bundle(client, system_namespace(), &live, manifests).await;
}

/// A Namespace manifest.
pub fn namespace(name: &str) -> String {
    format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n")
}

/// A ConfigMap manifest whose `key` holds `data`.
pub fn configmap(namespace: &str, name: &str, data: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\ndata:\n  key: {data}\n"
    )
}
