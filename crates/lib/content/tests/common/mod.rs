//! Fixtures of the content tests: loopback servers with optional TLS, plus the shared
//! servers and archives of `testkit::servers` (crane registry, git daemon, tars).
// Not every test binary uses every fixture; fixtures fail loudly, which is their job.
#![allow(
    dead_code,
    unused_imports,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::net::SocketAddr;
use std::sync::Arc;

pub use testkit::servers::*;

/// A self-signed certificate for 127.0.0.1 and localhost: (cert PEM, rustls server
/// config).
pub fn tls_server_config() -> (String, Arc<rustls::ServerConfig>) {
    let certified =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .unwrap();
    let cert_pem = certified.cert.pem();
    let cert_der = certified.cert.der().clone();
    let key_der = rustls_pki_types::PrivateKeyDer::Pkcs8(
        rustls_pki_types::PrivatePkcs8KeyDer::from(certified.signing_key.serialize_der()),
    );
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert_der], key_der)
        .unwrap();
    (cert_pem, Arc::new(config))
}

/// A TLS listener for axum: accepts TCP, then completes the handshake (failed
/// handshakes, e.g. clients that reject the certificate, are skipped).
pub struct TlsListener {
    tcp: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((stream, addr)) = self.tcp.accept().await else {
                continue;
            };
            if let Ok(tls) = self.acceptor.accept(stream).await {
                return (tls, addr);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

/// Serves `router` on a loopback port, over TLS when `tls` is given; returns the
/// address. The server runs until the test's runtime ends.
pub async fn serve(router: axum::Router, tls: Option<Arc<rustls::ServerConfig>>) -> SocketAddr {
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    match tls {
        Some(config) => {
            let listener = TlsListener {
                tcp,
                acceptor: tokio_rustls::TlsAcceptor::from(config),
            };
            tokio::spawn(async move { axum::serve(listener, router).await });
        }
        None => {
            tokio::spawn(async move { axum::serve(tcp, router).await });
        }
    }
    addr
}
