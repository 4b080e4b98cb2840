//! OCI images: the layers of the image's manifest, applied in order with whiteouts.
//!
//! The reference is a tag or a digest. Registries are spoken to over https; one on a
//! loopback address that does not answer TLS is spoken to over plain http (as `crane`
//! and `docker` do). Layers are
//! streamed to temporary files, digest-checked by the client, and extracted with the
//! [`Limits`](crate::Limits). With a cache directory, a digest reference that was
//! unpacked before needs no network at all and a tag costs one manifest request.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use futures::StreamExt;
use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::{ImageIndexEntry, OciDescriptor, OciImageManifest, OciManifest};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference, RegistryOperation};
use tokio::io::AsyncWriteExt;

use crate::archive_error::ArchiveError;
use crate::extract::Extractor;
use crate::limits::LimitError;
use crate::paths;
use crate::source::cache::ImageCache;
use crate::source::{ResolvedSource, TlsError, TlsOptions, UnpackOptions, Unpacked};

/// An image to unpack.
#[derive(Clone, Default)]
pub struct ImageSource {
    /// `registry/repository:tag` or `registry/repository@sha256:...`.
    pub reference: String,
    /// A pull secret's `.dockerconfigjson` (or legacy `.dockercfg`) bytes.
    pub pull_secret: Option<Vec<u8>>,
    /// Certificate verification.
    pub tls: TlsOptions,
    /// Only this directory of the image becomes the content (e.g. `configs` of a
    /// catalog image); none takes the whole image.
    pub directory: Option<String>,
}

impl std::fmt::Debug for ImageSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImageSource")
            .field("reference", &self.reference)
            .field(
                "pull_secret",
                &self.pull_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("tls", &self.tls)
            .field("directory", &self.directory)
            .finish()
    }
}

