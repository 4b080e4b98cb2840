//! Retry policy.
//!
//! Controllers classify every error ([`Classify`], from the dependency-free `classify`
//! crate): what retrying cannot fix waits for a change (with a Warning event); anything
//! else is retried with per-object exponential backoff plus jitter, so that a failing
//! dependency is not hammered by every object in lock-step.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use kube::runtime::controller::Action;
use rand::Rng;

pub use classify::{Classify, Retry};

/// Per-object exponential backoff with full jitter.
#[derive(Debug)]
pub struct Backoff {
    base: Duration,
    max: Duration,
    attempts: Mutex<HashMap<String, u32>>,
}

impl Backoff {
    /// Creates a policy whose first retry waits about `base` and never more than `max`.
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            base,
            max,
            attempts: Mutex::new(HashMap::new()),
        }
    }

    /// Records a failure of `key` and returns how long to wait before retrying: a random
    /// time in [d/2, d] where d = base * 2^(failures-1), capped at `max`.
    pub fn next_delay(&self, key: &str) -> Duration {
        let attempt = {
            let mut attempts = self.attempts.lock().unwrap_or_else(PoisonError::into_inner);
            let n = attempts.entry(key.to_owned()).or_insert(0);
            *n = n.saturating_add(1);
            *n
        };
        let exp = attempt.saturating_sub(1).min(20);
        let ceiling = self.base.saturating_mul(1 << exp).min(self.max);
        let floor = ceiling / 2;
        let spread = ceiling.saturating_sub(floor).as_millis() as u64;
        let jitter = if spread == 0 {
            0
        } else {
            rand::rng().random_range(0..=spread)
        };
        floor + Duration::from_millis(jitter)
    }

    /// Forgets `key`'s failures after a success.
    pub fn reset(&self, key: &str) {
        self.attempts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }

    /// The [`Action`] after an error of `key`: wait for a change, or requeue after the
    /// next backoff delay.
    pub fn action_for(&self, key: &str, retry: Retry) -> Action {
        match retry {
            Retry::WaitForChange => Action::await_change(),
            Retry::Backoff => Action::requeue(self.next_delay(key)),
        }
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new(Duration::from_secs(1), Duration::from_secs(300))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_exponentially_within_jitter_bounds() {
        let backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(60));
        for attempt in 1..=8u32 {
            let delay = backoff.next_delay("ns/a");
            let ceiling = Duration::from_secs(1 << (attempt - 1)).min(Duration::from_secs(60));
            assert!(
                delay <= ceiling,
                "attempt {attempt}: {delay:?} > {ceiling:?}"
            );
            assert!(
                delay >= ceiling / 2,
                "attempt {attempt}: {delay:?} < {:?}",
                ceiling / 2
            );
        }
    }

    #[test]
    fn backoff_is_per_object_and_resets_after_success() {
        let backoff = Backoff::new(Duration::from_secs(10), Duration::from_secs(1000));
        for _ in 0..5 {
            backoff.next_delay("a");
        }
        assert!(
            backoff.next_delay("b") <= Duration::from_secs(10),
            "b is unaffected by a"
        );
        assert!(
            backoff.next_delay("a") >= Duration::from_secs(80),
            "a has backed off"
        );
        backoff.reset("a");
        assert!(backoff.next_delay("a") <= Duration::from_secs(10));
    }

    #[test]
    fn invalid_spec_waits_for_a_change() {
        let backoff = Backoff::default();
        assert_eq!(
            backoff.action_for("a", Retry::WaitForChange),
            Action::await_change()
        );
        assert_ne!(
            backoff.action_for("a", Retry::Backoff),
            Action::await_change()
        );
    }
}
