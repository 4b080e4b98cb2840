//! The `registry-provisioner` binary.
//!
//! Subcommands:
//! - `run`: installs registry+v1 bundles for BundleDeployments whose ProvisionerClass names
//!   the `core-rukpak-io-registry` provisioner, with the shared apply engine.
//! - `render`: converts a bundle directory offline and prints the objects as YAML.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use provisioner::run::RunArgs;
use registry_provisioner::{
    CertProvider, DeploymentConfig, Options, RegistryFormat, SelectorPolicy, render,
};

/// Installs OLM registry+v1 operator bundles, or renders them offline.
#[derive(Debug, Parser)]
#[command(name = "registry-provisioner", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the provisioner for the `core-rukpak-io-registry` class against a cluster.
    Run(Box<RegistryRunArgs>),
    /// Convert a bundle directory (manifests/, metadata/annotations.yaml) into the objects
    /// that would be installed, printed as a YAML stream on stdout; no cluster needed.
    ///
    /// Exits 0 on success; prints the error (naming the bundle file) on stderr and exits 1
    /// when the bundle cannot be converted.
    Render(RenderArgs),
}

/// Options of `registry-provisioner run`.
#[derive(Debug, Args)]
struct RegistryRunArgs {
    #[command(flatten)]
    run: RunArgs,

    #[command(flatten)]
    webhooks: WebhookArgs,
}

/// How webhooks are rendered, shared by `run` and `render`.
#[derive(Debug, Args)]
struct WebhookArgs {
    /// Who makes the serving certificates of webhooks and API services when the
    /// ProvisionerClass's `spec.parameters.certificateProvider` names none: `builtin` (a CA
    /// per BundleDeployment, nothing else needed), `cert-manager` or `service-ca`
    /// (OpenShift).
    #[arg(long, env = "CERT_PROVIDER", default_value = "builtin")]
    cert_provider: CertProvider,

    /// What becomes of an admission webhook whose rules reach the objects the cluster keeps
    /// in the protected namespaces, when neither the BundleDeployment
    /// (`spec.config.webhookNamespaceSelector`) nor its class chooses: `exclude-protected`
    /// (its namespaceSelector also excludes them) or `as-written` (the vendor's selector,
    /// as OLM renders it).
    #[arg(
        long,
        env = "WEBHOOK_NAMESPACE_SELECTOR",
        default_value = "exclude-protected"
    )]
    webhook_namespace_selector: SelectorPolicy,

    /// Namespaces to keep webhooks out of besides kube-system, kube-node-lease and the
    /// installer's own, comma-separated.
    #[arg(
        long,
        env = "PROTECTED_NAMESPACES",
        value_name = "A,B",
        value_delimiter = ','
    )]
    protected_namespaces: Vec<String>,
}

impl WebhookArgs {
    /// The protected namespaces: the installer's own, then the listed ones.
    fn protected_namespaces(&self, system_namespace: &str) -> Vec<String> {
        std::iter::once(system_namespace.to_owned())
            .chain(self.protected_namespaces.iter().cloned())
            .collect()
    }
}

/// Options of `registry-provisioner render`.
#[derive(Debug, Args)]
struct RenderArgs {
    /// The bundle directory (holding manifests/ and metadata/annotations.yaml).
    bundle_dir: PathBuf,

    /// The install namespace (default: the CSV's suggested namespace, else
    /// `<package>-system`).
    #[arg(long, value_name = "NS")]
    install_namespace: Option<String>,

    /// The namespaces the operator watches, comma-separated (default: all namespaces when
    /// the CSV supports it, else the install namespace). An empty value means all
    /// namespaces.
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    target_namespaces: Vec<String>,

    /// A file holding the deployment config (what a BundleDeployment's
    /// `spec.config.deploymentConfig` holds: OLM v0's `Subscription.spec.config` fields),
    /// as YAML or JSON, applied to every Deployment of the bundle.
    #[arg(long, value_name = "FILE")]
    deployment_config: Option<PathBuf>,

    #[command(flatten)]
    webhooks: WebhookArgs,

    /// The installer's namespace, which webhooks are kept out of (as
    /// `run --system-namespace`).
    #[arg(long, default_value = "rukpak-system")]
    system_namespace: String,
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Run(args) => {
            let format = RegistryFormat {
                cert_provider: args.webhooks.cert_provider,
                protected_namespaces: args
                    .webhooks
                    .protected_namespaces(&args.run.system_namespace),
                selector_policy: args.webhooks.webhook_namespace_selector,
            };
            args.run.run("registry-provisioner", format)
        }
        Command::Render(args) => args.run(),
    }
}

impl RenderArgs {
    fn run(self) -> ExitCode {
        match self.render() {
            Ok(yaml) => {
                let mut stdout = std::io::stdout().lock();
                if let Err(err) = stdout
                    .write_all(yaml.as_bytes())
                    .and_then(|()| stdout.flush())
                {
                    eprintln!("registry-provisioner: failed to write the objects: {err}");
                    return ExitCode::FAILURE;
                }
                ExitCode::SUCCESS
            }
            Err(message) => {
                eprintln!(
                    "registry-provisioner: failed to render bundle {}: {message}",
                    self.bundle_dir.display()
                );
                ExitCode::FAILURE
            }
        }
    }

    /// The objects as YAML, after telling stderr what was adjusted.
    fn render(&self) -> Result<String, String> {
        let files = render::read_dir(&self.bundle_dir).map_err(|e| kit::report::error_chain(&e))?;
        let deployment_config = match &self.deployment_config {
            None => None,
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|err| format!("failed to read file {}: {err}", path.display()))?;
                DeploymentConfig::from_yaml(&text).map_err(|message| {
                    format!(
                        "failed to read the deployment config {}: {message}",
                        path.display()
                    )
                })?
            }
        };
        let options = Options {
            install_namespace: self.install_namespace.clone(),
            target_namespaces: self.target_namespaces.clone(),
            deployment_config,
            cert_provider: self.webhooks.cert_provider,
            protected_namespaces: self.webhooks.protected_namespaces(&self.system_namespace),
            webhook_namespace_selector: Some(self.webhooks.webhook_namespace_selector),
        };
        let conversion = registry_provisioner::conversion(
            files
                .iter()
                .map(|(path, bytes)| (path.as_str(), bytes.as_slice())),
            &options,
        )
        .map_err(|e| kit::report::error_chain(&e))?;
        let yaml =
            render::to_yaml(&conversion.objects).map_err(|e| kit::report::error_chain(&e))?;
        for adjustment in &conversion.adjustments {
            eprintln!("registry-provisioner: adjusted: {adjustment}");
        }
        Ok(yaml)
    }
}
