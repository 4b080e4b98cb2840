//! The plain+v0 bundle format, plain-provisioner's one job: a flat `manifests/` directory of
//! YAML or JSON files, each holding one or more objects, at least one object in all. The
//! objects are applied as they are. The binary (`src/main.rs`) runs this format with the
//! apply engine's `run`; other formats, such as registry+v1, convert into such objects.

use apply_engine::manifest::{ManifestError, parse_documents};
use kube::core::DynamicObject;
use provisioner::BundleFormat;
use rukpak_api::BundleDeployment;

/// The provisioner id of plain+v0 bundles.
pub const PROVISIONER_ID: &str = rukpak_api::PLAIN_PROVISIONER_CLASS;

/// The plain+v0 format: the bundle's objects are applied as they are.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlainFormat;

impl BundleFormat for PlainFormat {
    fn provisioner_id(&self) -> &'static str {
        PROVISIONER_ID
    }

    fn objects(
        &self,
        files: &content::FileMap,
        _: &BundleDeployment,
    ) -> Result<Vec<DynamicObject>, String> {
        objects(
            files.iter().map(|(path, bytes)| (path, bytes.as_ref())),
            files.dirs(),
        )
        .map_err(|err| err.to_string())
    }
}

/// The directory that holds a plain bundle's manifests.
pub const MANIFESTS_DIR: &str = "manifests";

/// A bundle that is not valid plain+v0.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlainError {
    /// No `manifests/` directory.
    #[error(
        "the bundle has no \"manifests\" directory: plain+v0 bundles keep their objects in a flat manifests/ directory"
    )]
    MissingManifests,
    /// `manifests/` has a subdirectory.
    #[error(
        "subdirectories are not allowed within the \"manifests\" directory of the bundle: found {0:?}"
    )]
    Subdirectory(String),
    /// No objects at all.
    #[error("found zero objects: plain+v0 bundles are required to contain at least one object")]
    NoObjects,
    /// A manifest file is not valid.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
}

/// Reads the objects of a plain+v0 bundle, given its files (`path`, bytes) and directories
/// (paths relative to the bundle root, without a trailing slash). Files are read in path
/// order so errors and object order are deterministic.
pub fn objects<'a>(
    files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    dirs: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<DynamicObject>, PlainError> {
    let prefix = format!("{MANIFESTS_DIR}/");
    let mut has_dir = false;
    for dir in dirs {
        let dir = dir.trim_end_matches('/');
        if dir == MANIFESTS_DIR {
            has_dir = true;
        } else if dir
            .strip_prefix(&prefix)
            .is_some_and(|inner| !inner.is_empty())
        {
            return Err(PlainError::Subdirectory(dir.to_owned()));
        }
    }
    let mut manifests: Vec<(&str, &[u8])> = Vec::new();
    for (path, bytes) in files {
        if let Some(inner) = path.strip_prefix(&prefix) {
            if inner.contains('/') {
                return Err(PlainError::Subdirectory(format!(
                    "{MANIFESTS_DIR}/{}",
                    inner.split('/').next().unwrap_or(inner)
                )));
            }
            has_dir = true;
            manifests.push((path, bytes));
        }
    }
    if !has_dir {
        return Err(PlainError::MissingManifests);
    }
    manifests.sort_by(|a, b| a.0.cmp(b.0));
    let mut objects = Vec::new();
    for (path, bytes) in manifests {
        objects.extend(parse_documents(path, bytes)?);
    }
    if objects.is_empty() {
        return Err(PlainError::NoObjects);
    }
    Ok(objects)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CM: &[u8] = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n";

    #[test]
    fn objects_come_from_every_file_in_path_order() {
        let ns = b"apiVersion: v1\nkind: Namespace\nmetadata: {name: ns}\n" as &[u8];
        let files = [
            ("manifests/b.yaml", CM),
            ("manifests/a.yaml", ns),
            ("README.md", b"ignored" as &[u8]),
        ];
        let objects = objects(files, ["manifests"]).unwrap();
        let kinds: Vec<_> = objects
            .iter()
            .map(|o| o.types.as_ref().unwrap().kind.as_str())
            .collect();
        assert_eq!(kinds, ["Namespace", "ConfigMap"]);
    }

    #[test]
    fn a_missing_manifests_directory_is_refused() {
        assert_eq!(
            objects([("other/a.yaml", CM)], ["other"]),
            Err(PlainError::MissingManifests)
        );
    }

    #[test]
    fn subdirectories_are_refused_even_when_empty() {
        let err = objects(
            [("manifests/a.yaml", CM)],
            ["manifests", "manifests/nested"],
        )
        .unwrap_err();
        assert_eq!(err, PlainError::Subdirectory("manifests/nested".into()));
        let err = objects([("manifests/nested/a.yaml", CM)], ["manifests"]).unwrap_err();
        assert_eq!(err, PlainError::Subdirectory("manifests/nested".into()));
        assert!(err.to_string().contains("subdirectories are not allowed"));
    }

    #[test]
    fn an_empty_bundle_is_refused() {
        assert_eq!(
            objects([("manifests/empty.yaml", b"---\n" as &[u8])], ["manifests"]),
            Err(PlainError::NoObjects)
        );
        assert_eq!(
            objects(std::iter::empty(), ["manifests"]),
            Err(PlainError::NoObjects)
        );
    }

    #[test]
    fn manifest_errors_name_the_file() {
        let err =
            objects([("manifests/bad.yaml", b"kind: [" as &[u8])], ["manifests"]).unwrap_err();
        assert!(err.to_string().contains("manifests/bad.yaml"), "{err}");
    }
}
