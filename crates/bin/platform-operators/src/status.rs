//! Pure status computation: what a PlatformOperator's `Installed` condition says, given
//! its ActiveResolution and BundleDeployments, and what the aggregated ClusterOperator
//! says, given every PlatformOperator. No cluster access; unit-tested with tables.

use kit::conditions::Desired;
use std::collections::BTreeSet;

use deppy_api::ActiveResolution;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kit::conditions::status;
use platform_api::conditions::cluster_operator as co;
use platform_api::conditions::{progressing, reasons};
use platform_api::{
    ClusterOperatorStatus, ClusterOperatorStatusCondition, InstalledBundle, PlatformOperator,
};
use rukpak_api::BundleDeployment;
use rukpak_api::conditions as bd;

/// The `Installed` condition a PlatformOperator should carry (without timestamps).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// Whether the package is installed and healthy.
    pub installed: bool,
    /// CamelCase reason (upstream's, or copied from a BundleDeployment).
    pub reason: String,
    /// Human-readable detail.
    pub message: String,
}

impl Installed {
    fn failed(reason: &str, message: impl Into<String>) -> Self {
        Self {
            installed: false,
            reason: reason.to_owned(),
            message: message.into(),
        }
    }

    /// `True` or `False`.
    pub fn status(&self) -> &'static str {
        if self.installed {
            status::TRUE
        } else {
            status::FALSE
        }
    }

    /// Whether this is a wait rather than a failure (UnpackPending, InstallPending).
    pub fn is_pending(&self) -> bool {
        is_pending_reason(&self.reason)
    }
}

/// Whether an `Installed` reason means "not there yet" rather than "failed".
pub fn is_pending_reason(reason: &str) -> bool {
    reason == reasons::UNPACK_PENDING || reason == reasons::INSTALL_PENDING
}

/// Activator condition reason meaning the wrapper BundleDeployment could not be written.
const ACTIVATION_APPLY_FAILED: &str = "ApplyFailed";

/// What the PlatformOperator controller observed for one PlatformOperator.
#[derive(Debug, Clone, Copy)]
pub struct Observed<'a> {
    /// The PlatformOperator's name (= ActiveResolution and wrapper BundleDeployment name).
    pub name: &'a str,
    /// Its ActiveResolution, when it exists.
    pub resolution: Option<&'a ActiveResolution>,
    /// The wrapper BundleDeployment, when it exists.
    pub wrapper: Option<&'a BundleDeployment>,
    /// The child BundleDeployments the wrapper applied (from its inventory), each with the
    /// object when it exists.
    pub children: &'a [(String, Option<&'a BundleDeployment>)],
    /// What is installed (see [`crate::upgrade::installed_bundles`]); empty before the
    /// first install completes.
    pub installed: &'a [InstalledBundle],
}

/// A condition that describes the object's current generation: stale conditions (from
/// before a spec change) are treated as absent. A condition or object without a generation
/// counts as current.
fn current<'c>(
    conditions: &'c [Condition],
    type_: &str,
    generation: Option<i64>,
) -> Option<&'c Condition> {
    kit::conditions::find(conditions, type_).filter(|c| match (c.observed_generation, generation) {
        (Some(observed), Some(generation)) => observed == generation,
        _ => true,
    })
}

/// Upstream's BundleDeployment inspection, in order: unpacked (`HasValidBundle`), then
/// `Installed`, then (unlike upstream, which ignored it) `Healthy` when `check_health`.
/// `None` when everything holds. Messages of copied conditions get `prefix`.
fn inspect_bundle_deployment(
    deployment: &BundleDeployment,
    check_health: bool,
    prefix: &str,
) -> Option<Installed> {
    let generation = deployment.metadata.generation;
    let conditions = deployment
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    let copy = |condition: &Condition| {
        Installed::failed(&condition.reason, format!("{prefix}{}", condition.message))
    };
    match current(conditions, bd::TYPE_HAS_VALID_BUNDLE, generation) {
        None => {
            return Some(Installed::failed(
                reasons::UNPACK_PENDING,
                format!("{prefix}Waiting for the bundle to be unpacked"),
            ));
        }
        Some(c) if c.status != status::TRUE => return Some(copy(c)),
        Some(_) => {}
    }
    match current(conditions, bd::TYPE_INSTALLED, generation) {
        None => {
            return Some(Installed::failed(
                reasons::INSTALL_PENDING,
                format!("{prefix}Waiting for the bundle to be installed"),
            ));
        }
        Some(c) if c.status != status::TRUE => return Some(copy(c)),
        Some(_) => {}
    }
    if check_health {
        return health_failure(conditions, generation, prefix);
    }
    None
}

