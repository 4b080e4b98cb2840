//! The pieces every reconciler is built from: functions, not a framework around
//! kube-runtime's `Controller`.
//!
//! Every controller here has the same shape:
//!
//! 1. **read** what the decision needs (the object, what it references, caches);
//! 2. **decide**, in a pure function, what should be true;
//! 3. **write** it (objects, then status, only when it changed);
//! 4. compute the **status**, in a pure function, from what happened;
//!
//! and wraps that in the same scaffolding, from here:
//!
//! - [`timed`] times the whole reconcile and counts its result (`success`, or the error's
//!   [`Classify::label`]) on every path, early returns and cancellation included
//!   ([`timed_with_label`] when failures reported in status should count as failures);
//! - [`retry_after`] is the `error_policy`: it logs the error with its cause chain and
//!   returns per-object backoff, or waits for a change when retrying cannot help;
//! - [`announce`] publishes an Event for each condition whose status or reason changed, so
//!   identical failures do not repeat Events; a controller's [`News`] rule says only which
//!   conditions stay quiet and which changes are warnings;
//! - [`recorder`] builds the Event recorder reporting as the controller.

use std::future::Future;
use std::time::Duration;

use crate::events::Recorder;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::Client;
use kube::runtime::controller::Action;

use crate::metrics::ReconcileMetrics;
use crate::retry::{Backoff, Classify};

/// The result label of a reconcile that succeeded.
pub const SUCCESS: &str = "success";

/// Runs `reconcile` as one reconciliation of `controller`, recording its duration and
/// counting its result: [`SUCCESS`], or the error's [`Classify::label`]. A reconcile that
/// is cancelled (dropped) is still recorded, as
/// [`crate::metrics::ReconcileTimer::UNFINISHED`].
pub async fn timed<T, E, F>(
    metrics: &ReconcileMetrics,
    controller: &str,
    reconcile: F,
) -> Result<T, E>
where
    E: Classify,
    F: Future<Output = Result<T, E>>,
{
    let timer = metrics.start(controller);
    let result = reconcile.await;
    timer.finish(match &result {
        Ok(_) => SUCCESS,
        Err(err) => err.label(),
    });
    result
}

/// [`timed`], then [`Backoff::reset`] of `key` when the reconcile succeeded, so the next
/// failure of the object starts its backoff afresh.
pub async fn timed_and_reset<T, E, F>(
    metrics: &ReconcileMetrics,
    controller: &str,
    backoff: &Backoff,
    key: &str,
    reconcile: F,
) -> Result<T, E>
where
    E: Classify,
    F: Future<Output = Result<T, E>>,
{
    let result = timed(metrics, controller, reconcile).await;
    if result.is_ok() {
        backoff.reset(key);
    }
    result
}

/// Like [`timed`], for reconciles that report some failures in status rather than return
/// them (so they are retried on their own schedule): the reconcile returns its result
/// label with its value, e.g. `("unpack_failed", action)`, counted once the whole
/// reconcile (status write included) is done.
pub async fn timed_with_label<T, E, F>(
    metrics: &ReconcileMetrics,
    controller: &str,
    reconcile: F,
) -> Result<T, E>
where
    E: Classify,
    F: Future<Output = Result<(&'static str, T), E>>,
{
    let timer = metrics.start(controller);
    match reconcile.await {
        Ok((label, value)) => {
            timer.finish(label);
            Ok(value)
        }
        Err(err) => {
            timer.finish(err.label());
            Err(err)
        }
    }
}

/// The [`Action`] after a failed reconcile of the object `name` (a `kind`): the error is
/// logged with its cause chain, then the object waits for a change when retrying cannot
/// help, or is retried after its next backoff delay. Call [`Backoff::reset`] on success.
pub fn retry_after<E>(backoff: &Backoff, kind: &str, name: &str, error: &E) -> Action
where
    E: Classify + std::error::Error + 'static,
{
    match retry_delay(backoff, kind, name, error) {
        Some(delay) => Action::requeue(delay),
        None => Action::await_change(),
    }
}

/// [`retry_after`] for a reconcile loop that is not a kube-runtime controller (one
/// singleton object): the delay before the next attempt, `None` to wait for a change.
pub fn retry_delay<E>(backoff: &Backoff, kind: &str, name: &str, error: &E) -> Option<Duration>
where
    E: Classify + std::error::Error + 'static,
{
    tracing::warn!(kind, name, error = %crate::error_chain(error), "reconcile failed");
    match error.retry() {
        crate::retry::Retry::WaitForChange => None,
        crate::retry::Retry::Backoff => Some(backoff.next_delay(name)),
    }
}

/// What a changed condition means to the people reading the object's Events: the one
/// rule every controller's [`announce`] follows is that a condition is news when its
/// status or reason changed (a message-only change is not); each controller says only
/// which of its conditions stay quiet and which changes are warnings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum News {
    /// No Event (a running commentary such as `Progressing`, or another controller's).
    Quiet,
    /// A Normal Event.
    Normal,
    /// A Warning Event.
    Warning,
}

