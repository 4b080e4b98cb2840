//! Clause encoding: each applied constraint becomes a few clauses guarded by its own selector
//! literal, so that assuming the selector switches the constraint on and a failed-assumption
//! core names the constraints behind a conflict.
//!
//! Dependencies and conflicts are single clauses (gini's or-chain gates cost deppy most of its
//! time and memory); `AtMost` is a sequential counter whose registers are unguarded, because
//! setting every register true satisfies them whatever the counted variables are, so only the
//! overflow clauses need the guard.
//!
//! A candidate list shared by several dependencies (one [`crate::Identifiers`] handed to every
//! dependent, as OLM does with "any version of package P") is written out once: a fresh
//! literal `any` with the unguarded clause `¬any ∨ d1 ∨ … ∨ dk`, and each dependency becomes
//! `¬selector ∨ ¬subject ∨ any`. That is still one guarded clause per constraint, propagates
//! exactly like the long clause, and turns the 51k-variable OLM shape from 5.4 million
//! literals into well under one million.

use std::ops::Not;

use foldhash::{HashMap, HashMapExt};

use crate::error::SolveError;
use crate::problem::{Kind, Problem};

/// A solver literal: variable index times two, plus one when negated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Lit(u32);

impl Lit {
    pub fn positive(var: u32) -> Self {
        Self(var << 1)
    }

    pub fn negative(var: u32) -> Self {
        Self((var << 1) | 1)
    }

    pub fn var(self) -> u32 {
        self.0 >> 1
    }

    pub fn is_negative(self) -> bool {
        self.0 & 1 == 1
    }

    /// Dense index for per-literal tables.
    pub fn code(self) -> usize {
        self.0 as usize
    }
}

impl Not for Lit {
    type Output = Self;

    fn not(self) -> Self {
        Self(self.0 ^ 1)
    }
}

/// Variables are numbered below this so that literals fit in 32 bits.
const MAX_VARS: u32 = u32::MAX >> 1;
const NO_GUARD: u32 = u32::MAX;
/// Up to this many candidates, `AtMost(1)` uses pairwise clauses: fewer than the counter's.
const PAIRWISE_LIMIT: usize = 5;

/// A clause database in flat arrays (a 51k-variable OLM problem has millions of literals, so
/// one allocation per clause would dominate memory).
#[derive(Default)]
pub(crate) struct Cnf {
    num_vars: u32,
    overflow: bool,
    lits: Vec<Lit>,
    /// Clause `i` is `lits[ends[i - 1]..ends[i]]`.
    ends: Vec<u32>,
    /// Selector variable guarding each clause, or `NO_GUARD`.
    guards: Vec<u32>,
    /// Per variable, the last `add` call that mentioned it and with which sign, for dropping
    /// repeated literals and tautologies without sorting.
    stamps: Vec<u64>,
    adds: u64,
}

impl Cnf {
    pub fn with_vars(num_vars: u32) -> Self {
        Self {
            num_vars: num_vars.min(MAX_VARS),
            overflow: num_vars > MAX_VARS,
            ..Self::default()
        }
    }

    pub fn num_vars(&self) -> u32 {
        self.num_vars
    }

    pub fn num_clauses(&self) -> usize {
        self.ends.len()
    }

    pub fn num_lits(&self) -> usize {
        self.lits.len()
    }

    pub fn reserve(&mut self, clauses: usize, lits: usize) {
        self.ends.reserve(clauses);
        self.guards.reserve(clauses);
        self.lits.reserve(lits);
    }

    pub fn new_var(&mut self) -> u32 {
        if self.num_vars == MAX_VARS {
            self.overflow = true;
            return self.num_vars - 1;
        }
        self.num_vars += 1;
        self.num_vars - 1
    }

    /// Fails if more variables were requested than literals can number.
    pub fn check(&self) -> Result<(), SolveError> {
        if self.overflow || u32::try_from(self.lits.len()).is_err() {
            return Err(SolveError::TooLarge(
                u64::from(self.num_vars).max(self.lits.len() as u64),
            ));
        }
        Ok(())
    }

