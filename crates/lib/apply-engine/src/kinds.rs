//! Which resource serves a kind: API discovery, asked once and shared by every reconcile.
//!
//! Resolving a kind costs two discovery requests (`/apis` and the group version). Asked per
//! object and per reconcile, discovery was most of what a provisioner sent while idle (the
//! registry provisioner: about 2.3 requests/s with two operators installed and a 30 s
//! resync). Kinds that are served are remembered for [`KindCache::TTL`], so a kind whose
//! CRD changed is seen again within minutes; a kind that is not served is asked again every
//! time, because a CRD of the bundle being applied may be about to define it.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use kube::Client;
use kube::api::ApiResource;
use kube::core::GroupVersionKind;
use kube::discovery::{ApiCapabilities, pinned_kind};

/// A served kind: its resource and capabilities (scope, subresources).
pub type Served = (ApiResource, ApiCapabilities);

/// Discovery results by (group, version, kind), shared across reconciles.
#[derive(Debug, Default)]
pub struct KindCache {
    served: Mutex<HashMap<GroupVersionKind, (Instant, Served)>>,
}

impl KindCache {
    /// How long a served kind is trusted without asking again.
    pub const TTL: Duration = Duration::from_secs(300);

    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The resource serving `gvk`, from the cache or asked of the API server through
    /// `client`; `None` when the kind is not served.
    pub async fn resolve(
        &self,
        client: &Client,
        gvk: &GroupVersionKind,
    ) -> Result<Option<Served>, kube::Error> {
        if let Some(served) = self.cached(gvk, Instant::now()) {
            return Ok(Some(served));
        }
        match pinned_kind(client, gvk).await {
            Ok(served) => {
                self.remember(gvk, served.clone(), Instant::now());
                Ok(Some(served))
            }
            Err(kube::Error::Discovery(_)) => Ok(None),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// Forgets `gvk`, e.g. after the API server answered that its resource is not found.
    pub fn forget(&self, gvk: &GroupVersionKind) {
        self.lock().remove(gvk);
    }

    fn cached(&self, gvk: &GroupVersionKind, now: Instant) -> Option<Served> {
        let mut served = self.lock();
        match served.get(gvk) {
            Some((at, found)) if now.duration_since(*at) < Self::TTL => Some(found.clone()),
            Some(_) => {
                served.remove(gvk);
                None
            }
            None => None,
        }
    }

    fn remember(&self, gvk: &GroupVersionKind, found: Served, now: Instant) {
        self.lock().insert(gvk.clone(), (now, found));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<GroupVersionKind, (Instant, Served)>> {
        self.served.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::discovery::Scope;

    fn served(kind: &str) -> Served {
        let gvk = GroupVersionKind::gvk("example.com", "v1", kind);
        (
            ApiResource::from_gvk(&gvk),
            ApiCapabilities {
                scope: Scope::Namespaced,
                subresources: Vec::new(),
                operations: Vec::new(),
            },
        )
    }

    #[test]
    fn a_served_kind_is_remembered_until_its_time_is_up_or_it_is_forgotten() {
        let cache = KindCache::new();
        let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
        let start = Instant::now();
        assert!(cache.cached(&gvk, start).is_none());
        cache.remember(&gvk, served("Widget"), start);
        let hit = cache.cached(&gvk, start + Duration::from_secs(10));
        assert_eq!(hit.map(|(r, _)| r.kind), Some("Widget".to_owned()));
        assert!(cache.cached(&gvk, start + KindCache::TTL).is_none());
        cache.remember(&gvk, served("Widget"), start);
        cache.forget(&gvk);
        assert!(cache.cached(&gvk, start).is_none());
    }
}
