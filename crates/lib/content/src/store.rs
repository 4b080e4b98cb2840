//! The content store: normalised content kept on the API server as immutable
//! ConfigMaps of at most 900 KiB `binaryData` each, named and labelled by digest.
//!
//! - Chunk `i` of content `sha256:<hex>` is ConfigMap `content-<first 16 hex>-<i>` in
//!   the store's namespace, with the bytes under `binaryData.content`, labels for the
//!   digest (first 32 hex digits: label values stop at 63 characters), the chunk index
//!   and the chunk count, and annotations with the full digest, the chunk's own sha256
//!   and the content size.
//! - Content is shared: writing content that exists adds an ownerReference and
//!   changes nothing else. The objects that use it own it, so the garbage collector
//!   deletes the chunks when the last owner goes.
//! - Chunk 0 is written last: when it exists, all chunks were written.
//! - Every read verifies every chunk and the whole digest; a missing or corrupted chunk
//!   is an error, never returned as content. A writer that finds a corrupted chunk
//!   replaces it (keeping its owners).
//! - Two writers of the same digest race harmlessly: AlreadyExists with matching
//!   content is success.

use std::collections::BTreeMap;

use bytes::{Bytes, BytesMut};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions};
use kube::{Api, Client};
use serde_json::json;

use crate::content::Content;
use crate::digest::Digest;

/// Label with the first 32 hex digits of the content digest.
pub const LABEL_DIGEST: &str = "content.olmv1.io/digest";
/// Label with the chunk's index (0-based).
pub const LABEL_CHUNK: &str = "content.olmv1.io/chunk";
/// Label with the number of chunks of the content.
pub const LABEL_CHUNKS: &str = "content.olmv1.io/chunks";
/// Annotation with the full content digest (`sha256:<64 hex>`).
pub const ANNOTATION_DIGEST: &str = "content.olmv1.io/digest";
/// Annotation with the chunk's own digest.
pub const ANNOTATION_CHUNK_DIGEST: &str = "content.olmv1.io/chunk-digest";
/// Annotation with the content size in bytes.
pub const ANNOTATION_SIZE: &str = "content.olmv1.io/size";
/// The `binaryData` key holding a chunk's bytes.
pub const DATA_KEY: &str = "content";
/// Largest chunk: ConfigMaps hold at most 1 MiB, leaving room for metadata.
pub const MAX_CHUNK_SIZE: usize = 900 * 1024;

/// Chunks read or written concurrently.
const PARALLEL_CHUNKS: usize = 4;
/// Attempts to replace a corrupted chunk that others are replacing too.
const REPLACE_ATTEMPTS: usize = 3;

/// Where content lives: a namespace of the API server.
#[derive(Clone)]
pub struct Store {
    api: Api<ConfigMap>,
    namespace: String,
    chunk_size: usize,
}

/// What the store holds for one digest (the `content` of a status).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredContent {
    /// The content digest.
    pub digest: Digest,
    /// Size of the content (the tar.gz) in bytes.
    pub size: u64,
    /// Number of chunks (ConfigMaps).
    pub chunks: u32,
}

/// Why the store could not read or write.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// An API request failed.
    #[error("failed to {verb} configmap {object}")]
    Api {
        /// What was attempted (`create`, `get`, `patch`, `delete`, `list`).
        verb: &'static str,
        /// `namespace/name` or a label selector.
        object: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// No content with this digest.
    #[error("failed to read content {digest}: not found in namespace {namespace}")]
    NotFound {
        /// The digest.
        digest: Digest,
        /// The store's namespace.
        namespace: String,
    },
    /// A chunk is missing.
    #[error(
        "failed to read content {digest}: chunk {index} of {count} (configmap {object}) is missing"
    )]
    MissingChunk {
        /// The digest.
        digest: Digest,
        /// The missing chunk.
        index: u32,
        /// The number of chunks.
        count: u32,
        /// `namespace/name` of the chunk.
        object: String,
    },
    /// A chunk or the whole does not match its digest, or its metadata is malformed.
    #[error("failed to read content {digest}: configmap {object} is corrupted: {reason}")]
    Corrupt {
        /// The digest.
        digest: Digest,
        /// `namespace/name` of the chunk.
        object: String,
        /// What is wrong.
        reason: String,
    },
    /// A chunk name is taken by different content (a 64-bit prefix collision).
    #[error("failed to write content {digest}: configmap {object} holds other content ({other})")]
    Collision {
        /// The digest.
        digest: Digest,
        /// `namespace/name` of the chunk.
        object: String,
        /// The other content's digest annotation.
        other: String,
    },
    /// The owner reference is incomplete.
    #[error(
        "failed to write content {digest}: owner reference needs apiVersion, kind, name and uid"
    )]
    InvalidOwner {
        /// The digest.
        digest: Digest,
    },
}

