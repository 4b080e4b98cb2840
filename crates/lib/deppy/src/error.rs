//! Errors: invalid input, unsatisfiable problems, and solver failures.

use std::fmt;

use crate::model::{AppliedConstraint, Identifier};

/// A constraint that names a variable the input does not contain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownReference {
    /// The variable carrying the constraint.
    pub subject: Identifier,
    /// The identifier that no variable has.
    pub referenced: Identifier,
}

impl fmt::Display for UnknownReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "variable {:?} referenced by {:?} but not provided",
            self.referenced.as_str(),
            self.subject.as_str()
        )
    }
}

/// The constraints that together rule out every solution.
///
/// The list is minimal when the solver's budget for shrinking it sufficed (see
/// [`crate::Solver`]), and is ordered like the input: by variable, then by the variable's
/// constraint order. Its `Display` form is deppy's: a header, then one constraint per line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NotSatisfiable(pub Vec<AppliedConstraint>);

impl NotSatisfiable {
    /// The constraints in the explanation.
    pub fn constraints(&self) -> &[AppliedConstraint] {
        &self.0
    }
}

impl fmt::Display for NotSatisfiable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("constraints not satisfiable")?;
        for (i, applied) in self.0.iter().enumerate() {
            f.write_str(if i == 0 { ":\n" } else { "\n" })?;
            write!(f, "{applied}")?;
        }
        Ok(())
    }
}

impl std::error::Error for NotSatisfiable {}

fn list<T: fmt::Display>(items: &[T]) -> String {
    let mut out = String::new();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str("; ");
        }
        out.push_str(&item.to_string());
    }
    out
}

/// Why a problem could not be solved.
#[derive(Debug, thiserror::Error)]
pub enum SolveError {
    /// Two variables share an identifier.
    #[error("duplicate identifier {:?} in input", .0.as_str())]
    DuplicateIdentifier(Identifier),
    /// Constraints name variables that are not in the input, listed in input order.
    #[error("{}", list(.0))]
    UnknownReferences(Vec<UnknownReference>),
    /// No selection satisfies every constraint.
    #[error(transparent)]
    NotSatisfiable(#[from] NotSatisfiable),
    /// The input is too large to number its literals in 32 bits.
    #[error("problem too large: {0} solver literals needed")]
    TooLarge(u64),
    /// The SAT solver gave up or contradicted an earlier answer; this is a bug.
    #[error("internal solver failure: {0}")]
    Internal(&'static str),
}