/// Why an image could not become content.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// The reference cannot be parsed.
    #[error("failed to parse image reference {reference:?}: {reason}")]
    InvalidReference {
        /// The reference as given.
        reference: String,
        /// What the parser said.
        reason: String,
    },
    /// The pull secret cannot be read.
    #[error("failed to read pull secret for image {reference}: {reason}")]
    InvalidPullSecret {
        /// The image.
        reference: String,
        /// What is wrong.
        reason: String,
    },
    /// The directory option is not a clean relative path.
    #[error("failed to use directory {directory:?} of image {reference}: {reason}")]
    InvalidDirectory {
        /// The image.
        reference: String,
        /// The directory as given.
        directory: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// The certificate data cannot be used.
    #[error("failed to configure TLS for image {reference}")]
    Tls {
        /// The image.
        reference: String,
        /// What is wrong.
        #[source]
        source: TlsError,
    },
    /// The registry refused the credentials (or demands some).
    #[error("failed to authenticate to the registry for image {reference}")]
    Unauthorized {
        /// The image.
        reference: String,
        /// The client error.
        #[source]
        source: OciDistributionError,
    },
    /// The repository, tag, digest or a blob does not exist.
    #[error("failed to pull image {reference}: not found in the registry")]
    NotFound {
        /// The image.
        reference: String,
        /// The client error.
        #[source]
        source: OciDistributionError,
    },
    /// Network or registry failure.
    #[error("failed to pull image {reference}")]
    Registry {
        /// The image.
        reference: String,
        /// The client error.
        #[source]
        source: OciDistributionError,
    },
    /// What the registry served does not match the pinned digest.
    #[error("failed to pull image {reference}: content does not match its digest")]
    DigestMismatch {
        /// The image.
        reference: String,
        /// The client error.
        #[source]
        source: OciDistributionError,
    },
    /// The manifest is not an image manifest or index this client understands.
    #[error("failed to pull image {reference}: unsupported manifest")]
    UnsupportedManifest {
        /// The image.
        reference: String,
        /// The client error.
        #[source]
        source: OciDistributionError,
    },
    /// An index without any manifest.
    #[error("failed to pull image {reference}: the image index lists no manifests")]
    EmptyIndex {
        /// The image.
        reference: String,
    },
    /// A layer that is not a (gzip'd) tar.
    #[error("failed to unpack image {reference}: layer media type {media_type:?} is not supported")]
    UnsupportedLayer {
        /// The image.
        reference: String,
        /// The layer's media type.
        media_type: String,
    },
    /// The layers are larger than the content may become.
    #[error("failed to pull image {reference}")]
    TooLarge {
        /// The image.
        reference: String,
        /// The limit crossed.
        #[source]
        source: LimitError,
    },
    /// The layers are not acceptable content.
    #[error("failed to unpack image {reference}")]
    Content {
        /// The image.
        reference: String,
        /// What was refused.
        #[source]
        source: ArchiveError,
    },
    /// Local files (layers, cache) could not be written or read.
    #[error("failed to unpack image {reference}: local storage at {path}")]
    Storage {
        /// The image.
        reference: String,
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The unpack did not finish in time.
    #[error("failed to pull image {reference}: timed out")]
    Timeout {
        /// The image.
        reference: String,
    },
    /// The extraction task failed.
    #[error("failed to unpack image {reference}: the extraction task failed")]
    Task {
        /// The image.
        reference: String,
    },
}

impl ImageError {
    /// Whether retrying cannot help until the source changes. Missing images and
    /// refused credentials are transient: the tag may be pushed, the Secret fixed.
    pub fn is_terminal(&self) -> bool {
        match self {
            // Local storage failing is not the content's fault.
            ImageError::Content {
                source: ArchiveError::Write { .. },
                ..
            } => false,
            ImageError::InvalidReference { .. }
            | ImageError::InvalidPullSecret { .. }
            | ImageError::InvalidDirectory { .. }
            | ImageError::Tls { .. }
            | ImageError::DigestMismatch { .. }
            | ImageError::UnsupportedManifest { .. }
            | ImageError::EmptyIndex { .. }
            | ImageError::UnsupportedLayer { .. }
            | ImageError::TooLarge { .. }
            | ImageError::Content { .. } => true,
            ImageError::Unauthorized { .. }
            | ImageError::NotFound { .. }
            | ImageError::Registry { .. }
            | ImageError::Storage { .. }
            | ImageError::Timeout { .. }
            | ImageError::Task { .. } => false,
        }
    }

    /// A stable snake_case label for metrics and event reasons.
    pub fn label(&self) -> &'static str {
        match self {
            ImageError::InvalidReference { .. } => "image_invalid_reference",
            ImageError::InvalidPullSecret { .. } => "image_invalid_pull_secret",
            ImageError::InvalidDirectory { .. } => "image_invalid_directory",
            ImageError::Tls { .. } => "image_invalid_tls",
            ImageError::Unauthorized { .. } => "image_unauthorized",
            ImageError::NotFound { .. } => "image_not_found",
            ImageError::Registry { .. } => "image_registry_failed",
            ImageError::DigestMismatch { .. } => "image_digest_mismatch",
            ImageError::UnsupportedManifest { .. } => "image_unsupported_manifest",
            ImageError::EmptyIndex { .. } => "image_empty_index",
            ImageError::UnsupportedLayer { .. } => "image_unsupported_layer",
            ImageError::TooLarge { .. } => "image_too_large",
            ImageError::Content { .. } => "image_invalid_content",
            ImageError::Storage { .. } => "image_storage_failed",
            ImageError::Timeout { .. } => "image_timeout",
            ImageError::Task { .. } => "image_task_failed",
        }
    }
}

/// Pulls and normalises the image.
pub async fn unpack(source: &ImageSource, options: &UnpackOptions) -> Result<Unpacked, ImageError> {
    let reference = source.reference.clone();
    tokio::time::timeout(options.timeout, unpack_inner(source, options))
        .await
        .map_err(|_| ImageError::Timeout { reference })?
}

