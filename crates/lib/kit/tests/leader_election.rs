//! Leader election against the real API server: one leader at a time, and a standby
//! takes over when the leader stops (released lease) or dies (expired lease).

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kit::admin::Readiness;
use kit::leader::{LeaderElection, LeaderError};
use kube::Api;
use testkit::{TestNamespace, client, unique_name, wait_for};
use tokio_util::sync::CancellationToken;

/// Counts how many contenders run their controllers at once, and the peak.
#[derive(Default)]
struct Leaders {
    current: AtomicUsize,
    peak: AtomicUsize,
    started: AtomicUsize,
}

impl Leaders {
    async fn lead(&self, token: CancellationToken) {
        let now = self.current.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        self.started.fetch_add(1, Ordering::SeqCst);
        token.cancelled().await;
        self.current.fetch_sub(1, Ordering::SeqCst);
    }
}

fn contender(namespace: &str, lease: &str, identity: &str) -> LeaderElection {
    LeaderElection {
        lease_name: lease.to_owned(),
        namespace: namespace.to_owned(),
        duration: Duration::from_secs(3),
        identity: identity.to_owned(),
    }
}

async fn holder(leases: &Api<Lease>, name: &str) -> Result<String, String> {
    let lease = leases.get(name).await.map_err(|e| e.to_string())?;
    lease
        .spec
        .and_then(|s| s.holder_identity)
        .filter(|h| !h.is_empty())
        .ok_or_else(|| "no holder".to_owned())
}

#[tokio::test]
async fn one_contender_leads_and_the_other_takes_over_after_it_stops() {
    let client = client().await;
    let ns = TestNamespace::create(&client, "leader").await;
    let lease = unique_name("lease");
    let leaders = Arc::new(Leaders::default());

    let spawn = |identity: &'static str| {
        let election = contender(ns.name(), &lease, identity);
        let (client, leaders) = (client.clone(), leaders.clone());
        let shutdown = CancellationToken::new();
        let readiness = Readiness::default();
        let task_shutdown = shutdown.clone();
        let task_readiness = readiness.clone();
        let task = tokio::spawn(async move {
            election
                .run(client, &task_readiness, task_shutdown, |token| async move {
                    leaders.lead(token).await
                })
                .await
        });
        (shutdown, readiness, task)
    };
    let (stop_a, ready_a, task_a) = spawn("contender-a");
    let leases: Api<Lease> = ns.api();
    wait_for(
        "contender-a to hold the lease",
        Duration::from_secs(30),
        || async {
            let h = holder(&leases, &lease).await?;
            if h == "contender-a" { Ok(()) } else { Err(h) }
        },
    )
    .await;
    let (stop_b, ready_b, task_b) = spawn("contender-b");

    // Several lease durations: b must stay a standby the whole time.
    tokio::time::sleep(Duration::from_secs(8)).await;
    assert_eq!(holder(&leases, &lease).await.unwrap(), "contender-a");
    assert_eq!(leaders.current.load(Ordering::SeqCst), 1);
    assert_eq!(leaders.started.load(Ordering::SeqCst), 1, "b never led");
    assert!(ready_b.is_ready(), "a standby reports ready");
    let _gate = ready_a.register("watch:x");
    assert!(!ready_a.is_ready(), "the leader waits for its watches");

    // a stops cleanly: it releases the lease, so b takes over well before expiry.
    stop_a.cancel();
    assert!(task_a.await.unwrap().is_ok());
    wait_for(
        "contender-b to take over",
        Duration::from_secs(20),
        || async {
            let h = holder(&leases, &lease).await?;
            if h == "contender-b" && leaders.current.load(Ordering::SeqCst) == 1 {
                Ok(())
            } else {
                Err(format!(
                    "holder {h}, leaders {}",
                    leaders.current.load(Ordering::SeqCst)
                ))
            }
        },
    )
    .await;
    assert_eq!(leaders.started.load(Ordering::SeqCst), 2);
    assert_eq!(
        leaders.peak.load(Ordering::SeqCst),
        1,
        "never two leaders at once"
    );

    stop_b.cancel();
    assert!(task_b.await.unwrap().is_ok());
    assert_eq!(
        leaders.current.load(Ordering::SeqCst),
        0,
        "controllers stopped on shutdown"
    );
    ns.delete().await;
}

