//! Validated input: identifiers resolved to variable indices once, so that encoding and search
//! work on integers.

use std::collections::hash_map::Entry;

use foldhash::{HashMap, HashMapExt};

use crate::error::{SolveError, UnknownReference};
use crate::model::{AppliedConstraint, Constraint, Identifier, Variable};

/// The logic of one applied constraint, with its references resolved into [`Problem::refs`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Mandatory,
    Prohibited,
    Dependency,
    Conflict,
    AtMost(usize),
    Or {
        subject_negated: bool,
        operand_negated: bool,
    },
}

/// One constraint applied to one variable.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Applied {
    /// Index of the carrying variable.
    pub var: u32,
    pub kind: Kind,
    /// Range of [`Problem::refs`] holding the referenced variable indices.
    start: u32,
    end: u32,
}

/// The input after validation.
pub(crate) struct Problem {
    pub variables: Vec<Variable>,
    /// Applied constraints in input order (variable, then constraint); their position is the
    /// order of explanations.
    pub applied: Vec<Applied>,
    /// `applied[first_applied[v]..first_applied[v + 1]]` are variable `v`'s constraints.
    first_applied: Vec<u32>,
    refs: Vec<u32>,
    /// Variables carrying a mandatory constraint, in input order, each once.
    pub anchors: Vec<u32>,
}

impl Problem {
    pub fn new(variables: Vec<Variable>) -> Result<Self, SolveError> {
        let too_large = |n: usize| SolveError::TooLarge(n as u64);
        if u32::try_from(variables.len()).is_err() {
            return Err(too_large(variables.len()));
        }
        let mut index: HashMap<&Identifier, u32> = HashMap::with_capacity(variables.len());
        for (i, variable) in (0u32..).zip(&variables) {
            if index.insert(&variable.id, i).is_some() {
                return Err(SolveError::DuplicateIdentifier(variable.id.clone()));
            }
        }

        // Exactly one per constraint: grown by doubling, the list was copied into fresh
        // memory a dozen times for a large problem.
        let mut applied =
            Vec::with_capacity(variables.iter().map(|v| v.constraints.len()).sum::<usize>());
        let mut first_applied = Vec::with_capacity(variables.len() + 1);
        let mut refs: Vec<u32> = Vec::new();
        let mut anchors = Vec::new();
        let mut unknown = Vec::new();
        // Callers share one candidate list between many dependents (every bundle depending on
        // a package lists all its versions); resolve each shared list once.
        let mut shared: HashMap<(usize, usize), (u32, u32)> = HashMap::new();

        for (var, variable) in (0u32..).zip(&variables) {
            first_applied.push(to_u32(applied.len())?);
            if variable.constraints.iter().any(Constraint::is_anchor) {
                anchors.push(var);
            }
            for constraint in &variable.constraints {
                let logic = constraint.logic();
                let kind = match logic {
                    Constraint::Mandatory => Kind::Mandatory,
                    Constraint::Prohibited => Kind::Prohibited,
                    Constraint::Dependency(_) => Kind::Dependency,
                    Constraint::Conflict(_) => Kind::Conflict,
                    Constraint::AtMost { n, .. } => Kind::AtMost(*n),
                    Constraint::Or {
                        subject_negated,
                        operand_negated,
                        ..
                    } => Kind::Or {
                        subject_negated: *subject_negated,
                        operand_negated: *operand_negated,
                    },
                    Constraint::Described { .. } => {
                        return Err(SolveError::Internal("description without logic"));
                    }
                };
                let ids = logic.references();
                let key = (ids.as_ptr() as usize, ids.len());
                let cached = if ids.len() > 1 {
                    shared.get(&key).copied()
                } else {
                    None
                };
                let (start, end) = match cached {
                    Some(range) => range,
                    None => {
                        let start = to_u32(refs.len())?;
                        for id in ids {
                            match index.get(id) {
                                Some(&target) => refs.push(target),
                                None => unknown.push(UnknownReference {
                                    subject: variable.id.clone(),
                                    referenced: id.clone(),
                                }),
                            }
                        }
                        let range = (start, to_u32(refs.len())?);
                        if ids.len() > 1
                            && let Entry::Vacant(slot) = shared.entry(key)
                        {
                            slot.insert(range);
                        }
                        range
                    }
                };
                applied.push(Applied {
                    var,
                    kind,
                    start,
                    end,
                });
            }
        }
        first_applied.push(to_u32(applied.len())?);
        if !unknown.is_empty() {
            return Err(SolveError::UnknownReferences(unknown));
        }
        drop(index);
        Ok(Self {
            variables,
            applied,
            first_applied,
            refs,
            anchors,
        })
    }

    pub fn num_vars(&self) -> u32 {
        // Checked in `new`.
        self.variables.len() as u32
    }

    /// Where an applied constraint's references are stored: equal for constraints that were
    /// given the same shared list.
    pub fn refs_key(applied: &Applied) -> (u32, u32) {
        (applied.start, applied.end)
    }

    /// The variable indices an applied constraint refers to, in its order.
    pub fn refs(&self, applied: &Applied) -> &[u32] {
        &self.refs[applied.start as usize..applied.end as usize]
    }

    /// Indices into [`Problem::applied`] of variable `var`'s constraints.
    pub fn applied_of(&self, var: u32) -> std::ops::Range<usize> {
        let var = var as usize;
        self.first_applied[var] as usize..self.first_applied[var + 1] as usize
    }

    /// The input constraint behind `applied[index]`, for explanations.
    pub fn applied_constraint(&self, index: usize) -> Option<AppliedConstraint> {
        let applied = self.applied.get(index)?;
        let variable = self.variables.get(applied.var as usize)?;
        let position = index - self.first_applied[applied.var as usize] as usize;
        let constraint = variable.constraints.get(position)?;
        Some(AppliedConstraint {
            subject: variable.id.clone(),
            constraint: constraint.clone(),
        })
    }
}

fn to_u32(n: usize) -> Result<u32, SolveError> {
    u32::try_from(n).map_err(|_| SolveError::TooLarge(n as u64))
}
