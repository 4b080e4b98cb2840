//! The Catalog controller: fetch, store, parse and serve each Catalog's file-based catalog.
//!
//! Fetching is skipped when nothing can have changed: a ConfigMap is immutable, so the same
//! resourceVersion means the same content; an image named by digest never changes; an image
//! named by tag is fetched again every poll interval. After a restart, content whose status
//! still describes the current spec is read back from the content store instead of fetched.
//! When a fetch fails, a catalog already served keeps being served (its last good content).

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use deppy_api::conditions::{TYPE_SERVING, TYPE_UNPACKED, reasons};
use deppy_api::{BundleIndex, Catalog, CatalogSource, CatalogStatus, CatalogUrls, ContentRef};
use fbc::CatalogIndex;
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::runtime::controller::{Action, Controller, Error as ControllerError};
use kube::runtime::reflector::Store;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource, ResourceExt};
use tokio_util::sync::CancellationToken;

use kit::conditions::{Desired, status};
use kit::kube_error::KubeCallError;
use kit::retry::{Classify, Retry};

use super::{Context, ServedCatalog, error_chain, loading};

/// A failed Catalog reconcile; always retried with backoff.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// Reading or writing an object failed.
    #[error(transparent)]
    Kube(#[from] KubeCallError),
    /// Storing the catalog's content failed.
    #[error("failed to store the content of Catalog {0}")]
    Store(String, #[source] content::StoreError),
}

impl Classify for Error {
    fn retry(&self) -> Retry {
        Retry::Backoff
    }

    fn label(&self) -> &'static str {
        match self {
            Self::Kube(err) => err.label(),
            Self::Store(..) => "store",
        }
    }
}

/// Runs the Catalog controller until `shutdown`.
pub(super) async fn run(
    ctx: Arc<Context>,
    catalogs: impl Stream<Item = Result<Catalog, watcher::Error>> + Send + 'static,
    store: Store<Catalog>,
    shutdown: CancellationToken,
) {
    let controller = Controller::for_stream(
        // Not on its own status writes: a failing Catalog retries on its backoff.
        catalogs.predicate_filter(kit::watch::authored, Default::default()),
        store,
    )
    .trigger_backoff(kit::watch::WatchBackoff::default())
    .graceful_shutdown_on(shutdown.cancelled_owned());
    let served = ctx.catalogs.clone();
    let changed = ctx.changed.clone();
    let reconciles = controller
        .run(reconcile, error_policy, ctx.clone())
        .for_each(|result| {
            // A requeued request can outlive its Catalog; the deletion watch below has
            // (or will have) stopped serving it.
            if let Err(err) = &result
                && !matches!(err, ControllerError::ObjectNotFound(_))
            {
                tracing::debug!(error = %error_chain(err), "catalog reconcile request failed");
            }
            async {}
        });
    // The controller reconciles only objects that exist, and there is no finalizer: a
    // deleted Catalog is noticed by watching for deletions.
    let deletions = watcher(
        Api::<Catalog>::all(ctx.client.clone()),
        kit::watch::config(ctx.settings.selector.as_deref()),
    )
    .backoff(kit::watch::WatchBackoff::default())
    .for_each(|event| {
        if let Ok(watcher::Event::Delete(catalog)) = &event
            && served.remove(&catalog.name_any())
        {
            tracing::info!(catalog = %catalog.name_any(), "stopped serving deleted catalog");
            let _ = changed.try_send(());
        }
        async {}
    });
    // The deletion watch never ends by itself; the controller ends on `shutdown`.
    tokio::select! {
        () = reconciles => {}
        () = deletions => {}
    }
}

fn error_policy(catalog: Arc<Catalog>, error: &Error, ctx: Arc<Context>) -> Action {
    kit::controller::retry_after(&ctx.backoff, "Catalog", &catalog.name_any(), error)
}

async fn reconcile(catalog: Arc<Catalog>, ctx: Arc<Context>) -> Result<Action, Error> {
    let result = kit::controller::timed(
        &ctx.metrics.reconcile,
        "catalog",
        reconcile_catalog(&catalog, &ctx),
    )
    .await;
    ctx.reconciled
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(catalog.name_any());
    result
}

