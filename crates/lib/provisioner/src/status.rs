//! BundleDeployment status from the outcome of one reconcile (pure).
//!
//! During a pivot the previous objects keep running, so a failure to reach the new Bundle
//! changes `HasValidBundle` (and, for apply failures, `Installed`) but never clears
//! `activeBundle` or the inventory: they still describe what is on the cluster.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kit::conditions::{Desired, status};
use rukpak_api::conditions::{
    TYPE_HAS_VALID_BUNDLE, TYPE_HEALTHY, TYPE_INSTALLED, TYPE_PROGRESSING,
    reasons::{
        APPLYING, AWAITING_APPROVAL, BUNDLE_LOAD_FAILED, HEALTHY, INSTALL_FAILED,
        INSTALLATION_STATUS_FALSE, INSTALLATION_SUCCEEDED, INVALID_HEALTH_CHECK, PAUSED,
        PROGRESS_DEADLINE_EXCEEDED, ROLLED_BACK, SETTLED, STALLED, UNHEALTHY, UNPACK_FAILED,
        UNPACK_PENDING, UNPACK_SUCCESSFUL, UNPACKING, UPGRADE_FAILED, WAITING_FOR_HEALTH,
        WAITING_FOR_PROBES,
    },
};
use rukpak_api::{BundleDeploymentStatus, InventoryEntry, PendingRevision};

use crate::revisions::{self, Progress, Target};

/// What one reconcile found or did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The Bundle for the current template does not exist yet.
    BundleMissing {
        /// Expected Bundle name.
        bundle: String,
    },
    /// The Bundle exists but is not unpacked.
    BundleNotUnpacked {
        /// Bundle name.
        bundle: String,
        /// Whether unpacking failed (rather than still running).
        failed: bool,
        /// The Bundle's own message.
        message: String,
    },
    /// The unpacked content is not a valid bundle of this provisioner's format.
    LoadFailed {
        /// Bundle name.
        bundle: String,
        /// Why.
        message: String,
    },
    /// The Bundle is unpacked and its objects are being applied (written while the apply
    /// runs, so status names the step in flight).
    Applying {
        /// Bundle name.
        bundle: String,
        /// The step, as a phrase (e.g. "applying phase 2 of 4 (configuration, 12 objects)").
        step: String,
    },
    /// Applying failed; nothing of the new Bundle may be trusted.
    ApplyFailed {
        /// Bundle name.
        bundle: String,
        /// Why.
        message: String,
    },
    /// Everything applied.
    Installed {
        /// Bundle name.
        bundle: String,
        /// What was applied.
        inventory: Vec<InventoryEntry>,
        /// Whether every applied object is healthy.
        healthy: bool,
        /// Health summary (which objects are unhealthy and why).
        health_message: String,
        /// Warnings the API server returned while applying.
        warnings: Vec<String>,
        /// Objects that left the bundle but were kept, with the reason.
        kept: Vec<String>,
        /// Optional objects skipped because the cluster does not serve their kind.
        skipped: Vec<InventoryEntry>,
        /// What the format changed from the bundle as written (see `Plan::adjustments`).
        adjustments: Vec<String>,
    },
    /// The apply stopped before a phase whose earlier objects do not pass their probes.
    Waiting {
        /// Bundle name.
        bundle: String,
        /// The phase and what it waits for, as a sentence.
        message: String,
        /// Whether a probe reports a failure (rather than "not ready yet").
        failed: bool,
        /// What was written so far plus what the previous revision had.
        inventory: Vec<InventoryEntry>,
        /// Optional objects skipped because the cluster does not serve their kind.
        skipped: Vec<InventoryEntry>,
        /// What the format changed from the bundle as written (see `Plan::adjustments`).
        adjustments: Vec<String>,
    },
    /// With `upgradeApproval: Manual`, the first revision waits for approval; nothing runs.
    AwaitingApproval {
        /// Bundle name.
        bundle: String,
        /// Its content digest, to approve.
        digest: String,
    },
    /// `spec.healthChecks` does not compile.
    InvalidHealthChecks {
        /// Which check and why.
        message: String,
    },
    /// `spec.paused`: nothing was written.
    Paused,
}

