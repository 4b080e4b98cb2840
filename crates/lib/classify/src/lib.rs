//! How a failure should be retried: the one vocabulary every crate of the project uses,
//! from the content library that fetches sources to the controllers that act on the answer.
//! It has no dependencies, so a library can classify its errors without pulling in the
//! controller toolkit (`kit`, which turns a [`Retry`] into a kube-runtime `Action`).

/// What to do after a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Something outside the object failed (API server, registry, network): retry with
    /// per-object exponential backoff.
    Backoff,
    /// Retrying cannot help (an invalid spec, content that will never unpack): wait until
    /// the object or something it references changes.
    WaitForChange,
}

/// Implemented by every error a reconcile can end with.
pub trait Classify {
    /// What to do after this error.
    fn retry(&self) -> Retry;

    /// A stable snake_case label for metrics (e.g. `unpack_failed`).
    fn label(&self) -> &'static str;
}

impl Retry {
    /// [`Retry::WaitForChange`] when `terminal`, else [`Retry::Backoff`].
    pub fn unless_terminal(terminal: bool) -> Self {
        if terminal {
            Self::WaitForChange
        } else {
            Self::Backoff
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_failures_wait_for_a_change() {
        assert_eq!(Retry::unless_terminal(true), Retry::WaitForChange);
        assert_eq!(Retry::unless_terminal(false), Retry::Backoff);
    }
}
