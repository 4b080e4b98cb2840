//! The project's controllers, run as child processes of a test against the test cluster.
//!
//! Full-stack tests (activator, platform operators, e2e) need every controller running.
//! They run the real binaries, built by cargo into the target directory, so what is tested
//! is what ships: flags, startup, readiness, shutdown. Each test process gets a stack of
//! its own, isolated from the rest of the shared cluster by
//!
//! - its own system namespaces (content store, ResolveSet ConfigMaps, leases), and
//! - a label selector `olmv1-test=<id>`: the controllers only see objects carrying that
//!   label, so tests must put [`Stack::labels`] on every top-level object they create (and
//!   the controllers copy labels down the chain they create).
//!
//! Each binary runs under a small shell watchdog that stops it when the test process goes
//! away, so no controller outlives the test run (a test binary exits without running
//! destructors of statics).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::PostParams;
use tokio::sync::OnceCell;

use crate::examples::{Examples, publish};
use crate::servers::{CraneRegistry, free_port, terminate, watched};
use crate::{apply_dir, client, install_crds, unique_name, wait_for};

/// The label key the stack's controllers select on.
pub const LABEL: &str = "olmv1-test";

/// How long a controller may take to report ready.
const READY_TIMEOUT: Duration = Duration::from_secs(90);

/// One of the project's controller binaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Component {
    /// `deppy-resolver run`: Catalogs and ActiveResolutions.
    DeppyResolver,
    /// `rukpak-core run`: Bundle unpacking and BundleDeployment pivots.
    RukpakCore,
    /// `plain-provisioner run`: plain+v0 bundles.
    PlainProvisioner,
    /// `registry-provisioner run`: registry+v1 bundles.
    RegistryProvisioner,
    /// `resolution-activator run`: ResolveSets and wrapper BundleDeployments.
    ResolutionActivator,
    /// `platform-operators run`: PlatformOperators and the aggregated ClusterOperator.
    PlatformOperators,
}

impl Component {
    /// Every component, in the order the flow uses them.
    pub const ALL: [Component; 6] = [
        Component::DeppyResolver,
        Component::RukpakCore,
        Component::PlainProvisioner,
        Component::RegistryProvisioner,
        Component::ResolutionActivator,
        Component::PlatformOperators,
    ];

    /// The binary's name.
    pub fn binary(self) -> &'static str {
        match self {
            Component::DeppyResolver => "deppy-resolver",
            Component::RukpakCore => "rukpak-core",
            Component::PlainProvisioner => "plain-provisioner",
            Component::RegistryProvisioner => "registry-provisioner",
            Component::ResolutionActivator => "resolution-activator",
            Component::PlatformOperators => "platform-operators",
        }
    }

    /// The arguments after the binary: `run`, the namespaces it needs and the selector.
    fn args(self, stack: &Stack, admin: &str) -> Vec<String> {
        let mut args = vec![
            "run".to_owned(),
            "--watch-selector".to_owned(),
            stack.selector(),
            "--admin-address".to_owned(),
            admin.to_owned(),
            "--system-namespace".to_owned(),
        ];
        match self {
            Component::DeppyResolver => args.push(stack.deppy_namespace.clone()),
            Component::RukpakCore => args.push(stack.rukpak_namespace.clone()),
            Component::PlainProvisioner | Component::RegistryProvisioner => {
                args.push(stack.rukpak_namespace.clone());
                // Drift the watches miss is found within a test's patience.
                args.extend(["--resync".to_owned(), "30s".to_owned()]);
                // The admission policy reads published identities where it is deployed.
                args.extend([
                    "--identity-namespace".to_owned(),
                    crate::ADMISSION_NAMESPACE.to_owned(),
                ]);
            }
            Component::ResolutionActivator => {
                args.push(stack.rukpak_namespace.clone());
                args.extend([
                    "--catalog-namespace".to_owned(),
                    stack.deppy_namespace.clone(),
                ]);
            }
            Component::PlatformOperators => args.push(stack.platform_namespace.clone()),
        }
        args
    }
}

/// A running process and where its admin server listens.
struct Running {
    watchdog: Child,
    admin: String,
}

/// Controllers running for one test process; see the module docs.
pub struct Stack {
    /// The value of the [`LABEL`] every object of this stack carries.
    pub id: String,
    /// RukPak's system namespace: content store, ResolveSet ConfigMaps, leases.
    pub rukpak_namespace: String,
    /// Deppy's system namespace: Catalog content.
    pub deppy_namespace: String,
    /// Platform Operators' system namespace.
    pub platform_namespace: String,
    /// `RELEASE_VERSION` given to platform-operators.
    pub release_version: String,
    log_dir: PathBuf,
    bin_dir: PathBuf,
    components: Vec<Component>,
    /// Extra environment of every component.
    env: Vec<(String, String)>,
    running: Mutex<BTreeMap<Component, Running>>,
    examples: OnceCell<ServedExamples>,
}

