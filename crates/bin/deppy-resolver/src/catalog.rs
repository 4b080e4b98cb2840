//! The catalogs a resolution draws from: an indexed file-based catalog under the name that
//! selections use, with its priority.

use fbc::CatalogIndex;

use crate::error::ResolveError;

/// One catalog to resolve against.
///
/// Borrowed, so that a controller can keep its catalogs (e.g. behind `Arc`s) and resolve many
/// requests against them without copying.
#[derive(Debug, Clone, Copy)]
pub struct NamedCatalog<'a> {
    /// The name selections carry (`name:package:version:channel`), e.g. the Catalog object's
    /// name. It must be non-empty and must not contain `:`.
    pub name: &'a str,
    /// Preference between catalogs: higher wins between bundles that are otherwise equally
    /// preferred (same version, same deprecation and default-channel standing).
    pub priority: i32,
    /// The catalog's content.
    pub index: &'a CatalogIndex,
}

impl<'a> NamedCatalog<'a> {
    /// A catalog with priority 0.
    pub fn new(name: &'a str, index: &'a CatalogIndex) -> Self {
        Self {
            name,
            priority: 0,
            index,
        }
    }

    /// The same catalog with another priority.
    #[must_use]
    pub fn with_priority(self, priority: i32) -> Self {
        Self { priority, ..self }
    }
}

/// Checks names (usable in selections, unique) and sorts by name, so that everything built
/// from the list is independent of the order the caller supplied.
pub(crate) fn validate<'a>(
    catalogs: impl IntoIterator<Item = NamedCatalog<'a>>,
) -> Result<Vec<NamedCatalog<'a>>, ResolveError> {
    let mut catalogs: Vec<NamedCatalog<'a>> = catalogs.into_iter().collect();
    for catalog in &catalogs {
        let reason = if catalog.name.is_empty() {
            "the name is empty"
        } else if catalog.name.contains(':') {
            "the name contains \":\", which separates the parts of a selection"
        } else {
            continue;
        };
        return Err(ResolveError::InvalidCatalogName {
            name: catalog.name.to_owned(),
            reason,
        });
    }
    catalogs.sort_by(|a, b| a.name.cmp(b.name));
    if let Some(pair) = catalogs
        .windows(2)
        .find(|pair| pair[0].name == pair[1].name)
    {
        return Err(ResolveError::DuplicateCatalog {
            name: pair[0].name.to_owned(),
        });
    }
    Ok(catalogs)
}

/// The catalogs a request may use: those named in `sources`, or all when it is empty.
pub(crate) fn select<'a>(
    catalogs: &[NamedCatalog<'a>],
    sources: &[String],
) -> Result<Vec<NamedCatalog<'a>>, ResolveError> {
    if sources.is_empty() {
        return Ok(catalogs.to_vec());
    }
    for name in sources {
        if !catalogs.iter().any(|c| c.name == name) {
            return Err(ResolveError::UnknownSource { name: name.clone() });
        }
    }
    Ok(catalogs
        .iter()
        .filter(|c| sources.iter().any(|name| name == c.name))
        .copied()
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty_index() -> CatalogIndex {
        CatalogIndex::new(fbc::Catalog::default()).unwrap()
    }

    #[test]
    fn catalogs_are_sorted_by_name_whatever_the_input_order() {
        let index = empty_index();
        let names: Vec<&str> = validate([
            NamedCatalog::new("b", &index),
            NamedCatalog::new("a", &index),
        ])
        .unwrap()
        .iter()
        .map(|c| c.name)
        .collect();
        assert_eq!(names, ["a", "b"]);
    }

    #[test]
    fn duplicate_and_unusable_names_are_rejected() {
        let index = empty_index();
        let duplicate = validate([
            NamedCatalog::new("a", &index),
            NamedCatalog::new("a", &index).with_priority(3),
        ]);
        assert!(matches!(duplicate, Err(ResolveError::DuplicateCatalog { name }) if name == "a"));
        assert!(matches!(
            validate([NamedCatalog::new("a:b", &index)]),
            Err(ResolveError::InvalidCatalogName { .. })
        ));
        assert!(matches!(
            validate([NamedCatalog::new("", &index)]),
            Err(ResolveError::InvalidCatalogName { .. })
        ));
    }

    #[test]
    fn sources_restrict_the_catalogs_and_must_all_exist() {
        let index = empty_index();
        let catalogs = validate([
            NamedCatalog::new("a", &index),
            NamedCatalog::new("b", &index),
        ])
        .unwrap();
        let chosen = select(&catalogs, &["b".to_owned()]).unwrap();
        assert_eq!(chosen.len(), 1);
        assert_eq!(chosen[0].name, "b");
        assert_eq!(select(&catalogs, &[]).unwrap().len(), 2);
        assert!(matches!(
            select(&catalogs, &["c".to_owned()]),
            Err(ResolveError::UnknownSource { name }) if name == "c"
        ));
    }
}
