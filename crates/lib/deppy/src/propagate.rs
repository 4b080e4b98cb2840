//! Incremental unit propagation with decision levels: the preference search's cheap check of
//! a guess (gini's `Test`/`Untest` in deppy), and, once the guesses are complete, the
//! attempt to finish them into a model without a SAT solver.
//!
//! It works on the clauses with every constraint switched on (selectors true), which is the
//! situation the search runs in.

use crate::encode::Lit;

const UNASSIGNED: i8 = 0;
const TRUE: i8 = 1;
const FALSE: i8 = -1;

/// The end of a watch list.
const NONE: u32 = u32::MAX;

/// Two-watched-literal propagation over a flat clause database.
///
/// Watch lists are linked through the clauses (`first_watcher` per literal, `next_watcher`
/// per watched position) rather than held as a vector per literal: a problem has a few
/// hundred thousand literals, most watched by one or two clauses, and a vector each cost
/// 24 bytes plus an allocation (12 MB at 51k variables, against 4 MB now).
pub(crate) struct Propagator {
    lits: Vec<Lit>,
    /// Clause `i` is `lits[ends[i - 1]..ends[i]]`; its first two literals are watched.
    ends: Vec<u32>,
    /// Per literal, the first clause watching it (visited when it becomes false), or
    /// [`NONE`].
    first_watcher: Vec<u32>,
    /// `next_watcher[2 * i + k]`: the clause after clause `i` in the watch list of its
    /// `k`-th literal (`k` is 0 or 1), or [`NONE`].
    next_watcher: Vec<u32>,
    values: Vec<i8>,
    trail: Vec<Lit>,
    /// Trail length at the start of each decision level above 0.
    levels: Vec<usize>,
    queue_head: usize,
    inconsistent: bool,
}

impl Propagator {
    /// Builds the watches and propagates unit clauses at level 0.
    pub fn new(num_vars: u32, lits: Vec<Lit>, ends: Vec<u32>) -> Self {
        let mut propagator = Self {
            first_watcher: vec![NONE; num_vars as usize * 2],
            next_watcher: vec![NONE; ends.len() * 2],
            values: vec![UNASSIGNED; num_vars as usize],
            lits,
            ends,
            trail: Vec::new(),
            levels: Vec::new(),
            queue_head: 0,
            inconsistent: false,
        };
        let mut start = 0usize;
        let mut units = Vec::new();
        for i in 0..propagator.ends.len() {
            let end = propagator.ends[i] as usize;
            match end - start {
                0 => propagator.inconsistent = true,
                1 => units.push(propagator.lits[start]),
                _ => {
                    let (first, second) = (propagator.lits[start], propagator.lits[start + 1]);
                    propagator.watch(i as u32, 0, first);
                    propagator.watch(i as u32, 1, second);
                }
            }
            start = end;
        }
        for unit in units {
            match propagator.value(unit) {
                Some(true) => {}
                Some(false) => propagator.inconsistent = true,
                None => propagator.enqueue(unit),
            }
        }
        if !propagator.inconsistent && !propagator.propagate() {
            propagator.inconsistent = true;
        }
        propagator
    }

    /// Whether level 0 already conflicts.
    pub fn is_inconsistent(&self) -> bool {
        self.inconsistent
    }

    pub fn value(&self, lit: Lit) -> Option<bool> {
        match self
            .values
            .get(lit.var() as usize)
            .copied()
            .unwrap_or(UNASSIGNED)
        {
            UNASSIGNED => None,
            v => Some((v == TRUE) != lit.is_negative()),
        }
    }

    pub fn level(&self) -> usize {
        self.levels.len()
    }

    /// Opens a decision level asserting `lit` and propagates. On conflict the level is
    /// withdrawn again and `false` returned.
    pub fn assume(&mut self, lit: Lit) -> bool {
        if self.inconsistent {
            return false;
        }
        match self.value(lit) {
            Some(true) => {
                self.levels.push(self.trail.len());
                true
            }
            Some(false) => false,
            None => {
                self.levels.push(self.trail.len());
                self.enqueue(lit);
                if self.propagate() {
                    true
                } else {
                    let level = self.levels.len() - 1;
                    self.backtrack(level);
                    false
                }
            }
        }
    }

    /// Undoes every decision level above `level`.
    pub fn backtrack(&mut self, level: usize) {
        if level >= self.levels.len() {
            return;
        }
        let keep = self.levels[level];
        for lit in self.trail.drain(keep..) {
            self.values[lit.var() as usize] = UNASSIGNED;
        }
        self.levels.truncate(level);
        self.queue_head = keep;
    }

