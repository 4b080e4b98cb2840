//! The apply engine every provisioner shares.
//!
//! - [`controller`]: the BundleDeployment controller, generic over a [`controller::BundleFormat`];
//! - [`apply`]: the engine: ordered server-side apply, collisions and CRD safety checked
//!   before the first write, inventory, prune, and deletion that keeps user data;
//! - [`certificates`]: built-in serving certificates and CA injection for webhooks;
//! - [`identity`]: who a BundleDeployment applies as, published for the admission policy;
//! - [`kinds`]: discovery, asked once per kind and shared by every reconcile;
//! - [`run`]: the `run` command and process every provisioner binary shares;
//! - [`warnings`]: API server warnings returned while applying;
//! - [`subset`]: the drift test that keeps steady-state resyncs free of writes;
//! - [`manifest`]: parse bundle manifests into objects;
//! - [`object`]: object identity and the owner labels on everything applied;
//! - [`phase`]: apply order;
//! - [`collision`]: whether an existing object may be taken over;
//! - [`prune`]: which objects a pivot removes;
//! - [`revisions`]: which revision (Bundle) to apply: approval, rollback, progress deadline;
//! - [`review`]: what a pending revision would add, change, remove and grant, for approval;
//! - [`drift`]: label-filtered watches that turn changes of managed objects into reconciles;
//! - [`status`]: BundleDeployment status from a reconcile outcome;
//! - [`crd_safety`]: CRD upgrade safety checks, run before any CRD update.
//!
//! Health verdicts (the rule per kind and declared CEL checks) come from the `health` crate.

pub mod apply;
pub mod certificates;
pub mod collision;
pub mod content_cache;
pub mod controller;
pub mod crd_safety;
pub mod drift;
pub mod identity;
pub mod kinds;
pub mod manifest;
pub mod object;
pub mod phase;
pub mod prune;
pub mod review;
pub mod revisions;
pub mod run;
pub mod status;
pub mod subset;
pub mod warnings;
