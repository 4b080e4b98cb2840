//! One reconcile of a BundleDeployment: read → decide → write → status → next action.
//! The reads and writes are in [`super::install`]; status and the next action are pure.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{Event as Finalizer, finalizer};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Resource, ResourceExt};
use rukpak_api::conditions::{
    TYPE_HAS_VALID_BUNDLE, TYPE_HEALTHY, TYPE_INSTALLED, TYPE_PROGRESSING,
};
use rukpak_api::{Bundle, BundleDeployment, BundleDeploymentStatus, RevisionRecord};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kit::controller::News;
use kit::kube_error::KubeCallError;

use super::install::{Reconcile, Step};
use super::{Context, Error, FINALIZER};
use crate::format::BundleFormat;
use crate::revisions::{Target, seconds_to_deadline};
use crate::status::{Outcome, next_status, with_revisions};

/// How long a new BundleDeployment waits for its Bundle before its status says so.
const QUIET_START: Duration = Duration::from_secs(10);

/// How often an apply waiting for probes looks again if no watch event came first.
const PROBE_RECHECK: Duration = Duration::from_secs(15);

/// How often a revision awaiting approval whose review the API server refused in part is
/// reviewed again. Refusals depend on the cluster (a CRD that holds a stored version, a
/// missing namespace), which may change without any event reaching this BundleDeployment;
/// a review without refusals stays until the resync, as content under a digest does not
/// change.
const REFUSED_REVIEW_RECHECK: Duration = Duration::from_secs(30);

pub(super) fn error_policy<F: BundleFormat>(
    deployment: Arc<BundleDeployment>,
    error: &Error,
    ctx: Arc<Context<F>>,
) -> Action {
    kit::controller::retry_after(
        &ctx.backoff,
        "BundleDeployment",
        &deployment.name_any(),
        error,
    )
}

/// Reconciles one BundleDeployment of a class this provisioner serves: installs it, or
/// cleans up behind the finalizer when it is being deleted.
pub(super) async fn reconcile<F: BundleFormat>(
    deployment: Arc<BundleDeployment>,
    ctx: Arc<Context<F>>,
) -> Result<Action, Error> {
    // What is read from watches must have been listed once: before that, a missing Bundle
    // or class would only mean "not seen yet".
    for ready in [
        kit::watch::until_listed(&ctx.classes).await,
        kit::watch::until_listed(&ctx.bundles).await,
    ] {
        if ready.is_err() {
            return Ok(Action::requeue(Duration::from_secs(1)));
        }
    }
    // Only BundleDeployments whose class this provisioner serves; the others are not
    // reconciles of this controller, and not counted as such.
    let class = ctx
        .classes
        .get(&ObjectRef::new(&deployment.spec.provisioner_class_name));
    let Some(class) = class.filter(|c| c.spec.provisioner == ctx.format.provisioner_id()) else {
        return Ok(Action::await_change());
    };
    let parameters = class.spec.parameters.as_ref();
    kit::controller::timed(&ctx.metrics, "bundledeployment", async {
        let api: Api<BundleDeployment> = Api::all(ctx.client.clone());
        let name = deployment.name_any();
        // The finalizer is added here and the work goes on in the same reconcile; kube's
        // `finalizer` would add it and wait for the watch event of that write.
        let deployment = with_finalizer(&api, deployment).await.map_err(|source| {
            KubeCallError::new(
                "add the finalizer to",
                format!("BundleDeployment {name}"),
                source,
            )
        })?;
        let result = finalizer(&api, FINALIZER, deployment, |event| async {
            match event {
                Finalizer::Apply(deployment) => install(&deployment, &ctx, parameters).await,
                Finalizer::Cleanup(deployment) => super::cleanup::cleanup(&deployment, &ctx).await,
            }
        })
        .await;
        match result {
            // The object went away between the cleanup and the finalizer's removal (another
            // finalizer was last, or the cleanup of a stale request): the work is done.
            Err(kube::runtime::finalizer::Error::RemoveFinalizer(kube::Error::Api(status)))
                if status.code == 404 =>
            {
                Ok(Action::await_change())
            }
            // Each step resets the backoff itself, after a success: an apply failure is an
            // Ok outcome (reported in status) that must keep backing off.
            Ok(action) => Ok(action),
            Err(err) => Err(Error::Finalizer(name, Box::new(err))),
        }
    })
    .await
}