impl News {
    /// The default: a condition that is `False` is a warning, any other is normal.
    pub fn warning_when_false(condition: &Condition) -> Self {
        if condition.status == crate::conditions::status::FALSE {
            Self::Warning
        } else {
            Self::Normal
        }
    }
}

/// The action of the Events [`announce`] publishes.
pub const ANNOUNCE_ACTION: &str = "Reconcile";

/// The note of the Event that tells `condition`: `<type>: <message>` (pure).
pub fn event_note(condition: &Condition) -> String {
    format!("{}: {}", condition.type_, condition.message)
}

/// Publishes an Event about `regarding` for each condition of `after` whose status or
/// reason differs from `before` and that `news` does not call [`News::Quiet`]; its reason
/// is the condition's, its note [`event_note`].
pub async fn announce(
    recorder: &Recorder,
    regarding: &ObjectReference,
    before: &[Condition],
    after: &[Condition],
    news: impl Fn(&Condition) -> News,
) {
    for (condition, news) in changed_conditions(before, after, news) {
        crate::events::publish(
            recorder,
            regarding,
            news == News::Warning,
            &condition.reason,
            ANNOUNCE_ACTION,
            event_note(condition),
        )
        .await;
    }
}

/// The conditions of `after` that [`announce`] reports, with what they are (pure).
pub fn changed_conditions<'a>(
    before: &[Condition],
    after: &'a [Condition],
    news: impl Fn(&Condition) -> News,
) -> Vec<(&'a Condition, News)> {
    after
        .iter()
        .filter(|condition| {
            crate::conditions::find(before, &condition.type_)
                .is_none_or(|p| p.status != condition.status || p.reason != condition.reason)
        })
        .map(|condition| (condition, news(condition)))
        .filter(|(_, news)| *news != News::Quiet)
        .collect()
}

