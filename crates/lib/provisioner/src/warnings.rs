//! API server warnings (the `Warning` response header: deprecated APIs, ignored fields,
//! policy warnings) returned while applying, collected so the BundleDeployment can
//! report them, as the RukPak epic asks.
//!
//! kube's client runs requests in a buffer task, so warnings cannot be tied to a caller
//! through task-local state; instead each apply gets its own thin client that sends through
//! a shared one (connections, TLS and credentials are set up once per identity, see
//! [`SharedClients`]) and writes the warnings of its responses into a sink owned by that
//! apply.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use kube::Client;

/// Warnings collected by one client.
#[derive(Debug, Clone, Default)]
pub struct Warnings(Arc<Mutex<Vec<String>>>);

impl Warnings {
    /// The distinct warnings seen so far, in arrival order.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn push(&self, warning: String) {
        let mut all = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if !all.contains(&warning) {
            all.push(warning);
        }
    }
}

/// A client that sends every request through `shared` and records every warning the API
/// server returns in the returned sink. Cheap: no connection or TLS set-up, one buffer task.
pub fn recording_warnings(shared: &Client) -> (Client, Warnings) {
    let warnings = Warnings::default();
    let sink = warnings.clone();
    let base = shared.clone();
    let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
        let base = base.clone();
        let sink = sink.clone();
        async move {
            let response = base.send(request).await?;
            for value in response.headers().get_all(http::header::WARNING) {
                if let Ok(text) = value.to_str() {
                    sink.push(warning_text(text));
                }
            }
            Ok::<_, kube::Error>(response)
        }
    });
    let client = Client::new(service, shared.default_namespace().to_owned());
    (client, warnings)
}

/// The most identities whose clients are kept; past it the cache starts over, so a cluster
/// with very many tenants' ServiceAccounts costs at most this many connection pools.
const MAX_SHARED_CLIENTS: usize = 256;

/// One client per identity a provisioner applies as, built on first use and shared by every
/// reconcile after it (before, each reconcile built a client, with a new connection pool and
/// TLS handshake). Keyed by the identity's description.
#[derive(Default)]
pub struct SharedClients(Mutex<HashMap<String, Client>>);

impl SharedClients {
    /// The client of `identity`, built from `config` the first time.
    pub fn get_or_build(
        &self,
        identity: &str,
        config: impl FnOnce() -> kube::Config,
    ) -> Result<Client, kube::Error> {
        let mut clients = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(client) = clients.get(identity) {
            return Ok(client.clone());
        }
        let client = Client::try_from(config())?;
        if clients.len() >= MAX_SHARED_CLIENTS {
            clients.clear();
        }
        clients.insert(identity.to_owned(), client.clone());
        Ok(client)
    }

    /// How many identities have a client.
    pub fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// Whether no identity has a client yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The message of a `Warning` header value: `299 - "text"` becomes `text`.
fn warning_text(header: &str) -> String {
    let mut parts = header.splitn(3, ' ');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(code), Some(_agent), Some(text))
            if code.len() == 3 && code.chars().all(|c| c.is_ascii_digit()) =>
        {
            text.trim().trim_matches('"').replace("\\\"", "\"")
        }
        _ => header.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warning_headers_are_reduced_to_their_text() {
        assert_eq!(
            warning_text(r#"299 - "widgets.example.com/v1 Widget is deprecated""#),
            "widgets.example.com/v1 Widget is deprecated"
        );
        assert_eq!(warning_text("just text"), "just text");
    }

    /// A client whose "API server" answers every request with a `Warning` header naming
    /// the request's path.
    fn warning_server() -> Client {
        let service = tower::service_fn(|request: http::Request<kube::client::Body>| async move {
            let warning = format!("299 - \"seen {}\"", request.uri().path());
            let response = http::Response::builder()
                .header(http::header::WARNING, warning)
                .body(kube::client::Body::from(b"{}".to_vec()))
                .map_err(|err| kube::Error::Service(err.into()))?;
            Ok::<_, kube::Error>(response)
        });
        Client::new(service, "default")
    }

    fn get(path: &str) -> http::Request<kube::client::Body> {
        http::Request::get(path)
            .body(kube::client::Body::empty())
            .unwrap()
    }

    #[tokio::test]
    async fn each_apply_sees_only_the_warnings_of_its_own_requests_over_one_shared_client() {
        let shared = warning_server();
        let (first, first_warnings) = recording_warnings(&shared);
        let (second, second_warnings) = recording_warnings(&shared);
        first.send(get("/a")).await.unwrap();
        second.send(get("/b")).await.unwrap();
        first.send(get("/c")).await.unwrap();
        assert_eq!(first_warnings.take(), ["seen /a", "seen /c"]);
        assert_eq!(second_warnings.take(), ["seen /b"]);
        assert_eq!(first.default_namespace(), "default");
    }

    #[test]
    fn a_client_is_built_once_per_identity() {
        let clients = SharedClients::default();
        let config = || kube::Config::new("https://127.0.0.1:6443".parse().unwrap());
        let mut built = 0;
        // Building needs a runtime for the client's buffer task.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            for identity in [
                "ServiceAccount a/x",
                "the provisioner",
                "ServiceAccount a/x",
            ] {
                clients
                    .get_or_build(identity, || {
                        built += 1;
                        config()
                    })
                    .unwrap();
            }
        });
        assert_eq!(built, 2);
        assert_eq!(clients.len(), 2);
    }

    #[test]
    fn repeated_warnings_are_kept_once() {
        let warnings = Warnings::default();
        warnings.push("a".into());
        warnings.push("a".into());
        warnings.push("b".into());
        assert_eq!(warnings.take(), ["a", "b"]);
        assert!(warnings.take().is_empty());
    }
}
