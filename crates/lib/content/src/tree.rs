//! The in-memory file tree that incoming content is assembled into before it is
//! normalised: later entries and layers replace earlier ones, whiteouts delete, and
//! links are checked against the final tree.

use std::collections::{BTreeMap, HashSet, VecDeque};

use crate::archive_error::ArchiveError;
use crate::paths;
use crate::spill::FileData;

/// How many symlinks one path resolution may follow (as Linux's `MAXSYMLINKS`).
const MAX_SYMLINK_HOPS: u32 = 40;

/// One entry of the tree. The root directory is implicit and never stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Node {
    /// A directory.
    Dir,
    /// A regular file; `executable` keeps only the information "some x bit was set".
    /// Its data may be in memory or spilled (see [`crate::spill`]).
    File { data: FileData, executable: bool },
    /// A symbolic link, target as written in the archive (checked by [`Tree::validate`]).
    Symlink { target: String },
}

/// Why a symlink cannot be resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LinkProblem {
    /// The target is absolute or climbs above the content root.
    Escapes,
    /// Too many symlinks on the way (a loop).
    Loop,
}

/// Where a path leads after following symlinks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Resolved {
    /// An existing entry (file or directory) at this clean path.
    Found(String),
    /// Nothing exists there (a dangling link).
    Missing,
}

/// Paths (clean, relative to the content root) mapped to nodes, in byte order, which is
/// also the order of the normalised archive.
#[derive(Debug, Default)]
pub(crate) struct Tree {
    nodes: BTreeMap<String, Node>,
    /// Paths written by the current layer; whiteouts only remove what lower layers wrote.
    layer: HashSet<String>,
}

impl Tree {
    /// Starts a new layer: whiteouts from now on apply to everything written so far.
    pub(crate) fn start_layer(&mut self) {
        self.layer.clear();
    }

    /// All nodes in byte order of their paths.
    pub(crate) fn nodes(&self) -> &BTreeMap<String, Node> {
        &self.nodes
    }

    /// All nodes, consuming the tree.
    pub(crate) fn into_nodes(self) -> BTreeMap<String, Node> {
        self.nodes
    }

    /// The node at a clean path.
    pub(crate) fn get(&self, path: &str) -> Option<&Node> {
        self.nodes.get(path)
    }

    /// Inserts a node at a clean, non-empty path, creating missing parent directories.
    /// A non-directory replaces a directory together with everything below it (as a
    /// layer does in an image); a directory over a directory is a no-op.
    pub(crate) fn insert(&mut self, path: &str, node: Node) -> Result<(), ArchiveError> {
        self.ensure_parents(path)?;
        match (self.nodes.get(path), &node) {
            (Some(Node::Dir), Node::Dir) => {}
            (Some(Node::Dir), _) => {
                self.remove_below(path, false);
                self.nodes.insert(path.to_owned(), node);
            }
            _ => {
                self.nodes.insert(path.to_owned(), node);
            }
        }
        self.layer.insert(path.to_owned());
        Ok(())
    }

    /// Makes `path` a regular file with the data of the regular file at `target` (hard
    /// links become independent copies, which is all a reader can observe).
    pub(crate) fn hard_link(&mut self, path: &str, target: &str) -> Result<(), ArchiveError> {
        let node = match self.nodes.get(target) {
            Some(Node::File { data, executable }) => Node::File {
                data: data.clone(),
                executable: *executable,
            },
            _ => {
                return Err(ArchiveError::HardLinkTarget {
                    path: path.to_owned(),
                    target: target.to_owned(),
                });
            }
        };
        self.insert(path, node)
    }

    /// Applies a whiteout: removes `path` and everything below it that lower layers wrote.
    pub(crate) fn whiteout(&mut self, path: &str) {
        if !self.layer.contains(path) {
            self.nodes.remove(path);
        }
        self.remove_below(path, true);
    }

    /// Applies an opaque-directory marker: removes everything below `dir` (`""` is the
    /// root) that lower layers wrote.
    pub(crate) fn opaque(&mut self, dir: &str) {
        self.remove_below(dir, true);
    }