/// What fetching produced.
enum Fetched {
    /// The served catalog is current; nothing was read.
    Unchanged(ServedCatalog),
    /// Content to parse and serve. `polled` is false when it was read back from the
    /// content store rather than fetched from the source.
    Content {
        content: content::Content,
        resolved_source: String,
        polled: bool,
    },
    /// The source could not be read; `retry` says whether to try again with backoff.
    Failed { message: String, retry: bool },
}

/// What a reconcile did with the Catalog's content: the input of the pure status and
/// next-action functions.
enum Outcome {
    /// The served catalog is current.
    Unchanged(Arc<CatalogIndex>),
    /// New content was parsed and is served.
    Served {
        resolved_source: String,
        polled: bool,
        index: Arc<CatalogIndex>,
        /// The content as stored, when it was fetched (content read back from the store is
        /// referenced already).
        stored: Option<ContentRef>,
        /// The bundle index as stored; `None` when it could not be built.
        bundle_index: Option<ContentRef>,
    },
    /// New content was fetched but does not parse: the catalog is no longer served.
    Invalid {
        resolved_source: String,
        polled: bool,
        message: String,
    },
    /// The source could not be read.
    Failed {
        message: String,
        retry: bool,
        /// The last good content, still served.
        still_served: Option<Arc<CatalogIndex>>,
    },
}

/// Read (fetch) → write (store and serve) → status (pure) → next action (pure).
async fn reconcile_catalog(catalog: &Catalog, ctx: &Context) -> Result<Action, Error> {
    let name = catalog.name_any();
    let generation = catalog.meta().generation;
    let current = catalog.status.clone().unwrap_or_default();
    let source_key = serde_json::to_string(&catalog.spec.source).unwrap_or_default();
    let poll = poll_interval(catalog, ctx.settings.default_poll_interval);

    let fetched = fetch(catalog, ctx, &current, &source_key, poll).await?;
    let outcome = match fetched {
        Fetched::Unchanged(served) => Outcome::Unchanged(keep_serving(catalog, ctx, served)),
        Fetched::Content {
            content,
            resolved_source,
            polled,
        } => serve(catalog, ctx, &content, resolved_source, polled).await?,
        Fetched::Failed { message, retry } => Outcome::Failed {
            message,
            retry,
            // Keep serving the last good content: a registry outage must not take
            // resolutions down with it.
            still_served: ctx.catalogs.get(&name).map(|served| served.index),
        },
    };
    let now = kit::conditions::now();
    let mut next = status_after(&current, &outcome, generation, &now);
    next.urls = urls(&next, ctx.settings.api.as_ref(), &name, generation);
    if next != current {
        write_status(catalog, ctx, &current, &next).await?;
    }
    if kit::conditions::is_true(&next.conditions, TYPE_UNPACKED, generation) {
        ctx.backoff.reset(&name);
    }
    Ok(match next_poll(catalog, &current, &outcome, poll) {
        Next::AwaitChange => Action::await_change(),
        Next::After(wait) => Action::requeue(wait),
        Next::Backoff => Action::requeue(ctx.backoff.next_delay(&name)),
    })
}

/// The served catalog, with `spec.priority` updated when only that changed.
fn keep_serving(catalog: &Catalog, ctx: &Context, mut served: ServedCatalog) -> Arc<CatalogIndex> {
    let priority = catalog.spec.priority.unwrap_or(0);
    if served.priority != priority {
        served.priority = priority;
        ctx.catalogs.insert(&catalog.name_any(), served.clone());
        ctx.notify_catalogs_changed();
    }
    served.index
}

