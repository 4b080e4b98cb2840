//! The API server's audit log of the local control plane: who sent which request, for
//! tests that count requests (idle budgets, retries that must back off).
//!
//! `hack/cluster` runs kube-apiserver with a Metadata-level audit policy writing
//! `audit.log` next to the cluster's kubeconfig; every controller sends the user agent
//! `<binary>/<version>`.

use std::io::BufRead;
use std::path::PathBuf;
use std::str::FromStr;

use k8s_openapi::jiff::Timestamp;

/// One audited request.
#[derive(Debug, Clone)]
pub struct Request {
    /// When the API server received it.
    pub at: Timestamp,
    /// The user agent, e.g. `rukpak-core/0.1.0`.
    pub user_agent: String,
    /// The verb (`get`, `list`, `patch`, ...).
    pub verb: String,
    /// The name of the object it was about, if any.
    pub name: Option<String>,
    /// The resource (plural) it was about, if any.
    pub resource: Option<String>,
}

/// The audit log of the cluster in `KUBECONFIG`; panics with what to do when there is none.
pub fn log_path() -> PathBuf {
    let kubeconfig = std::env::var_os("KUBECONFIG").expect("KUBECONFIG names the test cluster");
    let log = PathBuf::from(kubeconfig).with_file_name("audit.log");
    assert!(
        log.is_file(),
        "no audit log at {}: run against a cluster of hack/cluster, which audits every request",
        log.display()
    );
    log
}

/// Every audited request received in `[from, to]`.
pub fn requests(from: Timestamp, to: Timestamp) -> Vec<Request> {
    let file = std::fs::File::open(log_path()).expect("the audit log is readable");
    let mut found = Vec::new();
    for line in std::io::BufReader::new(file).lines().map_while(Result::ok) {
        let Ok(event) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        let Some(at) = event["requestReceivedTimestamp"]
            .as_str()
            .and_then(|t| Timestamp::from_str(t).ok())
        else {
            continue;
        };
        if at < from || at > to {
            continue;
        }
        let text = |value: &serde_json::Value| value.as_str().map(str::to_owned);
        found.push(Request {
            at,
            user_agent: text(&event["userAgent"]).unwrap_or_default(),
            verb: text(&event["verb"]).unwrap_or_default(),
            name: text(&event["objectRef"]["name"]),
            resource: text(&event["objectRef"]["resource"]),
        });
    }
    found
}
