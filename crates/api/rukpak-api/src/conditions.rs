//! Condition types and reasons of the RukPak API, and the Bundle phases.

/// Bundle: whether the content has been unpacked into the content store.
pub const TYPE_UNPACKED: &str = "Unpacked";
/// BundleDeployment: whether the desired Bundle exists and unpacked.
pub const TYPE_HAS_VALID_BUNDLE: &str = "HasValidBundle";
/// BundleDeployment: whether the Bundle's objects are applied.
pub const TYPE_INSTALLED: &str = "Installed";
/// BundleDeployment: whether the applied objects are healthy.
pub const TYPE_HEALTHY: &str = "Healthy";
/// BundleDeployment: whether the provisioner is still working toward the spec, and on
/// which step (unpacking, applying phase N, waiting for health). False once settled or
/// stalled by a failure.
pub const TYPE_PROGRESSING: &str = "Progressing";

/// Reasons, shared by the condition types above.
pub mod reasons {
    /// Unpacking has not started (or waits for an upload).
    pub const UNPACK_PENDING: &str = "UnpackPending";
    /// Unpacking is under way.
    pub const UNPACKING: &str = "Unpacking";
    /// The content is in the content store.
    pub const UNPACK_SUCCESSFUL: &str = "UnpackSuccessful";
    /// The source could not be fetched or its content is invalid.
    pub const UNPACK_FAILED: &str = "UnpackFailed";
    /// The unpacked content could not be loaded or converted.
    pub const BUNDLE_LOAD_FAILED: &str = "BundleLoadFailed";
    /// Generating or reconciling the Bundle of a template failed.
    pub const RECONCILE_FAILED: &str = "ReconcileFailed";
    /// Every object was applied.
    pub const INSTALLATION_SUCCEEDED: &str = "InstallationSucceeded";
    /// The first install failed.
    pub const INSTALL_FAILED: &str = "InstallFailed";
    /// A pivot to a new Bundle failed; the previous objects stay.
    pub const UPGRADE_FAILED: &str = "UpgradeFailed";
    /// Writes are suspended by `spec.paused`.
    pub const PAUSED: &str = "Paused";
    /// Every applied object reports healthy.
    pub const HEALTHY: &str = "Healthy";
    /// At least one applied object reports unhealthy.
    pub const UNHEALTHY: &str = "Unhealthy";
    /// Health is not evaluated because installation did not succeed.
    pub const INSTALLATION_STATUS_FALSE: &str = "InstallationStatusFalse";
    /// Progressing: the Bundle's objects are being applied; the message names the step.
    pub const APPLYING: &str = "Applying";
    /// Progressing: every object is applied; some are not healthy yet.
    pub const WAITING_FOR_HEALTH: &str = "WaitingForHealth";
    /// Progressing is False: everything is applied and healthy.
    pub const SETTLED: &str = "Settled";
    /// Progressing is False: a failure stopped progress; the failing condition says why.
    pub const STALLED: &str = "Stalled";
    /// Progressing: a phase's objects have been written and the next phase waits for them
    /// to pass their probes; the message names the phase and the objects.
    pub const WAITING_FOR_PROBES: &str = "WaitingForProbes";
    /// Progressing is False: with `upgradeApproval: Manual`, a new revision waits for
    /// `spec.approvedRevision` to name its digest.
    pub const AWAITING_APPROVAL: &str = "AwaitingApproval";
    /// Installed is False: the revision did not pass its probes within
    /// `spec.progressDeadlineSeconds`.
    pub const PROGRESS_DEADLINE_EXCEEDED: &str = "ProgressDeadlineExceeded";
    /// Installed: a revision failed and the last healthy one was applied again.
    pub const ROLLED_BACK: &str = "RolledBack";
    /// Healthy is False: a declared health check reported the object failed.
    pub const HEALTH_CHECK_FAILED: &str = "HealthCheckFailed";
    /// Installed is False: `spec.healthChecks` holds an expression that does not compile.
    pub const INVALID_HEALTH_CHECK: &str = "InvalidHealthCheck";
}