/// The status after `outcome`. Pure.
fn status_after(
    current: &CatalogStatus,
    outcome: &Outcome,
    generation: Option<i64>,
    now: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
) -> CatalogStatus {
    let mut next = current.clone();
    next.observed_generation = generation;
    let set = |status: &mut CatalogStatus,
               type_: &'static str,
               value: &'static str,
               reason: &str,
               message: &str| {
        set(status, type_, value, reason, message, generation, now);
    };
    match outcome {
        Outcome::Unchanged(index) => set_serving(&mut next, index, generation, now),
        Outcome::Served {
            resolved_source,
            polled,
            ..
        }
        | Outcome::Invalid {
            resolved_source,
            polled,
            ..
        } => {
            if *polled {
                next.last_polled = Some(now.clone());
            }
            next.resolved_source = Some(resolved_source.clone());
            set(
                &mut next,
                TYPE_UNPACKED,
                status::TRUE,
                reasons::UNPACK_SUCCESSFUL,
                &format!("unpacked {resolved_source}"),
            );
        }
        Outcome::Failed {
            message,
            still_served,
            ..
        } => {
            set(
                &mut next,
                TYPE_UNPACKED,
                status::FALSE,
                reasons::UNPACK_FAILED,
                message,
            );
            match still_served {
                Some(index) => set_serving(&mut next, index, generation, now),
                None => set(
                    &mut next,
                    TYPE_SERVING,
                    status::FALSE,
                    reasons::UNPACK_FAILED,
                    message,
                ),
            }
        }
    }
    match outcome {
        Outcome::Served {
            index,
            stored,
            bundle_index,
            ..
        } => {
            if let Some(stored) = stored {
                next.content = Some(stored.clone());
            }
            next.bundle_index.clone_from(bundle_index);
            set_serving(&mut next, index, generation, now);
        }
        Outcome::Invalid { message, .. } => {
            next.content = None;
            next.bundle_index = None;
            next.packages = None;
            next.bundles = None;
            set(
                &mut next,
                TYPE_SERVING,
                status::FALSE,
                reasons::INVALID_CATALOG,
                message,
            );
        }
        Outcome::Unchanged(_) | Outcome::Failed { .. } => {}
    }
    next
}

/// Where the catalog query API serves the catalog: set while it is Serving and the API is
/// on. Pure.
fn urls(
    status: &CatalogStatus,
    api: Option<&super::ApiSettings>,
    name: &str,
    generation: Option<i64>,
) -> Option<CatalogUrls> {
    let api = api?;
    kit::conditions::is_true(&status.conditions, TYPE_SERVING, generation).then(|| CatalogUrls {
        base: format!("{}/catalogs/{name}", api.base_url),
    })
}

/// When a Catalog is looked at again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// Only a change of the Catalog brings it back (nothing polls it).
    AwaitChange,
    /// After this long (the next poll).
    After(Duration),
    /// After the next backoff delay (a fetch worth retrying failed).
    Backoff,
}

/// An image named by tag is polled: next when the poll interval has passed since the last
/// poll (a whole interval after one that just happened); a failure worth retrying backs
/// off instead. Pure.
fn next_poll(
    catalog: &Catalog,
    current: &CatalogStatus,
    outcome: &Outcome,
    poll: Duration,
) -> Next {
    if matches!(outcome, Outcome::Failed { retry: true, .. }) {
        return Next::Backoff;
    }
    let polls = catalog
        .spec
        .source
        .image
        .as_ref()
        .is_some_and(|image| !is_digest_reference(&image.ref_));
    if !polls {
        return Next::AwaitChange;
    }
    let polled_now = matches!(
        outcome,
        Outcome::Served { polled: true, .. } | Outcome::Invalid { polled: true, .. }
    );
    if polled_now {
        return Next::After(poll);
    }
    Next::After(remaining(current.last_polled.as_ref(), poll).max(Duration::from_secs(1)))
}

/// Announces condition changes and writes `next` as the Catalog's status.
async fn write_status(
    catalog: &Catalog,
    ctx: &Context,
    current: &CatalogStatus,
    next: &CatalogStatus,
) -> Result<(), Error> {
    let name = catalog.name_any();
    ctx.announce(
        &catalog.object_ref(&()),
        &current.conditions,
        &next.conditions,
    )
    .await;
    kit::status::apply(
        &Api::<Catalog>::all(ctx.client.clone()),
        &name,
        super::FIELD_MANAGER,
        next,
    )
    .await
    .map_err(|source| {
        KubeCallError::new("update the status of", format!("Catalog {name}"), source)
    })?;
    Ok(())
}

