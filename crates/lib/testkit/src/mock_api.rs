//! A mocked API server for tests of what a controller writes, without a cluster.
//!
//! A test lists the exact requests it expects, in order, each with the reply to give
//! ([`Exchange`]); [`serve`] returns a [`kube::Client`] that talks to a server playing that
//! list. [`ApiServer::run`] drives the code under test and then checks that every expected
//! request came and nothing else did; it panics naming the first unexpected or missing
//! request, and gives up after a timeout rather than hang. The same idea as kube-rs's
//! controller-rs `ApiServerVerifier`, over `tower_test::mock::pair`; each test takes
//! milliseconds.
//!
//! ```
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::api::{Api, DeleteParams, PostParams};
//! use serde_json::json;
//! use testkit::mock_api::{self, Exchange};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let (client, server) = mock_api::serve([
//!     Exchange::post("/api/v1/namespaces/ns/configmaps")
//!         .body_includes(json!({"metadata": {"name": "c"}}))
//!         .reply_echo(),
//!     Exchange::delete("/api/v1/namespaces/ns/configmaps/old").not_found(),
//! ]);
//! let api: Api<ConfigMap> = Api::namespaced(client, "ns");
//! let mut config_map = ConfigMap::default();
//! config_map.metadata.name = Some("c".into());
//! let deleted = server
//!     .run(async {
//!         api.create(&PostParams::default(), &config_map).await.unwrap();
//!         api.delete("old", &DeleteParams::default()).await
//!     })
//!     .await;
//! assert!(matches!(deleted, Err(kube::Error::Api(s)) if s.is_not_found()));
//! # }
//! ```
//!
//! Paths are compared with their query, exactly, except that empty query parameters are
//! dropped: kube-client writes `?&force=true&fieldManager=m` and `...configmaps?`, which
//! an expectation spells `?force=true&fieldManager=m` and `...configmaps`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use http::{Method, Request, Response, StatusCode};
use kube::Client;
use kube::client::Body;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};

/// How long [`ApiServer::run`] and [`ApiServer::verify`] wait by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

type BodyCheck = Box<dyn Fn(&Value) + Send>;

/// One expected request and the reply to it.
pub struct Exchange {
    method: Method,
    path: String,
    checks: Vec<BodyCheck>,
    reply: Reply,
}

enum Reply {
    /// This status and JSON body.
    Json(StatusCode, Value),
    /// 200 with the request's own body, as the API server answers a create or an apply.
    Echo,
}

impl Exchange {
    /// A request of `method` to `path` (with its query), answered `200 {}` unless a
    /// `reply*` method says otherwise.
    pub fn new(method: Method, path: &str) -> Self {
        Self {
            method,
            path: normalize(path),
            checks: Vec::new(),
            reply: Reply::Json(StatusCode::OK, json!({})),
        }
    }

    /// A GET of `path`.
    pub fn get(path: &str) -> Self {
        Self::new(Method::GET, path)
    }

    /// A POST (create) to `path`.
    pub fn post(path: &str) -> Self {
        Self::new(Method::POST, path)
    }

    /// A PATCH (merge, JSON or server-side apply) of `path`.
    pub fn patch(path: &str) -> Self {
        Self::new(Method::PATCH, path)
    }

    /// A PUT (replace) of `path`.
    pub fn put(path: &str) -> Self {
        Self::new(Method::PUT, path)
    }

    /// A DELETE of `path`.
    pub fn delete(path: &str) -> Self {
        Self::new(Method::DELETE, path)
    }

    /// Checks the JSON body (`null` when there is none) with `check`, which asserts (its
    /// panic fails the test, naming this request).
    pub fn check_body(mut self, check: impl Fn(&Value) + Send + 'static) -> Self {
        self.checks.push(Box::new(check));
        self
    }

    /// Checks that the JSON body includes `expected`: every member of an expected object
    /// is in the body's object (others may be too), an expected array's items are included
    /// in the body's items at the same positions (more may follow), and anything else is
    /// equal.
    pub fn body_includes(self, expected: Value) -> Self {
        self.check_body(move |body| {
            if let Err(at) = includes(body, &expected, "") {
                panic!("the body differs at `{at}` from {expected}; it is {body}");
            }
        })
    }

