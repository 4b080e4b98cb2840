//! The safety property of rotation, simulated: a cluster that applies every trust bundle and
//! serving certificate late must still, at every moment, verify the certificate it serves
//! against the caBundles it holds, while the CA rotates and nothing is rewritten needlessly.

// Test helpers outside #[test] functions: clippy.toml allows these only inside tests.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use certificates::{
    CA_CERT_KEY, Decision, Event, NEXT_CA_CERT_KEY, Policy, ServingRequest, TLS_CERT_KEY, decide,
    verify,
};
use proptest::prelude::*;
use rustls_pki_types::{CertificateDer, ServerName};

const START: u64 = 1_800_000_000;

/// What one run saw.
struct Outcome {
    promotions: usize,
    steps: usize,
}

const SECRETS: [&str; 2] = ["webhook-a-cert", "webhook-b-cert"];

fn names(secret: &str) -> Vec<String> {
    let svc = secret.trim_end_matches("-cert");
    vec![
        svc.to_owned(),
        format!("{svc}.ns"),
        format!("{svc}.ns.svc"),
        format!("{svc}.ns.svc.cluster.local"),
    ]
}

/// Runs `decide` at each of `times` (seconds from the start). Live caBundle `i` holds the
/// bundle decided `bundle_lags[i]` steps earlier; servers serve certificates decided up to
/// `cert_lag` steps earlier. Secrets are read back as written (the caller's own writes).
fn simulate(times: &[u64], bundle_lags: &[usize], cert_lag: usize) -> Outcome {
    let policy = Policy::for_validity(Duration::from_secs(90));
    let mut history: Vec<Decision> = Vec::new();
    let mut promotions = 0;
    for (k, secs) in times.iter().enumerate() {
        let now = UNIX_EPOCH + Duration::from_secs(START + secs);
        let lagged = |lag: usize| k.checked_sub(lag).and_then(|i| history.get(i));
        let live: Vec<Option<String>> = bundle_lags
            .iter()
            .map(|lag| lagged(*lag).map(|d| d.trust_bundle.clone()))
            .collect();
        let previous = history.last();
        let requests: Vec<ServingRequest<'_>> = SECRETS
            .iter()
            .enumerate()
            .map(|(j, secret)| ServingRequest {
                secret_name: secret,
                dns_names: names(secret),
                existing: previous.map(|d| &d.serving[j]),
            })
            .collect();
        let decision =
            decide(now, &policy, previous.map(|d| &d.ca_data), &live, &requests).unwrap();

        if let Some(previous) = previous {
            assert_no_churn(k, now, previous, &decision);
        }
        assert!(
            decision.events.iter().all(|e| !e.is_warning()),
            "step {k}: {:?}",
            decision.events
        );
        assert_eq!(
            decision.next_check.is_none(),
            decision.ca_data.contains_key(NEXT_CA_CERT_KEY),
            "step {k}: next_check is None exactly while a successor waits"
        );
        promotions += decision
            .events
            .iter()
            .filter(|e| matches!(e, Event::CaPromoted { .. }))
            .count();
        history.push(decision);

        // What the cluster may hold now: any bundle from the lagging live ones to the one
        // just decided, and any certificate from the one decided `cert_lag` steps ago to
        // the one just decided (the caller writes bundles and Secrets in some order, and
        // servers reload at their own pace).
        let bundles: BTreeSet<&String> = live
            .iter()
            .flatten()
            .chain([&history[k].trust_bundle])
            .collect();
        for bundle in bundles {
            for (j, secret) in SECRETS.iter().enumerate() {
                let leaves: BTreeSet<&Vec<u8>> = history[k.saturating_sub(cert_lag)..=k]
                    .iter()
                    .map(|d| &d.serving[j][TLS_CERT_KEY])
                    .collect();
                for leaf in leaves {
                    let leaf = std::str::from_utf8(leaf).unwrap();
                    if let Err(e) = verifies_for_names(bundle, leaf, &names(secret), now) {
                        panic!("step {k} (t={secs}s): {secret} does not verify: {e}");
                    }
                }
            }
        }
    }
    Outcome {
        promotions,
        steps: times.len(),
    }
}

