//! The entry point: validate, encode, check, search, minimise.

use foldhash::HashSet;

use crate::encode::encode;
use crate::error::SolveError;
use crate::lazy_sat::LazySat;
use crate::minimise::minimise;
use crate::model::{Identifier, Variable};
use crate::problem::Problem;
use crate::propagate::Propagator;
use crate::search::search;

/// Solves one problem with deppy's choice semantics.
///
/// Construction validates the input; [`Solver::solve`] may be called any number of times and
/// gives the same answer each time.
pub struct Solver {
    problem: Problem,
}

impl Solver {
    /// Validates `variables`: identifiers must be unique and every identifier a constraint
    /// names must belong to one of them.
    pub fn new(variables: Vec<Variable>) -> Result<Self, SolveError> {
        Ok(Self {
            problem: Problem::new(variables)?,
        })
    }

    /// The variables as given.
    pub fn variables(&self) -> &[Variable] {
        &self.problem.variables
    }

    /// Finds deppy's selection, or the constraints that rule every selection out.
    ///
    /// The selection starts from the mandatory variables, in input order, and follows
    /// dependencies breadth first, each taking its most preferred candidate that is
    /// consistent with the choices made before it; a dependency with a candidate already
    /// chosen is satisfied outright, and one whose candidates all fail is left to the SAT
    /// solver. This is deppy's depth-first search over guesses with perfect pruning, and
    /// deppy's answer whenever unit propagation refutes its failing guesses. Variables not
    /// chosen this way are selected only when the constraints force them, and then as few as
    /// possible (among those true in the search's model, as in deppy).
    ///
    /// The SAT solver is loaded only when propagation cannot settle the problem (see
    /// [`Stats::sat_calls`]): most problems are answered by the search's guesses alone, which
    /// a model holding exactly them proves right.
    ///
    /// An unsatisfiable problem yields [`SolveError::NotSatisfiable`] with a minimal set of
    /// applied constraints, in input order; shrinking the solver's core stops after 256
    /// solves, deterministically, in which case the set is sufficient but maybe not minimal.
    pub fn solve(&self) -> Result<Solution, SolveError> {
        let problem = &self.problem;
        let encoding = encode(problem)?;
        let mut stats = Stats {
            variables: problem.variables.len(),
            constraints: problem.applied.len(),
            sat_variables: encoding.cnf.num_vars(),
            clauses: encoding.cnf.num_clauses(),
            literals: encoding.cnf.num_lits(),
            ..Stats::default()
        };
        let (lits, ends) = encoding.cnf.to_parts();
        let mut propagator = Propagator::new(encoding.cnf.num_vars(), lits, ends);
        let mut sat = LazySat::new(problem, &encoding);
        if propagator.is_inconsistent() {
            // The constraints clash outright: the SAT solver says which of them do.
            sat.get()?;
            return Err(SolveError::Internal(
                "propagation refuted a satisfiable problem",
            ));
        }
        let guesses = search(problem, &mut propagator, &mut sat)?;
        drop(propagator);
        let selected = if guesses.settled {
            // A model holds exactly the guesses, so minimising could not drop anything.
            let mut selected = guesses.vars.clone();
            selected.sort_unstable();
            selected
        } else {
            minimise(
                sat.get()?,
                problem.num_vars(),
                encoding.cnf.num_vars(),
                &guesses.vars,
            )?
        };

        stats.guesses = guesses.vars.len();
        stats.corrections = guesses.corrections;
        stats.sat_calls = sat.calls();
        let ids: Vec<Identifier> = selected
            .iter()
            .map(|&v| problem.variables[v as usize].id.clone())
            .collect();
        Ok(Solution {
            lookup: ids.iter().cloned().collect(),
            selected: ids,
            indices: selected.into_iter().map(|v| v as usize).collect(),
            stats,
        })
    }
}

/// Solves `variables` in one call; see [`Solver::solve`].
pub fn solve(variables: Vec<Variable>) -> Result<Solution, SolveError> {
    Solver::new(variables)?.solve()
}

/// The selected variables, in input order.
#[derive(Clone, Debug)]
pub struct Solution {
    selected: Vec<Identifier>,
    indices: Vec<usize>,
    lookup: HashSet<Identifier>,
    stats: Stats,
}

impl Solution {
    /// Identifiers of the selected variables, in input order.
    pub fn selected(&self) -> &[Identifier] {
        &self.selected
    }

    /// Positions of the selected variables in the input, ascending.
    pub fn indices(&self) -> &[usize] {
        &self.indices
    }

    /// Whether the variable named `id` is selected.
    pub fn is_selected(&self, id: &str) -> bool {
        self.lookup.contains(id)
    }

    /// Size of the encoding and the work done, for logs and benchmarks.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }
}

/// Size of a problem's encoding and the work spent solving it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Input variables.
    pub variables: usize,
    /// Applied constraints (one selector literal each).
    pub constraints: usize,
    /// SAT variables before minimisation: input variables, selectors and counter registers.
    pub sat_variables: u32,
    /// Clauses before minimisation.
    pub clauses: usize,
    /// Literals in those clauses, selectors not counted.
    pub literals: usize,
    /// Variables chosen by the preference search.
    pub guesses: usize,
    /// Times a full solve refuted guesses that propagation had accepted.
    pub corrections: u32,
    /// Calls to the SAT solver: 0 when propagation settled the problem and the solver was
    /// never loaded.
    pub sat_calls: u32,
}