/// Parses fetched `content` and serves it (storing it when it was fetched rather than read
/// back from the store), with its bundle index beside it in the store, or stops serving the
/// catalog when it does not parse.
async fn serve(
    catalog: &Catalog,
    ctx: &Context,
    content: &content::Content,
    resolved_source: String,
    polled: bool,
) -> Result<Outcome, Error> {
    let name = catalog.name_any();
    let priority = catalog.spec.priority.unwrap_or(0);
    let source_key = serde_json::to_string(&catalog.spec.source).unwrap_or_default();
    let digest = content.digest().to_string();
    // Storing (API writes) and parsing (CPU) overlap. Content read back from the store is
    // there already; fetched content is written even when the status names the same
    // digest, because the store may have lost it (or belong to another system namespace).
    // Content that turns out not to parse is then stored too, unreferenced: the sweep
    // removes it.
    let storing = async {
        if polled {
            store(&name, ctx, content).await.map(Some)
        } else {
            Ok(None)
        }
    };
    let (parsed, stored) = tokio::join!(parse(ctx, content), storing);
    let parsed = match parsed {
        Ok(parsed) => parsed,
        Err(message) => {
            if ctx.catalogs.remove(&name) {
                ctx.notify_catalogs_changed();
            }
            return Ok(Outcome::Invalid {
                resolved_source,
                polled,
                message,
            });
        }
    };
    let stored = stored?;
    let bundle_index = match parsed.bundle_index {
        Ok(index) => Some(store(&name, ctx, &index).await?),
        Err(message) => {
            // The activator reads the whole catalog instead: slower, still correct.
            tracing::warn!(catalog = %name, error = %message, "serving without a bundle index");
            None
        }
    };
    ctx.catalogs.insert(
        &name,
        ServedCatalog {
            index: parsed.index.clone(),
            priority,
            resolved_source: resolved_source.clone(),
            source_key,
            content_digest: digest,
            stored: parsed.stored,
        },
    );
    ctx.notify_catalogs_changed();
    Ok(Outcome::Served {
        resolved_source,
        polled,
        index: parsed.index,
        stored,
        bundle_index,
    })
}

/// A parsed catalog, its bundle index as content (or why that could not be built) and its
/// blobs as the catalog query API serves them.
struct Parsed {
    index: Arc<CatalogIndex>,
    bundle_index: Result<content::Content, String>,
    stored: Option<Arc<catalog_api::StoredCatalog>>,
}

/// Parses `content` off the async workers; the error is a message for the user. A catalog
/// already served from the same content (another Catalog's, or this one's before a poll
/// that found nothing new) is not parsed again but shared, so it is held once.
async fn parse(ctx: &Context, content: &content::Content) -> Result<Parsed, String> {
    let limits = ctx.settings.unpack.limits;
    let digest = content.digest().to_string();
    if let Some((index, stored)) = ctx.catalogs.by_content(&digest) {
        let bundle_index = loading::index_content(&BundleIndex::from_catalog(&index), &limits);
        return Ok(Parsed {
            index,
            bundle_index,
            stored,
        });
    }
    let content = content.clone();
    let store_dir = ctx.settings.api.as_ref().map(|api| api.store_dir.clone());
    tokio::task::spawn_blocking(move || {
        let (index, stored) = loading::parse(&content, &limits, store_dir.as_deref())?;
        let bundle_index = loading::index_content(&BundleIndex::from_catalog(&index), &limits);
        Ok(Parsed {
            index: Arc::new(index),
            bundle_index,
            stored: stored.map(Arc::new),
        })
    })
    .await
    .unwrap_or_else(|err| Err(format!("failed to parse the catalog: {err}")))
}

/// Sets a condition; a shorthand that keeps the call sites on one line each.
fn set(
    status: &mut CatalogStatus,
    type_: &'static str,
    value: &'static str,
    reason: &str,
    message: &str,
    generation: Option<i64>,
    now: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
) {
    kit::conditions::set_all(
        &mut status.conditions,
        [Desired::new(type_, value, reason, message)],
        generation,
        now,
    );
}