    /// Adds `guard → (lits[0] ∨ lits[1] ∨ …)`; repeated literals are dropped and a tautology is
    /// not added at all.
    pub fn add(&mut self, guard: Option<u32>, lits: &[Lit]) {
        if self.stamps.len() < self.num_vars as usize {
            self.stamps.resize(self.num_vars as usize, 0);
        }
        self.adds += 1;
        let stamp = self.adds << 1;
        let start = self.lits.len();
        for &lit in lits {
            let Some(slot) = self.stamps.get_mut(lit.var() as usize) else {
                self.overflow = true;
                continue;
            };
            let mine = stamp | u64::from(lit.is_negative());
            if *slot == mine {
                continue;
            }
            if *slot == mine ^ 1 {
                self.lits.truncate(start);
                return;
            }
            *slot = mine;
            self.lits.push(lit);
        }
        self.ends.push(self.lits.len() as u32);
        self.guards.push(guard.unwrap_or(NO_GUARD));
    }

    /// Clause `i`: its guard and its literals without the guard.
    pub fn clause(&self, i: usize) -> (Option<u32>, &[Lit]) {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        let end = self.ends[i] as usize;
        let guard = self.guards[i];
        let guard = if guard == NO_GUARD { None } else { Some(guard) };
        (guard, &self.lits[start..end])
    }

    /// A copy of the flat storage for the propagator, with guards dropped: the literals and
    /// where each clause ends. The clauses stay here, in their order, for a SAT solver
    /// loaded later.
    pub fn to_parts(&self) -> (Vec<Lit>, Vec<u32>) {
        (self.lits.clone(), self.ends.clone())
    }
}

/// The clauses of a problem and where its selectors are.
pub(crate) struct Encoding {
    pub cnf: Cnf,
    /// Variables `0..num_problem_vars` are the input variables, in input order.
    pub num_problem_vars: u32,
}

impl Encoding {
    /// Variable `num_problem_vars + j` selects applied constraint `j`.
    pub fn selector(&self, applied: usize) -> Lit {
        Lit::positive(self.num_problem_vars + applied as u32)
    }
}

