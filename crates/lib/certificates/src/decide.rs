//! [`decide`]: rules 1–6 of the crate documentation applied to what the caller read.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::SystemTime;

use crate::issue::{Ca, read_key, serving_not_after};
use crate::x509::{
    Cert, bundle_contains, is_signed_by, normalise_name, parse_bundle, parse_single_pem,
};
use crate::{
    CA_BUNDLE_KEY, CA_CERT_KEY, CA_KEY_KEY, CaReason, Error, Event, IssueReason, NEXT_CA_CERT_KEY,
    NEXT_CA_KEY_KEY, Policy, SERVING_CA_KEY, TLS_CERT_KEY, TLS_KEY_KEY,
};

/// One serving certificate wanted: the Secret a webhook Service's pods mount.
pub struct ServingRequest<'a> {
    /// The serving Secret's name, used only in Event messages.
    pub secret_name: &'a str,
    /// The names clients dial, e.g. `svc`, `svc.ns`, `svc.ns.svc`,
    /// `svc.ns.svc.cluster.local`. The first one becomes the common name. Compared with an
    /// existing certificate as a set, case-insensitively.
    pub dns_names: Vec<String>,
    /// The live Secret's `data`, if the Secret exists.
    pub existing: Option<&'a BTreeMap<String, Vec<u8>>>,
}

/// What to store and inject. Maps equal to the input (byte for byte) mean "no write needed".
#[derive(Clone, PartialEq, Eq)]
pub struct Decision {
    /// The CA Secret's `data` (keys [`CA_CERT_KEY`] and friends). Keys this crate does not
    /// know are kept.
    pub ca_data: BTreeMap<String, Vec<u8>>,
    /// The PEM to inject as `caBundle` into webhook configurations, CRD conversion settings
    /// and APIServices: every CA a served certificate may be signed by, oldest first.
    pub trust_bundle: String,
    /// One serving Secret `data` per request, in request order.
    pub serving: Vec<BTreeMap<String, Vec<u8>>>,
    /// What changed, for Kubernetes Events.
    pub events: Vec<Event>,
    /// When the next step is due, never before `now`: requeue for then. `None` while a new
    /// CA waits for some live caBundle to hold it: only a write to those objects (which the
    /// caller watches) or its periodic resync can move the rotation on, so a timer would
    /// only spin.
    pub next_check: Option<SystemTime>,
}

/// Keys only: the values hold private keys, which must never reach a log.
impl fmt::Debug for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Decision")
            .field("ca_data", &self.ca_data.keys().collect::<Vec<_>>())
            .field("trust_bundle", &self.trust_bundle)
            .field(
                "serving",
                &self
                    .serving
                    .iter()
                    .map(|s| s.keys().collect::<Vec<_>>())
                    .collect::<Vec<_>>(),
            )
            .field("events", &self.events)
            .field("next_check", &self.next_check)
            .finish()
    }
}

/// Keys only, like [`Decision`]'s `Debug`.
impl fmt::Debug for ServingRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServingRequest")
            .field("secret_name", &self.secret_name)
            .field("dns_names", &self.dns_names)
            .field(
                "existing",
                &self.existing.map(|e| e.keys().collect::<Vec<_>>()),
            )
            .finish()
    }
}

