//! Deppy's preference search (`search.go`): breadth-first over the dependencies of chosen
//! variables, each dependency taking its most preferred candidate that still fits.
//!
//! Deppy keeps a deque of choices, seeded with one single-candidate choice per mandatory
//! variable. It takes the front choice; if a candidate is already chosen the choice is
//! satisfied, otherwise it assumes the next candidate, appends one choice per dependency of
//! that candidate, and unit-propagates. A conflict moves on to the next candidate; a choice
//! whose candidates are exhausted is left to the SAT solver. Once the deque is empty a full
//! solve decides, and an unsatisfiable outcome backtracks chronologically.
//!
//! Here each choice ends up with the first candidate that is consistent with the choices made
//! before it: propagation rejects candidates cheaply; the finished guesses are checked by
//! completing them with every other variable false (propagation again, no SAT solver), or,
//! when that does not give a model, by one full solve; and if that fails a binary search over
//! guess prefixes finds the first guess that is inconsistent with the ones before it, which is
//! then refuted and the search resumed there.
//! This is exactly deppy's result whenever propagation refutes the failing guesses, which is
//! every case in deppy's test suite. When only a full solve can refute one, deppy's result
//! depends on gini's propagation (its chronological backtracking leaves later choices at the
//! candidate index they had reached) while this one does not.

use crate::encode::Lit;
use crate::error::SolveError;
use crate::lazy_sat::LazySat;
use crate::problem::{Kind, Problem};
use crate::propagate::Propagator;
use crate::sat::Sat;

#[derive(Clone, Copy)]
enum Source {
    /// `problem.anchors[k]`.
    Anchor(usize),
    /// The candidates of `problem.applied[j]`.
    Dependency(usize),
}

#[derive(Clone, Copy)]
struct Choice {
    source: Source,
    /// First candidate not yet refuted.
    next: usize,
}

#[derive(Clone, Copy)]
struct Step {
    /// Index into the choice list.
    choice: usize,
    /// Position of the chosen candidate in the choice.
    position: usize,
    var: u32,
    /// Length of the choice list before this guess appended its dependencies.
    children: usize,
    /// Propagator level before the guess.
    level: usize,
}

/// The variables guessed, in the order they were guessed, and how many times a full solve
/// had to correct the propagation-only search.
pub(crate) struct Guesses {
    pub vars: Vec<u32>,
    pub corrections: u32,
    /// Propagation alone found a model in which exactly these variables hold, so the SAT
    /// solver was not needed to check them, and there is nothing to minimise.
    pub settled: bool,
}

/// Runs the search. Unless the result is [`Guesses::settled`], `lazy_sat` is loaded on return
/// (with every constraint a fact) and its last model is a model of all guesses.
pub(crate) fn search(
    problem: &Problem,
    propagator: &mut Propagator,
    lazy_sat: &mut LazySat<'_>,
) -> Result<Guesses, SolveError> {
    let num_vars = problem.num_vars() as usize;
    // Deppy's deque, as a list and a cursor: choices are only taken from the front and added
    // at the back, so any earlier state is a cursor position plus a length to truncate to.
    let mut choices: Vec<Choice> = (0..problem.anchors.len())
        .map(|k| Choice {
            source: Source::Anchor(k),
            next: 0,
        })
        .collect();
    let mut head = 0;
    let mut steps: Vec<Step> = Vec::new();
    let mut guessed = vec![false; num_vars];
    // Refuted given the committed prefix, which is never undone.
    let mut refuted = vec![false; num_vars];
    // `steps[..committed]` are added to `sat` as units: they are part of the answer.
    let mut committed = 0;
    let mut corrections = 0;
    let mut assumptions: Vec<Lit> = Vec::new();

    loop {
        while head < choices.len() {
            let index = head;
            head += 1;
            let choice = choices[index];
            let candidates = candidates(problem, choice.source);
            if candidates.iter().any(|&v| guessed[v as usize]) {
                continue;
            }
            for (position, &var) in candidates.iter().enumerate().skip(choice.next) {
                if refuted[var as usize] {
                    continue;
                }
                let level = propagator.level();
                if !propagator.assume(Lit::positive(var)) {
                    continue;
                }
                guessed[var as usize] = true;
                steps.push(Step {
                    choice: index,
                    position,
                    var,
                    children: choices.len(),
                    level,
                });
                for j in problem.applied_of(var) {
                    let applied = &problem.applied[j];
                    if applied.kind == Kind::Dependency && !problem.refs(applied).is_empty() {
                        choices.push(Choice {
                            source: Source::Dependency(j),
                            next: 0,
                        });
                    }
                }
                break;
            }
        }

        // The guesses are complete. Propagation alone usually finishes them into a model;
        // when it cannot, a full solve decides.
        let vars = || steps.iter().map(|s| s.var).collect();
        if propagator.complete_with_false(problem.num_vars(), steps.len()) {
            return Ok(Guesses {
                vars: vars(),
                corrections,
                settled: true,
            });
        }
        let sat = lazy_sat.get()?;
        assumptions.clear();
        assumptions.extend(steps[committed..].iter().map(|s| Lit::positive(s.var)));
        if sat.solve(&assumptions)? {
            return Ok(Guesses {
                vars: vars(),
                corrections,
                settled: false,
            });
        }
        corrections += 1;

        // Find the first guess that is inconsistent with those before it: `steps[..good]` is
        // satisfiable, `steps[..bad]` is not.
        let mut good = committed;
        let mut bad = last_failed(sat, &assumptions, committed)?;
        while bad - good > 1 {
            let middle = good + (bad - good) / 2;
            let prefix = &assumptions[..middle - committed];
            if sat.solve(prefix)? {
                good = middle;
            } else {
                bad = last_failed(sat, prefix, committed)?;
                if bad <= good {
                    return Err(SolveError::Internal(
                        "a satisfiable prefix of guesses was refuted",
                    ));
                }
            }
        }
        let culprit = steps[bad - 1];
        for step in &steps[committed..bad - 1] {
            sat.add_clause(&[Lit::positive(step.var)]);
        }
        committed = bad - 1;
        sat.add_clause(&[Lit::negative(culprit.var)]);
        refuted[culprit.var as usize] = true;

        propagator.backtrack(culprit.level);
        for step in &steps[bad - 1..] {
            guessed[step.var as usize] = false;
        }
        steps.truncate(bad - 1);
        choices.truncate(culprit.children);
        for choice in &mut choices[culprit.choice + 1..] {
            choice.next = 0;
        }
        choices[culprit.choice].next = culprit.position + 1;
        head = culprit.choice;
    }
}

/// One past the last step whose guess the last refutation of `assumptions` (the guesses from
/// `committed` on) used.
fn last_failed(sat: &Sat, assumptions: &[Lit], committed: usize) -> Result<usize, SolveError> {
    match sat.failed(assumptions).last() {
        Some(&i) => Ok(committed + i + 1),
        None => Err(SolveError::Internal(
            "constraints that were satisfiable became unsatisfiable",
        )),
    }
}

fn candidates(problem: &Problem, source: Source) -> &[u32] {
    match source {
        Source::Anchor(k) => problem.anchors.get(k..=k).unwrap_or(&[]),
        Source::Dependency(j) => problem
            .applied
            .get(j)
            .map_or(&[], |applied| problem.refs(applied)),
    }
}
