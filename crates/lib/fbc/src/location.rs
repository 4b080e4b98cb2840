//! Where a blob came from, so every error can point at the file and document to fix.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

/// The origin of one blob: its file, its position in that file and, where known, its schema and
/// name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Location {
    /// Path of the file relative to the catalog root, `/`-separated; shared by every blob of
    /// the file.
    pub file: Arc<str>,
    /// 1-based position of the document within the file (YAML documents or concatenated JSON
    /// values, empty YAML documents included in the count).
    pub document: usize,
    /// The blob's `schema`, once read (the schemas this crate reads are not copied).
    pub schema: Option<Cow<'static, str>>,
    /// The blob's `name`, if it has one.
    pub name: Option<String>,
}

impl Location {
    /// A location that knows only its file and document position.
    pub fn new(file: impl Into<Arc<str>>, document: usize) -> Self {
        Self {
            file: file.into(),
            document,
            schema: None,
            name: None,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} document {}", self.file, self.document)?;
        match (&self.schema, &self.name) {
            (Some(schema), Some(name)) => write!(f, " ({schema} {name:?})"),
            (Some(schema), None) => write!(f, " ({schema})"),
            (None, Some(name)) => write!(f, " ({name:?})"),
            (None, None) => Ok(()),
        }
    }
}