/// Decides the CA Secret, trust bundle and serving Secrets for one BundleDeployment.
///
/// `ca` is the CA Secret's `data` if it exists. `live_bundles` holds, for every object the
/// trust bundle is injected into, the PEM text of its current `caBundle` (`None` if the
/// object or its caBundle does not exist yet). See the crate documentation for the rules.
/// Deterministic except for keys and serial numbers of new certificates.
pub fn decide(
    now: SystemTime,
    policy: &Policy,
    ca: Option<&BTreeMap<String, Vec<u8>>>,
    live_bundles: &[Option<String>],
    requests: &[ServingRequest<'_>],
) -> Result<Decision, Error> {
    policy.validate()?;
    let wanted: Vec<Vec<String>> = requests
        .iter()
        .map(wanted_names)
        .collect::<Result<_, _>>()?;
    let empty = BTreeMap::new();
    let stored = ca.unwrap_or(&empty);
    let mut events = Vec::new();

    // A successor that cannot sign, has expired or is the current CA again is no successor:
    // forgetting it lets rule 2 start a fresh one.
    let stored_current = Ca::read(stored, CA_CERT_KEY, CA_KEY_KEY);
    let stored_next = Ca::read(stored, NEXT_CA_CERT_KEY, NEXT_CA_KEY_KEY)
        .ok()
        .filter(|n| {
            !n.cert.expired(now)
                && stored_current
                    .as_ref()
                    .ok()
                    .is_none_or(|c| c.cert.der != n.cert.der)
        });

    // Rule 1: a usable current CA, else the successor if there is one (it is already in
    // the trust bundle and perhaps in live caBundles), else a new CA.
    let mut demoted = None;
    let (mut current, mut next) = match stored_current {
        Ok(current) if !current.cert.expired(now) => (current, stored_next),
        unusable => {
            let reason = match unusable {
                Ok(expired) => CaReason::Expired {
                    not_after: expired.cert.not_after,
                },
                Err(reason) => reason,
            };
            match stored_next {
                Some(next) => {
                    events.push(Event::CaPromoted {
                        not_after: next.cert.not_after,
                    });
                    (next, None)
                }
                None => {
                    let created = Ca::create(now, policy.validity)?;
                    events.push(Event::CaCreated {
                        not_after: created.cert.not_after,
                        reason,
                    });
                    (created, None)
                }
            }
        }
    };

    // Rule 2: start the successor while the current CA still has `renew_before` left.
    if next.is_none() && current.cert.remaining(now) < policy.renew_before {
        let created = Ca::create(now, policy.validity)?;
        events.push(Event::CaRenewalStarted {
            current_not_after: current.cert.not_after,
            next_not_after: created.cert.not_after,
        });
        next = Some(created);
    }

    // Rule 3: promote once every live caBundle trusts the successor (at once when there is
    // nothing to inject into).
    if let Some(successor) = next.take_if(|n| {
        live_bundles.iter().all(|live| {
            live.as_deref()
                .is_some_and(|pem| bundle_contains(pem, &n.cert.der))
        })
    }) {
        events.push(Event::CaPromoted {
            not_after: successor.cert.not_after,
        });
        demoted = Some(std::mem::replace(&mut current, successor).cert);
    }

    // Rule 4: the trust bundle.
    let stored_bundle = stored
        .get(CA_BUNDLE_KEY)
        .map(|b| parse_bundle(b))
        .unwrap_or_default();
    let (bundle, expired) = trust_bundle(
        &stored_bundle,
        demoted,
        &current.cert,
        next.as_ref().map(|n| &n.cert),
        now,
    );
    if expired > 0 {
        events.push(Event::CaExpiredDropped { count: expired });
    }
    let trust_bundle: String = bundle.iter().map(Cert::pem).collect();

    let mut ca_data = stored.clone();
    ca_data.insert(CA_CERT_KEY.to_owned(), current.cert_pem.clone());
    ca_data.insert(CA_KEY_KEY.to_owned(), current.key_pem.clone());
    match &next {
        Some(next) => {
            ca_data.insert(NEXT_CA_CERT_KEY.to_owned(), next.cert_pem.clone());
            ca_data.insert(NEXT_CA_KEY_KEY.to_owned(), next.key_pem.clone());
        }
        None => {
            ca_data.remove(NEXT_CA_CERT_KEY);
            ca_data.remove(NEXT_CA_KEY_KEY);
        }
    }
    ca_data.insert(CA_BUNDLE_KEY.to_owned(), trust_bundle.clone().into_bytes());

    // Rule 5: serving certificates, always from the (possibly just promoted) current CA.
    let mut serving = Vec::with_capacity(requests.len());
    let mut serving_expiries = Vec::with_capacity(requests.len());
    for (request, names) in requests.iter().zip(&wanted) {
        let mut data = request.existing.cloned().unwrap_or_default();
        let not_after = match check_serving(request.existing, names, &current, now, policy)? {
            Ok(kept) => kept.not_after,
            Err(reason) => {
                let not_after = serving_not_after(now, policy.validity, &current.cert)?;
                let issued = current.issue(request.secret_name, names, now, not_after)?;
                data.insert(TLS_CERT_KEY.to_owned(), issued.cert_pem);
                data.insert(TLS_KEY_KEY.to_owned(), issued.key_pem);
                events.push(Event::ServingIssued {
                    secret: request.secret_name.to_owned(),
                    reason,
                    not_after: issued.cert.not_after,
                });
                issued.cert.not_after
            }
        };
        data.insert(SERVING_CA_KEY.to_owned(), trust_bundle.clone().into_bytes());
        serving.push(data);
        serving_expiries.push(not_after);
    }

    // Rule 6: when something is next due.
    let next_check = if next.is_some() {
        None
    } else {
        let renewal = |not_after: SystemTime| not_after.checked_sub(policy.renew_before);
        let due = std::iter::once(renewal(current.cert.not_after))
            .chain(serving_expiries.iter().map(|t| renewal(*t)))
            .chain(bundle.iter().map(|c| Some(c.not_after)))
            .map(|t| t.unwrap_or(now))
            .min()
            .unwrap_or(now);
        Some(due.max(now))
    };

    Ok(Decision {
        ca_data,
        trust_bundle,
        serving,
        events,
        next_check,
    })
}

/// The requested names, normalised and deduplicated in request order.
fn wanted_names(request: &ServingRequest<'_>) -> Result<Vec<String>, Error> {
    let mut seen = BTreeSet::new();
    let names: Vec<String> = request
        .dns_names
        .iter()
        .map(|n| normalise_name(n))
        .filter(|n| seen.insert(n.clone()))
        .collect();
    if names.is_empty() {
        return Err(Error::NoDnsNames {
            secret: request.secret_name.to_owned(),
        });
    }
    Ok(names)
}

/// Rule 4: the stored bundle's CAs, the CA demoted by a promotion, the current and the next
/// CA; deduplicated, without expired ones, oldest (by notBefore) first. Also returns how
/// many of the stored bundle's CAs were dropped for having expired. Non-CA certificates are
/// dropped silently: this crate never stores any, so they are damage, not history.
fn trust_bundle(
    stored: &[Cert],
    demoted: Option<Cert>,
    current: &Cert,
    next: Option<&Cert>,
    now: SystemTime,
) -> (Vec<Cert>, usize) {
    let mut seen = BTreeSet::new();
    let mut expired = 0;
    let mut bundle = Vec::new();
    let candidates = stored.iter().cloned().map(|c| (c, true)).chain(
        demoted
            .into_iter()
            .chain([current.clone()])
            .chain(next.cloned())
            .map(|c| (c, false)),
    );
    for (cert, from_stored) in candidates {
        if !cert.is_ca || !seen.insert(cert.der.clone()) {
            continue;
        }
        if cert.expired(now) {
            expired += usize::from(from_stored);
            continue;
        }
        bundle.push(cert);
    }
    bundle.sort_by_key(|c| c.not_before);
    (bundle, expired)
}

/// Rule 5 for one existing Secret: `Ok(Ok(cert))` to keep it, `Ok(Err(reason))` to issue.
fn check_serving(
    existing: Option<&BTreeMap<String, Vec<u8>>>,
    names: &[String],
    ca: &Ca,
    now: SystemTime,
    policy: &Policy,
) -> Result<Result<Cert, IssueReason>, Error> {
    let invalid = |why: String| Ok(Err(IssueReason::Invalid(why)));
    let Some((crt, key)) = existing.and_then(|d| Some((d.get(TLS_CERT_KEY)?, d.get(TLS_KEY_KEY)?)))
    else {
        return Ok(Err(IssueReason::Missing));
    };
    let cert = match parse_single_pem(crt) {
        Ok(cert) => cert,
        Err(why) => return invalid(format!("{TLS_CERT_KEY} {why}")),
    };
    let key = match read_key(key) {
        Ok(key) => key,
        Err(why) => return invalid(format!("{TLS_KEY_KEY} {why}")),
    };
    if key.public_key_raw() != cert.public_key.as_slice() {
        return invalid(format!("{TLS_KEY_KEY} does not match {TLS_CERT_KEY}"));
    }
    if cert.is_ca {
        return invalid(format!("{TLS_CERT_KEY} is a CA certificate"));
    }
    if cert.names != names.iter().cloned().collect::<BTreeSet<_>>() {
        return Ok(Err(IssueReason::NamesChanged));
    }
    if !is_signed_by(&cert, &ca.cert) {
        return Ok(Err(IssueReason::SignerChanged));
    }
    // TLS clients reject a certificate from the future; happens only if the clock went back.
    if cert.not_before > now {
        return invalid(format!("{TLS_CERT_KEY} is not valid yet"));
    }
    // Reissue only when it buys time: a certificate already ending with its CA is renewed
    // by the CA rotation, and reissuing it on every call would churn the Secret.
    if cert.remaining(now) < policy.renew_before
        && serving_not_after(now, policy.validity, &ca.cert)? > cert.not_after
    {
        return Ok(Err(IssueReason::ExpiringSoon));
    }
    Ok(Ok(cert))
}

#[cfg(test)]
mod tests;