/// Records the counts of a served catalog and sets `Serving` to True.
fn set_serving(
    status: &mut CatalogStatus,
    index: &CatalogIndex,
    generation: Option<i64>,
    now: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
) {
    let packages = index.packages().count();
    let bundles = index.catalog().bundles.len();
    status.packages = Some(i64::try_from(packages).unwrap_or(i64::MAX));
    status.bundles = Some(i64::try_from(bundles).unwrap_or(i64::MAX));
    set(
        status,
        TYPE_SERVING,
        status::TRUE,
        reasons::SERVING,
        &serving_message(index, packages, bundles),
        generation,
        now,
    );
}

/// How many packages with a broken upgrade graph the Serving message names one by one.
const NAMED_UNUSABLE_PACKAGES: usize = 5;

/// `serving N packages, M bundles`, then each package whose upgrade graph is broken (and so
/// is not resolved from this catalog) with why.
fn serving_message(index: &CatalogIndex, packages: usize, bundles: usize) -> String {
    let mut message = format!("serving {packages} packages, {bundles} bundles");
    let unusable: Vec<(&str, &[fbc::IndexError])> = index.unusable_packages().collect();
    for (package, problems) in unusable.iter().take(NAMED_UNUSABLE_PACKAGES) {
        let problems: Vec<String> = problems.iter().map(|p| error_chain(p)).collect();
        let _ = write!(
            message,
            "; package {package} cannot be resolved until the catalog is fixed: {}",
            problems.join("; ")
        );
    }
    if let Some(more) = unusable.len().checked_sub(NAMED_UNUSABLE_PACKAGES)
        && more > 0
    {
        let _ = write!(
            message,
            "; {more} more packages cannot be resolved for the same reason"
        );
    }
    message
}

/// Reads the Catalog's source, unless what is served (or stored) is still current.
async fn fetch(
    catalog: &Catalog,
    ctx: &Context,
    current: &CatalogStatus,
    source_key: &str,
    poll: Duration,
) -> Result<Fetched, Error> {
    let name = catalog.name_any();
    let served = ctx
        .catalogs
        .get(&name)
        .filter(|s| s.source_key == source_key);
    match &catalog.spec.source {
        CatalogSource {
            config_map: Some(source),
            ..
        } => {
            let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &source.namespace);
            let qualified = format!("{}/{}", source.namespace, source.name);
            let Some(config_map) = api.get_opt(&source.name).await.map_err(|source| {
                KubeCallError::new("read", format!("ConfigMap {qualified}"), source)
            })?
            else {
                // ConfigMaps are not watched; retry until it appears.
                return Ok(Fetched::Failed {
                    message: format!("configmap {qualified} not found"),
                    retry: true,
                });
            };
            let resolved_source = format!(
                "{qualified}@{}",
                config_map.resource_version().unwrap_or_default()
            );
            if let Some(served) = served.filter(|s| s.resolved_source == resolved_source) {
                return Ok(Fetched::Unchanged(served));
            }
            if current.resolved_source.as_deref() == Some(resolved_source.as_str())
                && let Some(content) = from_store(ctx, current).await
            {
                return Ok(Fetched::Content {
                    content,
                    resolved_source,
                    polled: false,
                });
            }
            let sources = [content::source::ConfigMapSource {
                config_map,
                path: String::new(),
            }];
            Ok(
                match content::source::configmap::unpack(&sources, &ctx.settings.unpack.limits) {
                    Ok(unpacked) => Fetched::Content {
                        content: unpacked.content,
                        resolved_source,
                        polled: true,
                    },
                    // Terminal, but ConfigMaps are not watched: a fix (e.g. a new immutable
                    // ConfigMap under the same name) is noticed only by retrying.
                    Err(err) => Fetched::Failed {
                        message: error_chain(&err),
                        retry: true,
                    },
                },
            )
        }
        CatalogSource {
            image: Some(image), ..
        } => {
            let due = !is_digest_reference(&image.ref_)
                && remaining(current.last_polled.as_ref(), poll).is_zero();
            if !due {
                if let Some(served) = served {
                    return Ok(Fetched::Unchanged(served));
                }
                if current.observed_generation == catalog.meta().generation
                    && let Some(resolved_source) = current.resolved_source.clone()
                    && let Some(content) = from_store(ctx, current).await
                {
                    return Ok(Fetched::Content {
                        content,
                        resolved_source,
                        polled: false,
                    });
                }
            }
            let pull_secret = match &image.pull_secret {
                Some(secret) => match read_pull_secret(ctx, secret).await? {
                    PullSecret::Usable(bytes) => Some(bytes),
                    PullSecret::Unusable(message) => {
                        return Ok(Fetched::Failed {
                            message,
                            retry: true,
                        });
                    }
                },
                None => None,
            };
            let source = content::Source::Image(content::source::ImageSource {
                reference: image.ref_.clone(),
                pull_secret,
                tls: content::source::TlsOptions {
                    insecure_skip_verify: image.insecure_skip_tls_verify.unwrap_or(false),
                    ..content::source::TlsOptions::default()
                },
                directory: Some("configs".to_owned()),
            });
            Ok(match ctx.unpacker.unpack(&source).await {
                Ok(unpacked) => Fetched::Content {
                    content: unpacked.content,
                    resolved_source: match unpacked.resolved {
                        content::ResolvedSource::Image { reference, .. } => reference,
                        _ => image.ref_.clone(),
                    },
                    polled: true,
                },
                Err(err) => Fetched::Failed {
                    retry: !err.is_terminal(),
                    message: error_chain(&err),
                },
            })
        }
        // The CRD requires exactly one source; an object that slipped past it is reported.
        _ => Ok(Fetched::Failed {
            message: "spec.source sets neither image nor configMap".to_owned(),
            retry: false,
        }),
    }
}

