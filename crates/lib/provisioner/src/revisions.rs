//! Revisions: which Bundle a reconcile applies, and what became of each (pure).
//!
//! Each Bundle of a BundleDeployment is a revision (rukpak-core numbers them and keeps a
//! bounded history; see `rukpak_core::deployment_bundles`). Normally the engine applies
//! the Bundle of the current template. Two switches change that:
//!
//! - `spec.upgradeApproval: Manual`: a revision whose content differs from what runs is
//!   only reviewed until `spec.approvedRevision` names its digest; meanwhile the running
//!   revision is kept in place (drift still corrected);
//! - `spec.rollbackOnFailure`: once the current revision has failed (refused, a probe
//!   reported failure, or it missed `spec.progressDeadlineSeconds`), the last revision that
//!   was healthy is applied again from its stored content, and the failed one is not tried
//!   again until the template changes.
//!
//! `status.revisions` records each revision's outcome; its `lastHealthy` marks the ones a
//! rollback may return to.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use rukpak_api::conditions::{TYPE_UNPACKED, reasons::UNPACK_SUCCESSFUL};
use rukpak_api::labels::REVISION;
use rukpak_api::{
    Bundle, BundleDeploymentSpec, BundleDeploymentStatus, BundlePhase, RevisionOutcome,
    RevisionRecord, UpgradeApproval,
};

/// How many revisions `status.revisions` remembers.
pub const MAX_RECORDS: usize = 10;

/// Which Bundle to apply this reconcile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The Bundle of the current template.
    Current {
        /// Its name.
        bundle: String,
    },
    /// The current revision failed; the last healthy one is applied instead.
    RollBack {
        /// The failed revision's Bundle.
        failed: String,
        /// The Bundle applied instead.
        to: String,
    },
    /// The current revision waits for approval; what runs now (if anything) is kept.
    AwaitApproval {
        /// The Bundle waiting.
        pending: String,
        /// Its content digest: what `spec.approvedRevision` must say.
        digest: String,
        /// The Bundle that runs now, re-applied meanwhile (drift correction).
        running: Option<String>,
    },
}

impl Target {
    /// The Bundle whose objects this reconcile applies, if any.
    pub fn applies(&self) -> Option<&str> {
        match self {
            Target::Current { bundle } => Some(bundle),
            Target::RollBack { to, .. } => Some(to),
            Target::AwaitApproval { running, .. } => running.as_deref(),
        }
    }
}

/// The revision number of a Bundle (its `core.rukpak.io/revision` label), 0 when it has none
/// (a Bundle made before revisions were numbered).
pub fn revision_of(bundle: &Bundle) -> i64 {
    bundle
        .labels()
        .get(REVISION)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

/// The content digest of an unpacked Bundle.
pub fn digest_of(bundle: &Bundle) -> Option<&str> {
    let status = bundle.status.as_ref()?;
    let unpacked = status.phase == Some(BundlePhase::Unpacked)
        || kit::conditions::find(&status.conditions, TYPE_UNPACKED)
            .is_some_and(|c| c.reason == UNPACK_SUCCESSFUL);
    unpacked
        .then(|| status.content.as_ref().map(|c| c.digest.as_str()))
        .flatten()
}

/// Decides which Bundle to apply, given the unpacked Bundle of the current template
/// (`current`) and every Bundle of the BundleDeployment.
pub fn choose(
    spec: &BundleDeploymentSpec,
    status: &BundleDeploymentStatus,
    current: &Bundle,
    bundles: &[Bundle],
) -> Target {
    let current_name = current.name_any();
    let record = find(&status.revisions, &current_name);
    if spec.rollback_on_failure == Some(true)
        && record.is_some_and(|r| r.outcome == RevisionOutcome::Failed)
        && let Some(to) = last_known_good(status, bundles, &current_name)
    {
        return Target::RollBack {
            failed: current_name,
            to,
        };
    }
    if spec.upgrade_approval == UpgradeApproval::Manual {
        let digest = digest_of(current).unwrap_or_default().to_owned();
        let running = status
            .active_bundle
            .as_deref()
            .and_then(|active| bundles.iter().find(|b| b.name_any() == active));
        let running_digest = running.and_then(digest_of);
        let differs = running_digest != Some(digest.as_str());
        if differs && spec.approved_revision.as_deref() != Some(digest.as_str()) {
            return Target::AwaitApproval {
                pending: current_name,
                digest,
                running: running.map(|b| b.name_any()),
            };
        }
    }
    Target::Current {
        bundle: current_name,
    }
}

/// The newest revision other than `except` that was healthy once and whose Bundle is still
/// there, unpacked.
pub fn last_known_good(
    status: &BundleDeploymentStatus,
    bundles: &[Bundle],
    except: &str,
) -> Option<String> {
    status
        .revisions
        .iter()
        .rev()
        .filter(|r| r.bundle != except && r.last_healthy.is_some())
        .find(|r| {
            bundles
                .iter()
                .any(|b| b.name_any() == r.bundle && digest_of(b).is_some())
        })
        .map(|r| r.bundle.clone())
}

/// The record of `bundle`.
pub fn find<'a>(records: &'a [RevisionRecord], bundle: &str) -> Option<&'a RevisionRecord> {
    records.iter().find(|r| r.bundle == bundle)
}

