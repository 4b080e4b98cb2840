//! The image source against `crane registry serve` (plain http on loopback), and
//! through a TLS front end with token authentication for credentials and CAs.

// Test helpers outside #[test] functions unwrap too; a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::{Arc, OnceLock};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use content::source::image::{self, ImageError, ImageSource};
use content::source::{ResolvedSource, TlsOptions, UnpackOptions};
use content::{ArchiveError, Limits, report};

fn layer_one() -> Vec<u8> {
    common::tar(&[
        ("manifests/a.yaml", b"a: 1"),
        ("manifests/b.yaml", b"b: 1"),
        ("configs/pkg/catalog.json", b"{}"),
    ])
}

fn layer_two() -> Vec<u8> {
    common::gzip(&common::tar(&[
        ("manifests/a.yaml", b"a: 2"),
        ("manifests/.wh.b.yaml", b""),
    ]))
}

fn source(reference: &str) -> ImageSource {
    ImageSource {
        reference: reference.to_owned(),
        ..ImageSource::default()
    }
}

fn files(unpacked: &content::Unpacked) -> Vec<(String, String)> {
    unpacked
        .content
        .files(&Limits::default())
        .unwrap()
        .iter()
        .map(|(p, d)| (p.to_owned(), String::from_utf8_lossy(d).into_owned()))
        .collect()
}

#[tokio::test]
async fn an_image_is_unpacked_by_tag_with_its_layers_and_whiteouts_applied() {
    let registry = common::CraneRegistry::start();
    let pushed = registry.push("test/bundle:v1", &[layer_one(), layer_two()]);
    let unpacked = image::unpack(
        &source(&format!("{}/test/bundle:v1", registry.addr)),
        &UnpackOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(
        files(&unpacked),
        [
            ("configs/pkg/catalog.json".to_owned(), "{}".to_owned()),
            ("manifests/a.yaml".to_owned(), "a: 2".to_owned()),
        ]
    );
    let ResolvedSource::Image { reference, digest } = unpacked.resolved else {
        panic!("wrong resolved source");
    };
    assert_eq!(reference, pushed, "resolved to the digest crane pushed");
    assert!(pushed.ends_with(&digest));
}

#[tokio::test]
async fn an_image_unpacked_by_digest_equals_the_same_image_by_tag() {
    let registry = common::CraneRegistry::start();
    let pushed = registry.push("test/bundle:v1", &[layer_one(), layer_two()]);
    let by_tag = image::unpack(
        &source(&format!("{}/test/bundle:v1", registry.addr)),
        &UnpackOptions::default(),
    )
    .await
    .unwrap();
    let by_digest = image::unpack(&source(&pushed), &UnpackOptions::default())
        .await
        .unwrap();
    assert_eq!(by_tag.content.digest(), by_digest.content.digest());
    assert_eq!(by_tag.resolved, by_digest.resolved);
}

#[tokio::test]
async fn an_unknown_tag_is_a_transient_not_found_error() {
    let registry = common::CraneRegistry::start();
    registry.push("test/bundle:v1", &[layer_one()]);
    let reference = format!("{}/test/bundle:nope", registry.addr);
    let err = image::unpack(&source(&reference), &UnpackOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, ImageError::NotFound { .. }),
        "{}",
        report(&err)
    );
    assert!(
        report(&err).starts_with(&format!(
            "failed to pull image {reference}: not found in the registry"
        )),
        "{}",
        report(&err)
    );
    assert!(!err.is_terminal(), "the tag may be pushed later");
}

#[tokio::test]
async fn a_digest_reference_is_served_from_the_cache_without_the_registry() {
    let cache = tempfile::tempdir().unwrap();
    let options = UnpackOptions {
        image_cache_dir: Some(cache.path().to_owned()),
        ..UnpackOptions::default()
    };
    let registry = common::CraneRegistry::start();
    let pushed = registry.push("test/bundle:v1", &[layer_one()]);
    let first = image::unpack(&source(&pushed), &options).await.unwrap();
    drop(registry);

    let second = image::unpack(&source(&pushed), &options).await.unwrap();
    assert_eq!(first.content, second.content);
    assert_eq!(first.resolved, second.resolved);
    // Without the cache the registry is needed, and it is gone.
    let err = image::unpack(&source(&pushed), &UnpackOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, ImageError::Registry { .. }),
        "{}",
        report(&err)
    );
}

#[tokio::test]
async fn a_moved_tag_is_unpacked_again_even_with_a_cache() {
    let cache = tempfile::tempdir().unwrap();
    let options = UnpackOptions {
        image_cache_dir: Some(cache.path().to_owned()),
        ..UnpackOptions::default()
    };
    let registry = common::CraneRegistry::start();
    let reference = format!("{}/test/bundle:latest", registry.addr);
    registry.push("test/bundle:latest", &[layer_one()]);
    let first = image::unpack(&source(&reference), &options).await.unwrap();
    registry.push("test/bundle:latest", &[layer_one(), layer_two()]);
    let second = image::unpack(&source(&reference), &options).await.unwrap();
    assert_ne!(first.content.digest(), second.content.digest());
    assert_ne!(first.resolved, second.resolved);
}

#[tokio::test]
async fn a_directory_of_the_image_can_be_selected() {
    let registry = common::CraneRegistry::start();
    let pushed = registry.push("test/catalog:v1", &[layer_one()]);
    let mut src = source(&pushed);
    src.directory = Some("configs".to_owned());
    let unpacked = image::unpack(&src, &UnpackOptions::default())
        .await
        .unwrap();
    assert_eq!(
        files(&unpacked),
        [("pkg/catalog.json".to_owned(), "{}".to_owned())]
    );
}

