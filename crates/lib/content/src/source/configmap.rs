//! ConfigMaps as a source: every key (`data` and `binaryData`) becomes a file below the
//! ConfigMap's path. Only immutable ConfigMaps are accepted, so the content cannot
//! change under a caller that already unpacked it.

use std::collections::BTreeMap;

use bytes::Bytes;
use k8s_openapi::api::core::v1::ConfigMap;

use crate::archive_error::ArchiveError;
use crate::extract::Extractor;
use crate::limits::Limits;
use crate::paths;
use crate::source::{ResolvedConfigMap, ResolvedSource, Unpacked};

/// One ConfigMap and the directory its keys are written to.
#[derive(Debug, Clone)]
pub struct ConfigMapSource {
    /// The ConfigMap as read by the caller.
    pub config_map: ConfigMap,
    /// Directory inside the content (relative; empty for the root).
    pub path: String,
}

/// Why ConfigMaps cannot become content. All of these are terminal: they describe the
/// ConfigMaps or the paths, which need to change.
#[derive(Debug, thiserror::Error)]
pub enum ConfigMapError {
    /// `immutable` is not `true`.
    #[error("failed to use configmap {name}: it is not immutable (set immutable: true)")]
    Mutable {
        /// `namespace/name`.
        name: String,
    },
    /// Two ConfigMaps write the same file.
    #[error(
        "failed to merge configmaps: file {path:?} is provided by both configmap {first} and configmap {second}"
    )]
    Conflict {
        /// The file.
        path: String,
        /// The ConfigMap that wrote it first.
        first: String,
        /// The ConfigMap that wrote it again.
        second: String,
    },
    /// A path is not a clean relative path.
    #[error("failed to use configmap {name}: path {path:?}: {reason}")]
    InvalidPath {
        /// `namespace/name`.
        name: String,
        /// The path as given.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// No ConfigMap was given.
    #[error("failed to unpack configmaps: no configmap was given")]
    Empty,
    /// The files break the content rules (limits, a file where a directory is needed).
    #[error("failed to unpack configmap {name}")]
    Content {
        /// `namespace/name`.
        name: String,
        /// What was refused.
        #[source]
        source: ArchiveError,
    },
}

impl ConfigMapError {
    /// True for every variant: ConfigMap problems need a change by a person.
    pub fn is_terminal(&self) -> bool {
        true
    }

    /// A stable snake_case label for metrics and event reasons.
    pub fn label(&self) -> &'static str {
        match self {
            ConfigMapError::Mutable { .. } => "configmap_mutable",
            ConfigMapError::Conflict { .. } => "configmap_conflict",
            ConfigMapError::InvalidPath { .. } => "configmap_invalid_path",
            ConfigMapError::Empty => "configmap_missing",
            ConfigMapError::Content { .. } => "configmap_invalid_content",
        }
    }
}

