//! Channel graphs: the head of a channel and its upgrade edges, validated as
//! operator-registry validates them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use semver::Version;

use crate::model::{Channel, ChannelEntry};
use crate::name_index::NameIndex;

/// Why a channel's graph is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChannelError {
    /// The channel has no entries.
    #[error("channel has no entries")]
    Empty,
    /// An entry appears more than once.
    #[error("entry {0:?} appears more than once")]
    DuplicateEntry(String),
    /// Entries name bundles for which the package has no `olm.bundle` blob.
    #[error("entries name bundles that do not exist: {}", .0.join(", "))]
    MissingBundles(Vec<String>),
    /// Upgrade edges form a cycle, shown as `a -> b -> a` (each replaces or skips the next).
    #[error("upgrade edges form a cycle: {}", .0.join(" -> "))]
    Cycle(Vec<String>),
    /// More than one entry is neither replaced nor skipped.
    #[error("channel has several heads: {}", .0.join(", "))]
    MultipleHeads(Vec<String>),
    /// Entries are neither on the replaces chain from the head nor skipped by any entry.
    #[error("entries are not reachable from the head: {}", .0.join(", "))]
    Stranded(Vec<String>),
}

impl ChannelError {
    /// Whether the entries are all there but their upgrade edges do not form one graph with
    /// one head (a cycle, several heads, stranded entries). Such a channel spoils only its
    /// own package: [`crate::CatalogIndex`] keeps serving the rest of the catalog.
    pub fn is_graph_error(&self) -> bool {
        matches!(
            self,
            Self::Cycle(_) | Self::MultipleHeads(_) | Self::Stranded(_)
        )
    }
}

/// A validated channel with its head and upgrade edges.
///
/// An entry `E` is an upgrade target ("successor") of bundle `X` when `E` replaces `X`, lists
/// `X` in its skips, or has a skipRange containing `X`'s version. The head is the entry no
/// other entry replaces or skips (skipRange does not count, as in operator-registry).
///
/// Validation follows operator-registry: a channel has entries, each once; every entry names a
/// bundle of the package; there is exactly one head; the replaces relation has no cycle; and
/// every entry is either on the replaces chain walked from the head or skipped by some entry
/// (otherwise it is stranded). `replaces` may name a missing bundle only at the chain's tail,
/// which the stranded rule enforces. Cycles through `skips` alone are allowed when a head
/// exists, as upstream allows them.
#[derive(Debug, Clone, PartialEq)]
pub struct ChannelGraph {
    /// The channel's own entries, shared with its [`Channel`].
    entries: Arc<[ChannelEntry]>,
    /// Each entry's bundle version, by position in `entries`.
    versions: Vec<Version>,
    /// Entry name -> position in `entries`.
    by_name: NameIndex,
    head: usize,
    chain: Vec<usize>,
}

