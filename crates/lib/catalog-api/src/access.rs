//! Who may read a catalog: the request's bearer token is authenticated with a TokenReview,
//! and the user it names is authorised with a SubjectAccessReview for `get` on the
//! `catalogs/content` subresource of the Catalog (group `deppy.io`). So a Role or ClusterRole
//! grants reading one catalog (`resourceNames`) or all of them, as for any other object.
//!
//! Answers are cached briefly per token and catalog ([`ALLOWED_FOR`], [`DENIED_FOR`]), as the
//! API server caches webhook authentication and authorisation: a client paging through a
//! catalog costs two reviews, not two per request. The token is kept only as its SHA-256.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kit::kube_error::KubeCallError;
use kube::api::PostParams;
use kube::{Api, Client};
use sha2::{Digest, Sha256};

/// The API group of the resource and subresource that reading is authorised on.
pub const GROUP: &str = "deppy.io";
/// The resource.
pub const RESOURCE: &str = "catalogs";
/// The subresource; `get` on it allows reading the catalog's content.
pub const SUBRESOURCE: &str = "content";

/// How long an allowed answer is reused.
pub const ALLOWED_FOR: Duration = Duration::from_secs(10);
/// How long a refusal is reused (short, so a new RoleBinding takes effect quickly).
pub const DENIED_FOR: Duration = Duration::from_secs(2);
/// Beyond this many cached answers the cache is emptied (a flood of distinct tokens must
/// not grow memory).
const CACHE_LIMIT: usize = 10_000;

/// Why a request may not read a catalog; each is a sentence for the response body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Denied {
    /// No `Authorization: Bearer` header.
    #[error(
        "this API needs a bearer token: send \"Authorization: Bearer TOKEN\" with a ServiceAccount token or the token your kubeconfig uses"
    )]
    NoToken,
    /// The API server did not accept the token.
    #[error("the bearer token was not accepted by the Kubernetes API server{0}")]
    BadToken(String),
    /// The user may not read this catalog.
    #[error(
        "user {user:?} may not read Catalog {catalog:?}: it needs \"get\" on \"catalogs/content\" in API group \"deppy.io\" for this Catalog"
    )]
    Forbidden {
        /// The authenticated user's name.
        user: String,
        /// The catalog asked for.
        catalog: String,
    },
    /// The reviews could not be made (API server unreachable, or this server may not
    /// create reviews).
    #[error("could not check access with the Kubernetes API server: {0}; try again")]
    Unavailable(String),
}

/// The token's SHA-256 and the catalog's name.
type CacheKey = ([u8; 32], String);
/// An answer and until when it may be reused.
type Answer = (Instant, Result<String, Denied>);

/// Checks access with the API server; see the [module documentation](self).
pub struct Access {
    client: Client,
    cache: Mutex<HashMap<CacheKey, Answer>>,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access").finish_non_exhaustive()
    }
}

impl Access {
    /// Checks with the API server `client` talks to; the client's identity needs `create`
    /// on `tokenreviews` and `subjectaccessreviews`.
    pub fn new(client: Client) -> Self {
        Self {
            client,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The user the `Authorization` header names, if they may read `catalog`.
    pub async fn check(
        &self,
        authorization: Option<&str>,
        catalog: &str,
    ) -> Result<String, Denied> {
        let token = authorization
            .and_then(|value| value.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|token| !token.is_empty())
            .ok_or(Denied::NoToken)?;
        let key = (Sha256::digest(token.as_bytes()).into(), catalog.to_owned());
        if let Some(answer) = self.cached(&key) {
            return answer;
        }
        let answer = self.review(token, catalog).await;
        // An unreachable API server is not an answer to remember.
        if !matches!(answer, Err(Denied::Unavailable(_))) {
            let ttl = if answer.is_ok() {
                ALLOWED_FOR
            } else {
                DENIED_FOR
            };
            let mut cache = self
                .cache
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if cache.len() >= CACHE_LIMIT {
                cache.clear();
            }
            cache.insert(key, (Instant::now() + ttl, answer.clone()));
        }
        answer
    }

    fn cached(&self, key: &CacheKey) -> Option<Result<String, Denied>> {
        let cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        cache
            .get(key)
            .filter(|(until, _)| Instant::now() < *until)
            .map(|(_, answer)| answer.clone())
    }

    async fn review(&self, token: &str, catalog: &str) -> Result<String, Denied> {
        let unavailable = |what: &'static str| {
            move |err: kube::Error| {
                Denied::Unavailable(kit::error_chain(&KubeCallError::new("create", what, err)))
            }
        };
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: token.to_owned(),
                audiences: None,
            },
            ..TokenReview::default()
        };
        let reviewed = Api::<TokenReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(unavailable("a TokenReview"))?;
        let status = reviewed.status.unwrap_or_default();
        let user = status.user.unwrap_or_default();
        let Some(name) = user.username.filter(|_| status.authenticated == Some(true)) else {
            let why = status
                .error
                .filter(|e| !e.is_empty())
                .map(|e| format!(": {e}"))
                .unwrap_or_default();
            return Err(Denied::BadToken(why));
        };
        let access = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(name.clone()),
                groups: user.groups,
                uid: user.uid,
                extra: user.extra,
                resource_attributes: Some(ResourceAttributes {
                    group: Some(GROUP.to_owned()),
                    resource: Some(RESOURCE.to_owned()),
                    subresource: Some(SUBRESOURCE.to_owned()),
                    verb: Some("get".to_owned()),
                    name: Some(catalog.to_owned()),
                    ..ResourceAttributes::default()
                }),
                ..SubjectAccessReviewSpec::default()
            },
            ..SubjectAccessReview::default()
        };
        let decided = Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&PostParams::default(), &access)
            .await
            .map_err(unavailable("a SubjectAccessReview"))?;
        if decided.status.is_some_and(|s| s.allowed) {
            Ok(name)
        } else {
            Err(Denied::Forbidden {
                user: name,
                catalog: catalog.to_owned(),
            })
        }
    }
}
