//! What a resolution cost: the problem's size and where the time went, reported with a
//! resolution and with the explanation of a failed one alike.

use std::time::Duration;

/// Size of a resolution problem and where the time went, for logs and metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Solver variables: request constraints, bundle offers and uniqueness rules.
    pub variables: usize,
    /// Bundle offers among the variables (a bundle in one channel of one catalog).
    pub bundles: usize,
    /// Constraints applied to the variables.
    pub constraints: usize,
    /// Clauses of the SAT encoding. `None` when unsatisfiable: deppy reports its encoding
    /// only with a solution.
    pub clauses: Option<usize>,
    /// SAT variables of the encoding, when known (see `clauses`).
    pub sat_variables: Option<u32>,
    /// Calls to the SAT solver, when known (see `clauses`).
    pub sat_calls: Option<u32>,
    /// Time spent turning catalogs and constraints into variables.
    pub build_duration: Duration,
    /// Time spent in the solver, including any explanation.
    pub solve_duration: Duration,
    /// Total time of the resolution.
    pub duration: Duration,
}
