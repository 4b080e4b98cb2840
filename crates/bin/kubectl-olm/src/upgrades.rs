//! `upgrades <package> --from <version>`: what a bundle can upgrade to, in one step and in
//! several, along the catalog's upgrade graph (`replaces`, `skips`, `skipRange`), as the
//! resolver allows an installed operator to move.

use fbc::Version;
pub use fbc::upgrades::Upgrades;
use serde::Serialize;

use crate::catalogs::Catalog;

/// Why no upgrades could be listed, as a sentence.
pub type Refusal = String;

/// `from` as a version (a leading `v` allowed); the error is a sentence. Pure.
pub fn parse_version(from: &str) -> Result<Version, Refusal> {
    from.trim_start_matches('v')
        .parse()
        .map_err(|err| format!("{from} is not a version (semver, e.g. 1.2.3): {err}"))
}

/// The upgrades of `package` at `from` in each catalog that has that version. Pure.
pub fn upgrades(
    catalogs: &[Catalog],
    package: &str,
    from: &str,
    channel: Option<&str>,
) -> Result<Vec<Upgrades>, Refusal> {
    let version = parse_version(from)?;
    let found: Vec<Upgrades> = catalogs
        .iter()
        .filter_map(|catalog| {
            fbc::upgrades::upgrades_from(&catalog.index, &catalog.name, package, &version, channel)
        })
        .collect();
    if found.is_empty() {
        let with_package = catalogs.iter().any(|c| c.index.package(package).is_some());
        return Err(if with_package {
            format!(
                "version {version} of package {package} is in none of the catalogs, so nothing is known of its upgrades; list its versions with `kubectl olm show {package}`"
            )
        } else {
            format!("package {package} is in none of the catalogs")
        });
    }
    Ok(found)
}

/// What a PlatformOperator runs and how it may move: `upgrades NAME` without `--from`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Installed {
    /// The PlatformOperator.
    pub platform_operator: String,
    /// Its package.
    pub package: String,
    /// The version running, from its status.
    pub version: String,
    /// The channel it follows, when it names one (else the package's default).
    pub channel: Option<String>,
    /// The versions it accepts (`spec.package.versionRange`).
    pub version_range: Option<String>,
    /// `CatalogProvided` or `SelfCertified`.
    pub policy: String,
    /// The PlatformOperator's `Progressing` condition, as the resolver and installer put
    /// it: `status`, `reason` and `message` (why an upgrade is blocked, for one).
    pub progressing: Option<Progress>,
    /// The upgrades of the running version, per catalog that has it.
    pub upgrades: Vec<Upgrades>,
}

/// A condition, as the controllers wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    /// `True` or `False`.
    pub status: String,
    /// The reason, e.g. `UpgradeBlocked`.
    pub reason: String,
    /// The message.
    pub message: String,
}

/// The PlatformOperator's package, running version and settings; the error is a sentence.
/// Pure.
pub fn installed_of(
    platform_operator: &platform_api::PlatformOperator,
) -> Result<Installed, Refusal> {
    let name = platform_operator.metadata.name.clone().unwrap_or_default();
    let package = &platform_operator.spec.package;
    let status = platform_operator.status.clone().unwrap_or_default();
    let version = status
        .installed_bundles
        .iter()
        .find(|bundle| bundle.package == package.name)
        .map(|bundle| bundle.version.clone())
        .ok_or_else(|| {
            format!(
                "PlatformOperator {name} has nothing of package {} installed yet; see `kubectl olm status {name}`",
                package.name
            )
        })?;
    let progressing = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Progressing")
        .map(|c| Progress {
            status: c.status.clone(),
            reason: c.reason.clone(),
            message: c.message.clone(),
        });
    Ok(Installed {
        platform_operator: name,
        package: package.name.clone(),
        version,
        channel: package.channel.clone(),
        version_range: package.version_range.clone(),
        policy: match package.upgrade_constraint_policy {
            platform_api::UpgradeConstraintPolicy::CatalogProvided => "CatalogProvided",
            platform_api::UpgradeConstraintPolicy::SelfCertified => "SelfCertified",
        }
        .to_owned(),
        progressing,
        upgrades: Vec::new(),
    })
}
