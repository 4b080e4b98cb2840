//! Evaluating constraints against bundles: [`Constraint::matches`], and why it can fail.
//!
//! Kept apart from the constraint types because a bundle carries constraints among its
//! properties: the types sit below the catalog model, and evaluating them needs it.

use crate::constraint::{Constraint, ConstraintExpr};
use crate::model::Bundle;

/// Why a constraint cannot be evaluated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConstraintError {
    /// CEL rules are not evaluated by this implementation.
    #[error("cel constraints are not supported (rule {rule:?})")]
    CelUnsupported {
        /// The rule text.
        rule: String,
    },
    /// The constraint kind is unknown.
    #[error("unknown olm.constraint kind: {value}")]
    Unknown {
        /// The constraint as written.
        value: String,
    },
}

impl Constraint {
    /// Whether `bundle` satisfies the constraint.
    pub fn matches(&self, bundle: &Bundle) -> Result<bool, ConstraintError> {
        self.expr.matches(bundle)
    }
}

impl ConstraintExpr {
    /// Whether `bundle` satisfies the predicate.
    pub fn matches(&self, bundle: &Bundle) -> Result<bool, ConstraintError> {
        Ok(match self {
            ConstraintExpr::Gvk(gvk) => bundle.provided_gvks().any(|g| g == gvk),
            ConstraintExpr::Package {
                package_name,
                version_range,
            } => bundle.package == *package_name && version_range.matches(&bundle.version),
            ConstraintExpr::All(children) => {
                for child in children {
                    if !child.matches(bundle)? {
                        return Ok(false);
                    }
                }
                true
            }
            ConstraintExpr::Any(children) => {
                for child in children {
                    if child.matches(bundle)? {
                        return Ok(true);
                    }
                }
                false
            }
            ConstraintExpr::Not(children) => {
                for child in children {
                    if child.matches(bundle)? {
                        return Ok(false);
                    }
                }
                true
            }
            ConstraintExpr::Cel { rule } => {
                return Err(ConstraintError::CelUnsupported { rule: rule.clone() });
            }
            ConstraintExpr::Unknown(value) => {
                return Err(ConstraintError::Unknown {
                    value: value.to_string(),
                });
            }
        })
    }
}