impl StoreError {
    /// Whether retrying cannot help. Only a bad owner reference, a name collision and
    /// requests the API server rejects as invalid are terminal; missing or corrupted
    /// chunks are repaired by the next write.
    pub fn is_terminal(&self) -> bool {
        match self {
            StoreError::Api { source, .. } => {
                matches!(source, kube::Error::Api(status) if status.is_invalid() || status.code == 400)
            }
            StoreError::Collision { .. } | StoreError::InvalidOwner { .. } => true,
            StoreError::NotFound { .. }
            | StoreError::MissingChunk { .. }
            | StoreError::Corrupt { .. } => false,
        }
    }

    /// A stable snake_case label for metrics and event reasons.
    pub fn label(&self) -> &'static str {
        match self {
            StoreError::Api { .. } => "store_api_failed",
            StoreError::NotFound { .. } => "store_not_found",
            StoreError::MissingChunk { .. } => "store_missing_chunk",
            StoreError::Corrupt { .. } => "store_corrupt",
            StoreError::Collision { .. } => "store_collision",
            StoreError::InvalidOwner { .. } => "store_invalid_owner",
        }
    }
}

impl Store {
    /// A store in `namespace`.
    pub fn new(client: Client, namespace: &str) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            chunk_size: MAX_CHUNK_SIZE,
        }
    }

    /// Uses smaller chunks (at least 1 byte, at most [`MAX_CHUNK_SIZE`]); for tests.
    pub fn with_chunk_size(mut self, chunk_size: usize) -> Self {
        self.chunk_size = chunk_size.clamp(1, MAX_CHUNK_SIZE);
        self
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The name of chunk `index` of `digest`.
    pub fn chunk_name(digest: &Digest, index: u32) -> String {
        format!("content-{}-{index}", digest.short(16))
    }

    /// The label selector that matches every chunk of `digest`.
    pub fn selector(digest: &Digest) -> String {
        format!("{LABEL_DIGEST}={}", digest.short(32))
    }

    /// Stores `content` owned by `owner`, or adds `owner` to content already stored.
    pub async fn write(
        &self,
        content: &Content,
        owner: &OwnerReference,
    ) -> Result<StoredContent, StoreError> {
        let digest = content.digest();
        if owner.api_version.is_empty()
            || owner.kind.is_empty()
            || owner.name.is_empty()
            || owner.uid.is_empty()
        {
            return Err(StoreError::InvalidOwner {
                digest: digest.clone(),
            });
        }
        // Shared content has no controller: an object allows one controller owner, so a
        // second user marked as controller could never be added.
        let owner = &OwnerReference {
            controller: None,
            block_owner_deletion: None,
            ..owner.clone()
        };
        let chunks: Vec<Bytes> = chunk(content.data(), self.chunk_size);
        let count = u32::try_from(chunks.len()).unwrap_or(u32::MAX);
        // Chunks 1.. first, concurrently; chunk 0 last marks the content complete.
        // Owned items (Bytes clones are cheap): a closure over borrowed items makes this
        // future not Send for every lifetime, so it could not run in a spawned task.
        futures::stream::iter(chunks.clone().into_iter().enumerate().skip(1))
            .map(|(index, data)| self.write_chunk(content, index as u32, count, data, owner))
            .buffer_unordered(PARALLEL_CHUNKS)
            .try_collect::<Vec<()>>()
            .await?;
        if let Some(first) = chunks.first() {
            self.write_chunk(content, 0, count, first.clone(), owner)
                .await?;
        }
        Ok(StoredContent {
            digest: digest.clone(),
            size: content.size(),
            chunks: count,
        })
    }

    async fn write_chunk(
        &self,
        content: &Content,
        index: u32,
        count: u32,
        data: Bytes,
        owner: &OwnerReference,
    ) -> Result<(), StoreError> {
        let digest = content.digest();
        let name = Self::chunk_name(digest, index);
        let chunk_digest = Digest::of(&data);
        let mut owners = vec![owner.clone()];
        for _ in 0..REPLACE_ATTEMPTS {
            let config_map =
                self.chunk_object(content, index, count, &data, &chunk_digest, &owners);
            let existing = match self.api.create(&PostParams::default(), &config_map).await {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(status)) if status.is_already_exists() => {
                    match self.api.get_opt(&name).await {
                        Ok(Some(existing)) => existing,
                        // Deleted in between (garbage collected): create again.
                        Ok(None) => continue,
                        Err(err) => return Err(self.api_err("get", &name, err)),
                    }
                }
                Err(err) => return Err(self.api_err("create", &name, err)),
            };
            let other = annotation(&existing, ANNOTATION_DIGEST).unwrap_or_default();
            if other != digest.to_string() {
                return Err(StoreError::Collision {
                    digest: digest.clone(),
                    object: self.object(&name),
                    other,
                });
            }
            if chunk_data(&existing).is_some_and(|bytes| Digest::of(bytes) == chunk_digest) {
                return self.ensure_owner(&existing, &name, owner).await;
            }
            // Same name and digest, wrong bytes: the chunk is corrupted. Immutable data
            // cannot be fixed in place, so replace the object, keeping its owners.
            tracing::warn!(chunk = %self.object(&name), "replacing corrupted content chunk");
            owners = merged_owners(&existing, owner);
            let delete = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: existing.metadata.uid.clone(),
                    resource_version: None,
                }),
                ..DeleteParams::background()
            };
            match self.api.delete(&name, &delete).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.is_not_found() || status.is_conflict() => {}
                Err(err) => return Err(self.api_err("delete", &name, err)),
            }
        }
        Err(StoreError::Corrupt {
            digest: digest.clone(),
            object: self.object(&name),
            reason: "it kept changing while being replaced".to_owned(),
        })
    }

    fn chunk_object(
        &self,
        content: &Content,
        index: u32,
        count: u32,
        data: &Bytes,
        chunk_digest: &Digest,
        owners: &[OwnerReference],
    ) -> ConfigMap {
        let digest = content.digest();
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(Self::chunk_name(digest, index)),
                namespace: Some(self.namespace.clone()),
                labels: Some(BTreeMap::from([
                    (LABEL_DIGEST.to_owned(), digest.short(32)),
                    (LABEL_CHUNK.to_owned(), index.to_string()),
                    (LABEL_CHUNKS.to_owned(), count.to_string()),
                ])),
                annotations: Some(BTreeMap::from([
                    (ANNOTATION_DIGEST.to_owned(), digest.to_string()),
                    (ANNOTATION_CHUNK_DIGEST.to_owned(), chunk_digest.to_string()),
                    (ANNOTATION_SIZE.to_owned(), content.size().to_string()),
                ])),
                owner_references: Some(owners.to_vec()),
                ..ObjectMeta::default()
            },
            immutable: Some(true),
            binary_data: Some(BTreeMap::from([(
                DATA_KEY.to_owned(),
                ByteString(data.to_vec()),
            )])),
            ..ConfigMap::default()
        }
    }

    /// Adds `owner` to one chunk unless it is there; metadata of immutable ConfigMaps
    /// can change. A strategic merge patch merges owner references by uid, so
    /// concurrent writers adding different owners do not overwrite each other.
    async fn ensure_owner(
        &self,
        existing: &ConfigMap,
        name: &str,
        owner: &OwnerReference,
    ) -> Result<(), StoreError> {
        let present = existing
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.uid == owner.uid);
        if present {
            return Ok(());
        }
        let patch = json!({ "metadata": { "ownerReferences": [owner] } });
        self.api
            .patch(name, &PatchParams::default(), &Patch::Strategic(patch))
            .await
            .map_err(|err| self.api_err("patch", name, err))?;
        Ok(())
    }

    /// Adds `owner` to every chunk of stored content.
    pub async fn add_owner(
        &self,
        digest: &Digest,
        owner: &OwnerReference,
    ) -> Result<(), StoreError> {
        for (name, config_map) in self.chunks(digest).await? {
            self.ensure_owner(&config_map, &name, owner).await?;
        }
        Ok(())
    }

    /// Removes the owner with `uid` from every chunk; chunks left without owners are
    /// deleted (the garbage collector only deletes objects whose owners all went).
    pub async fn remove_owner(&self, digest: &Digest, uid: &str) -> Result<(), StoreError> {
        for (name, config_map) in self.chunks(digest).await? {
            let owners: Vec<&OwnerReference> = config_map
                .metadata
                .owner_references
                .iter()
                .flatten()
                .collect();
            if !owners.iter().any(|o| o.uid == uid) {
                continue;
            }
            if owners.len() == 1 {
                self.delete_chunk(&name, &config_map).await?;
                continue;
            }
            let patch = json!({
                "metadata": { "ownerReferences": [ { "$patch": "delete", "uid": uid } ] }
            });
            self.api
                .patch(&name, &PatchParams::default(), &Patch::Strategic(patch))
                .await
                .map_err(|err| self.api_err("patch", &name, err))?;
        }
        Ok(())
    }

    /// Deletes every chunk of `digest`, whoever owns it.
    pub async fn delete(&self, digest: &Digest) -> Result<(), StoreError> {
        for (name, config_map) in self.chunks(digest).await? {
            self.delete_chunk(&name, &config_map).await?;
        }
        Ok(())
    }

    async fn delete_chunk(&self, name: &str, config_map: &ConfigMap) -> Result<(), StoreError> {
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: config_map.metadata.uid.clone(),
                resource_version: config_map.metadata.resource_version.clone(),
            }),
            ..DeleteParams::background()
        };
        match self.api.delete(name, &params).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
            Err(err) => Err(self.api_err("delete", name, err)),
        }
    }

    /// All chunks of `digest` that exist, by name.
    async fn chunks(&self, digest: &Digest) -> Result<Vec<(String, ConfigMap)>, StoreError> {
        let selector = Self::selector(digest);
        let list = self
            .api
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(|err| StoreError::Api {
                verb: "list",
                object: format!("{}/* with {selector}", self.namespace),
                source: err,
            })?;
        Ok(list
            .items
            .into_iter()
            .filter(|cm| annotation(cm, ANNOTATION_DIGEST).as_deref() == Some(&digest.to_string()))
            .filter_map(|cm| Some((cm.metadata.name.clone()?, cm)))
            .collect())
    }

    /// What is stored for `digest` (from chunk 0), or `None`.
    pub async fn stat(&self, digest: &Digest) -> Result<Option<StoredContent>, StoreError> {
        let name = Self::chunk_name(digest, 0);
        let Some(first) = self
            .api
            .get_opt(&name)
            .await
            .map_err(|err| self.api_err("get", &name, err))?
        else {
            return Ok(None);
        };
        let (count, size) = self.check_first(digest, &name, &first)?;
        Ok(Some(StoredContent {
            digest: digest.clone(),
            size,
            chunks: count,
        }))
    }

    /// Reads and verifies the content with `digest`.
    pub async fn read(&self, digest: &Digest) -> Result<Content, StoreError> {
        let name = Self::chunk_name(digest, 0);
        let first = self
            .api
            .get_opt(&name)
            .await
            .map_err(|err| self.api_err("get", &name, err))?
            .ok_or_else(|| StoreError::NotFound {
                digest: digest.clone(),
                namespace: self.namespace.clone(),
            })?;
        let (count, size) = self.check_first(digest, &name, &first)?;
        let first = self.verified_chunk(digest, &name, &first)?;
        let rest: Vec<Bytes> = futures::stream::iter(1..count)
            .map(|index| self.read_chunk(digest, index, count))
            .buffered(PARALLEL_CHUNKS)
            .try_collect()
            .await?;
        let mut data = BytesMut::with_capacity(usize::try_from(size).unwrap_or(0));
        data.extend_from_slice(&first);
        for chunk in rest {
            data.extend_from_slice(&chunk);
        }
        Content::verified(data.freeze(), digest).map_err(|err| StoreError::Corrupt {
            digest: digest.clone(),
            object: self.object(&format!("content-{}-*", digest.short(16))),
            reason: format!("the chunks add up to {}", err.actual),
        })
    }

    async fn read_chunk(
        &self,
        digest: &Digest,
        index: u32,
        count: u32,
    ) -> Result<Bytes, StoreError> {
        let name = Self::chunk_name(digest, index);
        let config_map = self
            .api
            .get_opt(&name)
            .await
            .map_err(|err| self.api_err("get", &name, err))?
            .ok_or_else(|| StoreError::MissingChunk {
                digest: digest.clone(),
                index,
                count,
                object: self.object(&name),
            })?;
        if annotation(&config_map, ANNOTATION_DIGEST).as_deref() != Some(&digest.to_string()) {
            return Err(self.corrupt(digest, &name, "its digest annotation is another content's"));
        }
        self.verified_chunk(digest, &name, &config_map)
    }

    /// The chunk count and size recorded on chunk 0.
    fn check_first(
        &self,
        digest: &Digest,
        name: &str,
        first: &ConfigMap,
    ) -> Result<(u32, u64), StoreError> {
        if annotation(first, ANNOTATION_DIGEST).as_deref() != Some(&digest.to_string()) {
            return Err(self.corrupt(digest, name, "its digest annotation is another content's"));
        }
        let count = first
            .metadata
            .labels
            .as_ref()
            .and_then(|labels| labels.get(LABEL_CHUNKS))
            .and_then(|value| value.parse::<u32>().ok())
            .filter(|count| *count > 0)
            .ok_or_else(|| {
                self.corrupt(
                    digest,
                    name,
                    "the chunk count label is missing or malformed",
                )
            })?;
        let size = annotation(first, ANNOTATION_SIZE)
            .and_then(|value| value.parse::<u64>().ok())
            .ok_or_else(|| {
                self.corrupt(digest, name, "the size annotation is missing or malformed")
            })?;
        Ok((count, size))
    }

    fn verified_chunk(
        &self,
        digest: &Digest,
        name: &str,
        config_map: &ConfigMap,
    ) -> Result<Bytes, StoreError> {
        let data = chunk_data(config_map)
            .ok_or_else(|| self.corrupt(digest, name, "binaryData.content is missing"))?;
        let expected = annotation(config_map, ANNOTATION_CHUNK_DIGEST)
            .ok_or_else(|| self.corrupt(digest, name, "the chunk digest annotation is missing"))?;
        let actual = Digest::of(data);
        if actual.to_string() != expected {
            return Err(self.corrupt(
                digest,
                name,
                &format!("its data has digest {actual}, want {expected}"),
            ));
        }
        Ok(Bytes::copy_from_slice(data))
    }

    fn corrupt(&self, digest: &Digest, name: &str, reason: &str) -> StoreError {
        StoreError::Corrupt {
            digest: digest.clone(),
            object: self.object(name),
            reason: reason.to_owned(),
        }
    }

    fn object(&self, name: &str) -> String {
        format!("{}/{name}", self.namespace)
    }

    fn api_err(&self, verb: &'static str, name: &str, err: kube::Error) -> StoreError {
        StoreError::Api {
            verb,
            object: self.object(name),
            source: err,
        }
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("namespace", &self.namespace)
            .field("chunk_size", &self.chunk_size)
            .finish()
    }
}