    /// Checks every symlink of the final tree: its target must stay inside the root
    /// (following other symlinks on the way) and resolution must terminate.
    pub(crate) fn validate(&self) -> Result<(), ArchiveError> {
        for (path, node) in &self.nodes {
            if let Node::Symlink { target } = node {
                self.resolve_link(path, target)
                    .map_err(|problem| match problem {
                        LinkProblem::Escapes => ArchiveError::LinkEscapes {
                            path: path.clone(),
                            target: target.clone(),
                        },
                        LinkProblem::Loop => ArchiveError::SymlinkLoop { path: path.clone() },
                    })?;
            }
        }
        Ok(())
    }

    /// Where the symlink at `path` with `target` leads.
    pub(crate) fn resolve_link(&self, path: &str, target: &str) -> Result<Resolved, LinkProblem> {
        if target.starts_with('/') {
            return Err(LinkProblem::Escapes);
        }
        let mut stack: Vec<String> = paths::parent(path)
            .split('/')
            .filter(|c| !c.is_empty())
            .map(str::to_owned)
            .collect();
        let mut queue: VecDeque<String> = target.split('/').map(str::to_owned).collect();
        let mut hops = 1u32;
        // Once a component is missing (or a file is used as a directory) the result is
        // dangling, but the rest is still walked lexically so that `missing/../../..`
        // is refused too: another extractor might create the missing directories.
        let mut missing = false;
        while let Some(component) = queue.pop_front() {
            match component.as_str() {
                "" | "." => {}
                ".." => {
                    if stack.pop().is_none() {
                        return Err(LinkProblem::Escapes);
                    }
                }
                name => {
                    stack.push(name.to_owned());
                    if missing {
                        continue;
                    }
                    match self.nodes.get(&stack.join("/")) {
                        Some(Node::Symlink { target }) => {
                            hops += 1;
                            if hops > MAX_SYMLINK_HOPS {
                                return Err(LinkProblem::Loop);
                            }
                            if target.starts_with('/') {
                                return Err(LinkProblem::Escapes);
                            }
                            stack.pop();
                            for part in target.split('/').rev() {
                                queue.push_front(part.to_owned());
                            }
                        }
                        Some(Node::File { .. }) => {
                            if queue.iter().any(|c| !c.is_empty() && c != ".") {
                                missing = true;
                            }
                        }
                        Some(Node::Dir) => {}
                        None => missing = true,
                    }
                }
            }
        }
        Ok(if missing {
            Resolved::Missing
        } else {
            Resolved::Found(stack.join("/"))
        })
    }

    fn ensure_parents(&mut self, path: &str) -> Result<(), ArchiveError> {
        let mut end = 0;
        while let Some(offset) = path[end..].find('/') {
            end += offset;
            let parent = &path[..end];
            match self.nodes.get(parent) {
                Some(Node::Dir) => {}
                Some(Node::Symlink { .. }) => {
                    return Err(ArchiveError::BelowSymlink {
                        path: path.to_owned(),
                        link: parent.to_owned(),
                    });
                }
                Some(Node::File { .. }) | None => {
                    self.nodes.insert(parent.to_owned(), Node::Dir);
                    self.layer.insert(parent.to_owned());
                }
            }
            end += 1;
        }
        Ok(())
    }