    /// Tries to finish the assignment without a SAT solver: every unassigned variable is set
    /// false in turn (problem variables first, as they are numbered), propagating after each.
    ///
    /// Succeeds when that reaches a conflict-free total assignment, checked clause by clause,
    /// in which exactly `holding` of the first `num_problem_vars` variables are true; the
    /// assignment is then kept. Otherwise nothing changes and the answer is `false`.
    pub fn complete_with_false(&mut self, num_problem_vars: u32, holding: usize) -> bool {
        if self.inconsistent {
            return false;
        }
        let level = self.level();
        self.levels.push(self.trail.len());
        for var in 0..self.values.len() {
            if self.values[var] != UNASSIGNED {
                continue;
            }
            // Fewer than 2^31 variables: the encoder refuses larger problems.
            self.enqueue(Lit::negative(var as u32));
            if !self.propagate() {
                self.backtrack(level);
                return false;
            }
        }
        let problem_values = self
            .values
            .get(..num_problem_vars as usize)
            .unwrap_or_default();
        let true_count = problem_values.iter().filter(|&&v| v == TRUE).count();
        if true_count != holding || !self.satisfies_every_clause() {
            self.backtrack(level);
            return false;
        }
        true
    }

    /// Whether every clause has a true literal: the proof that a total assignment is a model,
    /// independent of how propagation reached it.
    fn satisfies_every_clause(&self) -> bool {
        let mut start = 0usize;
        self.ends.iter().all(|&end| {
            let clause = self.lits.get(start..end as usize).unwrap_or_default();
            start = end as usize;
            clause.iter().any(|&lit| self.value(lit) == Some(true))
        })
    }

    fn enqueue(&mut self, lit: Lit) {
        self.values[lit.var() as usize] = if lit.is_negative() { FALSE } else { TRUE };
        self.trail.push(lit);
    }

    fn clause_range(&self, clause: u32) -> (usize, usize) {
        let clause = clause as usize;
        let start = if clause == 0 {
            0
        } else {
            self.ends[clause - 1] as usize
        };
        (start, self.ends[clause] as usize)
    }

    /// Puts `clause` at the front of `lit`'s watch list, through its `slot`-th link.
    fn watch(&mut self, clause: u32, slot: usize, lit: Lit) {
        self.next_watcher[clause as usize * 2 + slot] = self.first_watcher[lit.code()];
        self.first_watcher[lit.code()] = clause;
    }

