//! Condition types and reasons of PlatformOperator and the aggregated ClusterOperator.

/// PlatformOperator: whether the package is installed.
pub const TYPE_INSTALLED: &str = "Installed";

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
        /// An installed bundle's `olm.maxOpenShiftVersion` does not allow the next minor
        /// version of the cluster.
        pub const INCOMPATIBLE_OPERATORS_INSTALLED: &str = "IncompatibleOperatorsInstalled";
        /// An installed bundle's `olm.maxOpenShiftVersion` could not be read.
        pub const FAILURE_GETTING_EXTENSION_METADATA: &str = "FailureGettingExtensionMetadata";
    }
}
