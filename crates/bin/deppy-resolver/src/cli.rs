//! The command line: a clap app with one subcommand per mode. `resolve` works offline on
//! catalog directories; `run` runs the controllers (see [`crate::run`]).
//!
//! Exit codes of `resolve`: 0 resolved (selections on stdout), 1 not satisfiable (explanation
//! on stderr), 2 invalid input (arguments, catalogs, ranges, versions), 3 internal failure.

use std::error::Error;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand, ValueEnum};
use deppy_resolver::{
    Constraint, ErrorCategory, KubeVersion, NamedCatalog, Request, Resolution, ResolveError,
    Resolver, Stats,
};
use fbc::{CatalogIndex, Detail};
use serde_json::{Value, json};

const EXIT_UNSATISFIABLE: u8 = 1;
const EXIT_INVALID_INPUT: u8 = 2;
const EXIT_INTERNAL: u8 = 3;

/// Deppy's resolver: OLM dependency resolution over file-based catalogs.
#[derive(Debug, Parser)]
#[command(name = "deppy-resolver", version)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Resolve constraints against catalog directories on disk, without a cluster.
    ///
    /// Prints one selection (catalog:package:version:channel) per line and exits 0; prints
    /// why the constraints cannot be satisfied to stderr and exits 1; exits 2 on invalid
    /// input.
    Resolve(ResolveArgs),
    /// Run the Catalog and ActiveResolution controllers against a cluster.
    Run(Box<crate::run::RunArgs>),
}

impl Cli {
    /// Runs the chosen subcommand.
    pub(crate) fn run(self) -> ExitCode {
        match self.command {
            Command::Resolve(args) => args.run(),
            Command::Run(args) => args.run(),
        }
    }
}

#[derive(Debug, Args)]
struct ResolveArgs {
    /// A file-based catalog directory. NAME (default: the directory's base name) is the
    /// catalog part of selections; PRIORITY (default 0) prefers one catalog's bundles over
    /// another's when they are otherwise equal. Repeatable.
    #[arg(
        long = "catalog",
        value_name = "DIR[=NAME[,PRIORITY]]",
        required = true,
        value_parser = parse_catalog
    )]
    catalogs: Vec<CatalogArg>,

    /// A package to select, optionally limited to a version range (no commas; use spaces to
    /// combine comparators) and a channel. Repeatable.
    #[arg(long = "require", value_name = "PACKAGE[,RANGE[,CHANNEL]]", value_parser = parse_require)]
    required: Vec<Constraint>,

    /// A package, or a version range of it, that must not be selected. Repeatable.
    #[arg(long = "prohibit", value_name = "PACKAGE[,RANGE]", value_parser = parse_prohibit)]
    prohibited: Vec<Constraint>,

    /// An installed package: only that version or a direct upgrade of it (a bundle that
    /// replaces or skips it, or whose skipRange contains it) is selected. When nothing can be,
    /// the explanation starts with the versions the upgrade graph allows. Repeatable.
    #[arg(long = "installed", value_name = "PACKAGE=VERSION", value_parser = parse_installed)]
    installed: Vec<Constraint>,

    /// A package whose upgrades the administrator certifies: its upgrade graph does not
    /// apply, so any version in the required range may be selected, downgrades included.
    /// Its --installed entry (or installed(...) constraint) is ignored. Repeatable.
    #[arg(long = "self-certified", value_name = "PACKAGE")]
    self_certified: Vec<String>,

    /// The cluster's Kubernetes version (e.g. 1.36.4 or v1.36.4): bundles whose CSV
    /// minKubeVersion is newer are not selected. Without it, minKubeVersion is not checked.
    #[arg(long = "kube-version", value_name = "VERSION")]
    kube_version: Option<KubeVersion>,

    /// A constraint in function form, e.g. 'required("etcd", ">=0.9.0", "stable")' or
    /// 'gvkRequired("etcd.database.coreos.com", "v1beta2", "EtcdCluster")'. Repeatable.
    #[arg(long = "constraint", value_name = "EXPRESSION")]
    expressions: Vec<Constraint>,

    /// How to print the result.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    output: Output,

    /// Also print where the time went, as one line on standard error:
    /// `load_s=… build_s=… solve_s=…` (loading the catalogs, building the problem,
    /// solving). For benchmarks: hack/bench-deppy reads the same line from upstream deppy.
    #[arg(long)]
    timings: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Output {
    /// One selection per line.
    Text,
    /// A JSON document with selections (including bundle names and images) and statistics.
    Json,
}

