//! Verifying a served certificate against a trust bundle the way a TLS client does, for
//! this crate's tests and for other crates' tests.

use std::time::{SystemTime, UNIX_EPOCH};

use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use webpki::{EndEntityCert, KeyUsage, VerifiedPath};

use crate::x509::{parse_bundle, parse_single_pem};

/// Checks that `leaf_pem` verifies for server authentication as `dns_name` at `now`,
/// trusting exactly the CAs of `trust_bundle_pem`, with rustls-webpki (the verifier rustls
/// clients use). Also requires the CA that anchors the chain to be within its validity at
/// `now`: webpki does not look at trust anchors' dates, but Go clients such as the API
/// server calling a webhook do.
pub fn verify(
    trust_bundle_pem: &str,
    leaf_pem: &str,
    dns_name: &str,
    now: SystemTime,
) -> Result<(), String> {
    let cas = parse_bundle(trust_bundle_pem.as_bytes());
    if cas.is_empty() {
        return Err("the trust bundle holds no certificate".to_owned());
    }
    let ca_ders: Vec<CertificateDer<'_>> = cas
        .iter()
        .map(|c| CertificateDer::from(c.der.as_slice()))
        .collect();
    let anchors = ca_ders
        .iter()
        .map(|der| webpki::anchor_from_trusted_cert(der).map(|a| a.to_owned()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("the trust bundle holds an unusable CA: {e}"))?;

    let leaf = parse_single_pem(leaf_pem.as_bytes()).map_err(|e| format!("the leaf {e}"))?;
    let leaf_der = CertificateDer::from(leaf.der.as_slice());
    let end_entity =
        EndEntityCert::try_from(&leaf_der).map_err(|e| format!("the leaf is unusable: {e}"))?;
    let since_epoch = now
        .duration_since(UNIX_EPOCH)
        .map_err(|_| "now is before 1970")?;
    let time = UnixTime::since_unix_epoch(since_epoch);

    let anchor_in_validity = |path: &VerifiedPath<'_>| {
        let anchor = path.anchor();
        let valid = anchors.iter().zip(&cas).any(|(a, ca)| {
            a.subject == anchor.subject
                && a.subject_public_key_info == anchor.subject_public_key_info
                && ca.not_before <= now
                && now < ca.not_after
        });
        if valid {
            Ok(())
        } else {
            // Reported as the leaf's error, the nearest webpki has; path building tries
            // the other anchors first.
            Err(webpki::Error::CertExpired {
                time,
                not_after: time,
            })
        }
    };
    end_entity
        .verify_for_usage(
            webpki::ALL_VERIFICATION_ALGS,
            &anchors,
            &[],
            time,
            KeyUsage::server_auth(),
            None,
            Some(&anchor_in_validity),
        )
        .map_err(|e| format!("the leaf does not chain to a valid CA of the bundle: {e}"))?;

    let name = ServerName::try_from(dns_name).map_err(|e| format!("bad name {dns_name}: {e}"))?;
    end_entity
        .verify_is_valid_for_subject_name(&name)
        .map_err(|e| format!("the leaf is not valid for {dns_name}: {e}"))
}
