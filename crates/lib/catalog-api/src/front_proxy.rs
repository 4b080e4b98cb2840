//! Requests the Kubernetes API server forwards: the catalog API is also an aggregated API
//! (`catalogs.deppy.io/v1`), so any kubeconfig reaches it through the API server, which
//! authenticates the user (client certificates, OIDC, tokens) and forwards the request with
//! the user's name, groups and extra fields in headers (`X-Remote-User`, …).
//!
//! Those headers are believed only from a client that proves it is the API server's front
//! proxy: a TLS client certificate signed by the request-header CA, with a common name the
//! API server allows. Everyone else's headers are ignored, and such a request must carry its
//! own bearer token. The configuration is the one the API server publishes in the ConfigMap
//! `kube-system/extension-apiserver-authentication`, read by [`FrontProxyConfig::from_data`].

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use axum::http::HeaderMap;
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::ClientCertVerifier;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

/// The ConfigMap the API server publishes its front-proxy configuration in.
pub const CONFIG_MAP_NAMESPACE: &str = "kube-system";
/// Its name.
pub const CONFIG_MAP_NAME: &str = "extension-apiserver-authentication";

/// How the API server forwards users, as it publishes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontProxyConfig {
    /// PEM bundle of the CA that signs the front proxy's client certificate.
    pub client_ca_pem: String,
    /// Common names a front-proxy certificate may have; empty means any the CA signed.
    pub allowed_names: Vec<String>,
    /// Headers that carry the user name, first non-empty wins.
    pub username_headers: Vec<String>,
    /// Headers that carry the user's UID.
    pub uid_headers: Vec<String>,
    /// Headers that carry groups, each value one group.
    pub group_headers: Vec<String>,
    /// Prefixes of headers that carry extra fields (`<prefix><key>: value`).
    pub extra_prefixes: Vec<String>,
}

impl FrontProxyConfig {
    /// Reads the ConfigMap's data; `Ok(None)` when the API server forwards no users (no
    /// request-header CA configured), and a sentence when the data is malformed.
    pub fn from_data(data: &BTreeMap<String, String>) -> Result<Option<Self>, String> {
        let Some(ca) = data
            .get("requestheader-client-ca-file")
            .filter(|ca| !ca.trim().is_empty())
        else {
            return Ok(None);
        };
        let list = |key: &str| -> Result<Vec<String>, String> {
            match data.get(key) {
                None => Ok(Vec::new()),
                Some(text) => serde_json::from_str::<Vec<String>>(text).map_err(|err| {
                    format!("{CONFIG_MAP_NAMESPACE}/{CONFIG_MAP_NAME} has a {key} that is not a JSON list of strings: {err}")
                }),
            }
        };
        let config = Self {
            client_ca_pem: ca.clone(),
            allowed_names: list("requestheader-allowed-names")?,
            username_headers: list("requestheader-username-headers")?,
            uid_headers: list("requestheader-uid-headers")?,
            group_headers: list("requestheader-group-headers")?,
            extra_prefixes: list("requestheader-extra-headers-prefix")?,
        };
        if config.username_headers.is_empty() {
            return Err(format!(
                "{CONFIG_MAP_NAMESPACE}/{CONFIG_MAP_NAME} names a request-header CA but no requestheader-username-headers"
            ));
        }
        Ok(Some(config))
    }

    /// The user the headers name, when the front proxy forwarded one.
    pub fn forwarded_user(&self, headers: &HeaderMap) -> Option<ForwardedUser> {
        let first = |names: &[String]| {
            names.iter().find_map(|name| {
                headers
                    .get(name.as_str())
                    .and_then(|value| value.to_str().ok())
                    .filter(|value| !value.is_empty())
                    .map(str::to_owned)
            })
        };
        let name = first(&self.username_headers)?;
        let uid = first(&self.uid_headers);
        let groups = self
            .group_headers
            .iter()
            .flat_map(|header| headers.get_all(header.as_str()))
            .filter_map(|value| value.to_str().ok())
            .map(str::to_owned)
            .collect();
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (header, value) in headers {
            let Ok(value) = value.to_str() else { continue };
            // Header names arrive lowercased; the prefixes are compared the same way.
            let key = self.extra_prefixes.iter().find_map(|prefix| {
                header
                    .as_str()
                    .strip_prefix(prefix.to_ascii_lowercase().as_str())
            });
            if let Some(key) = key.filter(|key| !key.is_empty()) {
                // Keys are percent-encoded by the API server (they may hold '/').
                let key: String = form_urlencoded::parse(format!("k={key}").as_bytes())
                    .next()
                    .map(|(_, decoded)| decoded.into_owned())
                    .unwrap_or_else(|| key.to_owned());
                extra.entry(key).or_default().push(value.to_owned());
            }
        }
        Some(ForwardedUser {
            name,
            uid,
            groups,
            extra,
        })
    }
}

/// A user the front proxy forwarded.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ForwardedUser {
    /// User name.
    pub name: String,
    /// UID, when sent.
    pub uid: Option<String>,
    /// Groups.
    pub groups: Vec<String>,
    /// Extra fields (for example, a ServiceAccount token's pod name).
    pub extra: BTreeMap<String, Vec<String>>,
}

/// Who is on the other end of a connection, decided once at its TLS handshake and attached
/// to each of its requests.
#[derive(Debug, Clone, Default)]
pub enum Peer {
    /// A client that did not prove it is the front proxy: its user headers mean nothing.
    #[default]
    Direct,
    /// The API server's front proxy, trusted under this configuration.
    FrontProxy(Arc<FrontProxyConfig>),
}