async fn unpack_inner(
    source: &ImageSource,
    options: &UnpackOptions,
) -> Result<Unpacked, ImageError> {
    let name = source.reference.clone();
    let reference: Reference = super::reference::parse(&source.reference).map_err(|reason| {
        ImageError::InvalidReference {
            reference: name.clone(),
            reason,
        }
    })?;
    let directory = match &source.directory {
        Some(dir) => paths::clean_str(dir).map_err(|problem| ImageError::InvalidDirectory {
            reference: name.clone(),
            directory: dir.clone(),
            reason: problem.describe(),
        })?,
        None => String::new(),
    };
    let auth = match &source.pull_secret {
        Some(secret) => registry_auth(secret, reference.registry()).map_err(|reason| {
            ImageError::InvalidPullSecret {
                reference: name.clone(),
                reason,
            }
        })?,
        None => RegistryAuth::Anonymous,
    };
    let cache = options.image_cache_dir.as_ref().map(ImageCache::new);
    let pinned = |digest: &str| {
        format!(
            "{}/{}@{digest}",
            reference.registry(),
            reference.repository()
        )
    };

    // A digest reference that was unpacked before needs no network at all.
    if let (Some(cache), Some(digest)) = (&cache, reference.digest())
        && let Some(content) = cached(cache, digest, &directory, &name).await?
    {
        return Ok(Unpacked {
            content,
            resolved: ResolvedSource::Image {
                reference: pinned(digest),
                digest: digest.to_owned(),
            },
        });
    }

    let registry = reference.resolve_registry();
    let plain_http = (is_loopback(registry)
        || options.plain_http_registries.iter().any(|r| r == registry))
        && !speaks_tls(registry).await;
    let client = client(&reference, &source.tls, plain_http, options).map_err(|err| match err {
        ClientBuildError::Tls(source) => ImageError::Tls {
            reference: name.clone(),
            source,
        },
        ClientBuildError::Client(source) => ImageError::Registry {
            reference: name.clone(),
            source,
        },
    })?;
    let oci_err = |err| classify(&name, err);
    // Authenticate explicitly: the client otherwise swallows a refused login and
    // carries on anonymously, which would hide the reason behind a later 401.
    client
        .auth(&reference, &auth, RegistryOperation::Pull)
        .await
        .map_err(oci_err)?;

    let (manifest, digest) = client
        .pull_manifest(&reference, &auth)
        .await
        .map_err(oci_err)?;
    if let Some(cache) = &cache
        && let Some(content) = cached(cache, &digest, &directory, &name).await?
    {
        return Ok(Unpacked {
            content,
            resolved: ResolvedSource::Image {
                reference: pinned(&digest),
                digest,
            },
        });
    }
    let manifest = match manifest {
        OciManifest::Image(manifest) => manifest,
        OciManifest::ImageIndex(index) => {
            let entry =
                choose_platform(&index.manifests).ok_or_else(|| ImageError::EmptyIndex {
                    reference: name.clone(),
                })?;
            let platform_ref = reference.clone_with_digest(entry);
            match client
                .pull_manifest(&platform_ref, &auth)
                .await
                .map_err(oci_err)?
            {
                (OciManifest::Image(manifest), _) => manifest,
                (OciManifest::ImageIndex(_), _) => {
                    return Err(ImageError::UnsupportedManifest {
                        reference: name,
                        source: OciDistributionError::ImageManifestNotFoundError(
                            "the index points at another index".to_owned(),
                        ),
                    });
                }
            }
        }
    };
    check_layers(&manifest, &name, options)?;

    let work = options.temp_dir().map_err(|err| ImageError::Storage {
        reference: name.clone(),
        path: options.work_dir.clone().unwrap_or_else(std::env::temp_dir),
        source: err,
    })?;
    // Layers are extracted on a blocking thread as soon as each is downloaded (and
    // digest-checked), while the next one downloads; the thread deletes each layer file
    // once it is read. It only normalises after being told every layer is there.
    let (layers, ready) = std::sync::mpsc::channel::<Option<PathBuf>>();
    let limits = options.limits;
    let work_dir = options.work_dir.clone();
    let task_name = name.clone();
    let extraction = tokio::task::spawn_blocking(move || -> Result<_, ImageError> {
        let content_err = |source| ImageError::Content {
            reference: task_name.clone(),
            source,
        };
        let mut extractor = Extractor::new(limits)
            .layered()
            .with_directory(&directory)
            .map_err(content_err)?
            .with_work_dir(work_dir);
        loop {
            match ready.recv() {
                Ok(Some(path)) => {
                    let file = std::fs::File::open(&path).map_err(|err| ImageError::Storage {
                        reference: task_name.clone(),
                        path: path.clone(),
                        source: err,
                    })?;
                    extractor.add_archive(file).map_err(content_err)?;
                    // Gone from the disk as soon as it is read; the directory goes later.
                    let _ = std::fs::remove_file(&path);
                }
                Ok(None) => break,
                // The download failed; its error is the one reported.
                Err(_) => return Ok(None),
            }
        }
        let content = extractor.finish().map_err(content_err)?;
        Ok(Some((content, directory)))
    });
    for (index, layer) in manifest.layers.iter().enumerate() {
        let path = work.path().join(format!("layer-{index}"));
        download_layer(&client, &reference, layer, &path, &name, options).await?;
        if layers.send(Some(path)).is_err() {
            // The extraction stopped early: its error says why.
            break;
        }
    }
    let _ = layers.send(None);
    let extracted = extraction.await.map_err(|_| ImageError::Task {
        reference: name.clone(),
    })??;
    let (content, directory) = extracted.ok_or_else(|| ImageError::Task {
        reference: name.clone(),
    })?;
    drop(work);

    if let Some(cache) = &cache
        && let Some(key) = ImageCache::key(&digest, &directory)
        && let Err(err) = cache.put(&key, &content).await
    {
        // The content is fine; a cache that cannot be written only costs a later pull.
        tracing::warn!(image = %name, error = %err, "failed to write image cache");
    }
    Ok(Unpacked {
        content,
        resolved: ResolvedSource::Image {
            reference: pinned(&digest),
            digest,
        },
    })
}

