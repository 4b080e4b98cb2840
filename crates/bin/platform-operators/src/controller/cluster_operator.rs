//! The aggregated ClusterOperator controller: keeps `platform-operators-aggregated`
//! describing every PlatformOperator (see [`crate::status::cluster_operator_conditions`]).
//!
//! It reconciles one object, so it is a loop rather than a `Controller`: every change of a
//! PlatformOperator, ActiveResolution, BundleDeployment, of the ClusterOperator itself or
//! of the ClusterVersion wakes it, bursts are coalesced, and a periodic resync is the
//! safety net. It creates the ClusterOperator when missing (clusters without a
//! cluster-version operator to pre-create it). On clusters without the ClusterOperator API
//! it says so once and checks again every `api_recheck`; the PlatformOperator controller
//! runs regardless. The status is written only when it differs, and a condition's
//! `lastTransitionTime` moves only when its status flips, so a resync writes nothing.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::api::PostParams;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use kit::retry::{Classify, Retry};
use platform_api::{
    AGGREGATED_CLUSTER_OPERATOR, CLUSTER_VERSION_NAME, ClusterOperator, ClusterOperatorSpec,
    ClusterVersion, MAX_OPENSHIFT_VERSION_ANNOTATION,
};

use super::{Context, MANAGER, error_chain};
use crate::ownership::applied_by;
use crate::status::{self, Summary};

/// A failed ClusterOperator reconcile; always retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading the ClusterOperator failed.
    #[error("failed to get ClusterOperator {AGGREGATED_CLUSTER_OPERATOR}")]
    Get(#[source] kube::Error),
    /// Creating the missing ClusterOperator failed.
    #[error("failed to create ClusterOperator {AGGREGATED_CLUSTER_OPERATOR}")]
    Create(#[source] kube::Error),
    /// Reading the ClusterVersion failed.
    #[error("failed to get ClusterVersion {CLUSTER_VERSION_NAME}")]
    ClusterVersion(#[source] kube::Error),
    /// Writing the status failed.
    #[error("failed to update the status of ClusterOperator {AGGREGATED_CLUSTER_OPERATOR}")]
    Status(#[source] kube::Error),
}

impl Classify for Error {
    fn retry(&self) -> Retry {
        Retry::Backoff
    }

    fn label(&self) -> &'static str {
        match self {
            Self::Get(_) => "get",
            Self::Create(_) => "create",
            Self::ClusterVersion(_) => "cluster_version",
            Self::Status(_) => "status",
        }
    }
}

/// What one reconcile did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// The status already said it all.
    Unchanged,
    /// The status was written.
    Written,
    /// The ClusterOperator API is not installed.
    ApiMissing,
}

/// Runs until `shutdown`. Starts once the PlatformOperator,
/// ActiveResolution and BundleDeployment caches are complete (so that a restart never
/// reports "no platform operators" from a half-filled cache).
pub(super) async fn run(
    ctx: Arc<Context>,
    notify: mpsc::Sender<()>,
    notices: mpsc::Receiver<()>,
    shutdown: CancellationToken,
) {
    let by_name = |name: &str| watcher::Config::default().fields(&format!("metadata.name={name}"));
    let operator_events = watch_for_notices(
        watcher(
            Api::<ClusterOperator>::all(ctx.client.clone()),
            by_name(AGGREGATED_CLUSTER_OPERATOR),
        ),
        notify.clone(),
    );
    let version_events = watch_for_notices(
        watcher(
            Api::<ClusterVersion>::all(ctx.client.clone()),
            by_name(CLUSTER_VERSION_NAME),
        ),
        notify,
    );
    let work = async {
        if ctx.caches_synced().await {
            reconcile_loop(&ctx, notices).await;
        }
    };
    tokio::select! {
        () = shutdown.cancelled() => {}
        _ = async { futures::join!(operator_events, version_events, work) } => {}
    }
}

/// Notices for every event of `events`. Errors (e.g. the API is not installed) are
/// retried with the watcher's backoff, which is also how a CRD installed later is found.
async fn watch_for_notices<K>(
    events: impl futures::Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send,
    notify: mpsc::Sender<()>,
) where
    K: Send,
{
    events
        .backoff(kit::watch::WatchBackoff::default())
        .for_each(|event| {
            match event {
                Ok(_) => {
                    let _ = notify.try_send(());
                }
                Err(err) => tracing::debug!(error = %error_chain(&err), "watch failed; retrying"),
            }
            futures::future::ready(())
        })
        .await;
}

async fn reconcile_loop(ctx: &Context, mut notices: mpsc::Receiver<()>) {
    const KEY: &str = "clusteroperator";
    let mut delay = Duration::ZERO;
    let mut first = true;
    let mut api_missing = false;
    loop {
        tokio::select! {
            notice = notices.recv() => if notice.is_none() { return },
            () = tokio::time::sleep(delay) => {}
        }
        // Coalesce a burst of events (a whole install touches many objects) into one
        // reconcile.
        tokio::time::sleep(Duration::from_millis(100)).await;
        while notices.try_recv().is_ok() {}

        let result = kit::controller::timed_with_label(&ctx.metrics.reconcile, KEY, async {
            let outcome = reconcile(ctx).await?;
            let label = match outcome {
                Outcome::ApiMissing => "api_missing",
                _ => kit::controller::SUCCESS,
            };
            Ok::<_, Error>((label, outcome))
        })
        .await;
        match result {
            Ok(Outcome::ApiMissing) => {
                if !api_missing {
                    tracing::warn!(
                        recheck = ?ctx.settings.api_recheck,
                        "the ClusterOperator API (clusteroperators.config.openshift.io) is not installed; \
                         not maintaining ClusterOperator {AGGREGATED_CLUSTER_OPERATOR} until it is"
                    );
                    api_missing = true;
                }
                delay = ctx.settings.api_recheck;
            }
            Ok(outcome) => {
                ctx.backoff.reset(KEY);
                if api_missing {
                    tracing::info!("the ClusterOperator API is installed now");
                    api_missing = false;
                }
                if first || outcome == Outcome::Written {
                    tracing::info!(
                        written = outcome == Outcome::Written,
                        "reconciled ClusterOperator {AGGREGATED_CLUSTER_OPERATOR}"
                    );
                } else {
                    tracing::debug!("ClusterOperator {AGGREGATED_CLUSTER_OPERATOR} is up to date");
                }
                first = false;
                delay = ctx.settings.resync;
            }
            Err(err) => {
                delay = kit::controller::retry_delay(&ctx.backoff, "ClusterOperator", KEY, &err)
                    .unwrap_or(ctx.settings.resync);
            }
        }
    }
}

/// Whether `err` says the resource type does not exist (no CRD).
fn is_not_found(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 404)
}