/// The status after `outcome`, starting from `current`: each condition from its own
/// function of the outcome (one that does not speak about a condition leaves it as it
/// was), and what is on the cluster once an apply got that far.
pub fn next_status(
    current: &BundleDeploymentStatus,
    outcome: &Outcome,
    generation: Option<i64>,
    now: &Time,
) -> BundleDeploymentStatus {
    let mut next = current.clone();
    next.observed_generation = generation;
    let conditions = [
        has_valid_bundle(outcome),
        installed(current, outcome),
        healthy(current, outcome),
        progressing(outcome),
    ];
    kit::conditions::set_all(
        &mut next.conditions,
        conditions.into_iter().flatten(),
        generation,
        now,
    );
    match outcome {
        Outcome::Installed {
            bundle,
            inventory,
            skipped,
            adjustments,
            ..
        } => {
            next.active_bundle = Some(bundle.clone());
            next.inventory = inventory.clone();
            next.skipped = skipped.clone();
            next.adjustments = adjustments.clone();
        }
        Outcome::Waiting {
            inventory,
            skipped,
            adjustments,
            ..
        } => {
            next.inventory = inventory.clone();
            next.skipped = skipped.clone();
            next.adjustments = adjustments.clone();
        }
        _ => {}
    }
    next
}

/// `HasValidBundle`: whether the Bundle to apply is there and readable. Pure.
fn has_valid_bundle(outcome: &Outcome) -> Option<Desired> {
    let condition = |status_, reason, message| {
        Some(Desired::new(
            TYPE_HAS_VALID_BUNDLE,
            status_,
            reason,
            message,
        ))
    };
    match outcome {
        Outcome::BundleMissing { bundle } => condition(
            status::FALSE,
            UNPACK_PENDING,
            format!("Waiting for the {bundle} Bundle to be created"),
        ),
        Outcome::BundleNotUnpacked {
            bundle,
            failed: false,
            message,
        } => condition(
            status::FALSE,
            UNPACK_PENDING,
            format!("Waiting for the {bundle} Bundle to be unpacked: {message}"),
        ),
        Outcome::BundleNotUnpacked {
            bundle,
            failed: true,
            message,
        } => condition(
            status::FALSE,
            UNPACK_FAILED,
            format!("Failed to unpack the {bundle} Bundle: {message}"),
        ),
        Outcome::LoadFailed { bundle, message } => condition(
            status::FALSE,
            BUNDLE_LOAD_FAILED,
            format!("Failed to load the {bundle} Bundle: {message}"),
        ),
        Outcome::Applying { bundle, .. }
        | Outcome::ApplyFailed { bundle, .. }
        | Outcome::Installed { bundle, .. }
        | Outcome::Waiting { bundle, .. }
        | Outcome::AwaitingApproval { bundle, .. } => condition(
            status::TRUE,
            UNPACK_SUCCESSFUL,
            format!("Successfully unpacked the {bundle} Bundle"),
        ),
        Outcome::InvalidHealthChecks { .. } | Outcome::Paused => None,
    }
}

/// `Installed`: what runs, or why the Bundle could not be installed or upgraded to. Pure.
fn installed(current: &BundleDeploymentStatus, outcome: &Outcome) -> Option<Desired> {
    let condition =
        |status_, reason, message| Some(Desired::new(TYPE_INSTALLED, status_, reason, message));
    // During a pivot the previous Bundle's objects still run.
    let upgrading = |bundle: &str| {
        current
            .active_bundle
            .as_deref()
            .is_some_and(|active| active != bundle)
    };
    match outcome {
        Outcome::ApplyFailed { bundle, message } if upgrading(bundle) => condition(
            status::FALSE,
            UPGRADE_FAILED,
            format!(
                "Failed to upgrade to the {bundle} Bundle; the previous objects are unchanged: {message}"
            ),
        ),
        Outcome::ApplyFailed { bundle, message } => condition(
            status::FALSE,
            INSTALL_FAILED,
            format!("Failed to install the {bundle} Bundle: {message}"),
        ),
        Outcome::Installed { .. } => condition(
            status::TRUE,
            INSTALLATION_SUCCEEDED,
            installed_message(outcome),
        ),
        Outcome::Waiting {
            bundle,
            message,
            failed: true,
            ..
        } => {
            let (reason, what) = if upgrading(bundle) {
                (UPGRADE_FAILED, "upgrade to")
            } else {
                (INSTALL_FAILED, "install")
            };
            condition(
                status::FALSE,
                reason,
                format!("Failed to {what} the {bundle} Bundle: {message}"),
            )
        }
        Outcome::Waiting {
            bundle, message, ..
        } if current.active_bundle.is_none() => condition(
            status::FALSE,
            WAITING_FOR_PROBES,
            format!("Installing the {bundle} Bundle: {message}"),
        ),
        Outcome::AwaitingApproval { bundle, digest } => condition(
            status::FALSE,
            AWAITING_APPROVAL,
            format!(
                "Nothing is installed until the {bundle} Bundle ({digest}) is approved: review status.pendingRevision, then set spec.approvedRevision to {digest}"
            ),
        ),
        Outcome::InvalidHealthChecks { message } => condition(
            status::FALSE,
            INVALID_HEALTH_CHECK,
            format!("Nothing was applied: {message}"),
        ),
        // Paused: whatever was installed still is; only the reason says why nothing moves.
        Outcome::Paused => {
            let previous = kit::conditions::find(&current.conditions, TYPE_INSTALLED).map_or(
                status::UNKNOWN,
                |c| match c.status.as_str() {
                    status::TRUE => status::TRUE,
                    status::FALSE => status::FALSE,
                    _ => status::UNKNOWN,
                },
            );
            condition(
                previous,
                PAUSED,
                "spec.paused is true: nothing is applied, pruned or corrected".to_owned(),
            )
        }
        _ => None,
    }
}

