//! Random small problems checked against brute force.
//!
//! Two references run on every problem: deppy's search as a depth-first walk returning the
//! first satisfiable leaf (its tree of guesses, with chronological backtracking), and the
//! greedy reading the crate documents (each choice takes its first candidate consistent with
//! the choices before it). They must agree with each other, and the solver must select every
//! variable they guess, select a model, and select nothing that a smaller model with the same
//! guesses could leave out. Unsatisfiable problems must be explained by a minimal
//! unsatisfiable set of constraints.

// Test helpers outside #[test] functions are not covered by clippy.toml's test allowances.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::VecDeque;

use deppy::{Constraint, SolveError, Solver, Variable};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// A constraint over variable indices.
#[derive(Clone, Debug)]
enum Rule {
    Mandatory(usize),
    Prohibited(usize),
    Dependency(usize, Vec<usize>),
    Conflict(usize, usize),
    AtMost(usize, Vec<usize>),
    Or(usize, bool, usize, bool),
}

impl Rule {
    fn holds(&self, model: u32) -> bool {
        let on = |v: usize| model & (1 << v) != 0;
        match self {
            Rule::Mandatory(s) => on(*s),
            Rule::Prohibited(s) => !on(*s),
            Rule::Dependency(s, ds) => !on(*s) || ds.iter().any(|&d| on(d)),
            Rule::Conflict(s, o) => !(on(*s) && on(*o)),
            Rule::AtMost(n, ids) => ids.iter().filter(|&&d| on(d)).count() <= *n,
            Rule::Or(s, sn, o, on_) => (on(*s) != *sn) || (on(*o) != *on_),
        }
    }
}

struct Case {
    n: usize,
    /// Per variable, its rules in order.
    rules: Vec<Vec<Rule>>,
}

impl Case {
    fn random(rng: &mut Rng) -> Self {
        let n = 4 + rng.below(6);
        let mut rules = Vec::with_capacity(n);
        for s in 0..n {
            let mut mine = Vec::new();
            let others = |rng: &mut Rng, count: usize| -> Vec<usize> {
                (0..count).map(|_| rng.below(n)).collect()
            };
            if rng.chance(20) {
                mine.push(Rule::Mandatory(s));
            }
            if rng.chance(5) {
                mine.push(Rule::Prohibited(s));
            }
            for _ in 0..2 {
                if rng.chance(45) {
                    let count = 1 + rng.below(3);
                    mine.push(Rule::Dependency(s, others(rng, count)));
                }
            }
            if rng.chance(20) {
                mine.push(Rule::Conflict(s, rng.below(n)));
            }
            if rng.chance(12) {
                let count = 2 + rng.below(3);
                mine.push(Rule::AtMost(rng.below(3), others(rng, count)));
            }
            if rng.chance(8) {
                let (sn, on) = (rng.chance(50), rng.chance(50));
                mine.push(Rule::Or(s, sn, rng.below(n), on));
            }
            rules.push(mine);
        }
        // A third of the problems get a trap that unit propagation cannot see: x needs one
        // of p, q and one of r, s, but each of p, q conflicts with both r and s. A
        // mandatory root prefers x; only a full solve refutes that guess.
        if n >= 6 && rng.chance(50) {
            let mut pick: Vec<usize> = Vec::new();
            while pick.len() < 6 {
                let v = rng.below(n);
                if !pick.contains(&v) {
                    pick.push(v);
                }
            }
            let [root, x, p, q, r, s] = [pick[0], pick[1], pick[2], pick[3], pick[4], pick[5]];
            let alternative = rng.below(n);
            rules[root].push(Rule::Mandatory(root));
            rules[root].push(Rule::Dependency(root, vec![x, alternative]));
            rules[x].push(Rule::Dependency(x, vec![p, q]));
            rules[x].push(Rule::Dependency(x, vec![r, s]));
            for a in [p, q] {
                rules[a].push(Rule::Conflict(a, r));
                rules[a].push(Rule::Conflict(a, s));
            }
        }
        Self { n, rules }
    }

    fn name(v: usize) -> String {
        format!("v{v}")
    }

    fn variables(&self) -> Vec<Variable> {
        let names = |ids: &[usize]| ids.iter().map(|&d| Self::name(d)).collect::<Vec<_>>();
        (0..self.n)
            .map(|s| {
                let mut var = Variable::new(Self::name(s));
                for rule in &self.rules[s] {
                    var = var.with(match rule {
                        Rule::Mandatory(_) => Constraint::Mandatory,
                        Rule::Prohibited(_) => Constraint::Prohibited,
                        Rule::Dependency(_, ds) => Constraint::dependency(names(ds)),
                        Rule::Conflict(_, o) => Constraint::conflict(Self::name(*o)),
                        Rule::AtMost(n, ids) => Constraint::at_most(*n, names(ids)),
                        Rule::Or(_, sn, o, on) => Constraint::or(Self::name(*o), *sn, *on),
                    });
                }
                var
            })
            .collect()
    }

    fn all_rules(&self) -> impl Iterator<Item = &Rule> {
        self.rules.iter().flatten()
    }

    fn is_model(&self, model: u32) -> bool {
        self.all_rules().all(|r| r.holds(model))
    }

