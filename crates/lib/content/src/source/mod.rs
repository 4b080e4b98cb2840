//! Where content comes from: OCI images, git repositories, http URLs and ConfigMaps.
//!
//! Each source produces [`Unpacked`]: normalised [`Content`] plus the
//! [`ResolvedSource`] it came from (image digest, git commit, ...), so a caller can
//! record exactly what it unpacked. Credentials and certificates are passed in as data:
//! the caller reads the Secrets.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;

use crate::content::Content;
use crate::limits::Limits;

pub mod cache;
pub mod configmap;
pub mod egress;
pub mod git;
pub mod http;
pub mod image;
pub mod reference;
pub mod tls;

pub use configmap::{ConfigMapError, ConfigMapSource};
pub use egress::{DEFAULT_DENIED_NETWORKS, Denied, DeniedNetworks};
pub use git::{GitAuth, GitError, GitRef, GitSource};
pub use http::{HttpError, HttpSource};
pub use image::{ImageError, ImageSource};
pub use tls::{TlsError, TlsOptions};

/// Content together with what it was resolved from.
#[derive(Debug, Clone)]
pub struct Unpacked {
    /// The normalised content.
    pub content: Content,
    /// The pinned source.
    pub resolved: ResolvedSource,
}

/// The exact source that was unpacked: following it again yields the same content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolvedSource {
    /// An image pinned by the digest of its (top-level) manifest.
    Image {
        /// `registry/repository@sha256:...`.
        reference: String,
        /// The manifest digest.
        digest: String,
    },
    /// A git commit.
    Git {
        /// The repository URL as given.
        repository: String,
        /// The full commit hash.
        commit: String,
        /// The directory used, if any (clean, relative).
        directory: Option<String>,
    },
    /// An http URL and the sha256 of what it served.
    Http {
        /// The URL as given.
        url: String,
        /// Lowercase hex sha256 of the downloaded file (before normalisation).
        sha256: String,
    },
    /// The ConfigMaps as they were read.
    ConfigMaps(Vec<ResolvedConfigMap>),
    /// Content uploaded by a client.
    Upload,
}

/// One ConfigMap of a [`ResolvedSource::ConfigMaps`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedConfigMap {
    /// `namespace/name`.
    pub name: String,
    /// Its uid, which changes when it is deleted and recreated.
    pub uid: Option<String>,
    /// Its resourceVersion.
    pub resource_version: Option<String>,
}

/// Settings shared by all sources.
#[derive(Debug, Clone)]
pub struct UnpackOptions {
    /// Limits on the content.
    pub limits: Limits,
    /// Directory for the image cache (normalised content by manifest digest); none
    /// disables the cache.
    pub image_cache_dir: Option<PathBuf>,
    /// Directory for temporary files (image layers, git repositories); none means the
    /// system's temporary directory.
    pub work_dir: Option<PathBuf>,
    /// Longest time one unpack may take, network included.
    pub timeout: Duration,
    /// Registries (`host[:port]`) reached over plain HTTP when they do not speak TLS, as
    /// loopback registries always are (e.g. a kind cluster's local registry).
    pub plain_http_registries: Vec<String>,
    /// Networks no source may connect to (see [`egress`]).
    pub denied_networks: DeniedNetworks,
}

impl Default for UnpackOptions {
    fn default() -> Self {
        Self {
            limits: Limits::default(),
            image_cache_dir: None,
            work_dir: None,
            timeout: Duration::from_secs(300),
            plain_http_registries: Vec::new(),
            denied_networks: DeniedNetworks::default(),
        }
    }
}

impl UnpackOptions {
    /// A fresh temporary directory under [`UnpackOptions::work_dir`].
    pub(crate) fn temp_dir(&self) -> std::io::Result<tempfile::TempDir> {
        match &self.work_dir {
            Some(dir) => {
                std::fs::create_dir_all(dir)?;
                tempfile::Builder::new().prefix("content-").tempdir_in(dir)
            }
            None => tempfile::Builder::new().prefix("content-").tempdir(),
        }
    }
}

/// One source to unpack.
#[derive(Debug, Clone)]
pub enum Source {
    /// An OCI image.
    Image(ImageSource),
    /// A git repository.
    Git(GitSource),
    /// A gzip'd tar at an http(s) URL.
    Http(HttpSource),
    /// Immutable ConfigMaps, each written below a path.
    ConfigMaps(Vec<ConfigMapSource>),
}

/// Unpacks any [`Source`] with one set of [`UnpackOptions`].
///
/// [`Unpacker::unpack`] is defined in the crate's `unpack` module: it returns the
/// crate-wide [`crate::Error`], which wraps this module's errors.
#[derive(Debug, Clone, Default)]
pub struct Unpacker {
    options: UnpackOptions,
}

impl Unpacker {
    /// An unpacker with these options.
    pub fn new(options: UnpackOptions) -> Self {
        Self { options }
    }

    /// The options in use.
    pub fn options(&self) -> &UnpackOptions {
        &self.options
    }
}

/// Username and password for http basic authentication.
#[derive(Clone, PartialEq, Eq)]
pub struct BasicAuth {
    /// The user name.
    pub username: String,
    /// The password or token.
    pub password: String,
}

impl std::fmt::Debug for BasicAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BasicAuth")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// Secret data that lacks what a source needs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("failed to read credentials from secret data: {reason}")]
pub struct SecretDataError {
    /// What is missing or malformed.
    pub reason: String,
}

impl BasicAuth {
    /// Reads the keys `username` and `password` (the layout of a
    /// `kubernetes.io/basic-auth` Secret).
    pub fn from_secret_data(data: &BTreeMap<String, ByteString>) -> Result<Self, SecretDataError> {
        Ok(Self {
            username: utf8_key(data, "username")?,
            password: utf8_key(data, "password")?,
        })
    }

    /// [`BasicAuth::from_secret_data`] on a Secret.
    pub fn from_secret(secret: &Secret) -> Result<Self, SecretDataError> {
        Self::from_secret_data(&secret.data.clone().unwrap_or_default())
    }
}

pub(crate) fn utf8_key(
    data: &BTreeMap<String, ByteString>,
    key: &str,
) -> Result<String, SecretDataError> {
    let value = data.get(key).ok_or_else(|| SecretDataError {
        reason: format!("key {key:?} is missing"),
    })?;
    String::from_utf8(value.0.clone()).map_err(|_| SecretDataError {
        reason: format!("key {key:?} is not UTF-8"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_auth_reads_username_and_password_and_hides_the_password() {
        let data = BTreeMap::from([
            ("username".to_owned(), ByteString(b"alice".to_vec())),
            ("password".to_owned(), ByteString(b"s3cret".to_vec())),
        ]);
        let auth = BasicAuth::from_secret_data(&data).unwrap();
        assert_eq!(auth.username, "alice");
        assert_eq!(auth.password, "s3cret");
        assert!(!format!("{auth:?}").contains("s3cret"));
    }

    #[test]
    fn basic_auth_names_the_missing_key() {
        let data = BTreeMap::from([("username".to_owned(), ByteString(b"alice".to_vec()))]);
        assert_eq!(
            BasicAuth::from_secret_data(&data).unwrap_err().to_string(),
            "failed to read credentials from secret data: key \"password\" is missing"
        );
    }
}