async fn cached(
    cache: &ImageCache,
    digest: &str,
    directory: &str,
    name: &str,
) -> Result<Option<crate::Content>, ImageError> {
    let Some(key) = ImageCache::key(digest, directory) else {
        return Ok(None);
    };
    cache.get(&key).await.map_err(|err| ImageError::Storage {
        reference: name.to_owned(),
        path: cache.dir().to_owned(),
        source: err,
    })
}

enum ClientBuildError {
    Tls(TlsError),
    Client(OciDistributionError),
}

fn client(
    reference: &Reference,
    tls: &TlsOptions,
    plain_http: bool,
    options: &UnpackOptions,
) -> Result<Client, ClientBuildError> {
    let registry = reference.resolve_registry().to_owned();
    let protocol = if plain_http {
        ClientProtocol::HttpsExcept(vec![registry])
    } else {
        ClientProtocol::Https
    };
    let extra_root_certificates = tls
        .certificates()
        .map_err(ClientBuildError::Tls)?
        .into_iter()
        .map(|der| Certificate {
            encoding: CertificateEncoding::Der,
            data: der.to_vec(),
        })
        .collect();
    let config = ClientConfig {
        protocol,
        accept_invalid_certificates: tls.insecure_skip_verify,
        extra_root_certificates,
        platform_resolver: Some(Box::new(choose_platform)),
        connect_timeout: Some(std::time::Duration::from_secs(30)),
        read_timeout: Some(options.timeout),
        ..ClientConfig::default()
    };
    Client::try_from(config).map_err(ClientBuildError::Client)
}

/// Whether a registry (`host[:port]`) is on this machine, where plain http is normal.
fn is_loopback(registry: &str) -> bool {
    let host = match registry.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(rest),
        None => registry.rsplit_once(':').map_or(registry, |(host, _)| host),
    };
    host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether a loopback registry speaks TLS. Like `crane` and `docker`, https is tried
/// first and plain http used only when the server does not answer TLS; certificates
/// are not checked here (the real client does that), only the protocol.
async fn speaks_tls(registry: &str) -> bool {
    let Ok(tls) = (TlsOptions {
        certificate_data: None,
        insecure_skip_verify: true,
    })
    .rustls_config() else {
        return false;
    };
    let Ok(probe) = reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .timeout(std::time::Duration::from_secs(5))
        .build()
    else {
        return false;
    };
    probe
        .get(format!("https://{registry}/v2/"))
        .send()
        .await
        .is_ok()
}