/// The front-proxy trust in force, replaced when the API server's ConfigMap changes.
#[derive(Default)]
pub struct FrontProxyTrust(RwLock<Option<Trusted>>);

/// A configuration with its certificate verifier, built once per change.
#[derive(Clone)]
pub(crate) struct Trusted {
    pub(crate) config: Arc<FrontProxyConfig>,
    pub(crate) verifier: Arc<dyn ClientCertVerifier>,
}

impl std::fmt::Debug for FrontProxyTrust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let current = self.current();
        f.debug_struct("FrontProxyTrust")
            .field("config", &current.map(|t| t.config))
            .finish()
    }
}

impl FrontProxyTrust {
    /// Trusts front-proxy certificates under `config` from now on, or none when `None`.
    /// New connections see the change; open ones keep what their handshake decided.
    pub fn set(&self, config: Option<FrontProxyConfig>) -> Result<(), String> {
        let trusted = match config {
            None => None,
            Some(config) => {
                let mut roots = rustls::RootCertStore::empty();
                for cert in CertificateDer::pem_slice_iter(config.client_ca_pem.as_bytes()) {
                    let cert =
                        cert.map_err(|err| format!("the request-header CA is not PEM: {err}"))?;
                    roots
                        .add(cert)
                        .map_err(|err| format!("the request-header CA cannot be used: {err}"))?;
                }
                let verifier = WebPkiClientVerifier::builder_with_provider(
                    Arc::new(roots),
                    Arc::new(rustls::crypto::ring::default_provider()),
                )
                // Clients without a certificate are ordinary bearer-token clients.
                .allow_unauthenticated()
                .build()
                .map_err(|err| format!("the request-header CA cannot be used: {err}"))?;
                Some(Trusted {
                    config: Arc::new(config),
                    verifier,
                })
            }
        };
        *self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = trusted;
        Ok(())
    }

    /// The configuration in force.
    pub fn config(&self) -> Option<Arc<FrontProxyConfig>> {
        self.current().map(|trusted| trusted.config)
    }

    pub(crate) fn current(&self) -> Option<Trusted> {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// Whether a client certificate the verifier accepted belongs to an allowed front proxy:
/// its subject's common name is one of `allowed` (any, when `allowed` is empty).
pub(crate) fn allowed_front_proxy(leaf: &CertificateDer<'_>, allowed: &[String]) -> bool {
    if allowed.is_empty() {
        return true;
    }
    let Ok((_, cert)) = x509_parser::parse_x509_certificate(leaf.as_ref()) else {
        return false;
    };
    cert.subject()
        .iter_common_name()
        .filter_map(|cn| cn.as_str().ok())
        .any(|cn| allowed.iter().any(|name| name == cn))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use axum::http::HeaderValue;

    fn data() -> BTreeMap<String, String> {
        [
            (
                "requestheader-client-ca-file",
                "-----BEGIN CERTIFICATE-----\n",
            ),
            ("requestheader-allowed-names", r#"["front-proxy-client"]"#),
            ("requestheader-username-headers", r#"["X-Remote-User"]"#),
            ("requestheader-uid-headers", r#"["X-Remote-Uid"]"#),
            ("requestheader-group-headers", r#"["X-Remote-Group"]"#),
            (
                "requestheader-extra-headers-prefix",
                r#"["X-Remote-Extra-"]"#,
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    #[test]
    fn the_published_configuration_is_read() {
        let config = FrontProxyConfig::from_data(&data()).unwrap().unwrap();
        assert_eq!(config.allowed_names, ["front-proxy-client"]);
        assert_eq!(config.group_headers, ["X-Remote-Group"]);
        assert_eq!(FrontProxyConfig::from_data(&BTreeMap::new()).unwrap(), None);
        let mut bad = data();
        bad.insert(
            "requestheader-group-headers".into(),
            "X-Remote-Group".into(),
        );
        let err = FrontProxyConfig::from_data(&bad).unwrap_err();
        assert!(err.contains("requestheader-group-headers"), "{err}");
        let mut no_user = data();
        no_user.remove("requestheader-username-headers");
        assert!(FrontProxyConfig::from_data(&no_user).is_err());
    }

    #[test]
    fn forwarded_users_are_read_from_the_configured_headers() {
        let config = FrontProxyConfig::from_data(&data()).unwrap().unwrap();
        let mut headers = HeaderMap::new();
        assert_eq!(config.forwarded_user(&headers), None);
        headers.insert("x-remote-user", HeaderValue::from_static("alice"));
        headers.append("x-remote-group", HeaderValue::from_static("team-a"));
        headers.append(
            "x-remote-group",
            HeaderValue::from_static("system:authenticated"),
        );
        headers.insert(
            "x-remote-extra-authentication.kubernetes.io%2fpod-name",
            HeaderValue::from_static("p"),
        );
        // Not one of the configured headers.
        headers.insert("x-forwarded-user", HeaderValue::from_static("root"));
        let user = config.forwarded_user(&headers).unwrap();
        assert_eq!(user.name, "alice");
        assert_eq!(user.groups, ["team-a", "system:authenticated"]);
        assert_eq!(
            user.extra["authentication.kubernetes.io/pod-name"],
            vec!["p".to_owned()]
        );
    }
}