/// The `Installed` message of a successful apply: what was kept, skipped, adjusted, and
/// the API server's warnings. Pure.
fn installed_message(outcome: &Outcome) -> String {
    let Outcome::Installed {
        bundle,
        warnings,
        kept,
        skipped,
        adjustments,
        ..
    } = outcome
    else {
        return String::new();
    };
    let mut message = format!("Instantiated bundle {bundle} successfully");
    if !kept.is_empty() {
        message.push_str("; not pruned: ");
        message.push_str(&kept.join("; "));
    }
    if !skipped.is_empty() {
        let one = skipped.len() == 1;
        message.push_str(&format!(
            "; optional object{} skipped because the cluster does not serve {}: {} (applied once a CRD of {} appears)",
            if one { "" } else { "s" },
            if one { "its kind" } else { "their kinds" },
            skipped
                .iter()
                .map(|e| apply_engine::object::ObjectKey::from(e).to_string())
                .collect::<Vec<_>>()
                .join(", "),
            if one { "its group" } else { "their groups" },
        ));
    }
    if !adjustments.is_empty() {
        message.push_str(&format!(
            "; adjusted to install safely ({}, see status.adjustments)",
            if adjustments.len() == 1 {
                "1 change".to_owned()
            } else {
                format!("{} changes", adjustments.len())
            }
        ));
    }
    if !warnings.is_empty() {
        message.push_str("; the API server warned: ");
        message.push_str(&warnings.join("; "));
    }
    message
}

/// `Healthy`: the health of what was applied. A failed first install has nothing to be
/// healthy; a failed upgrade leaves the previous objects' health as it was. Pure.
fn healthy(current: &BundleDeploymentStatus, outcome: &Outcome) -> Option<Desired> {
    match outcome {
        Outcome::ApplyFailed { bundle, .. }
            if current
                .active_bundle
                .as_deref()
                .is_none_or(|active| active == bundle) =>
        {
            Some(Desired::new(
                TYPE_HEALTHY,
                status::FALSE,
                INSTALLATION_STATUS_FALSE,
                "Health is not evaluated: installation failed",
            ))
        }
        Outcome::Installed { healthy: true, .. } => Some(Desired::new(
            TYPE_HEALTHY,
            status::TRUE,
            HEALTHY,
            "BundleDeployment is healthy",
        )),
        Outcome::Installed {
            healthy: false,
            health_message,
            ..
        } => Some(Desired::new(
            TYPE_HEALTHY,
            status::FALSE,
            UNHEALTHY,
            health_message.clone(),
        )),
        _ => None,
    }
}

