//! `.indexignore`: gitignore-style patterns that hide files from the catalog.
//!
//! Each `.indexignore` applies to the directory holding it and everything below, with patterns
//! relative to that directory. As with nested `.gitignore` files, a deeper file's verdict on a
//! path wins over a shallower one's, and a file inside an ignored directory stays ignored.
//! Matching works on in-memory paths: nothing here touches the filesystem.

use std::path::PathBuf;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// The file name operator-registry reserves for ignore patterns.
pub const INDEX_IGNORE: &str = ".indexignore";

/// The ignore rules of one catalog tree.
#[derive(Clone, Default)]
pub(crate) struct IndexIgnore {
    /// (directory relative to the root, "" for the root; its patterns)
    rules: Vec<(String, Gitignore)>,
}

impl IndexIgnore {
    /// Adds the patterns of the `.indexignore` at `file` (a `/`-separated path relative to the
    /// catalog root).
    pub(crate) fn add(&mut self, file: &str, contents: &str) -> Result<(), ignore::Error> {
        let dir = parent(file).unwrap_or("").to_owned();
        let mut builder = GitignoreBuilder::new(".");
        for line in contents.lines() {
            builder.add_line(Some(PathBuf::from(file)), line)?;
        }
        let rules = builder.build()?;
        self.rules.push((dir, rules));
        // Deepest directories first, so the first verdict found is the one that wins.
        self.rules
            .sort_by(|(a, _), (b, _)| depth(b).cmp(&depth(a)).then_with(|| a.cmp(b)));
        Ok(())
    }

    /// Whether the file at `path` (relative to the catalog root) is hidden.
    pub(crate) fn is_ignored(&self, path: &str) -> bool {
        if self.rules.is_empty() {
            return false;
        }
        // A file inside an ignored directory is ignored whatever later patterns say.
        let mut end = 0;
        while let Some(offset) = path[end..].find('/') {
            end += offset;
            if self.verdict(&path[..end], true) == Some(true) {
                return true;
            }
            end += 1;
        }
        self.verdict(path, false) == Some(true)
    }

    /// The deepest applicable rule's verdict on `path`: `Some(true)` ignore, `Some(false)`
    /// explicitly kept, `None` no rule matched.
    fn verdict(&self, path: &str, is_dir: bool) -> Option<bool> {
        self.rules.iter().find_map(|(dir, rules)| {
            let relative = relative_to(dir, path)?;
            match rules.matched(relative, is_dir) {
                Match::None => None,
                Match::Ignore(_) => Some(true),
                Match::Whitelist(_) => Some(false),
            }
        })
    }
}

fn parent(path: &str) -> Option<&str> {
    path.rfind('/').map(|i| &path[..i])
}

fn depth(dir: &str) -> usize {
    if dir.is_empty() {
        0
    } else {
        dir.matches('/').count() + 1
    }
}

/// `path` relative to `dir`, if `dir` is a proper ancestor of it.
fn relative_to<'a>(dir: &str, path: &'a str) -> Option<&'a str> {
    if dir.is_empty() {
        return Some(path);
    }
    path.strip_prefix(dir)?
        .strip_prefix('/')
        .filter(|r| !r.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(files: &[(&str, &str)]) -> IndexIgnore {
        let mut ignore = IndexIgnore::default();
        for (file, contents) in files {
            ignore.add(file, contents).unwrap();
        }
        ignore
    }

    #[test]
    fn patterns_apply_relative_to_their_directory() {
        let ignore = rules(&[("pkg/.indexignore", "/notes.yaml\n")]);
        assert!(ignore.is_ignored("pkg/notes.yaml"));
        assert!(!ignore.is_ignored("notes.yaml"));
        assert!(!ignore.is_ignored("pkg/sub/notes.yaml"));
    }

    #[test]
    fn unanchored_patterns_match_at_any_depth_below() {
        let ignore = rules(&[(".indexignore", "*.md\n# comment\n\n")]);
        assert!(ignore.is_ignored("README.md"));
        assert!(ignore.is_ignored("a/b/c.md"));
        assert!(!ignore.is_ignored("a/b/c.yaml"));
    }

    #[test]
    fn a_deeper_file_can_keep_what_a_shallower_one_ignores() {
        let ignore = rules(&[
            (".indexignore", "*.json\n"),
            ("keep/.indexignore", "!*.json\n"),
        ]);
        assert!(ignore.is_ignored("drop/a.json"));
        assert!(!ignore.is_ignored("keep/a.json"));
    }

    #[test]
    fn files_in_an_ignored_directory_stay_ignored() {
        let ignore = rules(&[(".indexignore", "drafts/\n!drafts/keep.yaml\n")]);
        assert!(ignore.is_ignored("drafts/keep.yaml"));
        assert!(ignore.is_ignored("x/drafts/y.yaml"));
        assert!(!ignore.is_ignored("drafts.yaml"));
    }
}