async fn reconcile(ctx: &Context) -> Result<Outcome, Error> {
    let api = Api::<ClusterOperator>::all(ctx.client.clone());
    let current = match api.get_opt(AGGREGATED_CLUSTER_OPERATOR).await {
        Ok(Some(current)) => current,
        Ok(None) => {
            let new = ClusterOperator::new(AGGREGATED_CLUSTER_OPERATOR, ClusterOperatorSpec {});
            let params = PostParams {
                field_manager: Some(MANAGER.to_owned()),
                ..PostParams::default()
            };
            match api.create(&params, &new).await {
                Ok(created) => {
                    tracing::info!("created ClusterOperator {AGGREGATED_CLUSTER_OPERATOR}");
                    created
                }
                // Another writer created it between our read and our create (kube's
                // `is_conflict` is false for AlreadyExists, the API server's answer): go on
                // with theirs.
                Err(kube::Error::Api(status)) if status.is_already_exists() => api
                    .get(AGGREGATED_CLUSTER_OPERATOR)
                    .await
                    .map_err(Error::Get)?,
                Err(err) if is_not_found(&err) => return Ok(Outcome::ApiMissing),
                Err(err) => return Err(Error::Create(err)),
            }
        }
        // get_opt answers None for a missing object; a 404 here is the whole API missing
        // (its group/version not served at all).
        Err(err) if is_not_found(&err) => return Ok(Outcome::ApiMissing),
        Err(err) => return Err(Error::Get(err)),
    };
    let cluster_version = match Api::<ClusterVersion>::all(ctx.client.clone())
        .get_opt(CLUSTER_VERSION_NAME)
        .await
    {
        Ok(version) => version,
        // No ClusterVersion API: not OpenShift, no version to compare with.
        Err(err) if is_not_found(&err) => None,
        Err(err) => return Err(Error::ClusterVersion(err)),
    };
    let version = cluster_version
        .as_ref()
        .and_then(|v| v.status.as_ref())
        .and_then(|s| s.current_version())
        .map(str::to_owned);

    let (summaries, related) = survey(ctx);
    record_metrics(ctx, &summaries);
    let desired = status::cluster_operator_conditions(&summaries, version.as_deref());
    let next = status::cluster_operator_status(
        current.status.as_ref(),
        &desired,
        &ctx.settings.release_version,
        status::related_objects(&ctx.settings.system_namespace, related),
        &kit::conditions::now(),
    );
    if current.status.as_ref() == Some(&next) {
        return Ok(Outcome::Unchanged);
    }
    kit::status::apply(&api, AGGREGATED_CLUSTER_OPERATOR, super::MANAGER, &next)
        .await
        .map_err(Error::Status)?;
    Ok(Outcome::Written)
}

