//! Errors of [`crate::decide`]: only for input no caller should send and for failures of the
//! crypto library. Malformed stored data is never an error; it is replaced.

use classify::{Classify, Retry};

/// Why [`crate::decide`] could not produce a decision.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The policy cannot give an overlap: see [`crate::Policy`].
    #[error("invalid certificate policy: {reason}")]
    InvalidPolicy {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A serving certificate was requested for no name at all; no client could verify it.
    #[error("serving certificate for Secret {secret} requested without any DNS name")]
    NoDnsNames {
        /// The Secret the certificate was for.
        secret: String,
    },
    /// A validity time does not fit in a certificate (before 1970, or beyond year 9999).
    #[error("failed to compute the {what} time of a certificate: out of range")]
    Time {
        /// Which time (e.g. "notAfter").
        what: &'static str,
    },
    /// rcgen refused to generate a key or certificate (for example a DNS name that is not
    /// ASCII).
    #[error("failed to generate {what}")]
    Generate {
        /// What was being generated (e.g. "the CA certificate").
        what: String,
        /// rcgen's reason.
        #[source]
        source: rcgen::Error,
    },
    /// A certificate just generated could not be read back: a bug in this crate or rcgen.
    #[error("failed to read back the freshly generated {what}: {detail}")]
    Reread {
        /// What was generated.
        what: String,
        /// Why it could not be read.
        detail: String,
    },
}

impl Classify for Error {
    fn retry(&self) -> Retry {
        match self {
            // Wrong input stays wrong until the object (or the operator's flags) change.
            Self::InvalidPolicy { .. } | Self::NoDnsNames { .. } | Self::Time { .. } => {
                Retry::WaitForChange
            }
            // Key generation draws randomness: a retry may succeed.
            Self::Generate { .. } | Self::Reread { .. } => Retry::Backoff,
        }
    }

    fn label(&self) -> &'static str {
        match self {
            Self::InvalidPolicy { .. } => "invalid_certificate_policy",
            Self::NoDnsNames { .. } => "no_dns_names",
            Self::Time { .. } => "certificate_time_out_of_range",
            Self::Generate { .. } => "certificate_generation_failed",
            Self::Reread { .. } => "certificate_reread_failed",
        }
    }
}