fn health_failure(
    conditions: &[Condition],
    generation: Option<i64>,
    prefix: &str,
) -> Option<Installed> {
    match current(conditions, bd::TYPE_HEALTHY, generation) {
        None => Some(Installed::failed(
            reasons::INSTALL_PENDING,
            format!("{prefix}Waiting for the installed objects to become healthy"),
        )),
        Some(c) if c.status != status::TRUE => Some(Installed::failed(
            &c.reason,
            format!("{prefix}{}", c.message),
        )),
        Some(_) => None,
    }
}

/// The `Installed` condition for what was observed:
///
/// 1. no ActiveResolution, or not resolved for its current spec: `UnpackPending`;
/// 2. `Resolved=False`: when something is installed, the health of what runs (steps 5 to
///    8: nothing is changed, so it keeps running; [`progressing`] says why it does not
///    move); otherwise `SourceFailed` with the resolver's explanation;
/// 3. `Activated=False`: `SourceFailed` (`InstallFailed` when the wrapper could not be
///    written) with the activator's message;
/// 4. no wrapper BundleDeployment yet: `UnpackPending`;
/// 5. the wrapper not unpacked or not installed: `UnpackPending`/`InstallPending` or its
///    reason and message;
/// 6. a child BundleDeployment missing, not unpacked, not installed or unhealthy: the
///    child's reason, and its message prefixed with its name;
/// 7. the wrapper not healthy: its reason and message;
/// 8. otherwise `InstallSuccessful`.
pub fn installed(observed: &Observed<'_>) -> Installed {
    let Some(resolution) = observed.resolution else {
        return Installed::failed(
            reasons::UNPACK_PENDING,
            format!(
                "Waiting for the ActiveResolution {} to be created",
                observed.name
            ),
        );
    };
    let generation = resolution.metadata.generation;
    let conditions = resolution
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    match current(conditions, deppy_api::conditions::TYPE_RESOLVED, generation) {
        Some(c) if c.status == status::FALSE => {
            return match observed.wrapper {
                Some(wrapper) if !observed.installed.is_empty() => running(observed, wrapper),
                _ => Installed::failed(reasons::SOURCE_FAILED, c.message.clone()),
            };
        }
        Some(c) if c.status == status::TRUE => {}
        _ => {
            return Installed::failed(
                reasons::UNPACK_PENDING,
                "Waiting for the package to be resolved",
            );
        }
    }
    let activated = current(
        conditions,
        deppy_api::conditions::TYPE_ACTIVATED,
        generation,
    );
    if let Some(c) = activated
        && c.status == status::FALSE
    {
        let reason = if c.reason == ACTIVATION_APPLY_FAILED {
            reasons::INSTALL_FAILED
        } else {
            reasons::SOURCE_FAILED
        };
        return Installed::failed(reason, c.message.clone());
    }
    let Some(wrapper) = observed.wrapper else {
        return Installed::failed(
            reasons::UNPACK_PENDING,
            if activated.is_none() {
                "Waiting for the resolution to be activated".to_owned()
            } else {
                format!(
                    "Waiting for the BundleDeployment {} to be created",
                    observed.name
                )
            },
        );
    };
    if activated.is_none() {
        // A spec change: the wrapper still describes the previous resolution.
        return Installed::failed(
            reasons::UNPACK_PENDING,
            "Waiting for the resolution to be activated",
        );
    }
    running(observed, wrapper)
}

