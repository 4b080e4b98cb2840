//! The CDCL SAT solver underneath (batsat, a MiniSat port in pure Rust): incremental solving
//! under assumptions, models, and failed-assumption cores. Nothing else names batsat, so
//! swapping the solver touches only this file (`README.md` records how it was chosen).

use batsat::{BasicCallbacks, BasicSolver, SolverInterface, SolverOpts, Var, lbool};

use crate::encode::{Cnf, Lit};
use crate::error::SolveError;

fn to_batsat(lit: Lit) -> batsat::Lit {
    // `unsafe_from_idx` is safe code; the name warns that the variable must exist, which
    // `ensure_vars` guarantees before any clause or assumption mentions it.
    batsat::Lit::new(Var::unsafe_from_idx(lit.var()), !lit.is_negative())
}

/// An incremental SAT solver instance.
pub(crate) struct Sat {
    solver: BasicSolver,
    clause: Vec<batsat::Lit>,
    assumptions: Vec<batsat::Lit>,
    calls: u32,
}

impl Sat {
    fn new() -> Self {
        // Without phase saving every decision tries "false" first, so a model selects little
        // that the constraints do not force: the minimisation phase then rarely has work, and
        // these problems are too easy for phase saving to pay off.
        let options = SolverOpts {
            phase_saving: 0,
            ..SolverOpts::default()
        };
        Self {
            solver: BasicSolver::new(options, BasicCallbacks::default()),
            clause: Vec::new(),
            assumptions: Vec::new(),
            calls: 0,
        }
    }

    /// A solver holding every clause of `cnf`, each guarded clause extended by its negated
    /// selector.
    pub fn load(cnf: &Cnf) -> Self {
        let mut sat = Self::new();
        sat.add_from(cnf, 0);
        sat
    }

    /// Adds `cnf`'s clauses from number `from` on.
    pub fn add_from(&mut self, cnf: &Cnf, from: usize) {
        self.ensure_vars(cnf.num_vars());
        for i in from..cnf.num_clauses() {
            let (guard, lits) = cnf.clause(i);
            self.clause.clear();
            self.clause
                .extend(guard.map(|g| to_batsat(Lit::negative(g))));
            self.clause.extend(lits.iter().copied().map(to_batsat));
            self.add_buffered_clause();
        }
    }

    /// Adds a clause over existing variables.
    pub fn add_clause(&mut self, lits: &[Lit]) {
        self.clause.clear();
        self.clause.extend(lits.iter().copied().map(to_batsat));
        self.add_buffered_clause();
    }

    fn add_buffered_clause(&mut self) {
        // `false` only reports that the formula is already unsatisfiable, which the next
        // solve reports as well.
        let _ = self.solver.add_clause_reuse(&mut self.clause);
    }

    fn ensure_vars(&mut self, num_vars: u32) {
        while self.solver.num_vars() < num_vars {
            self.solver.new_var(lbool::UNDEF, true);
        }
    }

    /// Whether the clauses and `assumptions` have a model.
    pub fn solve(&mut self, assumptions: &[Lit]) -> Result<bool, SolveError> {
        self.calls += 1;
        self.assumptions.clear();
        self.assumptions
            .extend(assumptions.iter().copied().map(to_batsat));
        let result = self.solver.solve_limited(&self.assumptions);
        if result == lbool::TRUE {
            Ok(true)
        } else if result == lbool::FALSE {
            Ok(false)
        } else {
            Err(SolveError::Internal("the SAT solver gave up"))
        }
    }

    /// The literal's value in the model of the last satisfiable solve.
    pub fn value(&self, lit: Lit) -> bool {
        self.solver.value_lit(to_batsat(lit)) == lbool::TRUE
    }

    /// Positions in `assumptions` (those of the last unsatisfiable solve) of the assumptions
    /// its refutation used, ascending.
    pub fn failed(&self, assumptions: &[Lit]) -> Vec<usize> {
        // batsat's final conflict is a clause over the negated failed assumptions.
        (0..assumptions.len())
            .filter(|&i| {
                self.solver
                    .unsat_core_contains_lit(!to_batsat(assumptions[i]))
            })
            .collect()
    }

    /// How many times `solve` ran.
    pub fn calls(&self) -> u32 {
        self.calls
    }
}