/// The revision a reconcile applied: its Bundle, revision number and content digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedRevision {
    /// The Bundle's name.
    pub bundle: String,
    /// Its revision number (see [`revision_of`]).
    pub revision: i64,
    /// Its content digest (see [`digest_of`]).
    pub digest: String,
}

impl AppliedRevision {
    /// The revision `revision` of `bundle`, with content `digest`.
    pub fn new(bundle: &str, revision: i64, digest: &str) -> Self {
        Self {
            bundle: bundle.to_owned(),
            revision,
            digest: digest.to_owned(),
        }
    }

    /// The revision the unpacked Bundle `bundle` is.
    pub fn of(bundle: &Bundle) -> Self {
        Self::new(
            &bundle.name_any(),
            revision_of(bundle),
            digest_of(bundle).unwrap_or_default(),
        )
    }
}

/// What one reconcile learned about the revision it applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// Written, or waiting for probes; nothing failed.
    Progressing,
    /// Every object applied and healthy.
    Healthy,
    /// Every object applied; some report a failure or are not ready.
    NotHealthy {
        /// Whether an object reports a failure (rather than not being ready yet).
        failing: bool,
        /// Which objects and why.
        message: String,
    },
    /// Failed for good: refused by the API server, or a probe between phases failed.
    Failed(String),
    /// Failed, and worth retrying (an API server error).
    Retrying,
}

impl Progress {
    /// What a health verdict on every applied object means for the revision.
    pub fn of_health(health: &health::Health) -> Self {
        match health {
            health::Health::Healthy => Self::Healthy,
            health::Health::Progressing(message) => Self::NotHealthy {
                failing: false,
                message: message.clone(),
            },
            health::Health::Unhealthy(message) => Self::NotHealthy {
                failing: true,
                message: message.clone(),
            },
        }
    }
}

