//! Why a resolution failed: invalid input, unsatisfiable constraints, or a solver fault.

use std::fmt;

use crate::stats::Stats;

/// A request that no selection satisfies, explained by the constraints that rule every
/// selection out.
///
/// The explanation is minimal (dropping any line would make the rest satisfiable) and in a
/// deterministic order: the request's constraints first, then bundles in the order they were
/// discovered, then the uniqueness rules. `Display` prints the summary, one sentence per line,
/// then deppy's header and one constraint per line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsatisfiable {
    /// Sentences that say what a person can change, before the solver's explanation: for
    /// each installed package involved, the versions its upgrade graph allows and what rules
    /// them out (e.g. `package memcached-operator is installed at 0.2.0; the upgrade graph
    /// allows 0.2.0 (stay) or 0.3.0 from it, and none of these is in range <0.2.0 of channel
    /// stable`). Empty when no installed package is involved.
    pub summary: Vec<String>,
    /// One message per constraint, worded as OLM words them.
    pub explanation: Vec<String>,
    /// Size of the problem and time spent finding that it has no solution.
    pub stats: Stats,
}

impl fmt::Display for Unsatisfiable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for sentence in &self.summary {
            writeln!(f, "{sentence}")?;
        }
        f.write_str("constraints not satisfiable")?;
        for (i, line) in self.explanation.iter().enumerate() {
            f.write_str(if i == 0 { ":\n" } else { "\n" })?;
            f.write_str(line)?;
        }
        Ok(())
    }
}

impl std::error::Error for Unsatisfiable {}

/// Why [`crate::Resolver::resolve`] returned no resolution.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// A constraint's version range does not parse.
    #[error("failed to parse the version range of {constraint}")]
    InvalidVersionRange {
        /// The constraint, in function form.
        constraint: String,
        /// What is wrong with the range.
        #[source]
        source: fbc::RangeError,
    },
    /// An `installed` constraint's version is not semver.
    #[error("failed to parse the installed version of {constraint}")]
    InvalidInstalledVersion {
        /// The constraint, in function form.
        constraint: String,
        /// What is wrong with the version.
        #[source]
        source: semver::Error,
    },
    /// A constraint is structurally incomplete.
    #[error("failed to use constraint {constraint}: {reason}")]
    InvalidConstraint {
        /// The constraint, in function form.
        constraint: String,
        /// What is missing.
        reason: &'static str,
    },
    /// The request names a source that is not among the catalogs.
    #[error("failed to find catalog {name:?} named in the request's sources")]
    UnknownSource {
        /// The name requested.
        name: String,
    },
    /// Two catalogs have the same name, so selections could not say which one they mean.
    #[error("failed to add catalog {name:?}: another catalog has the same name")]
    DuplicateCatalog {
        /// The shared name.
        name: String,
    },
    /// A catalog name cannot appear in a `catalog:package:version:channel` selection.
    #[error("failed to add catalog {name:?}: {reason}")]
    InvalidCatalogName {
        /// The name given.
        name: String,
        /// Why it cannot be used.
        reason: &'static str,
    },
    /// No selection satisfies the constraints. Boxed: the explanation and statistics are
    /// large, and every other outcome is small.
    #[error(transparent)]
    NotSatisfiable(Box<Unsatisfiable>),
    /// The solver rejected the problem this crate built, or failed; a bug, not bad input.
    #[error("failed to solve the resolution problem")]
    Solver(#[source] deppy::SolveError),
}

/// The broad kind of a [`ResolveError`], for condition reasons and metric labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCategory {
    /// The request or the catalog set is wrong; retrying without a change will not help.
    InvalidInput,
    /// The request is well formed but no selection satisfies it.
    NotSatisfiable,
    /// A fault inside the resolver or solver.
    Internal,
}

impl ErrorCategory {
    /// Whether the request (or catalog set) itself is at fault.
    pub fn is_invalid_input(self) -> bool {
        self == Self::InvalidInput
    }

    /// A stable lowercase label, e.g. for a metric's `result` label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidInput => "invalid_input",
            Self::NotSatisfiable => "not_satisfiable",
            Self::Internal => "internal",
        }
    }
}

impl ResolveError {
    /// Which broad kind of failure this is.
    pub fn category(&self) -> ErrorCategory {
        match self {
            Self::InvalidVersionRange { .. }
            | Self::InvalidInstalledVersion { .. }
            | Self::InvalidConstraint { .. }
            | Self::UnknownSource { .. }
            | Self::DuplicateCatalog { .. }
            | Self::InvalidCatalogName { .. } => ErrorCategory::InvalidInput,
            Self::NotSatisfiable(_) => ErrorCategory::NotSatisfiable,
            Self::Solver(_) => ErrorCategory::Internal,
        }
    }

    /// The explanation, when the constraints are unsatisfiable.
    pub fn unsatisfiable(&self) -> Option<&Unsatisfiable> {
        match self {
            Self::NotSatisfiable(unsatisfiable) => Some(unsatisfiable.as_ref()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsatisfiable_prints_the_header_then_one_constraint_per_line() {
        let mut unsatisfiable = Unsatisfiable {
            summary: Vec::new(),
            explanation: vec!["a is mandatory".to_owned(), "a is prohibited".to_owned()],
            stats: Stats::default(),
        };
        assert_eq!(
            unsatisfiable.to_string(),
            "constraints not satisfiable:\na is mandatory\na is prohibited"
        );
        unsatisfiable.summary = vec!["package a is installed at 1.0.0; ...".to_owned()];
        assert_eq!(
            unsatisfiable.to_string(),
            "package a is installed at 1.0.0; ...\n\
             constraints not satisfiable:\na is mandatory\na is prohibited"
        );
    }

    #[test]
    fn categories_separate_bad_input_from_unsatisfiable_requests() {
        let unknown = ResolveError::UnknownSource { name: "x".into() };
        assert_eq!(unknown.category(), ErrorCategory::InvalidInput);
        assert_eq!(unknown.category().as_str(), "invalid_input");
        let unsat = ResolveError::NotSatisfiable(Box::new(Unsatisfiable {
            summary: Vec::new(),
            explanation: Vec::new(),
            stats: Stats::default(),
        }));
        assert_eq!(unsat.category(), ErrorCategory::NotSatisfiable);
        assert!(unsat.unsatisfiable().is_some());
        assert!(unknown.unsatisfiable().is_none());
    }
}
