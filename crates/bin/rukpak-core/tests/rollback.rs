//! Rollback end to end, with the real rukpak-core and a plain provisioner in this process
//! and each revision's content served over http by a server that counts its requests: a
//! failed revision is rolled back to the previous one, and so is an on-demand rollback,
//! without fetching the previous revision's content again.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use apply_engine::drift::DriftWatches;
use k8s_openapi::api::core::v1::ConfigMap;
use kit::metrics::ReconcileMetrics;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use plain_provisioner::PlainFormat;
use provisioner::controller::{self, Settings};
use rukpak_api::conditions::{TYPE_HEALTHY, TYPE_INSTALLED, reasons};
use rukpak_api::{BundleDeployment, RevisionOutcome};
use rukpak_core::{bundle, deployment_bundles, revisions_cli};
use serde_json::json;
use testkit::{client, unique_name, wait_for};

const TIMEOUT: Duration = Duration::from_secs(90);

fn system_namespace() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| unique_name("rukpak-system"))
}

fn selector() -> String {
    format!("olmv1-test={}", system_namespace())
}

/// Starts rukpak-core's controllers and a plain provisioner, once per process.
async fn setup() -> Client {
    static STARTED: OnceLock<()> = OnceLock::new();
    let client = client().await;
    if STARTED.get().is_none() {
        testkit::install_rukpak(&client, system_namespace()).await;
        if STARTED.set(()).is_ok() {
            testkit::spawn_background(move || async move {
                let config = kube::Config::infer().await.unwrap();
                let client = Client::try_from(config.clone()).unwrap();
                let registry = prometheus::Registry::new();
                let reconciles = ReconcileMetrics::register(&registry, "rollback_test").unwrap();
                let unpacks = bundle::UnpackMetrics::register(&registry).unwrap();
                let readiness = kit::admin::Readiness::default();
                let token = tokio_util::sync::CancellationToken::new();
                let bundles = Arc::new(bundle::Context::new(
                    client.clone(),
                    system_namespace(),
                    content::source::UnpackOptions {
                        // The test's server listens on loopback.
                        denied_networks: "169.254.0.0/16".parse().unwrap(),
                        ..content::source::UnpackOptions::default()
                    },
                    reconciles.clone(),
                    unpacks,
                    Some(selector()),
                ));
                let deployments = Arc::new(deployment_bundles::Context::new(
                    client.clone(),
                    reconciles.clone(),
                    Some(selector()),
                ));
                let (drift, requests) = DriftWatches::new(client.clone(), token.clone());
                let provisioner = Arc::new(controller::Context::new(
                    client,
                    config,
                    PlainFormat,
                    Settings {
                        system_namespace: system_namespace().to_owned(),
                        resync: Duration::from_secs(30),
                        limits: content::Limits::default(),
                        selector: Some(selector()),
                        default_service_account: None,
                        identity_namespace: testkit::ADMISSION_NAMESPACE.to_owned(),
                        concurrency: 4,
                        certificates: provisioner::certificates::Policy::default(),
                        debounce: Duration::from_millis(100),
                        content_cache_bytes: 8 * 1024 * 1024,
                    },
                    reconciles,
                    drift,
                ));
                tokio::join!(
                    bundle::run(bundles, &readiness, token.clone()),
                    deployment_bundles::run(deployments, &readiness, token.clone()),
                    controller::run(provisioner, requests, &readiness, token)
                );
            });
        }
    }
    client
}