pub(crate) fn encode(problem: &Problem) -> Result<Encoding, SolveError> {
    let num_problem_vars = problem.num_vars();
    let num_selectors = u32::try_from(problem.applied.len())
        .map_err(|_| SolveError::TooLarge(problem.applied.len() as u64))?;
    let mut cnf = Cnf::with_vars(num_problem_vars.checked_add(num_selectors).ok_or(
        SolveError::TooLarge(u64::from(num_problem_vars) + u64::from(num_selectors)),
    )?);
    let mut uses: HashMap<(u32, u32), u32> = HashMap::new();
    for applied in &problem.applied {
        if applied.kind == Kind::Dependency && problem.refs(applied).len() > 1 {
            *uses.entry(Problem::refs_key(applied)).or_default() += 1;
        }
    }
    uses.retain(|_, count| *count > 1);

    // Sizes, so the flat arrays are allocated once.
    let (mut clauses, mut lits) = (uses.len(), 0usize);
    for &(start, end) in uses.keys() {
        lits += (end - start) as usize + 1;
    }
    for applied in &problem.applied {
        let refs = problem.refs(applied).len();
        match applied.kind {
            Kind::AtMost(_) => {
                clauses += 3 * refs;
                lits += 7 * refs;
            }
            Kind::Dependency if uses.contains_key(&Problem::refs_key(applied)) => {
                clauses += 1;
                lits += 2;
            }
            _ => {
                clauses += 1;
                lits += refs + 1;
            }
        }
    }
    cnf.reserve(clauses, lits);
    let mut any_of: HashMap<(u32, u32), Lit> = HashMap::with_capacity(uses.len());

    let mut buffer: Vec<Lit> = Vec::new();
    for (j, applied) in problem.applied.iter().enumerate() {
        let guard = Some(num_problem_vars + j as u32);
        let subject = applied.var;
        let refs = problem.refs(applied);
        buffer.clear();
        match applied.kind {
            Kind::Mandatory => cnf.add(guard, &[Lit::positive(subject)]),
            Kind::Prohibited => cnf.add(guard, &[Lit::negative(subject)]),
            Kind::Dependency => {
                let key = Problem::refs_key(applied);
                buffer.push(Lit::negative(subject));
                if uses.contains_key(&key) {
                    let any = match any_of.get(&key) {
                        Some(&any) => any,
                        None => {
                            let any = Lit::positive(cnf.new_var());
                            let mut definition = Vec::with_capacity(refs.len() + 1);
                            definition.push(!any);
                            definition.extend(refs.iter().map(|&d| Lit::positive(d)));
                            cnf.add(None, &definition);
                            any_of.insert(key, any);
                            any
                        }
                    };
                    buffer.push(any);
                } else {
                    buffer.extend(refs.iter().map(|&d| Lit::positive(d)));
                }
                cnf.add(guard, &buffer);
            }
            Kind::Conflict => {
                buffer.push(Lit::negative(subject));
                buffer.extend(refs.iter().map(|&d| Lit::negative(d)));
                cnf.add(guard, &buffer);
            }
            Kind::Or {
                subject_negated,
                operand_negated,
            } => {
                buffer.push(signed(subject, subject_negated));
                buffer.extend(refs.iter().map(|&d| signed(d, operand_negated)));
                cnf.add(guard, &buffer);
            }
            Kind::AtMost(n) => {
                buffer.extend(refs.iter().map(|&d| Lit::positive(d)));
                at_most(&mut cnf, guard, n, &buffer);
            }
        }
    }
    cnf.check()?;
    Ok(Encoding {
        cnf,
        num_problem_vars,
    })
}

fn signed(var: u32, negated: bool) -> Lit {
    if negated {
        Lit::negative(var)
    } else {
        Lit::positive(var)
    }
}

/// `guard → at most n of inputs`.
fn at_most(cnf: &mut Cnf, guard: Option<u32>, n: usize, inputs: &[Lit]) {
    let m = inputs.len();
    if n >= m {
        return;
    }
    if n == 0 {
        for &x in inputs {
            cnf.add(guard, &[!x]);
        }
        return;
    }
    if n == 1 && m <= PAIRWISE_LIMIT {
        for (i, &x) in inputs.iter().enumerate() {
            for &y in &inputs[i + 1..] {
                cnf.add(guard, &[!x, !y]);
            }
        }
        return;
    }
    // Registers over every prefix but the full list: the last input only needs to be
    // checked against the count before it.
    let prefix = &inputs[..m - 1];
    let mut column = counter_column(cnf, prefix, None);
    for _ in 1..n {
        column = counter_column(cnf, prefix, Some(&column));
    }
    for (i, &x) in inputs.iter().enumerate().skip(1) {
        if let Some(reached) = column[i - 1] {
            cnf.add(guard, &[!x, !reached]);
        }
    }
}