impl ChannelGraph {
    /// Validates `channel` and builds its graph. `version_of` returns the version of a bundle
    /// of the channel's package by name, or `None` if the package has no such bundle.
    pub fn new<'v>(
        channel: &Channel,
        version_of: impl Fn(&str) -> Option<&'v Version>,
    ) -> Result<Self, ChannelError> {
        if channel.entries.is_empty() {
            return Err(ChannelError::Empty);
        }
        let mut by_name = NameIndex::with_capacity(channel.entries.len());
        let mut versions = Vec::with_capacity(channel.entries.len());
        // Indices into `versions` match `channel.entries` because any missing bundle aborts
        // below.
        let mut missing = BTreeSet::new();
        for (index, entry) in channel.entries.iter().enumerate() {
            if by_name
                .insert(index, |i| channel.entries[i].name.as_str())
                .is_some()
            {
                return Err(ChannelError::DuplicateEntry(entry.name.clone()));
            }
            match version_of(&entry.name) {
                Some(version) => versions.push(version.clone()),
                None => {
                    missing.insert(entry.name.clone());
                }
            }
        }
        if !missing.is_empty() {
            return Err(ChannelError::MissingBundles(missing.into_iter().collect()));
        }

        let mut graph = Self {
            entries: Arc::clone(&channel.entries),
            versions,
            by_name,
            head: 0,
            chain: Vec::new(),
        };
        if let Some(cycle) = graph.replaces_cycle() {
            return Err(ChannelError::Cycle(cycle));
        }
        graph.head = graph.find_head()?;
        graph.chain = graph.walk_chain()?;
        Ok(graph)
    }

    /// The channel head: the one entry nothing replaces or skips, i.e. the latest release.
    pub fn head(&self) -> &ChannelEntry {
        self.entry_at(self.head)
    }

    /// The entries in channel order.
    pub fn entries(&self) -> impl Iterator<Item = &ChannelEntry> {
        self.entries.iter()
    }

    /// The entry for bundle `name`, if it is in the channel.
    pub fn entry(&self, name: &str) -> Option<&ChannelEntry> {
        self.position(name).map(|i| self.entry_at(i))
    }

    /// Whether bundle `name` is in the channel.
    pub fn contains(&self, name: &str) -> bool {
        self.position(name).is_some()
    }

    /// The replaces chain walked from the head (head first), stopping at the first bundle
    /// that is missing or skipped. This is OLM v0's preference order within a channel.
    pub fn replaces_chain(&self) -> impl Iterator<Item = &ChannelEntry> {
        self.chain.iter().map(|&i| self.entry_at(i))
    }

    /// The entries a bundle can upgrade to directly: those that replace `name`, skip `name`,
    /// or whose skipRange contains `version`. The bundle need not be in the channel (an
    /// installed bundle may come from another channel or catalog); it is never its own
    /// successor. Returned in channel order.
    pub fn successors(&self, name: &str, version: Option<&Version>) -> Vec<&ChannelEntry> {
        self.entries
            .iter()
            .filter(|entry| entry.name != name && upgrades_from(entry, name, version))
            .collect()
    }

    /// The entries of this channel that can upgrade directly to entry `name`.
    pub fn predecessors(&self, name: &str) -> Vec<&ChannelEntry> {
        let Some(target) = self.entry(name) else {
            return Vec::new();
        };
        self.entries
            .iter()
            .zip(&self.versions)
            .filter(|(entry, version)| {
                entry.name != name && upgrades_from(target, &entry.name, Some(version))
            })
            .map(|(entry, _)| entry)
            .collect()
    }

    /// Every upgrade edge `(from, to)` between entries of the channel, in channel order of
    /// `to`, then of `from`.
    pub fn edges(&self) -> Vec<(&str, &str)> {
        let mut edges = Vec::new();
        for to in self.entries.iter() {
            for (from, version) in self.entries.iter().zip(&self.versions) {
                if from.name != to.name && upgrades_from(to, &from.name, Some(version)) {
                    edges.push((from.name.as_str(), to.name.as_str()));
                }
            }
        }
        edges
    }

    /// Indices come from `by_name`, `head` and `chain`, all built from `entries` in `new`.
    fn entry_at(&self, index: usize) -> &ChannelEntry {
        &self.entries[index]
    }

    /// The position in `entries` of bundle `name`.
    fn position(&self, name: &str) -> Option<usize> {
        self.by_name.get(name, |i| self.entries[i].name.as_str())
    }

    /// A cycle in the replaces relation among entries, rotated to start at its smallest name.
    fn replaces_cycle(&self) -> Option<Vec<String>> {
        // Each entry replaces at most one other, so following `replaces` from every entry
        // finds every cycle.
        let mut done = vec![false; self.entries.len()];
        for start in 0..self.entries.len() {
            let mut path: Vec<usize> = Vec::new();
            let mut on_path = HashMap::new();
            let mut current = Some(start);
            while let Some(i) = current {
                if done[i] {
                    break;
                }
                if let Some(&pos) = on_path.get(&i) {
                    return Some(self.cycle_names(&path[pos..]));
                }
                on_path.insert(i, path.len());
                path.push(i);
                current = self.entries[i]
                    .replaces
                    .as_deref()
                    .and_then(|r| self.position(r));
            }
            for i in path {
                done[i] = true;
            }
        }
        None
    }

    fn cycle_names(&self, cycle: &[usize]) -> Vec<String> {
        let names: Vec<&str> = cycle
            .iter()
            .map(|&i| self.entries[i].name.as_str())
            .collect();
        let start = names
            .iter()
            .enumerate()
            .min_by_key(|(_, name)| **name)
            .map_or(0, |(i, _)| i);
        let mut out: Vec<String> = names[start..]
            .iter()
            .chain(&names[..start])
            .map(|n| (*n).to_owned())
            .collect();
        if let Some(first) = out.first().cloned() {
            out.push(first);
        }
        out
    }

    fn find_head(&self) -> Result<usize, ChannelError> {
        let mut pointed_at = HashSet::new();
        for node in self.entries.iter() {
            pointed_at.extend(node.replaces.as_deref());
            pointed_at.extend(node.skips.iter().map(String::as_str));
        }
        let heads: Vec<usize> = (0..self.entries.len())
            .filter(|&i| !pointed_at.contains(self.entries[i].name.as_str()))
            .collect();
        match heads.as_slice() {
            [head] => Ok(*head),
            [] => Err(ChannelError::Cycle(self.any_cycle())),
            _ => {
                let mut names: Vec<String> = heads
                    .iter()
                    .map(|&i| self.entries[i].name.clone())
                    .collect();
                names.sort();
                Err(ChannelError::MultipleHeads(names))
            }
        }
    }

    /// A cycle through replaces and skips edges. Only called when every entry is pointed at
    /// by another, which guarantees that walking backwards along those pointers revisits an
    /// entry.
    fn any_cycle(&self) -> Vec<String> {
        // pointers[i]: the entries entry i replaces or skips, in a stable order.
        let pointers: Vec<Vec<usize>> = self
            .entries
            .iter()
            .map(|node| {
                node.replaces
                    .iter()
                    .chain(&node.skips)
                    .filter_map(|name| self.position(name))
                    .collect()
            })
            .collect();
        // Every entry is pointed at, so each has a pointer *from* some entry: walk those.
        let mut pointed_by: BTreeMap<usize, usize> = BTreeMap::new();
        for (from, targets) in pointers.iter().enumerate() {
            for &to in targets {
                pointed_by.entry(to).or_insert(from);
            }
        }
        let mut seen = HashMap::new();
        let mut path = Vec::new();
        let mut current = 0;
        while let Some(&next) = pointed_by.get(&current) {
            if let Some(&pos) = seen.get(&current) {
                // The walk went against the edges; reverse it so each name points at the next.
                let mut cycle: Vec<usize> = path[pos..].to_vec();
                cycle.reverse();
                return self.cycle_names(&cycle);
            }
            seen.insert(current, path.len());
            path.push(current);
            current = next;
        }
        // Unreachable when every entry is pointed at; report all entries rather than panic.
        self.entries.iter().map(|n| n.name.clone()).collect()
    }

    fn walk_chain(&self) -> Result<Vec<usize>, ChannelError> {
        let skipped: HashSet<&str> = self
            .entries
            .iter()
            .flat_map(|node| node.skips.iter().map(String::as_str))
            .collect();
        let mut chain = vec![self.head];
        let mut on_chain: HashSet<usize> = chain.iter().copied().collect();
        let mut current = self.head;
        while let Some(replaces) = self.entries[current].replaces.as_deref() {
            if skipped.contains(replaces) {
                break;
            }
            let Some(next) = self.position(replaces) else {
                break;
            };
            if !on_chain.insert(next) {
                // Excluded by `replaces_cycle`; stop rather than loop.
                break;
            }
            chain.push(next);
            current = next;
        }
        let stranded: Vec<String> = self
            .entries
            .iter()
            .enumerate()
            .filter(|(i, node)| !on_chain.contains(i) && !skipped.contains(node.name.as_str()))
            .map(|(_, node)| node.name.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if stranded.is_empty() {
            Ok(chain)
        } else {
            Err(ChannelError::Stranded(stranded))
        }
    }
}

/// Whether `entry` is a direct upgrade from bundle `name` at `version`.
pub(crate) fn upgrades_from(entry: &ChannelEntry, name: &str, version: Option<&Version>) -> bool {
    entry.replaces.as_deref() == Some(name)
        || entry.skips.iter().any(|s| s == name)
        || matches!((&entry.skip_range, version), (Some(range), Some(v)) if range.matches(v))
}