/// Merges the ConfigMaps into normalised content.
pub fn unpack(sources: &[ConfigMapSource], limits: &Limits) -> Result<Unpacked, ConfigMapError> {
    if sources.is_empty() {
        return Err(ConfigMapError::Empty);
    }
    let mut extractor = Extractor::new(*limits);
    // Which ConfigMap wrote each file, to name both sides of a conflict.
    let mut writers: BTreeMap<String, String> = BTreeMap::new();
    let mut resolved = Vec::with_capacity(sources.len());
    for source in sources {
        let config_map = &source.config_map;
        let name = qualified_name(config_map);
        if config_map.immutable != Some(true) {
            return Err(ConfigMapError::Mutable { name });
        }
        let dir =
            paths::clean_str(&source.path).map_err(|problem| ConfigMapError::InvalidPath {
                name: name.clone(),
                path: source.path.clone(),
                reason: problem.describe(),
            })?;
        let content_err = |source| ConfigMapError::Content {
            name: name.clone(),
            source,
        };
        extractor.add_dir(&dir).map_err(content_err)?;
        let text = config_map
            .data
            .iter()
            .flatten()
            .map(|(key, value)| (key, Bytes::copy_from_slice(value.as_bytes())));
        let binary = config_map
            .binary_data
            .iter()
            .flatten()
            .map(|(key, value)| (key, Bytes::copy_from_slice(&value.0)));
        for (key, data) in text.chain(binary) {
            // The API server already restricts keys to [-._a-zA-Z0-9]+ (not "." or
            // ".."); checking again keeps this function safe for any input.
            let file = paths::clean_str(key)
                .ok()
                .filter(|k| !k.is_empty() && !k.contains('/'))
                .map(|k| paths::join(&dir, &k))
                .ok_or_else(|| ConfigMapError::InvalidPath {
                    name: name.clone(),
                    path: key.clone(),
                    reason: "keys must be plain file names",
                })?;
            if let Some(first) = writers.get(&file) {
                return Err(ConfigMapError::Conflict {
                    path: file,
                    first: first.clone(),
                    second: name,
                });
            }
            extractor
                .add_file(&file, data, false)
                .map_err(content_err)?;
            writers.insert(file, name.clone());
        }
        resolved.push(ResolvedConfigMap {
            name: name.clone(),
            uid: config_map.metadata.uid.clone(),
            resource_version: config_map.metadata.resource_version.clone(),
        });
    }
    let content = extractor
        .finish()
        .map_err(|source| ConfigMapError::Content {
            name: resolved
                .iter()
                .map(|r| r.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            source,
        })?;
    Ok(Unpacked {
        content,
        resolved: ResolvedSource::ConfigMaps(resolved),
    })
}

fn qualified_name(config_map: &ConfigMap) -> String {
    let name = config_map.metadata.name.as_deref().unwrap_or("<unnamed>");
    match config_map.metadata.namespace.as_deref() {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;
    use kube::api::ObjectMeta;

    fn config_map(name: &str, immutable: Option<bool>, data: &[(&str, &str)]) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: Some("rukpak-system".to_owned()),
                uid: Some(format!("uid-{name}")),
                ..ObjectMeta::default()
            },
            immutable,
            data: Some(
                data.iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            ..ConfigMap::default()
        }
    }

    fn source(config_map: ConfigMap, path: &str) -> ConfigMapSource {
        ConfigMapSource {
            config_map,
            path: path.to_owned(),
        }
    }

    #[test]
    fn keys_become_files_below_each_path() {
        let mut binary = config_map("bin", Some(true), &[]);
        binary.binary_data = Some(BTreeMap::from([(
            "blob.bin".to_owned(),
            ByteString(vec![0, 159, 146, 150]),
        )]));
        let unpacked = unpack(
            &[
                source(
                    config_map("a", Some(true), &[("ns.yaml", "kind: Namespace")]),
                    "manifests",
                ),
                source(binary, "./data/"),
            ],
            &Limits::default(),
        )
        .unwrap();
        let files = unpacked.content.files(&Limits::default()).unwrap();
        assert_eq!(
            files.get("manifests/ns.yaml").map(|b| b.as_ref()),
            Some(&b"kind: Namespace"[..])
        );
        assert_eq!(
            files.get("data/blob.bin").map(|b| b.as_ref()),
            Some(&[0u8, 159, 146, 150][..])
        );
        let ResolvedSource::ConfigMaps(resolved) = unpacked.resolved else {
            panic!("wrong resolved source");
        };
        assert_eq!(resolved[0].name, "rukpak-system/a");
        assert_eq!(resolved[1].uid.as_deref(), Some("uid-bin"));
    }

    #[test]
    fn mutable_configmaps_are_refused() {
        for immutable in [None, Some(false)] {
            let err = unpack(
                &[source(
                    config_map("m", immutable, &[("a", "b")]),
                    "manifests",
                )],
                &Limits::default(),
            )
            .unwrap_err();
            assert_eq!(
                err.to_string(),
                "failed to use configmap rukpak-system/m: it is not immutable (set immutable: true)"
            );
            assert!(err.is_terminal());
        }
    }

    #[test]
    fn two_configmaps_writing_the_same_file_is_an_error_naming_both() {
        let err = unpack(
            &[
                source(
                    config_map("one", Some(true), &[("a.yaml", "1")]),
                    "manifests",
                ),
                source(
                    config_map("two", Some(true), &[("a.yaml", "2")]),
                    "manifests/",
                ),
            ],
            &Limits::default(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "failed to merge configmaps: file \"manifests/a.yaml\" is provided by both \
             configmap rukpak-system/one and configmap rukpak-system/two"
        );
    }

    #[test]
    fn the_same_key_under_different_paths_is_fine() {
        let unpacked = unpack(
            &[
                source(config_map("one", Some(true), &[("a.yaml", "1")]), "x"),
                source(config_map("two", Some(true), &[("a.yaml", "2")]), "y"),
            ],
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(unpacked.content.files(&Limits::default()).unwrap().len(), 2);
    }

    #[test]
    fn paths_that_leave_the_root_are_refused() {
        let err = unpack(
            &[source(config_map("a", Some(true), &[("x", "1")]), "../etc")],
            &Limits::default(),
        )
        .unwrap_err();
        assert!(matches!(err, ConfigMapError::InvalidPath { .. }), "{err}");
    }

    #[test]
    fn the_size_limit_applies_to_configmap_data() {
        let big = "x".repeat(2048);
        let limits = Limits {
            max_uncompressed_bytes: 1024,
            ..Limits::default()
        };
        let err = unpack(
            &[source(config_map("a", Some(true), &[("big", &big)]), "")],
            &limits,
        )
        .unwrap_err();
        assert!(matches!(err, ConfigMapError::Content { .. }), "{err}");
    }
}