/// `Progressing`: what the provisioner is doing about the BundleDeployment now, or why it
/// stopped. Pure.
fn progressing(outcome: &Outcome) -> Option<Desired> {
    let condition =
        |status_, reason, message| Some(Desired::new(TYPE_PROGRESSING, status_, reason, message));
    match outcome {
        Outcome::BundleMissing { bundle } => condition(
            status::TRUE,
            UNPACKING,
            format!("Waiting for the {bundle} Bundle to be created and unpacked"),
        ),
        Outcome::BundleNotUnpacked {
            bundle,
            failed: false,
            ..
        } => condition(
            status::TRUE,
            UNPACKING,
            format!("Waiting for the {bundle} Bundle to be unpacked"),
        ),
        Outcome::BundleNotUnpacked {
            bundle,
            failed: true,
            ..
        } => condition(
            status::FALSE,
            STALLED,
            format!("Stopped: the {bundle} Bundle failed to unpack (see HasValidBundle)"),
        ),
        Outcome::LoadFailed { bundle, .. } => condition(
            status::FALSE,
            STALLED,
            format!("Stopped: the {bundle} Bundle failed to load (see HasValidBundle)"),
        ),
        Outcome::Applying { bundle, step } => condition(
            status::TRUE,
            APPLYING,
            format!("Applying the {bundle} Bundle: {step}"),
        ),
        Outcome::ApplyFailed { bundle, .. } => condition(
            status::FALSE,
            STALLED,
            format!(
                "Stopped: applying the {bundle} Bundle failed and is retried with backoff (see Installed)"
            ),
        ),
        Outcome::Installed {
            bundle,
            healthy: true,
            ..
        } => condition(
            status::FALSE,
            SETTLED,
            format!("The {bundle} Bundle is installed and healthy"),
        ),
        Outcome::Installed { bundle, .. } => condition(
            status::TRUE,
            WAITING_FOR_HEALTH,
            format!(
                "Applied every object of the {bundle} Bundle; waiting for them to become healthy (see Healthy)"
            ),
        ),
        Outcome::Waiting {
            bundle,
            failed: true,
            ..
        } => condition(
            status::FALSE,
            STALLED,
            format!("Stopped: a probe of the {bundle} Bundle failed (see Installed)"),
        ),
        Outcome::Waiting {
            bundle, message, ..
        } => condition(
            status::TRUE,
            WAITING_FOR_PROBES,
            format!("Applying the {bundle} Bundle: {message}"),
        ),
        Outcome::InvalidHealthChecks { .. } => condition(
            status::FALSE,
            STALLED,
            "Stopped: spec.healthChecks must be fixed (see Installed)".to_owned(),
        ),
        Outcome::Paused => condition(status::FALSE, PAUSED, "spec.paused is true".to_owned()),
        Outcome::AwaitingApproval { .. } => None,
    }
}

/// What a reconcile decided and saw about revisions (see [`crate::revisions`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevisionStep {
    /// Which Bundle was meant to be applied, and why.
    pub target: Target,
    /// The revision applied.
    pub applied: Option<revisions::AppliedRevision>,
    /// What the apply saw.
    pub progress: Progress,
    /// With manual approval: the revision waiting and what it would change.
    pub pending: Option<PendingRevision>,
}

