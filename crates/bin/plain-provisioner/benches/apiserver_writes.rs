//! The API server's own write rate for what a plain install writes, with a trivial client:
//! the anchor for `hack/bench-flux`'s install rates (#48: "what the API server itself could do
//! on this machine, and how close ours comes").
//!
//! For each of N installs it applies (server-side apply, as the apply engine does) a Namespace
//! and then, at once, the four objects of `hack/bench-flux`'s workload into it: a ConfigMap, a
//! Secret, a ServiceAccount and a Service. Nothing is read, watched, unpacked or reported:
//! five writes per install, CONCURRENCY installs in flight, over one client (one HTTP/2
//! connection pool, as a controller has). Any refused write fails the run.
//!
//! ```text
//! KUBECONFIG=… cargo bench -p plain-provisioner --bench apiserver_writes -- \
//!     --installs N [--concurrency C] [--prefix P]
//! ```
//!
//! Prints one line: installs, concurrency, seconds, installs per second, writes per second.

use std::process::ExitCode;
use std::time::Instant;

use futures::stream::{self, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, Service, ServiceAccount};
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The field manager of every write.
const MANAGER: &str = "bench-apiserver-writes";

/// Writes per install: the namespace and its four objects.
const WRITES_PER_INSTALL: usize = 5;

struct Settings {
    installs: usize,
    concurrency: usize,
    prefix: String,
}

fn settings() -> Result<Option<Settings>, String> {
    let mut installs = None;
    let mut concurrency = 64;
    let mut prefix = "bench".to_owned();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--installs" => {
                installs = Some(number(&value("--installs")?)?);
            }
            "--concurrency" => concurrency = number(&value("--concurrency")?)?,
            "--prefix" => prefix = value("--prefix")?,
            // `cargo bench` adds `--bench` to every bench binary's arguments.
            "--bench" => {}
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(installs.map(|installs| Settings {
        installs,
        concurrency,
        prefix,
    }))
}

fn number(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{text} is not a positive number")),
    }
}

/// Applies one object by server-side apply, forcing ownership as the apply engine does.
async fn apply<K>(api: Api<K>, name: &str, object: Value) -> Result<(), String>
where
    K: Resource + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
    K::DynamicType: Default,
{
    let params = PatchParams::apply(MANAGER).force();
    api.patch(name, &params, &Patch::Apply(object))
        .await
        .map(drop)
        .map_err(|e| {
            format!(
                "applying {} {name} failed: {e}",
                K::kind(&K::DynamicType::default())
            )
        })
}

/// One install: the namespace first (its objects need it), then its four objects at once.
async fn install(client: Client, namespace: String) -> Result<(), String> {
    apply(
        Api::<Namespace>::all(client.clone()),
        &namespace,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
    )
    .await?;
    let ns = namespace.as_str();
    futures::try_join!(
        apply(
            Api::<ConfigMap>::namespaced(client.clone(), ns),
            "settings",
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "settings"}, "data": {"mode": "bench"}}),
        ),
        apply(
            Api::<Secret>::namespaced(client.clone(), ns),
            "credentials",
            json!({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "credentials"}, "stringData": {"token": "not-a-secret"}}),
        ),
        apply(
            Api::<ServiceAccount>::namespaced(client.clone(), ns),
            "operator",
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "operator"}}),
        ),
        apply(
            Api::<Service>::namespaced(client.clone(), ns),
            "metrics",
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "metrics"},
                   "spec": {"ports": [{"port": 8080}], "selector": {"app": "bench"}}}),
        ),
    )?;
    Ok(())
}

async fn run(settings: Settings) -> Result<(), String> {
    let client = Client::try_default()
        .await
        .map_err(|e| format!("no cluster to write to (KUBECONFIG): {e}"))?;
    let started = Instant::now();
    stream::iter(1..=settings.installs)
        .map(|i| install(client.clone(), format!("{}-{i}", settings.prefix)))
        .buffer_unordered(settings.concurrency)
        .try_collect::<Vec<()>>()
        .await?;
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{} installs, concurrency {}: {seconds:.2} s, {:.1} installs/s, {:.0} writes/s",
        settings.installs,
        settings.concurrency,
        settings.installs as f64 / seconds,
        (settings.installs * WRITES_PER_INSTALL) as f64 / seconds,
    );
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    match settings() {
        Ok(Some(settings)) => match run(settings).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("apiserver_writes: {message}");
                ExitCode::FAILURE
            }
        },
        // `cargo bench` over the workspace runs this without arguments or a cluster.
        Ok(None) => {
            eprintln!(
                "apiserver_writes: nothing measured; give --installs N [--concurrency C] [--prefix P] and a cluster in KUBECONFIG"
            );
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("apiserver_writes: {message}");
            ExitCode::from(2)
        }
    }
}