/// Read → decide → write ([`Reconcile::run`]), then status and the next action, both
/// worked out by pure functions from what that step returned.
async fn install<F: BundleFormat>(
    deployment: &BundleDeployment,
    ctx: &Context<F>,
    class_parameters: Option<&serde_json::Value>,
) -> Result<Action, Error> {
    let name = deployment.name_any();
    let current = deployment.status.clone().unwrap_or_default();
    let step = if deployment.spec.paused == Some(true) {
        Step::only(Outcome::Paused)
    } else {
        Reconcile {
            ctx,
            deployment,
            class_parameters,
            current: &current,
        }
        .run()
        .await?
    };
    // A new BundleDeployment whose Bundle rukpak-core has not created or unpacked yet gets no
    // status for its first moments: the Bundle's watch event usually comes within them, and
    // each status write is a request and an Event. Past that, the wait is news.
    if let Some(wait) = quiet_start_left(deployment, &step.outcome, SystemTime::now()) {
        return Ok(Action::requeue(wait));
    }
    let now = kit::conditions::now();
    let (next, rolls_back_next) = status_after(deployment, &current, &step, &now);
    // What the server holds now: the status last written while the apply ran, if any.
    let held = step.in_flight.as_ref().unwrap_or(&current);
    if next != *held {
        announce(deployment, ctx, &current, &next).await;
        kit::status::apply(
            &Api::<BundleDeployment>::all(ctx.client.clone()),
            &name,
            &ctx.field_manager,
            &next,
        )
        .await
        .map_err(|source| {
            KubeCallError::new(
                "update the status of",
                format!("BundleDeployment {name}"),
                source,
            )
        })?;
    }
    mark_bundles(
        &ctx.client,
        &ctx.field_manager,
        &step.bundles,
        &next.revisions,
    )
    .await;
    if !matches!(step.outcome, Outcome::ApplyFailed { .. }) {
        ctx.backoff.reset(&name);
    }
    let next_action = next_action(
        deployment,
        &step,
        &next.revisions,
        rolls_back_next,
        &now,
        ctx.settings.resync,
    );
    Ok(match next_action {
        Next::AwaitChange => Action::await_change(),
        Next::After(wait) => Action::requeue(wait),
        Next::Backoff { deadline } => {
            let delay = ctx.backoff.next_delay(&name);
            Action::requeue(deadline.map_or(delay, |d| d.min(delay)))
        }
    })
}

/// The status after `step`, and whether the next reconcile rolls back: a failed revision
/// with `rollbackOnFailure` applies the last healthy one next (the next step of this
/// one, not a retry). Pure.
fn status_after(
    deployment: &BundleDeployment,
    current: &BundleDeploymentStatus,
    step: &Step,
    now: &Time,
) -> (BundleDeploymentStatus, bool) {
    let generation = deployment.meta().generation;
    let mut next = next_status(current, &step.outcome, generation, now);
    let Some(revision) = &step.revision else {
        return (next, false);
    };
    let failure = with_revisions(
        &mut next,
        current,
        revision,
        &deployment.spec,
        generation,
        now,
    );
    let rolls_back_next = failure.is_some()
        && deployment.spec.rollback_on_failure == Some(true)
        && matches!(revision.target, Target::Current { .. })
        && crate::revisions::last_known_good(
            &next,
            &step.bundles,
            revision.target.applies().unwrap_or_default(),
        )
        .is_some();
    (next, rolls_back_next)
}

/// When a reconcile looks again, before the backoff is consulted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// Only a change (of the BundleDeployment, its Bundle, its objects) brings it back.
    AwaitChange,
    /// After this long.
    After(Duration),
    /// After the next backoff delay (the step failed), or the rollout's deadline if that
    /// comes first.
    Backoff { deadline: Option<Duration> },
}