/// Picks the manifest for this machine's platform, else linux/amd64, else the first:
/// bundle and catalog content is the same on every platform.
fn choose_platform(entries: &[ImageIndexEntry]) -> Option<String> {
    oci_client::client::current_platform_resolver(entries)
        .or_else(|| oci_client::client::linux_amd64_resolver(entries))
        .or_else(|| entries.first().map(|entry| entry.digest.clone()))
}

fn check_layers(
    manifest: &OciImageManifest,
    name: &str,
    options: &UnpackOptions,
) -> Result<(), ImageError> {
    for layer in &manifest.layers {
        let media_type = layer.media_type.as_str();
        let tar_like = media_type.ends_with(".tar")
            || media_type.ends_with("tar+gzip")
            || media_type.ends_with("tar.gzip");
        if !tar_like {
            return Err(ImageError::UnsupportedLayer {
                reference: name.to_owned(),
                media_type: media_type.to_owned(),
            });
        }
    }
    // Compressed layers cannot sensibly be larger than the uncompressed limit; refuse
    // before downloading anything.
    let total: i64 = manifest.layers.iter().map(|l| l.size.max(0)).sum();
    let limit = options.limits.max_uncompressed_bytes;
    if u64::try_from(total).unwrap_or(u64::MAX) > limit {
        return Err(ImageError::TooLarge {
            reference: name.to_owned(),
            source: LimitError::Size { limit },
        });
    }
    Ok(())
}

async fn download_layer(
    client: &Client,
    reference: &Reference,
    layer: &OciDescriptor,
    path: &Path,
    name: &str,
    options: &UnpackOptions,
) -> Result<(), ImageError> {
    let storage_err = |err| ImageError::Storage {
        reference: name.to_owned(),
        path: path.to_owned(),
        source: err,
    };
    let mut stream = client
        .pull_blob_stream(reference, layer)
        .await
        .map_err(|err| classify(name, err))?;
    let mut file = tokio::fs::File::create(path).await.map_err(storage_err)?;
    let limit = options.limits.max_uncompressed_bytes;
    // The descriptor's size is what the digest covers; a server sending more is cut off.
    let expected = u64::try_from(layer.size.max(0)).unwrap_or(0);
    let mut written = 0u64;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|err| classify(name, stream_error(err)))?;
        written = written.saturating_add(chunk.len() as u64);
        if written > limit || (expected > 0 && written > expected) {
            return Err(ImageError::TooLarge {
                reference: name.to_owned(),
                source: LimitError::Size { limit },
            });
        }
        file.write_all(&chunk).await.map_err(storage_err)?;
    }
    file.flush().await.map_err(storage_err)?;
    Ok(())
}

/// The verifying blob stream reports a digest mismatch as an `io::Error` wrapping the
/// client's digest error; unwrap it so it is classified as a mismatch.
fn stream_error(err: std::io::Error) -> OciDistributionError {
    let is_digest = err
        .get_ref()
        .is_some_and(|inner| inner.is::<oci_client::errors::DigestError>());
    if !is_digest {
        return OciDistributionError::IoError(err);
    }
    match err
        .into_inner()
        .map(|inner| inner.downcast::<oci_client::errors::DigestError>())
    {
        Some(Ok(digest)) => OciDistributionError::DigestError(*digest),
        Some(Err(other)) => OciDistributionError::IoError(std::io::Error::other(other)),
        None => OciDistributionError::GenericError(None),
    }
}