/// The records after a reconcile applied `applied` and saw `progress`; `previous_active`
/// is the Bundle that ran before. Returns the failure message when the revision failed in
/// this step (refused, probe failed, deadline passed). Identical input gives identical
/// records: nothing is rewritten on an unchanged resync.
pub fn record(
    records: &mut Vec<RevisionRecord>,
    applied: &AppliedRevision,
    progress: &Progress,
    becomes_active: bool,
    previous_active: Option<&str>,
    deadline_seconds: Option<i32>,
    now: &Time,
) -> Option<String> {
    let AppliedRevision {
        bundle,
        revision,
        digest,
    } = applied;
    let bundle = bundle.as_str();
    let position = match records.iter().position(|r| r.bundle == bundle) {
        Some(position) => position,
        None => {
            records.push(RevisionRecord {
                revision: *revision,
                bundle: bundle.to_owned(),
                digest: digest.clone(),
                outcome: RevisionOutcome::Progressing,
                started: Some(now.clone()),
                last_healthy: None,
                message: None,
            });
            records.len() - 1
        }
    };
    // Applied again after being superseded (a rollback, or a template changed back): a new
    // rollout, with a new deadline; it moves to the end, as the newest.
    if records[position].outcome == RevisionOutcome::Superseded {
        let mut again = records.remove(position);
        again.outcome = RevisionOutcome::Progressing;
        again.started = Some(now.clone());
        again.message = None;
        records.push(again);
    }
    // Always there: pushed above when missing. Nothing failed if it were not.
    let entry = records.iter_mut().rev().find(|r| r.bundle == bundle)?;
    let was_healthy = entry.last_healthy.is_some();
    let past_deadline = deadline_seconds.is_some_and(|limit| {
        entry
            .started
            .as_ref()
            .is_some_and(|started| now.0.as_second() - started.0.as_second() > i64::from(limit))
    });
    let mut failure = None;
    match progress {
        Progress::Healthy => {
            entry.outcome = RevisionOutcome::Healthy;
            entry.message = None;
            if entry.last_healthy.is_none() {
                entry.last_healthy = Some(now.clone());
            }
        }
        Progress::Failed(message) => {
            if entry.outcome != RevisionOutcome::Failed || entry.message.as_ref() != Some(message) {
                entry.outcome = RevisionOutcome::Failed;
                entry.message = Some(message.clone());
            }
            failure = Some(message.clone());
        }
        // Once healthy, a revision that degrades is unhealthy, not failed: it did roll out.
        Progress::NotHealthy { .. } if was_healthy => {
            entry.outcome = RevisionOutcome::Unhealthy;
        }
        Progress::NotHealthy {
            failing: true,
            message,
        } => {
            entry.outcome = RevisionOutcome::Failed;
            entry.message = Some(format!("an object reports a failure: {message}"));
            failure = entry.message.clone();
        }
        Progress::NotHealthy { message, .. } if past_deadline => {
            entry.outcome = RevisionOutcome::Failed;
            entry.message = Some(deadline_message(deadline_seconds, message));
            failure = entry.message.clone();
        }
        Progress::Progressing | Progress::Retrying if past_deadline => {
            if entry.outcome != RevisionOutcome::Failed {
                entry.outcome = RevisionOutcome::Failed;
                entry.message = Some(deadline_message(
                    deadline_seconds,
                    "it is still being applied",
                ));
            }
            failure = entry.message.clone();
        }
        // Still under way: a revision that failed stays failed (and says why) until it
        // becomes healthy.
        Progress::NotHealthy { .. } | Progress::Progressing | Progress::Retrying => {
            if entry.outcome == RevisionOutcome::Failed {
                failure = entry.message.clone();
            } else {
                entry.outcome = RevisionOutcome::Progressing;
            }
        }
    }
    if becomes_active
        && let Some(previous) = previous_active.filter(|p| *p != bundle)
        && let Some(old) = records.iter_mut().find(|r| r.bundle == previous)
        && old.outcome != RevisionOutcome::Failed
    {
        old.outcome = RevisionOutcome::Superseded;
    }
    let excess = records.len().saturating_sub(MAX_RECORDS);
    records.drain(..excess);
    failure
}

/// Whether a failure message is the progress deadline's.
pub fn is_deadline_failure(message: &str) -> bool {
    message.starts_with(DEADLINE_PREFIX)
}

const DEADLINE_PREFIX: &str = "did not become ready within spec.progressDeadlineSeconds";

fn deadline_message(deadline_seconds: Option<i32>, what: &str) -> String {
    format!(
        "{DEADLINE_PREFIX} ({}s): {what}",
        deadline_seconds.unwrap_or_default()
    )
}

