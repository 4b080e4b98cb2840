//! `rukpak-core`: unpacks Bundles into the content store and drives BundleDeployment
//! pivots (`run`), uploads content for upload Bundles (`upload`), shows a revision waiting
//! for approval (`plan`) and rolls a BundleDeployment back (`rollback`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use kit::admin::Admin;
use kit::cli::{AdminArgs, ClientArgs, LeaderElectionArgs, TelemetryArgs};
use kit::metrics::ReconcileMetrics;
use rukpak_core::{bundle, deployment_bundles, error_chain, revisions_cli, upload};

/// RukPak's core: Bundle unpacking and BundleDeployment pivots.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    #[command(flatten)]
    client: ClientArgs,
    #[command(flatten)]
    telemetry: TelemetryArgs,

    /// Only handle Bundles and BundleDeployments matching this label selector (for
    /// sharding, or several instances on one cluster).
    #[arg(long, env = "WATCH_SELECTOR", global = true)]
    watch_selector: Option<String>,

    /// Namespace of the content store, and of the Secrets and ConfigMaps sources name.
    #[arg(
        long,
        env = "SYSTEM_NAMESPACE",
        default_value = "rukpak-system",
        global = true
    )]
    system_namespace: String,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the Bundle and BundleDeployment controllers.
    Run {
        #[command(flatten)]
        admin: AdminArgs,
        #[command(flatten)]
        leader: LeaderElectionArgs,
        /// Directory caching unpacked images by digest, so a digest is never pulled twice.
        #[arg(long, env = "IMAGE_CACHE_DIR")]
        image_cache_dir: Option<PathBuf>,
        /// Directory for temporary files while unpacking (image layers, file data past the
        /// in-memory budget, the normalised archive before it is stored); default: the
        /// system's temporary directory. Give it room for about twice the compressed size
        /// of the largest bundle.
        #[arg(long, env = "WORK_DIR")]
        work_dir: Option<PathBuf>,
        #[command(flatten)]
        source: content::cli::SourceArgs,
        /// At most this many Bundles are unpacked at once (0: no limit). An unpack counts
        /// for at most 10 s and nothing waits longer than 10 s for a place, so sources that
        /// never answer cannot hold up other Bundles.
        #[arg(long, env = "MAX_CONCURRENT_UNPACKS", default_value_t = bundle::DEFAULT_CONCURRENT_UNPACKS)]
        max_concurrent_unpacks: u16,
    },
    /// Print the revision of a BundleDeployment waiting for approval
    /// (`upgradeApproval: Manual`) and what applying it would change.
    Plan {
        /// The BundleDeployment.
        bundle_deployment: String,
    },
    /// Point a BundleDeployment back at an earlier revision; its stored content is applied
    /// without fetching anything.
    Rollback {
        /// The BundleDeployment.
        bundle_deployment: String,
        /// The revision to return to (see `kubectl get bundles`); default: the newest
        /// earlier revision that was healthy.
        #[arg(long)]
        to_revision: Option<i64>,
    },
    /// Upload a directory or a tar.gz as the content of a Bundle whose source is `upload`.
    Upload {
        /// The Bundle.
        bundle: String,
        /// A directory (its contents become the bundle root) or a .tar.gz file.
        path: PathBuf,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    if let Err(err) = kit::telemetry::init(&args.telemetry) {
        eprintln!("rukpak-core: {}", error_chain(&err));
        return ExitCode::FAILURE;
    }
    let result = match args.command {
        Command::Run {
            ref admin,
            ref leader,
            ref image_cache_dir,
            ref work_dir,
            ref source,
            max_concurrent_unpacks,
        } => {
            run(
                &args,
                admin,
                leader,
                source.content_sweep_interval,
                max_concurrent_unpacks,
                content::source::UnpackOptions {
                    image_cache_dir: image_cache_dir.clone(),
                    work_dir: work_dir.clone(),
                    ..source.unpack_options()
                },
            )
            .await
        }
        Command::Upload {
            ref bundle,
            ref path,
        } => upload_command(&args, bundle, path.clone()).await,
        Command::Plan {
            ref bundle_deployment,
        } => plan_command(&args, bundle_deployment).await,
        Command::Rollback {
            ref bundle_deployment,
            to_revision,
        } => {
            async {
                let client = args.client.client().await.map_err(|e| error_chain(&e))?;
                let done = revisions_cli::rollback(&client, bundle_deployment, to_revision).await?;
                println!("{done}");
                Ok(())
            }
            .await
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("rukpak-core: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn plan_command(args: &Args, deployment: &str) -> Result<(), String> {
    let client = args.client.client().await.map_err(|e| error_chain(&e))?;
    let found = kube::Api::<rukpak_api::BundleDeployment>::all(client)
        .get_opt(deployment)
        .await
        .map_err(|e| error_chain(&e))?
        .ok_or_else(|| format!("BundleDeployment {deployment} not found"))?;
    print!("{}", revisions_cli::plan_text(&found));
    Ok(())
}

async fn upload_command(args: &Args, bundle: &str, path: PathBuf) -> Result<(), String> {
    let client = args.client.client().await.map_err(|e| error_chain(&e))?;
    let stored = upload::upload(
        &client,
        &args.system_namespace,
        bundle,
        path,
        &content::Limits::default(),
    )
    .await
    .map_err(|e| error_chain(&e))?;
    println!(
        "uploaded {} ({} bytes, {} chunks) for Bundle {bundle}",
        stored.digest, stored.size, stored.chunks
    );
    Ok(())
}

async fn run(
    args: &Args,
    admin_args: &AdminArgs,
    leader: &LeaderElectionArgs,
    sweep_interval: std::time::Duration,
    concurrent_unpacks: u16,
    options: content::source::UnpackOptions,
) -> Result<(), String> {
    let client = args.client.client().await.map_err(|e| error_chain(&e))?;
    let admin = Admin::new();
    let reconciles =
        ReconcileMetrics::register(&admin.registry, "rukpak_core").map_err(|e| error_chain(&e))?;
    let unpacks = bundle::UnpackMetrics::register(&admin.registry).map_err(|e| error_chain(&e))?;
    let namespace = args.system_namespace.clone();
    let readiness = admin.readiness.clone();
    let selector = args.watch_selector.clone();
    kit::serve::controllers(
        &admin,
        admin_args.address,
        client.clone(),
        leader,
        "rukpak-core",
        &args.system_namespace,
        |token| async move {
            let bundles = Arc::new(
                bundle::Context::new(
                    client.clone(),
                    &namespace,
                    options,
                    reconciles.clone(),
                    unpacks,
                    selector.clone(),
                )
                .with_sweep_interval(sweep_interval)
                .with_concurrent_unpacks(concurrent_unpacks),
            );
            let deployments = Arc::new(deployment_bundles::Context::new(
                client, reconciles, selector,
            ));
            tokio::join!(
                bundle::run(bundles, &readiness, token.clone()),
                deployment_bundles::run(deployments, &readiness, token),
            );
        },
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Args::command().debug_assert();
    }

    #[test]
    fn shared_flags_work_before_and_after_the_subcommand() {
        for argv in [
            ["rukpak-core", "--log-level", "warn", "run"],
            ["rukpak-core", "run", "--log-level", "warn"],
        ] {
            let args = Args::try_parse_from(argv).unwrap();
            assert_eq!(args.telemetry.log_level, "warn");
            assert!(matches!(args.command, Command::Run { .. }));
        }
    }
}
