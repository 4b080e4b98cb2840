//! What every reconcile of one provisioner shares: its settings, clients, caches and
//! watches' stores, and the error a failed reconcile returns.

use std::sync::Arc;
use std::time::Duration;

use kit::events::Recorder;
use kit::kube_error::KubeCallError;
use kit::metrics::ReconcileMetrics;
use kit::retry::{Backoff, Classify, Retry};
use kube::runtime::reflector::{Store, store::Writer};
use kube::{Client, Resource};
use rukpak_api::{Bundle, BundleDeployment, ProvisionerClass};

use apply_engine::apply::{Applier, ApplyError};
use apply_engine::drift::DriftWatches;
use apply_engine::kinds::KindCache;

use crate::content_cache::ContentCache;
use crate::format::BundleFormat;
use crate::identity;
use crate::warnings::{SharedClients, Warnings, recording_warnings};

/// Settings of the controller.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Namespace of the content store.
    pub system_namespace: String,
    /// How often an unchanged BundleDeployment is re-checked for drift the watches missed.
    pub resync: Duration,
    /// Limits for reading unpacked content.
    pub limits: content::Limits,
    /// Only handle BundleDeployments matching this label selector (for sharding, or
    /// several instances on one cluster).
    pub selector: Option<String>,
    /// The ServiceAccount a BundleDeployment without `spec.serviceAccount` applies as;
    /// `None`: the provisioner's own identity. See [`crate::identity`].
    pub default_service_account: Option<rukpak_api::ServiceAccountRef>,
    /// Namespace of the ConfigMap the default identity is published in for the admission
    /// policy (the namespace its binding names; see [`crate::identity`]).
    pub identity_namespace: String,
    /// At most this many BundleDeployments are reconciled at once (0: no limit), so many
    /// slow or failing ones cannot take every worker from the rest.
    pub concurrency: u16,
    /// Lifetimes of the built-in webhook certificates (see [`crate::certificates`]).
    pub certificates: crate::certificates::Policy,
    /// Triggers of one BundleDeployment that arrive within this time of each other make one
    /// reconcile (a Bundle's unpacking steps, the watch events of several objects).
    pub debounce: Duration,
    /// At most this many bytes of unpacked bundle content are kept in memory between
    /// reconciles (see [`crate::content_cache`]).
    pub content_cache_bytes: u64,
}

/// Everything a reconcile needs.
pub struct Context<F> {
    pub(super) client: Client,
    pub(super) config: kube::Config,
    pub(super) format: F,
    pub(super) settings: Settings,
    pub(super) store: content::store::Store,
    pub(super) drift: DriftWatches,
    pub(super) recorder: Recorder,
    pub(super) metrics: ReconcileMetrics,
    pub(super) backoff: Backoff,
    pub(super) kinds: Arc<KindCache>,
    pub(super) clients: SharedClients,
    /// The user name the API server authenticates this provisioner as, learned on first
    /// need: the author of what it writes as itself.
    pub(super) own_username: tokio::sync::OnceCell<String>,
    /// The field manager of this provisioner's status writes (and its Events' reporter).
    pub(super) field_manager: String,
    /// Every ProvisionerClass, as its watch last saw it.
    pub(super) classes: Store<ProvisionerClass>,
    /// Every Bundle owned by a BundleDeployment, as its watch last saw it.
    pub(super) bundles: Store<Bundle>,
    /// The writers of those two stores, taken by [`run`], which starts their watches.
    pub(super) writers: std::sync::Mutex<Option<(Writer<ProvisionerClass>, Writer<Bundle>)>>,
    pub(super) contents: ContentCache,
}

/// A failed reconcile.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing the BundleDeployment, its Bundle or its namespace failed.
    #[error(transparent)]
    Kube(#[from] KubeCallError),
    /// The finalizer machinery failed.
    #[error("failed to run the finalizer of {0}")]
    Finalizer(
        String,
        #[source] Box<kube::runtime::finalizer::Error<Error>>,
    ),
    /// Removing applied objects on deletion failed.
    #[error("failed to delete the objects of {0}")]
    Cleanup(String, #[source] Box<ApplyError>),
    /// A client for applying could not be built.
    #[error("failed to create a client acting as {0}")]
    Client(String, #[source] kube::Error),
}

impl Classify for Error {
    fn retry(&self) -> Retry {
        Retry::Backoff
    }

    fn label(&self) -> &'static str {
        match self {
            Self::Kube(err) => err.label(),
            Self::Finalizer(..) => "finalizer",
            Self::Cleanup(..) => "cleanup",
            Self::Client(..) => "client",
        }
    }
}

impl<F: BundleFormat> Context<F> {
    /// Builds the context. `config` is the provisioner's own client configuration; clients
    /// impersonating a BundleDeployment's ServiceAccount are derived from it.
    pub fn new(
        client: Client,
        config: kube::Config,
        format: F,
        settings: Settings,
        metrics: ReconcileMetrics,
        drift: DriftWatches,
    ) -> Self {
        let classes = Writer::default();
        let bundles = Writer::default();
        Self {
            classes: classes.as_reader(),
            bundles: bundles.as_reader(),
            writers: std::sync::Mutex::new(Some((classes, bundles))),
            contents: ContentCache::new(settings.content_cache_bytes),
            store: content::store::Store::new(client.clone(), &settings.system_namespace),
            recorder: kit::controller::recorder(
                client.clone(),
                &format!("{}-provisioner", format.provisioner_id()),
            ),
            field_manager: format!("{}-provisioner", format.provisioner_id()),
            client,
            config,
            format,
            settings,
            drift,
            metrics,
            backoff: Backoff::default(),
            kinds: Arc::new(KindCache::new()),
            clients: SharedClients::default(),
            own_username: tokio::sync::OnceCell::new(),
        }
    }

    /// The applier for a BundleDeployment, acting as the identity it applies as (see
    /// [`crate::identity`]), and the sink of the API server warnings its writes receive.
    pub(super) async fn applier_for(
        &self,
        deployment: &BundleDeployment,
    ) -> Result<(Applier, Warnings), Error> {
        let account =
            identity::account_for(deployment, self.settings.default_service_account.as_ref());
        let identity = match account {
            Some(account) => format!("ServiceAccount {account}"),
            None => "the provisioner".to_owned(),
        };
        // Who the API server records as the author of what this applier creates, so that
        // it knows its own child BundleDeployments (see [`crate::collision`]).
        let author = match account {
            Some(account) => account.username(),
            None => self
                .own_username
                .get_or_try_init(|| identity::whoami(&self.client))
                .await
                .map_err(|source| {
                    KubeCallError::new("learn", "the provisioner's own user name", source)
                })?
                .clone(),
        };
        let shared = self
            .clients
            .get_or_build(&identity, || match account {
                Some(account) => identity::impersonating(&self.config, account),
                None => self.config.clone(),
            })
            .map_err(|source| Error::Client(identity, source))?;
        let (client, warnings) = recording_warnings(&shared);
        Ok((
            Applier::new(client, self.kinds.clone())
                .with_observer(self.client.clone())
                .with_watches(self.drift.clone())
                .with_author(author),
            warnings,
        ))
    }

    pub(super) async fn event(
        &self,
        deployment: &BundleDeployment,
        warning: bool,
        reason: &str,
        note: String,
    ) {
        let reference = deployment.object_ref(&());
        kit::events::publish(
            &self.recorder,
            &reference,
            warning,
            reason,
            "Reconcile",
            note,
        )
        .await;
    }
}