/// What follows `step` (whose status kept `records`): a rollback at once, a look when a
/// rollout's deadline passes, a backoff after a failure, a probe recheck while waiting,
/// else the resync. Pure.
fn next_action(
    deployment: &BundleDeployment,
    step: &Step,
    records: &[RevisionRecord],
    rolls_back_next: bool,
    now: &Time,
    resync: Duration,
) -> Next {
    if rolls_back_next {
        return Next::After(Duration::from_secs(1));
    }
    // A rollout with a deadline is looked at again when the deadline passes.
    let deadline = step
        .revision
        .as_ref()
        .and_then(|r| r.applied.as_ref())
        .and_then(|applied| {
            seconds_to_deadline(
                records,
                &applied.bundle,
                deployment.spec.progress_deadline_seconds,
                now,
            )
        })
        .map(Duration::from_secs);
    let soonest = |wait: Duration| Next::After(deadline.map_or(wait, |d| d.min(wait)));
    match step.outcome {
        Outcome::Paused => Next::AwaitChange,
        // Unpacking progress arrives through the Bundle watch.
        Outcome::BundleMissing { .. } | Outcome::BundleNotUnpacked { .. } => Next::After(resync),
        Outcome::LoadFailed { .. } | Outcome::InvalidHealthChecks { .. } => Next::AwaitChange,
        Outcome::ApplyFailed { .. } | Outcome::Waiting { failed: true, .. } => {
            Next::Backoff { deadline }
        }
        // Status changes of the objects waited for arrive through the drift watches; the
        // requeue is a fallback.
        Outcome::Waiting { failed: false, .. } => soonest(PROBE_RECHECK.min(resync)),
        Outcome::AwaitingApproval { .. } => {
            let refused = step
                .revision
                .as_ref()
                .and_then(|r| r.pending.as_ref())
                .is_some_and(|pending| !pending.refused.is_empty());
            if refused {
                Next::After(REFUSED_REVIEW_RECHECK.min(resync))
            } else {
                Next::After(resync)
            }
        }
        // Only written while an apply runs; a reconcile never ends on it.
        Outcome::Applying { .. } => Next::After(resync),
        Outcome::Installed { .. } => {
            soonest(step.recheck_after.map_or(resync, |soon| soon.min(resync)))
        }
    }
}

/// How much of [`QUIET_START`] is left for `deployment`, if it has no status yet and
/// `outcome` only says its Bundle is missing or still unpacking (not failing). Pure.
fn quiet_start_left(
    deployment: &BundleDeployment,
    outcome: &Outcome,
    now: SystemTime,
) -> Option<Duration> {
    if deployment.status.is_some() {
        return None;
    }
    if !matches!(
        outcome,
        Outcome::BundleMissing { .. } | Outcome::BundleNotUnpacked { failed: false, .. }
    ) {
        return None;
    }
    let created = SystemTime::from(deployment.meta().creation_timestamp.as_ref()?.0);
    let age = now.duration_since(created).unwrap_or_default();
    QUIET_START.checked_sub(age).filter(|left| !left.is_zero())
}

/// Shows each revision's outcome on its Bundle (`status.revisionOutcome`, for `kubectl get
/// bundles`), writing only the ones that changed. Best effort: the BundleDeployment's
/// status is the record; a failed write is logged and tried again next reconcile.
async fn mark_bundles(
    client: &kube::Client,
    field_manager: &str,
    bundles: &[Bundle],
    records: &[RevisionRecord],
) {
    let api: Api<Bundle> = Api::all(client.clone());
    for bundle in bundles {
        let name = bundle.name_any();
        let Some(record) = crate::revisions::find(records, &name) else {
            continue;
        };
        let shown = bundle.status.as_ref().and_then(|s| s.revision_outcome);
        if shown == Some(record.outcome) {
            continue;
        }
        let patch = serde_json::json!({
            "apiVersion": "core.rukpak.io/v1alpha1",
            "kind": "Bundle",
            "status": { "revisionOutcome": record.outcome.as_str() },
        });
        let params = kube::api::PatchParams::apply(&format!("{field_manager}-revisions"));
        if let Err(err) = api
            .patch_status(&name, &params, &kube::api::Patch::Apply(&patch))
            .await
        {
            tracing::debug!(bundle = %name, error = %kit::error_chain(&err), "failed to show the revision outcome on the Bundle");
        }
    }
}