/// Adds what `step` says about revisions to `next` (the status [`next_status`] made):
/// `status.revisions`, `status.pendingRevision`, and the conditions for a missed progress
/// deadline, a rollback and a pending approval. Returns the failure of the applied
/// revision, if it failed in this step or before. Pure.
pub fn with_revisions(
    next: &mut BundleDeploymentStatus,
    current: &BundleDeploymentStatus,
    step: &RevisionStep,
    spec: &rukpak_api::BundleDeploymentSpec,
    generation: Option<i64>,
    now: &Time,
) -> Option<String> {
    let mut failure = None;
    if let Some(applied) = &step.applied {
        let becomes_active = next.active_bundle.as_deref() == Some(applied.bundle.as_str());
        failure = revisions::record(
            &mut next.revisions,
            applied,
            &step.progress,
            becomes_active,
            current.active_bundle.as_deref(),
            spec.progress_deadline_seconds,
            now,
        );
    }
    next.pending_revision = step.pending.clone();
    let installed_now = kit::conditions::find(&next.conditions, TYPE_INSTALLED)
        .is_some_and(|c| c.status == status::TRUE);
    let records = next.revisions.clone();
    let mut conditions = Vec::new();
    if let Some(message) = failure
        .as_deref()
        .filter(|m| revisions::is_deadline_failure(m))
        && let Some(revisions::AppliedRevision {
            bundle, revision, ..
        }) = &step.applied
    {
        let rolling_back = spec.rollback_on_failure == Some(true);
        conditions.push(Desired::new(
            TYPE_INSTALLED,
            status::FALSE,
            PROGRESS_DEADLINE_EXCEEDED,
            format!(
                "Revision {revision} (the {bundle} Bundle) {message}{}",
                if rolling_back {
                    "; rolling back to the last healthy revision"
                } else {
                    ""
                }
            ),
        ));
        conditions.push(Desired::new(
            TYPE_PROGRESSING,
            status::FALSE,
            PROGRESS_DEADLINE_EXCEEDED,
            format!("Stopped: revision {revision} missed its progress deadline (see Installed)"),
        ));
    }
    match &step.target {
        Target::RollBack { failed, to } => {
            let why = revisions::find(&records, failed)
                .and_then(|r| r.message.clone())
                .unwrap_or_else(|| "it failed".to_owned());
            let number = |bundle: &str| {
                revisions::find(&records, bundle)
                    .map(|r| r.revision.to_string())
                    .unwrap_or_else(|| "?".to_owned())
            };
            if installed_now {
                let message = format!(
                    "Rolled back to revision {} (the {to} Bundle) because revision {} (the {failed} Bundle) failed: {why}. Change the template to try again",
                    number(to),
                    number(failed)
                );
                conditions.push(Desired::new(
                    TYPE_INSTALLED,
                    status::TRUE,
                    ROLLED_BACK,
                    message,
                ));
            }
        }
        Target::AwaitApproval {
            pending, digest, ..
        } => {
            let summary = step.pending.as_ref().map(summarize).unwrap_or_default();
            conditions.push(Desired::new(
                TYPE_PROGRESSING,
                status::FALSE,
                AWAITING_APPROVAL,
                format!(
                    "The {pending} Bundle ({digest}) waits for approval{summary}: review status.pendingRevision (or run `rukpak-core plan`), then set spec.approvedRevision to {digest}"
                ),
            ));
        }
        Target::Current { .. } => {}
    }
    kit::conditions::set_all(&mut next.conditions, conditions, generation, now);
    failure
}

