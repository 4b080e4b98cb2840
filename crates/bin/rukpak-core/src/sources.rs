//! Turning a Bundle's `spec.source` into a `content` source: reading the Secrets and
//! ConfigMaps it names from the system namespace, and mapping the pinned result back into
//! the API's terms for `status.resolvedSource`.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kit::kube_error::KubeCallError;
use kube::{Api, Client};
use rukpak_api::{BundleSource, GitRef, SourceType};

use content::source::{
    BasicAuth, ConfigMapSource, GitAuth, GitSource, HttpSource, ImageSource, ResolvedSource,
    Source, TlsOptions,
};

/// A source that cannot be prepared.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// A Secret or ConfigMap named by the source does not exist (yet).
    #[error("{kind} {namespace}/{name} not found")]
    Missing {
        /// `Secret` or `ConfigMap`.
        kind: &'static str,
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
    },
    /// A Secret lacks the keys the source needs.
    #[error("secret {namespace}/{name} cannot be used: {reason}")]
    BadSecret {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// The source type's field is not set (the CRD normally prevents this).
    #[error("spec.source.{0} is not set")]
    Incomplete(&'static str),
    /// Reading from the API server failed.
    #[error(transparent)]
    Kube(#[from] KubeCallError),
}

impl SourceError {
    /// Whether only a change can help: a missing or unusable Secret or ConfigMap (the
    /// Bundle controller watches them, so creating or fixing one retries at once) or an
    /// incomplete spec. Reading from the API server is retried with backoff.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            Self::Missing { .. } | Self::BadSecret { .. } | Self::Incomplete(_)
        )
    }
}

/// What `prepare` produced: a content source, or "wait for an upload".
pub enum Prepared {
    /// Fetch this.
    Fetch(Source),
    /// Content arrives through `rukpak-core upload`.
    Upload,
}

/// Reads what the source needs from `namespace` and returns the content source.
pub async fn prepare(
    client: &Client,
    namespace: &str,
    source: &BundleSource,
) -> Result<Prepared, SourceError> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let secret = |name: String| {
        let secrets = secrets.clone();
        async move {
            secrets
                .get_opt(&name)
                .await
                .map_err(|source| {
                    KubeCallError::new("read", format!("Secret {namespace}/{name}"), source)
                })?
                .ok_or_else(|| SourceError::Missing {
                    kind: "Secret",
                    namespace: namespace.to_owned(),
                    name,
                })
        }
    };
    let bad_secret = |name: &str, reason: String| SourceError::BadSecret {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        reason,
    };
    Ok(match source.type_ {
        SourceType::Image => {
            let image = source
                .image
                .as_ref()
                .ok_or(SourceError::Incomplete("image"))?;
            let pull_secret = match &image.pull_secret {
                Some(name) => {
                    let data = secret(name.clone()).await?.data.unwrap_or_default();
                    let config = content::source::image::pull_secret_config(&data)
                        .map_err(|reason| bad_secret(name, reason))?;
                    Some(config)
                }
                None => None,
            };
            Prepared::Fetch(Source::Image(ImageSource {
                reference: image.ref_.clone(),
                pull_secret,
                tls: TlsOptions {
                    certificate_data: image.certificate_data.clone().map(String::into_bytes),
                    insecure_skip_verify: image.insecure_skip_tls_verify.unwrap_or(false),
                },
                directory: None,
            }))
        }
        SourceType::Git => {
            let git = source.git.as_ref().ok_or(SourceError::Incomplete("git"))?;
            let reference = match (&git.ref_.branch, &git.ref_.tag, &git.ref_.commit) {
                (Some(branch), _, _) => content::source::GitRef::Branch(branch.clone()),
                (_, Some(tag), _) => content::source::GitRef::Tag(tag.clone()),
                (_, _, Some(commit)) => content::source::GitRef::Commit(commit.clone()),
                _ => return Err(SourceError::Incomplete("git.ref")),
            };
            let auth = match git.auth.as_ref().and_then(|a| a.secret.as_ref()) {
                Some(secret_ref) => {
                    let found = secret(secret_ref.name.clone()).await?;
                    Some(
                        GitAuth::from_secret(&found)
                            .map_err(|err| bad_secret(&secret_ref.name, err.reason))?,
                    )
                }
                None => None,
            };
            Prepared::Fetch(Source::Git(GitSource {
                repository: git.repository.clone(),
                directory: git.directory.clone().filter(|d| !d.is_empty()),
                reference,
                auth,
                tls: TlsOptions {
                    certificate_data: None,
                    insecure_skip_verify: git
                        .auth
                        .as_ref()
                        .and_then(|a| a.insecure_skip_tls_verify)
                        .unwrap_or(false),
                },
            }))
        }
        SourceType::Http => {
            let http = source
                .http
                .as_ref()
                .ok_or(SourceError::Incomplete("http"))?;
            let auth = match http.auth.as_ref().and_then(|a| a.secret.as_ref()) {
                Some(secret_ref) => {
                    let found = secret(secret_ref.name.clone()).await?;
                    Some(
                        BasicAuth::from_secret(&found)
                            .map_err(|err| bad_secret(&secret_ref.name, err.reason))?,
                    )
                }
                None => None,
            };
            Prepared::Fetch(Source::Http(HttpSource {
                url: http.url.clone(),
                sha256: http.sha256.clone(),
                auth,
                tls: TlsOptions {
                    certificate_data: http
                        .auth
                        .as_ref()
                        .and_then(|a| a.certificate_data.clone())
                        .map(String::into_bytes),
                    insecure_skip_verify: http
                        .auth
                        .as_ref()
                        .and_then(|a| a.insecure_skip_tls_verify)
                        .unwrap_or(false),
                },
            }))
        }
        SourceType::ConfigMaps => {
            let entries = source
                .config_maps
                .as_ref()
                .ok_or(SourceError::Incomplete("configMaps"))?;
            let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
            let mut sources = Vec::new();
            for entry in entries {
                let name = entry.config_map.name.clone();
                let config_map = configmaps
                    .get_opt(&name)
                    .await
                    .map_err(|source| {
                        KubeCallError::new("read", format!("ConfigMap {namespace}/{name}"), source)
                    })?
                    .ok_or_else(|| SourceError::Missing {
                        kind: "ConfigMap",
                        namespace: namespace.to_owned(),
                        name: name.clone(),
                    })?;
                sources.push(ConfigMapSource {
                    config_map,
                    path: entry.path.clone().unwrap_or_default(),
                });
            }
            Prepared::Fetch(Source::ConfigMaps(sources))
        }
        SourceType::Upload => Prepared::Upload,
    })
}