/// A `--catalog` argument.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CatalogArg {
    dir: PathBuf,
    name: Option<String>,
    priority: i32,
}

fn parse_catalog(text: &str) -> Result<CatalogArg, String> {
    let (dir, rest) = match text.split_once('=') {
        Some((dir, rest)) => (dir, Some(rest)),
        None => (text, None),
    };
    if dir.is_empty() {
        return Err("the directory is empty".to_owned());
    }
    let (name, priority) = match rest.map(|rest| rest.split_once(',').unwrap_or((rest, ""))) {
        None => (None, 0),
        Some((name, priority)) => {
            let priority = match priority.trim() {
                "" => 0,
                number => number
                    .parse()
                    .map_err(|_| format!("priority {number:?} is not a 32-bit integer"))?,
            };
            let name = Some(name.trim()).filter(|n| !n.is_empty());
            (name.map(str::to_owned), priority)
        }
    };
    Ok(CatalogArg {
        dir: PathBuf::from(dir),
        name,
        priority,
    })
}

/// Splits `PACKAGE[,A[,B]]`, trimming each part; empty optional parts are absent.
fn split_package(text: &str, parts: usize) -> Result<Vec<Option<&str>>, String> {
    let mut fields: Vec<Option<&str>> = text
        .splitn(parts, ',')
        .map(|field| Some(field.trim()).filter(|f| !f.is_empty()))
        .collect();
    fields.resize(parts, None);
    if fields[0].is_none() {
        return Err("the package name is empty".to_owned());
    }
    Ok(fields)
}

fn parse_require(text: &str) -> Result<Constraint, String> {
    match split_package(text, 3)?.as_slice() {
        [Some(package), range, channel] => Ok(Constraint::required(package, *range, *channel)),
        _ => Err("expected PACKAGE[,RANGE[,CHANNEL]]".to_owned()),
    }
}

fn parse_prohibit(text: &str) -> Result<Constraint, String> {
    match split_package(text, 2)?.as_slice() {
        [Some(package), range] => Ok(Constraint::prohibited(package, *range)),
        _ => Err("expected PACKAGE[,RANGE]".to_owned()),
    }
}

fn parse_installed(text: &str) -> Result<Constraint, String> {
    match text.split_once('=') {
        Some((package, version)) if !package.trim().is_empty() && !version.trim().is_empty() => {
            Ok(Constraint::installed(package.trim(), version.trim()))
        }
        _ => Err("expected PACKAGE=VERSION".to_owned()),
    }
}

/// The base name of `dir`, resolving `.` and `..` through the file system.
fn default_name(dir: &Path) -> Option<String> {
    let name = match dir.file_name() {
        Some(name) => name.to_owned(),
        None => dir.canonicalize().ok()?.file_name()?.to_owned(),
    };
    name.into_string().ok()
}

/// An error and its sources, joined by `: `.
fn chain(error: &dyn Error) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let _ = write!(out, ": {cause}");
        source = cause.source();
    }
    out
}

fn fail(code: u8, message: &str) -> ExitCode {
    let _ = writeln!(std::io::stderr().lock(), "error: {message}");
    ExitCode::from(code)
}

/// Writes `text` to stdout; a closed or failing stdout is reported, not a panic.
fn emit(text: &str) -> Result<(), ExitCode> {
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .map_err(|e| fail(EXIT_INTERNAL, &format!("failed to write the output: {e}")))
}

