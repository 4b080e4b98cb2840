//! Reading certificates: PEM blocks, the X.509 fields the rules look at, and the time
//! conversions certificates need. Everything here treats bad input as a described `Err`,
//! never a panic, because the input comes from Secrets anyone with write access can edit.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use time::OffsetDateTime;
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::Error;

/// The PEM tag of a certificate.
const CERTIFICATE: &str = "CERTIFICATE";

/// The fields of a certificate the rules look at, next to its DER.
#[derive(Clone, Debug)]
pub(crate) struct Cert {
    pub der: Vec<u8>,
    pub not_before: SystemTime,
    pub not_after: SystemTime,
    pub is_ca: bool,
    /// The subjectPublicKey bit string: what a private key's public half must equal.
    pub public_key: Vec<u8>,
    /// SANs, normalised by [`normalise_name`] so they compare with requested names as sets.
    pub names: BTreeSet<String>,
}

impl Cert {
    /// How long until the certificate expires (zero once it has).
    pub fn remaining(&self, now: SystemTime) -> Duration {
        self.not_after.duration_since(now).unwrap_or_default()
    }

    /// Whether the certificate has expired at `now` (notAfter is inclusive in X.509, but a
    /// certificate with no time left is of no use to anyone).
    pub fn expired(&self, now: SystemTime) -> bool {
        self.not_after <= now
    }

    /// The certificate as one PEM block.
    pub fn pem(&self) -> String {
        encode_pem(&self.der)
    }
}

/// Parses one DER certificate. Errors are predicates ("is not …") so callers can prefix
/// the Secret key they read.
pub(crate) fn parse_der(der: &[u8]) -> Result<Cert, String> {
    let (rest, x509) =
        X509Certificate::from_der(der).map_err(|e| format!("is not an X.509 certificate ({e})"))?;
    if !rest.is_empty() {
        return Err("has trailing bytes after the certificate".to_owned());
    }
    let validity = x509.validity();
    let names = match x509.subject_alternative_name() {
        Ok(Some(ext)) => ext.value.general_names.iter().map(general_name).collect(),
        Ok(None) => BTreeSet::new(),
        Err(e) => return Err(format!("has an unreadable subjectAltName ({e})")),
    };
    Ok(Cert {
        der: der.to_vec(),
        not_before: system_time(validity.not_before.timestamp())?,
        not_after: system_time(validity.not_after.timestamp())?,
        is_ca: x509.is_ca(),
        public_key: x509.public_key().subject_public_key.data.to_vec(),
        names,
    })
}

/// Parses a PEM text that must hold exactly one certificate (`ca.crt`, `tls.crt`).
pub(crate) fn parse_single_pem(bytes: &[u8]) -> Result<Cert, String> {
    let blocks = pem::parse_many(bytes).map_err(|e| format!("is not PEM ({e})"))?;
    let mut certs = blocks.iter().filter(|b| b.tag() == CERTIFICATE);
    match (certs.next(), certs.next()) {
        (Some(only), None) => parse_der(only.contents()),
        (None, _) => Err("holds no PEM certificate".to_owned()),
        (Some(_), Some(_)) => Err("holds more than one certificate".to_owned()),
    }
}

/// Parses every certificate of a PEM bundle, skipping blocks that are not certificates.
/// An unreadable bundle yields nothing: the caller rebuilds it from the CAs it knows.
pub(crate) fn parse_bundle(bytes: &[u8]) -> Vec<Cert> {
    pem::parse_many(bytes)
        .unwrap_or_default()
        .iter()
        .filter(|b| b.tag() == CERTIFICATE)
        .filter_map(|b| parse_der(b.contents()).ok())
        .collect()
}

/// Whether a PEM bundle holds the certificate with this DER, compared byte for byte after
/// decoding so that line endings and wrapping do not matter.
pub(crate) fn bundle_contains(bundle_pem: &str, der: &[u8]) -> bool {
    pem::parse_many(bundle_pem)
        .map(|blocks| {
            blocks
                .iter()
                .any(|b| b.tag() == CERTIFICATE && b.contents() == der)
        })
        .unwrap_or(false)
}