    /// Removes everything strictly below `dir` (`""`: everything), optionally sparing
    /// what the current layer wrote.
    fn remove_below(&mut self, dir: &str, spare_layer: bool) {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let doomed: Vec<String> = self
            .nodes
            .range(prefix.clone()..)
            .map(|(path, _)| path)
            .take_while(|path| path.starts_with(&prefix))
            .filter(|path| !(spare_layer && self.layer.contains(path.as_str())))
            .cloned()
            .collect();
        for path in doomed {
            self.nodes.remove(&path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> Node {
        Node::File {
            data: FileData::Memory(bytes::Bytes::copy_from_slice(text.as_bytes())),
            executable: false,
        }
    }

    fn link(target: &str) -> Node {
        Node::Symlink {
            target: target.to_owned(),
        }
    }

    fn paths(tree: &Tree) -> Vec<&str> {
        tree.nodes().keys().map(String::as_str).collect()
    }

    #[test]
    fn inserting_a_file_creates_its_parent_directories() {
        let mut tree = Tree::default();
        tree.insert("a/b/c.yaml", file("x")).unwrap();
        assert_eq!(paths(&tree), ["a", "a/b", "a/b/c.yaml"]);
        assert_eq!(tree.get("a/b"), Some(&Node::Dir));
    }

    #[test]
    fn a_file_replacing_a_directory_removes_its_children() {
        let mut tree = Tree::default();
        tree.insert("a/b", file("x")).unwrap();
        tree.start_layer();
        tree.insert("a", file("y")).unwrap();
        assert_eq!(paths(&tree), ["a"]);
    }

    #[test]
    fn whiteouts_remove_lower_layers_but_not_the_current_one() {
        let mut tree = Tree::default();
        tree.insert("etc/a", file("lower")).unwrap();
        tree.insert("etc/b", file("lower")).unwrap();
        tree.start_layer();
        tree.insert("etc/c", file("upper")).unwrap();
        tree.opaque("etc");
        assert_eq!(paths(&tree), ["etc", "etc/c"]);
        tree.whiteout("etc/c");
        assert_eq!(paths(&tree), ["etc", "etc/c"], "same-layer entry is kept");
        tree.start_layer();
        tree.whiteout("etc");
        assert!(paths(&tree).is_empty());
    }

    #[test]
    fn entries_below_a_symlink_are_refused() {
        let mut tree = Tree::default();
        tree.insert("lib", link("usr/lib")).unwrap();
        let err = tree.insert("lib/x.so", file("x")).unwrap_err();
        assert!(matches!(err, ArchiveError::BelowSymlink { .. }), "{err}");
    }

    #[test]
    fn symlinks_resolve_through_other_symlinks() {
        let mut tree = Tree::default();
        tree.insert("data/real.yaml", file("x")).unwrap();
        tree.insert("dir", link("data")).unwrap();
        tree.insert("m/alias.yaml", link("../dir/real.yaml"))
            .unwrap();
        assert_eq!(
            tree.resolve_link("m/alias.yaml", "../dir/real.yaml"),
            Ok(Resolved::Found("data/real.yaml".to_owned()))
        );
        tree.validate().unwrap();
    }

    #[test]
    fn a_symlink_that_escapes_through_another_symlink_is_refused() {
        // Lexically d/l/.. is "d", physically it is the parent of the root.
        let mut tree = Tree::default();
        tree.insert("d/l", link("..")).unwrap();
        tree.insert("m", link("d/l/..")).unwrap();
        let err = tree.validate().unwrap_err();
        assert!(
            matches!(err, ArchiveError::LinkEscapes { ref path, .. } if path == "m"),
            "{err}"
        );
    }

    #[test]
    fn dangling_symlinks_are_allowed_unless_they_climb_out() {
        let mut tree = Tree::default();
        tree.insert("a", link("missing/file")).unwrap();
        tree.validate().unwrap();
        tree.insert("b", link("missing/../../x")).unwrap();
        assert!(matches!(
            tree.validate(),
            Err(ArchiveError::LinkEscapes { .. })
        ));
    }

    #[test]
    fn symlink_loops_are_refused() {
        let mut tree = Tree::default();
        tree.insert("a", link("b")).unwrap();
        tree.insert("b", link("a")).unwrap();
        assert!(matches!(
            tree.validate(),
            Err(ArchiveError::SymlinkLoop { .. })
        ));
    }

    #[test]
    fn hard_links_copy_the_target_file() {
        let mut tree = Tree::default();
        tree.insert("a", file("x")).unwrap();
        tree.hard_link("b", "a").unwrap();
        assert_eq!(tree.get("b"), Some(&file("x")));
        assert!(matches!(
            tree.hard_link("c", "nope"),
            Err(ArchiveError::HardLinkTarget { .. })
        ));
    }
}