/// `: 2 objects added, 1 changed, 3 permissions added`, or nothing when nothing changes.
fn summarize(pending: &PendingRevision) -> String {
    let parts: Vec<String> = [
        (pending.added.len(), "added"),
        (pending.changed.len(), "changed"),
        (pending.removed.len(), "removed"),
        (pending.permissions_added.len(), "RBAC permissions added"),
        (pending.refused.len(), "refused in a dry run"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}

/// Whether an apply of `bundle` should show its steps in status while it runs: on the way
/// to a Bundle not yet installed, and not when retrying after a failure (that would rewrite
/// status twice per retry) or re-checking a settled install for drift.
pub fn shows_progress(
    current: &BundleDeploymentStatus,
    bundle: &str,
    generation: Option<i64>,
) -> bool {
    if installed_already(current, bundle) {
        return false;
    }
    let stalled = kit::conditions::find(&current.conditions, TYPE_PROGRESSING)
        .is_some_and(|c| c.reason == STALLED && c.observed_generation == generation);
    !stalled
}

/// Whether `bundle` is the revision installed (`Installed=True` for it): an apply of it
/// repairs drift rather than installs. Pure.
pub fn installed_already(current: &BundleDeploymentStatus, bundle: &str) -> bool {
    kit::conditions::find(&current.conditions, TYPE_INSTALLED)
        .is_some_and(|c| c.status == status::TRUE)
        && current.active_bundle.as_deref() == Some(bundle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kit::conditions::find;

    fn now() -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(1_700_000_000).unwrap())
    }

    fn installed(bundle: &str, healthy: bool) -> Outcome {
        Outcome::Installed {
            bundle: bundle.into(),
            inventory: vec![InventoryEntry {
                group: String::new(),
                version: "v1".into(),
                kind: "ConfigMap".into(),
                namespace: Some("ns".into()),
                name: "a".into(),
            }],
            healthy,
            health_message: if healthy {
                String::new()
            } else {
                "Deployment ns/web: 0/1 available".into()
            },
            warnings: Vec::new(),
            kept: Vec::new(),
            skipped: Vec::new(),
            adjustments: Vec::new(),
        }
    }

    fn reason<'a>(s: &'a BundleDeploymentStatus, type_: &str) -> (&'a str, &'a str) {
        let c = find(&s.conditions, type_).unwrap();
        (c.status.as_str(), c.reason.as_str())
    }

    #[test]
    fn a_successful_install_sets_every_condition_and_the_active_bundle() {
        let s = next_status(
            &BundleDeploymentStatus::default(),
            &installed("bd-1", true),
            Some(2),
            &now(),
        );
        assert_eq!(s.active_bundle.as_deref(), Some("bd-1"));
        assert_eq!(s.inventory.len(), 1);
        assert_eq!(s.observed_generation, Some(2));
        assert_eq!(
            reason(&s, TYPE_HAS_VALID_BUNDLE),
            ("True", UNPACK_SUCCESSFUL)
        );
        assert_eq!(reason(&s, TYPE_INSTALLED), ("True", INSTALLATION_SUCCEEDED));
        assert_eq!(reason(&s, TYPE_HEALTHY), ("True", HEALTHY));
    }

    #[test]
    fn api_server_warnings_are_reported_on_the_installed_condition() {
        let mut outcome = installed("bd-1", true);
        if let Outcome::Installed { warnings, .. } = &mut outcome {
            warnings.push("v1beta1 Widget is deprecated".into());
        }
        let s = next_status(
            &BundleDeploymentStatus::default(),
            &outcome,
            Some(1),
            &now(),
        );
        let message = &find(&s.conditions, TYPE_INSTALLED).unwrap().message;
        assert!(
            message.ends_with("the API server warned: v1beta1 Widget is deprecated"),
            "{message}"
        );
    }

    #[test]
    fn objects_kept_instead_of_pruned_are_named_on_the_installed_condition() {
        let mut outcome = installed("bd-2", true);
        if let Outcome::Installed { kept, .. } = &mut outcome {
            kept.push("CustomResourceDefinition.apiextensions.k8s.io widgets.example.com: CRD still has custom resources".into());
        }
        let s = next_status(
            &BundleDeploymentStatus::default(),
            &outcome,
            Some(1),
            &now(),
        );
        let message = &find(&s.conditions, TYPE_INSTALLED).unwrap().message;
        assert!(
            message.contains(
                "not pruned: CustomResourceDefinition.apiextensions.k8s.io widgets.example.com"
            ),
            "{message}"
        );
    }

    #[test]
    fn unhealthy_objects_are_named_in_the_healthy_condition() {
        let s = next_status(
            &BundleDeploymentStatus::default(),
            &installed("bd-1", false),
            Some(1),
            &now(),
        );
        let healthy = find(&s.conditions, TYPE_HEALTHY).unwrap();
        assert_eq!(
            (healthy.status.as_str(), healthy.reason.as_str()),
            ("False", UNHEALTHY)
        );
        assert!(healthy.message.contains("Deployment ns/web"));
    }

    #[test]
    fn a_failed_pivot_keeps_the_active_bundle_and_inventory() {
        let before = next_status(
            &BundleDeploymentStatus::default(),
            &installed("bd-1", true),
            Some(1),
            &now(),
        );
        let failed = Outcome::ApplyFailed {
            bundle: "bd-2".into(),
            message: "forbidden".into(),
        };
        let after = next_status(&before, &failed, Some(2), &now());
        assert_eq!(after.active_bundle.as_deref(), Some("bd-1"));
        assert_eq!(after.inventory, before.inventory);
        assert_eq!(reason(&after, TYPE_INSTALLED), ("False", UPGRADE_FAILED));
        assert_eq!(
            reason(&after, TYPE_HEALTHY),
            ("True", HEALTHY),
            "the old objects' health stands"
        );
    }

    #[test]
    fn a_failed_first_install_reports_install_failed_and_no_health() {
        let failed = Outcome::ApplyFailed {
            bundle: "bd-1".into(),
            message: "collision".into(),
        };
        let s = next_status(&BundleDeploymentStatus::default(), &failed, Some(1), &now());
        assert_eq!(s.active_bundle, None);
        assert_eq!(reason(&s, TYPE_INSTALLED), ("False", INSTALL_FAILED));
        assert_eq!(
            reason(&s, TYPE_HEALTHY),
            ("False", INSTALLATION_STATUS_FALSE)
        );
        assert!(
            find(&s.conditions, TYPE_INSTALLED)
                .unwrap()
                .message
                .contains("collision")
        );
    }

    #[test]
    fn unpack_progress_and_failure_show_on_has_valid_bundle() {
        let pending = Outcome::BundleNotUnpacked {
            bundle: "b".into(),
            failed: false,
            message: "pulling".into(),
        };
        let s = next_status(
            &BundleDeploymentStatus::default(),
            &pending,
            Some(1),
            &now(),
        );
        assert_eq!(reason(&s, TYPE_HAS_VALID_BUNDLE), ("False", UNPACK_PENDING));
        let failed = Outcome::BundleNotUnpacked {
            bundle: "b".into(),
            failed: true,
            message: "manifest unknown".into(),
        };
        let s = next_status(&s, &failed, Some(1), &now());
        assert_eq!(reason(&s, TYPE_HAS_VALID_BUNDLE), ("False", UNPACK_FAILED));
        assert!(
            find(&s.conditions, TYPE_HAS_VALID_BUNDLE)
                .unwrap()
                .message
                .contains("manifest unknown")
        );
    }

    #[test]
    fn pausing_keeps_the_installed_status_and_says_why() {
        let before = next_status(
            &BundleDeploymentStatus::default(),
            &installed("bd-1", true),
            Some(1),
            &now(),
        );
        let s = next_status(&before, &Outcome::Paused, Some(2), &now());
        assert_eq!(reason(&s, TYPE_INSTALLED), ("True", PAUSED));
        assert_eq!(s.active_bundle.as_deref(), Some("bd-1"));
    }

    #[test]
    fn an_unchanged_outcome_yields_an_identical_status() {
        let once = next_status(
            &BundleDeploymentStatus::default(),
            &installed("bd-1", true),
            Some(1),
            &now(),
        );
        let later = Time(k8s_openapi::jiff::Timestamp::from_second(1_700_000_500).unwrap());
        assert_eq!(
            next_status(&once, &installed("bd-1", true), Some(1), &later),
            once,
            "no status write needed"
        );
    }

    #[test]
    fn progressing_names_the_step_then_settles() {
        let applying = next_status(
            &BundleDeploymentStatus::default(),
            &Outcome::Applying {
                bundle: "bd-1".into(),
                step: "applying phase 2 of 4 (configuration, 3 objects)".into(),
            },
            Some(1),
            &now(),
        );
        assert_eq!(reason(&applying, TYPE_PROGRESSING), ("True", APPLYING));
        assert_eq!(
            find(&applying.conditions, TYPE_PROGRESSING)
                .unwrap()
                .message,
            "Applying the bd-1 Bundle: applying phase 2 of 4 (configuration, 3 objects)"
        );
        assert_eq!(
            reason(&applying, TYPE_HAS_VALID_BUNDLE),
            ("True", UNPACK_SUCCESSFUL)
        );
        let waiting = next_status(&applying, &installed("bd-1", false), Some(1), &now());
        assert_eq!(
            reason(&waiting, TYPE_PROGRESSING),
            ("True", WAITING_FOR_HEALTH)
        );
        let settled = next_status(&waiting, &installed("bd-1", true), Some(1), &now());
        assert_eq!(reason(&settled, TYPE_PROGRESSING), ("False", SETTLED));
        let failed = next_status(
            &settled,
            &Outcome::ApplyFailed {
                bundle: "bd-2".into(),
                message: "forbidden".into(),
            },
            Some(2),
            &now(),
        );
        assert_eq!(reason(&failed, TYPE_PROGRESSING), ("False", STALLED));
    }

    #[test]
    fn progress_is_shown_on_the_way_to_a_new_bundle_only() {
        let fresh = BundleDeploymentStatus::default();
        assert!(shows_progress(&fresh, "bd-1", Some(1)));
        let settled = next_status(&fresh, &installed("bd-1", true), Some(1), &now());
        // A drift re-check of the installed Bundle: no.
        assert!(!shows_progress(&settled, "bd-1", Some(1)));
        // A pivot to the next one: yes.
        assert!(shows_progress(&settled, "bd-2", Some(2)));
        // A retry after a failure of the same generation: no; after a spec change: yes.
        let failed = next_status(
            &settled,
            &Outcome::ApplyFailed {
                bundle: "bd-2".into(),
                message: "forbidden".into(),
            },
            Some(2),
            &now(),
        );
        assert!(!shows_progress(&failed, "bd-2", Some(2)));
        assert!(shows_progress(&failed, "bd-3", Some(3)));
    }
}