impl ResolveArgs {
    fn run(self) -> ExitCode {
        let loading = Instant::now();
        let mut loaded = Vec::with_capacity(self.catalogs.len());
        for arg in &self.catalogs {
            // Only what resolution reads is held: icons and inlined manifests are most of a
            // large catalog's bytes.
            let index = match CatalogIndex::from_dir_with(&arg.dir, Detail::Resolution) {
                Ok(index) => index,
                Err(e) => {
                    let message = format!(
                        "failed to load catalog {}: {}",
                        arg.dir.display(),
                        chain(&e)
                    );
                    return fail(EXIT_INVALID_INPUT, &message);
                }
            };
            let Some(name) = arg.name.clone().or_else(|| default_name(&arg.dir)) else {
                let message = format!(
                    "failed to name catalog {}: give a name with DIR=NAME",
                    arg.dir.display()
                );
                return fail(EXIT_INVALID_INPUT, &message);
            };
            loaded.push((name, arg.priority, index));
        }
        for (name, _, index) in &loaded {
            for (package, problems) in index.unusable_packages() {
                let _ = writeln!(
                    std::io::stderr().lock(),
                    "warning: {}",
                    invalid_graph_warning(name, package, problems)
                );
            }
        }
        let catalogs = loaded
            .iter()
            .map(|(name, priority, index)| NamedCatalog::new(name, index).with_priority(*priority));
        let resolver = match Resolver::new(catalogs) {
            // One resolution, then exit (see the `forget`s below).
            Ok(resolver) => resolver
                .with_kube_version(self.kube_version)
                .for_one_shot_process(),
            Err(e) => return fail(EXIT_INVALID_INPUT, &chain(&e)),
        };
        let self_certified = self.self_certified;
        let certified = |constraint: &Constraint| {
            matches!(constraint, Constraint::Installed { package, .. }
                if self_certified.iter().any(|p| p.trim() == package))
        };
        // `installed` first: the resolver puts them first anyway, and so reads the listing.
        let constraints = self
            .installed
            .into_iter()
            .chain(self.required)
            .chain(self.expressions)
            .chain(self.prohibited)
            .filter(|constraint| !certified(constraint));
        let load_duration = loading.elapsed();
        let outcome = resolver.resolve(&Request::new(constraints));
        if self.timings {
            let stats = match &outcome {
                Ok(resolution) => Some(&resolution.stats),
                Err(ResolveError::NotSatisfiable(unsatisfiable)) => Some(&unsatisfiable.stats),
                Err(_) => None,
            };
            if let Some(stats) = stats {
                let _ = writeln!(
                    std::io::stderr().lock(),
                    "{}",
                    timings_line(load_duration, stats)
                );
            }
        }
        // A one-shot process: the OS takes the memory back at exit. Freeing the catalogs
        // (50,000 bundles and their properties at 51k variables) one allocation at a time
        // was 9% of a whole `resolve` run.
        std::mem::forget(resolver);
        std::mem::forget(loaded);
        match outcome {
            Ok(resolution) => match emit(&render(&resolution, self.output)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(code) => code,
            },
            Err(ResolveError::NotSatisfiable(unsatisfiable)) => {
                if self.output == Output::Json {
                    let document = json!({
                        "summary": unsatisfiable.summary,
                        "explanation": unsatisfiable.explanation,
                        "stats": stats_json(&unsatisfiable.stats),
                    });
                    if let Err(code) = emit(&format!("{document:#}\n")) {
                        return code;
                    }
                }
                let _ = writeln!(std::io::stderr().lock(), "{unsatisfiable}");
                ExitCode::from(EXIT_UNSATISFIABLE)
            }
            Err(e) => match e.category() {
                ErrorCategory::Internal => fail(EXIT_INTERNAL, &chain(&e)),
                ErrorCategory::InvalidInput | ErrorCategory::NotSatisfiable => {
                    fail(EXIT_INVALID_INPUT, &chain(&e))
                }
            },
        }
    }
}

/// A package that a catalog sets aside because its upgrade graph is broken.
fn invalid_graph_warning(catalog: &str, package: &str, problems: &[fbc::IndexError]) -> String {
    let problems: Vec<String> = problems.iter().map(|p| chain(p)).collect();
    format!(
        "catalog {catalog} cannot offer package {package} until it is fixed: {}",
        problems.join("; ")
    )
}