    /// Answers 200 with `object` as JSON.
    pub fn reply(mut self, object: &impl Serialize) -> Self {
        let value = serde_json::to_value(object).expect("a reply serialises to JSON");
        self.reply = Reply::Json(StatusCode::OK, value);
        self
    }

    /// Answers 200 with the request's body: what the API server returns for a create or
    /// a server-side apply of a whole object.
    pub fn reply_echo(mut self) -> Self {
        self.reply = Reply::Echo;
        self
    }

    /// Answers `code` with a `metav1.Status` of `reason` (e.g. `409`, `"AlreadyExists"`).
    pub fn reply_status(mut self, code: u16, reason: &str) -> Self {
        let status = StatusCode::from_u16(code).expect("an HTTP status code");
        self.reply = Reply::Json(status, failure(code, reason, "mocked API server"));
        self
    }

    /// Answers 404 NotFound.
    pub fn not_found(self) -> Self {
        self.reply_status(404, "NotFound")
    }

    /// Answers 409 AlreadyExists, as to a create of an object that exists.
    pub fn already_exists(self) -> Self {
        self.reply_status(409, "AlreadyExists")
    }

    /// Answers 409 Conflict, as to a write with a stale resourceVersion or precondition.
    pub fn conflict(self) -> Self {
        self.reply_status(409, "Conflict")
    }

    fn describe(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

/// The mocked API server of one test: see the [module documentation](self). Finish with
/// [`run`](Self::run) or [`verify`](Self::verify); dropping it checks nothing.
pub struct ApiServer {
    expected: Vec<String>,
    progress: watch::Receiver<Progress>,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Progress>,
    timeout: Duration,
}

/// Starts a server that expects `exchanges` in order, and a client of it (default
/// namespace `default`). Needs a Tokio runtime (`#[tokio::test]`).
pub fn serve(exchanges: impl IntoIterator<Item = Exchange>) -> (Client, ApiServer) {
    let exchanges: Vec<Exchange> = exchanges.into_iter().collect();
    let expected = exchanges.iter().map(Exchange::describe).collect();
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let (progress_tx, progress) = watch::channel(Progress::default());
    let (stop, stopped) = oneshot::channel();
    let task = tokio::spawn(play(handle, exchanges, progress_tx, stopped));
    let server = ApiServer {
        expected,
        progress,
        stop: Some(stop),
        task,
        timeout: DEFAULT_TIMEOUT,
    };
    (Client::new(service, "default"), server)
}

impl ApiServer {
    /// Waits at most `timeout` (instead of [`DEFAULT_TIMEOUT`]).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Runs `code` (the code under test), then [`verify`](Self::verify)s, and returns what
    /// `code` returned. A request that did not match is reported here, before the caller
    /// looks at the result (which is then usually an error). Panics when `code` takes
    /// longer than the timeout.
    pub async fn run<F: Future>(self, code: F) -> F::Output {
        let output = match tokio::time::timeout(self.timeout, code).await {
            Ok(output) => output,
            Err(_) => {
                let progress = self.progress.borrow().clone();
                panic!(
                    "the code under test did not finish within {:?}; {}",
                    self.timeout,
                    self.report(&progress)
                );
            }
        };
        self.verify().await;
        output
    }

    /// Waits until every expected request has come (at most the timeout), then stops the
    /// server; panics naming the first unexpected request, or the first missing one.
    pub async fn verify(mut self) {
        let expected = self.expected.len();
        let timed_out = tokio::time::timeout(
            self.timeout,
            self.progress
                .wait_for(|p| p.failure.is_some() || p.served >= expected),
        )
        .await
        .is_err();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let progress = match (&mut self.task).await {
            Ok(progress) => progress,
            Err(err) => std::panic::resume_unwind(err.into_panic()),
        };
        if progress.failure.is_some() || progress.served < expected {
            let waited = if timed_out {
                format!(" (after waiting {:?})", self.timeout)
            } else {
                String::new()
            };
            panic!("{}{waited}", self.report(&progress));
        }
    }

    fn report(&self, progress: &Progress) -> String {
        if let Some(failure) = &progress.failure {
            return failure.clone();
        }
        match self.expected.get(progress.served) {
            Some(missing) => format!(
                "request {} of {} never came: expected {missing}",
                progress.served + 1,
                self.expected.len()
            ),
            None => "every expected request came".to_owned(),
        }
    }
}

#[derive(Debug, Clone, Default)]
struct Progress {
    /// Requests that matched.
    served: usize,
    /// The first mismatch or unexpected request.
    failure: Option<String>,
}

/// Answers requests from `exchanges` until `stopped`; after the first mismatch every
/// request is answered 500, so the code under test fails fast.
async fn play(
    mut handle: tower_test::mock::Handle<Request<Body>, Response<Body>>,
    exchanges: Vec<Exchange>,
    progress: watch::Sender<Progress>,
    mut stopped: oneshot::Receiver<()>,
) -> Progress {
    let total = exchanges.len();
    let mut exchanges = exchanges.into_iter();
    let mut state = Progress::default();
    loop {
        let next = tokio::select! {
            next = handle.next_request() => next,
            _ = &mut stopped => break,
        };
        let Some((request, respond)) = next else {
            break;
        };
        let (parts, body) = request.into_parts();
        let bytes = body.collect_bytes().await.unwrap_or_default();
        let seen = format!(
            "{} {}",
            parts.method,
            normalize(parts.uri.path_and_query().map_or("", |p| p.as_str()))
        );
        let response = if state.failure.is_some() {
            failed(state.failure.as_deref().unwrap_or_default())
        } else {
            let number = state.served + 1;
            match exchanges.next() {
                None => {
                    state.failure = Some(format!(
                        "unexpected request {number} (after all {total} expected): {seen}"
                    ));
                    failed(state.failure.as_deref().unwrap_or_default())
                }
                Some(exchange) => match answer(exchange, &seen, &bytes) {
                    Ok(response) => {
                        state.served += 1;
                        response
                    }
                    Err(why) => {
                        state.failure = Some(format!("request {number} of {total}: {why}"));
                        failed(state.failure.as_deref().unwrap_or_default())
                    }
                },
            }
        };
        respond.send_response(response);
        progress.send_replace(state.clone());
    }
    state
}

/// The reply to a request `seen` with `body` when it is what `exchange` expects.
fn answer(exchange: Exchange, seen: &str, body: &[u8]) -> Result<Response<Body>, String> {
    let expected = exchange.describe();
    if seen != expected {
        return Err(format!("expected {expected}, got {seen}"));
    }
    let json: Value = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(body)
            .map_err(|err| format!("{seen}: the body is not JSON ({err})"))?
    };
    for check in &exchange.checks {
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| check(&json))) {
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("the check panicked");
            return Err(format!("{seen}: {message}"));
        }
    }
    Ok(match exchange.reply {
        Reply::Json(status, value) => response(status, &value),
        Reply::Echo => response(StatusCode::OK, &json),
    })
}