/// Sorts a client error into the variant that says what to do about it.
fn classify(name: &str, err: OciDistributionError) -> ImageError {
    let reference = name.to_owned();
    let status = match &err {
        OciDistributionError::ServerError { code, .. } => Some(*code),
        OciDistributionError::RequestError(request) => request.status().map(|s| s.as_u16()),
        _ => None,
    };
    let has = |wanted: fn(&OciErrorCode) -> bool| match &err {
        OciDistributionError::RegistryError { envelope, .. } => {
            envelope.errors.iter().any(|e| wanted(&e.code))
        }
        _ => false,
    };
    let denied = has(|c| matches!(c, OciErrorCode::Unauthorized | OciErrorCode::Denied));
    let unknown = has(|c| {
        matches!(
            c,
            OciErrorCode::ManifestUnknown
                | OciErrorCode::NameUnknown
                | OciErrorCode::BlobUnknown
                | OciErrorCode::NotFound
        )
    });
    if matches!(
        err,
        OciDistributionError::UnauthorizedError { .. }
            | OciDistributionError::AuthenticationFailure(_)
    ) || matches!(status, Some(401 | 403))
        || denied
    {
        return ImageError::Unauthorized {
            reference,
            source: err,
        };
    }
    if matches!(status, Some(404)) || unknown {
        return ImageError::NotFound {
            reference,
            source: err,
        };
    }
    match err {
        OciDistributionError::DigestError(_) => ImageError::DigestMismatch {
            reference,
            source: err,
        },
        OciDistributionError::UnsupportedMediaTypeError(_)
        | OciDistributionError::UnsupportedSchemaVersionError(_)
        | OciDistributionError::ManifestParsingError(_)
        | OciDistributionError::VersionedParsingError(_)
        | OciDistributionError::ImageManifestNotFoundError(_) => ImageError::UnsupportedManifest {
            reference,
            source: err,
        },
        _ => ImageError::Registry {
            reference,
            source: err,
        },
    }
}

/// The keys of a pull Secret's data that hold registry credentials, in the order they are
/// looked for: `kubernetes.io/dockerconfigjson` Secrets, then legacy `kubernetes.io/dockercfg`.
pub const PULL_SECRET_KEYS: [&str; 2] = [".dockerconfigjson", ".dockercfg"];

/// The registry credentials of a pull Secret (the value of its first
/// [`PULL_SECRET_KEYS`] key), for [`ImageSource::pull_secret`]; the error is a sentence
/// for the user.
pub fn pull_secret_config(
    data: &BTreeMap<String, k8s_openapi::ByteString>,
) -> Result<Vec<u8>, String> {
    PULL_SECRET_KEYS
        .iter()
        .find_map(|key| data.get(*key))
        .map(|bytes| bytes.0.clone())
        .ok_or_else(|| "it has neither a .dockerconfigjson nor a .dockercfg key".to_owned())
}

/// Credentials for `registry` from a `.dockerconfigjson` (`{"auths": {...}}`) or legacy
/// `.dockercfg` (the map itself). No entry for the registry means anonymous access.
fn registry_auth(secret: &[u8], registry: &str) -> Result<RegistryAuth, String> {
    let value: serde_json::Value =
        serde_json::from_slice(secret).map_err(|err| format!("not JSON: {err}"))?;
    let auths = value.get("auths").unwrap_or(&value);
    let auths: BTreeMap<String, serde_json::Value> = serde_json::from_value(auths.clone())
        .map_err(|_| "want an object of registries".to_owned())?;
    let wanted = canonical_registry(registry);
    let Some(entry) = auths
        .iter()
        .find(|(key, _)| canonical_registry(registry_of_key(key)) == wanted)
        .map(|(_, entry)| entry)
    else {
        return Ok(RegistryAuth::Anonymous);
    };
    let field = |name: &str| {
        entry
            .get(name)
            .and_then(|v| v.as_str())
            .filter(|s| !s.is_empty())
    };
    if let (Some(username), Some(password)) = (field("username"), field("password")) {
        return Ok(RegistryAuth::Basic(
            username.to_owned(),
            password.to_owned(),
        ));
    }
    if let Some(encoded) = field("auth") {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .map_err(|_| format!("the auth entry for {registry} is not base64"))?;
        let decoded = String::from_utf8(decoded)
            .map_err(|_| format!("the auth entry for {registry} is not UTF-8"))?;
        let (username, password) = decoded
            .split_once(':')
            .ok_or_else(|| format!("the auth entry for {registry} is not user:password"))?;
        return Ok(RegistryAuth::Basic(
            username.to_owned(),
            password.to_owned(),
        ));
    }
    Err(format!(
        "the entry for {registry} has neither auth nor username and password"
    ))
}

/// The `host[:port]` of a docker config key such as `https://index.docker.io/v1/`.
fn registry_of_key(key: &str) -> &str {
    let key = key.trim();
    let key = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    key.split('/').next().unwrap_or(key)
}

