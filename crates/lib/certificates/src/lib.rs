//! The built-in certificate provider: a private CA per BundleDeployment signs the serving
//! certificates of its webhook Services, and the CA's PEM (the *trust bundle*) is injected
//! as `caBundle` into webhook configurations, CRD conversion settings and APIServices.
//!
//! Pure decision logic plus crypto: no Kubernetes client, no I/O. The caller reads the CA
//! Secret, the serving Secrets and the live `caBundle`s, calls [`decide`], writes back what
//! differs, records the [`Event`]s and requeues at [`Decision::next_check`].
//!
//! # Stored data
//!
//! CA Secret: [`CA_CERT_KEY`] and [`CA_KEY_KEY`] (the signing CA, PKCS#8 key),
//! [`NEXT_CA_CERT_KEY`] and [`NEXT_CA_KEY_KEY`] (its successor, only during a rotation),
//! and [`CA_BUNDLE_KEY`] (every CA still trusted, oldest first). Serving Secret
//! (`kubernetes.io/tls`): [`TLS_CERT_KEY`], [`TLS_KEY_KEY`] and [`SERVING_CA_KEY`] (the
//! trust bundle, for clients in the pod).
//!
//! # Rules of [`decide`]
//!
//! The goal: at no moment may a live `caBundle` fail to verify the certificate being
//! served, even though the caller writes the bundle and the Secrets at different times and
//! servers reload certificates late.
//!
//! 1. **No usable CA.** A CA that is missing, unreadable, not a CA, paired with a key that
//!    is not its own, or expired is replaced: by the stored successor if there is a usable
//!    one ([`Event::CaPromoted`]; it is already in the bundle), else by a new CA valid for
//!    [`Policy::validity`] (basicConstraints CA with pathLen 0, keyCertSign + cRLSign,
//!    ECDSA P-256, [`Event::CaCreated`] with a [`CaReason`]).
//! 2. **Renewal.** When the current CA has less than [`Policy::renew_before`] left and no
//!    successor exists, a successor with full validity is created and added to the trust
//!    bundle ([`Event::CaRenewalStarted`]). Serving certificates stay with the current CA:
//!    nobody trusts the successor yet.
//! 3. **Promotion.** The successor becomes the current CA ([`Event::CaPromoted`]) once every
//!    entry of `live_bundles` is present and contains it (compared by DER), or at once when
//!    `live_bundles` is empty. Until then nothing changes. The demoted CA stays in the trust
//!    bundle until it expires, so certificates it signed keep verifying while servers
//!    reload.
//! 4. **Trust bundle.** Current + successor + the stored bundle's earlier CAs, deduplicated,
//!    oldest first, without expired ones ([`Event::CaExpiredDropped`] once per call).
//! 5. **Serving certificates.** An existing one is kept byte for byte unless it is missing
//!    ([`IssueReason::Missing`]), unreadable, paired with a foreign key or not yet valid
//!    ([`IssueReason::Invalid`]), for other names than requested, compared as sets
//!    ([`IssueReason::NamesChanged`]), not signed by the current CA by signature
//!    ([`IssueReason::SignerChanged`]), or within `renew_before` of expiry while a new one
//!    would expire later ([`IssueReason::ExpiringSoon`]; one that already ends with its CA
//!    is renewed by the CA rotation instead, so calls do not reissue in a loop). A new one
//!    is a serverAuth leaf for the names, common name the first, valid from a minute ago
//!    (clock skew) until `validity` from now but never after its CA. Its Secret's
//!    [`SERVING_CA_KEY`] always holds the trust bundle, so a bundle change rewrites only
//!    that key. [`Event::ServingIssued`].
//! 6. **Next check.** The earliest of: the current CA's renewal time, each serving
//!    certificate's renewal time, and the expiry of any CA in the bundle; never before
//!    `now`. `None` while a successor waits for live bundles: only a change to those
//!    objects (or the caller's resync) can move things on.
//! 7. **Errors.** Only for input no caller should send (see [`Error`]) and crypto library
//!    failures. Malformed stored data is replaced as if missing, and the event says why.
//!
//! With `renew_before` shorter than the time the caller needs to inject a new bundle
//! everywhere, rule 1 may still have to replace an expired CA: that is the one case where
//! clients can see a certificate they do not trust, and its event is a warning.

mod decide;
mod error;
mod event;
mod issue;
mod policy;
mod verify;
mod x509;

pub use decide::{Decision, ServingRequest, decide};
pub use error::Error;
pub use event::{CaReason, Event, IssueReason};
pub use policy::Policy;
pub use verify::verify;

/// CA Secret key of the signing CA's certificate (PEM).
pub const CA_CERT_KEY: &str = "ca.crt";
/// CA Secret key of the signing CA's private key (PKCS#8 PEM).
pub const CA_KEY_KEY: &str = "ca.key";
/// CA Secret key of the successor CA's certificate, present only during a rotation.
pub const NEXT_CA_CERT_KEY: &str = "next-ca.crt";
/// CA Secret key of the successor CA's private key, present only during a rotation.
pub const NEXT_CA_KEY_KEY: &str = "next-ca.key";
/// CA Secret key of the trust bundle: every CA still trusted, oldest first.
pub const CA_BUNDLE_KEY: &str = "ca-bundle.crt";
/// Serving Secret key of the leaf certificate (the `kubernetes.io/tls` convention).
pub const TLS_CERT_KEY: &str = "tls.crt";
/// Serving Secret key of the leaf's private key.
pub const TLS_KEY_KEY: &str = "tls.key";
/// Serving Secret key of the trust bundle, for clients running in the pod.
pub const SERVING_CA_KEY: &str = "ca.crt";