/// [`verify`] for the first name (the chain, as a TLS client checks it), then webpki's name
/// check for every other name: the chain is the same, and checking it once per name would
/// make the simulation several times slower in debug builds.
fn verifies_for_names(
    bundle: &str,
    leaf_pem: &str,
    names: &[String],
    now: SystemTime,
) -> Result<(), String> {
    verify(bundle, leaf_pem, &names[0], now)?;
    let der = pem::parse(leaf_pem)
        .map_err(|e| e.to_string())?
        .into_contents();
    let der = CertificateDer::from(der);
    let leaf = webpki::EndEntityCert::try_from(&der).map_err(|e| e.to_string())?;
    for name in &names[1..] {
        let server_name = ServerName::try_from(name.as_str()).map_err(|e| e.to_string())?;
        leaf.verify_is_valid_for_subject_name(&server_name)
            .map_err(|e| format!("not valid for {name}: {e}"))?;
    }
    Ok(())
}

/// Serving certificates and the CA change only with a CA promotion (or creation), and
/// before `next_check` nothing changes at all.
fn assert_no_churn(k: usize, now: SystemTime, previous: &Decision, decision: &Decision) {
    let rotated = decision
        .events
        .iter()
        .any(|e| matches!(e, Event::CaPromoted { .. } | Event::CaCreated { .. }));
    for (j, (before, after)) in previous.serving.iter().zip(&decision.serving).enumerate() {
        if before[TLS_CERT_KEY] != after[TLS_CERT_KEY] {
            assert!(
                rotated,
                "step {k}: serving certificate {j} changed without a CA rotation"
            );
        }
    }
    if previous.ca_data[CA_CERT_KEY] != decision.ca_data[CA_CERT_KEY] {
        assert!(rotated, "step {k}: the CA changed without an event");
    }
    if previous.next_check.is_some_and(|due| now < due) {
        assert_eq!(
            decision.events,
            vec![],
            "step {k}: events before next_check"
        );
        assert_eq!(
            decision.ca_data, previous.ca_data,
            "step {k}: CA rewritten before next_check"
        );
        assert_eq!(
            decision.serving, previous.serving,
            "step {k}: serving rewritten before next_check"
        );
    }
}

#[test]
fn served_certificates_always_verify_against_live_bundles_one_step_behind() {
    let times: Vec<u64> = (0..=200).map(|k| k * 5).collect();
    let outcome = simulate(&times, &[1, 1], 1);
    assert_eq!(outcome.steps, 201);
    // A 90 s CA renewed with 30 s left rotates about every 65 s.
    assert!(
        outcome.promotions >= 2,
        "only {} promotions",
        outcome.promotions
    );
}

#[test]
fn servers_that_reload_at_once_and_bundles_that_lag_differently_are_safe() {
    let times: Vec<u64> = (0..=200).map(|k| k * 5).collect();
    assert!(simulate(&times, &[1, 2], 0).promotions >= 2);
    assert!(simulate(&times, &[3, 1, 2], 2).promotions >= 2);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Irregular calls and lags. The bound is the design constraint: renewal (with up to
    /// one step of delay) plus the slowest bundle plus the slowest server must fit in
    /// `renew_before` (30 s): 4 + 3 × 4 + 2 × 4 = 24 s.
    #[test]
    fn irregular_timelines_keep_every_served_certificate_verifiable(
        steps in proptest::collection::vec(1u64..=4, 150..300),
        bundle_lags in proptest::collection::vec(1usize..=3, 1..4),
        cert_lag in 0usize..=2,
    ) {
        let times: Vec<u64> = steps.iter().scan(0, |t, step| { *t += step; Some(*t) }).collect();
        let outcome = simulate(&times, &bundle_lags, cert_lag);
        prop_assert!(outcome.promotions >= 2);
    }
}

#[test]
fn with_nothing_to_inject_into_the_ca_still_rotates() {
    // Promotion is immediate then; the serving Secrets' own ca.crt is the only consumer.
    let times: Vec<u64> = (0..=100).map(|k| k * 5).collect();
    assert!(simulate(&times, &[], 1).promotions >= 2);
}