/// One column of a sequential counter (Sinz 2005) over `inputs`.
///
/// Given column `j - 1` (`None` for `j = 1`), returns for every prefix `inputs[..=i]` a literal
/// that is forced true when at least `j` of the prefix are true, or `None` where the prefix is
/// too short to reach `j`. Only the upward implications are encoded: the registers may be
/// true spuriously, which only ever forbids more, and a solver sets them false when it can.
/// Unit propagation on this encoding enforces the bound as soon as it is reached.
pub(crate) fn counter_column(
    cnf: &mut Cnf,
    inputs: &[Lit],
    previous: Option<&[Option<Lit>]>,
) -> Vec<Option<Lit>> {
    let mut column = Vec::with_capacity(inputs.len());
    let mut below: Option<Lit> = None;
    for (i, &x) in inputs.iter().enumerate() {
        // Whether x_i raises the count to j: always for j = 1, otherwise when the earlier
        // prefix already holds j - 1.
        let (counts, carry) = match previous {
            None => (true, None),
            Some(previous) => match i.checked_sub(1).and_then(|k| previous.get(k)) {
                Some(&Some(reached)) => (true, Some(reached)),
                _ => (false, None),
            },
        };
        if below.is_none() && !counts {
            column.push(None);
            continue;
        }
        let register = Lit::positive(cnf.new_var());
        if let Some(below) = below {
            cnf.add(None, &[!below, register]);
        }
        if counts {
            match carry {
                Some(reached) => cnf.add(None, &[!x, !reached, register]),
                None => cnf.add(None, &[!x, register]),
            }
        }
        column.push(Some(register));
        below = Some(register);
    }
    column
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sat::Sat;

    /// Every assignment of `m` inputs, as assumption literals over variables `0..m`.
    fn assignments(m: u32) -> impl Iterator<Item = (u32, Vec<Lit>)> {
        (0..1u32 << m).map(move |bits| {
            let lits = (0..m)
                .map(|v| {
                    if bits & (1 << v) != 0 {
                        Lit::positive(v)
                    } else {
                        Lit::negative(v)
                    }
                })
                .collect();
            (bits, lits)
        })
    }

    #[test]
    fn at_most_admits_exactly_the_assignments_within_the_bound_when_switched_on() {
        for m in 1..=7u32 {
            for n in 0..=m as usize {
                let guard = m;
                let mut cnf = Cnf::with_vars(m + 1);
                let inputs: Vec<Lit> = (0..m).map(Lit::positive).collect();
                at_most(&mut cnf, Some(guard), n, &inputs);
                let mut sat = Sat::load(&cnf);
                for (bits, mut lits) in assignments(m) {
                    lits.push(Lit::positive(guard));
                    let expected = bits.count_ones() as usize <= n;
                    assert_eq!(sat.solve(&lits).unwrap(), expected, "m={m} n={n} {bits:b}");
                    *lits.last_mut().unwrap() = Lit::negative(guard);
                    assert!(
                        sat.solve(&lits).unwrap(),
                        "switched off m={m} n={n} {bits:b}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_counter_column_is_forced_true_once_its_count_is_reached() {
        let m = 5u32;
        let inputs: Vec<Lit> = (0..m).map(Lit::positive).collect();
        let mut cnf = Cnf::with_vars(m);
        let mut columns = vec![counter_column(&mut cnf, &inputs, None)];
        for _ in 1..m {
            let next = counter_column(&mut cnf, &inputs, columns.last().map(Vec::as_slice));
            columns.push(next);
        }
        let mut sat = Sat::load(&cnf);
        for (bits, lits) in assignments(m) {
            for (j, column) in columns.iter().enumerate() {
                let Some(Some(total)) = column.last() else {
                    panic!("the full prefix can reach every count");
                };
                let mut probe = lits.clone();
                probe.push(!*total);
                let reached = bits.count_ones() as usize > j;
                // "At least j + 1" can be denied exactly when it is not reached.
                assert_eq!(sat.solve(&probe).unwrap(), !reached, "{bits:b} j={j}");
            }
        }
    }

    #[test]
    fn repeated_literals_are_dropped_and_tautologies_skipped() {
        let mut cnf = Cnf::with_vars(3);
        let (a, b) = (Lit::positive(0), Lit::positive(1));
        cnf.add(Some(2), &[a, b, a]);
        cnf.add(None, &[a, !a]);
        cnf.add(None, &[!b]);
        assert_eq!(cnf.num_clauses(), 2);
        assert_eq!(cnf.clause(0), (Some(2), &[a, b][..]));
        assert_eq!(cnf.clause(1), (None, &[!b][..]));
    }
}
