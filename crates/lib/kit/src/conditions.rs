//! `metav1.Condition` bookkeeping shared by every controller.
//!
//! The rules (from the Kubernetes API conventions): conditions are keyed by `type`;
//! `lastTransitionTime` changes only when `status` changes; `observedGeneration` records
//! the spec generation the condition describes.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// Condition status values.
pub mod status {
    /// The condition holds.
    pub const TRUE: &str = "True";
    /// The condition does not hold.
    pub const FALSE: &str = "False";
    /// The controller cannot tell yet.
    pub const UNKNOWN: &str = "Unknown";
}

/// The desired state of one condition, without timestamps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConditionUpdate<'a> {
    /// Condition type, e.g. `Installed`.
    pub type_: &'a str,
    /// `True`, `False` or `Unknown` (see [`status`]).
    pub status: &'a str,
    /// CamelCase reason, e.g. `InstallationSucceeded`.
    pub reason: &'a str,
    /// Human-readable detail.
    pub message: &'a str,
}

/// Sets `update` in `conditions`, stamped with `observed_generation`.
///
/// `lastTransitionTime` becomes `now` when the condition is new or its status flips and
/// is kept otherwise. Returns whether anything changed, so callers can skip a status
/// write that would change nothing.
pub fn set_condition(
    conditions: &mut Vec<Condition>,
    update: ConditionUpdate<'_>,
    observed_generation: Option<i64>,
    now: &Time,
) -> bool {
    let existing = conditions.iter_mut().find(|c| c.type_ == update.type_);
    match existing {
        Some(current) => {
            let flipped = current.status != update.status;
            let changed = flipped
                || current.reason != update.reason
                || current.message != update.message
                || current.observed_generation != observed_generation;
            if flipped {
                current.last_transition_time = now.clone();
            }
            current.status = update.status.to_owned();
            current.reason = update.reason.to_owned();
            current.message = update.message.to_owned();
            current.observed_generation = observed_generation;
            changed
        }
        None => {
            conditions.push(Condition {
                type_: update.type_.to_owned(),
                status: update.status.to_owned(),
                reason: update.reason.to_owned(),
                message: update.message.to_owned(),
                observed_generation,
                last_transition_time: now.clone(),
            });
            true
        }
    }
}

/// A condition as a pure status function decides it: type, status, reason and message,
/// without timestamps or generation. Every controller builds its conditions as values of
/// this type and sets them with [`set_all`], which keeps the rules above.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Desired {
    /// Condition type, e.g. `Installed`.
    pub type_: &'static str,
    /// `True`, `False` or `Unknown` (see [`status`]).
    pub status: &'static str,
    /// CamelCase reason, e.g. `InstallationSucceeded`.
    pub reason: String,
    /// Human-readable detail.
    pub message: String,
}

impl Desired {
    /// The condition `type_` with `status`, `reason` and `message`.
    pub fn new(
        type_: &'static str,
        status: &'static str,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            type_,
            status,
            reason: reason.into(),
            message: message.into(),
        }
    }
}

/// Sets each of `desired` in `conditions` (see [`set_condition`]); returns whether
/// anything changed.
pub fn set_all(
    conditions: &mut Vec<Condition>,
    desired: impl IntoIterator<Item = Desired>,
    observed_generation: Option<i64>,
    now: &Time,
) -> bool {
    let mut changed = false;
    for condition in desired {
        changed |= set_condition(
            conditions,
            ConditionUpdate {
                type_: condition.type_,
                status: condition.status,
                reason: &condition.reason,
                message: &condition.message,
            },
            observed_generation,
            now,
        );
    }
    changed
}

/// Finds the condition of type `type_`.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Whether the condition of type `type_` is `True` (and, when `generation` is given,
/// describes that generation rather than an older spec).
pub fn is_true(conditions: &[Condition], type_: &str, generation: Option<i64>) -> bool {
    find(conditions, type_).is_some_and(|c| {
        c.status == status::TRUE && (generation.is_none() || c.observed_generation == generation)
    })
}

/// The current time as a Kubernetes timestamp, truncated to whole seconds because
/// `metav1.Time` serialises at second precision; comparing untruncated times would
/// report changes that vanish on the round trip.
pub fn now() -> Time {
    let now = k8s_openapi::jiff::Timestamp::now();
    Time(k8s_openapi::jiff::Timestamp::from_second(now.as_second()).unwrap_or(now))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(second: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(second).unwrap())
    }

    fn installed(status_: &'static str, reason: &'static str) -> ConditionUpdate<'static> {
        ConditionUpdate {
            type_: "Installed",
            status: status_,
            reason,
            message: "m",
        }
    }

    #[test]
    fn a_new_condition_is_added_with_the_current_time() {
        let mut conditions = Vec::new();
        assert!(set_condition(
            &mut conditions,
            installed(status::TRUE, "InstallationSucceeded"),
            Some(3),
            &at(100)
        ));
        assert_eq!(conditions.len(), 1);
        assert_eq!(conditions[0].last_transition_time, at(100));
        assert_eq!(conditions[0].observed_generation, Some(3));
    }

    #[test]
    fn transition_time_is_kept_when_only_the_reason_changes() {
        let mut conditions = Vec::new();
        set_condition(
            &mut conditions,
            installed(status::FALSE, "A"),
            Some(1),
            &at(100),
        );
        assert!(set_condition(
            &mut conditions,
            installed(status::FALSE, "B"),
            Some(2),
            &at(200)
        ));
        assert_eq!(conditions[0].reason, "B");
        assert_eq!(conditions[0].observed_generation, Some(2));
        assert_eq!(conditions[0].last_transition_time, at(100));
    }

    #[test]
    fn transition_time_moves_when_the_status_flips() {
        let mut conditions = Vec::new();
        set_condition(
            &mut conditions,
            installed(status::FALSE, "A"),
            Some(1),
            &at(100),
        );
        set_condition(
            &mut conditions,
            installed(status::TRUE, "A"),
            Some(1),
            &at(200),
        );
        assert_eq!(conditions[0].last_transition_time, at(200));
    }

    #[test]
    fn an_identical_update_reports_no_change() {
        let mut conditions = Vec::new();
        set_condition(
            &mut conditions,
            installed(status::TRUE, "A"),
            Some(1),
            &at(100),
        );
        assert!(!set_condition(
            &mut conditions,
            installed(status::TRUE, "A"),
            Some(1),
            &at(200)
        ));
        assert_eq!(conditions[0].last_transition_time, at(100));
    }

    #[test]
    fn conditions_are_keyed_by_type() {
        let mut conditions = Vec::new();
        set_condition(
            &mut conditions,
            installed(status::TRUE, "A"),
            Some(1),
            &at(1),
        );
        let healthy = ConditionUpdate {
            type_: "Healthy",
            status: status::FALSE,
            reason: "Unhealthy",
            message: "",
        };
        set_condition(&mut conditions, healthy, Some(1), &at(1));
        assert_eq!(conditions.len(), 2);
        assert!(is_true(&conditions, "Installed", Some(1)));
        assert!(
            !is_true(&conditions, "Installed", Some(2)),
            "stale generation"
        );
        assert!(!is_true(&conditions, "Healthy", None));
        assert!(!is_true(&conditions, "Missing", None));
    }
}