fn chunk(data: &Bytes, size: usize) -> Vec<Bytes> {
    if data.is_empty() {
        return vec![Bytes::new()];
    }
    (0..data.len())
        .step_by(size)
        .map(|start| data.slice(start..(start + size).min(data.len())))
        .collect()
}

fn annotation(config_map: &ConfigMap, key: &str) -> Option<String> {
    config_map.metadata.annotations.as_ref()?.get(key).cloned()
}

fn chunk_data(config_map: &ConfigMap) -> Option<&[u8]> {
    config_map
        .binary_data
        .as_ref()?
        .get(DATA_KEY)
        .map(|bytes| bytes.0.as_slice())
}

fn merged_owners(existing: &ConfigMap, owner: &OwnerReference) -> Vec<OwnerReference> {
    let mut owners: Vec<OwnerReference> = existing
        .metadata
        .owner_references
        .clone()
        .unwrap_or_default();
    if !owners.iter().any(|o| o.uid == owner.uid) {
        owners.push(owner.clone());
    }
    owners
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_is_cut_into_chunks_of_at_most_the_chunk_size() {
        let data = Bytes::from(vec![1u8; 10]);
        let chunks = chunk(&data, 4);
        assert_eq!(chunks.iter().map(Bytes::len).collect::<Vec<_>>(), [4, 4, 2]);
        assert_eq!(chunk(&Bytes::from(vec![1u8; 8]), 4).len(), 2);
        assert_eq!(chunk(&Bytes::new(), 4).len(), 1);
    }

    #[test]
    fn chunk_names_and_labels_fit_kubernetes_limits() {
        let digest = Digest::of(b"x");
        let name = Store::chunk_name(&digest, 1234);
        assert!(name.len() <= 63, "{name}");
        assert_eq!(name, format!("content-{}-1234", digest.short(16)));
        let selector = Store::selector(&digest);
        let value = selector.split_once('=').unwrap().1;
        assert!(value.len() <= 63);
    }

    #[test]
    fn missing_chunks_are_transient_and_collisions_terminal() {
        let digest = Digest::of(b"x");
        let missing = StoreError::MissingChunk {
            digest: digest.clone(),
            index: 3,
            count: 5,
            object: "ns/content-x-3".into(),
        };
        assert!(!missing.is_terminal());
        assert_eq!(
            missing.to_string(),
            format!(
                "failed to read content {digest}: chunk 3 of 5 (configmap ns/content-x-3) is missing"
            )
        );
        let collision = StoreError::Collision {
            digest,
            object: "o".into(),
            other: "sha256:y".into(),
        };
        assert!(collision.is_terminal());
    }
}
