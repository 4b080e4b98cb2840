//! The catalogs a command reads, given with `--catalog SOURCE[=NAME]`: a file-based
//! catalog directory, or a catalog image (its `/configs`, as deppy-resolver reads
//! Catalogs), each loaded whole into an index with the same parser and checks as
//! deppy-resolver's.

use std::path::PathBuf;

use fbc::{CatalogIndex, Detail};

/// A `--catalog` argument: where the catalog is, and the name it is shown under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogArg {
    /// A directory when one exists at this path, else an image reference.
    pub source: String,
    /// The name shown for it (default: the directory's or the image repository's base
    /// name).
    pub name: Option<String>,
}

/// Parses `SOURCE` or `SOURCE=NAME`.
pub fn parse_catalog(text: &str) -> Result<CatalogArg, String> {
    let (source, name) = match text.split_once('=') {
        Some((source, name)) => (source, Some(name.trim())),
        None => (text, None),
    };
    if source.is_empty() {
        return Err("the directory or image is empty".to_owned());
    }
    if name.is_some_and(str::is_empty) {
        return Err("the name after = is empty".to_owned());
    }
    Ok(CatalogArg {
        source: source.to_owned(),
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
        let dir = PathBuf::from(&arg.source);
        let (default_name, index) = if dir.is_dir() {
            load_dir(&dir)?
        } else if looks_like_an_image(&arg.source) {
            load_image(&arg.source)?
        } else {
            return Err(format!(
                "catalog {} is neither a directory nor an image reference (registry/repository:tag)",
                arg.source
            ));
        };
        let name = match &arg.name {
            Some(name) => name.clone(),
            None => default_name.ok_or_else(|| {
                format!(
                    "cannot name catalog {}: give a name with --catalog {}=NAME",
                    arg.source, arg.source
                )
            })?,
        };
        if catalogs.iter().any(|c| c.name == name) {
            return Err(format!(
                "two catalogs are named {name}: give one another name with --catalog SOURCE=NAME"
            ));
        }
        catalogs.push(Catalog { name, index });
    }
    Ok(catalogs)
}

/// A catalog directory and its base name.
fn load_dir(dir: &std::path::Path) -> Result<(Option<String>, CatalogIndex), String> {
    let name = dir
        .canonicalize()
        .ok()
        .and_then(|dir| dir.file_name().map(|n| n.to_string_lossy().into_owned()));
    let index = CatalogIndex::from_dir(dir)
        .map_err(|err| format!("failed to load catalog {}: {err}", dir.display()))?;
    Ok((name, index))
}

/// Whether `source` can be an image reference: a registry host and a repository.
fn looks_like_an_image(source: &str) -> bool {
    let Some((host, _)) = source.split_once('/') else {
        return false;
    };
    host.contains('.') || host.contains(':') || host == "localhost"
}

/// The repository's base name of an image reference (`quay.io/org/catalog:v1` →
/// `catalog`). Pure.
fn repository_name(reference: &str) -> Option<String> {
    let path = reference.split('@').next().unwrap_or(reference);
    let last = path.rsplit('/').next()?;
    let name = last.split(':').next().unwrap_or(last);
    (!name.is_empty()).then(|| name.to_owned())
}

/// The file-based catalog in the `/configs` directory of the image `reference`, pulled
/// without credentials (public registries, and loopback ones over plain HTTP); limits and
/// the refused networks are the content crate's defaults, as for a Catalog.
fn load_image(reference: &str) -> Result<(Option<String>, CatalogIndex), String> {
    let failed = |why: String| format!("failed to load catalog image {reference}: {why}");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| failed(err.to_string()))?;
    let options = content::UnpackOptions::default();
    let limits = options.limits;
    let unpacker = content::Unpacker::new(options);
    let source = content::Source::Image(content::source::ImageSource {
        reference: reference.to_owned(),
        pull_secret: None,
        tls: content::source::TlsOptions::default(),
        directory: Some("configs".to_owned()),
    });
    let unpacked = runtime
        .block_on(unpacker.unpack(&source))
        .map_err(|err| failed(content::report(&err)))?;
    let files = unpacked
        .content
        .files(&limits)
        .map_err(|err| failed(err.to_string()))?;
    let index = CatalogIndex::from_files_with(files.iter(), Detail::Full)
        .map_err(|err| failed(err.to_string()))?;
    Ok((repository_name(reference), index))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_catalog_argument_is_a_directory_and_an_optional_name() {
        assert_eq!(
            parse_catalog("./cat").unwrap(),
            CatalogArg {
                source: "./cat".into(),
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

    #[test]
    fn an_image_is_named_after_its_repository() {
        assert!(looks_like_an_image("quay.io/org/catalog:v1"));
        assert!(looks_like_an_image("127.0.0.1:5000/catalog@sha256:abc"));
        assert!(looks_like_an_image("localhost/catalog"));
        assert!(!looks_like_an_image("catalog"));
        assert!(!looks_like_an_image("some/dir"));
        assert_eq!(
            repository_name("quay.io/org/catalog:v1").as_deref(),
            Some("catalog")
        );
        assert_eq!(
            repository_name("127.0.0.1:5000/ops/catalog@sha256:abc").as_deref(),
            Some("catalog")
        );
    }
}
