//! Content for Bundles whose source is `upload`: normalised locally, written to the
//! content store through the API server (no extra server), and recorded on the Bundle,
//! where the Bundle controller verifies it and marks the Bundle unpacked.

use std::path::PathBuf;

use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use rukpak_api::{Bundle, SourceType};
use serde_json::json;

use content::store::{Store, StoredContent};
use content::upload::UploadInput;

use crate::UPLOADED_DIGEST_ANNOTATION;
use crate::bundle::BUNDLE_USER;

/// A failed upload.
#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    /// The Bundle does not exist or cannot be read.
    #[error("failed to read Bundle {name}")]
    Read {
        /// Bundle name.
        name: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// The Bundle's source is not `upload`.
    #[error(
        "Bundle {name} has a {actual:?} source; only Bundles with an upload source take uploads"
    )]
    NotUpload {
        /// Bundle name.
        name: String,
        /// Its source type.
        actual: SourceType,
    },
    /// The file to upload cannot be read.
    #[error("failed to read {path}")]
    ReadInput {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Normalising or storing the content failed.
    #[error("failed to upload content for Bundle {name}")]
    Content {
        /// Bundle name.
        name: String,
        /// Why.
        #[source]
        source: content::upload::UploadError,
    },
    /// Recording the digest on the Bundle failed.
    #[error("failed to record the uploaded digest on Bundle {name}")]
    Record {
        /// Bundle name.
        name: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
}

/// Uploads `input` (a directory, or a tar.gz) as the content of Bundle `name`, storing it
/// in `namespace`.
pub async fn upload(
    client: &Client,
    namespace: &str,
    name: &str,
    input: PathBuf,
    limits: &content::Limits,
) -> Result<StoredContent, UploadError> {
    let bundles: Api<Bundle> = Api::all(client.clone());
    let bundle = bundles
        .get(name)
        .await
        .map_err(|source| UploadError::Read {
            name: name.to_owned(),
            source,
        })?;
    if bundle.spec.source.type_ != SourceType::Upload {
        return Err(UploadError::NotUpload {
            name: name.to_owned(),
            actual: bundle.spec.source.type_,
        });
    }
    let input = if input.is_dir() {
        UploadInput::Directory(input)
    } else {
        let bytes = tokio::fs::read(&input)
            .await
            .map_err(|source| UploadError::ReadInput {
                path: input.clone(),
                source,
            })?;
        UploadInput::Archive(bytes.into())
    };
    let store = Store::new(client.clone(), namespace);
    let stored = content::upload::upload(&store, BUNDLE_USER, input, limits)
        .await
        .map_err(|source| UploadError::Content {
            name: name.to_owned(),
            source,
        })?;
    let patch = json!({ "metadata": { "annotations": { UPLOADED_DIGEST_ANNOTATION: stored.digest.to_string() } } });
    bundles
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|source| UploadError::Record {
            name: name.to_owned(),
            source,
        })?;
    Ok(stored)
}