/// Encodes one certificate as PEM with `\n` line endings on every platform, so the same
/// certificates always give the same bytes (no rewrite of unchanged Secrets).
pub(crate) fn encode_pem(der: &[u8]) -> String {
    let config = pem::EncodeConfig::new().set_line_ending(pem::LineEnding::LF);
    pem::encode_config(&pem::Pem::new(CERTIFICATE, der), config)
}

/// Whether `leaf` was signed by `ca`: the issuer name must be the CA's subject (TLS clients
/// build paths by name) and the signature must verify with the CA's key (names alone say
/// nothing: every generation of CA could carry the same one).
pub(crate) fn is_signed_by(leaf: &Cert, ca: &Cert) -> bool {
    let (Ok((_, leaf)), Ok((_, ca))) = (
        X509Certificate::from_der(&leaf.der),
        X509Certificate::from_der(&ca.der),
    ) else {
        return false;
    };
    leaf.issuer().as_raw() == ca.subject().as_raw()
        && leaf.verify_signature(Some(ca.public_key())).is_ok()
}

/// The form names are compared in: DNS names are case-insensitive, and an IP address has
/// several spellings.
pub(crate) fn normalise_name(name: &str) -> String {
    match name.parse::<IpAddr>() {
        Ok(ip) => ip.to_string(),
        Err(_) => name.to_ascii_lowercase(),
    }
}

fn general_name(name: &GeneralName<'_>) -> String {
    match name {
        GeneralName::DNSName(dns) => normalise_name(dns),
        GeneralName::IPAddress(bytes) => match <[u8; 4]>::try_from(*bytes) {
            Ok(v4) => IpAddr::from(v4).to_string(),
            Err(_) => match <[u8; 16]>::try_from(*bytes) {
                Ok(v6) => IpAddr::from(v6).to_string(),
                Err(_) => format!("invalid-ip:{bytes:02x?}"),
            },
        },
        // Kept (not dropped) so a certificate with extra kinds of names never equals a
        // request, which only asks for DNS names and IPs.
        other => format!("other:{other:?}"),
    }
}

/// A certificate time (seconds since the epoch, possibly negative) as a `SystemTime`.
fn system_time(secs: i64) -> Result<SystemTime, String> {
    let offset = Duration::from_secs(secs.unsigned_abs());
    let time = if secs >= 0 {
        UNIX_EPOCH.checked_add(offset)
    } else {
        UNIX_EPOCH.checked_sub(offset)
    };
    time.ok_or_else(|| format!("has a validity time out of range ({secs})"))
}

/// A `SystemTime` as the whole-second time rcgen writes (certificates have no fractions).
pub(crate) fn offset_date_time(t: SystemTime, what: &'static str) -> Result<OffsetDateTime, Error> {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map_err(|_| Error::Time { what })?
        .as_secs();
    let secs = i64::try_from(secs).map_err(|_| Error::Time { what })?;
    OffsetDateTime::from_unix_timestamp(secs).map_err(|_| Error::Time { what })
}

/// `t` rounded down to a whole second, as certificates store it.
pub(crate) fn whole_seconds(t: SystemTime) -> SystemTime {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => UNIX_EPOCH + Duration::from_secs(d.as_secs()),
        Err(_) => t,
    }
}

/// RFC 3339 text of a time (UTC, whole seconds), for messages people read.
pub(crate) fn rfc3339(t: SystemTime) -> String {
    let secs = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).ok(),
        Err(_) => None,
    };
    match secs.and_then(|s| OffsetDateTime::from_unix_timestamp(s).ok()) {
        Some(t) => format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        ),
        None => format!("{t:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_formats_utc_whole_seconds() {
        let t = UNIX_EPOCH + Duration::from_millis(1_700_000_000_900);
        assert_eq!(rfc3339(t), "2023-11-14T22:13:20Z");
    }

    #[test]
    fn names_compare_case_insensitively_and_ips_canonically() {
        assert_eq!(normalise_name("Svc.NS.svc"), "svc.ns.svc");
        assert_eq!(normalise_name("::0001"), "::1");
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(parse_single_pem(b"not pem at all").is_err());
        assert!(
            parse_single_pem(b"-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n")
                .is_err()
        );
        assert!(
            parse_single_pem(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
                .is_err()
        );
        assert!(parse_bundle(b"\xff\xfe garbage").is_empty());
        assert!(!bundle_contains("garbage", b"x"));
    }
}