fn render(resolution: &Resolution, output: Output) -> String {
    match output {
        Output::Text => {
            let mut out = String::new();
            for selection in &resolution.selections {
                let _ = writeln!(out, "{selection}");
            }
            out
        }
        Output::Json => {
            let selections: Vec<Value> = resolution
                .selections
                .iter()
                .map(|s| {
                    json!({
                        "selection": s.to_string(),
                        "catalog": s.catalog,
                        "package": s.package,
                        "version": s.version.to_string(),
                        "channel": s.channel,
                        "bundle": s.bundle,
                        "image": s.image,
                    })
                })
                .collect();
            let document = json!({
                "selections": selections,
                "stats": stats_json(&resolution.stats),
            });
            format!("{document:#}\n")
        }
    }
}

/// The `--timings` line, in the form upstream deppy's benchmark program prints.
fn timings_line(load: Duration, stats: &Stats) -> String {
    format!(
        "load_s={:.4} build_s={:.4} solve_s={:.4}",
        load.as_secs_f64(),
        stats.build_duration.as_secs_f64(),
        stats.solve_duration.as_secs_f64()
    )
}

fn stats_json(stats: &Stats) -> Value {
    json!({
        "variables": stats.variables,
        "bundles": stats.bundles,
        "constraints": stats.constraints,
        "clauses": stats.clauses,
        "satVariables": stats.sat_variables,
        "satCalls": stats.sat_calls,
        "buildSeconds": stats.build_duration.as_secs_f64(),
        "solveSeconds": stats.solve_duration.as_secs_f64(),
        "durationSeconds": stats.duration.as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn the_timings_line_has_upstreams_three_fields_in_seconds() {
        let stats = Stats {
            build_duration: Duration::from_micros(31_260),
            solve_duration: Duration::from_micros(8_100),
            ..Stats::default()
        };
        assert_eq!(
            timings_line(Duration::from_millis(52), &stats),
            "load_s=0.0520 build_s=0.0313 solve_s=0.0081"
        );
    }

    #[test]
    fn catalog_arguments_take_an_optional_name_and_priority() {
        assert_eq!(
            parse_catalog("dir/community"),
            Ok(CatalogArg {
                dir: "dir/community".into(),
                name: None,
                priority: 0
            })
        );
        assert_eq!(
            parse_catalog("dir=hub"),
            Ok(CatalogArg {
                dir: "dir".into(),
                name: Some("hub".into()),
                priority: 0
            })
        );
        assert_eq!(
            parse_catalog("dir=hub,-5"),
            Ok(CatalogArg {
                dir: "dir".into(),
                name: Some("hub".into()),
                priority: -5
            })
        );
        assert_eq!(
            parse_catalog("dir=,7"),
            Ok(CatalogArg {
                dir: "dir".into(),
                name: None,
                priority: 7
            })
        );
        assert!(parse_catalog("dir=hub,high").is_err());
        assert!(parse_catalog("=hub").is_err());
    }

    #[test]
    fn require_prohibit_and_installed_arguments_map_to_constraints() {
        assert_eq!(
            parse_require("etcd"),
            Ok(Constraint::required("etcd", None, None))
        );
        assert_eq!(
            parse_require("etcd, >=0.9.0 <1.0.0 ,stable"),
            Ok(Constraint::required(
                "etcd",
                Some(">=0.9.0 <1.0.0"),
                Some("stable")
            ))
        );
        assert_eq!(
            parse_require("etcd,,fast"),
            Ok(Constraint::required("etcd", None, Some("fast")))
        );
        assert!(parse_require(",>=1.0.0").is_err());
        assert_eq!(
            parse_prohibit("etcd,<0.9.0"),
            Ok(Constraint::prohibited("etcd", Some("<0.9.0")))
        );
        assert_eq!(
            parse_installed("etcd=0.9.0"),
            Ok(Constraint::installed("etcd", "0.9.0"))
        );
        assert!(parse_installed("etcd").is_err());
        assert!(parse_installed("etcd=").is_err());
    }

    #[test]
    fn the_default_catalog_name_is_the_directory_base_name() {
        assert_eq!(
            default_name(Path::new("tests/fixtures/community/")),
            Some("community".to_owned())
        );
        assert_eq!(
            default_name(Path::new(".")),
            std::env::current_dir()
                .unwrap()
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        );
    }
}
