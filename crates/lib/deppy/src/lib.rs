//! Deppy's solver: pick variables so that every constraint holds, preferring earlier
//! dependency candidates, and explain in terms of the input when nothing fits.
//!
//! This reimplements the model and choice semantics of [deppy] v0.3.0 (itself OLM v0's
//! resolver core): [`Variable`]s with unique [`Identifier`]s carry [`Constraint`]s —
//! mandatory, prohibited, dependency (an ordered preference list), conflict, at-most-n and
//! or. A [`Solver`] returns the selected variables in input order, or
//! [`SolveError::NotSatisfiable`] with the applied constraints that rule out every selection,
//! worded as deppy words them and ordered as the input.
//!
//! ```
//! use deppy::{Solver, Variable};
//!
//! let solution = Solver::new(vec![
//!     Variable::new("app").mandatory().depends_on(["lib-v2", "lib-v1"]),
//!     Variable::new("lib-v2").conflicts_with("legacy"),
//!     Variable::new("lib-v1"),
//!     Variable::new("legacy").mandatory(),
//! ])?
//! .solve()?;
//! assert_eq!(solution.selected(), ["app", "lib-v1", "legacy"]);
//! # Ok::<(), deppy::SolveError>(())
//! ```
//!
//! # How
//!
//! Every applied constraint becomes a few clauses guarded by one selector literal:
//! dependencies and conflicts are single clauses, `AtMost` a sequential counter. A CDCL
//! solver checks the problem with every selector assumed; if that fails, its failed-assumption
//! core is shrunk to a minimal explanation. Otherwise the preference search walks the
//! dependencies breadth first, checking each guess by incremental unit propagation and all of
//! them at the end by one full solve, and a last phase minimises the variables selected beyond
//! the guesses. `README.md` records how the SAT solver was chosen and what the OLM-shaped
//! benchmark measures.
//!
//! # Differences from deppy
//!
//! - Explanations are minimal and in input order (variable, then its constraints), rather
//!   than whatever subset and order gini's `Why()` produced.
//! - A prohibited variable reads "a is prohibited", an empty dependency and `Or` have
//!   meaningful messages (deppy prints "ProhibitedConstraint" for both).
//! - Where only a full solve, not propagation, refutes a guess, deppy's answer depends on how
//!   far gini's propagation got; this crate's does not (see [`Solver::solve`]).
//! - Unknown references are all reported as [`SolveError::UnknownReferences`] before solving,
//!   instead of an aggregated untyped error afterwards.
//!
//! [deppy]: https://github.com/operator-framework/deppy

mod encode;
mod error;
mod explain;
mod lazy_sat;
mod minimise;
mod model;
mod problem;
mod propagate;
mod sat;
mod search;
mod solver;

pub use error::{NotSatisfiable, SolveError, UnknownReference};
pub use model::{
    AppliedConstraint, Constraint, Description, Identifier, Identifiers, Variable, identifiers,
    list,
};
pub use solver::{Solution, Solver, Stats, solve};
