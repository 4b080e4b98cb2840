//! `kubectl olm`: find, install and uninstall operators. A kubectl plugin: copy the
//! `kubectl-olm` binary onto `PATH` and kubectl finds it.
//!
//! - `search`, `show` and `upgrades` read catalogs given on the command line (`--catalog
//!   DIR` or a catalog image), so a catalog can be checked before it is published, or,
//!   without `--catalog`, the cluster's catalogs through the catalog query API (online.rs);
//! - `catalogs`, `install`, `status`, `plan`, `approve` and `uninstall` talk to the cluster with the kubeconfig, as the
//!   user (so RBAC and the admission policies decide what they may do).
//!
//! Exit codes, for scripts: 0 done or found, 1 nothing found (no package matched, the
//! package or version is in no catalog, the PlatformOperator does not exist), 2 invalid
//! input or a refusal (arguments, a catalog that does not load, the API server refusing),
//! 3 the cluster unreachable or an internal failure. Results go to stdout, messages to
//! stderr.

mod approval;
mod catalogs;
mod cluster;
mod online;
mod output;
mod search;
mod show;
mod status;
mod upgrades;

use std::io::Write as _;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use catalogs::{CatalogArg, parse_catalog};
use output::Format;

/// Find operators in file-based catalogs (which packages there are, their channels,
/// versions, deprecations and upgrade graph), and install and uninstall them.
#[derive(Debug, Parser)]
#[command(name = "kubectl olm", bin_name = "kubectl olm", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The catalogs to read and how to print.
#[derive(Debug, clap::Args)]
struct Common {
    /// A file-based catalog: a directory, or a catalog image (its /configs); shown as NAME
    /// (default: the directory's or the repository's name). Repeat for several. Without
    /// it, the cluster's served Catalogs are read through the catalog query API.
    #[arg(long = "catalog", value_name = "DIR|IMAGE[=NAME]", value_parser = parse_catalog)]
    catalogs: Vec<CatalogArg>,

    #[command(flatten)]
    cluster: cluster::ClusterArgs,

    #[command(flatten)]
    api: online::ApiArgs,

    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Table)]
    output: Format,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The packages whose name or description holds every word (none: every package).
    Search {
        /// Words to look for, case-insensitive.
        words: Vec<String>,
        #[command(flatten)]
        common: Common,
    },
    /// A package's channels, versions, deprecations and upgrade graph, in every catalog
    /// that has it.
    Show {
        /// The package name.
        package: String,
        #[command(flatten)]
        common: Common,
    },
    /// What an installed version of a package can upgrade to along the catalog's upgrade
    /// graph, in one step and in several; for a PlatformOperator (no `--from`), what it
    /// runs, what it may reach, and what its controllers say about moving.
    Upgrades {
        /// The package name with `--from`; else a PlatformOperator's name.
        package: String,
        /// The installed version (default: what the PlatformOperator named PACKAGE runs).
        #[arg(long, value_name = "VERSION")]
        from: Option<String>,
        /// Only follow this channel's upgrade edges.
        #[arg(long)]
        channel: Option<String>,
        #[command(flatten)]
        common: Common,
    },
    /// The cluster's Catalogs: their source and whether deppy-resolver serves them.
    Catalogs {
        #[command(flatten)]
        cluster: cluster::ClusterArgs,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t = Format::Table)]
        output: Format,
    },
    /// Install an operator: create a PlatformOperator for the package (cluster
    /// administrators only).
    Install {
        #[command(flatten)]
        install: cluster::InstallArgs,
        #[command(flatten)]
        cluster: cluster::ClusterArgs,
    },
    /// What a PlatformOperator made, as a tree with the health of each part: its
    /// ActiveResolution, BundleDeployments and the operator's workloads.
    Status {
        /// The PlatformOperator (default: every one).
        name: Option<String>,
        #[command(flatten)]
        cluster: cluster::ClusterArgs,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t = Format::Table)]
        output: Format,
    },
    /// The revisions waiting for approval under a PlatformOperator (or a BundleDeployment)
    /// with `upgradeApproval: Manual`: what each would add, change, remove and grant.
    Plan {
        /// The PlatformOperator or BundleDeployment.
        name: String,
        #[command(flatten)]
        cluster: cluster::ClusterArgs,
    },
    /// Approve a revision waiting under a PlatformOperator (or a BundleDeployment): exactly
    /// the digest given, or the only one waiting.
    Approve {
        /// The PlatformOperator or BundleDeployment.
        name: String,
        /// The content digest to approve, as `plan` shows it.
        #[arg(long, value_name = "sha256:...")]
        digest: Option<String>,
        #[command(flatten)]
        cluster: cluster::ClusterArgs,
    },
    /// Uninstall an operator: delete its PlatformOperator (what it installed goes with it;
    /// CRDs that hold custom resources stay).
    Uninstall {
        /// The PlatformOperator.
        name: String,
        #[command(flatten)]
        cluster: cluster::ClusterArgs,
    },
    /// Print a shell completion script, e.g. `kubectl olm completion bash > /etc/bash_completion.d/kubectl-olm`.
    Completion {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// Exit code: nothing found.
const NOT_FOUND: u8 = 1;
/// Exit code: invalid input.
const INVALID: u8 = 2;
/// Exit code: an internal failure.
const INTERNAL: u8 = 3;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(Done { stdout, code }) => {
            if std::io::stdout().write_all(stdout.as_bytes()).is_err() {
                // A closed pipe (`| head`): nothing more to say.
                return ExitCode::SUCCESS;
            }
            ExitCode::from(code)
        }
        Err((code, message)) => {
            eprintln!("kubectl olm: {message}");
            ExitCode::from(code)
        }
    }
}

