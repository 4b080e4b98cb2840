//! Serving the routes over TLS: a certificate that can be swapped while serving, client
//! certificates checked against the API server's front-proxy CA (see
//! [`front_proxy`](crate::front_proxy)), one task per connection, and timeouts so a client
//! that stops reading or writing is cut off instead of holding memory and a connection slot.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use axum::{Extension, Router};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;
use tokio_io_timeout::TimeoutStream;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use crate::front_proxy::{FrontProxyTrust, Peer, allowed_front_proxy};

/// A TLS handshake must finish within this.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// A connection whose client takes nothing for this long is closed (a stalled reader).
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// A connection that sends nothing for this long is closed (idle keep-alive included).
const READ_TIMEOUT: Duration = Duration::from_secs(120);

/// A serving certificate that [`ServingCertificate::set`] replaces while serving: new
/// connections get the new one.
#[derive(Debug, Default)]
pub struct ServingCertificate(RwLock<Option<Arc<CertifiedKey>>>);

/// A certificate or key that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("cannot use the serving certificate: {0}")]
pub struct CertificateError(String);

impl ServingCertificate {
    /// Serves `chain_pem` (leaf first) with `key_pem` (PKCS#8, SEC1 or PKCS#1) from now on.
    pub fn set(&self, chain_pem: &[u8], key_pem: &[u8]) -> Result<(), CertificateError> {
        let chain = CertificateDer::pem_slice_iter(chain_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|err| CertificateError(format!("certificate: {err}")))?;
        if chain.is_empty() {
            return Err(CertificateError("no certificate in the PEM".to_owned()));
        }
        let key = PrivateKeyDer::from_pem_slice(key_pem)
            .map_err(|err| CertificateError(format!("key: {err}")))?;
        let signing = rustls::crypto::ring::sign::any_supported_type(&key)
            .map_err(|err| CertificateError(format!("key: {err}")))?;
        let mut current = self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *current = Some(Arc::new(CertifiedKey::new(chain, signing)));
        Ok(())
    }

    /// Whether a certificate has been set.
    pub fn is_set(&self) -> bool {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_some()
    }
}

impl ResolvesServerCert for ServingCertificate {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// Serves `router` over TLS on `listener` until `shutdown`, believing forwarded users only
/// from clients `front_proxy` trusts.
pub async fn serve(
    listener: TcpListener,
    certificate: Arc<ServingCertificate>,
    front_proxy: Arc<FrontProxyTrust>,
    router: Router,
    shutdown: CancellationToken,
) -> Result<(), rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    // Checked once here so that a connection's own configuration cannot fail.
    rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let tls = Arc::new(Tls {
        provider,
        certificate,
        front_proxy,
    });
    loop {
        let accepted = tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            accepted = listener.accept() => accepted,
        };
        let (tcp, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(err) => {
                // Out of file descriptors, usually: wait rather than spin.
                tracing::warn!("catalog API: failed to accept a connection: {err}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        tokio::spawn(connection(
            tcp,
            peer,
            tls.clone(),
            router.clone(),
            shutdown.clone(),
        ));
    }
}

/// What every connection's handshake needs.
struct Tls {
    provider: Arc<rustls::crypto::CryptoProvider>,
    certificate: Arc<ServingCertificate>,
    front_proxy: Arc<FrontProxyTrust>,
}

async fn connection(
    tcp: tokio::net::TcpStream,
    peer: SocketAddr,
    settings: Arc<Tls>,
    router: Router,
    shutdown: CancellationToken,
) {
    // The front-proxy trust in force when the connection opens decides for its lifetime.
    let trusted = settings.front_proxy.current();
    let Ok(builder) = rustls::ServerConfig::builder_with_provider(settings.provider.clone())
        .with_safe_default_protocol_versions()
    else {
        return;
    };
    let config = match &trusted {
        Some(trusted) => builder.with_client_cert_verifier(trusted.verifier.clone()),
        None => builder.with_no_client_auth(),
    }
    .with_cert_resolver(settings.certificate.clone());
    let acceptor = TlsAcceptor::from(Arc::new(config));
    // Handshakes run in each connection's own task: one slow client does not hold up the rest.
    let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(err)) => {
            tracing::debug!(%peer, "catalog API: TLS handshake failed: {err}");
            return;
        }
        Err(_) => {
            tracing::debug!(%peer, "catalog API: TLS handshake timed out");
            return;
        }
    };
    // A client certificate reaches here only if the verifier checked it against the
    // request-header CA; the common name must also be one the API server allows.
    let caller = match (&trusted, tls.get_ref().1.peer_certificates()) {
        (Some(trusted), Some([leaf, ..]))
            if allowed_front_proxy(leaf, &trusted.config.allowed_names) =>
        {
            Peer::FrontProxy(trusted.config.clone())
        }
        _ => Peer::Direct,
    };
    let router = router.layer(Extension(caller));
    let mut timed = TimeoutStream::new(tls);
    timed.set_write_timeout(Some(WRITE_TIMEOUT));
    timed.set_read_timeout(Some(READ_TIMEOUT));
    let io = TokioIo::new(Box::pin(timed) as Pin<Box<_>>);
    let service = TowerToHyperService::new(router);
    let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    let conn = builder.serve_connection(io, service);
    tokio::pin!(conn);
    tokio::select! {
        result = conn.as_mut() => {
            if let Err(err) = result {
                tracing::debug!(%peer, "catalog API: connection ended: {err}");
            }
        }
        () = shutdown.cancelled() => {}
    }
}