/// When the progress deadline of `bundle`'s rollout passes, in seconds from `now` (for a
/// requeue that notices it on time); `None` without a deadline or once settled.
pub fn seconds_to_deadline(
    records: &[RevisionRecord],
    bundle: &str,
    deadline_seconds: Option<i32>,
    now: &Time,
) -> Option<u64> {
    let limit = i64::from(deadline_seconds?);
    let record = find(records, bundle)?;
    if record.outcome != RevisionOutcome::Progressing {
        return None;
    }
    let started = record.started.as_ref()?.0.as_second();
    let left = started + limit + 1 - now.0.as_second();
    Some(u64::try_from(left.max(1)).unwrap_or(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rukpak_api::{BundleStatus, ContentRef};

    fn at(second: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(second).unwrap())
    }

    fn bundle(name: &str, revision: i64, digest: &str) -> Bundle {
        let mut b: Bundle = serde_json::from_value(serde_json::json!({
            "apiVersion": "core.rukpak.io/v1alpha1",
            "kind": "Bundle",
            "metadata": {"name": name, "labels": {REVISION: revision.to_string()}},
            "spec": {"provisionerClassName": "core-rukpak-io-plain",
                     "source": {"type": "image", "image": {"ref": "example.com/a:1"}}},
        }))
        .unwrap();
        b.status = Some(BundleStatus {
            phase: Some(BundlePhase::Unpacked),
            content: Some(ContentRef {
                digest: digest.to_owned(),
                ..ContentRef::default()
            }),
            ..BundleStatus::default()
        });
        b
    }

    fn spec(value: serde_json::Value) -> BundleDeploymentSpec {
        let mut base = serde_json::json!({
            "provisionerClassName": "core-rukpak-io-plain",
            "template": {"spec": {"provisionerClassName": "core-rukpak-io-plain",
                                  "source": {"type": "image", "image": {"ref": "example.com/a:1"}}}},
        });
        base.as_object_mut()
            .unwrap()
            .extend(value.as_object().unwrap().clone());
        serde_json::from_value(base).unwrap()
    }

    fn healthy_record(bundle: &str, revision: i64) -> RevisionRecord {
        RevisionRecord {
            revision,
            bundle: bundle.into(),
            digest: format!("sha256:{revision}"),
            outcome: RevisionOutcome::Superseded,
            started: Some(at(0)),
            last_healthy: Some(at(10)),
            message: None,
        }
    }

    #[test]
    fn manual_approval_holds_a_new_digest_until_it_is_named() {
        let old = bundle("bd-1", 1, "sha256:aaa");
        let new = bundle("bd-2", 2, "sha256:bbb");
        let bundles = vec![old.clone(), new.clone()];
        let status = BundleDeploymentStatus {
            active_bundle: Some("bd-1".into()),
            ..Default::default()
        };
        let manual = spec(serde_json::json!({"upgradeApproval": "Manual"}));
        assert_eq!(
            choose(&manual, &status, &new, &bundles),
            Target::AwaitApproval {
                pending: "bd-2".into(),
                digest: "sha256:bbb".into(),
                running: Some("bd-1".into())
            }
        );
        let approved_other = spec(
            serde_json::json!({"upgradeApproval": "Manual", "approvedRevision": "sha256:aaa"}),
        );
        assert!(matches!(
            choose(&approved_other, &status, &new, &bundles),
            Target::AwaitApproval { .. }
        ));
        let approved = spec(
            serde_json::json!({"upgradeApproval": "Manual", "approvedRevision": "sha256:bbb"}),
        );
        assert_eq!(
            choose(&approved, &status, &new, &bundles),
            Target::Current {
                bundle: "bd-2".into()
            }
        );
        // The same content under a new template (e.g. a label changed) needs no approval.
        let same = bundle("bd-3", 3, "sha256:aaa");
        assert_eq!(
            choose(&manual, &status, &same, &[old, same.clone()]),
            Target::Current {
                bundle: "bd-3".into()
            }
        );
        // A first install waits too, with nothing running meanwhile.
        assert_eq!(
            choose(
                &manual,
                &BundleDeploymentStatus::default(),
                &new,
                std::slice::from_ref(&new)
            )
            .applies(),
            None
        );
    }

    #[test]
    fn a_failed_revision_rolls_back_only_when_asked_and_only_to_a_healthy_one() {
        let good = bundle("bd-1", 1, "sha256:aaa");
        let bad = bundle("bd-2", 2, "sha256:bbb");
        let bundles = vec![good.clone(), bad.clone()];
        let mut failed = healthy_record("bd-2", 2);
        failed.outcome = RevisionOutcome::Failed;
        failed.last_healthy = None;
        let status = BundleDeploymentStatus {
            active_bundle: Some("bd-2".into()),
            revisions: vec![healthy_record("bd-1", 1), failed],
            ..Default::default()
        };
        let rollback = spec(serde_json::json!({"rollbackOnFailure": true}));
        assert_eq!(
            choose(&rollback, &status, &bad, &bundles),
            Target::RollBack {
                failed: "bd-2".into(),
                to: "bd-1".into()
            }
        );
        assert_eq!(
            choose(&spec(serde_json::json!({})), &status, &bad, &bundles),
            Target::Current {
                bundle: "bd-2".into()
            }
        );
        // Nothing healthy to return to (its Bundle is gone): keep the current one.
        assert_eq!(
            choose(&rollback, &status, &bad, std::slice::from_ref(&bad)),
            Target::Current {
                bundle: "bd-2".into()
            }
        );
    }

    #[test]
    fn records_follow_a_rollout_and_do_not_change_on_a_resync() {
        let mut records = Vec::new();
        let progressing = record(
            &mut records,
            &AppliedRevision::new("bd-1", 1, "sha256:a"),
            &Progress::Progressing,
            false,
            None,
            Some(60),
            &at(100),
        );
        assert_eq!(progressing, None);
        assert_eq!(records[0].outcome, RevisionOutcome::Progressing);
        assert_eq!(records[0].started, Some(at(100)));
        record(
            &mut records,
            &AppliedRevision::new("bd-1", 1, "sha256:a"),
            &Progress::Healthy,
            true,
            None,
            Some(60),
            &at(130),
        );
        let settled = records.clone();
        assert_eq!(settled[0].last_healthy, Some(at(130)));
        // A resync later: nothing changes.
        record(
            &mut records,
            &AppliedRevision::new("bd-1", 1, "sha256:a"),
            &Progress::Healthy,
            true,
            None,
            Some(60),
            &at(900),
        );
        assert_eq!(records, settled);
        // Degrading after rollout is Unhealthy, never Failed (no rollback for that).
        let degraded = record(
            &mut records,
            &AppliedRevision::new("bd-1", 1, "sha256:a"),
            &Progress::NotHealthy {
                failing: true,
                message: "x".into(),
            },
            true,
            None,
            Some(60),
            &at(1000),
        );
        assert_eq!(degraded, None);
        assert_eq!(records[0].outcome, RevisionOutcome::Unhealthy);
        // The next revision supersedes it once it becomes active.
        record(
            &mut records,
            &AppliedRevision::new("bd-2", 2, "sha256:b"),
            &Progress::Healthy,
            true,
            Some("bd-1"),
            None,
            &at(1100),
        );
        assert_eq!(records[0].outcome, RevisionOutcome::Superseded);
        assert_eq!(records[1].outcome, RevisionOutcome::Healthy);
    }

    #[test]
    fn the_deadline_fails_a_revision_that_is_not_ready_in_time() {
        let mut records = Vec::new();
        let not_ready = Progress::NotHealthy {
            failing: false,
            message: "Deployment ns/a: 0 of 1 replicas available".into(),
        };
        for second in [0, 30, 60] {
            assert_eq!(
                record(
                    &mut records,
                    &AppliedRevision::new("bd-1", 1, "sha256:a"),
                    &not_ready,
                    true,
                    None,
                    Some(60),
                    &at(second)
                ),
                None
            );
        }
        assert_eq!(
            seconds_to_deadline(&records, "bd-1", Some(60), &at(30)),
            Some(31)
        );
        let failure = record(
            &mut records,
            &AppliedRevision::new("bd-1", 1, "sha256:a"),
            &not_ready,
            true,
            None,
            Some(60),
            &at(61),
        )
        .unwrap();
        assert!(is_deadline_failure(&failure), "{failure}");
        assert!(failure.contains("Deployment ns/a"), "{failure}");
        assert_eq!(records[0].outcome, RevisionOutcome::Failed);
        // Without a deadline it would wait forever, reported as progressing.
        let mut patient = Vec::new();
        record(
            &mut patient,
            &AppliedRevision::new("bd-1", 1, "sha256:a"),
            &not_ready,
            true,
            None,
            None,
            &at(100_000),
        );
        assert_eq!(patient[0].outcome, RevisionOutcome::Progressing);
    }

    #[test]
    fn a_revision_applied_again_after_it_was_superseded_starts_a_new_rollout() {
        let mut records = vec![healthy_record("bd-1", 1), healthy_record("bd-2", 2)];
        records[1].outcome = RevisionOutcome::Failed;
        record(
            &mut records,
            &AppliedRevision::new("bd-1", 1, "sha256:1"),
            &Progress::Progressing,
            false,
            None,
            Some(5),
            &at(500),
        );
        let last = records.last().unwrap();
        assert_eq!(last.bundle, "bd-1");
        assert_eq!(last.started, Some(at(500)));
        assert_eq!(last.outcome, RevisionOutcome::Progressing);
        // Still known good: it was healthy before.
        assert!(last.last_healthy.is_some());
    }
}
