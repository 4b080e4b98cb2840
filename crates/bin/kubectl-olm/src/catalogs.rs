//! The catalogs a command reads: file-based catalog directories given with `--catalog
//! DIR[=NAME]`, each loaded whole into an index (the same parser and checks as
//! deppy-resolver's).

use std::path::PathBuf;

use fbc::CatalogIndex;

/// A `--catalog` argument: a directory, and the name it is shown under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogArg {
    /// The file-based catalog directory.
    pub dir: PathBuf,
    /// The name shown for it (default: the directory's base name).
    pub name: Option<String>,
}

/// Parses `DIR` or `DIR=NAME`.
pub fn parse_catalog(text: &str) -> Result<CatalogArg, String> {
    let (dir, name) = match text.split_once('=') {
        Some((dir, name)) => (dir, Some(name.trim())),
        None => (text, None),
    };
    if dir.is_empty() {
        return Err("the directory is empty".to_owned());
    }
    if name.is_some_and(str::is_empty) {
        return Err("the name after = is empty".to_owned());
    }
    Ok(CatalogArg {
        dir: PathBuf::from(dir),
        name: name.map(str::to_owned),
    })
}

/// One loaded catalog.
pub struct Catalog {
    /// Its name.
    pub name: String,
    /// Its content.
    pub index: CatalogIndex,
}

/// Loads every catalog of `args`, in the order given; the error is a sentence naming the
/// catalog and why.
pub fn load(args: &[CatalogArg]) -> Result<Vec<Catalog>, String> {
    let mut catalogs: Vec<Catalog> = Vec::with_capacity(args.len());
    for arg in args {
        let dir = arg
            .dir
            .canonicalize()
            .map_err(|err| format!("cannot read catalog directory {}: {err}", arg.dir.display()))?;
        let name = match &arg.name {
            Some(name) => name.clone(),
            None => dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .ok_or_else(|| {
                    format!(
                        "cannot name catalog {}: give a name with --catalog DIR=NAME",
                        arg.dir.display()
                    )
                })?,
        };
        if catalogs.iter().any(|c| c.name == name) {
            return Err(format!(
                "two catalogs are named {name}: give one another name with --catalog DIR=NAME"
            ));
        }
        let index = CatalogIndex::from_dir(&arg.dir).map_err(|err| {
            format!(
                "failed to load catalog {name} from {}: {err}",
                arg.dir.display()
            )
        })?;
        catalogs.push(Catalog { name, index });
    }
    Ok(catalogs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_catalog_argument_is_a_directory_and_an_optional_name() {
        assert_eq!(
            parse_catalog("./cat").unwrap(),
            CatalogArg {
                dir: "./cat".into(),
                name: None
            }
        );
        assert_eq!(
            parse_catalog("./cat=community").unwrap().name.as_deref(),
            Some("community")
        );
        assert!(parse_catalog("=x").is_err());
        assert!(parse_catalog("./cat=").is_err());
    }
}