fn response(status: StatusCode, value: &Value) -> Response<Body> {
    let mut response = Response::new(Body::from(value.to_string().into_bytes()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

/// A 500 whose message says what went wrong, so that the error the code under test gets
/// names it too.
fn failed(why: &str) -> Response<Body> {
    response(
        StatusCode::INTERNAL_SERVER_ERROR,
        &failure(500, "InternalError", &format!("mocked API server: {why}")),
    )
}

fn failure(code: u16, reason: &str, message: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Status",
        "status": "Failure",
        "reason": reason,
        "message": message,
        "code": code,
    })
}

/// `path` without empty query parameters (and without `?` when none is left).
fn normalize(path: &str) -> String {
    let Some((path, query)) = path.split_once('?') else {
        return path.to_owned();
    };
    let query: Vec<&str> = query.split('&').filter(|p| !p.is_empty()).collect();
    if query.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{}", query.join("&"))
    }
}

/// Where `actual` does not include `expected` (see [`Exchange::body_includes`]).
fn includes(actual: &Value, expected: &Value, at: &str) -> Result<(), String> {
    match (actual, expected) {
        (Value::Object(actual), Value::Object(expected)) => {
            for (key, value) in expected {
                let at = format!("{at}.{key}");
                match actual.get(key) {
                    Some(member) => includes(member, value, &at)?,
                    None => return Err(at),
                }
            }
            Ok(())
        }
        (Value::Array(actual), Value::Array(expected)) if actual.len() >= expected.len() => {
            for (i, (item, value)) in actual.iter().zip(expected).enumerate() {
                includes(item, value, &format!("{at}[{i}]"))?;
            }
            Ok(())
        }
        _ if actual == expected => Ok(()),
        _ => Err(if at.is_empty() {
            ".".to_owned()
        } else {
            at.to_owned()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, Patch, PatchParams};

    fn config_maps(client: Client) -> Api<ConfigMap> {
        Api::namespaced(client, "ns")
    }

    #[tokio::test]
    async fn an_expected_apply_is_answered_and_checked() {
        let (client, server) = serve([Exchange::patch(
            "/api/v1/namespaces/ns/configmaps/c?force=true&fieldManager=m",
        )
        .body_includes(json!({"data": {"k": "v"}}))
        .reply_echo()]);
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v", "other": "x"}});
        let applied = server
            .run(config_maps(client).patch(
                "c",
                &PatchParams::apply("m").force(),
                &Patch::Apply(&object),
            ))
            .await
            .unwrap();
        assert_eq!(applied.data.unwrap()["other"], "x");
    }

    #[tokio::test]
    async fn statuses_become_api_errors() {
        let (client, server) = serve([
            Exchange::get("/api/v1/namespaces/ns/configmaps/a").not_found(),
            Exchange::get("/api/v1/namespaces/ns/configmaps/b").conflict(),
        ]);
        let api = config_maps(client);
        let (a, b) = server
            .run(async { (api.get_opt("a").await, api.get("b").await) })
            .await;
        assert!(a.unwrap().is_none());
        assert!(matches!(b, Err(kube::Error::Api(s)) if s.is_conflict()));
    }

    async fn panic_message(test: impl Future<Output = ()> + Send + 'static) -> String {
        let err = tokio::spawn(test).await.unwrap_err().into_panic();
        err.downcast_ref::<String>().cloned().unwrap_or_default()
    }

    #[tokio::test]
    async fn a_wrong_request_is_named() {
        let message = panic_message(async {
            let (client, server) = serve([Exchange::delete("/api/v1/namespaces/ns/configmaps/a")]);
            let _ = server.run(config_maps(client).get("a")).await;
        })
        .await;
        assert_eq!(
            message,
            "request 1 of 1: expected DELETE /api/v1/namespaces/ns/configmaps/a, got GET /api/v1/namespaces/ns/configmaps/a"
        );
    }

    #[tokio::test]
    async fn a_failed_body_check_is_named() {
        let message = panic_message(async {
            let (client, server) =
                serve([
                    Exchange::patch("/api/v1/namespaces/ns/configmaps/c?fieldManager=m")
                        .body_includes(json!({"data": {"k": "v"}})),
                ]);
            let _ = server
                .run(config_maps(client).patch(
                    "c",
                    &PatchParams::apply("m"),
                    &Patch::Apply(json!({"data": {"k": "w"}})),
                ))
                .await;
        })
        .await;
        assert!(
            message.starts_with("request 1 of 1: PATCH /api/v1/namespaces/ns/configmaps/c?fieldManager=m: the body differs at `.data.k`"),
            "{message}"
        );
    }

    #[tokio::test]
    async fn an_extra_request_is_named() {
        let message = panic_message(async {
            let (client, server) = serve([]);
            let _ = server.run(config_maps(client).get("a")).await;
        })
        .await;
        assert_eq!(
            message,
            "unexpected request 1 (after all 0 expected): GET /api/v1/namespaces/ns/configmaps/a"
        );
    }

    #[tokio::test]
    async fn a_missing_request_is_named_after_the_timeout() {
        let message = panic_message(async {
            let (_client, server) = serve([Exchange::get("/api/v1/namespaces/ns/configmaps/a")]);
            server
                .with_timeout(Duration::from_millis(20))
                .verify()
                .await;
        })
        .await;
        assert_eq!(
            message,
            "request 1 of 1 never came: expected GET /api/v1/namespaces/ns/configmaps/a (after waiting 20ms)"
        );
    }

    #[tokio::test]
    async fn code_that_hangs_times_out() {
        let message = panic_message(async {
            let (_client, server) = serve([]);
            server
                .with_timeout(Duration::from_millis(20))
                .run(std::future::pending::<()>())
                .await;
        })
        .await;
        assert!(
            message.starts_with("the code under test did not finish within 20ms"),
            "{message}"
        );
    }

    #[test]
    fn empty_query_parameters_are_dropped() {
        assert_eq!(
            normalize("/a?&force=true&fieldManager=m"),
            "/a?force=true&fieldManager=m"
        );
        assert_eq!(normalize("/a?"), "/a");
        assert_eq!(normalize("/a"), "/a");
    }
}
