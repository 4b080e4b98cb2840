//! The catalog query API: each served Catalog's blobs over HTTPS, on catalogd's paths.
//!
//! - [`store`]: a catalog's blobs written once to an unnamed file, one JSON document per
//!   line, with an index of where each blob is; queries read only what they return.
//! - [`packages`]: the `packages` summary (channels, heads, versions, deprecations), which
//!   catalogd does not have.
//! - [`upgrades`]: the `upgrades` query, answered from the package's stored blobs.
//! - [`access`]: TokenReview and SubjectAccessReview (`get` on `catalogs/content`).
//! - [`front_proxy`]: requests the Kubernetes API server forwards (the aggregated API
//!   `catalogs.deppy.io/v1`), trusted by the front proxy's client certificate.
//! - [`http`]: the routes, conditional requests, gzip and bounded streaming.
//! - [`server`]: TLS with a swappable certificate and per-connection timeouts.
//!
//! The API reference is docs/catalog-api.md.

pub mod access;
pub mod front_proxy;
pub mod http;
pub mod packages;
pub mod server;
pub mod store;
pub mod upgrades;

pub use access::{Access, Credentials, Denied};
pub use front_proxy::{FrontProxyConfig, FrontProxyTrust, Peer};
pub use http::{Authorize, Catalogs, router};
pub use packages::{ChannelSummary, PackageSummary};
pub use server::{ServingCertificate, serve};
pub use store::{Filter, Selection, StoreBuilder, StoreError, StoredCatalog};
