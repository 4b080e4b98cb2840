//! Running the catalog query API ([`catalog_api`]) beside the controllers: its serving
//! certificate from the built-in CA, and the HTTPS server over the served catalogs.
//!
//! The CA and the serving certificate are kept in two Secrets of the system namespace
//! ([`CA_SECRET`], [`TLS_SECRET`]), decided by [`certificates::decide`] as the provisioners
//! decide webhook certificates, and renewed the same way. The trust bundle is published in
//! the ConfigMap [`TRUST_CONFIGMAP`] (key `ca.crt`), which every authenticated user may
//! read, so clients can verify the server.
//!
//! The API is also the aggregated API `catalogs.deppy.io/v1` ([`API_SERVICE`]): the Kubernetes
//! API server forwards `/apis/catalogs.deppy.io/v1/catalogs/NAME/content/...` to it, so any
//! kubeconfig reaches the catalogs. Two things make that work and are kept here: the
//! APIService's `caBundle` is the trust bundle (so the API server verifies this server), and
//! the front-proxy configuration the API server publishes in
//! `kube-system/extension-apiserver-authentication` is watched, so this server knows which
//! client certificate may forward users.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::StreamExt;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use tokio_util::sync::CancellationToken;

use catalog_api::front_proxy::{CONFIG_MAP_NAME, CONFIG_MAP_NAMESPACE};
use catalog_api::{Access, FrontProxyConfig, FrontProxyTrust, ServingCertificate};
use kit::kube_error::KubeCallError;

use super::{ServedCatalogs, error_chain};

/// The CA that signs the API's serving certificate.
pub const CA_SECRET: &str = "deppy-catalog-api-ca";
/// The API's serving certificate (`kubernetes.io/tls`).
pub const TLS_SECRET: &str = "deppy-catalog-api-tls";
/// The trust bundle for clients, key `ca.crt`.
pub const TRUST_CONFIGMAP: &str = "deppy-catalog-api-ca";
/// The Service in front of the API; its DNS names are the certificate's names.
pub const SERVICE: &str = "deppy-catalogs";
/// The APIService registering the API with the Kubernetes API server; this controller
/// keeps only its `spec.caBundle`.
pub const API_SERVICE: &str = "v1.catalogs.deppy.io";

/// How soon a failed certificate step is tried again.
const RETRY: Duration = Duration::from_secs(30);
/// How often the certificates are looked at when nothing is due sooner.
const RECHECK: Duration = Duration::from_secs(60 * 60);

/// Serves the API on `address` until `shutdown`, once a serving certificate exists.
pub async fn serve(
    client: Client,
    namespace: String,
    address: SocketAddr,
    catalogs: ServedCatalogs,
    shutdown: CancellationToken,
) {
    let certificate = Arc::new(ServingCertificate::default());
    let front_proxy = Arc::new(FrontProxyTrust::default());
    let listener = match tokio::net::TcpListener::bind(address).await {
        Ok(listener) => listener,
        Err(err) => {
            tracing::error!(%address, "the catalog query API cannot listen: {err}");
            return;
        }
    };
    tracing::info!(%address, "catalog query API listening");
    let router = catalog_api::router(Arc::new(catalogs), Arc::new(Access::new(client.clone())));
    let (bundle_tx, bundle_rx) = tokio::sync::watch::channel(String::new());
    let keep = keep_certificate(&client, &namespace, &certificate, &bundle_tx, &shutdown);
    let ca_bundle = keep_ca_bundle(&client, bundle_rx, &shutdown);
    let trust = keep_front_proxy_trust(&client, &front_proxy, &shutdown);
    let server = catalog_api::serve(
        listener,
        certificate.clone(),
        front_proxy.clone(),
        router,
        shutdown.clone(),
    );
    let (_, (), (), served) = tokio::join!(keep, ca_bundle, trust, server);
    if let Err(err) = served {
        tracing::error!("the catalog query API stopped: {err}");
    }
}

/// Decides and stores the certificates now and whenever one is due, setting the served one
/// and sending the trust bundle to [`keep_ca_bundle`].
async fn keep_certificate(
    client: &Client,
    namespace: &str,
    certificate: &ServingCertificate,
    bundle: &tokio::sync::watch::Sender<String>,
    shutdown: &CancellationToken,
) {
    loop {
        let wait = match renew(client, namespace, certificate).await {
            Ok((next, trust_bundle)) => {
                bundle.send_if_modified(|current| {
                    let changed = *current != trust_bundle;
                    *current = trust_bundle;
                    changed
                });
                next.and_then(|at| at.duration_since(SystemTime::now()).ok())
                    .map_or(RECHECK, |due| due.min(RECHECK))
            }
            Err(err) => {
                tracing::warn!(error = %error_chain(&err), "the catalog query API's certificate could not be renewed; retrying");
                RETRY
            }
        };
        tokio::select! {
            () = tokio::time::sleep(wait.max(Duration::from_secs(1))) => {}
            () = shutdown.cancelled() => return,
        }
    }
}

