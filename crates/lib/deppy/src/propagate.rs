//! Incremental unit propagation with decision levels: the preference search's cheap check of
//! a guess (gini's `Test`/`Untest` in deppy), so that a full SAT call is needed only once the
//! guesses are complete.
//!
//! It works on the clauses with every constraint switched on (selectors true), which is the
//! situation the search runs in.

use crate::encode::Lit;

const UNASSIGNED: i8 = 0;
const TRUE: i8 = 1;
const FALSE: i8 = -1;

/// Two-watched-literal propagation over a flat clause database.
pub(crate) struct Propagator {
    lits: Vec<Lit>,
    /// Clause `i` is `lits[ends[i - 1]..ends[i]]`; its first two literals are watched.
    ends: Vec<u32>,
    /// Per literal, the clauses watching it (visited when it becomes false).
    watches: Vec<Vec<u32>>,
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
            watches: vec![Vec::new(); num_vars as usize * 2],
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
        for (i, &end) in propagator.ends.iter().enumerate() {
            let end = end as usize;
            match end - start {
                0 => propagator.inconsistent = true,
                1 => units.push(propagator.lits[start]),
                _ => {
                    propagator.watches[propagator.lits[start].code()].push(i as u32);
                    propagator.watches[propagator.lits[start + 1].code()].push(i as u32);
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

    /// Propagates the queue; `false` on conflict.
    fn propagate(&mut self) -> bool {
        while self.queue_head < self.trail.len() {
            let falsified = !self.trail[self.queue_head];
            self.queue_head += 1;
            let mut watchers = std::mem::take(&mut self.watches[falsified.code()]);
            let mut kept = 0;
            let mut next = 0;
            let mut conflict = false;
            while next < watchers.len() {
                let clause = watchers[next];
                next += 1;
                let (start, end) = self.clause_range(clause);
                if self.lits[start] == falsified {
                    self.lits.swap(start, start + 1);
                }
                let other = self.lits[start];
                if self.value(other) == Some(true) {
                    watchers[kept] = clause;
                    kept += 1;
                    continue;
                }
                let mut moved = false;
                for k in start + 2..end {
                    if self.value(self.lits[k]) != Some(false) {
                        self.lits.swap(start + 1, k);
                        self.watches[self.lits[start + 1].code()].push(clause);
                        moved = true;
                        break;
                    }
                }
                if moved {
                    continue;
                }
                watchers[kept] = clause;
                kept += 1;
                if self.value(other) == Some(false) {
                    conflict = true;
                    break;
                }
                self.enqueue(other);
            }
            while next < watchers.len() {
                watchers[kept] = watchers[next];
                kept += 1;
                next += 1;
            }
            watchers.truncate(kept);
            self.watches[falsified.code()] = watchers;
            if conflict {
                return false;
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
    fn contradictory_units_make_level_zero_inconsistent() {
        let a = Lit::positive(0);
        let (lits, ends) = clauses(&[&[a], &[!a]]);
        assert!(Propagator::new(1, lits, ends).is_inconsistent());
    }
}
