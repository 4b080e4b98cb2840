//! Unsatisfiable problems: shrinking the SAT solver's failed-assumption core to a minimal set
//! of constraints.
//!
//! A core is only "sufficient" (deppy #151: explanations list constraints that play no part),
//! so each constraint in it is tentatively dropped: if the rest is still unsatisfiable, it
//! goes, and the solver's new, smaller core replaces the candidates. Solves with only a core's
//! constraints switched on are cheap, and a fixed budget of them keeps pathological cores
//! from taking long while staying deterministic.

use crate::encode::Lit;
use crate::error::SolveError;
use crate::sat::Sat;

/// At most this many solves go into shrinking one core.
const SHRINK_BUDGET: usize = 256;

/// Positions in `selectors` of a set of constraints that cannot hold together, ascending.
/// The last solve of `sat` must have been an unsatisfiable one under `selectors`.
pub(crate) fn explain(sat: &mut Sat, selectors: &[Lit]) -> Result<Vec<usize>, SolveError> {
    let mut remaining = sat.failed(selectors);
    if remaining.is_empty() {
        return Err(SolveError::Internal(
            "refuted without switching on any constraint",
        ));
    }
    let mut necessary: Vec<usize> = Vec::new();
    let mut trial: Vec<Lit> = Vec::new();
    let mut positions: Vec<usize> = Vec::new();
    let mut budget = SHRINK_BUDGET;
    // `remaining` is ascending and only shrinks, so its front is the next untested one.
    while budget > 0 && !remaining.is_empty() {
        budget -= 1;
        let candidate = remaining.remove(0);
        positions.clear();
        positions.extend(necessary.iter().chain(&remaining).copied());
        trial.clear();
        trial.extend(positions.iter().map(|&p| selectors[p]));
        if sat.solve(&trial)? {
            necessary.push(candidate);
        } else {
            let failed = sat.failed(&trial);
            let mut kept: Vec<usize> = failed.iter().map(|&i| positions[i]).collect();
            kept.sort_unstable();
            remaining.retain(|p| kept.binary_search(p).is_ok());
        }
    }
    necessary.extend(remaining);
    necessary.sort_unstable();
    Ok(necessary)
}
