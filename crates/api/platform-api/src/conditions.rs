//! Condition types and reasons of PlatformOperator and the aggregated ClusterOperator.

/// PlatformOperator: whether the package is installed.
pub const TYPE_INSTALLED: &str = "Installed";

/// PlatformOperator: whether the installation is moving towards what the spec asks for.
pub const TYPE_PROGRESSING: &str = "Progressing";

/// PlatformOperator `Progressing` reasons.
pub mod progressing {
    /// `True`: resolving, unpacking or applying what the spec asks for.
    pub const INSTALLING: &str = "Installing";
    /// `False`: what the spec asks for is installed.
    pub const SUCCEEDED: &str = "Succeeded";
    /// `False`: something is installed and the spec asks for a version the catalog's
    /// upgrade graph does not lead to from it; the installed version keeps running and the
    /// message names it and the versions that are reachable.
    pub const UPGRADE_BLOCKED: &str = "UpgradeBlocked";
    /// `False`: something is installed and the spec cannot be resolved for another reason
    /// (a catalog unavailable, an invalid spec); the installed version keeps running.
    pub const RESOLUTION_FAILED: &str = "ResolutionFailed";
    /// `False`: not moving: `Installed` says what failed.
    pub const FAILED: &str = "Failed";
}

/// PlatformOperator: whether the catalog deprecates anything about the selected bundle of
/// the PlatformOperator's package (its package, channel or bundle).
pub const TYPE_DEPRECATED: &str = "Deprecated";
/// PlatformOperator: whether the catalog deprecates the whole package.
pub const TYPE_PACKAGE_DEPRECATED: &str = "PackageDeprecated";
/// PlatformOperator: whether the catalog deprecates the channel the bundle was selected
/// through.
pub const TYPE_CHANNEL_DEPRECATED: &str = "ChannelDeprecated";
/// PlatformOperator: whether the catalog deprecates the selected bundle.
pub const TYPE_BUNDLE_DEPRECATED: &str = "BundleDeprecated";

/// Reasons of the four deprecation conditions.
pub mod deprecation {
    /// `True`: the catalog publishes a deprecation notice; the message is the catalog's.
    pub const DEPRECATED: &str = "Deprecated";
    /// `False`: no notice.
    pub const NOT_DEPRECATED: &str = "NotDeprecated";
}

/// PlatformOperator `Installed` reasons (upstream's names). Reasons copied from the
/// BundleDeployment (e.g. `UnpackFailed`) appear too.
pub mod reasons {
    /// Resolution failed; the message explains why.
    pub const SOURCE_FAILED: &str = "SourceFailed";
    /// Waiting for the bundle to be unpacked.
    pub const UNPACK_PENDING: &str = "UnpackPending";
    /// Waiting for the bundle to be installed.
    pub const INSTALL_PENDING: &str = "InstallPending";
    /// Installing failed.
    pub const INSTALL_FAILED: &str = "InstallFailed";
    /// The package is installed and healthy.
    pub const INSTALL_SUCCESSFUL: &str = "InstallSuccessful";
    /// Installed (True, or False before the first install): with `upgradeApproval:
    /// Manual`, a BundleDeployment of the operator has a revision waiting for
    /// `spec.approvedRevision`; the message names it and its digest.
    pub const AWAITING_APPROVAL: &str = "AwaitingApproval";
    /// Another PlatformOperator already installs this package (directly or as a
    /// dependency); this one installs nothing until that changes.
    pub const DUPLICATE_PACKAGE: &str = "DuplicatePackage";
}

/// ClusterOperator condition types.
pub mod cluster_operator {
    /// The operand is functional.
    pub const AVAILABLE: &str = "Available";
    /// The operand is moving towards a new state.
    pub const PROGRESSING: &str = "Progressing";
    /// The operand is not in its desired state and needs attention.
    pub const DEGRADED: &str = "Degraded";
    /// A cluster upgrade is safe.
    pub const UPGRADEABLE: &str = "Upgradeable";

    /// Reasons.
    pub mod reasons {
        /// Everything is as expected.
        pub const AS_EXPECTED: &str = "AsExpected";
        /// At least one PlatformOperator is failing or pending.
        pub const PLATFORM_OPERATOR_ERROR: &str = "PlatformOperatorError";
        /// At least one PlatformOperator is still installing.
        pub const PLATFORM_OPERATORS_INSTALLING: &str = "PlatformOperatorsInstalling";
        /// Nothing is installing, and at least one PlatformOperator keeps running its
        /// installed version because its spec asks for one the upgrade graph does not
        /// reach (or cannot be resolved).
        pub const PLATFORM_OPERATOR_UPGRADE_BLOCKED: &str = "PlatformOperatorUpgradeBlocked";
        /// An installed bundle's `olm.maxOpenShiftVersion` does not allow the next minor
        /// version of the cluster.
        pub const INCOMPATIBLE_OPERATORS_INSTALLED: &str = "IncompatibleOperatorsInstalled";
        /// An installed bundle's `olm.maxOpenShiftVersion` could not be read.
        pub const FAILURE_GETTING_EXTENSION_METADATA: &str = "FailureGettingExtensionMetadata";
    }
}