/// Steps 5 to 8 of [`installed`]: the state of what the wrapper installed.
fn running(observed: &Observed<'_>, wrapper: &BundleDeployment) -> Installed {
    if let Some(failure) = inspect_bundle_deployment(wrapper, false, "") {
        return failure;
    }
    for (name, child) in observed.children {
        let prefix = format!("BundleDeployment {name}: ");
        let Some(child) = child else {
            return Installed::failed(
                reasons::INSTALL_PENDING,
                format!("{prefix}Waiting for the BundleDeployment to be created"),
            );
        };
        if let Some(failure) = inspect_bundle_deployment(child, true, &prefix) {
            return failure;
        }
    }
    let wrapper_conditions = wrapper
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    if let Some(failure) = health_failure(wrapper_conditions, wrapper.metadata.generation, "") {
        return failure;
    }
    // Everything runs; an upgrade may still wait for an administrator's approval.
    for (name, child) in observed.children {
        let waiting = child.and_then(|c| {
            let conditions = &c.status.as_ref()?.conditions;
            kit::conditions::find(conditions, bd::TYPE_PROGRESSING)
                .filter(|p| p.reason == bd::reasons::AWAITING_APPROVAL)
        });
        if let Some(progressing) = waiting {
            return Installed {
                installed: true,
                reason: reasons::AWAITING_APPROVAL.to_owned(),
                message: format!("BundleDeployment {name}: {}", progressing.message),
            };
        }
    }
    let name = wrapper.metadata.name.as_deref().unwrap_or(observed.name);
    Installed {
        installed: true,
        reason: reasons::INSTALL_SUCCESSFUL.to_owned(),
        message: format!("Successfully applied the {name} BundleDeployment resource"),
    }
}

/// The `Progressing` condition a PlatformOperator should carry (without timestamps).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progressing {
    /// Whether the installation is moving towards what the spec asks for.
    pub progressing: bool,
    /// CamelCase reason, one of [`platform_api::conditions::progressing`].
    pub reason: &'static str,
    /// Human-readable detail.
    pub message: String,
}

impl Progressing {
    /// `True` or `False`.
    pub fn status(&self) -> &'static str {
        if self.progressing {
            status::TRUE
        } else {
            status::FALSE
        }
    }
}

/// Whether a `Progressing` reason means that something keeps running because the spec
/// cannot be resolved from it.
pub fn is_blocked_reason(reason: &str) -> bool {
    reason == progressing::UPGRADE_BLOCKED || reason == progressing::RESOLUTION_FAILED
}

/// The `Progressing` condition, given the `Installed` one computed for the same
/// observation:
///
/// 1. something is installed and the current spec does not resolve: `False` with
///    `UpgradeBlocked` (no bundle set satisfies the constraints, e.g. the upgrade graph
///    does not lead to the requested versions) or `ResolutionFailed` (another reason),
///    naming what keeps running and quoting the resolver;
/// 2. `Installed` is pending: `True`, `Installing`;
/// 3. installed: `False`, `Succeeded`, naming the installed bundles;
/// 4. otherwise `False`, `Failed`, with the `Installed` message.
pub fn progressing(observed: &Observed<'_>, installed: &Installed) -> Progressing {
    let resolved = observed.resolution.and_then(|resolution| {
        let conditions = resolution
            .status
            .as_ref()
            .map(|s| s.conditions.as_slice())
            .unwrap_or_default();
        current(
            conditions,
            deppy_api::conditions::TYPE_RESOLVED,
            resolution.metadata.generation,
        )
    });
    if let Some(resolved) = resolved
        && resolved.status == status::FALSE
        && !observed.installed.is_empty()
    {
        let reason =
            if resolved.reason == deppy_api::conditions::reasons::CONSTRAINTS_NOT_SATISFIABLE {
                progressing::UPGRADE_BLOCKED
            } else {
                progressing::RESOLUTION_FAILED
            };
        return Progressing {
            progressing: false,
            reason,
            message: format!(
                "{} {} running unchanged because the spec cannot be resolved: {}",
                crate::upgrade::describe(observed.installed),
                if observed.installed.len() == 1 {
                    "keeps"
                } else {
                    "keep"
                },
                resolved.message
            ),
        };
    }
    if installed.is_pending() {
        return Progressing {
            progressing: true,
            reason: progressing::INSTALLING,
            message: installed.message.clone(),
        };
    }
    if installed.installed {
        return Progressing {
            progressing: false,
            reason: progressing::SUCCEEDED,
            message: format!(
                "Installed {} as the spec asks",
                crate::upgrade::describe(observed.installed)
            ),
        };
    }
    Progressing {
        progressing: false,
        reason: progressing::FAILED,
        message: installed.message.clone(),
    }
}

