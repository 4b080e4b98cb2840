//! How long certificates live and how early they are replaced.

use std::time::Duration;

use crate::Error;

/// Lifetimes of the CA and serving certificates.
///
/// The same `validity` applies to CAs and serving certificates, and a serving certificate
/// never outlives the CA that signed it, so serving certificates are normally replaced
/// together with their CA; `renew_before` is the overlap during which the next CA is
/// already trusted by every caBundle while the current one still signs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Lifetime of every new certificate.
    pub validity: Duration,
    /// A CA with less than this left gets a successor; a serving certificate with less than
    /// this left is reissued when that would extend it. Must be non-zero and shorter than
    /// `validity`, or rotation could not overlap (or would never stop).
    pub renew_before: Duration,
}

const DAY: Duration = Duration::from_secs(24 * 60 * 60);

impl Default for Policy {
    /// Two years like OLM v0, renewed 90 days ahead. 90 days (rather than validity / 3,
    /// about 243 days) is far longer than any plausible outage of the controller or lag of
    /// a webhook configuration, CRD or APIService picking up a new caBundle, yet keeps each
    /// CA signing for most of its life, so rotations (and the reissue of every serving
    /// certificate they bring) stay rare.
    fn default() -> Self {
        Self {
            validity: 730 * DAY,
            renew_before: 90 * DAY,
        }
    }
}

impl Policy {
    /// A policy for `validity` that renews when a third of it is left: the shape used by
    /// tests and short-lived setups, where an overlap of a third leaves ample time.
    pub fn for_validity(validity: Duration) -> Policy {
        Policy {
            validity,
            renew_before: validity / 3,
        }
    }

    /// Rejects policies that cannot overlap.
    pub(crate) fn validate(&self) -> Result<(), Error> {
        if self.renew_before.is_zero() {
            return Err(Error::InvalidPolicy {
                reason: "renew_before is zero, so a CA would be replaced only once expired",
            });
        }
        if self.renew_before >= self.validity {
            return Err(Error::InvalidPolicy {
                reason: "renew_before is not shorter than validity, so every new CA would \
                         immediately need a successor",
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_two_years_renewed_ninety_days_ahead() {
        let p = Policy::default();
        assert_eq!(p.validity, Duration::from_secs(730 * 86_400));
        assert_eq!(p.renew_before, Duration::from_secs(90 * 86_400));
        assert!(p.validate().is_ok());
    }

    #[test]
    fn for_validity_renews_at_a_third() {
        let p = Policy::for_validity(Duration::from_secs(90));
        assert_eq!(p.renew_before, Duration::from_secs(30));
    }

    #[test]
    fn policies_without_overlap_are_rejected() {
        let zero = Policy {
            validity: DAY,
            renew_before: Duration::ZERO,
        };
        let too_long = Policy {
            validity: DAY,
            renew_before: DAY,
        };
        assert!(zero.validate().is_err());
        assert!(too_long.validate().is_err());
    }
}
