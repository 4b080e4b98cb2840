//! The webhook's TLS: the serving certificate is read from files the installer mounts from a
//! Secret, and read again whenever those files change, so a rotated certificate is served
//! from the next connection on without a restart.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// A certificate that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The files are missing, unreadable or not PEM.
    #[error("cannot read the serving certificate in {dir}: {reason}")]
    Read {
        /// The certificate directory.
        dir: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// rustls refused the server configuration (the crypto provider lacks the default
    /// protocol versions).
    #[error("cannot configure TLS: {0}")]
    Config(#[from] rustls::Error),
}

/// The certificate in `<dir>/tls.crt` and `<dir>/tls.key`, reloaded when `tls.crt` changes.
pub struct ReloadingCertificate {
    dir: PathBuf,
    current: Mutex<(SystemTime, Arc<CertifiedKey>)>,
}

impl fmt::Debug for ReloadingCertificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReloadingCertificate")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl ReloadingCertificate {
    /// Reads the certificate now: an operator without one cannot serve, so it fails to start.
    pub fn load(dir: &Path) -> Result<Arc<Self>, Error> {
        let (modified, key) = read(dir)?;
        Ok(Arc::new(Self {
            dir: dir.to_owned(),
            current: Mutex::new((modified, key)),
        }))
    }

    fn get(&self) -> Option<Arc<CertifiedKey>> {
        let mut current = self.current.lock().ok()?;
        let modified = modified(&self.dir);
        if modified.is_some_and(|m| m != current.0) {
            // A Secret update swaps the mounted files at once; a half-written pair fails to
            // parse and the previous certificate is served until the next connection.
            match read(&self.dir) {
                Ok(fresh) => {
                    tracing::info!("serving certificate reloaded");
                    *current = fresh;
                }
                Err(err) => tracing::warn!("{err}; serving the previous certificate"),
            }
        }
        Some(current.1.clone())
    }
}

impl ResolvesServerCert for ReloadingCertificate {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.get()
    }
}

fn modified(dir: &Path) -> Option<SystemTime> {
    // The kubelet's atomic writer swaps a `..data` symlink; follow it.
    std::fs::metadata(dir.join("tls.crt"))
        .and_then(|m| m.modified())
        .ok()
}

fn read(dir: &Path) -> Result<(SystemTime, Arc<CertifiedKey>), Error> {
    let fail = |reason: String| Error::Read {
        dir: dir.to_owned(),
        reason,
    };
    let modified = modified(dir).unwrap_or(SystemTime::UNIX_EPOCH);
    let chain = CertificateDer::pem_file_iter(dir.join("tls.crt"))
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|err| fail(format!("tls.crt: {err}")))?;
    let key = PrivateKeyDer::from_pem_file(dir.join("tls.key"))
        .map_err(|err| fail(format!("tls.key: {err}")))?;
    let signing = rustls::crypto::ring::sign::any_supported_type(&key)
        .map_err(|err| fail(format!("tls.key: {err}")))?;
    Ok((modified, Arc::new(CertifiedKey::new(chain, signing))))
}

/// A TCP listener whose connections are TLS, handshaken before axum sees them.
pub struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
}

impl TlsListener {
    /// Serves `certificate` on `tcp`.
    pub fn new(tcp: TcpListener, certificate: Arc<ReloadingCertificate>) -> Result<Self, Error> {
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_cert_resolver(certificate);
        Ok(Self {
            tcp,
            acceptor: TlsAcceptor::from(Arc::new(config)),
        })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((stream, addr)) = self.tcp.accept().await else {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            };
            // A client that never finishes its handshake must not hold up the others.
            match tokio::time::timeout(Duration::from_secs(5), self.acceptor.accept(stream)).await {
                Ok(Ok(tls)) => return (tls, addr),
                Ok(Err(err)) => tracing::debug!(%addr, "TLS handshake failed: {err}"),
                Err(_) => tracing::debug!(%addr, "TLS handshake timed out"),
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}
