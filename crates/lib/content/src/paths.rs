//! Path hygiene: every path that enters the content is relative, clean and inside the
//! content root.

/// Why a path was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathProblem {
    /// Starts with `/`.
    Absolute,
    /// Has a `..` component.
    ParentDir,
    /// Not valid UTF-8.
    NotUtf8,
    /// Contains a NUL byte.
    Nul,
}

impl PathProblem {
    /// A short human description, used in error messages.
    pub fn describe(self) -> &'static str {
        match self {
            PathProblem::Absolute => "absolute paths are not allowed",
            PathProblem::ParentDir => "'..' components are not allowed",
            PathProblem::NotUtf8 => "the path is not valid UTF-8",
            PathProblem::Nul => "the path contains a NUL byte",
        }
    }
}

/// Cleans a path from an archive or a caller: drops empty and `.` components (so
/// `./a//b/` becomes `a/b`), and refuses absolute paths and `..`. An empty result means
/// the content root itself.
pub fn clean(raw: &[u8]) -> Result<String, PathProblem> {
    let text = std::str::from_utf8(raw).map_err(|_| PathProblem::NotUtf8)?;
    clean_str(text)
}

/// [`clean`] for text.
pub fn clean_str(text: &str) -> Result<String, PathProblem> {
    if text.contains('\0') {
        return Err(PathProblem::Nul);
    }
    if text.starts_with('/') {
        return Err(PathProblem::Absolute);
    }
    let mut out = String::with_capacity(text.len());
    for component in text.split('/') {
        match component {
            "" | "." => {}
            ".." => return Err(PathProblem::ParentDir),
            name => {
                if !out.is_empty() {
                    out.push('/');
                }
                out.push_str(name);
            }
        }
    }
    Ok(out)
}

/// `path` relative to `dir` when it is `dir` itself (`Some("")`) or below it; `None`
/// otherwise. Both are clean paths; an empty `dir` is the root and contains everything.
pub fn strip_dir<'a>(path: &'a str, dir: &str) -> Option<&'a str> {
    if dir.is_empty() {
        return Some(path);
    }
    if path == dir {
        return Some("");
    }
    path.strip_prefix(dir)?.strip_prefix('/')
}

/// The parent of a clean path (`""` for top-level names).
pub fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(parent, _)| parent)
}

/// The last component of a clean path.
pub fn file_name(path: &str) -> &str {
    path.rsplit_once('/').map_or(path, |(_, name)| name)
}

/// Joins two clean paths.
pub fn join(dir: &str, name: &str) -> String {
    match (dir.is_empty(), name.is_empty()) {
        (true, _) => name.to_owned(),
        (_, true) => dir.to_owned(),
        _ => format!("{dir}/{name}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_paths_lose_dots_and_duplicate_slashes() {
        assert_eq!(clean(b"./a//b/./c/").unwrap(), "a/b/c");
        assert_eq!(clean(b"./").unwrap(), "");
        assert_eq!(clean(b"manifests").unwrap(), "manifests");
    }

    #[test]
    fn traversal_and_absolute_paths_are_refused() {
        assert_eq!(clean(b"../x"), Err(PathProblem::ParentDir));
        assert_eq!(clean(b"a/../../x"), Err(PathProblem::ParentDir));
        assert_eq!(clean(b"a/.."), Err(PathProblem::ParentDir));
        assert_eq!(clean(b"/etc/passwd"), Err(PathProblem::Absolute));
        assert_eq!(clean(b"a\0b"), Err(PathProblem::Nul));
        assert_eq!(clean(b"\xff"), Err(PathProblem::NotUtf8));
    }

    #[test]
    fn strip_dir_only_matches_whole_components() {
        assert_eq!(strip_dir("configs/a.yaml", "configs"), Some("a.yaml"));
        assert_eq!(strip_dir("configs", "configs"), Some(""));
        assert_eq!(strip_dir("configs2/a.yaml", "configs"), None);
        assert_eq!(strip_dir("x", ""), Some("x"));
    }

    #[test]
    fn parent_file_name_and_join_agree() {
        assert_eq!(parent("a/b/c"), "a/b");
        assert_eq!(parent("a"), "");
        assert_eq!(file_name("a/b/c"), "c");
        assert_eq!(join("a/b", "c"), "a/b/c");
        assert_eq!(join("", "c"), "c");
    }
}
