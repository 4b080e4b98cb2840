//! Kubernetes versions, as API servers report them and as CSVs' `minKubeVersion` names them.

use std::fmt;
use std::str::FromStr;

/// A Kubernetes release: major, minor and patch.
///
/// Parsing is tolerant, as OLM's is: a leading `v`, a missing minor or patch (taken as 0),
/// and anything after the numbers (`-eks-5e0fdde`, `+k3s1`) are accepted, so both an API
/// server's `gitVersion` (`v1.36.4+k3s1`) and a CSV's `minKubeVersion` (`1.25`) read. The
/// suffix is ignored in comparisons: a vendor build of 1.36.4 is 1.36.4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KubeVersion {
    /// Major version.
    pub major: u64,
    /// Minor version.
    pub minor: u64,
    /// Patch version.
    pub patch: u64,
}

/// A string that is not a Kubernetes version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "failed to read {text:?} as a Kubernetes version: expected MAJOR.MINOR[.PATCH], e.g. 1.36.4"
)]
pub struct KubeVersionError {
    text: String,
}

impl KubeVersion {
    /// The version `major.minor.patch`.
    pub const fn new(major: u64, minor: u64, patch: u64) -> Self {
        Self {
            major,
            minor,
            patch,
        }
    }
}

impl FromStr for KubeVersion {
    type Err = KubeVersionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || KubeVersionError {
            text: text.to_owned(),
        };
        let trimmed = text.trim();
        let trimmed = trimmed.strip_prefix(['v', 'V']).unwrap_or(trimmed);
        let numbers = trimmed
            .split(['-', '+'])
            .next()
            .filter(|n| !n.is_empty())
            .ok_or_else(error)?;
        let mut parts = numbers.split('.');
        let mut next = |required: bool| -> Result<u64, KubeVersionError> {
            match parts.next() {
                // Digits only: `u64::from_str` would also take a leading `+`.
                Some(part) if !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) => {
                    part.parse().map_err(|_| error())
                }
                None if !required => Ok(0),
                _ => Err(error()),
            }
        };
        let version = Self::new(next(true)?, next(false)?, next(false)?);
        if parts.next().is_some() {
            return Err(error());
        }
        Ok(version)
    }
}

/// Why a bundle cannot run on a cluster, from its CSV's `minKubeVersion`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unfit<'a> {
    /// The bundle needs at least this version, which is newer than the cluster's.
    NeedsNewer(KubeVersion),
    /// The bundle's `minKubeVersion` is not a version; OLM does not install such a CSV.
    Unreadable(&'a str),
}

/// Whether `bundle` can run on a cluster at `cluster`, by the `minKubeVersion` of its
/// `olm.csv.metadata` property; `None` when it can (or states no minimum).
pub(crate) fn unfit(bundle: &fbc::Bundle, cluster: KubeVersion) -> Option<Unfit<'_>> {
    let minimum = bundle.min_kube_version()?.trim();
    if minimum.is_empty() {
        return None;
    }
    match minimum.parse::<KubeVersion>() {
        Ok(minimum) if minimum > cluster => Some(Unfit::NeedsNewer(minimum)),
        Ok(_) => None,
        Err(_) => Some(Unfit::Unreadable(minimum)),
    }
}

impl fmt::Display for KubeVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_server_and_csv_spellings_read_as_major_minor_patch() {
        for (text, expected) in [
            ("v1.36.4", KubeVersion::new(1, 36, 4)),
            ("1.36.4", KubeVersion::new(1, 36, 4)),
            ("v1.30.2+k3s1", KubeVersion::new(1, 30, 2)),
            ("v1.29.1-eks-5e0fdde", KubeVersion::new(1, 29, 1)),
            ("1.25", KubeVersion::new(1, 25, 0)),
            (" 1 ", KubeVersion::new(1, 0, 0)),
        ] {
            assert_eq!(text.parse::<KubeVersion>(), Ok(expected), "{text}");
        }
    }

    #[test]
    fn anything_else_is_refused_with_the_expected_form() {
        for text in ["", "v", "latest", "1..2", "1.2.3.4", "1.x", "+1.2"] {
            let err = text.parse::<KubeVersion>().unwrap_err();
            assert!(
                err.to_string().contains("MAJOR.MINOR[.PATCH]"),
                "{text}: {err}"
            );
        }
    }

    #[test]
    fn vendor_suffixes_do_not_count_in_comparisons() {
        let eks: KubeVersion = "v1.36.4-eks-1".parse().unwrap();
        assert_eq!(eks, KubeVersion::new(1, 36, 4));
        assert!(KubeVersion::new(1, 40, 0) > eks);
        assert_eq!(eks.to_string(), "1.36.4");
    }
}