/// Publishes the Events of a status change (see [`told`]).
async fn announce<F: BundleFormat>(
    deployment: &BundleDeployment,
    ctx: &Context<F>,
    before: &BundleDeploymentStatus,
    after: &BundleDeploymentStatus,
) {
    let regarding = deployment.object_ref(&());
    for event in told(&before.conditions, &after.conditions) {
        kit::events::publish(
            &ctx.recorder,
            &regarding,
            event.warning,
            &event.reason,
            kit::controller::ANNOUNCE_ACTION,
            event.note,
        )
        .await;
    }
}

/// One Event of a status change, as [`told`] decides it.
#[derive(Debug, PartialEq, Eq)]
struct Told {
    warning: bool,
    reason: String,
    note: String,
}

/// The Events of a status change: one per condition that is news (see [`news`]), as
/// [`kit::controller::announce`] tells them; except that `Healthy` turning True in the
/// same reconcile as `Installed` is told in `Installed`'s Event, both notes in one.
/// A revision with nothing to wait for (no workload to roll out) is installed and healthy
/// at once, and the two Events were 2 of the 18 API requests such an install sends
/// (`hack/bench-provisioner`). `Healthy` on its own (after a rollout) keeps its Event.
/// Pure.
fn told(before: &[Condition], after: &[Condition]) -> Vec<Told> {
    let changed = kit::controller::changed_conditions(before, after, news);
    let turned_true = |type_: &str| {
        changed
            .iter()
            .find(|(c, _)| c.type_ == type_ && c.status == kit::conditions::status::TRUE)
            .map(|(c, _)| *c)
    };
    let healthy_with_installed = turned_true(TYPE_INSTALLED).and(turned_true(TYPE_HEALTHY));
    changed
        .into_iter()
        .filter(|(c, _)| healthy_with_installed.is_none_or(|h| !std::ptr::eq(*c, h)))
        .map(|(c, news)| {
            let mut note = kit::controller::event_note(c);
            if let Some(healthy) = healthy_with_installed
                && c.type_ == TYPE_INSTALLED
            {
                // One sentence after the other, whether or not the first ends with a stop.
                note.truncate(note.trim_end().len());
                note.push_str(if note.ends_with('.') { " " } else { ". " });
                note.push_str(&kit::controller::event_note(healthy));
            }
            Told {
                warning: news == News::Warning,
                reason: c.reason.clone(),
                note,
            }
        })
        .collect()
}

/// What a changed BundleDeployment condition means to the people reading its Events.
/// `Progressing` is a running commentary on the others (and False is good news for it);
/// a valid bundle is only news when it was not: `HasValidBundle` turning True goes
/// without an Event (`Installed` tells the story), its turning False does not. Pure.
fn news(condition: &Condition) -> News {
    match condition.type_.as_str() {
        TYPE_PROGRESSING => News::Quiet,
        TYPE_HAS_VALID_BUNDLE if condition.status == kit::conditions::status::TRUE => News::Quiet,
        _ => News::warning_when_false(condition),
    }
}