/// The Event recorder of `controller` (the Events' reporting controller).
pub fn recorder(client: Client, controller: &str) -> Recorder {
    Recorder::new(client, controller)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::Retry;
    use prometheus::{Encoder, Registry, TextEncoder};

    #[derive(Debug, thiserror::Error)]
    #[error("the registry is down")]
    struct Down;

    impl Classify for Down {
        fn retry(&self) -> Retry {
            Retry::Backoff
        }
        fn label(&self) -> &'static str {
            "registry_down"
        }
    }

    /// Asserts that the exported metrics count `count` reconciles of `thing` with `result`.
    fn assert_counted(registry: &Registry, result: &str, count: u64) {
        let text = exported(registry);
        let line = format!(r#"x_reconcile_total{{controller="thing",result="{result}"}} {count}"#);
        assert!(text.contains(&line), "no {line} in:\n{text}");
    }

    fn exported(registry: &Registry) -> String {
        let mut text = Vec::new();
        TextEncoder::new()
            .encode(&registry.gather(), &mut text)
            .unwrap();
        String::from_utf8(text).unwrap()
    }

    /// Shaped like a real reconcile: returns early when there is nothing to do.
    async fn reconcile(nothing_to_do: bool, fail: bool) -> Result<Action, Down> {
        if nothing_to_do {
            return Ok(Action::await_change());
        }
        tokio::task::yield_now().await;
        if fail {
            Err(Down)
        } else {
            Ok(Action::await_change())
        }
    }

    #[tokio::test]
    async fn every_reconcile_is_recorded_early_returns_and_failures_included() {
        let registry = Registry::new();
        let metrics = ReconcileMetrics::register(&registry, "x").unwrap();
        timed(&metrics, "thing", reconcile(true, false))
            .await
            .unwrap();
        timed(&metrics, "thing", reconcile(false, false))
            .await
            .unwrap();
        assert!(
            timed(&metrics, "thing", reconcile(false, true))
                .await
                .is_err()
        );
        let text = exported(&registry);
        assert!(
            text.contains(r#"x_reconcile_duration_seconds_count{controller="thing"} 3"#),
            "{text}"
        );
        assert_counted(&registry, SUCCESS, 2);
        assert_counted(&registry, "registry_down", 1);
    }

    #[tokio::test]
    async fn a_failure_reported_in_status_counts_as_that_failure_once_status_is_written() {
        let registry = Registry::new();
        let metrics = ReconcileMetrics::register(&registry, "x").unwrap();
        let handled = timed_with_label(&metrics, "thing", async {
            Ok::<_, Down>(("unpack_failed", Action::await_change()))
        });
        assert!(handled.await.is_ok());
        // The status write after it failed: the reconcile failed.
        let unwritten = timed_with_label(&metrics, "thing", async {
            reconcile(false, true)
                .await
                .map(|action| ("unpack_failed", action))
        });
        assert!(unwritten.await.is_err());
        assert_counted(&registry, "unpack_failed", 1);
        assert_counted(&registry, "registry_down", 1);
    }

    #[tokio::test]
    async fn a_cancelled_reconcile_is_recorded_as_unfinished() {
        let registry = Registry::new();
        let metrics = ReconcileMetrics::register(&registry, "x").unwrap();
        let pending = timed(&metrics, "thing", async {
            std::future::pending::<()>().await;
            Ok::<_, Down>(())
        });
        // Poll once so the timer starts, then drop the reconcile.
        let _ = tokio::time::timeout(std::time::Duration::from_millis(1), pending).await;
        assert_counted(&registry, "unfinished", 1);
    }

    fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
            last_transition_time: crate::conditions::now(),
            observed_generation: None,
        }
    }

    #[test]
    fn only_status_or_reason_changes_are_news() {
        let before = [
            condition("Installed", "False", "InstallFailed", "forbidden: a"),
            condition("Healthy", "True", "Healthy", "ok"),
        ];
        let after = [
            // Same failure, new wording: no Event.
            condition("Installed", "False", "InstallFailed", "forbidden: b"),
            // Flipped: an Event.
            condition("Healthy", "False", "Unhealthy", "0/1 available"),
            // New and quiet: none.
            condition("Progressing", "True", "Applying", "phase 2"),
        ];
        let quiet_progress = |c: &Condition| match c.type_.as_str() {
            "Progressing" => News::Quiet,
            _ => News::warning_when_false(c),
        };
        let changed: Vec<(&str, News)> = changed_conditions(&before, &after, quiet_progress)
            .iter()
            .map(|(c, news)| (c.type_.as_str(), *news))
            .collect();
        assert_eq!(changed, [("Healthy", News::Warning)]);
        let first: Vec<News> = changed_conditions(&[], &before, News::warning_when_false)
            .into_iter()
            .map(|(_, news)| news)
            .collect();
        assert_eq!(first, [News::Warning, News::Normal]);
    }
}
