//! Watch settings shared by the controllers.

use kube::runtime::watcher;

/// Watch everything, or with `selector` only objects matching that label selector (to
/// shard a kind over several instances, or to run several on one cluster).
pub fn config(selector: Option<&str>) -> watcher::Config {
    match selector {
        Some(selector) => watcher::Config::default().labels(selector),
        None => watcher::Config::default(),
    }
}
