//! What a decision changed, worded for Kubernetes Events.

use std::fmt;
use std::time::SystemTime;

use crate::x509::rfc3339;

/// One change made by [`crate::decide`]. `Display` is the Event message; [`Event::reason`]
/// is the Event reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A new CA replaced a missing or unusable one (rule 1). Serving certificates signed by
    /// the old CA are reissued in the same decision.
    CaCreated {
        /// When the new CA expires.
        not_after: SystemTime,
        /// Why there was no usable CA.
        reason: CaReason,
    },
    /// The current CA is close to expiry; its successor was created and added to the trust
    /// bundle, and takes over once every caBundle holds it (rule 2).
    CaRenewalStarted {
        /// When the current CA expires.
        current_not_after: SystemTime,
        /// When the successor expires.
        next_not_after: SystemTime,
    },
    /// The successor CA now signs serving certificates (rule 3).
    CaPromoted {
        /// When the promoted CA expires.
        not_after: SystemTime,
    },
    /// Expired CAs were removed from the trust bundle (rule 4).
    CaExpiredDropped {
        /// How many.
        count: usize,
    },
    /// A serving certificate was (re)issued (rule 5).
    ServingIssued {
        /// The serving Secret's name, from the request.
        secret: String,
        /// Why the previous one could not be kept.
        reason: IssueReason,
        /// When the new certificate expires.
        not_after: SystemTime,
    },
}

/// Why a new CA had to be created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CaReason {
    /// No CA was stored.
    Missing,
    /// The stored CA could not be used; the text says why (never key material).
    Invalid(String),
    /// The stored CA had expired.
    Expired {
        /// When it expired.
        not_after: SystemTime,
    },
}

/// Why a serving certificate was (re)issued.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IssueReason {
    /// There was no serving Secret, or it lacked `tls.crt` / `tls.key`.
    Missing,
    /// The certificate's names differ from the requested DNS names.
    NamesChanged,
    /// The certificate is not signed by the current CA.
    SignerChanged,
    /// The certificate was about to expire (or had) and a new one lives longer.
    ExpiringSoon,
    /// The stored certificate or key could not be used; the text says why.
    Invalid(String),
}

impl Event {
    /// The Kubernetes Event reason (PascalCase, stable).
    pub fn reason(&self) -> &'static str {
        match self {
            Self::CaCreated { .. } => "WebhookCACreated",
            Self::CaRenewalStarted { .. } => "WebhookCARenewalStarted",
            Self::CaPromoted { .. } => "WebhookCAPromoted",
            Self::CaExpiredDropped { .. } => "WebhookCAExpiredDropped",
            Self::ServingIssued { .. } => "ServingCertificateIssued",
        }
    }

    /// Whether the Event should be a Warning: stored data had to be replaced because it was
    /// broken or had expired, which means something outside the normal rotation happened
    /// (an edit, or a controller that was down for longer than the overlap).
    pub fn is_warning(&self) -> bool {
        matches!(
            self,
            Self::CaCreated {
                reason: CaReason::Invalid(_) | CaReason::Expired { .. },
                ..
            } | Self::ServingIssued {
                reason: IssueReason::Invalid(_),
                ..
            }
        )
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::CaCreated { not_after, reason } => write!(
                f,
                "created a new webhook CA valid until {} because {reason}; serving certificates \
                 are reissued and every caBundle gets the new CA",
                rfc3339(*not_after)
            ),
            Self::CaRenewalStarted {
                current_not_after,
                next_not_after,
            } => write!(
                f,
                "the webhook CA expires at {}: created its successor (valid until {}) and added \
                 it to the trust bundle; it starts signing once every webhook configuration, \
                 CRD and APIService caBundle holds it",
                rfc3339(*current_not_after),
                rfc3339(*next_not_after)
            ),
            Self::CaPromoted { not_after } => write!(
                f,
                "the successor webhook CA (valid until {}) now signs serving certificates",
                rfc3339(*not_after)
            ),
            Self::CaExpiredDropped { count: 1 } => {
                f.write_str("removed 1 expired CA certificate from the trust bundle")
            }
            Self::CaExpiredDropped { count } => {
                write!(
                    f,
                    "removed {count} expired CA certificates from the trust bundle"
                )
            }
            Self::ServingIssued {
                secret,
                reason,
                not_after,
            } => write!(
                f,
                "issued a serving certificate for Secret {secret}, valid until {}, because {reason}",
                rfc3339(*not_after)
            ),
        }
    }
}

impl fmt::Display for CaReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing => f.write_str("none was stored"),
            Self::Invalid(why) => write!(f, "the stored one was unusable: {why}"),
            Self::Expired { not_after } => {
                write!(f, "the stored one expired at {}", rfc3339(*not_after))
            }
        }
    }
}

impl fmt::Display for IssueReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing => f.write_str("none existed"),
            Self::NamesChanged => f.write_str("the Service's DNS names changed"),
            Self::SignerChanged => f.write_str("the previous one was not signed by the current CA"),
            Self::ExpiringSoon => f.write_str("the previous one was about to expire"),
            Self::Invalid(why) => write!(f, "the stored one was unusable: {why}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    #[test]
    fn messages_name_the_secret_the_reason_and_the_expiry() {
        let event = Event::ServingIssued {
            secret: "webhook-cert".to_owned(),
            reason: IssueReason::Invalid("tls.key does not match tls.crt".to_owned()),
            not_after: UNIX_EPOCH + Duration::from_secs(86_400),
        };
        assert_eq!(
            event.to_string(),
            "issued a serving certificate for Secret webhook-cert, valid until \
             1970-01-02T00:00:00Z, because the stored one was unusable: tls.key does not \
             match tls.crt"
        );
        assert!(event.is_warning());
        assert_eq!(event.reason(), "ServingCertificateIssued");
    }

    #[test]
    fn routine_rotation_is_not_a_warning() {
        let t = UNIX_EPOCH;
        assert!(!Event::CaPromoted { not_after: t }.is_warning());
        assert!(
            !Event::CaCreated {
                not_after: t,
                reason: CaReason::Missing
            }
            .is_warning()
        );
        assert!(
            Event::CaCreated {
                not_after: t,
                reason: CaReason::Expired { not_after: t }
            }
            .is_warning()
        );
    }
}
