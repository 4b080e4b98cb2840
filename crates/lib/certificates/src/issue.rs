//! Keys and certificates: reading a stored CA into something that can sign, creating CAs,
//! and issuing serving certificates. ECDSA P-256 throughout, like OLM v0.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256,
};
use rustls_pki_types::CertificateDer;

use crate::x509::{Cert, offset_date_time, parse_single_pem, whole_seconds};
use crate::{CaReason, Error};

/// How far back notBefore is set, so a client whose clock is a little behind still accepts
/// a certificate issued a moment ago.
pub(crate) const CLOCK_SKEW: Duration = Duration::from_secs(60);

/// The longest common name X.509 allows (ub-common-name); longer names go only in SANs.
const MAX_COMMON_NAME: usize = 64;

/// A CA that can sign: its certificate, its key, and the exact bytes they are stored as
/// (kept so that an unchanged CA is written back byte for byte).
pub(crate) struct Ca {
    pub cert: Cert,
    pub cert_pem: Vec<u8>,
    pub key_pem: Vec<u8>,
    issuer: Issuer<'static, KeyPair>,
}

/// A freshly issued serving certificate.
pub(crate) struct Issued {
    pub cert: Cert,
    pub cert_pem: Vec<u8>,
    pub key_pem: Vec<u8>,
}

impl Ca {
    /// Reads the CA stored under `cert_key` / `key_key`. `Err(Missing)` when neither is
    /// present; `Err(Invalid)` when it cannot sign (not a CA, unreadable, or the key is not
    /// the certificate's). Expiry is the caller's business.
    pub fn read(
        data: &BTreeMap<String, Vec<u8>>,
        cert_key: &str,
        key_key: &str,
    ) -> Result<Ca, CaReason> {
        let (cert_pem, key_pem) = match (data.get(cert_key), data.get(key_key)) {
            (None, None) => return Err(CaReason::Missing),
            (Some(_), None) => return Err(CaReason::Invalid(format!("{key_key} is missing"))),
            (None, Some(_)) => return Err(CaReason::Invalid(format!("{cert_key} is missing"))),
            (Some(c), Some(k)) => (c, k),
        };
        let invalid = |why: String| CaReason::Invalid(why);
        let cert = parse_single_pem(cert_pem).map_err(|e| invalid(format!("{cert_key} {e}")))?;
        if !cert.is_ca {
            return Err(invalid(format!("{cert_key} is not a CA certificate")));
        }
        let key = read_key(key_pem).map_err(|e| invalid(format!("{key_key} {e}")))?;
        if key.public_key_raw() != cert.public_key.as_slice() {
            return Err(invalid(format!("{key_key} does not match {cert_key}")));
        }
        let issuer = Issuer::from_ca_cert_der(&CertificateDer::from(cert.der.as_slice()), key)
            .map_err(|e| invalid(format!("{cert_key} cannot sign ({e})")))?;
        Ok(Ca {
            cert,
            cert_pem: cert_pem.clone(),
            key_pem: key_pem.clone(),
            issuer,
        })
    }

    /// Creates a CA valid from `now` (minus [`CLOCK_SKEW`]) for `validity`. Its common name
    /// carries its creation time, like the API server's self-signed CAs, so that the CAs of
    /// one trust bundle can be told apart by name in logs and by TLS clients building paths.
    pub fn create(now: SystemTime, validity: Duration) -> Result<Ca, Error> {
        let generate = |source| Error::Generate {
            what: "the webhook CA".to_owned(),
            source,
        };
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(generate)?;
        let mut params = CertificateParams::default();
        let created = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::OrganizationName, "rukpak");
        dn.push(DnType::CommonName, format!("rukpak-webhook-ca@{created}"));
        params.distinguished_name = dn;
        // pathLen 0: this CA signs serving certificates only, never another CA.
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params.not_before = not_before(now)?;
        params.not_after = offset_date_time(
            now.checked_add(validity)
                .ok_or(Error::Time { what: "notAfter" })?,
            "notAfter",
        )?;
        let cert = params.self_signed(&key).map_err(generate)?;
        let mut data = BTreeMap::new();
        data.insert("crt".to_owned(), cert.pem().into_bytes());
        data.insert("key".to_owned(), key.serialize_pem().into_bytes());
        Ca::read(&data, "crt", "key").map_err(|why| Error::Reread {
            what: "webhook CA".to_owned(),
            detail: why.to_string(),
        })
    }

    /// Signs a serving certificate for `names` (already deduplicated, first one the common
    /// name) that expires at `not_after` (see [`serving_not_after`]).
    pub fn issue(
        &self,
        secret: &str,
        names: &[String],
        now: SystemTime,
        not_after: SystemTime,
    ) -> Result<Issued, Error> {
        let what = || format!("the serving certificate for Secret {secret}");
        let generate = |source| Error::Generate {
            what: what(),
            source,
        };
        let mut params = CertificateParams::new(names.to_vec()).map_err(generate)?;
        let mut dn = DistinguishedName::new();
        if let Some(first) = names.first().filter(|n| n.len() <= MAX_COMMON_NAME) {
            dn.push(DnType::CommonName, first.as_str());
        }
        params.distinguished_name = dn;
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        // Lets clients pick the signing CA by key identifier among same-named CAs.
        params.use_authority_key_identifier_extension = true;
        params.not_before = not_before(now)?;
        params.not_after = offset_date_time(not_after, "notAfter")?;
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(generate)?;
        let cert = params.signed_by(&key, &self.issuer).map_err(generate)?;
        let cert_pem = cert.pem().into_bytes();
        let parsed = parse_single_pem(&cert_pem).map_err(|detail| Error::Reread {
            what: what(),
            detail,
        })?;
        Ok(Issued {
            cert: parsed,
            cert_pem,
            key_pem: key.serialize_pem().into_bytes(),
        })
    }
}

/// When a serving certificate issued at `now` by `ca` expires: after `validity`, but never
/// after its CA, because a client checking the chain would reject it from then on anyway.
pub(crate) fn serving_not_after(
    now: SystemTime,
    validity: Duration,
    ca: &Cert,
) -> Result<SystemTime, Error> {
    let full = now
        .checked_add(validity)
        .ok_or(Error::Time { what: "notAfter" })?;
    Ok(whole_seconds(full).min(ca.not_after))
}

/// Reads a PEM private key (PKCS#8, as written by this crate).
pub(crate) fn read_key(pem: &[u8]) -> Result<KeyPair, String> {
    let text = std::str::from_utf8(pem).map_err(|_| "is not PEM text".to_owned())?;
    KeyPair::from_pem(text).map_err(|e| format!("is not a usable PKCS#8 PEM key ({e})"))
}

fn not_before(now: SystemTime) -> Result<time::OffsetDateTime, Error> {
    let t = now
        .checked_sub(CLOCK_SKEW)
        .ok_or(Error::Time { what: "notBefore" })?;
    offset_date_time(t, "notBefore")
}
