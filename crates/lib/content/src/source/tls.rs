//! TLS settings shared by the network sources: extra CA certificates (PEM) appended to
//! the built-in roots, or no verification at all.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::{DigitallySignedStruct, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

/// How to verify a server's certificate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// PEM certificates (one or more) trusted in addition to the built-in roots
    /// (Mozilla's, from `webpki-roots`).
    pub certificate_data: Option<Vec<u8>>,
    /// Accept any certificate. For tests and throwaway registries only.
    pub insecure_skip_verify: bool,
}

/// Certificate data that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsError {
    /// Not PEM, or no certificate in it.
    #[error("failed to read certificate data: {reason}")]
    InvalidCertificateData {
        /// What is wrong.
        reason: String,
    },
    /// rustls refused the configuration.
    #[error("failed to configure TLS: {reason}")]
    Config {
        /// What rustls said.
        reason: String,
    },
}

impl TlsOptions {
    /// The extra certificates, DER encoded; an error when the data holds none.
    pub fn certificates(&self) -> Result<Vec<CertificateDer<'static>>, TlsError> {
        let Some(pem) = &self.certificate_data else {
            return Ok(Vec::new());
        };
        let certs = CertificateDer::pem_slice_iter(pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|err| TlsError::InvalidCertificateData {
                reason: err.to_string(),
            })?;
        if certs.is_empty() {
            return Err(TlsError::InvalidCertificateData {
                reason: "no PEM certificate found".to_owned(),
            });
        }
        Ok(certs)
    }

    /// A rustls client configuration with the ring provider (the workspace's only one).
    pub fn rustls_config(&self) -> Result<rustls::ClientConfig, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config_err = |err: rustls::Error| TlsError::Config {
            reason: err.to_string(),
        };
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(config_err)?;
        if self.insecure_skip_verify {
            return Ok(builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate {
                    algorithms: provider.signature_verification_algorithms,
                }))
                .with_no_client_auth());
        }
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        for cert in self.certificates()? {
            roots.add(cert).map_err(config_err)?;
        }
        Ok(builder.with_root_certificates(roots).with_no_client_auth())
    }
}

/// Accepts every certificate but still checks handshake signatures, so the connection
/// is encrypted to whoever holds the presented key (`insecureSkipTLSVerify`).
#[derive(Debug)]
struct AcceptAnyCertificate {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificate_data_without_a_certificate_is_refused() {
        let tls = TlsOptions {
            certificate_data: Some(b"not a certificate".to_vec()),
            insecure_skip_verify: false,
        };
        assert_eq!(
            tls.certificates().unwrap_err().to_string(),
            "failed to read certificate data: no PEM certificate found"
        );
        assert!(tls.rustls_config().is_err());
    }

    #[test]
    fn a_pem_bundle_yields_every_certificate() {
        let a = rcgen::generate_simple_self_signed(vec!["a.test".to_owned()]).unwrap();
        let b = rcgen::generate_simple_self_signed(vec!["b.test".to_owned()]).unwrap();
        let pem = format!("{}{}", a.cert.pem(), b.cert.pem());
        let tls = TlsOptions {
            certificate_data: Some(pem.into_bytes()),
            insecure_skip_verify: false,
        };
        assert_eq!(tls.certificates().unwrap().len(), 2);
        tls.rustls_config().unwrap();
    }
}
