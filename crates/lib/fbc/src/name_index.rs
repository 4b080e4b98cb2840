//! Positions of named items, found by name without a copy of each name.
//!
//! The index looks bundles up by name per package and per channel. Keyed by `String`, each
//! lookup table held its own copy of every bundle name: at 22k variables that was two copies
//! of 20,000 names (about 1.8 MiB, 3% of a whole `resolve`'s peak memory) beside the names the
//! catalog already holds. This table keeps only positions and reads each name from the list
//! it indexes.

use std::hash::BuildHasher;

/// A hash table from name to position in some list, reading names from that list. Every
/// method takes `name_at`, which gives the name at a position; it must be the same list the
/// positions were added for.
#[derive(Debug, Clone, Default)]
pub(crate) struct NameIndex {
    positions: hashbrown::HashTable<usize>,
    hasher: foldhash::fast::RandomState,
}

impl NameIndex {
    /// An empty table with room for `capacity` names.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Self {
            positions: hashbrown::HashTable::with_capacity(capacity),
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    /// The position holding `name`.
    pub(crate) fn get<'n>(&self, name: &str, name_at: impl Fn(usize) -> &'n str) -> Option<usize> {
        let hash = self.hasher.hash_one(name);
        self.positions
            .find(hash, |&position| name_at(position) == name)
            .copied()
    }

    /// Adds `position` under its name, unless a position already holds that name: then
    /// nothing is added and that position is returned.
    pub(crate) fn insert<'n>(
        &mut self,
        position: usize,
        name_at: impl Fn(usize) -> &'n str,
    ) -> Option<usize> {
        let name = name_at(position);
        let hash = self.hasher.hash_one(name);
        let hasher = &self.hasher;
        match self.positions.entry(
            hash,
            |&other| name_at(other) == name,
            |&other| hasher.hash_one(name_at(other)),
        ) {
            hashbrown::hash_table::Entry::Occupied(first) => Some(*first.get()),
            hashbrown::hash_table::Entry::Vacant(slot) => {
                slot.insert(position);
                None
            }
        }
    }
}

/// Equal when they hold the same positions: what names those stand for is the list's to say,
/// and a table's layout depends on its seed.
impl PartialEq for NameIndex {
    fn eq(&self, other: &Self) -> bool {
        let sorted = |index: &Self| {
            let mut positions: Vec<usize> = index.positions.iter().copied().collect();
            positions.sort_unstable();
            positions
        };
        sorted(self) == sorted(other)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn finds_each_name_at_its_first_position() {
        let names: Vec<String> = (0..1000).map(|n| format!("bundle.v{}", n % 700)).collect();
        let name_at = |p: usize| names[p].as_str();
        let mut index = NameIndex::with_capacity(4);
        for position in 0..names.len() {
            let first = index.insert(position, name_at);
            assert_eq!(first, (position >= 700).then(|| position - 700));
        }
        for n in 0..700 {
            assert_eq!(index.get(&format!("bundle.v{n}"), name_at), Some(n));
        }
        assert_eq!(index.get("bundle.v700", name_at), None);
        assert_eq!(index.get("", name_at), None);
    }
}
