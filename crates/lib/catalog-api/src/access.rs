//! Who may read a catalog. The user is either the one the request's bearer token names
//! (authenticated with a TokenReview) or the one the API server's front proxy forwarded
//! (see [`front_proxy`](crate::front_proxy)). Either way the user is authorised with a
//! SubjectAccessReview for `get` on the `catalogs/content` subresource in API group
//! `catalogs.deppy.io`, named after the Catalog. That is the same check the API server makes
//! before it forwards `/apis/catalogs.deppy.io/v1/catalogs/NAME/content/...`, so one
//! ClusterRole rule grants both ways in, for one catalog (`resourceNames`) or all of them.
//!
//! Answers are cached briefly per caller and catalog ([`ALLOWED_FOR`], [`DENIED_FOR`]), as the
//! API server caches webhook authentication and authorisation: a client paging through a
//! catalog costs two reviews, not two per request. A token is kept only as its SHA-256.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kit::kube_error::KubeCallError;
use kube::api::PostParams;
use kube::{Api, Client};
use sha2::{Digest, Sha256};

use crate::front_proxy::ForwardedUser;

/// The API group of the resource and subresource that reading is authorised on; also the
/// aggregated API's group.
pub const GROUP: &str = "catalogs.deppy.io";
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
        "user {user:?} may not read Catalog {catalog:?}: it needs \"get\" on \"catalogs/content\" in API group \"catalogs.deppy.io\" for this Catalog"
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

/// Who a request says it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credentials {
    /// Nothing: no bearer token and no forwarded user.
    None,
    /// The `Authorization: Bearer` token.
    Token(String),
    /// A user the API server's front proxy authenticated and forwarded.
    Forwarded(ForwardedUser),
}

impl Credentials {
    /// The bearer token in an `Authorization` header value, if any.
    pub fn bearer(authorization: Option<&str>) -> Self {
        authorization
            .and_then(|value| value.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|token| !token.is_empty())
            .map_or(Self::None, |token| Self::Token(token.to_owned()))
    }

    /// A digest naming the caller in the cache: a token's, or a forwarded user's whole
    /// identity (name, UID, groups and extra), so that two users never share an answer.
    fn digest(&self) -> [u8; 32] {
        let mut hash = Sha256::new();
        match self {
            Self::None => hash.update(b"none"),
            Self::Token(token) => {
                hash.update(b"token\0");
                hash.update(token.as_bytes());
            }
            Self::Forwarded(user) => {
                hash.update(b"forwarded\0");
                // Length-prefixed fields and counted lists: no two identities serialise
                // alike.
                let mut count = |n: usize| hash.update((n as u64).to_le_bytes());
                let mut fields: Vec<&[u8]> = vec![user.name.as_bytes()];
                fields.push(user.uid.as_deref().unwrap_or_default().as_bytes());
                count(user.groups.len());
                fields.extend(user.groups.iter().map(|g| g.as_bytes()));
                let mut counts = vec![user.extra.len()];
                for (key, values) in &user.extra {
                    counts.push(values.len());
                    fields.push(key.as_bytes());
                    fields.extend(values.iter().map(|v| v.as_bytes()));
                }
                for n in counts {
                    count(n);
                }
                for field in fields {
                    hash.update((field.len() as u64).to_le_bytes());
                    hash.update(field);
                }
            }
        }
        hash.finalize().into()
    }
}

/// A failed review call, as a sentence.
fn unavailable(what: &'static str) -> impl Fn(kube::Error) -> Denied {
    move |err| Denied::Unavailable(kit::error_chain(&KubeCallError::new("create", what, err)))
}

/// The caller's digest and the catalog's name.
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

    /// The user `credentials` name, if they may read `catalog`.
    pub async fn check(&self, credentials: &Credentials, catalog: &str) -> Result<String, Denied> {
        if *credentials == Credentials::None {
            return Err(Denied::NoToken);
        }
        let key = (credentials.digest(), catalog.to_owned());
        if let Some(answer) = self.cached(&key) {
            return answer;
        }
        let answer = self.review(credentials, catalog).await;
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

    async fn review(&self, credentials: &Credentials, catalog: &str) -> Result<String, Denied> {
        let user = match credentials {
            Credentials::None => return Err(Denied::NoToken),
            Credentials::Token(token) => self.authenticate(token).await?,
            Credentials::Forwarded(user) => UserInfo {
                username: Some(user.name.clone()),
                uid: user.uid.clone(),
                groups: Some(user.groups.clone()),
                extra: (!user.extra.is_empty()).then(|| user.extra.clone()),
            },
        };
        self.authorize(user, catalog).await
    }

    /// The user a bearer token names, from a TokenReview.
    async fn authenticate(&self, token: &str) -> Result<UserInfo, Denied> {
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
        if status.authenticated != Some(true) || user.username.is_none() {
            let why = status
                .error
                .filter(|e| !e.is_empty())
                .map(|e| format!(": {e}"))
                .unwrap_or_default();
            return Err(Denied::BadToken(why));
        }
        Ok(user)
    }

    /// Whether `user` may read `catalog`, from a SubjectAccessReview.
    async fn authorize(&self, user: UserInfo, catalog: &str) -> Result<String, Denied> {
        let name = user.username.unwrap_or_default();
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn user(groups: &[&str], extra: &[(&str, &[&str])]) -> Credentials {
        Credentials::Forwarded(ForwardedUser {
            name: "alice".to_owned(),
            uid: None,
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            extra: extra
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.iter().map(|s| (*s).to_owned()).collect()))
                .collect::<BTreeMap<_, _>>(),
        })
    }

    #[test]
    fn cache_keys_tell_every_identity_apart() {
        let same = user(&["a"], &[("k", &["v"])]);
        assert_eq!(same.digest(), user(&["a"], &[("k", &["v"])]).digest());
        let others = [
            user(&["a", "k"], &[]),
            user(&["a"], &[("k", &[])]),
            user(&["a"], &[("k", &["v", ""])]),
            user(&[], &[("a", &[]), ("k", &["v"])]),
            Credentials::Token("alice".to_owned()),
            Credentials::bearer(Some("Bearer alice")),
        ];
        for other in &others[..4] {
            assert_ne!(same.digest(), other.digest(), "{other:?}");
        }
        assert_eq!(others[4], others[5]);
        assert_eq!(Credentials::bearer(Some("Basic x")), Credentials::None);
        assert_eq!(Credentials::bearer(Some("Bearer  ")), Credentials::None);
    }
}