/// Every live PlatformOperator (sorted by name) with the `olm.maxOpenShiftVersion` of the
/// children its wrapper applied, and the names of the BundleDeployments involved.
fn survey(ctx: &Context) -> (Vec<Summary>, Vec<String>) {
    let mut children: BTreeMap<String, Vec<Arc<rukpak_api::BundleDeployment>>> = BTreeMap::new();
    let mut names: BTreeMap<String, ()> = BTreeMap::new();
    for deployment in ctx.caches.deployments.state() {
        names.insert(deployment.name_any(), ());
        if let Some(wrapper) = applied_by(&deployment) {
            children
                .entry(wrapper.to_owned())
                .or_default()
                .push(deployment.clone());
        }
    }
    let mut operators = ctx.caches.operators.state();
    operators.retain(|o| o.metadata.deletion_timestamp.is_none());
    operators.sort_by_key(|o| o.name_any());
    let mut related = Vec::new();
    let summaries = operators
        .iter()
        .map(|operator| {
            let wrapper = crate::names::wrapper(&operator.name_any());
            if names.contains_key(&wrapper) {
                related.push(wrapper.clone());
            }
            // Children are named after their package; name the package in messages.
            let packages: BTreeMap<String, String> = ctx
                .caches
                .resolutions
                .get(&ObjectRef::new(&operator.name_any()))
                .map(|resolution| status::resolved_packages(&resolution))
                .unwrap_or_default()
                .into_iter()
                .map(|package| (crate::names::child(&package), package))
                .collect();
            let mut maxima = Vec::new();
            for child in children.get(&wrapper).into_iter().flatten() {
                let name = child.name_any();
                related.push(name.clone());
                if let Some(max) = child.annotations().get(MAX_OPENSHIFT_VERSION_ANNOTATION) {
                    let package = packages.get(&name).cloned().unwrap_or(name);
                    maxima.push((package, max.clone()));
                }
            }
            maxima.sort();
            Summary::of(operator, maxima)
        })
        .collect();
    (summaries, related)
}