    /// Propagates the queue; `false` on conflict.
    fn propagate(&mut self) -> bool {
        while self.queue_head < self.trail.len() {
            let falsified = !self.trail[self.queue_head];
            self.queue_head += 1;
            // The link that points at the current clause: the list's head, or the link of
            // the last clause kept in the list.
            let mut previous: Option<usize> = None;
            let mut clause = self.first_watcher[falsified.code()];
            while clause != NONE {
                let (start, end) = self.clause_range(clause);
                let links = clause as usize * 2;
                // The falsified literal goes second, its link with it.
                if self.lits[start] == falsified {
                    self.lits.swap(start, start + 1);
                    self.next_watcher.swap(links, links + 1);
                }
                let following = self.next_watcher[links + 1];
                let other = self.lits[start];
                if self.value(other) == Some(true) {
                    previous = Some(links + 1);
                    clause = following;
                    continue;
                }
                if let Some(k) = (start + 2..end).find(|&k| self.value(self.lits[k]) != Some(false))
                {
                    // Another literal can watch: unlink here, link there.
                    self.lits.swap(start + 1, k);
                    match previous {
                        None => self.first_watcher[falsified.code()] = following,
                        Some(link) => self.next_watcher[link] = following,
                    }
                    let watcher = self.lits[start + 1];
                    self.watch(clause, 1, watcher);
                    clause = following;
                    continue;
                }
                if self.value(other) == Some(false) {
                    return false;
                }
                self.enqueue(other);
                previous = Some(links + 1);
                clause = following;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clauses(list: &[&[Lit]]) -> (Vec<Lit>, Vec<u32>) {
        let mut lits = Vec::new();
        let mut ends = Vec::new();
        for clause in list {
            lits.extend_from_slice(clause);
            ends.push(lits.len() as u32);
        }
        (lits, ends)
    }

    #[test]
    fn completing_with_false_keeps_a_model_holding_exactly_the_guesses() {
        // Problem variables a, b, c; an auxiliary d defined as b-or-c.
        let (a, b, c, d) = (
            Lit::positive(0),
            Lit::positive(1),
            Lit::positive(2),
            Lit::positive(3),
        );
        let (lits, ends) = clauses(&[&[!a, b, c], &[!d, b, c], &[!b, d]]);
        let mut propagator = Propagator::new(4, lits, ends);
        assert!(propagator.assume(a));
        assert!(propagator.assume(b));
        assert!(propagator.complete_with_false(3, 2));
        assert_eq!(propagator.value(c), Some(false));
        // d is forced by b, not set false.
        assert_eq!(propagator.value(d), Some(true));
    }

    #[test]
    fn completing_with_false_gives_up_and_restores_when_more_than_the_guesses_must_hold() {
        let (a, b, c) = (Lit::positive(0), Lit::positive(1), Lit::positive(2));
        // a needs b or c; with only a guessed, setting b false forces c: a third variable.
        let (lits, ends) = clauses(&[&[!a, b, c]]);
        let mut propagator = Propagator::new(3, lits, ends);
        assert!(propagator.assume(a));
        let level = propagator.level();
        assert!(!propagator.complete_with_false(3, 1));
        assert_eq!(propagator.level(), level);
        assert_eq!(propagator.value(b), None);
        assert_eq!(propagator.value(c), None);
        // Counting c as expected, the same completion is a model.
        assert!(propagator.complete_with_false(3, 2));
        assert_eq!(propagator.value(c), Some(true));
    }

    #[test]
    fn completing_with_false_gives_up_and_restores_on_a_conflict() {
        let (a, b, c) = (Lit::positive(0), Lit::positive(1), Lit::positive(2));
        // Setting a false forces b and c, which cannot both hold.
        let (lits, ends) = clauses(&[&[a, b], &[a, c], &[!b, !c]]);
        let mut propagator = Propagator::new(3, lits, ends);
        assert!(!propagator.complete_with_false(3, 0));
        assert_eq!(propagator.level(), 0);
        assert_eq!(propagator.value(a), None);
        assert!(propagator.assume(a));
        assert!(propagator.complete_with_false(3, 1));
    }

    #[test]
    fn unit_clauses_hold_from_the_start() {
        let (a, b) = (Lit::positive(0), Lit::positive(1));
        let (lits, ends) = clauses(&[&[a], &[!a, b]]);
        let propagator = Propagator::new(2, lits, ends);
        assert!(!propagator.is_inconsistent());
        assert_eq!(propagator.value(b), Some(true));
    }

    #[test]
    fn an_assumption_propagates_and_backtracking_undoes_it() {
        let (a, b, c) = (Lit::positive(0), Lit::positive(1), Lit::positive(2));
        let (lits, ends) = clauses(&[&[!a, b], &[!b, c]]);
        let mut propagator = Propagator::new(3, lits, ends);
        assert!(propagator.assume(a));
        assert_eq!(propagator.value(c), Some(true));
        propagator.backtrack(0);
        assert_eq!(propagator.value(a), None);
        assert_eq!(propagator.value(c), None);
        assert_eq!(propagator.level(), 0);
    }

    #[test]
    fn a_conflicting_assumption_is_withdrawn() {
        let (a, b, c) = (Lit::positive(0), Lit::positive(1), Lit::positive(2));
        // a forces b and c, which cannot both hold.
        let (lits, ends) = clauses(&[&[!a, b], &[!a, c], &[!b, !c]]);
        let mut propagator = Propagator::new(3, lits, ends);
        assert!(!propagator.assume(a));
        assert_eq!(propagator.level(), 0);
        assert_eq!(propagator.value(b), None);
        // The watches survive the conflict: the other way round still propagates.
        assert!(propagator.assume(b));
        assert_eq!(propagator.value(c), Some(false));
        assert_eq!(propagator.value(a), Some(false));
    }

    #[test]
    fn watches_move_along_long_clauses_and_survive_backtracking() {
        let v: Vec<Lit> = (0..6).map(Lit::positive).collect();
        // v0 ∨ v1 ∨ v2 ∨ v3 ∨ v4 and v5 → ¬v4: falsifying v0..v3 one by one moves the
        // watches along until v4 is forced; with v5 set first it is a conflict instead.
        let (lits, ends) = clauses(&[&[v[0], v[1], v[2], v[3], v[4]], &[!v[5], !v[4]]]);
        let mut propagator = Propagator::new(6, lits, ends);
        for (i, &lit) in v[..3].iter().enumerate() {
            assert!(propagator.assume(!lit));
            assert_eq!(propagator.value(v[4]), None, "after {i}");
        }
        assert!(propagator.assume(!v[3]));
        assert_eq!(propagator.value(v[4]), Some(true));
        assert_eq!(propagator.value(v[5]), Some(false));
        propagator.backtrack(0);
        assert!(propagator.assume(v[5]));
        assert_eq!(propagator.value(v[4]), Some(false));
        for &lit in &v[..3] {
            assert!(propagator.assume(!lit));
        }
        assert!(!propagator.assume(!v[3]), "the long clause is falsified");
        assert_eq!(propagator.level(), 4);
        // Backtracking and choosing again still sees every clause.
        propagator.backtrack(1);
        assert_eq!(propagator.value(v[0]), None);
        assert!(propagator.assume(!v[0]));
        assert!(propagator.assume(!v[1]));
        assert_eq!(propagator.value(v[2]), None);
        assert!(propagator.assume(!v[3]));
        assert_eq!(propagator.value(v[2]), Some(true));
    }

    #[test]
    fn contradictory_units_make_level_zero_inconsistent() {
        let a = Lit::positive(0);
        let (lits, ends) = clauses(&[&[a], &[!a]]);
        assert!(Propagator::new(1, lits, ends).is_inconsistent());
    }
}
