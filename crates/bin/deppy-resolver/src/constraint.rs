//! What a resolution must satisfy: the constraint kinds of the ActiveResolution API, as plain
//! values, and their checked form with parsed ranges and versions.

use std::fmt;

use fbc::{Gvk, PrereleasePolicy, Version, VersionRange};

use crate::error::ResolveError;

/// One constraint of a resolution request.
///
/// These mirror `ActiveResolution.spec.constraints` (`required`, `gvkRequired`, `prohibited`,
/// `installed`); the controller maps the API type to this one, and [`str::parse`] reads the
/// function form (`required("etcd", ">= 1.0.0", "stable")`). Ranges and versions are kept as
/// written and checked when the request is resolved, so that one bad entry is reported as
/// invalid input naming the constraint. An empty range or channel means "none", as in the
/// function form, where `""` fills an unused position.
///
/// `Display` prints the canonical function form, which also identifies the constraint in
/// explanations.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Constraint {
    /// A bundle of `package` must be selected, with a version in `version_range` and from
    /// `channel` when given.
    Required {
        /// Package name.
        package: String,
        /// Acceptable versions (Masterminds syntax, as OLM v1 users write them).
        version_range: Option<String>,
        /// The channel to choose from; without one, every channel is a candidate and the
        /// package's default channel is preferred.
        channel: Option<String>,
    },
    /// Some selected bundle must provide this API.
    GvkRequired {
        /// API group; empty for the core group.
        group: String,
        /// API version.
        version: String,
        /// Kind.
        kind: String,
    },
    /// No bundle of `package` (only those in `version_range`, when given) may be selected.
    Prohibited {
        /// Package name.
        package: String,
        /// The versions excluded; all when `None`.
        version_range: Option<String>,
    },
    /// `package` is installed at `version`: the resolution keeps it, either at that version
    /// or at a direct upgrade along the catalogs' replaces, skips and skipRange edges.
    Installed {
        /// Package name.
        package: String,
        /// The installed version (strict semver).
        version: String,
    },
}

impl Constraint {
    /// A [`Constraint::Required`] on `package` with an optional range and channel.
    pub fn required(package: &str, version_range: Option<&str>, channel: Option<&str>) -> Self {
        Self::Required {
            package: package.to_owned(),
            version_range: version_range.map(str::to_owned),
            channel: channel.map(str::to_owned),
        }
    }

    /// A [`Constraint::GvkRequired`] on an API.
    pub fn gvk_required(group: &str, version: &str, kind: &str) -> Self {
        Self::GvkRequired {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
        }
    }

    /// A [`Constraint::Prohibited`] on `package`, optionally only in a range.
    pub fn prohibited(package: &str, version_range: Option<&str>) -> Self {
        Self::Prohibited {
            package: package.to_owned(),
            version_range: version_range.map(str::to_owned),
        }
    }

    /// A [`Constraint::Installed`] of `package` at `version`.
    pub fn installed(package: &str, version: &str) -> Self {
        Self::Installed {
            package: package.to_owned(),
            version: version.to_owned(),
        }
    }

    /// The package the constraint is about; `None` for [`Constraint::GvkRequired`].
    pub fn package(&self) -> Option<&str> {
        match self {
            Self::Required { package, .. }
            | Self::Prohibited { package, .. }
            | Self::Installed { package, .. } => Some(package),
            Self::GvkRequired { .. } => None,
        }
    }

    /// Parses the ranges and versions and rejects empty names.
    pub(crate) fn check(&self) -> Result<Checked<'_>, ResolveError> {
        let invalid = |reason: &'static str| ResolveError::InvalidConstraint {
            constraint: self.to_string(),
            reason,
        };
        let range = |text: &Option<String>| match non_empty(text) {
            None => Ok(None),
            // User ranges follow Masterminds/semver, as OLM v1 reads them.
            Some(text) => VersionRange::parse(text, PrereleasePolicy::OptIn)
                .map(Some)
                .map_err(|source| ResolveError::InvalidVersionRange {
                    constraint: self.to_string(),
                    source,
                }),
        };
        if self.package().is_some_and(str::is_empty) {
            return Err(invalid("the package name is empty"));
        }
        let id = self.to_string();
        Ok(match self {
            Self::Required {
                package,
                version_range,
                channel,
            } => Checked::Required {
                id,
                package,
                range: range(version_range)?,
                channel: non_empty(channel),
            },
            Self::GvkRequired {
                group,
                version,
                kind,
            } => {
                if version.is_empty() || kind.is_empty() {
                    return Err(invalid("the API version and kind must not be empty"));
                }
                Checked::GvkRequired {
                    id,
                    gvk: Gvk {
                        group: group.clone(),
                        version: version.clone(),
                        kind: kind.clone(),
                    },
                }
            }
            Self::Prohibited {
                package,
                version_range,
            } => Checked::Prohibited {
                id,
                package,
                range: range(version_range)?,
            },
            Self::Installed { package, version } => Checked::Installed {
                version: Version::parse(version).map_err(|source| {
                    ResolveError::InvalidInstalledVersion {
                        constraint: self.to_string(),
                        source,
                    }
                })?,
                id,
                package,
            },
        })
    }
}

