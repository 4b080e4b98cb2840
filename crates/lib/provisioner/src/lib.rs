//! The BundleDeployment controller every provisioner runs. A provisioner binary supplies
//! only a [`BundleFormat`] (how unpacked content becomes objects) and calls
//! [`run::RunArgs::run`]; finding the Bundle, loading its content, choosing the revision,
//! applying (with the `apply-engine` crate), certificates, health, finalization and status
//! are the same for all.
//!
//! - [`format`]: the [`BundleFormat`] a provisioner implements, and its [`Plan`];
//! - [`controller`]: the watches, the reconcile (read → decide → write → status) and the
//!   cleanup on deletion;
//! - [`run`]: the `run` command and process every provisioner binary shares;
//! - [`revisions`]: which revision (Bundle) to apply: approval, rollback, progress deadline;
//! - [`status`]: BundleDeployment status from a reconcile's outcome (pure);
//! - [`certificates`]: built-in serving certificates and CA injection for webhooks;
//! - [`identity`]: who a BundleDeployment applies as, published for the admission policy;
//! - [`warnings`]: API server warnings returned while applying;
//! - [`content_cache`]: unpacked bundle content kept in memory between reconciles.

pub mod certificates;
pub mod content_cache;
pub mod controller;
pub mod format;
pub mod identity;
pub mod revisions;
pub mod run;
pub mod status;
pub mod warnings;

pub use format::{BundleFormat, Plan};