/// The spec's source pinned to what was unpacked, for `status.resolvedSource`.
pub fn pinned(spec: &BundleSource, resolved: &ResolvedSource) -> BundleSource {
    let mut pinned = spec.clone();
    match resolved {
        ResolvedSource::Image { reference, .. } => {
            if let Some(image) = pinned.image.as_mut() {
                image.ref_ = reference.clone();
            }
        }
        ResolvedSource::Git { commit, .. } => {
            if let Some(git) = pinned.git.as_mut() {
                git.ref_ = GitRef {
                    branch: None,
                    tag: None,
                    commit: Some(commit.clone()),
                };
            }
        }
        ResolvedSource::Http { sha256, .. } => {
            if let Some(http) = pinned.http.as_mut() {
                http.sha256 = Some(sha256.clone());
            }
        }
        ResolvedSource::ConfigMaps(_) | ResolvedSource::Upload => {}
    }
    pinned
}

#[cfg(test)]
mod tests {
    use super::*;
    use rukpak_api::{GitSource as ApiGit, HttpSource as ApiHttp, ImageSource as ApiImage};

    fn base(type_: SourceType) -> BundleSource {
        BundleSource {
            type_,
            image: None,
            git: None,
            http: None,
            config_maps: None,
            upload: None,
        }
    }

    #[test]
    fn pinning_replaces_a_tag_by_the_digest_a_branch_by_the_commit_and_adds_the_sha256() {
        let image = BundleSource {
            image: Some(ApiImage {
                ref_: "r/b:v1".into(),
                ..ApiImage::default()
            }),
            ..base(SourceType::Image)
        };
        let pinned_image = pinned(
            &image,
            &ResolvedSource::Image {
                reference: "r/b@sha256:abc".into(),
                digest: "sha256:abc".into(),
            },
        );
        assert_eq!(pinned_image.image.unwrap().ref_, "r/b@sha256:abc");

        let git = BundleSource {
            git: Some(ApiGit {
                repository: "https://g/r.git".into(),
                directory: None,
                ref_: GitRef {
                    branch: Some("main".into()),
                    tag: None,
                    commit: None,
                },
                auth: None,
            }),
            ..base(SourceType::Git)
        };
        let pinned_git = pinned(
            &git,
            &ResolvedSource::Git {
                repository: "https://g/r.git".into(),
                commit: "c".repeat(40),
                directory: None,
            },
        );
        assert_eq!(
            pinned_git.git.unwrap().ref_,
            GitRef {
                branch: None,
                tag: None,
                commit: Some("c".repeat(40))
            }
        );

        let http = BundleSource {
            http: Some(ApiHttp {
                url: "https://f/b.tgz".into(),
                sha256: None,
                auth: None,
            }),
            ..base(SourceType::Http)
        };
        let pinned_http = pinned(
            &http,
            &ResolvedSource::Http {
                url: "https://f/b.tgz".into(),
                sha256: "d".repeat(64),
            },
        );
        assert_eq!(pinned_http.http.unwrap().sha256, Some("d".repeat(64)));
    }

    #[test]
    fn only_api_errors_are_retried_on_the_backoff() {
        assert!(SourceError::Incomplete("image").is_terminal());
        assert!(
            SourceError::BadSecret {
                namespace: "n".into(),
                name: "s".into(),
                reason: "r".into()
            }
            .is_terminal()
        );
        // Watched: creating it retries at once.
        assert!(
            SourceError::Missing {
                kind: "Secret",
                namespace: "n".into(),
                name: "s".into()
            }
            .is_terminal()
        );
        assert!(
            !SourceError::Kube(KubeCallError::new(
                "read",
                "Secret n/s",
                kube::Error::LinesCodecMaxLineLengthExceeded,
            ))
            .is_terminal()
        );
    }
}
