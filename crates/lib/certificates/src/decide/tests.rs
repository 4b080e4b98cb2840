//! Unit tests of the rules, one scenario each. The timeline simulation is in tests/.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use x509_parser::prelude::{FromDer, X509Certificate};

use crate::*;

type Data = BTreeMap<String, Vec<u8>>;

/// Far from the epoch and from 2050 (where certificates switch time encodings).
const START: u64 = 1_800_000_000;

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(START + secs)
}

/// CA and serving certificates live 90 s and are renewed with 30 s left.
fn policy() -> Policy {
    Policy::for_validity(Duration::from_secs(90))
}

fn names() -> Vec<String> {
    [
        "webhook",
        "webhook.ns",
        "webhook.ns.svc",
        "webhook.ns.svc.cluster.local",
    ]
    .map(str::to_owned)
    .to_vec()
}

fn request(existing: Option<&Data>) -> ServingRequest<'_> {
    ServingRequest {
        secret_name: "webhook-cert",
        dns_names: names(),
        existing,
    }
}

/// One serving Secret, everything else given.
fn run(
    now: SystemTime,
    ca: Option<&Data>,
    live: &[Option<String>],
    serving: Option<&Data>,
) -> Decision {
    decide(now, &policy(), ca, live, &[request(serving)]).unwrap()
}

/// The first call of a fresh BundleDeployment, at `at(0)`.
fn fresh() -> Decision {
    run(at(0), None, &[], None)
}

fn text(data: &Data, key: &str) -> String {
    String::from_utf8(data[key].clone()).unwrap()
}

fn der(pem_text: &str) -> Vec<Vec<u8>> {
    pem::parse_many(pem_text)
        .unwrap()
        .into_iter()
        .map(|p| p.into_contents())
        .collect()
}

/// The serving certificate verifies against `bundle` for every requested name.
fn assert_verifies(bundle: &str, serving: &Data, now: SystemTime) {
    for name in names() {
        verify(bundle, &text(serving, TLS_CERT_KEY), &name, now).unwrap();
    }
}