/// A catalog image's pull secret, as read.
enum PullSecret {
    /// Its registry credentials.
    Usable(Vec<u8>),
    /// Missing or unusable, with a message for the user.
    Unusable(String),
}

/// The pull secret `name` of the system namespace.
async fn read_pull_secret(ctx: &Context, name: &str) -> Result<PullSecret, Error> {
    let namespace = &ctx.settings.system_namespace;
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), namespace);
    let secret = secrets.get_opt(name).await.map_err(|source| {
        KubeCallError::new("read", format!("Secret {namespace}/{name}"), source)
    })?;
    Ok(match secret {
        None => PullSecret::Unusable(format!("pull secret {namespace}/{name} not found")),
        Some(secret) => {
            match content::source::image::pull_secret_config(&secret.data.unwrap_or_default()) {
                Ok(bytes) => PullSecret::Usable(bytes),
                Err(reason) => PullSecret::Unusable(format!(
                    "pull secret {namespace}/{name} is unusable: {reason}"
                )),
            }
        }
    })
}

/// The content the status records, read back from the store; `None` (and a fresh fetch)
/// when it is missing or damaged.
async fn from_store(ctx: &Context, current: &CatalogStatus) -> Option<content::Content> {
    let reference = current.content.as_ref()?;
    let digest: content::Digest = reference.digest.parse().ok()?;
    match ctx.store.read(&digest).await {
        Ok(content) => Some(content),
        Err(err) => {
            tracing::info!(digest = %digest, error = %error_chain(&err), "stored catalog content unusable; fetching again");
            None
        }
    }
}

/// Stores content (the catalog's or its bundle index) owned by Catalog `name` (adding the
/// Catalog as an owner when another Catalog stored the same content).
async fn store(name: &str, ctx: &Context, content: &content::Content) -> Result<ContentRef, Error> {
    let stored = ctx
        .store
        .write(content, CATALOG_USER)
        .await
        .map_err(|err| Error::Store(name.to_owned(), err))?;
    Ok(ContentRef {
        digest: stored.digest.to_string(),
        size: i64::try_from(stored.size).unwrap_or(i64::MAX),
        chunks: i32::try_from(stored.chunks).unwrap_or(i32::MAX),
    })
}

