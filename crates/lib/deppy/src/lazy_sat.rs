//! The SAT solver, built only when propagation cannot settle a problem on its own.
//!
//! Loading every clause into the SAT solver (a variable per constraint selector and counter
//! register, occurrence lists, watches) costs more time and memory than the rest of solving
//! a catalog-sized problem, and most such problems never need it: once the preference search
//! has made its guesses, setting every other variable false and propagating usually reaches
//! a model (see [`crate::propagate::Propagator::complete_with_false`]). The solver is loaded
//! for the problems that do need it: constraints that clash, guesses that only a full solve
//! refutes, and models that need more than the guesses.

use crate::encode::{Encoding, Lit};
use crate::error::{NotSatisfiable, SolveError};
use crate::explain::explain;
use crate::problem::Problem;
use crate::sat::Sat;

/// A SAT solver over a problem's encoding, loaded on first use.
pub(crate) struct LazySat<'a> {
    problem: &'a Problem,
    encoding: &'a Encoding,
    sat: Option<Sat>,
}

impl<'a> LazySat<'a> {
    pub fn new(problem: &'a Problem, encoding: &'a Encoding) -> Self {
        Self {
            problem,
            encoding,
            sat: None,
        }
    }

    /// The solver, with every constraint a fact.
    ///
    /// The first call loads the clauses and solves with every constraint switched on. When
    /// that fails, the answer is [`SolveError::NotSatisfiable`] with a minimal set of the
    /// constraints that clash: the same answer, from the same solver state, as when the
    /// solver was loaded before the search.
    pub fn get(&mut self) -> Result<&mut Sat, SolveError> {
        let sat = match self.sat.take() {
            Some(sat) => sat,
            None => self.load()?,
        };
        Ok(self.sat.insert(sat))
    }

    /// Calls made to the SAT solver; 0 when it was never loaded.
    pub fn calls(&self) -> u32 {
        self.sat.as_ref().map_or(0, Sat::calls)
    }

    fn load(&self) -> Result<Sat, SolveError> {
        let mut sat = Sat::load(&self.encoding.cnf);
        let selectors: Vec<Lit> = (0..self.problem.applied.len())
            .map(|j| self.encoding.selector(j))
            .collect();
        if !sat.solve(&selectors)? {
            let core = explain(&mut sat, &selectors)?;
            let mut constraints = Vec::with_capacity(core.len());
            for j in core {
                constraints.push(
                    self.problem
                        .applied_constraint(j)
                        .ok_or(SolveError::Internal("core names an unknown constraint"))?,
                );
            }
            return Err(NotSatisfiable(constraints).into());
        }
        // Satisfiable with every constraint on: from here on they are facts.
        for &selector in &selectors {
            sat.add_clause(&[selector]);
        }
        Ok(sat)
    }
}
