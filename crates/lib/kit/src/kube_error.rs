//! The error of one call to the API server, named by what was attempted on which object.
//!
//! Every controller reports a failed API call the same way ("failed to read Secret
//! ns/name"), so this is one type rather than a variant copied into each binary's error
//! enum. The API error stays the [`source`](std::error::Error::source) and is not repeated
//! in the message: [`crate::error_chain`] prints it after.

use classify::{Classify, Retry};

/// A failed call to the API server: "failed to {verb} {object}", with the API error as its
/// source.
#[derive(Debug, thiserror::Error)]
#[error("failed to {verb} {object}")]
pub struct KubeCallError {
    /// What was attempted, e.g. `read` or `update the status of`.
    pub verb: &'static str,
    /// The object, kind first, e.g. `ConfigMap rukpak-system/x`.
    pub object: String,
    /// Why.
    #[source]
    pub source: kube::Error,
}

impl KubeCallError {
    /// The error of trying to `verb` `object`; for `map_err(|source| ...)`, so that the
    /// object's name is only formatted when the call failed.
    pub fn new(verb: &'static str, object: impl Into<String>, source: kube::Error) -> Self {
        Self {
            verb,
            object: object.into(),
            source,
        }
    }
}

impl Classify for KubeCallError {
    /// The API server, the network or a race failed, not the object: retrying with
    /// backoff is what can help.
    fn retry(&self) -> Retry {
        Retry::Backoff
    }

    fn label(&self) -> &'static str {
        "kube"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_the_call_and_leaves_the_cause_to_the_chain() {
        let err = KubeCallError::new(
            "read",
            "Secret ns/s",
            kube::Error::LinesCodecMaxLineLengthExceeded,
        );
        assert_eq!(err.to_string(), "failed to read Secret ns/s");
        assert!(std::error::Error::source(&err).is_some());
        assert_eq!(err.retry(), Retry::Backoff);
        assert_eq!(err.label(), "kube");
    }
}