impl Installed {
    /// As a condition.
    pub fn condition(&self) -> Desired {
        Desired {
            type_: platform_api::conditions::TYPE_INSTALLED,
            status: self.status(),
            reason: self.reason.clone(),
            message: self.message.clone(),
        }
    }
}

impl Progressing {
    /// As a condition.
    pub fn condition(&self) -> Desired {
        Desired {
            type_: platform_api::conditions::TYPE_PROGRESSING,
            status: self.status(),
            reason: self.reason.to_owned(),
            message: self.message.clone(),
        }
    }
}

/// The four deprecation conditions (`Deprecated`, `PackageDeprecated`,
/// `ChannelDeprecated`, `BundleDeprecated`, as operator-controller names them) for the
/// bundle `resolution` selected for `package`, from the catalog's `olm.deprecations`
/// notices the resolver recorded. Each is `True` (reason `Deprecated`, the catalog's
/// message) or `False` (`NotDeprecated`); `Deprecated` is `True` when any of the others is.
pub fn deprecation_conditions(
    resolution: Option<&ActiveResolution>,
    package: &str,
) -> [Desired; 4] {
    use platform_api::conditions::{
        TYPE_BUNDLE_DEPRECATED, TYPE_CHANNEL_DEPRECATED, TYPE_DEPRECATED, TYPE_PACKAGE_DEPRECATED,
        deprecation,
    };
    let status = resolution.and_then(|r| r.status.as_ref());
    let notice = status.and_then(|s| s.deprecations.iter().find(|d| d.package == package));
    // What was selected, to name it when there is no notice.
    let selected = status.and_then(|s| {
        s.selections
            .iter()
            .filter_map(|text| text.parse::<deppy_api::Selection>().ok())
            .find(|selection| selection.package == package)
    });
    let condition = |type_, message: Option<&String>, what: String| match message {
        Some(message) => Desired {
            type_,
            status: status::TRUE,
            reason: deprecation::DEPRECATED.to_owned(),
            message: message.clone(),
        },
        None => Desired {
            type_,
            status: status::FALSE,
            reason: deprecation::NOT_DEPRECATED.to_owned(),
            message: format!("The catalog does not deprecate {what}"),
        },
    };
    let package_condition = condition(
        TYPE_PACKAGE_DEPRECATED,
        notice.and_then(|n| n.package_message.as_ref()),
        format!("package {package}"),
    );
    let channel_condition = condition(
        TYPE_CHANNEL_DEPRECATED,
        notice.and_then(|n| n.channel_message.as_ref()),
        match (notice, &selected) {
            (Some(n), _) => format!("channel {}", n.channel),
            (None, Some(selection)) => format!("channel {}", selection.channel),
            (None, None) => "the channel".to_owned(),
        },
    );
    let bundle_condition = condition(
        TYPE_BUNDLE_DEPRECATED,
        notice.and_then(|n| n.bundle_message.as_ref()),
        match (notice, &selected) {
            (Some(n), _) => format!("bundle {}", n.bundle),
            (None, Some(selection)) => format!("{package} {}", selection.version),
            (None, None) => "the selected bundle".to_owned(),
        },
    );
    let messages: Vec<&str> = [&package_condition, &channel_condition, &bundle_condition]
        .iter()
        .filter(|c| c.status == status::TRUE)
        .map(|c| c.message.as_str())
        .collect();
    let any = (!messages.is_empty()).then(|| messages.join("; "));
    let deprecated = condition(
        TYPE_DEPRECATED,
        any.as_ref(),
        format!("package {package}, its channel or the selected bundle"),
    );
    [
        deprecated,
        package_condition,
        channel_condition,
        bundle_condition,
    ]
}

/// The package of a selection `catalog:package:version:channel`.
pub fn selection_package(selection: &str) -> Option<&str> {
    selection.split(':').nth(1).filter(|p| !p.is_empty())
}