fn issued_reasons(d: &Decision) -> Vec<IssueReason> {
    d.events
        .iter()
        .filter_map(|e| match e {
            Event::ServingIssued { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect()
}

/// The decision as input to the next call: nothing changes unless something is due.
fn assert_unchanged(before: &Decision, after: &Decision) {
    assert_eq!(after.ca_data, before.ca_data);
    assert_eq!(after.serving, before.serving);
    assert_eq!(after.trust_bundle, before.trust_bundle);
    assert_eq!(after.events, vec![]);
}

/// The state at `at(65)`: renewal started (CA 0 has 25 s left), live bundles not updated.
fn renewing(d0: &Decision) -> Decision {
    let live = [Some(d0.trust_bundle.clone())];
    run(at(65), Some(&d0.ca_data), &live, Some(&d0.serving[0]))
}

#[test]
fn fresh_start_creates_a_ca_and_a_serving_certificate_that_verifies() {
    let d = fresh();
    assert!(matches!(
        d.events.as_slice(),
        [
            Event::CaCreated {
                reason: CaReason::Missing,
                ..
            },
            Event::ServingIssued {
                reason: IssueReason::Missing,
                ..
            }
        ]
    ));
    assert_eq!(
        d.ca_data.keys().map(String::as_str).collect::<Vec<_>>(),
        [CA_BUNDLE_KEY, CA_CERT_KEY, CA_KEY_KEY]
    );
    assert_eq!(d.trust_bundle, text(&d.ca_data, CA_CERT_KEY));
    assert_eq!(text(&d.ca_data, CA_BUNDLE_KEY), d.trust_bundle);
    assert_eq!(text(&d.serving[0], SERVING_CA_KEY), d.trust_bundle);
    assert_verifies(&d.trust_bundle, &d.serving[0], at(0));
    // Renewal of the CA (and with it the serving certificate) is the next thing due.
    assert_eq!(d.next_check, Some(at(60)));

    let ca_der = der(&d.trust_bundle).remove(0);
    let (_, ca) = X509Certificate::from_der(&ca_der).unwrap();
    assert!(ca.is_ca());
    let ku = ca.key_usage().unwrap().unwrap().value;
    assert!(ku.key_cert_sign() && ku.crl_sign());
    assert_eq!(ca.validity().not_after.timestamp(), (START + 90) as i64);

    let leaf_der = der(&text(&d.serving[0], TLS_CERT_KEY)).remove(0);
    let (_, leaf) = X509Certificate::from_der(&leaf_der).unwrap();
    assert!(!leaf.is_ca());
    assert!(
        leaf.extended_key_usage()
            .unwrap()
            .unwrap()
            .value
            .server_auth
    );
    let cn = leaf
        .subject()
        .iter_common_name()
        .next()
        .unwrap()
        .as_str()
        .unwrap();
    assert_eq!(cn, "webhook");
    // A minute of clock skew, and no longer than the CA.
    assert_eq!(leaf.validity().not_before.timestamp(), (START - 60) as i64);
    assert_eq!(leaf.validity().not_after.timestamp(), (START + 90) as i64);
}

#[test]
fn a_second_call_with_the_first_output_changes_nothing() {
    let d0 = fresh();
    let live = [Some(d0.trust_bundle.clone()), Some(d0.trust_bundle.clone())];
    let d1 = run(at(10), Some(&d0.ca_data), &live, Some(&d0.serving[0]));
    assert_unchanged(&d0, &d1);
    assert_eq!(d1.next_check, d0.next_check);
}

#[test]
fn changed_names_reissue_the_serving_certificate() {
    let d0 = fresh();
    let mut req = request(Some(&d0.serving[0]));
    req.dns_names.push("webhook.other".to_owned());
    let d1 = decide(at(5), &policy(), Some(&d0.ca_data), &[], &[req]).unwrap();
    assert_eq!(issued_reasons(&d1), [IssueReason::NamesChanged]);
    assert_eq!(d1.ca_data, d0.ca_data);
    verify(
        &d1.trust_bundle,
        &text(&d1.serving[0], TLS_CERT_KEY),
        "webhook.other",
        at(5),
    )
    .unwrap();

    // Same set in another order and case: kept.
    let mut req = request(Some(&d0.serving[0]));
    req.dns_names.reverse();
    req.dns_names[0] = req.dns_names[0].to_uppercase();
    let d2 = decide(at(5), &policy(), Some(&d0.ca_data), &[], &[req]).unwrap();
    assert_unchanged(&d0, &d2);
}

#[test]
fn ip_names_are_compared_as_addresses() {
    let ips = |name: &str| ServingRequest {
        secret_name: "s",
        dns_names: vec!["svc.ns.svc".to_owned(), name.to_owned()],
        existing: None,
    };
    let d0 = decide(at(0), &policy(), None, &[], &[ips("10.0.0.1")]).unwrap();
    let again = ServingRequest {
        existing: Some(&d0.serving[0]),
        ..ips("10.0.0.1")
    };
    let d1 = decide(at(1), &policy(), Some(&d0.ca_data), &[], &[again]).unwrap();
    assert_unchanged(&d0, &d1);
}

#[test]
fn malformed_ca_data_is_replaced_and_the_event_says_why() {
    let mut broken = Data::new();
    broken.insert(
        CA_CERT_KEY.to_owned(),
        b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".to_vec(),
    );
    broken.insert(CA_KEY_KEY.to_owned(), vec![0xff, 0x00]);
    broken.insert(CA_BUNDLE_KEY.to_owned(), b"\x00garbage".to_vec());
    broken.insert("kept".to_owned(), b"unknown keys survive".to_vec());
    let d = run(at(0), Some(&broken), &[], None);
    let Event::CaCreated {
        reason: CaReason::Invalid(why),
        ..
    } = &d.events[0]
    else {
        panic!("expected CaCreated(Invalid), got {:?}", d.events);
    };
    assert!(
        why.starts_with("ca.crt is not an X.509 certificate"),
        "{why}"
    );
    assert!(d.events[0].is_warning());
    assert_eq!(der(&d.trust_bundle).len(), 1);
    assert_eq!(d.ca_data["kept"], b"unknown keys survive");
    assert_verifies(&d.trust_bundle, &d.serving[0], at(0));

    // Only half a CA stored.
    let mut half = fresh().ca_data;
    half.remove(CA_KEY_KEY);
    let d = run(at(0), Some(&half), &[], None);
    assert!(
        matches!(&d.events[0], Event::CaCreated { reason: CaReason::Invalid(w), .. } if w == "ca.key is missing")
    );
}

#[test]
fn malformed_serving_data_is_reissued() {
    let d0 = fresh();
    let mut garbage = d0.serving[0].clone();
    garbage.insert(TLS_CERT_KEY.to_owned(), b"nonsense".to_vec());
    let d = run(at(1), Some(&d0.ca_data), &[], Some(&garbage));
    let reasons = issued_reasons(&d);
    let [IssueReason::Invalid(why)] = reasons.as_slice() else {
        panic!("{:?}", d.events)
    };
    assert!(why.starts_with("tls.crt holds no PEM certificate"), "{why}");
    assert!(d.events[0].is_warning());
    assert_verifies(&d.trust_bundle, &d.serving[0], at(1));

    let mut bad_key = d0.serving[0].clone();
    bad_key.insert(
        TLS_KEY_KEY.to_owned(),
        b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".to_vec(),
    );
    let d = run(at(1), Some(&d0.ca_data), &[], Some(&bad_key));
    assert!(
        matches!(issued_reasons(&d).as_slice(), [IssueReason::Invalid(w)] if w.starts_with("tls.key is not a usable"))
    );

    let mut no_key = d0.serving[0].clone();
    no_key.remove(TLS_KEY_KEY);
    let d = run(at(1), Some(&d0.ca_data), &[], Some(&no_key));
    assert_eq!(issued_reasons(&d), [IssueReason::Missing]);
}

#[test]
fn a_key_that_is_not_the_certificates_own_is_rejected() {
    let a = fresh();
    let b = fresh();

    let mut serving = a.serving[0].clone();
    serving.insert(TLS_KEY_KEY.to_owned(), b.serving[0][TLS_KEY_KEY].clone());
    let d = run(at(1), Some(&a.ca_data), &[], Some(&serving));
    assert_eq!(
        issued_reasons(&d),
        [IssueReason::Invalid(
            "tls.key does not match tls.crt".to_owned()
        )]
    );

    let mut ca = a.ca_data.clone();
    ca.insert(CA_KEY_KEY.to_owned(), b.ca_data[CA_KEY_KEY].clone());
    let d = run(at(1), Some(&ca), &[], Some(&a.serving[0]));
    assert_eq!(
        d.events[0],
        Event::CaCreated {
            not_after: at(91),
            reason: CaReason::Invalid("ca.key does not match ca.crt".to_owned())
        }
    );
    // The old CA stays trusted (it is in the stored bundle and valid); the new one signs.
    assert_eq!(der(&d.trust_bundle).len(), 2);
    assert_eq!(issued_reasons(&d), [IssueReason::SignerChanged]);
}

#[test]
fn a_certificate_signed_by_another_ca_with_the_same_name_is_not_kept() {
    // Two CAs created in the same second share their subject: only the signature tells.
    let a = fresh();
    let b = fresh();
    let d = run(at(1), Some(&a.ca_data), &[], Some(&b.serving[0]));
    assert_eq!(issued_reasons(&d), [IssueReason::SignerChanged]);
}

#[test]
fn renewal_starts_with_less_than_renew_before_left_and_keeps_serving_certificates() {
    let d0 = fresh();
    // 30 s left is not less than renew_before.
    let live = [Some(d0.trust_bundle.clone())];
    let d60 = run(at(60), Some(&d0.ca_data), &live, Some(&d0.serving[0]));
    assert_unchanged(&d0, &d60);

    let d1 = renewing(&d0);
    assert!(
        matches!(d1.events.as_slice(), [Event::CaRenewalStarted { .. }]),
        "{:?}",
        d1.events
    );
    assert_eq!(d1.ca_data[CA_CERT_KEY], d0.ca_data[CA_CERT_KEY]);
    assert_eq!(d1.ca_data[CA_KEY_KEY], d0.ca_data[CA_KEY_KEY]);
    let next = text(&d1.ca_data, NEXT_CA_CERT_KEY);
    assert_eq!(
        d1.trust_bundle,
        text(&d0.ca_data, CA_CERT_KEY) + &next,
        "oldest first"
    );
    // Still signed by the current CA, which nobody has stopped trusting; its Secret gets
    // the new bundle and nothing else.
    assert_eq!(d1.serving[0][TLS_CERT_KEY], d0.serving[0][TLS_CERT_KEY]);
    assert_eq!(d1.serving[0][TLS_KEY_KEY], d0.serving[0][TLS_KEY_KEY]);
    assert_eq!(text(&d1.serving[0], SERVING_CA_KEY), d1.trust_bundle);
    assert_eq!(d1.next_check, None);
    assert_verifies(&d1.trust_bundle, &d1.serving[0], at(65));
}

#[test]
fn promotion_waits_until_every_live_bundle_holds_the_successor() {
    let d0 = fresh();
    let d1 = renewing(&d0);
    let new = Some(d1.trust_bundle.clone());
    let old = Some(d0.trust_bundle.clone());
    for live in [
        vec![new.clone(), old.clone()],
        vec![None, new.clone()],
        vec![Some("junk".to_owned()), new.clone()],
    ] {
        let waiting = run(at(70), Some(&d1.ca_data), &live, Some(&d1.serving[0]));
        assert_unchanged(&d1, &waiting);
        assert_eq!(waiting.next_check, None, "nothing to time while waiting");
    }

    // Another spelling of the same certificates (CRLF line endings) counts.
    let crlf = Some(d1.trust_bundle.replace('\n', "\r\n"));
    let d2 = run(
        at(70),
        Some(&d1.ca_data),
        &[new.clone(), crlf],
        Some(&d1.serving[0]),
    );
    assert!(matches!(d2.events[0], Event::CaPromoted { not_after } if not_after == at(155)));
    assert_eq!(issued_reasons(&d2), [IssueReason::SignerChanged]);
    assert_eq!(d2.ca_data[CA_CERT_KEY], d1.ca_data[NEXT_CA_CERT_KEY]);
    assert_eq!(d2.ca_data[CA_KEY_KEY], d1.ca_data[NEXT_CA_KEY_KEY]);
    assert!(
        !d2.ca_data.contains_key(NEXT_CA_CERT_KEY) && !d2.ca_data.contains_key(NEXT_CA_KEY_KEY)
    );
    // The demoted CA stays until it expires, so both old and new serving certificates
    // verify against both the live and the new bundle.
    assert_eq!(d2.trust_bundle, d1.trust_bundle);
    for bundle in [&d1.trust_bundle, &d2.trust_bundle] {
        assert_verifies(bundle, &d1.serving[0], at(70));
        assert_verifies(bundle, &d2.serving[0], at(70));
    }
    // Next: dropping the old CA when it expires.
    assert_eq!(d2.next_check, Some(at(90)));
}

#[test]
fn with_nothing_to_inject_into_the_successor_takes_over_at_once() {
    let d0 = fresh();
    let d1 = run(at(65), Some(&d0.ca_data), &[], Some(&d0.serving[0]));
    assert!(matches!(
        d1.events.as_slice(),
        [
            Event::CaRenewalStarted { .. },
            Event::CaPromoted { .. },
            Event::ServingIssued {
                reason: IssueReason::SignerChanged,
                ..
            }
        ]
    ));
    assert_eq!(der(&d1.trust_bundle).len(), 2);
    assert_verifies(&d1.trust_bundle, &d1.serving[0], at(65));
}

#[test]
fn expired_cas_are_dropped_from_the_trust_bundle() {
    let d0 = fresh();
    let d1 = renewing(&d0);
    let live = [Some(d1.trust_bundle.clone())];
    let d2 = run(at(70), Some(&d1.ca_data), &live, Some(&d1.serving[0]));
    let live = [Some(d2.trust_bundle.clone())];
    let d3 = run(at(90), Some(&d2.ca_data), &live, Some(&d2.serving[0]));
    assert_eq!(d3.events, [Event::CaExpiredDropped { count: 1 }]);
    assert_eq!(d3.trust_bundle, text(&d2.ca_data, CA_CERT_KEY));
    assert_eq!(d3.serving[0][TLS_CERT_KEY], d2.serving[0][TLS_CERT_KEY]);
    assert_eq!(text(&d3.serving[0], SERVING_CA_KEY), d3.trust_bundle);
    assert_eq!(d3.next_check, Some(at(155 - 30)));
}

#[test]
fn the_stored_bundle_is_deduplicated_and_ordered_oldest_first() {
    let d0 = fresh();
    let d1 = renewing(&d0);
    let (current, next) = (
        text(&d1.ca_data, CA_CERT_KEY),
        text(&d1.ca_data, NEXT_CA_CERT_KEY),
    );
    let mut ca = d1.ca_data.clone();
    ca.insert(
        CA_BUNDLE_KEY.to_owned(),
        format!("{next}{current}{next}").into_bytes(),
    );
    let d = run(at(66), Some(&ca), &[None], Some(&d1.serving[0]));
    assert_eq!(d.trust_bundle, current + &next);
    assert_eq!(d.ca_data, d1.ca_data);
}

#[test]
fn an_expired_ca_without_successor_is_replaced() {
    // The controller was down through the whole renewal window.
    let d0 = fresh();
    let d = run(
        at(100),
        Some(&d0.ca_data),
        &[Some(d0.trust_bundle.clone())],
        Some(&d0.serving[0]),
    );
    assert_eq!(
        d.events[..2],
        [
            Event::CaCreated {
                not_after: at(190),
                reason: CaReason::Expired { not_after: at(90) }
            },
            Event::CaExpiredDropped { count: 1 },
        ]
    );
    assert!(d.events[0].is_warning());
    assert_eq!(issued_reasons(&d), [IssueReason::SignerChanged]);
    assert_eq!(der(&d.trust_bundle).len(), 1);
    assert_verifies(&d.trust_bundle, &d.serving[0], at(100));
}

#[test]
fn an_expired_ca_with_a_successor_hands_over_to_it() {
    let d0 = fresh();
    let d1 = renewing(&d0);
    // Some live object never picked up the new bundle, and the current CA ran out.
    let d = run(
        at(95),
        Some(&d1.ca_data),
        &[Some(d0.trust_bundle.clone())],
        Some(&d1.serving[0]),
    );
    assert_eq!(
        d.events[..2],
        [
            Event::CaPromoted { not_after: at(155) },
            Event::CaExpiredDropped { count: 1 }
        ]
    );
    assert_eq!(d.ca_data[CA_CERT_KEY], d1.ca_data[NEXT_CA_CERT_KEY]);
    assert_eq!(issued_reasons(&d), [IssueReason::SignerChanged]);
}

#[test]
fn an_expiring_serving_certificate_is_reissued_only_when_that_extends_it() {
    // A long-lived CA, then a short-lived serving certificate under a shorter policy.
    let long = Policy::for_validity(Duration::from_secs(900));
    let short = policy();
    let d0 = decide(at(0), &long, None, &[], &[request(None)]).unwrap();
    let d1 = decide(at(0), &short, Some(&d0.ca_data), &[], &[request(None)]).unwrap();
    assert!(
        matches!(d1.events.as_slice(), [Event::ServingIssued { not_after, .. }] if *not_after == at(90))
    );
    assert_eq!(d1.next_check, Some(at(60)));

    let d2 = decide(
        at(61),
        &short,
        Some(&d1.ca_data),
        &[],
        &[request(Some(&d1.serving[0]))],
    )
    .unwrap();
    assert_eq!(
        d2.events,
        [Event::ServingIssued {
            secret: "webhook-cert".to_owned(),
            reason: IssueReason::ExpiringSoon,
            not_after: at(151)
        }]
    );
    assert_eq!(d2.ca_data, d1.ca_data);

    // When it already ends with its CA, only the CA rotation can help: no reissue, however
    // often it is asked (here while waiting for a live bundle).
    let d0 = fresh();
    let d1 = renewing(&d0);
    for t in [66, 75, 85] {
        let d = run(at(t), Some(&d1.ca_data), &[None], Some(&d1.serving[0]));
        assert_unchanged(&d1, &d);
    }
}

#[test]
fn a_serving_certificate_from_the_future_is_reissued() {
    // The clock went back ten minutes.
    let later = run(at(600), None, &[], None);
    let d = run(at(0), Some(&later.ca_data), &[], Some(&later.serving[0]));
    assert!(
        matches!(issued_reasons(&d).as_slice(), [IssueReason::Invalid(w)] if w == "tls.crt is not valid yet")
    );
}

#[test]
fn several_requests_are_answered_in_order() {
    let d0 = fresh();
    let other = ServingRequest {
        secret_name: "other-cert",
        dns_names: vec!["other.ns.svc".to_owned()],
        existing: None,
    };
    let d = decide(
        at(1),
        &policy(),
        Some(&d0.ca_data),
        &[],
        &[request(Some(&d0.serving[0])), other],
    )
    .unwrap();
    assert_eq!(d.serving[0], d0.serving[0]);
    assert!(
        matches!(&d.events[..], [Event::ServingIssued { secret, .. }] if secret == "other-cert")
    );
    verify(
        &d.trust_bundle,
        &text(&d.serving[1], TLS_CERT_KEY),
        "other.ns.svc",
        at(1),
    )
    .unwrap();
}

#[test]
fn invalid_input_is_an_error() {
    let bad = Policy {
        validity: Duration::from_secs(10),
        renew_before: Duration::from_secs(10),
    };
    assert!(matches!(
        decide(at(0), &bad, None, &[], &[]),
        Err(Error::InvalidPolicy { .. })
    ));
    let nameless = ServingRequest {
        secret_name: "s",
        dns_names: vec![],
        existing: None,
    };
    let err = decide(at(0), &policy(), None, &[], &[nameless]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "serving certificate for Secret s requested without any DNS name"
    );
    let non_ascii = ServingRequest {
        secret_name: "s",
        dns_names: vec!["wébhook".to_owned()],
        existing: None,
    };
    let err = decide(at(0), &policy(), None, &[], &[non_ascii]).unwrap_err();
    assert!(matches!(err, Error::Generate { .. }), "{err}");
}

#[test]
fn debug_output_never_shows_private_keys() {
    let d = fresh();
    let shown = format!("{d:?} {:?}", request(Some(&d.serving[0])));
    assert!(!shown.contains("PRIVATE KEY"), "{shown}");
}

#[test]
fn verify_rejects_what_a_tls_client_would() {
    let d = fresh();
    let leaf = text(&d.serving[0], TLS_CERT_KEY);
    assert!(verify(&d.trust_bundle, &leaf, "webhook.ns.svc", at(0)).is_ok());
    assert!(verify(&d.trust_bundle, &leaf, "elsewhere.ns.svc", at(0)).is_err());
    assert!(
        verify(&d.trust_bundle, &leaf, "webhook.ns.svc", at(90)).is_err(),
        "expired"
    );
    assert!(
        verify(&fresh().trust_bundle, &leaf, "webhook.ns.svc", at(0)).is_err(),
        "other CA"
    );
    assert!(verify("", &leaf, "webhook.ns.svc", at(0)).is_err());
}
