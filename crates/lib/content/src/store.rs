//! The content store: normalised content kept on the API server as immutable
//! ConfigMaps of at most 900 KiB `binaryData` each, named and labelled by digest.
//!
//! - Chunk `i` of content `sha256:<hex>` is ConfigMap `content-<first 16 hex>-<i>` in
//!   the store's namespace, with the bytes under `binaryData.content`, labels for the
//!   digest (first 32 hex digits: label values stop at 63 characters), the chunk index
//!   and the chunk count, and annotations with the full digest, the chunk's own sha256
//!   and the content size.
//! - Content is shared, and a sharer costs no write: writing content that exists only
//!   checks it (the chunks carry a label per *kind* of user, `content.olmv1.io/used-by-<kind>`,
//!   added once per kind). Content nobody references any more is removed by a two-phase
//!   mark and sweep ([`Store::sweep`], run by the binary that writes each kind): a pass marks
//!   every chunk of unreferenced content with [`ANNOTATION_UNREFERENCED_SINCE`], and a later
//!   pass deletes chunks still marked, each with the resourceVersion it saw as a
//!   precondition. A writer that reuses marked content clears the mark on every chunk
//!   first, which changes its resourceVersion, so a sweep can never delete a chunk a writer
//!   has just relied on; a chunk already deleted is created again. (Content written before
//!   this scheme is owned through ownerReferences: the first writer to reuse it drops them,
//!   so it is swept from then on; until then it goes with its owners.)
//! - Chunk 0 is written last: when it exists, all chunks were written.
//! - Every read verifies every chunk and the whole digest; a missing or corrupted chunk
//!   is an error, never returned as content. A writer that finds a corrupted chunk
//!   replaces it (keeping its labels and owners).
//! - Two writers of the same digest race harmlessly: AlreadyExists with matching
//!   content is success.

use std::collections::BTreeMap;

use std::io::Write as _;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions};
use kube::{Api, Client};
use serde_json::json;
use sha2::{Digest as _, Sha256};

use crate::content::Content;
use crate::digest::Digest;
use crate::recently_stored::RecentlyStored;
use crate::spool::{DEFAULT_SPOOL_THRESHOLD, Spool, SpoolDir};

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
/// Annotation on a chunk of content no object referenced at the last sweep: when that
/// sweep saw it (RFC 3339). The next sweep deletes the chunk if it is still there unchanged.
pub const ANNOTATION_UNREFERENCED_SINCE: &str = "content.olmv1.io/unreferenced-since";
/// Prefix of the labels naming the kinds of objects that use content
/// (`content.olmv1.io/used-by-bundle`, `...-catalog`).
pub const LABEL_USED_BY_PREFIX: &str = "content.olmv1.io/used-by-";
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
    /// Content this process stored or checked moments ago, shared by clones.
    recent: std::sync::Arc<RecentlyStored>,
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
    /// The content could not be read from, or spooled to, local temporary storage.
    #[error("failed to spool content {digest} through local temporary storage")]
    Local {
        /// The digest.
        digest: Digest,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The kind of user is empty.
    #[error("failed to write content {digest}: the kind of object using it is not named")]
    InvalidUser {
        /// The digest.
        digest: Digest,
    },
}