/// The packages an ActiveResolution installs: its entities, else its selections.
pub fn resolved_packages(resolution: &ActiveResolution) -> BTreeSet<String> {
    let Some(status) = resolution.status.as_ref() else {
        return BTreeSet::new();
    };
    if !status.entities.is_empty() {
        return status.entities.iter().map(|e| e.package.clone()).collect();
    }
    status
        .selections
        .iter()
        .filter_map(|s| selection_package(s))
        .map(str::to_owned)
        .collect()
}

/// A `major.minor` version, as `olm.maxOpenShiftVersion` and cluster versions compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct MinorVersion {
    /// Major version.
    pub major: u64,
    /// Minor version.
    pub minor: u64,
}

impl std::fmt::Display for MinorVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl MinorVersion {
    /// Parses `4.16`, `4.16.3`, `v4.16`, `"4.16"` or `4.16.0-0.nightly-...`, tolerantly as
    /// OLM does; `None` when there is no `major.minor`.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim().trim_matches('"').trim();
        let text = text.strip_prefix('v').unwrap_or(text);
        let mut parts = text.split(['.', '-', '+']);
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        Some(Self { major, minor })
    }

    /// The next minor version (the one an upgrade would go to).
    pub fn next(self) -> Self {
        Self {
            major: self.major,
            minor: self.minor.saturating_add(1),
        }
    }
}

/// One PlatformOperator as the aggregated ClusterOperator sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// PlatformOperator name.
    pub name: String,
    /// Its `Installed` condition's status and reason, when set.
    pub installed: Option<(bool, String)>,
    /// The `olm.maxOpenShiftVersion` of each bundle it installs: (package, value).
    pub max_openshift_versions: Vec<(String, String)>,
    /// Whether it keeps its installed version because its spec cannot be resolved
    /// (`Progressing` reason UpgradeBlocked or ResolutionFailed).
    pub upgrade_blocked: bool,
}

impl Summary {
    /// The summary of `operator`, with the max versions of its child BundleDeployments.
    pub fn of(operator: &PlatformOperator, max_openshift_versions: Vec<(String, String)>) -> Self {
        let installed = operator
            .status
            .as_ref()
            .and_then(|s| {
                kit::conditions::find(&s.conditions, platform_api::conditions::TYPE_INSTALLED)
            })
            .map(|c| (c.status == status::TRUE, c.reason.clone()));
        let upgrade_blocked = operator
            .status
            .as_ref()
            .and_then(|s| {
                kit::conditions::find(&s.conditions, platform_api::conditions::TYPE_PROGRESSING)
            })
            .is_some_and(|c| c.status == status::FALSE && is_blocked_reason(&c.reason));
        Self {
            name: operator.metadata.name.clone().unwrap_or_default(),
            installed,
            max_openshift_versions,
            upgrade_blocked,
        }
    }
}

/// A ClusterOperator condition without its timestamp.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredCondition {
    /// Available, Progressing, Degraded or Upgradeable.
    pub type_: &'static str,
    /// `True`, `False` or `Unknown`.
    pub status: &'static str,
    /// CamelCase reason.
    pub reason: String,
    /// Human-readable detail.
    pub message: String,
}