    fn models(&self) -> impl Iterator<Item = u32> + '_ {
        (0..1u32 << self.n).filter(|&m| self.is_model(m))
    }

    fn consistent(&self, guesses: u32) -> bool {
        self.models().any(|m| m & guesses == guesses)
    }

    fn anchors(&self) -> Vec<usize> {
        (0..self.n)
            .filter(|&s| {
                self.rules[s]
                    .iter()
                    .any(|r| matches!(r, Rule::Mandatory(_)))
            })
            .collect()
    }

    fn dependencies(&self, s: usize) -> Vec<Vec<usize>> {
        self.rules[s]
            .iter()
            .filter_map(|r| match r {
                Rule::Dependency(_, ds) if !ds.is_empty() => Some(ds.clone()),
                _ => None,
            })
            .collect()
    }

    /// The documented greedy: each choice takes its first consistent candidate.
    fn greedy(&self) -> u32 {
        let mut queue: VecDeque<Vec<usize>> = self.anchors().into_iter().map(|a| vec![a]).collect();
        let mut guesses = 0u32;
        while let Some(candidates) = queue.pop_front() {
            if candidates.iter().any(|&c| guesses & (1 << c) != 0) {
                continue;
            }
            if let Some(&c) = candidates
                .iter()
                .find(|&&c| self.consistent(guesses | (1 << c)))
            {
                guesses |= 1 << c;
                queue.extend(self.dependencies(c));
            }
        }
        guesses
    }

    /// Deppy's tree of guesses, depth first: the first leaf whose guesses have a model.
    fn first_leaf(&self, queue: VecDeque<Vec<usize>>, guesses: u32) -> Option<u32> {
        if !self.consistent(guesses) {
            return None;
        }
        let mut queue = queue;
        let Some(candidates) = queue.pop_front() else {
            return Some(guesses);
        };
        if candidates.iter().any(|&c| guesses & (1 << c) != 0) {
            return self.first_leaf(queue, guesses);
        }
        for &c in &candidates {
            let mut deeper = queue.clone();
            deeper.extend(self.dependencies(c));
            if let Some(found) = self.first_leaf(deeper, guesses | (1 << c)) {
                return Some(found);
            }
        }
        // Candidates exhausted: the choice is left to the SAT solver.
        self.first_leaf(queue, guesses)
    }

    fn deppy_tree(&self) -> Option<u32> {
        let queue = self.anchors().into_iter().map(|a| vec![a]).collect();
        self.first_leaf(queue, 0)
    }
}

fn mask(case: &Case, ids: &[deppy::Identifier]) -> u32 {
    ids.iter()
        .map(|id| {
            let v: usize = id.as_str()[1..].parse().unwrap();
            assert!(v < case.n);
            1u32 << v
        })
        .fold(0, |a, b| a | b)
}

#[test]
fn random_problems_match_brute_force() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let (mut satisfiable, mut unsatisfiable, mut corrected) = (0, 0, 0);
    for round in 0..6000 {
        let case = Case::random(&mut rng);
        let result = Solver::new(case.variables()).unwrap().solve();
        let has_model = case.models().next().is_some();
        match result {
            Ok(solution) => {
                assert!(has_model, "round {round}: solved an unsatisfiable problem");
                satisfiable += 1;
                let selected = mask(&case, solution.selected());
                let guesses = case.greedy();
                assert_eq!(
                    case.deppy_tree(),
                    Some(guesses),
                    "round {round}: the greedy reading differs from deppy's tree"
                );
                assert!(case.is_model(selected), "round {round}: not a model");
                assert_eq!(
                    selected & guesses,
                    guesses,
                    "round {round}: guesses missing"
                );
                assert_eq!(solution.stats().guesses, guesses.count_ones() as usize);
                let smaller = case
                    .models()
                    .find(|&m| m & guesses == guesses && m & selected == m && m != selected);
                assert_eq!(smaller, None, "round {round}: selection not minimal");
                if solution.stats().corrections > 0 {
                    corrected += 1;
                }
            }
            Err(SolveError::NotSatisfiable(e)) => {
                assert!(!has_model, "round {round}: refused a satisfiable problem");
                unsatisfiable += 1;
                // Map the explanation back to rules by position within each variable.
                let variables = case.variables();
                let mut chosen: Vec<&Rule> = Vec::new();
                for applied in e.constraints() {
                    let s: usize = applied.subject.as_str()[1..].parse().unwrap();
                    let position = variables[s]
                        .constraints
                        .iter()
                        .position(|c| *c == applied.constraint)
                        .unwrap();
                    chosen.push(&case.rules[s][position]);
                }
                let unsat = |rules: &[&Rule]| {
                    (0..1u32 << case.n).all(|m| !rules.iter().all(|r| r.holds(m)))
                };
                assert!(unsat(&chosen), "round {round}: explanation is satisfiable");
                for skip in 0..chosen.len() {
                    let mut rest = chosen.clone();
                    rest.remove(skip);
                    assert!(!unsat(&rest), "round {round}: explanation not minimal: {e}");
                }
            }
            Err(other) => panic!("round {round}: {other}"),
        }
    }
    // The generator must exercise every path, or the checks above prove little.
    assert!(
        satisfiable > 1000,
        "only {satisfiable} satisfiable problems"
    );
    assert!(
        unsatisfiable > 1000,
        "only {unsatisfiable} unsatisfiable problems"
    );
    assert!(
        corrected >= 10,
        "only {corrected} problems needed a correction of the search"
    );
}