/// What a command printed and its exit code.
struct Done {
    stdout: String,
    code: u8,
}

fn run(command: Command) -> Result<Done, (u8, String)> {
    match command {
        Command::Search { words, common } => {
            let (found, names) = if common.catalogs.is_empty() {
                on_cluster(async {
                    let api = connect(&common).await?;
                    Ok((api.search(&words).await?, names(&api.names())))
                })?
            } else {
                let catalogs = catalogs::load(&common.catalogs).map_err(|m| (INVALID, m))?;
                (search::search(&catalogs, &words), loaded_names(&catalogs))
            };
            if found.is_empty() && common.output == Format::Table {
                return Err((
                    NOT_FOUND,
                    format!("no package in {names} matches {}", quoted(&words)),
                ));
            }
            let code = if found.is_empty() { NOT_FOUND } else { 0 };
            let stdout = match output::structured(common.output, &found) {
                Some(text) => text.map_err(|m| (INTERNAL, m))?,
                None => output::search_table(&found),
            };
            Ok(Done { stdout, code })
        }
        Command::Show { package, common } => {
            let (catalogs, names) = catalogs_with(&common, &package)?;
            let views = show::show(&catalogs, &package);
            if views.is_empty() {
                return Err((
                    NOT_FOUND,
                    format!(
                        "package {package} is in none of {names}; look for it with `kubectl olm search {package}`"
                    ),
                ));
            }
            let stdout = match output::structured(common.output, &views) {
                Some(text) => text.map_err(|m| (INTERNAL, m))?,
                None => output::show_text(&views),
            };
            Ok(Done { stdout, code: 0 })
        }
        Command::Upgrades {
            package,
            from,
            channel,
            common,
        } => {
            let Some(from) = from else {
                return installed_upgrades(&package, channel.as_deref(), &common);
            };
            let found = upgrades_in(&common, &package, &from, channel.as_deref())?;
            let stdout = match output::structured(common.output, &found) {
                Some(text) => text.map_err(|m| (INTERNAL, m))?,
                None => output::upgrades_text(&found),
            };
            Ok(Done { stdout, code: 0 })
        }
        Command::Catalogs { cluster, output } => {
            let rows = on_cluster(async { cluster::catalogs(cluster.client().await?).await })?;
            if rows.is_empty() && output == Format::Table {
                return Err((
                    NOT_FOUND,
                    "the cluster has no Catalog (or none you may list)".to_owned(),
                ));
            }
            let code = if rows.is_empty() { NOT_FOUND } else { 0 };
            let stdout = match output::structured(output, &rows) {
                Some(text) => text.map_err(|m| (INTERNAL, m))?,
                None => output::catalogs_table(&rows),
            };
            Ok(Done { stdout, code })
        }
        Command::Install { install, cluster } => {
            let created =
                on_cluster(async { cluster::install(cluster.client().await?, &install).await })?;
            let name = created.metadata.name.unwrap_or_default();
            Ok(Done {
                stdout: format!(
                    "platformoperator/{name} created: installing package {}; follow it with `kubectl get platformoperator {name} -w`\n",
                    install.package
                ),
                code: 0,
            })
        }
        Command::Status {
            name,
            cluster,
            output,
        } => {
            let trees = on_cluster(async {
                status::status(cluster.client().await?, name.as_deref()).await
            })?;
            let stdout = match output::structured(output, &trees) {
                Some(text) => text.map_err(|m| (INTERNAL, m))?,
                None => status::tree_text(&trees),
            };
            Ok(Done { stdout, code: 0 })
        }
        Command::Plan { name, cluster } => {
            let stdout =
                on_cluster(async { approval::plan(cluster.client().await?, &name).await })?;
            Ok(Done { stdout, code: 0 })
        }
        Command::Approve {
            name,
            digest,
            cluster,
        } => {
            let stdout = on_cluster(async {
                approval::approve(cluster.client().await?, &name, digest.as_deref()).await
            })?;
            Ok(Done { stdout, code: 0 })
        }
        Command::Uninstall { name, cluster } => {
            on_cluster(async { cluster::uninstall(cluster.client().await?, &name).await })?;
            Ok(Done {
                stdout: format!(
                    "platformoperator/{name} deleted: its operator is being uninstalled\n"
                ),
                code: 0,
            })
        }
        Command::Completion { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "kubectl-olm", &mut script);
            let stdout = String::from_utf8(script).map_err(|err| (INTERNAL, err.to_string()))?;
            Ok(Done { stdout, code: 0 })
        }
    }
}

