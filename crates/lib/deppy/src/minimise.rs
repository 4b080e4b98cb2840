//! Deppy's last phase: with the guesses fixed and everything false in the search's model kept
//! false, select as few of the remaining true variables ("extras") as possible.
//!
//! Extras arise only where the guesses do not account for every forced variable (an `Or`
//! constraint, or a dependency left to the SAT solver), so the common case costs nothing.
//! Otherwise the bound is raised from zero one step at a time, as deppy does, on a sequential
//! counter that grows one column per step.

use crate::encode::{Cnf, Lit, counter_column};
use crate::error::SolveError;
use crate::sat::Sat;

/// The selected variables, ascending. `sat`'s last model must be a model of `guesses`;
/// `num_vars` is the number of solver variables in use.
pub(crate) fn minimise(
    sat: &mut Sat,
    num_problem_vars: u32,
    num_vars: u32,
    guesses: &[u32],
) -> Result<Vec<u32>, SolveError> {
    let mut guessed = vec![false; num_problem_vars as usize];
    for &var in guesses {
        guessed[var as usize] = true;
    }
    let mut fixed: Vec<Lit> = Vec::with_capacity(num_problem_vars as usize);
    let mut extras: Vec<Lit> = Vec::new();
    for var in 0..num_problem_vars {
        let lit = Lit::positive(var);
        if guessed[var as usize] {
            fixed.push(lit);
        } else if sat.value(lit) {
            extras.push(lit);
        } else {
            fixed.push(!lit);
        }
    }
    if extras.is_empty() {
        let mut selected = guesses.to_vec();
        selected.sort_unstable();
        return Ok(selected);
    }

    let mut assumptions = fixed.clone();
    assumptions.extend(extras.iter().map(|&e| !e));
    if sat.solve(&assumptions)? {
        return Ok(selection(sat, num_problem_vars));
    }

    let mut counter = Cnf::with_vars(num_vars);
    let mut fed = 0;
    let mut column = counter_column(&mut counter, &extras, None);
    for _bound in 1..extras.len() {
        // The column for "at least bound + 1".
        column = counter_column(&mut counter, &extras, Some(&column));
        counter.check()?;
        sat.add_from(&counter, fed);
        fed = counter.num_clauses();
        let Some(&Some(exceeded)) = column.last() else {
            break;
        };
        assumptions.clear();
        assumptions.extend_from_slice(&fixed);
        assumptions.push(!exceeded);
        if sat.solve(&assumptions)? {
            return Ok(selection(sat, num_problem_vars));
        }
    }
    if sat.solve(&fixed)? {
        return Ok(selection(sat, num_problem_vars));
    }
    Err(SolveError::Internal("minimisation lost the search's model"))
}

fn selection(sat: &Sat, num_problem_vars: u32) -> Vec<u32> {
    (0..num_problem_vars)
        .filter(|&var| sat.value(Lit::positive(var)))
        .collect()
}
