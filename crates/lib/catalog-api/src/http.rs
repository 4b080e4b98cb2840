//! The HTTP routes: catalogd's paths (`/catalogs/NAME/api/v1/all` and `.../metas`),
//! `.../packages` and `.../upgrades`, with access checks, conditional requests, gzip and bounded streaming.
//! The same three paths are served under the aggregated API's prefix,
//! `/apis/catalogs.deppy.io/v1/catalogs/NAME/content/api/v1/...`, where the Kubernetes API
//! server forwards them, with the discovery documents it asks for.
//!
//! Order of checks, each answered with a sentence: malformed request (400), access (401,
//! 403, or 503 when the API server cannot be asked), unknown catalog or package (404),
//! unchanged content (304). Before access, a request takes one of [`MAX_IN_FLIGHT`] slots
//! (503 when none is free), held until its body ends: a flood of made-up tokens cannot
//! make this server flood the API server with reviews. Access comes before existence, so a
//! user who may not read a catalog cannot learn whether it exists.

use std::collections::VecDeque;
use std::io::Write as _;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::body::Body;
use axum::extract::{Extension, Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use flate2::Compression;
use flate2::write::GzEncoder;
use futures::future::BoxFuture;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::access::{Access, Credentials, Denied, GROUP};
use crate::front_proxy::Peer;
use crate::store::{Filter, StoredCatalog};
use crate::upgrades::{UpgradesError, UpgradesQuery};

/// How much of the store file one read takes: large enough that a whole catalog streams at
/// disk-cache speed, small enough that a stalled client holds little.
const CHUNK: u64 = 256 * 1024;

/// Requests answered at once (access checks and streaming responses), beyond which a
/// request gets 503 and `Retry-After`.
pub const MAX_IN_FLIGHT: usize = 64;

/// The catalogs the API serves, by Catalog name.
pub trait Catalogs: Send + Sync + 'static {
    /// The content currently served for `name`.
    fn stored(&self, name: &str) -> Option<Arc<StoredCatalog>>;
}

/// Decides whether a request may read a catalog ([`Access`] in production).
pub trait Authorize: Send + Sync + 'static {
    /// The user `credentials` name, if they may read `catalog`.
    fn check<'a>(
        &'a self,
        credentials: &'a Credentials,
        catalog: &'a str,
    ) -> BoxFuture<'a, Result<String, Denied>>;
}

impl Authorize for Access {
    fn check<'a>(
        &'a self,
        credentials: &'a Credentials,
        catalog: &'a str,
    ) -> BoxFuture<'a, Result<String, Denied>> {
        Box::pin(Access::check(self, credentials, catalog))
    }
}

/// The aggregated API's version.
pub const VERSION: &str = "v1";

/// Where the API server forwards a catalog's paths: `{AGGREGATED_PREFIX}/NAME/content` is
/// a catalog's base, as `/catalogs/NAME` is on the Service.
pub const AGGREGATED_PREFIX: &str = "/apis/catalogs.deppy.io/v1/catalogs";

/// What the routes share.
struct Api {
    catalogs: Arc<dyn Catalogs>,
    access: Arc<dyn Authorize>,
    in_flight: Arc<Semaphore>,
}

/// The API's routes over `catalogs`, checked by `access`.
pub fn router(catalogs: Arc<dyn Catalogs>, access: Arc<dyn Authorize>) -> Router {
    let api = Arc::new(Api {
        catalogs,
        access,
        in_flight: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
    });
    // One catalog's paths, under its base on the Service and where the API server forwards.
    let catalog = Router::new().route("/api/v1/{query}", get(query));
    Router::new()
        .nest("/catalogs/{name}", catalog.clone())
        .nest(&format!("{AGGREGATED_PREFIX}/{{name}}/content"), catalog)
        .route("/apis", get(group_list))
        .route(&format!("/apis/{GROUP}"), get(group))
        .route(&format!("/apis/{GROUP}/{VERSION}"), get(resource_list))
        .fallback(not_a_path)
        .with_state(api)
}

/// What a request asks for.
enum Query {
    All,
    Metas(Filter),
    Packages,
    Upgrades(UpgradesQuery),
}