/// The aggregated ClusterOperator's conditions for `operators` (sorted by name), on a
/// cluster running `cluster_version` (from ClusterVersion; `None` off OpenShift).
///
/// - Available: `True`/AsExpected when there are no PlatformOperators or all are
///   installed; otherwise `False`/PlatformOperatorError listing each failing or pending
///   one as upstream did (`encountered the failing <name> platform operator with reason
///   "<reason>"`, a bracketed, comma-separated list when several).
/// - Progressing: `True` while some PlatformOperator is pending; else `False`, with
///   reason PlatformOperatorUpgradeBlocked naming those that keep their installed version
///   because their spec cannot be resolved, or AsExpected.
/// - Degraded: always `False`, as upstream (a failing PlatformOperator makes the
///   ClusterOperator unavailable instead; one whose upgrade is blocked still runs, and
///   OpenShift's Degraded means a lower quality of service, which it is not).
/// - Upgradeable: `False` naming each PlatformOperator whose installed bundle's
///   `olm.maxOpenShiftVersion` is not above the cluster's current minor version.
pub fn cluster_operator_conditions(
    operators: &[Summary],
    cluster_version: Option<&str>,
) -> Vec<DesiredCondition> {
    let as_expected = |type_, value, message: &str| DesiredCondition {
        type_,
        status: value,
        reason: co::reasons::AS_EXPECTED.to_owned(),
        message: message.to_owned(),
    };
    let mut conditions = Vec::with_capacity(4);
    let failing: Vec<String> = operators
        .iter()
        .filter(|o| !matches!(o.installed, Some((true, _))))
        .map(|o| {
            let reason = match &o.installed {
                Some((_, reason)) if !reason.is_empty() => reason.as_str(),
                _ => reasons::INSTALL_PENDING,
            };
            format!(
                "encountered the failing {} platform operator with reason {reason:?}",
                o.name
            )
        })
        .collect();
    let pending: Vec<&str> = operators
        .iter()
        .filter(|o| match &o.installed {
            None => true,
            Some((installed, reason)) => !installed && is_pending_reason(reason),
        })
        .map(|o| o.name.as_str())
        .collect();
    let summary = if operators.is_empty() {
        "No platform operators are present in the cluster".to_owned()
    } else if failing.is_empty() {
        "All platform operators are in a successful state".to_owned()
    } else if failing.len() == 1 {
        failing.join("")
    } else {
        format!("[{}]", failing.join(", "))
    };
    if failing.is_empty() {
        conditions.push(as_expected(co::AVAILABLE, status::TRUE, &summary));
    } else {
        conditions.push(DesiredCondition {
            type_: co::AVAILABLE,
            status: status::FALSE,
            reason: co::reasons::PLATFORM_OPERATOR_ERROR.to_owned(),
            message: summary.clone(),
        });
    }
    let blocked: Vec<&str> = operators
        .iter()
        .filter(|o| o.upgrade_blocked)
        .map(|o| o.name.as_str())
        .collect();
    if pending.is_empty() && !blocked.is_empty() {
        conditions.push(DesiredCondition {
            type_: co::PROGRESSING,
            status: status::FALSE,
            reason: co::reasons::PLATFORM_OPERATOR_UPGRADE_BLOCKED.to_owned(),
            message: format!(
                "Platform operators keep running their installed versions because their spec cannot be resolved (see their Progressing condition): {}",
                blocked.join(", ")
            ),
        });
    } else if pending.is_empty() {
        conditions.push(as_expected(co::PROGRESSING, status::FALSE, &summary));
    } else {
        conditions.push(DesiredCondition {
            type_: co::PROGRESSING,
            status: status::TRUE,
            reason: co::reasons::PLATFORM_OPERATORS_INSTALLING.to_owned(),
            message: format!(
                "Waiting for platform operators to be installed: {}",
                pending.join(", ")
            ),
        });
    }
    conditions.push(as_expected(co::DEGRADED, status::FALSE, ""));
    conditions.push(upgradeable(operators, cluster_version));
    conditions
}