/// The BundleDeployment with [`FINALIZER`]: as it is when it has it or is being deleted,
/// else after adding it (a merge patch on the resourceVersion read, so that finalizers
/// another controller changed meanwhile are never overwritten: the patch then conflicts
/// and the reconcile is retried).
async fn with_finalizer(
    api: &Api<BundleDeployment>,
    deployment: Arc<BundleDeployment>,
) -> Result<Arc<BundleDeployment>, kube::Error> {
    let finalizers = deployment.finalizers();
    if deployment.meta().deletion_timestamp.is_some() || finalizers.iter().any(|f| f == FINALIZER) {
        return Ok(deployment);
    }
    let mut with = finalizers.to_vec();
    with.push(FINALIZER.to_owned());
    let patch = serde_json::json!({
        "metadata": {
            "resourceVersion": deployment.resource_version(),
            "finalizers": with,
        }
    });
    let patched = api
        .patch(
            &deployment.name_any(),
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await?;
    Ok(Arc::new(patched))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::revisions::{AppliedRevision, Progress};
    use crate::status::RevisionStep;
    use rukpak_api::RevisionOutcome;

    const RESYNC: Duration = Duration::from_secs(600);

    fn at(second: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(second).unwrap())
    }

    fn deployment(deadline: Option<i32>) -> BundleDeployment {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "core.rukpak.io/v1alpha1", "kind": "BundleDeployment",
            "metadata": {"name": "bd"},
            "spec": {"provisionerClassName": "p", "progressDeadlineSeconds": deadline,
                "template": {"spec": {"provisionerClassName": "p",
                    "source": {"type": "image", "image": {"ref": "r"}}}}},
        }))
        .unwrap()
    }

    fn installed() -> Outcome {
        Outcome::Installed {
            bundle: "bd-1".into(),
            inventory: Vec::new(),
            healthy: true,
            health_message: String::new(),
            warnings: Vec::new(),
            kept: Vec::new(),
            skipped: Vec::new(),
            adjustments: Vec::new(),
        }
    }

    /// A step that applied revision 1 (`bd-1`), with `outcome`.
    fn applied(outcome: Outcome, recheck_after: Option<Duration>) -> Step {
        Step {
            outcome,
            revision: Some(RevisionStep {
                target: Target::Current {
                    bundle: "bd-1".into(),
                },
                applied: Some(AppliedRevision::new("bd-1", 1, "sha256:a")),
                progress: Progress::Progressing,
                pending: None,
            }),
            recheck_after,
            ..Step::only(Outcome::Paused)
        }
    }

    /// The record of `bd-1`, a rollout started at second 100.
    fn rolling_out() -> Vec<RevisionRecord> {
        vec![RevisionRecord {
            revision: 1,
            bundle: "bd-1".into(),
            digest: "sha256:a".into(),
            outcome: RevisionOutcome::Progressing,
            started: Some(at(100)),
            last_healthy: None,
            message: None,
        }]
    }

    #[test]
    fn the_next_look_is_the_soonest_of_resync_certificates_and_the_rollout_deadline() {
        let steady = deployment(None);
        // Installed and nothing due: the resync.
        let step = applied(installed(), None);
        assert_eq!(
            next_action(&steady, &step, &[], false, &at(130), RESYNC),
            Next::After(RESYNC)
        );
        // A certificate rotation step due in an hour comes first.
        let step = applied(installed(), Some(Duration::from_secs(3600)));
        assert_eq!(
            next_action(
                &steady,
                &step,
                &[],
                false,
                &at(130),
                Duration::from_secs(7200)
            ),
            Next::After(Duration::from_secs(3600))
        );
        // A rollout started at 100 with a 60 s deadline is looked at when it passes (161).
        let with_deadline = deployment(Some(60));
        let step = applied(installed(), None);
        assert_eq!(
            next_action(
                &with_deadline,
                &step,
                &rolling_out(),
                false,
                &at(130),
                RESYNC
            ),
            Next::After(Duration::from_secs(31))
        );
        // Waiting for probes: the probe recheck, or the deadline if sooner.
        let waiting = Outcome::Waiting {
            bundle: "bd-1".into(),
            message: "phase 2 waits".into(),
            failed: false,
            inventory: Vec::new(),
            skipped: Vec::new(),
            adjustments: Vec::new(),
        };
        let step = applied(waiting, None);
        assert_eq!(
            next_action(&steady, &step, &[], false, &at(130), RESYNC),
            Next::After(PROBE_RECHECK)
        );
        assert_eq!(
            next_action(
                &with_deadline,
                &step,
                &rolling_out(),
                false,
                &at(155),
                RESYNC
            ),
            Next::After(Duration::from_secs(6))
        );
    }

    #[test]
    fn a_review_the_api_server_refused_is_done_again_soon_and_a_clean_one_waits() {
        let steady = deployment(None);
        let awaiting = Outcome::AwaitingApproval {
            bundle: "bd-2".into(),
            digest: "sha256:b".into(),
        };
        let with_review = |refused: Vec<String>| {
            let mut step = applied(awaiting.clone(), None);
            if let Some(revision) = step.revision.as_mut() {
                revision.pending = Some(rukpak_api::PendingRevision {
                    bundle: "bd-2".into(),
                    digest: "sha256:b".into(),
                    refused,
                    ..rukpak_api::PendingRevision::default()
                });
            }
            step
        };
        assert_eq!(
            next_action(
                &steady,
                &with_review(Vec::new()),
                &[],
                false,
                &at(130),
                RESYNC
            ),
            Next::After(RESYNC)
        );
        let refused = with_review(vec!["unsafe CRD upgrade".into()]);
        assert_eq!(
            next_action(&steady, &refused, &[], false, &at(130), RESYNC),
            Next::After(REFUSED_REVIEW_RECHECK)
        );
    }

    #[test]
    fn failures_back_off_and_a_rollback_goes_next() {
        let with_deadline = deployment(Some(60));
        let failed = Outcome::ApplyFailed {
            bundle: "bd-1".into(),
            message: "forbidden".into(),
        };
        let step = applied(failed, None);
        assert_eq!(
            next_action(
                &with_deadline,
                &step,
                &rolling_out(),
                false,
                &at(130),
                RESYNC
            ),
            Next::Backoff {
                deadline: Some(Duration::from_secs(31))
            }
        );
        assert_eq!(
            next_action(
                &with_deadline,
                &step,
                &rolling_out(),
                true,
                &at(130),
                RESYNC
            ),
            Next::After(Duration::from_secs(1))
        );
        // What only the author can fix waits for their change.
        let refused = Step::only(Outcome::InvalidHealthChecks {
            message: "no such field".into(),
        });
        assert_eq!(
            next_action(&with_deadline, &refused, &[], false, &at(130), RESYNC),
            Next::AwaitChange
        );
    }

    /// The requests a reconcile sends, checked against a mocked API server.
    mod writes {
        use super::*;
        use testkit::mock_api::{self, Exchange};

        const DEPLOYMENTS: &str = "/apis/core.rukpak.io/v1alpha1/bundledeployments";

        #[tokio::test]
        async fn the_finalizer_is_added_once_guarded_by_the_resource_version() {
            let mut read = deployment(None);
            read.metadata.resource_version = Some("41".into());
            read.metadata.finalizers = Some(vec!["example.com/other".into()]);
            let mut patched = read.clone();
            patched.metadata.finalizers = Some(vec!["example.com/other".into(), FINALIZER.into()]);
            let (client, server) = mock_api::serve([Exchange::patch(&format!("{DEPLOYMENTS}/bd"))
                .body_includes(serde_json::json!({"metadata": {
                    "resourceVersion": "41",
                    "finalizers": ["example.com/other", FINALIZER],
                }}))
                .reply(&patched)]);
            let api = Api::<BundleDeployment>::all(client);
            let with = server
                .run(with_finalizer(&api, Arc::new(read)))
                .await
                .unwrap();
            assert!(with.finalizers().iter().any(|f| f == FINALIZER));
            // Already there, or being deleted: nothing is sent.
            let (client, server) = mock_api::serve([]);
            let api = Api::<BundleDeployment>::all(client);
            server.run(with_finalizer(&api, with)).await.unwrap();
            let mut deleting = deployment(None);
            deleting.metadata.deletion_timestamp = Some(
                k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(at(5).0),
            );
            let (client, server) = mock_api::serve([]);
            let api = Api::<BundleDeployment>::all(client);
            server
                .run(with_finalizer(&api, Arc::new(deleting)))
                .await
                .unwrap();
        }

        #[tokio::test]
        async fn a_finalizer_patch_that_conflicts_fails_the_reconcile() {
            let (client, server) =
                mock_api::serve([Exchange::patch(&format!("{DEPLOYMENTS}/bd")).conflict()]);
            let api = Api::<BundleDeployment>::all(client);
            let result = server
                .run(with_finalizer(&api, Arc::new(deployment(None))))
                .await;
            assert!(result.is_err());
        }

        fn bundle(name: &str, shown: Option<&str>) -> Bundle {
            let mut value = serde_json::json!({
                "apiVersion": "core.rukpak.io/v1alpha1", "kind": "Bundle",
                "metadata": {"name": name},
                "spec": {"provisionerClassName": "p",
                    "source": {"type": "image", "image": {"ref": "r"}}},
            });
            if let Some(shown) = shown {
                value["status"] = serde_json::json!({"revisionOutcome": shown});
            }
            serde_json::from_value(value).unwrap()
        }

        #[tokio::test]
        async fn only_bundles_whose_revision_outcome_changed_are_marked() {
            let mut records = rolling_out();
            records[0].outcome = RevisionOutcome::Healthy;
            records.push(RevisionRecord {
                revision: 2,
                bundle: "bd-2".into(),
                outcome: RevisionOutcome::Progressing,
                ..records[0].clone()
            });
            let bundles = [
                bundle("bd-1", Some("Healthy")),
                bundle("bd-2", Some("Healthy")),
                bundle("bd-0", None),
            ];
            // bd-1 shows its outcome already, bd-0 has no record: only bd-2 is written.
            let (client, server) = mock_api::serve([Exchange::patch(
                "/apis/core.rukpak.io/v1alpha1/bundles/bd-2/status?fieldManager=plain-provisioner-revisions",
            )
            .body_includes(serde_json::json!({"status": {"revisionOutcome": "Progressing"}}))
            .reply_echo()]);
            server
                .run(mark_bundles(
                    &client,
                    "plain-provisioner",
                    &bundles,
                    &records,
                ))
                .await;
        }
    }

    #[test]
    fn progress_and_a_valid_bundle_are_not_news_but_its_loss_is() {
        let condition = |type_, status| condition(type_, status, "R", "");
        assert_eq!(news(&condition(TYPE_PROGRESSING, "True")), News::Quiet);
        assert_eq!(news(&condition(TYPE_HAS_VALID_BUNDLE, "True")), News::Quiet);
        assert_eq!(
            news(&condition(TYPE_HAS_VALID_BUNDLE, "False")),
            News::Warning
        );
        assert_eq!(news(&condition(TYPE_INSTALLED, "True")), News::Normal);
    }

    /// A condition as the controller sets it.
    fn condition(
        type_: &'static str,
        status: &'static str,
        reason: &str,
        message: &str,
    ) -> Condition {
        let mut conditions = Vec::new();
        let desired = kit::conditions::Desired::new(type_, status, reason, message);
        kit::conditions::set_all(&mut conditions, [desired], None, &at(0));
        conditions.remove(0)
    }

    #[test]
    fn installed_and_healthy_at_once_are_one_event_with_both_messages() {
        let after = [
            condition(
                TYPE_HAS_VALID_BUNDLE,
                "True",
                "UnpackSuccessful",
                "Unpacked.",
            ),
            condition(
                TYPE_INSTALLED,
                "True",
                "InstallationSucceeded",
                "Installed bd-1.",
            ),
            condition(TYPE_HEALTHY, "True", "Healthy", "All 4 objects are healthy"),
            condition(TYPE_PROGRESSING, "False", "Succeeded", "Done."),
        ];
        assert_eq!(
            told(&[], &after),
            vec![Told {
                warning: false,
                reason: "InstallationSucceeded".into(),
                note: "Installed: Installed bd-1. Healthy: All 4 objects are healthy".into(),
            }]
        );
    }

    #[test]
    fn healthy_on_its_own_and_every_warning_keep_their_own_events() {
        let installed = condition(
            TYPE_INSTALLED,
            "True",
            "InstallationSucceeded",
            "Installed bd-1",
        );
        let waiting = condition(
            TYPE_HEALTHY,
            "False",
            "Progressing",
            "Waiting for the Deployment.",
        );
        // Installed now, healthy later: two reconciles, an Event each.
        assert_eq!(
            told(&[], &[installed.clone(), waiting.clone()]),
            vec![
                Told {
                    warning: false,
                    reason: "InstallationSucceeded".into(),
                    note: "Installed: Installed bd-1".into(),
                },
                Told {
                    warning: true,
                    reason: "Progressing".into(),
                    note: "Healthy: Waiting for the Deployment.".into(),
                },
            ]
        );
        let healthy = condition(TYPE_HEALTHY, "True", "Healthy", "All objects are healthy.");
        assert_eq!(
            told(
                &[installed.clone(), waiting],
                &[installed.clone(), healthy.clone()]
            ),
            vec![Told {
                warning: false,
                reason: "Healthy".into(),
                note: "Healthy: All objects are healthy.".into(),
            }]
        );
        // Installed failing while the old revision stays healthy: the warning is its own.
        let failed = condition(
            TYPE_INSTALLED,
            "False",
            "InstallFailed",
            "The Service was refused.",
        );
        assert_eq!(
            told(&[installed, healthy.clone()], &[failed, healthy]),
            vec![Told {
                warning: true,
                reason: "InstallFailed".into(),
                note: "Installed: The Service was refused.".into(),
            }]
        );
    }
}
