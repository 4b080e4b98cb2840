//! The apply engine: how a set of objects is written to the cluster and kept there. It
//! knows nothing of BundleDeployments' lifecycle (that is the `provisioner` crate); it is
//! given objects, an owner and the previous inventory, and applies, reviews or deletes.
//!
//! - [`apply`]: the [`apply::Applier`]: ordered server-side apply, collisions and CRD
//!   safety checked before the first write, waiting for what later objects need,
//!   inventory, prune, and deletion that keeps user data;
//! - [`review`]: what applying would add, change, remove and grant, for an approval;
//! - [`kinds`]: discovery, asked once per kind and shared by every reconcile;
//! - [`subset`]: the drift test that keeps steady-state resyncs free of writes;
//! - [`manifest`]: parse bundle manifests into objects;
//! - [`object`]: object identity and the owner labels on everything applied;
//! - [`phase`]: apply and delete order;
//! - [`collision`]: whether an existing object may be taken over;
//! - [`prune`]: which objects a pivot removes;
//! - [`drift`]: label-filtered watches that turn changes of managed objects into reconciles;
//! - [`crd_safety`]: CRD upgrade safety checks, run before any CRD update.
//!
//! Health verdicts (the rule per kind and declared CEL checks) come from the `health` crate.

pub mod apply;
pub mod collision;
pub mod crd_safety;
pub mod drift;
pub mod kinds;
pub mod manifest;
pub mod object;
pub mod phase;
pub mod prune;
pub mod review;
pub mod subset;