fn upgradeable(operators: &[Summary], cluster_version: Option<&str>) -> DesiredCondition {
    let current = cluster_version.and_then(MinorVersion::parse);
    let Some(current) = current else {
        return DesiredCondition {
            type_: co::UPGRADEABLE,
            status: status::TRUE,
            reason: co::reasons::AS_EXPECTED.to_owned(),
            message: match cluster_version {
                Some(version) => format!(
                    "The cluster version {version:?} is not a semantic version; olm.maxOpenShiftVersion is not checked"
                ),
                None => {
                    "No cluster version is known; olm.maxOpenShiftVersion is not checked".to_owned()
                }
            },
        };
    };
    let next = current.next();
    let mut incompatible = Vec::new();
    let mut unreadable = Vec::new();
    for operator in operators {
        for (package, max) in &operator.max_openshift_versions {
            match MinorVersion::parse(max) {
                Some(max) if max < next => incompatible.push(format!(
                    "{} ({package} has olm.maxOpenShiftVersion {max})",
                    operator.name
                )),
                Some(_) => {}
                None => unreadable.push(format!(
                    "{} ({package} has olm.maxOpenShiftVersion {max:?}, not a version)",
                    operator.name
                )),
            }
        }
    }
    if !unreadable.is_empty() {
        return DesiredCondition {
            type_: co::UPGRADEABLE,
            status: status::FALSE,
            reason: co::reasons::FAILURE_GETTING_EXTENSION_METADATA.to_owned(),
            message: format!(
                "Failed to read the maximum OpenShift version of PlatformOperators: {}",
                unreadable.join(", ")
            ),
        };
    }
    if !incompatible.is_empty() {
        return DesiredCondition {
            type_: co::UPGRADEABLE,
            status: status::FALSE,
            reason: co::reasons::INCOMPATIBLE_OPERATORS_INSTALLED.to_owned(),
            message: format!(
                "Found PlatformOperators that require upgrades prior to upgrading cluster to version {next}: {}",
                incompatible.join(", ")
            ),
        };
    }
    DesiredCondition {
        type_: co::UPGRADEABLE,
        status: status::TRUE,
        reason: co::reasons::AS_EXPECTED.to_owned(),
        message: format!("All platform operators support OpenShift {next}"),
    }
}

/// `current`'s conditions updated to `desired`: a condition keeps its
/// `lastTransitionTime` unless its status flips (upstream rewrote it every time);
/// conditions of other types (someone else's) are kept after ours.
pub fn merge_conditions(
    current: &[ClusterOperatorStatusCondition],
    desired: &[DesiredCondition],
    now: &Time,
) -> Vec<ClusterOperatorStatusCondition> {
    let mut merged: Vec<ClusterOperatorStatusCondition> = desired
        .iter()
        .map(|d| {
            let previous = current.iter().find(|c| c.type_ == d.type_);
            let last_transition_time = match previous {
                Some(p) if p.status == d.status => p.last_transition_time.clone(),
                _ => now.clone(),
            };
            ClusterOperatorStatusCondition {
                type_: d.type_.to_owned(),
                status: d.status.to_owned(),
                last_transition_time,
                reason: Some(d.reason.clone()).filter(|r| !r.is_empty()),
                message: Some(d.message.clone()).filter(|m| !m.is_empty()),
            }
        })
        .collect();
    merged.extend(
        current
            .iter()
            .filter(|c| !desired.iter().any(|d| d.type_ == c.type_))
            .cloned(),
    );
    merged
}

/// The whole desired ClusterOperator status: merged conditions, `versions` and
/// `relatedObjects`.
pub fn cluster_operator_status(
    current: Option<&ClusterOperatorStatus>,
    desired: &[DesiredCondition],
    release_version: &str,
    related: Vec<platform_api::ObjectReference>,
    now: &Time,
) -> ClusterOperatorStatus {
    let conditions = current.map(|s| s.conditions.as_slice()).unwrap_or_default();
    ClusterOperatorStatus {
        conditions: merge_conditions(conditions, desired, now),
        versions: vec![platform_api::OperandVersion {
            name: "operator".to_owned(),
            version: release_version.to_owned(),
        }],
        related_objects: related,
    }
}

/// `relatedObjects`: the system namespace, all PlatformOperators, and the
/// BundleDeployments involved (`bundle_deployments`, sorted and deduplicated).
pub fn related_objects(
    system_namespace: &str,
    bundle_deployments: impl IntoIterator<Item = String>,
) -> Vec<platform_api::ObjectReference> {
    let mut related = vec![
        platform_api::ObjectReference {
            group: String::new(),
            resource: "namespaces".to_owned(),
            namespace: None,
            name: system_namespace.to_owned(),
        },
        platform_api::ObjectReference {
            group: platform_api::GROUP.to_owned(),
            resource: "platformoperators".to_owned(),
            namespace: None,
            name: String::new(),
        },
    ];
    let names: BTreeSet<String> = bundle_deployments.into_iter().collect();
    related.extend(names.into_iter().map(|name| platform_api::ObjectReference {
        group: rukpak_api::GROUP.to_owned(),
        resource: "bundledeployments".to_owned(),
        namespace: None,
        name,
    }));
    related
}

#[cfg(test)]
mod tests;