/// The kind of user Catalogs are to the content store: the label their content carries,
/// and the content deppy-resolver's sweep looks after.
pub const CATALOG_USER: &str = "Catalog";

/// The content digests every Catalog of the cluster references, catalogs and bundle indexes
/// (all, not only this
/// instance's shard: content is shared by digest).
pub async fn referenced_content(
    client: kube::Client,
) -> Result<std::collections::BTreeSet<String>, String> {
    let catalogs = Api::<Catalog>::all(client)
        .list(&kube::api::ListParams::default())
        .await
        .map_err(|err| kit::error_chain(&err))?;
    Ok(catalogs
        .items
        .iter()
        .filter_map(|c| c.status.as_ref())
        .flat_map(|status| [status.content.as_ref(), status.bundle_index.as_ref()])
        .flatten()
        .map(|r| r.digest.clone())
        .collect())
}

/// Whether an image reference pins a digest (and so never needs polling).
fn is_digest_reference(reference: &str) -> bool {
    reference.contains('@')
}

/// `spec.pollInterval`, or `default` when unset or unparsable (the CRD checks the format).
fn poll_interval(catalog: &Catalog, default: Duration) -> Duration {
    catalog
        .spec
        .poll_interval
        .as_deref()
        .and_then(|text| text.parse::<SignedDuration>().ok())
        .and_then(|parsed| Duration::try_from(parsed).ok())
        .filter(|interval| !interval.is_zero())
        .unwrap_or(default)
}