fn non_empty(text: &Option<String>) -> Option<&str> {
    text.as_deref().filter(|t| !t.is_empty())
}

impl fmt::Display for Constraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Required {
                package,
                version_range,
                channel,
            } => {
                write!(f, "required(\"{package}\"")?;
                match (non_empty(version_range), non_empty(channel)) {
                    (range, Some(channel)) => {
                        write!(f, ", \"{}\", \"{channel}\"", range.unwrap_or_default())?;
                    }
                    (Some(range), None) => write!(f, ", \"{range}\"")?,
                    (None, None) => {}
                }
                f.write_str(")")
            }
            Self::GvkRequired {
                group,
                version,
                kind,
            } => write!(f, "gvkRequired(\"{group}\", \"{version}\", \"{kind}\")"),
            Self::Prohibited {
                package,
                version_range,
            } => match non_empty(version_range) {
                Some(range) => write!(f, "prohibited(\"{package}\", \"{range}\")"),
                None => write!(f, "prohibited(\"{package}\")"),
            },
            Self::Installed { package, version } => {
                write!(f, "installed(\"{package}\", \"{version}\")")
            }
        }
    }
}

/// A constraint whose ranges and versions parsed, with its canonical form as `id`.
#[derive(Debug)]
pub(crate) enum Checked<'c> {
    Required {
        id: String,
        package: &'c str,
        range: Option<VersionRange>,
        channel: Option<&'c str>,
    },
    GvkRequired {
        id: String,
        gvk: Gvk,
    },
    Prohibited {
        id: String,
        package: &'c str,
        range: Option<VersionRange>,
    },
    Installed {
        id: String,
        package: &'c str,
        version: Version,
    },
}

impl Checked<'_> {
    /// The canonical function form: unique per distinct constraint.
    pub(crate) fn id(&self) -> &str {
        match self {
            Self::Required { id, .. }
            | Self::GvkRequired { id, .. }
            | Self::Prohibited { id, .. }
            | Self::Installed { id, .. } => id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_the_function_form_with_unused_trailing_arguments_left_out() {
        assert_eq!(
            Constraint::required("etcd", None, None).to_string(),
            r#"required("etcd")"#
        );
        assert_eq!(
            Constraint::required("etcd", Some(">=1.0.0"), None).to_string(),
            r#"required("etcd", ">=1.0.0")"#
        );
        assert_eq!(
            Constraint::required("etcd", None, Some("stable")).to_string(),
            r#"required("etcd", "", "stable")"#
        );
        assert_eq!(
            Constraint::required("etcd", Some(""), Some("")).to_string(),
            r#"required("etcd")"#
        );
        assert_eq!(
            Constraint::gvk_required("", "v1", "ConfigMap").to_string(),
            r#"gvkRequired("", "v1", "ConfigMap")"#
        );
        assert_eq!(
            Constraint::prohibited("etcd", Some("<1.0.0")).to_string(),
            r#"prohibited("etcd", "<1.0.0")"#
        );
        assert_eq!(
            Constraint::installed("etcd", "0.9.0").to_string(),
            r#"installed("etcd", "0.9.0")"#
        );
    }

    #[test]
    fn check_rejects_a_bad_range_naming_the_constraint() {
        let err = Constraint::required("etcd", Some(">=one"), None)
            .check()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"failed to parse the version range of required("etcd", ">=one")"#
        );
        assert!(err.category().is_invalid_input());
    }

    #[test]
    fn check_rejects_an_installed_version_that_is_not_semver() {
        let err = Constraint::installed("etcd", "v1").check().unwrap_err();
        assert!(matches!(err, ResolveError::InvalidInstalledVersion { .. }));
    }

    #[test]
    fn check_rejects_an_empty_package_and_an_empty_kind() {
        assert!(matches!(
            Constraint::required("", None, None).check(),
            Err(ResolveError::InvalidConstraint { .. })
        ));
        assert!(matches!(
            Constraint::gvk_required("g", "v1", "").check(),
            Err(ResolveError::InvalidConstraint { .. })
        ));
    }

    #[test]
    fn check_treats_empty_range_and_channel_as_absent() {
        let constraint = Constraint::required("etcd", Some(""), Some(""));
        match constraint.check().unwrap() {
            Checked::Required { range, channel, .. } => {
                assert!(range.is_none());
                assert!(channel.is_none());
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}