/// Every catalog path: `NAME` and which query (`all`, `metas`, `packages`, `upgrades`), its
/// parameters read by that query's parser, then [`Api::respond`].
async fn query(
    State(api): State<Arc<Api>>,
    peer: Option<Extension<Peer>>,
    Path((name, path)): Path<(String, String)>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
) -> Response {
    let raw = raw.as_deref();
    let parsed = match path.as_str() {
        "all" => no_parameters(raw).map(|()| Query::All),
        "metas" => filter(raw).map(Query::Metas),
        "packages" => no_parameters(raw).map(|()| Query::Packages),
        "upgrades" => upgrades_query(raw).map(Query::Upgrades),
        _ => return not_a_path().await,
    };
    match parsed {
        Ok(query) => {
            let credentials = credentials(peer.map(|Extension(peer)| peer).as_ref(), &headers);
            api.respond(&name, &headers, &credentials, query).await
        }
        Err(BadRequest(why)) => sentence(StatusCode::BAD_REQUEST, why),
    }
}

/// Who the request says it is: the forwarded user when the connection is the API server's
/// front proxy and it forwarded one, else the bearer token. User headers from any other
/// client are ignored.
fn credentials(peer: Option<&Peer>, headers: &HeaderMap) -> Credentials {
    if let Some(Peer::FrontProxy(config)) = peer
        && let Some(user) = config.forwarded_user(headers)
    {
        return Credentials::Forwarded(user);
    }
    Credentials::bearer(
        headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok()),
    )
}

async fn not_a_path() -> Response {
    sentence(
        StatusCode::NOT_FOUND,
        "no such path: this API serves /catalogs/NAME/api/v1/ all, metas, packages and upgrades, and the same under /apis/catalogs.deppy.io/v1/catalogs/NAME/content",
    )
}

/// Discovery documents the API server reads to register the aggregated API. They say only
/// that the group exists, so they are served to anyone.
async fn group_list() -> Response {
    json(&serde_json::json!({
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [group_document()],
    }))
}

async fn group() -> Response {
    json(&group_document())
}

fn group_document() -> serde_json::Value {
    let version =
        serde_json::json!({"groupVersion": format!("{GROUP}/{VERSION}"), "version": VERSION});
    serde_json::json!({
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": GROUP,
        "versions": [version],
        "preferredVersion": version,
    })
}

async fn resource_list() -> Response {
    json(&serde_json::json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": format!("{GROUP}/{VERSION}"),
        // Only a subresource: there is nothing to list, and `kubectl api-resources` leaves
        // subresources out.
        "resources": [{
            "name": "catalogs/content",
            "singularName": "",
            "namespaced": false,
            "kind": "CatalogContent",
            "verbs": ["get"],
        }],
    }))
}