/// A certificate step that failed.
#[derive(Debug, thiserror::Error)]
enum Error {
    #[error(transparent)]
    Kube(#[from] KubeCallError),
    #[error("failed to issue the catalog query API's certificate")]
    Issue(#[from] certificates::Error),
    #[error(transparent)]
    Serve(#[from] catalog_api::server::CertificateError),
}

/// Keeps the APIService's `caBundle` equal to the trust bundle: watched, so an APIService
/// created (or re-created) after deppy-resolver started gets it at once, and patched again
/// when the bundle changes. No APIService is not an error: the API is then reached only
/// through its Service. Apart from renewing, so that an API server refusing the patch
/// does not hold up the Service's certificate.
async fn keep_ca_bundle(
    client: &Client,
    mut bundle: tokio::sync::watch::Receiver<String>,
    shutdown: &CancellationToken,
) {
    let api_services = Api::<APIService>::all(client.clone());
    let config = watcher::Config::default().fields(&format!("metadata.name={API_SERVICE}"));
    let mut events = std::pin::pin!(
        watcher(api_services.clone(), config)
            .default_backoff()
            .applied_objects()
    );
    // The APIService's caBundle as last seen; `None` until it is seen at all.
    let mut seen: Option<Option<ByteString>> = None;
    let mut retry_after_failure = false;
    loop {
        let wait_failed = async {
            if retry_after_failure {
                tokio::time::sleep(RETRY).await;
            } else {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            () = shutdown.cancelled() => return,
            event = events.next() => match event {
                None => return,
                Some(Ok(service)) => seen = Some(service.spec.and_then(|spec| spec.ca_bundle)),
                Some(Err(err)) => {
                    tracing::warn!(error = %error_chain(&err), "cannot watch APIService {API_SERVICE}; retrying");
                    continue;
                }
            },
            changed = bundle.changed() => if changed.is_err() { return },
            () = wait_failed => {}
        }
        let wanted = bundle.borrow().clone();
        let Some(current) = &seen else { continue };
        if wanted.is_empty() || current.as_ref().map(|b| b.0.as_slice()) == Some(wanted.as_bytes())
        {
            retry_after_failure = false;
            continue;
        }
        let patch = serde_json::json!({"spec": {"caBundle": ByteString(wanted.into_bytes())}});
        match api_services
            .patch(API_SERVICE, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(patched) => {
                seen = Some(patched.spec.and_then(|spec| spec.ca_bundle));
                retry_after_failure = false;
            }
            Err(err) => {
                let err = KubeCallError::new("patch", format!("APIService {API_SERVICE}"), err);
                tracing::warn!(error = %error_chain(&err), "the catalog query API's APIService could not be given its CA bundle; retrying in {}s", RETRY.as_secs());
                retry_after_failure = true;
            }
        }
    }
}

/// Watches the API server's front-proxy configuration and trusts what it says. Until it is
/// read (or when it cannot be), no forwarded user is believed and the API answers bearer
/// tokens only.
async fn keep_front_proxy_trust(
    client: &Client,
    trust: &FrontProxyTrust,
    shutdown: &CancellationToken,
) {
    let config_maps = Api::<ConfigMap>::namespaced(client.clone(), CONFIG_MAP_NAMESPACE);
    let config = watcher::Config::default().fields(&format!("metadata.name={CONFIG_MAP_NAME}"));
    let mut changes = std::pin::pin!(
        watcher(config_maps, config)
            .default_backoff()
            .applied_objects()
    );
    let mut last: Option<Option<FrontProxyConfig>> = None;
    loop {
        let next = tokio::select! {
            next = changes.next() => next,
            () = shutdown.cancelled() => return,
        };
        let config_map = match next {
            None => return,
            Some(Ok(config_map)) => config_map,
            Some(Err(err)) => {
                tracing::warn!(error = %error_chain(&err), "cannot read {CONFIG_MAP_NAMESPACE}/{CONFIG_MAP_NAME}: requests the API server forwards are refused until it can be read");
                continue;
            }
        };
        let parsed = FrontProxyConfig::from_data(&config_map.data.unwrap_or_default());
        let config = match parsed {
            Ok(config) => config,
            Err(why) => {
                tracing::warn!("{why}; requests the API server forwards are refused");
                None
            }
        };
        if last.as_ref() == Some(&config) {
            continue;
        }
        let described = config.as_ref().map_or_else(
            || "none (the API server forwards no users)".to_owned(),
            |c| format!("front proxies named {:?}", c.allowed_names),
        );
        match trust.set(config.clone()) {
            Ok(()) => tracing::info!("catalog query API: trusting {described}"),
            Err(why) => tracing::warn!("{why}; requests the API server forwards are refused"),
        }
        last = Some(config);
    }
}

/// One pass: read, decide, write what differs, serve the result. Returns when the next
/// step is due, and the trust bundle.
async fn renew(
    client: &Client,
    namespace: &str,
    certificate: &ServingCertificate,
) -> Result<(Option<SystemTime>, String), Error> {
    let secrets = Api::<Secret>::namespaced(client.clone(), namespace);
    let configmaps = Api::<ConfigMap>::namespaced(client.clone(), namespace);
    let ca = secrets
        .get_opt(CA_SECRET)
        .await
        .map_err(|e| KubeCallError::new("read", format!("Secret {namespace}/{CA_SECRET}"), e))?;
    let tls = secrets
        .get_opt(TLS_SECRET)
        .await
        .map_err(|e| KubeCallError::new("read", format!("Secret {namespace}/{TLS_SECRET}"), e))?;
    let trust = configmaps.get_opt(TRUST_CONFIGMAP).await.map_err(|e| {
        KubeCallError::new(
            "read",
            format!("ConfigMap {namespace}/{TRUST_CONFIGMAP}"),
            e,
        )
    })?;
    let ca_data = ca.as_ref().map(kit::secrets::data);
    let tls_data = tls.as_ref().map(kit::secrets::data);
    let live = trust
        .as_ref()
        .and_then(|cm| cm.data.as_ref())
        .and_then(|data| data.get(certificates::SERVING_CA_KEY).cloned());
    let names = vec![
        format!("{SERVICE}.{namespace}.svc"),
        format!("{SERVICE}.{namespace}.svc.cluster.local"),
        format!("{SERVICE}.{namespace}"),
        SERVICE.to_owned(),
    ];
    let decision = certificates::decide(
        SystemTime::now(),
        &certificates::Policy::default(),
        ca_data.as_ref(),
        std::slice::from_ref(&live),
        &[certificates::ServingRequest {
            secret_name: TLS_SECRET,
            dns_names: names,
            existing: tls_data.as_ref(),
        }],
    )?;
    for event in &decision.events {
        tracing::info!(
            reason = event.reason(),
            "catalog query API certificate: {event}"
        );
    }
    if ca_data.as_ref() != Some(&decision.ca_data) {
        write_secret(&secrets, namespace, ca, CA_SECRET, None, &decision.ca_data).await?;
    }
    let serving = decision.serving.first().cloned().unwrap_or_default();
    if tls_data.as_ref() != Some(&serving) {
        let tls_type = Some("kubernetes.io/tls");
        write_secret(&secrets, namespace, tls, TLS_SECRET, tls_type, &serving).await?;
    }
    if live.as_deref() != Some(decision.trust_bundle.as_str()) {
        let mut object = trust.unwrap_or_else(|| ConfigMap {
            metadata: ObjectMeta {
                name: Some(TRUST_CONFIGMAP.to_owned()),
                namespace: Some(namespace.to_owned()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        });
        object.data = Some(BTreeMap::from([(
            certificates::SERVING_CA_KEY.to_owned(),
            decision.trust_bundle.clone(),
        )]));
        let result = if object.metadata.resource_version.is_some() {
            configmaps
                .replace(TRUST_CONFIGMAP, &PostParams::default(), &object)
                .await
        } else {
            configmaps.create(&PostParams::default(), &object).await
        };
        result.map_err(|e| {
            KubeCallError::new(
                "write",
                format!("ConfigMap {namespace}/{TRUST_CONFIGMAP}"),
                e,
            )
        })?;
    }
    let empty = Vec::new();
    certificate.set(
        serving.get(certificates::TLS_CERT_KEY).unwrap_or(&empty),
        serving.get(certificates::TLS_KEY_KEY).unwrap_or(&empty),
    )?;
    Ok((decision.next_check, decision.trust_bundle))
}

/// Creates or replaces (guarded by its resourceVersion) a Secret holding `data`.
async fn write_secret(
    secrets: &Api<Secret>,
    namespace: &str,
    existing: Option<Secret>,
    name: &str,
    type_: Option<&str>,
    data: &BTreeMap<String, Vec<u8>>,
) -> Result<(), KubeCallError> {
    let mut object = existing.unwrap_or_else(|| Secret {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespace.to_owned()),
            ..ObjectMeta::default()
        },
        type_: type_.map(str::to_owned),
        ..Secret::default()
    });
    object.data = Some(
        data.iter()
            .map(|(key, value)| (key.clone(), ByteString(value.clone())))
            .collect(),
    );
    let result = if object.metadata.resource_version.is_some() {
        secrets.replace(name, &PostParams::default(), &object).await
    } else {
        secrets.create(&PostParams::default(), &object).await
    };
    result
        .map(drop)
        .map_err(|e| KubeCallError::new("write", format!("Secret {namespace}/{name}"), e))
}
