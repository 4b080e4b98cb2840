//! Shared plumbing for the project's controller binaries.
//!
//! Every binary is built the same way, so that an administrator learns one set of flags
//! and one set of endpoints:
//!
//! - [`controller`]: the reconciler toolkit (timing and result counting, the error policy,
//!   Events on condition changes, the Event recorder) and the shape every reconciler has;
//! - [`cli`]: clap option groups with environment fallbacks (client, admin server,
//!   telemetry, leader election), flattened into each binary's `Args`;
//! - [`telemetry`]: tracing setup, plain or JSON;
//! - [`admin`]: one HTTP server with `/metrics`, `/livez` and `/readyz`, where readiness
//!   waits until every registered watch has synced;
//! - [`leader`]: leader election on a `coordination.k8s.io` Lease; a process that loses
//!   the lease stops its controllers;
//! - [`shutdown`]: a cancellation token tripped by SIGTERM or SIGINT;
//! - [`conditions`]: `metav1.Condition` bookkeeping (`lastTransitionTime` only moves on a
//!   status flip; `observedGeneration` always set);
//! - [`retry`]: error classes and per-object exponential backoff with jitter;
//! - [`metrics`]: the reconcile metrics every controller exports;
//! - [`report`]: errors with their whole cause chain, for conditions and Events;
//! - [`secrets`]: a Secret's data as bytes;
//! - [`events`]: publishing Events without failing the reconcile;
//! - [`kube_error`]: the error of a failed API call, named by its verb and object;
//! - [`watch`]: watch settings (optional label selector);
//! - [`status`]: writing a status (server-side apply of the fields a controller owns).

pub mod admin;
pub mod cli;
pub mod conditions;
pub mod controller;
pub mod events;
pub mod kube_error;
pub mod leader;
pub mod metrics;
pub mod report;
pub mod retry;
pub mod secrets;
pub mod serve;
pub mod shutdown;
pub mod status;
pub mod telemetry;
pub mod watch;

pub use report::error_chain;