fn canonical_registry(host: &str) -> String {
    match host {
        "docker.io" | "index.docker.io" | "registry-1.docker.io" => "docker.io".to_owned(),
        other => other.to_ascii_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(auth: RegistryAuth) -> (String, String) {
        match auth {
            RegistryAuth::Basic(user, password) => (user, password),
            other => panic!("expected basic auth, got {other:?}"),
        }
    }

    #[test]
    fn a_pull_secret_of_either_type_gives_its_credentials() {
        let data =
            |key: &str| BTreeMap::from([(key.to_owned(), k8s_openapi::ByteString(b"{}".to_vec()))]);
        assert_eq!(
            pull_secret_config(&data(".dockerconfigjson")).unwrap(),
            b"{}"
        );
        assert_eq!(pull_secret_config(&data(".dockercfg")).unwrap(), b"{}");
        let missing = pull_secret_config(&data("token")).unwrap_err();
        assert!(missing.contains("neither a .dockerconfigjson nor a .dockercfg"));
    }

    #[test]
    fn dockerconfigjson_auth_entries_are_decoded_for_the_matching_registry() {
        let secret = br#"{"auths":{"https://quay.io/v2/":{"auth":"YWxpY2U6czNjcmV0"},
                          "127.0.0.1:5000":{"username":"bob","password":"pw"}}}"#;
        assert_eq!(
            basic(registry_auth(secret, "quay.io").unwrap()),
            ("alice".to_owned(), "s3cret".to_owned())
        );
        assert_eq!(
            basic(registry_auth(secret, "127.0.0.1:5000").unwrap()),
            ("bob".to_owned(), "pw".to_owned())
        );
        assert!(matches!(
            registry_auth(secret, "ghcr.io").unwrap(),
            RegistryAuth::Anonymous
        ));
    }

    #[test]
    fn docker_hub_keys_match_every_docker_hub_spelling() {
        let secret = br#"{"https://index.docker.io/v1/":{"auth":"dTpw"}}"#;
        assert_eq!(
            basic(registry_auth(secret, "docker.io").unwrap()),
            ("u".to_owned(), "p".to_owned())
        );
    }

    #[test]
    fn malformed_pull_secrets_are_explained() {
        assert!(
            registry_auth(b"nope", "quay.io")
                .unwrap_err()
                .starts_with("not JSON")
        );
        let secret = br#"{"auths":{"quay.io":{"auth":"!!!"}}}"#;
        assert_eq!(
            registry_auth(secret, "quay.io").unwrap_err(),
            "the auth entry for quay.io is not base64"
        );
    }

    #[test]
    fn debug_output_does_not_show_the_pull_secret() {
        let source = ImageSource {
            reference: "quay.io/a/b:1".to_owned(),
            pull_secret: Some(br#"{"auths":{"quay.io":{"auth":"c2VjcmV0"}}}"#.to_vec()),
            ..ImageSource::default()
        };
        let debug = format!("{source:?}");
        assert!(
            debug.contains("<redacted>") && !debug.contains("c2VjcmV0"),
            "{debug}"
        );
    }

    #[test]
    fn only_loopback_registries_use_plain_http() {
        assert!(is_loopback("127.0.0.1:5000"));
        assert!(is_loopback("localhost:5000"));
        assert!(is_loopback("[::1]:5000"));
        assert!(!is_loopback("quay.io"));
        assert!(!is_loopback("10.0.0.1:5000"));
    }

    #[test]
    fn not_found_and_unauthorized_registry_errors_are_transient() {
        let not_found = classify(
            "r",
            OciDistributionError::ServerError {
                code: 404,
                url: "u".into(),
                message: "m".into(),
            },
        );
        assert!(matches!(not_found, ImageError::NotFound { .. }));
        assert!(!not_found.is_terminal());
        let unauthorized = classify(
            "r",
            OciDistributionError::AuthenticationFailure("no".into()),
        );
        assert!(matches!(unauthorized, ImageError::Unauthorized { .. }));
        assert!(!unauthorized.is_terminal());
        let mismatch = classify(
            "r",
            OciDistributionError::DigestError(oci_client::errors::DigestError::VerificationError {
                expected: "a".into(),
                actual: "b".into(),
            }),
        );
        assert!(mismatch.is_terminal());
    }
}