/// The sample catalog of `examples/`, served to one stack.
pub struct ServedExamples {
    /// The name of the Catalog (labelled for the stack) serving it.
    pub catalog: String,
    /// The published images.
    pub published: Examples,
    _registry: CraneRegistry,
}

impl Stack {
    /// The stack of this test process, started by the first caller with `components`
    /// (later callers must ask for the same set).
    pub async fn shared(components: &[Component]) -> &'static Stack {
        static STACK: OnceCell<Stack> = OnceCell::const_new();
        let stack = STACK.get_or_init(|| Stack::start(components)).await;
        let mut asked = components.to_vec();
        asked.sort();
        assert_eq!(
            asked, stack.components,
            "every test of a test binary must ask for the same components"
        );
        stack
    }

    /// Installs the CRDs and provisioner classes, creates the system namespaces and starts
    /// `components`, waiting until each one reports ready.
    pub async fn start(components: &[Component]) -> Stack {
        Self::start_with_env(components, &[]).await
    }

    /// [`Self::start`], with extra environment variables for every component (settings a
    /// test needs shorter than in production, such as `CERTIFICATE_VALIDITY`).
    pub async fn start_with_env(components: &[Component], env: &[(&str, &str)]) -> Stack {
        let id = unique_name("stack");
        let client = client().await;
        install_crds(&client).await;
        apply_dir(&client, "deploy/provisioner-classes").await;
        crate::install_admission(&client).await;
        let stack = Stack {
            rukpak_namespace: format!("rukpak-{id}"),
            deppy_namespace: format!("deppy-{id}"),
            platform_namespace: format!("platform-{id}"),
            release_version: "0.0.0-test".to_owned(),
            // `hack/test-integration` collects every stack's logs and process statistics
            // from OLMV1_STACK_DIR to check the budgets (`hack/process-budgets`).
            log_dir: std::env::var_os("OLMV1_STACK_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(std::env::temp_dir)
                .join(format!("olmv1-{id}")),
            bin_dir: bin_dir(),
            components: {
                let mut sorted = components.to_vec();
                sorted.sort();
                sorted.dedup();
                sorted
            },
            running: Mutex::new(BTreeMap::new()),
            examples: OnceCell::new(),
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            id,
        };
        for namespace in [
            &stack.rukpak_namespace,
            &stack.deppy_namespace,
            &stack.platform_namespace,
        ] {
            let ns: Namespace =
                serde_json::from_value(serde_json::json!({ "metadata": { "name": namespace } }))
                    .unwrap();
            Api::<Namespace>::all(client.clone())
                .create(&PostParams::default(), &ns)
                .await
                .unwrap_or_else(|err| panic!("failed to create namespace {namespace}: {err}"));
        }
        std::fs::create_dir_all(&stack.log_dir).unwrap();
        eprintln!(
            "testkit::stack {}: logs in {}",
            stack.id,
            stack.log_dir.display()
        );
        for component in stack.components.clone() {
            stack.launch(component);
        }
        for component in stack.components.clone() {
            stack.wait_ready(component).await;
        }
        stack
    }

    /// `{"olmv1-test": "<id>"}`: the labels every top-level object of a test must carry.
    pub fn labels(&self) -> serde_json::Value {
        serde_json::json!({ LABEL: self.id })
    }

    /// The label selector the controllers are started with.
    pub fn selector(&self) -> String {
        format!("{LABEL}={}", self.id)
    }

    /// The sample catalog, published once to a registry of this process and named in a
    /// Catalog carrying the stack's labels; Serving when this returns. Needs
    /// [`Component::DeppyResolver`] in the stack.
    pub async fn examples(&self) -> &ServedExamples {
        self.examples
            .get_or_init(|| async {
                let registry = CraneRegistry::start();
                let published = publish(&registry);
                let catalog = unique_name("examples");
                let client = client().await;
                let gvk = kube::api::GroupVersionKind::gvk("deppy.io", "v1alpha1", "Catalog");
                let api: Api<kube::api::DynamicObject> =
                    Api::all_with(client, &kube::api::ApiResource::from_gvk(&gvk));
                let object: kube::api::DynamicObject = serde_json::from_value(serde_json::json!({
                    "apiVersion": "deppy.io/v1alpha1", "kind": "Catalog",
                    "metadata": { "name": catalog, "labels": self.labels() },
                    "spec": { "source": { "image": { "ref": published.catalog } } },
                }))
                .unwrap();
                api.create(&PostParams::default(), &object).await.unwrap();
                wait_for(
                    &format!("Catalog {catalog} to serve"),
                    READY_TIMEOUT,
                    || async {
                        let current = api.get(&catalog).await.map_err(|e| e.to_string())?;
                        let conditions = &current.data["status"]["conditions"];
                        let serving = conditions
                            .as_array()
                            .into_iter()
                            .flatten()
                            .any(|c| c["type"] == "Serving" && c["status"] == "True");
                        if serving {
                            Ok(())
                        } else {
                            Err(format!("{conditions}\n{}", self.log_tails(20)))
                        }
                    },
                )
                .await;
                ServedExamples {
                    catalog,
                    published,
                    _registry: registry,
                }
            })
            .await
    }

    /// The last `lines` lines of every component's log, for failure messages.
    pub fn log_tails(&self, lines: usize) -> String {
        let mut out = String::new();
        for &component in &self.components {
            let text = self.logs(component);
            let tail: Vec<&str> = text.lines().rev().take(lines).collect();
            out.push_str(&format!("\n--- {} (last lines)\n", component.binary()));
            for line in tail.into_iter().rev() {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }

    /// Where `component`'s admin server (`/metrics`, `/livez`, `/readyz`) listens:
    /// `127.0.0.1:<port>`.
    pub fn admin_address(&self, component: Component) -> Option<String> {
        self.running
            .lock()
            .unwrap()
            .get(&component)
            .map(|running| running.admin.clone())
    }

    /// What `component` logged so far (all its runs).
    pub fn logs(&self, component: Component) -> String {
        std::fs::read_to_string(self.log_path(component)).unwrap_or_default()
    }

    /// Stops `component` (SIGTERM, as Kubernetes would) and waits for it to exit.
    pub fn stop(&self, component: Component) {
        let running = self.running.lock().unwrap().remove(&component);
        if let Some(mut running) = running {
            terminate(&mut running.watchdog);
        }
    }

    /// Stops `component` and starts it again, waiting until it is ready.
    pub async fn restart(&self, component: Component) {
        self.stop(component);
        self.launch(component);
        self.wait_ready(component).await;
    }

    fn log_path(&self, component: Component) -> PathBuf {
        self.log_dir.join(format!("{}.log", component.binary()))
    }

    /// Starts `component` under a watchdog that stops it (SIGTERM) when this test process
    /// or the watchdog itself is gone.
    fn launch(&self, component: Component) {
        let binary = self.bin_dir.join(component.binary());
        assert!(
            binary.is_file(),
            "{} is not built: run `cargo build --workspace --bins` (hack/test-integration does)",
            binary.display()
        );
        let admin = format!("127.0.0.1:{}", free_port());
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path(component))
            .unwrap();
        let watchdog = watched(&binary)
            .args(component.args(self, &admin))
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("RELEASE_VERSION", &self.release_version)
            .env("LOG_LEVEL", "info")
            .env("OLMV1_PROCESS_STATS", self.log_dir.join("processes.stats"))
            // Flags are explicit; inherited settings must not change what runs.
            .env_remove("WATCH_SELECTOR")
            .env_remove("SYSTEM_NAMESPACE")
            .env_remove("LEADER_ELECT")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|err| panic!("failed to start {}: {err}", binary.display()));
        self.running
            .lock()
            .unwrap()
            .insert(component, Running { watchdog, admin });
    }

    /// Polls `component`'s `/readyz` until it answers 200.
    async fn wait_ready(&self, component: Component) {
        let started = Instant::now();
        let mut relaunches = 0;
        loop {
            let admin = {
                let mut running = self.running.lock().unwrap();
                let process = running
                    .get_mut(&component)
                    .unwrap_or_else(|| panic!("{} is not running", component.binary()));
                if let Ok(Some(status)) = process.watchdog.try_wait() {
                    let logs = self.logs(component);
                    // The free port was taken between choosing and binding it: choose again.
                    if logs.matches("Address already in use").count() > relaunches {
                        relaunches += 1;
                        drop(running);
                        self.launch(component);
                        continue;
                    }
                    panic!(
                        "{} exited ({status}) before it was ready; its log:\n{logs}",
                        component.binary(),
                    );
                }
                process.admin.clone()
            };
            if readyz(&admin).await {
                return;
            }
            if started.elapsed() > READY_TIMEOUT {
                panic!(
                    "{} not ready after {READY_TIMEOUT:?}; its log:\n{}",
                    component.binary(),
                    self.logs(component)
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        let running = std::mem::take(&mut *self.running.lock().unwrap());
        for (_, mut process) in running {
            terminate(&mut process.watchdog);
        }
    }
}

/// Whether `GET http://<addr>/readyz` answers 200.
async fn readyz(addr: &str) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(Ok(mut stream)) =
        tokio::time::timeout(Duration::from_secs(2), tokio::net::TcpStream::connect(addr)).await
    else {
        return false;
    };
    let request = format!("GET /readyz HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    if stream.write_all(request.as_bytes()).await.is_err() {
        return false;
    }
    let mut response = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(2), stream.read_to_end(&mut response));
    let complete = matches!(read.await, Ok(Ok(_)));
    complete && (response.starts_with(b"HTTP/1.1 200") || response.starts_with(b"HTTP/1.0 200"))
}

/// Where the project's binaries are: `$OLMV1_BIN_DIR`, else the profile directory of the
/// target directory this test was built into (`<target>/debug/deps/<test>` -> `<target>/debug`).
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("OLMV1_BIN_DIR") {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap_or(Path::new("."));
    if deps.file_name().is_some_and(|name| name == "deps") {
        deps.parent().unwrap_or(deps).to_path_buf()
    } else {
        deps.to_path_buf()
    }
}