/// Runs a cluster command to its end on a runtime of this thread.
fn on_cluster<T>(
    command: impl std::future::Future<Output = Result<T, cluster::Failure>>,
) -> Result<T, (u8, String)> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| (INTERNAL, format!("cannot start: {err}")))?;
    runtime.block_on(command)
}

/// `upgrades NAME` for a PlatformOperator: its running version's upgrades in the catalogs
/// (the cluster's, or `--catalog`), following its channel, with its `Progressing` words.
fn installed_upgrades(
    name: &str,
    channel: Option<&str>,
    common: &Common,
) -> Result<Done, (u8, String)> {
    let platform_operator = on_cluster(async {
        let client = common.cluster.client().await?;
        kube::Api::<platform_api::PlatformOperator>::all(client)
            .get(name)
            .await
            .map_err(|err| cluster::failure(&format!("read PlatformOperator {name}"), err))
    })?;
    let mut installed = upgrades::installed_of(&platform_operator).map_err(|m| (NOT_FOUND, m))?;
    let channel = channel
        .map(str::to_owned)
        .or_else(|| installed.channel.clone());
    installed.upgrades = upgrades_in(
        common,
        &installed.package,
        &installed.version,
        channel.as_deref(),
    )?;
    let stdout = match output::structured(common.output, &installed) {
        Some(text) => text.map_err(|m| (INTERNAL, m))?,
        None => output::installed_text(&installed),
    };
    Ok(Done { stdout, code: 0 })
}

/// The catalog query API, reached with the cluster flags of `common`.
async fn connect(common: &Common) -> Result<online::CatalogApi, cluster::Failure> {
    // Through the API server, --as works as for any request; straight to the API, the
    // token's own user reads.
    if common.api.direct() && common.cluster.impersonates() {
        return Err((
            INVALID,
            "--as cannot be used with --catalog-api or --token, which read catalogs as the token's own user; leave them out to read through the API server as that user".to_owned(),
        ));
    }
    let (client, token) = common.cluster.connect().await?;
    online::CatalogApi::connect(client, token, &common.api).await
}

/// The catalogs that `show` and `upgrades` read: those given with `--catalog`, or, without
/// it, the cluster's served catalogs that have `package` (only its blobs are fetched); and
/// their names for messages.
fn catalogs_with(
    common: &Common,
    package: &str,
) -> Result<(Vec<catalogs::Catalog>, String), (u8, String)> {
    if common.catalogs.is_empty() {
        return on_cluster(async {
            let api = connect(common).await?;
            let names = names(&api.names());
            Ok((api.package(package).await?, names))
        });
    }
    let catalogs = catalogs::load(&common.catalogs).map_err(|m| (INVALID, m))?;
    let names = loaded_names(&catalogs);
    Ok((catalogs, names))
}

/// The upgrades of `package` at `from`: computed here from `--catalog`, or asked of the
/// catalog query API's `upgrades` path for the cluster's catalogs.
fn upgrades_in(
    common: &Common,
    package: &str,
    from: &str,
    channel: Option<&str>,
) -> Result<Vec<upgrades::Upgrades>, (u8, String)> {
    if !common.catalogs.is_empty() {
        let catalogs = catalogs::load(&common.catalogs).map_err(|m| (INVALID, m))?;
        return upgrades::upgrades(&catalogs, package, from, channel).map_err(|m| (NOT_FOUND, m));
    }
    let version = upgrades::parse_version(from).map_err(|m| (NOT_FOUND, m))?;
    on_cluster(async {
        let api = connect(common).await?;
        let found = api.upgrades(package, &version, channel).await?;
        if found.is_empty() {
            return Err((
                NOT_FOUND,
                format!(
                    "no served catalog has version {version} of package {package}, so nothing is known of its upgrades; list its versions with `kubectl olm show {package}`"
                ),
            ));
        }
        Ok(found)
    })
}

/// The names of loaded catalogs, for messages.
fn loaded_names(catalogs: &[catalogs::Catalog]) -> String {
    names(&catalogs.iter().map(|c| c.name.as_str()).collect::<Vec<_>>())
}

/// `catalog a` or `catalogs a, b`, for messages.
fn names(names: &[&str]) -> String {
    match names {
        [one] => format!("catalog {one}"),
        more => format!("catalogs {}", more.join(", ")),
    }
}

/// The words as typed, for messages.
fn quoted(words: &[String]) -> String {
    if words.is_empty() {
        return "anything".to_owned();
    }
    words
        .iter()
        .map(|w| format!("{w:?}"))
        .collect::<Vec<_>>()
        .join(" and ")
}