#[tokio::test]
async fn a_layer_that_escapes_the_root_is_refused() {
    let registry = common::CraneRegistry::start();
    let pushed = registry.push("test/evil:v1", &[common::tar(&[("../../etc/x", b"evil")])]);
    let err = image::unpack(&source(&pushed), &UnpackOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            ImageError::Content {
                source: ArchiveError::InvalidPath { .. },
                ..
            }
        ),
        "{}",
        report(&err)
    );
    assert!(err.is_terminal());
}

#[tokio::test]
async fn an_image_larger_than_the_limit_is_refused() {
    let registry = common::CraneRegistry::start();
    let pushed = registry.push("test/big:v1", &[common::gzip_bomb()]);
    let err = image::unpack(&source(&pushed), &UnpackOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            ImageError::Content {
                source: ArchiveError::Limit(_),
                ..
            }
        ),
        "{}",
        report(&err)
    );
}

/// A TLS front end for a crane registry with docker token authentication: `/token`
/// wants basic auth alice:s3cret and returns a token the registry paths require.
struct AuthProxy {
    upstream: String,
    realm: OnceLock<String>,
    http: reqwest::Client,
}

const TOKEN: &str = "token-for-alice";

async fn proxy(State(proxy): State<Arc<AuthProxy>>, request: Request) -> Response {
    let path = request
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    if path.starts_with("/token") {
        // base64("alice:s3cret")
        if authorization == "Basic YWxpY2U6czNjcmV0" {
            let body = serde_json::json!({ "token": TOKEN }).to_string();
            return ([(header::CONTENT_TYPE, "application/json")], body).into_response();
        }
        return (StatusCode::UNAUTHORIZED, "bad credentials").into_response();
    }
    if authorization != format!("Bearer {TOKEN}") {
        let challenge = format!(
            "Bearer realm=\"{}\",service=\"test-registry\"",
            proxy.realm.get().cloned().unwrap_or_default()
        );
        let mut response = (StatusCode::UNAUTHORIZED, "").into_response();
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_str(&challenge).unwrap(),
        );
        return response;
    }
    let method = request.method().clone();
    let accept = request.headers().get(header::ACCEPT).cloned();
    let mut forward = proxy
        .http
        .request(method, format!("http://{}{path}", proxy.upstream));
    if let Some(accept) = accept {
        forward = forward.header(header::ACCEPT, accept);
    }
    let upstream = forward.send().await.unwrap();
    let mut response = Response::builder().status(upstream.status().as_u16());
    for (name, value) in upstream.headers() {
        if name != header::TRANSFER_ENCODING && name != header::CONNECTION {
            response = response.header(name.as_str(), value.as_bytes());
        }
    }
    response
        .body(Body::from(upstream.bytes().await.unwrap()))
        .unwrap()
}

async fn authenticated_registry(registry: &common::CraneRegistry) -> (String, String) {
    let state = Arc::new(AuthProxy {
        upstream: registry.addr.clone(),
        realm: OnceLock::new(),
        http: reqwest::Client::new(),
    });
    let router = Router::new().fallback(proxy).with_state(state.clone());
    let (cert, config) = common::tls_server_config();
    let addr = common::serve(router, Some(config)).await;
    let host = format!("localhost:{}", addr.port());
    state.realm.set(format!("https://{host}/token")).unwrap();
    (host, cert)
}

fn pull_secret(host: &str, auth: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({ "auths": { host: { "auth": auth } } })).unwrap()
}

#[tokio::test]
async fn a_private_registry_needs_the_right_credentials_and_its_ca() {
    let registry = common::CraneRegistry::start();
    registry.push("test/private:v1", &[layer_one()]);
    let (host, cert) = authenticated_registry(&registry).await;
    let reference = format!("{host}/test/private:v1");

    let mut src = source(&reference);
    src.tls = TlsOptions {
        certificate_data: Some(cert.into_bytes()),
        insecure_skip_verify: false,
    };
    src.pull_secret = Some(pull_secret(&host, "YWxpY2U6czNjcmV0"));
    let unpacked = image::unpack(&src, &UnpackOptions::default())
        .await
        .unwrap();
    assert_eq!(files(&unpacked).len(), 3);

    // base64("alice:wrong")
    src.pull_secret = Some(pull_secret(&host, "YWxpY2U6d3Jvbmc="));
    let err = image::unpack(&src, &UnpackOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, ImageError::Unauthorized { .. }),
        "{}",
        report(&err)
    );
    assert!(
        report(&err).starts_with(&format!(
            "failed to authenticate to the registry for image {reference}"
        )),
        "{}",
        report(&err)
    );
    assert!(report(&err).contains("bad credentials"), "{}", report(&err));

    src.pull_secret = None;
    let err = image::unpack(&src, &UnpackOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, ImageError::Unauthorized { .. }),
        "{}",
        report(&err)
    );
}

#[tokio::test]
async fn a_registry_with_an_unknown_certificate_is_refused_unless_verification_is_skipped() {
    let registry = common::CraneRegistry::start();
    registry.push("test/private:v1", &[layer_one()]);
    let (host, _cert) = authenticated_registry(&registry).await;
    let mut src = source(&format!("{host}/test/private:v1"));
    src.pull_secret = Some(pull_secret(&host, "YWxpY2U6czNjcmV0"));
    let err = image::unpack(&src, &UnpackOptions::default())
        .await
        .unwrap_err();
    assert!(
        report(&err).to_lowercase().contains("certificate"),
        "{}",
        report(&err)
    );

    src.tls.insecure_skip_verify = true;
    image::unpack(&src, &UnpackOptions::default())
        .await
        .unwrap();
}