/// Time left until the next poll; zero when due (or never polled).
fn remaining(
    last_polled: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    poll: Duration,
) -> Duration {
    let Some(last) = last_polled else {
        return Duration::ZERO;
    };
    let elapsed = Timestamp::now().duration_since(last.0);
    Duration::try_from(elapsed)
        .ok()
        .map_or(Duration::ZERO, |elapsed| poll.saturating_sub(elapsed))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(second: i64) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Time {
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            Timestamp::from_second(second).unwrap(),
        )
    }

    fn catalog(image: &str) -> Catalog {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "deppy.io/v1alpha1", "kind": "Catalog",
            "metadata": {"name": "c", "generation": 2},
            "spec": {"source": {"image": {"ref": image}}},
        }))
        .unwrap()
    }

    fn index() -> Arc<CatalogIndex> {
        let file = "---\nschema: olm.package\nname: a\n---\nschema: olm.channel\npackage: a\n\
                    name: stable\nentries:\n- name: a.v1.0.0\n---\nschema: olm.bundle\npackage: a\n\
                    name: a.v1.0.0\nimage: example.com/a:1.0.0\nproperties:\n\
                    - {type: olm.package, value: {packageName: a, version: 1.0.0}}\n";
        Arc::new(CatalogIndex::from_files([("a.yaml", file.to_owned())]).unwrap())
    }

    #[test]
    fn a_failed_fetch_keeps_serving_the_last_good_content_and_rewrites_nothing_the_second_time() {
        let served = status_after(
            &CatalogStatus::default(),
            &Outcome::Served {
                resolved_source: "example.com/c@sha256:1".into(),
                polled: true,
                index: index(),
                stored: None,
                bundle_index: None,
            },
            Some(2),
            &at(10),
        );
        assert!(kit::conditions::is_true(
            &served.conditions,
            TYPE_SERVING,
            Some(2)
        ));
        assert_eq!(served.packages, Some(1));
        assert_eq!(served.last_polled, Some(at(10)));
        let failed = || Outcome::Failed {
            message: "registry unreachable".into(),
            retry: true,
            still_served: Some(index()),
        };
        let after = status_after(&served, &failed(), Some(2), &at(20));
        assert!(!kit::conditions::is_true(
            &after.conditions,
            TYPE_UNPACKED,
            Some(2)
        ));
        assert!(kit::conditions::is_true(
            &after.conditions,
            TYPE_SERVING,
            Some(2)
        ));
        assert_eq!(status_after(&after, &failed(), Some(2), &at(80)), after);
        // Content that does not parse stops the serving and forgets the counts.
        let invalid = status_after(
            &after,
            &Outcome::Invalid {
                resolved_source: "example.com/c@sha256:2".into(),
                polled: true,
                message: "not a catalog".into(),
            },
            Some(2),
            &at(90),
        );
        assert!(!kit::conditions::is_true(
            &invalid.conditions,
            TYPE_SERVING,
            Some(2)
        ));
        assert_eq!(invalid.packages, None);
    }

    #[test]
    fn tags_are_polled_digests_are_not_and_retryable_failures_back_off() {
        let poll = Duration::from_secs(600);
        let unchanged = Outcome::Unchanged(index());
        let status = CatalogStatus::default();
        assert_eq!(
            next_poll(
                &catalog("example.com/c@sha256:abc"),
                &status,
                &unchanged,
                poll
            ),
            Next::AwaitChange
        );
        let polled = Outcome::Served {
            resolved_source: "example.com/c@sha256:1".into(),
            polled: true,
            index: index(),
            stored: None,
            bundle_index: None,
        };
        assert_eq!(
            next_poll(&catalog("example.com/c:latest"), &status, &polled, poll),
            Next::After(poll)
        );
        let failed = Outcome::Failed {
            message: "registry unreachable".into(),
            retry: true,
            still_served: None,
        };
        assert_eq!(
            next_poll(&catalog("example.com/c@sha256:abc"), &status, &failed, poll),
            Next::Backoff
        );
    }

    #[test]
    fn the_serving_message_names_packages_whose_upgrade_graph_is_broken() {
        let package = |name: &str, heads: &[&str]| {
            let mut file = format!(
                "---\nschema: olm.package\nname: {name}\n---\nschema: olm.channel\n\
                 package: {name}\nname: stable\nentries:\n"
            );
            for head in heads {
                file.push_str(&format!("- name: {name}.v{head}\n"));
            }
            for head in heads {
                file.push_str(&format!(
                    "---\nschema: olm.bundle\npackage: {name}\nname: {name}.v{head}\n\
                     image: example.com/{name}:{head}\nproperties:\n\
                     - {{type: olm.package, value: {{packageName: {name}, version: {head}}}}}\n"
                ));
            }
            file
        };
        let sound = CatalogIndex::from_files([("a.yaml", package("a", &["1.0.0"]))]).unwrap();
        assert_eq!(
            serving_message(&sound, 1, 1),
            "serving 1 packages, 1 bundles"
        );
        let mut files = vec![("a.yaml".to_owned(), package("a", &["1.0.0"]))];
        for i in 0..7 {
            let name = format!("forked{i}");
            files.push((format!("{name}.yaml"), package(&name, &["1.0.0", "2.0.0"])));
        }
        let index = CatalogIndex::from_files(files).unwrap();
        let message = serving_message(&index, 8, 15);
        assert!(
            message.starts_with(
                "serving 8 packages, 15 bundles; package forked0 cannot be resolved until the \
                 catalog is fixed: forked0.yaml document 2 (olm.channel \"stable\"): invalid \
                 channel \"stable\" of package \"forked0\": channel has several heads: \
                 forked0.v1.0.0, forked0.v2.0.0; package forked1 "
            ),
            "{message}"
        );
        assert!(!message.contains("forked5"), "{message}");
        assert!(
            message.ends_with("; 2 more packages cannot be resolved for the same reason"),
            "{message}"
        );
    }

    #[test]
    fn only_tag_references_are_polled() {
        assert!(is_digest_reference("quay.io/c/cat@sha256:0123"));
        assert!(!is_digest_reference("localhost:5000/c/cat:latest"));
    }

    #[test]
    fn a_catalog_never_polled_is_due_and_a_fresh_one_is_not() {
        let minute = Duration::from_secs(60);
        assert_eq!(remaining(None, minute), Duration::ZERO);
        let now = kit::conditions::now();
        let left = remaining(Some(&now), minute);
        assert!(left > Duration::from_secs(55) && left <= minute, "{left:?}");
    }
}