fn json(value: &serde_json::Value) -> Response {
    let mut response = (StatusCode::OK, value.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A plain-text response holding one sentence.
fn sentence(status: StatusCode, text: impl Into<String>) -> Response {
    let mut text = text.into();
    text.push('\n');
    let mut response = (status, text).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// A malformed query, with the sentence saying which parameter.
#[derive(Debug)]
struct BadRequest(String);

fn no_parameters(query: Option<&str>) -> Result<(), BadRequest> {
    match form_urlencoded::parse(query.unwrap_or_default().as_bytes()).next() {
        None => Ok(()),
        Some((key, _)) => Err(BadRequest(format!(
            "query parameter {key:?} is not known here: this path takes no parameters"
        ))),
    }
}

/// The query's parameters by name (`N` of them, in the order of `known`): each one of
/// `known`, at most once and not empty; `path` names the path in the sentence.
fn parameters<const N: usize>(
    query: Option<&str>,
    path: &str,
    known: [&str; N],
) -> Result<[Option<String>; N], BadRequest> {
    let mut values: [Option<String>; N] = std::array::from_fn(|_| None);
    for (key, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        let Some(slot) = known
            .iter()
            .position(|k| *k == key)
            .map(|at| &mut values[at])
        else {
            let (last, rest) = known.split_last().map_or(("", &[][..]), |(l, r)| (*l, r));
            return Err(BadRequest(format!(
                "query parameter {key:?} is not known: {path} takes {} and {last}",
                rest.join(", ")
            )));
        };
        if value.is_empty() {
            return Err(BadRequest(format!(
                "query parameter {key:?} is empty: give a value or leave it out"
            )));
        }
        if slot.is_some() {
            return Err(BadRequest(format!(
                "query parameter {key:?} is given more than once"
            )));
        }
        *slot = Some(value.into_owned());
    }
    Ok(values)
}

/// The `metas` filter: `schema`, `package` and `name`.
fn filter(query: Option<&str>) -> Result<Filter, BadRequest> {
    let [schema, package, name] = parameters(query, "metas", ["schema", "package", "name"])?;
    Ok(Filter {
        schema,
        package,
        name,
    })
}

/// The `upgrades` query: `package` and `from` (a version) required, `channel` optional.
fn upgrades_query(query: Option<&str>) -> Result<UpgradesQuery, BadRequest> {
    let [package, from, channel] = parameters(query, "upgrades", ["package", "from", "channel"])?;
    let required = |name: &str| {
        BadRequest(format!(
            "query parameter {name:?} is required: upgrades?package=NAME&from=VERSION[&channel=NAME]"
        ))
    };
    let package = package.ok_or_else(|| required("package"))?;
    let from = from.ok_or_else(|| required("from"))?;
    let version = from.trim_start_matches('v').parse().map_err(|err| {
        BadRequest(format!(
            "query parameter \"from\" is not a version (semver, e.g. 1.2.3): {from:?}: {err}"
        ))
    })?;
    Ok(UpgradesQuery {
        package,
        from: version,
        channel,
    })
}

/// Whether `name` can be a Catalog's name (a DNS subdomain).
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

impl Api {
    async fn respond(
        &self,
        name: &str,
        headers: &HeaderMap,
        credentials: &Credentials,
        query: Query,
    ) -> Response {
        if !valid_name(name) {
            return sentence(
                StatusCode::BAD_REQUEST,
                format!("{name:?} is not a Catalog name (lowercase letters, digits, '-' and '.')"),
            );
        }
        // Taken before access is checked, so that requests with made-up tokens cannot have
        // this server send the API server more than MAX_IN_FLIGHT reviews at once.
        let Ok(permit) = self.in_flight.clone().try_acquire_owned() else {
            let mut response = sentence(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "this server is answering {MAX_IN_FLIGHT} requests already; retry in a second"
                ),
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            return response;
        };
        if let Err(denied) = self.access.check(credentials, name).await {
            return denial(&denied);
        }
        let Some(stored) = self.catalogs.stored(name) else {
            return sentence(
                StatusCode::NOT_FOUND,
                format!(
                    "Catalog {name:?} is not served: it does not exist or its content is not unpacked yet (see `kubectl get catalog {name}`)"
                ),
            );
        };
        let package = match &query {
            Query::Metas(Filter {
                package: Some(package),
                ..
            }) => Some(package),
            Query::Upgrades(upgrades) => Some(&upgrades.package),
            _ => None,
        };
        if let Some(package) = package
            && !stored.has_package(package)
        {
            return sentence(
                StatusCode::NOT_FOUND,
                format!("Catalog {name:?} has no package {package:?}"),
            );
        }
        // Computed before the conditional check: a version the catalog lacks is a 404
        // whatever the client holds.
        let upgrades = match &query {
            Query::Upgrades(upgrades) => {
                let (stored, catalog, upgrades) =
                    (stored.clone(), name.to_owned(), upgrades.clone());
                let answer = tokio::task::spawn_blocking(move || {
                    crate::upgrades::answer(&stored, &catalog, &upgrades)
                })
                .await;
                match answer {
                    Ok(Ok(json)) => Some(Bytes::from(json)),
                    Ok(Err(missing @ UpgradesError::NoSuchVersion { .. })) => {
                        return sentence(StatusCode::NOT_FOUND, missing.to_string());
                    }
                    Ok(Err(err)) => {
                        return sentence(StatusCode::INTERNAL_SERVER_ERROR, kit::error_chain(&err));
                    }
                    Err(_) => {
                        return sentence(
                            StatusCode::INTERNAL_SERVER_ERROR,
                            "computing the upgrades failed; try again",
                        );
                    }
                }
            }
            _ => None,
        };
        let gzip = accepts_gzip(headers);
        let etag = etag(stored.etag(), gzip);
        let modified = httpdate::fmt_http_date(stored.modified());
        if unchanged(headers, &etag, stored.modified()) {
            return cached(
                StatusCode::NOT_MODIFIED,
                &etag,
                &modified,
                Body::empty(),
                gzip,
            );
        }
        let (body, len, content_type) = match query {
            Query::Packages => {
                let json = stored.packages();
                let len = json.len() as u64;
                (Chunks::Memory(Some(json)), len, "application/json")
            }
            Query::Upgrades(_) => {
                let json = upgrades.unwrap_or_default();
                let len = json.len() as u64;
                (Chunks::Memory(Some(json)), len, "application/json")
            }
            Query::All => {
                let selection = stored.all();
                (
                    Chunks::File(stored.clone(), selection.spans.into()),
                    selection.len,
                    "application/jsonl",
                )
            }
            Query::Metas(filter) => {
                let selection = stored.select(&filter);
                (
                    Chunks::File(stored.clone(), selection.spans.into()),
                    selection.len,
                    "application/jsonl",
                )
            }
        };
        let body = stream(body, gzip, permit);
        let mut response = cached(StatusCode::OK, &etag, &modified, body, gzip);
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        if !gzip {
            headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
        }
        response
    }
}

fn denial(denied: &Denied) -> Response {
    let status = match denied {
        Denied::NoToken | Denied::BadToken(_) => StatusCode::UNAUTHORIZED,
        Denied::Forbidden { .. } => StatusCode::FORBIDDEN,
        Denied::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
    };
    let mut response = sentence(status, denied.to_string());
    if status == StatusCode::UNAUTHORIZED {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    response
}

/// A response with the validators and caching headers every answer carries.
fn cached(status: StatusCode, etag: &str, modified: &str, body: Body, gzip: bool) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(etag) {
        headers.insert(header::ETAG, value);
    }
    if let Ok(value) = HeaderValue::from_str(modified) {
        headers.insert(header::LAST_MODIFIED, value);
    }
    // Answers depend on who asks: shared caches must not keep them.
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-cache"),
    );
    headers.insert(
        header::VARY,
        HeaderValue::from_static("Accept-Encoding, Authorization"),
    );
    if gzip && status == StatusCode::OK {
        headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    response
}

/// A strong validator per representation: the gzip one differs from the identity one.
fn etag(digest: &str, gzip: bool) -> String {
    let digest = digest.trim_matches('"');
    if gzip {
        format!("\"{digest}-gzip\"")
    } else {
        format!("\"{digest}\"")
    }
}

/// Whether the client's copy is current: `If-None-Match` when sent, else
/// `If-Modified-Since` (to the second, as HTTP dates are).
fn unchanged(headers: &HeaderMap, etag: &str, modified: SystemTime) -> bool {
    if let Some(tags) = headers.get(header::IF_NONE_MATCH) {
        let Ok(tags) = tags.to_str() else {
            return false;
        };
        return tags
            .split(',')
            .map(str::trim)
            .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == etag);
    }
    let since = headers
        .get(header::IF_MODIFIED_SINCE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| httpdate::parse_http_date(value).ok());
    let seconds = |time: SystemTime| {
        time.duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
            .as_secs()
    };
    since.is_some_and(|since| seconds(modified) <= seconds(since))
}

/// Whether `Accept-Encoding` lists gzip with a weight above zero.
fn accepts_gzip(headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    value.split(',').any(|coding| {
        let mut parts = coding.split(';').map(str::trim);
        let name = parts.next().unwrap_or_default();
        let weight = parts
            .find_map(|p| p.strip_prefix("q="))
            .and_then(|q| q.parse::<f32>().ok())
            .unwrap_or(1.0);
        name.eq_ignore_ascii_case("gzip") && weight > 0.0
    })
}

/// Where a body's bytes come from.
enum Chunks {
    /// Ranges of a store file, read [`CHUNK`] bytes at a time.
    File(Arc<StoredCatalog>, VecDeque<(u64, u64)>),
    /// Bytes already in memory.
    Memory(Option<Bytes>),
}

impl Chunks {
    /// The next piece, read off the async workers; `None` at the end.
    async fn next(&mut self) -> Option<std::io::Result<Bytes>> {
        match self {
            Chunks::Memory(bytes) => bytes.take().map(Ok),
            Chunks::File(store, spans) => {
                let (start, end) = spans.pop_front()?;
                let len = (end - start).min(CHUNK);
                if start + len < end {
                    spans.push_front((start + len, end));
                }
                let store = store.clone();
                let read = tokio::task::spawn_blocking(move || store.read(start, len as usize));
                Some(match read.await {
                    Ok(Ok(bytes)) => Ok(bytes),
                    Ok(Err(err)) => Err(std::io::Error::other(err)),
                    Err(err) => Err(std::io::Error::other(err)),
                })
            }
        }
    }
}

/// The body: chunks as they are read, gzip-compressed if asked. The stream is pulled only as
/// fast as the client takes it, so a slow client holds one chunk, and a stalled one is cut
/// off by the connection's write timeout. `permit` is held until the body ends.
fn stream(chunks: Chunks, gzip: bool, permit: OwnedSemaphorePermit) -> Body {
    struct Streaming {
        chunks: Chunks,
        encoder: Option<GzEncoder<Vec<u8>>>,
        finished: bool,
        _permit: OwnedSemaphorePermit,
    }
    let state = Streaming {
        chunks,
        encoder: gzip.then(|| GzEncoder::new(Vec::new(), Compression::fast())),
        finished: false,
        _permit: permit,
    };
    let stream = futures::stream::unfold(state, |mut state| async move {
        loop {
            if state.finished {
                return None;
            }
            let next = state.chunks.next().await;
            let Some(encoder) = state.encoder.as_mut() else {
                return next.map(|chunk| (chunk, state));
            };
            let compressed = match next {
                Some(Ok(chunk)) => encoder
                    .write_all(&chunk)
                    .map(|()| std::mem::take(encoder.get_mut())),
                Some(Err(err)) => Err(err),
                None => {
                    state.finished = true;
                    state
                        .encoder
                        .take()
                        .map_or_else(|| Ok(Vec::new()), GzEncoder::finish)
                }
            };
            match compressed {
                Ok(bytes) if bytes.is_empty() => {}
                Ok(bytes) => return Some((Ok(Bytes::from(bytes)), state)),
                Err(err) => {
                    state.finished = true;
                    return Some((Err(err), state));
                }
            }
        }
    });
    Body::from_stream(stream)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn metas_parameters_are_checked_by_name() {
        assert_eq!(
            filter(Some("schema=olm.bundle&package=a%20b")).unwrap(),
            Filter {
                schema: Some("olm.bundle".into()),
                package: Some("a b".into()),
                name: None
            }
        );
        assert_eq!(filter(None).unwrap(), Filter::default());
        for bad in ["pakage=a", "schema=", "name=a&name=b"] {
            let BadRequest(why) = filter(Some(bad)).unwrap_err();
            assert!(why.starts_with("query parameter"), "{bad}: {why}");
        }
    }

    #[test]
    fn upgrades_parameters_are_checked_by_name() {
        let query = upgrades_query(Some("package=a&from=v1.2.3&channel=stable")).unwrap();
        assert_eq!(query.package, "a");
        assert_eq!(query.from.to_string(), "1.2.3");
        assert_eq!(query.channel.as_deref(), Some("stable"));
        for (bad, names) in [
            ("from=1.0.0", "\"package\" is required"),
            ("package=a", "\"from\" is required"),
            ("package=a&from=latest", "\"from\" is not a version"),
            ("package=a&from=1.0.0&version=2", "\"version\" is not known"),
            ("package=a&package=b&from=1.0.0", "more than once"),
        ] {
            let BadRequest(why) = upgrades_query(Some(bad)).unwrap_err();
            assert!(why.contains(names), "{bad}: {why}");
        }
    }

    #[test]
    fn gzip_is_chosen_only_when_accepted_with_weight() {
        let with = |value: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::ACCEPT_ENCODING, HeaderValue::from_static(value));
            accepts_gzip(&headers)
        };
        assert!(with("gzip"));
        assert!(with("br, GZIP;q=0.5"));
        assert!(!with("gzip;q=0"));
        assert!(!with("identity"));
        assert!(!accepts_gzip(&HeaderMap::new()));
    }

    #[test]
    fn conditional_requests_compare_tags_then_dates() {
        let modified = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let with = |name, value: String| {
            let mut headers = HeaderMap::new();
            headers.insert(name, HeaderValue::from_str(&value).unwrap());
            headers
        };
        let tag = etag("sha256:ab", false);
        assert_eq!(tag, "\"sha256:ab\"");
        assert!(unchanged(
            &with(header::IF_NONE_MATCH, format!("\"x\", W/{tag}")),
            &tag,
            modified
        ));
        assert!(!unchanged(
            &with(header::IF_NONE_MATCH, etag("sha256:ab", true)),
            &tag,
            modified
        ));
        let date = httpdate::fmt_http_date(modified);
        assert!(unchanged(
            &with(header::IF_MODIFIED_SINCE, date.clone()),
            &tag,
            modified
        ));
        let earlier = httpdate::fmt_http_date(modified - Duration::from_secs(1));
        assert!(!unchanged(
            &with(header::IF_MODIFIED_SINCE, earlier),
            &tag,
            modified
        ));
        // A tag that does not match wins over a date that would.
        let mut both = with(header::IF_MODIFIED_SINCE, date);
        both.insert(header::IF_NONE_MATCH, HeaderValue::from_static("\"other\""));
        assert!(!unchanged(&both, &tag, modified));
    }

    #[test]
    fn catalog_names_are_dns_subdomains() {
        assert!(valid_name("operatorhub.io-1"));
        for bad in ["", "A", "-a", "a-", "a/b", &"a".repeat(254)] {
            assert!(!valid_name(bad), "{bad}");
        }
    }
}