#[tokio::test]
async fn a_standby_takes_over_an_expired_lease_from_a_leader_that_died() {
    let client = client().await;
    let ns = TestNamespace::create(&client, "leader").await;
    let lease = unique_name("lease");
    let leases: Api<Lease> = ns.api();

    // The "dead" leader: abort its task, so it never releases the lease.
    let dead = {
        let election = contender(ns.name(), &lease, "crashed");
        let client = client.clone();
        tokio::spawn(async move {
            election
                .run(
                    client,
                    &Readiness::default(),
                    CancellationToken::new(),
                    |token| async move { token.cancelled().await },
                )
                .await
        })
    };
    wait_for(
        "the first leader to hold the lease",
        Duration::from_secs(30),
        || async {
            let h = holder(&leases, &lease).await?;
            if h == "crashed" { Ok(()) } else { Err(h) }
        },
    )
    .await;
    dead.abort();

    let took_over = Arc::new(AtomicUsize::new(0));
    let shutdown = CancellationToken::new();
    let survivor = {
        let election = contender(ns.name(), &lease, "survivor");
        let (client, took_over, shutdown) = (client.clone(), took_over.clone(), shutdown.clone());
        tokio::spawn(async move {
            election
                .run(
                    client,
                    &Readiness::default(),
                    shutdown,
                    |token| async move {
                        took_over.fetch_add(1, Ordering::SeqCst);
                        token.cancelled().await
                    },
                )
                .await
        })
    };
    wait_for(
        "the survivor to take over the expired lease",
        Duration::from_secs(30),
        || async {
            let h = holder(&leases, &lease).await?;
            if h == "survivor" && took_over.load(Ordering::SeqCst) == 1 {
                Ok(())
            } else {
                Err(h)
            }
        },
    )
    .await;
    shutdown.cancel();
    assert!(survivor.await.unwrap().is_ok());
    ns.delete().await;
}

#[tokio::test]
async fn a_leader_whose_lease_is_taken_stops_its_controllers_and_reports_the_loss() {
    let client = client().await;
    let ns = TestNamespace::create(&client, "leader").await;
    let lease = unique_name("lease");
    let leases: Api<Lease> = ns.api();
    let running = Arc::new(AtomicUsize::new(0));

    let election = contender(ns.name(), &lease, "victim");
    let task = {
        let (client, running) = (client.clone(), running.clone());
        tokio::spawn(async move {
            election
                .run(
                    client,
                    &Readiness::default(),
                    CancellationToken::new(),
                    |token| async move {
                        running.fetch_add(1, Ordering::SeqCst);
                        token.cancelled().await;
                        running.fetch_sub(1, Ordering::SeqCst);
                    },
                )
                .await
        })
    };
    wait_for("the victim to lead", Duration::from_secs(30), || async {
        if running.load(Ordering::SeqCst) == 1 {
            Ok(())
        } else {
            Err("not leading".to_owned())
        }
    })
    .await;

    // Another actor (an administrator, or a partitioned peer) rewrites the holder.
    let mut current = leases.get(&lease).await.unwrap();
    if let Some(spec) = current.spec.as_mut() {
        spec.holder_identity = Some("usurper".to_owned());
        spec.lease_duration_seconds = Some(3600);
        spec.renew_time = Some(MicroTime(k8s_openapi::jiff::Timestamp::now()));
    }
    leases
        .replace(&lease, &Default::default(), &current)
        .await
        .unwrap();

    let result = tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(result, Err(LeaderError::Lost { .. })),
        "{result:?}"
    );
    assert_eq!(
        running.load(Ordering::SeqCst),
        0,
        "controllers were stopped"
    );
    ns.delete().await;
}