fn record_metrics(ctx: &Context, summaries: &[Summary]) {
    let mut counts: BTreeMap<(&str, &str), i64> = BTreeMap::new();
    for summary in summaries {
        let key = match &summary.installed {
            Some((true, reason)) => ("true", reason.as_str()),
            Some((false, reason)) => ("false", reason.as_str()),
            None => ("unknown", ""),
        };
        *counts.entry(key).or_default() += 1;
    }
    ctx.metrics.operators.reset();
    for ((installed, reason), count) in counts {
        ctx.metrics
            .operators
            .with_label_values(&[installed, reason])
            .set(count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use testkit::mock_api::{self, Exchange};

    /// The requests of one reconcile, seen through a mocked API server (no cluster).
    mod writes {
        use super::*;

        const OPERATORS: &str = "/apis/config.openshift.io/v1/clusteroperators";
        const OPERATOR: &str =
            "/apis/config.openshift.io/v1/clusteroperators/platform-operators-aggregated";
        const VERSION: &str = "/apis/config.openshift.io/v1/clusterversions/version";

        fn created() -> Exchange {
            Exchange::post(&format!("{OPERATORS}?fieldManager=platform-operators")).body_includes(
                json!({
                    "apiVersion": "config.openshift.io/v1",
                    "kind": "ClusterOperator",
                    "metadata": {"name": AGGREGATED_CLUSTER_OPERATOR},
                }),
            )
        }

        #[tokio::test]
        async fn a_missing_cluster_operator_is_created_then_its_status_applied() {
            let new = ClusterOperator::new(AGGREGATED_CLUSTER_OPERATOR, ClusterOperatorSpec {});
            let (client, server) = mock_api::serve([
                Exchange::get(OPERATOR).not_found(),
                created().reply_echo(),
                // Not OpenShift: no ClusterVersion.
                Exchange::get(VERSION).not_found(),
                Exchange::patch(&format!(
                    "{OPERATOR}/status?force=true&fieldManager=platform-operators"
                ))
                .body_includes(json!({
                    "apiVersion": "config.openshift.io/v1",
                    "kind": "ClusterOperator",
                    "status": {
                        "versions": [{"name": "operator", "version": "4.99.0"}],
                    },
                }))
                .check_body(|body| {
                    let types: Vec<&str> = body["status"]["conditions"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter_map(|c| c["type"].as_str())
                        .collect();
                    assert!(types.contains(&"Available"), "{types:?}");
                })
                .reply(&new),
            ]);
            let ctx = Context::for_tests(client);
            let outcome = server.run(reconcile(&ctx)).await.unwrap();
            assert_eq!(outcome, Outcome::Written);
        }

        #[tokio::test]
        async fn a_status_that_says_it_all_is_not_written_again() {
            // The status the first reconcile writes, as the API server would store it.
            let written = std::sync::Arc::new(std::sync::Mutex::new(None));
            let keep = written.clone();
            let new = ClusterOperator::new(AGGREGATED_CLUSTER_OPERATOR, ClusterOperatorSpec {});
            let (client, server) = mock_api::serve([
                Exchange::get(OPERATOR).reply(&new),
                Exchange::get(VERSION).not_found(),
                Exchange::patch(&format!(
                    "{OPERATOR}/status?force=true&fieldManager=platform-operators"
                ))
                .check_body(move |body| *keep.lock().unwrap() = Some(body["status"].clone()))
                .reply(&new),
            ]);
            let ctx = Context::for_tests(client);
            assert_eq!(server.run(reconcile(&ctx)).await.unwrap(), Outcome::Written);
            let mut stored = new.clone();
            stored.status =
                serde_json::from_value(written.lock().unwrap().take().unwrap()).unwrap();
            let (client, server) = mock_api::serve([
                Exchange::get(OPERATOR).reply(&stored),
                Exchange::get(VERSION).not_found(),
            ]);
            let ctx = Context::for_tests(client);
            assert_eq!(
                server.run(reconcile(&ctx)).await.unwrap(),
                Outcome::Unchanged
            );
        }

        #[tokio::test]
        async fn a_create_that_lost_a_race_goes_on_with_the_winners_object() {
            let new = ClusterOperator::new(AGGREGATED_CLUSTER_OPERATOR, ClusterOperatorSpec {});
            let (client, server) = mock_api::serve([
                Exchange::get(OPERATOR).not_found(),
                created().already_exists(),
                Exchange::get(OPERATOR).reply(&new),
                Exchange::get(VERSION).not_found(),
                Exchange::patch(&format!(
                    "{OPERATOR}/status?force=true&fieldManager=platform-operators"
                ))
                .reply(&new),
            ]);
            let ctx = Context::for_tests(client);
            assert_eq!(server.run(reconcile(&ctx)).await.unwrap(), Outcome::Written);
        }

        #[tokio::test]
        async fn without_the_cluster_operator_api_nothing_is_written() {
            // The API server answers 404 for every path of a group it does not serve.
            let (client, server) =
                mock_api::serve([Exchange::get(OPERATOR).not_found(), created().not_found()]);
            let ctx = Context::for_tests(client);
            assert_eq!(
                server.run(reconcile(&ctx)).await.unwrap(),
                Outcome::ApiMissing
            );
        }
    }
}