impl StoreError {
    /// Whether retrying cannot help. Only a missing user kind, a name collision and
    /// requests the API server rejects as invalid are terminal; missing or corrupted
    /// chunks are repaired by the next write.
    pub fn is_terminal(&self) -> bool {
        match self {
            StoreError::Api { source, .. } => {
                matches!(source, kube::Error::Api(status) if status.is_invalid() || status.code == 400)
            }
            StoreError::Collision { .. } | StoreError::InvalidUser { .. } => true,
            StoreError::NotFound { .. }
            | StoreError::MissingChunk { .. }
            | StoreError::Corrupt { .. }
            | StoreError::Local { .. } => false,
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
            StoreError::InvalidUser { .. } => "store_invalid_user",
            StoreError::Local { .. } => "store_local_storage_failed",
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
            recent: std::sync::Arc::default(),
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

    /// The label marking content used by objects of `kind` (e.g. `Bundle`).
    pub fn used_by_label(kind: &str) -> String {
        format!("{LABEL_USED_BY_PREFIX}{}", kind.to_ascii_lowercase())
    }

    /// Stores `content` for objects of kind `user` (e.g. `Bundle`), or checks content
    /// already stored. Writes nothing when the content is there, verified, labelled for
    /// `user` and not marked by a sweep; sends no request at all when this store (or a
    /// clone) stored or checked it moments ago with no sweep since (see
    /// [`crate::recently_stored`]).
    pub async fn write(&self, content: &Content, user: &str) -> Result<StoredContent, StoreError> {
        let digest = content.digest();
        if user.is_empty() {
            return Err(StoreError::InvalidUser {
                digest: digest.clone(),
            });
        }
        let count = chunk_count(content.size(), self.chunk_size);
        let stored = StoredContent {
            digest: digest.clone(),
            size: content.size(),
            chunks: count,
        };
        let trusted = || self.recent.trusts(digest, user, std::time::Instant::now());
        if trusted() {
            return Ok(stored);
        }
        // Sharers arriving together wait for the first one's check, then trust it.
        let lock = self.recent.writer_lock(digest, user);
        let written = async {
            let _turn = lock.lock().await;
            if trusted() {
                return Ok(());
            }
            let epoch = self.recent.begin();
            self.write_chunks(content, user, count).await?;
            self.recent
                .record(digest, user, epoch, std::time::Instant::now());
            Ok(())
        }
        .await;
        self.recent.done_writing(digest, user, lock);
        written.map(|()| stored)
    }

    /// Writes or checks every chunk of `content`.
    async fn write_chunks(
        &self,
        content: &Content,
        user: &str,
        count: u32,
    ) -> Result<(), StoreError> {
        let label = &Self::used_by_label(user);
        // Content stored before is most likely still there: read each chunk first.
        let look_first = self.recent.stored_before(content.digest(), user);
        // Chunks 1.. first, concurrently; chunk 0 last marks the content complete. Each
        // chunk is read from the content (a file for large content) only when its write
        // starts, so at most PARALLEL_CHUNKS chunks are in memory.
        futures::stream::iter(1..count)
            .map(|index| async move {
                let data = self.read_local(content, index)?;
                self.write_chunk(content, index, count, data, label, look_first)
                    .await
            })
            .buffer_unordered(PARALLEL_CHUNKS)
            .try_collect::<Vec<()>>()
            .await?;
        let first = self.read_local(content, 0)?;
        self.write_chunk(content, 0, count, first, label, look_first)
            .await
    }

    /// Chunk `index` of the content to write.
    fn read_local(&self, content: &Content, index: u32) -> Result<Bytes, StoreError> {
        let offset = u64::from(index) * self.chunk_size as u64;
        content
            .slice(offset, self.chunk_size)
            .map_err(|source| StoreError::Local {
                digest: content.digest().clone(),
                source,
            })
    }

    async fn write_chunk(
        &self,
        content: &Content,
        index: u32,
        count: u32,
        data: Bytes,
        label: &str,
        look_first: bool,
    ) -> Result<(), StoreError> {
        let digest = content.digest();
        let name = Self::chunk_name(digest, index);
        let chunk_digest = Digest::of(&data);
        let mut kept = Kept::default();
        let mut look_first = look_first;
        for _ in 0..REPLACE_ATTEMPTS {
            let config_map = self.chunk_object(
                content,
                Chunk {
                    index,
                    count,
                    data: &data,
                    digest: &chunk_digest,
                },
                label,
                &kept,
            );
            let found = if std::mem::take(&mut look_first) {
                self.api
                    .get_opt(&name)
                    .await
                    .map_err(|err| self.api_err("get", &name, err))?
            } else {
                None
            };
            let existing = match found {
                Some(existing) => existing,
                None => match self.api.create(&PostParams::default(), &config_map).await {
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
                },
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
                match self.claim(digest, &existing, &name, label).await? {
                    Claim::Kept => return Ok(()),
                    // Swept in between: create it again.
                    Claim::Gone => continue,
                }
            }
            // Same name and digest, wrong bytes: the chunk is corrupted. Immutable data
            // cannot be fixed in place, so replace the object, keeping its labels of other
            // users.
            tracing::warn!(chunk = %self.object(&name), "replacing corrupted content chunk");
            kept = Kept {
                labels: existing
                    .metadata
                    .labels
                    .clone()
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|(key, _)| key.starts_with(LABEL_USED_BY_PREFIX))
                    .collect(),
            };
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
        chunk: Chunk<'_>,
        label: &str,
        kept: &Kept,
    ) -> ConfigMap {
        let Chunk {
            index,
            count,
            data,
            digest: chunk_digest,
        } = chunk;
        let digest = content.digest();
        let mut labels = kept.labels.clone();
        labels.extend([
            (LABEL_DIGEST.to_owned(), digest.short(32)),
            (LABEL_CHUNK.to_owned(), index.to_string()),
            (LABEL_CHUNKS.to_owned(), count.to_string()),
            (label.to_owned(), "true".to_owned()),
        ]);
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(Self::chunk_name(digest, index)),
                namespace: Some(self.namespace.clone()),
                labels: Some(labels),
                annotations: Some(BTreeMap::from([
                    (ANNOTATION_DIGEST.to_owned(), digest.to_string()),
                    (ANNOTATION_CHUNK_DIGEST.to_owned(), chunk_digest.to_string()),
                    (ANNOTATION_SIZE.to_owned(), content.size().to_string()),
                ])),
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

    /// Makes an existing, verified chunk this user's: adds the user's label, clears a
    /// sweep's mark and drops ownerReferences (content stored before the mark and sweep was
    /// owned by the Bundles that wrote it; left there, the garbage collector would delete it
    /// when those go, under the sharers that wrote nothing). One merge patch, guarded by the
    /// resourceVersion read (metadata of immutable ConfigMaps can change); nothing is
    /// written when the chunk is already so. A conflict (a sweep marking it, another writer)
    /// reads it again, a few times at most.
    async fn claim(
        &self,
        digest: &Digest,
        existing: &ConfigMap,
        name: &str,
        label: &str,
    ) -> Result<Claim, StoreError> {
        let mut current = existing.clone();
        for _ in 0..REPLACE_ATTEMPTS {
            let labelled = current
                .metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key(label));
            let marked = annotation(&current, ANNOTATION_UNREFERENCED_SINCE).is_some();
            let owned = current
                .metadata
                .owner_references
                .as_ref()
                .is_some_and(|o| !o.is_empty());
            if labelled && !marked && !owned {
                return Ok(Claim::Kept);
            }
            let patch = json!({ "metadata": {
                "resourceVersion": current.metadata.resource_version,
                "labels": { label: "true" },
                "annotations": { ANNOTATION_UNREFERENCED_SINCE: null },
                "ownerReferences": null,
            }});
            match self
                .api
                .patch(name, &PatchParams::default(), &Patch::Merge(patch))
                .await
            {
                Ok(_) => return Ok(Claim::Kept),
                Err(kube::Error::Api(status)) if status.is_not_found() => return Ok(Claim::Gone),
                Err(kube::Error::Api(status)) if status.is_conflict() => {
                    match self
                        .api
                        .get_opt(name)
                        .await
                        .map_err(|err| self.api_err("get", name, err))?
                    {
                        Some(again) => current = again,
                        None => return Ok(Claim::Gone),
                    }
                }
                Err(err) => return Err(self.api_err("patch", name, err)),
            }
        }
        Err(StoreError::Corrupt {
            digest: digest.clone(),
            object: self.object(name),
            reason: "its metadata kept changing while it was being claimed".to_owned(),
        })
    }

    /// One pass of the mark and sweep of content used by objects of kind `user`: content no
    /// longer in `referenced` is marked, content still unreferenced and marked since an
    /// earlier pass is deleted, content referenced again is unmarked. Content created less
    /// than `grace` ago is left alone (it may be about to be referenced). Run it from the
    /// binary that writes `user`'s content, every `grace` or so.
    pub async fn sweep(
        &self,
        user: &str,
        referenced: &std::collections::BTreeSet<String>,
        grace: std::time::Duration,
    ) -> Result<SweepReport, StoreError> {
        let _sweeping = self.recent.sweeping();
        self.sweep_pass(user, referenced, grace).await
    }

    async fn sweep_pass(
        &self,
        user: &str,
        referenced: &std::collections::BTreeSet<String>,
        grace: std::time::Duration,
    ) -> Result<SweepReport, StoreError> {
        let label = Self::used_by_label(user);
        let selector = format!("{label}=true");
        let listed = self
            .api
            .list_metadata(&ListParams::default().labels(&selector))
            .await
            .map_err(|err| self.list_err(&selector, err))?;
        let chunks: Vec<ChunkMeta> = listed
            .items
            .iter()
            .filter_map(|item| {
                let meta = &item.metadata;
                Some(ChunkMeta {
                    name: meta.name.clone()?,
                    digest: meta.annotations.as_ref()?.get(ANNOTATION_DIGEST)?.clone(),
                    resource_version: meta.resource_version.clone(),
                    uid: meta.uid.clone(),
                    created: meta.creation_timestamp.as_ref().map(|t| t.0),
                    marked: meta
                        .annotations
                        .as_ref()
                        .is_some_and(|a| a.contains_key(ANNOTATION_UNREFERENCED_SINCE)),
                    other_users: meta.labels.as_ref().is_some_and(|labels| {
                        labels
                            .keys()
                            .any(|k| k.starts_with(LABEL_USED_BY_PREFIX) && *k != label)
                    }),
                })
            })
            .collect();
        let now = k8s_openapi::jiff::Timestamp::now();
        let mut report = SweepReport::default();
        for (chunk, action) in plan_sweep(&chunks, referenced, now, grace) {
            let done = match action {
                SweepAction::Mark => {
                    self.guarded_patch(
                        chunk,
                        json!({"annotations": {
                        ANNOTATION_UNREFERENCED_SINCE: now.to_string()}}),
                    )
                    .await?
                }
                SweepAction::Unmark => {
                    self.guarded_patch(
                        chunk,
                        json!({"annotations": {
                        ANNOTATION_UNREFERENCED_SINCE: null}}),
                    )
                    .await?
                }
                // Another kind still uses it: only this kind lets go.
                SweepAction::Release => {
                    self.guarded_patch(
                        chunk,
                        json!({
                        "labels": { label.clone(): null },
                        "annotations": { ANNOTATION_UNREFERENCED_SINCE: null }}),
                    )
                    .await?
                }
                SweepAction::Delete => {
                    let params = DeleteParams {
                        preconditions: Some(Preconditions {
                            uid: chunk.uid.clone(),
                            resource_version: chunk.resource_version.clone(),
                        }),
                        ..DeleteParams::background()
                    };
                    match self.api.delete(&chunk.name, &params).await {
                        Ok(_) => true,
                        Err(kube::Error::Api(status))
                            if status.is_not_found() || status.is_conflict() =>
                        {
                            false
                        }
                        Err(err) => return Err(self.api_err("delete", &chunk.name, err)),
                    }
                }
            };
            if done {
                report.record(action, &chunk.digest);
            }
        }
        Ok(report)
    }

    /// Sweeps the content of kind `user` every `interval` (also the grace before fresh
    /// content may be marked, so one pass marks and a later one deletes) until `stop`
    /// completes. `referenced` gives the full digests in use at each pass; when it fails the
    /// pass is skipped (never sweep without knowing what is in use). Failures are logged and
    /// the next pass tries again.
    pub async fn sweep_every<F, Fut>(
        &self,
        user: &str,
        interval: std::time::Duration,
        referenced: F,
        stop: impl std::future::Future<Output = ()>,
    ) where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<std::collections::BTreeSet<String>, String>>,
    {
        tokio::pin!(stop);
        loop {
            tokio::select! {
                () = &mut stop => return,
                () = tokio::time::sleep(interval) => {}
            }
            let in_use = match referenced().await {
                Ok(in_use) => in_use,
                Err(message) => {
                    tracing::warn!(user, error = %message, "skipped a content sweep: could not list what references content");
                    continue;
                }
            };
            match self.sweep(user, &in_use, interval).await {
                Ok(report) if report != SweepReport::default() => tracing::info!(
                    user,
                    marked = report.marked.len(),
                    unmarked = report.unmarked.len(),
                    deleted = report.deleted.len(),
                    released = report.released.len(),
                    "swept unreferenced content"
                ),
                Ok(_) => {}
                Err(err) => {
                    tracing::warn!(user, error = %crate::report(&err), "content sweep failed")
                }
            }
        }
    }

    /// A merge patch of a chunk's metadata, applied only if it is unchanged since it was
    /// listed; `false` when it changed or went.
    async fn guarded_patch(
        &self,
        chunk: &ChunkMeta,
        mut metadata: serde_json::Value,
    ) -> Result<bool, StoreError> {
        metadata["resourceVersion"] = json!(chunk.resource_version);
        match self
            .api
            .patch(
                &chunk.name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "metadata": metadata })),
            )
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(status)) if status.is_not_found() || status.is_conflict() => {
                Ok(false)
            }
            Err(err) => Err(self.api_err("patch", &chunk.name, err)),
        }
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
            .map_err(|err| self.list_err(&selector, err))?;
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

    /// Reads and verifies the content with `digest`. Content found missing or corrupted is
    /// no longer taken as recently stored: the next write checks and repairs it.
    pub async fn read(&self, digest: &Digest) -> Result<Content, StoreError> {
        let read = self.read_verified(digest).await;
        if read.is_err() {
            self.recent.forget(digest);
        }
        read
    }

    async fn read_verified(&self, digest: &Digest) -> Result<Content, StoreError> {
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
        let (count, _size) = self.check_first(digest, &name, &first)?;
        let first = self.verified_chunk(digest, &name, &first)?;
        // The chunks are hashed and spooled in order as they arrive (memory while small,
        // an unnamed temporary file past a few MiB), never all held at once.
        let local = |source| StoreError::Local {
            digest: digest.clone(),
            source,
        };
        let mut spool = Spool::new(SpoolDir::default(), DEFAULT_SPOOL_THRESHOLD);
        let mut hasher = Sha256::new();
        spool.write_all(&first).map_err(local)?;
        hasher.update(&first);
        let mut rest = futures::stream::iter(1..count)
            .map(|index| self.read_chunk(digest, index, count))
            .buffered(PARALLEL_CHUNKS);
        while let Some(chunk) = rest.next().await {
            let chunk = chunk?;
            spool.write_all(&chunk).map_err(local)?;
            hasher.update(&chunk);
        }
        let body = spool.finish().map_err(local)?;
        let actual = Digest::from_bytes(hasher.finalize().into());
        Content::checked(body, actual, digest).map_err(|err| StoreError::Corrupt {
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

    fn list_err(&self, selector: &str, err: kube::Error) -> StoreError {
        StoreError::Api {
            verb: "list",
            object: format!("{}/* with {selector}", self.namespace),
            source: err,
        }
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

/// Chunks of `size` bytes needed for `len` bytes (empty content is one empty chunk).
fn chunk_count(len: u64, size: usize) -> u32 {
    let chunks = len.div_ceil(size.max(1) as u64).max(1);
    u32::try_from(chunks).unwrap_or(u32::MAX)
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

/// One chunk to write.
struct Chunk<'a> {
    index: u32,
    count: u32,
    data: &'a Bytes,
    digest: &'a Digest,
}

/// What a corrupted chunk's replacement keeps of it: the labels of its other users.
#[derive(Default)]
struct Kept {
    labels: BTreeMap<String, String>,
}

/// What [`Store::claim`] found.
enum Claim {
    /// The chunk is there and this user's.
    Kept,
    /// The chunk went (swept) before it could be claimed.
    Gone,
}

/// What a sweep knows of one chunk (metadata only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkMeta {
    /// The ConfigMap's name.
    pub name: String,
    /// The full digest of the content it belongs to.
    pub digest: String,
    /// Its resourceVersion when listed (the precondition of every change).
    pub resource_version: Option<String>,
    /// Its uid when listed.
    pub uid: Option<String>,
    /// When it was created.
    pub created: Option<k8s_openapi::jiff::Timestamp>,
    /// Whether an earlier sweep marked it unreferenced.
    pub marked: bool,
    /// Whether objects of another kind use it too.
    pub other_users: bool,
}

/// What a sweep does to one chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepAction {
    /// Unreferenced: mark it; the next sweep deletes it.
    Mark,
    /// Referenced again: clear the mark.
    Unmark,
    /// Unreferenced since the last sweep, and no other kind uses it: delete it.
    Delete,
    /// Unreferenced since the last sweep, but another kind uses it: drop this kind's label.
    Release,
}

/// What one sweep did, by content digest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Content marked unreferenced.
    pub marked: std::collections::BTreeSet<String>,
    /// Content referenced again.
    pub unmarked: std::collections::BTreeSet<String>,
    /// Content deleted (at least one chunk).
    pub deleted: std::collections::BTreeSet<String>,
    /// Content another kind still uses, released by this one.
    pub released: std::collections::BTreeSet<String>,
}

impl SweepReport {
    fn record(&mut self, action: SweepAction, digest: &str) {
        let set = match action {
            SweepAction::Mark => &mut self.marked,
            SweepAction::Unmark => &mut self.unmarked,
            SweepAction::Delete => &mut self.deleted,
            SweepAction::Release => &mut self.released,
        };
        set.insert(digest.to_owned());
    }
}

/// What a sweep does to each chunk: pure. Content in `referenced` (full digests) is kept
/// and unmarked; unreferenced content is marked, unless created less than `grace` before
/// `now`; content marked by an earlier sweep and still unreferenced is deleted, or released
/// when another kind uses it.
pub fn plan_sweep<'a>(
    chunks: &'a [ChunkMeta],
    referenced: &std::collections::BTreeSet<String>,
    now: k8s_openapi::jiff::Timestamp,
    grace: std::time::Duration,
) -> Vec<(&'a ChunkMeta, SweepAction)> {
    let grace = k8s_openapi::jiff::SignedDuration::try_from(grace).unwrap_or_default();
    chunks
        .iter()
        .filter_map(|chunk| {
            let action = if referenced.contains(&chunk.digest) {
                chunk.marked.then_some(SweepAction::Unmark)?
            } else if chunk.marked {
                if chunk.other_users {
                    SweepAction::Release
                } else {
                    SweepAction::Delete
                }
            } else if chunk
                .created
                .is_some_and(|created| now.duration_since(created) >= grace)
            {
                SweepAction::Mark
            } else {
                return None;
            };
            Some((chunk, action))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::time::Duration;

    fn meta(name: &str, digest: &str, age_s: i64, marked: bool, other_users: bool) -> ChunkMeta {
        ChunkMeta {
            name: name.into(),
            digest: digest.into(),
            resource_version: Some("1".into()),
            uid: Some("u".into()),
            created: Some(now() - k8s_openapi::jiff::SignedDuration::from_secs(age_s)),
            marked,
            other_users,
        }
    }

    fn now() -> k8s_openapi::jiff::Timestamp {
        "2026-11-25T12:00:00Z".parse().unwrap()
    }

    #[test]
    fn a_sweep_marks_first_deletes_later_and_spares_what_is_used() {
        let chunks = [
            meta("referenced", "sha256:a", 3600, false, false),
            meta("referenced-again", "sha256:b", 3600, true, false),
            meta("unreferenced", "sha256:c", 3600, false, false),
            meta("fresh", "sha256:d", 10, false, false),
            meta("condemned", "sha256:e", 3600, true, false),
            meta("shared-with-another-kind", "sha256:f", 3600, true, true),
        ];
        let referenced = BTreeSet::from(["sha256:a".to_owned(), "sha256:b".to_owned()]);
        let plan: Vec<(&str, SweepAction)> =
            plan_sweep(&chunks, &referenced, now(), Duration::from_secs(600))
                .into_iter()
                .map(|(c, a)| (c.name.as_str(), a))
                .collect();
        assert_eq!(
            plan,
            [
                ("referenced-again", SweepAction::Unmark),
                ("unreferenced", SweepAction::Mark),
                ("condemned", SweepAction::Delete),
                ("shared-with-another-kind", SweepAction::Release),
            ]
        );
    }

    #[test]
    fn the_used_by_label_names_the_kind() {
        assert_eq!(
            Store::used_by_label("Bundle"),
            "content.olmv1.io/used-by-bundle"
        );
        assert!(Store::used_by_label("Catalog").len() <= 63);
    }

    #[test]
    fn content_is_cut_into_chunks_of_at_most_the_chunk_size() {
        assert_eq!(chunk_count(10, 4), 3);
        assert_eq!(chunk_count(8, 4), 2);
        assert_eq!(chunk_count(0, 4), 1, "empty content is one empty chunk");
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