fn tar_gz(files: &[(&str, String)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    for (path, data) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder
            .append_data(&mut header, path, data.as_bytes())
            .unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

/// Serves `archive` at `/bundle.tgz` on loopback, counting every request.
async fn serve_counting(archive: Vec<u8>) -> (String, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let app = axum::Router::new().route(
        "/bundle.tgz",
        axum::routing::get(move || {
            let archive = archive.clone();
            counter.fetch_add(1, Ordering::SeqCst);
            async move { archive }
        }),
    );
    testkit::spawn_background(move || async move {
        let listener = tokio::net::TcpListener::from_std(listener.into_std().unwrap()).unwrap();
        axum::serve(listener, app).await.unwrap();
    });
    (format!("http://{address}/bundle.tgz"), hits)
}

fn deployment(name: &str, url: &str) -> BundleDeployment {
    serde_json::from_value(json!({
        "apiVersion": "core.rukpak.io/v1alpha1", "kind": "BundleDeployment",
        "metadata": { "name": name, "labels": { "olmv1-test": system_namespace() } },
        "spec": {
            "provisionerClassName": "core-rukpak-io-plain",
            "progressDeadlineSeconds": 8,
            "rollbackOnFailure": true,
            "template": {
                "metadata": { "labels": { "olmv1-test": system_namespace() } },
                "spec": {
                    "provisionerClassName": "core-rukpak-io-plain",
                    "source": { "type": "http", "http": { "url": url } }
                }
            }
        }
    }))
    .unwrap()
}

async fn set_template(client: &Client, deployment: &BundleDeployment) {
    Api::<BundleDeployment>::all(client.clone())
        .patch(
            &deployment.metadata.name.clone().unwrap(),
            &PatchParams::apply("test").force(),
            &Patch::Apply(deployment),
        )
        .await
        .unwrap();
}

async fn condition(client: &Client, name: &str, type_: &str) -> Result<(String, String), String> {
    let bd = Api::<BundleDeployment>::all(client.clone())
        .get(name)
        .await
        .map_err(|e| e.to_string())?;
    let status = bd.status.unwrap_or_default();
    kit::conditions::find(&status.conditions, type_)
        .map(|c| (c.status.clone(), c.reason.clone()))
        .ok_or(format!("no {type_} yet"))
}

async fn settings_value(client: &Client, ns: &str) -> Option<String> {
    Api::<ConfigMap>::namespaced(client.clone(), ns)
        .get_opt("settings")
        .await
        .unwrap()
        .and_then(|cm| cm.data?.get("key").cloned())
}

#[tokio::test]
async fn a_failed_revision_and_an_on_demand_rollback_return_to_stored_content_without_fetching() {
    let client = setup().await;
    let name = unique_name("rollback");
    let ns = unique_name("ns");
    let manifests = |value: &str, broken: bool| {
        let mut files = vec![
            (
                "manifests/a.yaml".to_owned(),
                format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n"),
            ),
            (
                "manifests/b.yaml".to_owned(),
                format!(
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: {ns}\ndata:\n  key: {value}\n"
                ),
            ),
        ];
        if broken {
            files.push(("manifests/c.yaml".to_owned(), format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: op\n  namespace: {ns}\nspec:\n  replicas: 1\n  selector: {{matchLabels: {{app: op}}}}\n  template:\n    metadata: {{labels: {{app: op}}}}\n    spec:\n      nodeSelector: {{no-such-label: x}}\n      containers: [{{name: main, image: example.invalid/op:1.0}}]\n"
            )));
        }
        let files: Vec<(&str, String)> =
            files.iter().map(|(p, d)| (p.as_str(), d.clone())).collect();
        tar_gz(&files)
    };
    let (v1_url, v1_hits) = serve_counting(manifests("v1", false)).await;
    let (v2_url, v2_hits) = serve_counting(manifests("v2", true)).await;

    Api::<BundleDeployment>::all(client.clone())
        .create(&PostParams::default(), &deployment(&name, &v1_url))
        .await
        .unwrap();
    wait_for("v1 healthy", TIMEOUT, || async {
        match condition(&client, &name, TYPE_HEALTHY).await? {
            (s, _) if s == "True" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert_eq!(v1_hits.load(Ordering::SeqCst), 1);

    // v2 unpacks, is applied, misses its deadline and is rolled back to v1.
    set_template(&client, &deployment(&name, &v2_url)).await;
    wait_for("the rollback", TIMEOUT, || async {
        match condition(&client, &name, TYPE_INSTALLED).await? {
            (s, r) if s == "True" && r == reasons::ROLLED_BACK => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert_eq!(settings_value(&client, &ns).await.as_deref(), Some("v1"));
    assert_eq!(v2_hits.load(Ordering::SeqCst), 1);
    assert_eq!(
        v1_hits.load(Ordering::SeqCst),
        1,
        "the rollback used v1's stored content"
    );
    let status = Api::<BundleDeployment>::all(client.clone())
        .get(&name)
        .await
        .unwrap()
        .status
        .unwrap();
    let outcomes: Vec<(i64, RevisionOutcome)> = status
        .revisions
        .iter()
        .map(|r| (r.revision, r.outcome))
        .collect();
    assert!(
        outcomes.contains(&(2, RevisionOutcome::Failed)),
        "{outcomes:?}"
    );
    assert!(
        outcomes.contains(&(1, RevisionOutcome::Healthy)),
        "{outcomes:?}"
    );

    // On demand: point the template back at revision 1; its kept Bundle is used again.
    let said = revisions_cli::rollback(&client, &name, Some(1))
        .await
        .unwrap();
    assert!(said.contains("revision 1"), "{said}");
    wait_for(
        "revision 1 to be the template's and installed",
        TIMEOUT,
        || async {
            match condition(&client, &name, TYPE_INSTALLED).await? {
                (s, r) if s == "True" && r == reasons::INSTALLATION_SUCCEEDED => Ok(()),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
    assert_eq!(settings_value(&client, &ns).await.as_deref(), Some("v1"));
    assert_eq!(
        v1_hits.load(Ordering::SeqCst),
        1,
        "no fetch for the on-demand rollback"
    );
    // A revision that does not exist is refused, naming what is kept.
    let refused = revisions_cli::rollback(&client, &name, Some(9))
        .await
        .unwrap_err();
    assert!(refused.contains("no revision 9"), "{refused}");
}
