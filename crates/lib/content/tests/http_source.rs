//! The http source against a real loopback HTTP(S) server.

// Test helpers outside #[test] functions unwrap too; a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::routing::get;
use content::source::http::{self, HttpError, HttpSource};
use content::source::{BasicAuth, ResolvedSource, TlsOptions, UnpackOptions};
use content::{ArchiveError, Digest, LimitError, Limits, report};

fn bundle() -> Vec<u8> {
    common::gzip(&common::tar(&[
        ("manifests/ns.yaml", b"kind: Namespace"),
        ("metadata/annotations.yaml", b"annotations: {}"),
    ]))
}

async fn server(tls: bool) -> (String, Option<String>) {
    let router = Router::new()
        .route("/bundle.tar.gz", get(|| async { bundle() }))
        .route(
            "/traversal.tar.gz",
            get(|| async { common::gzip(&common::tar(&[("../x", b"evil")])) }),
        )
        .route("/bomb.tar.gz", get(|| async { common::gzip_bomb() }))
        .route("/not-a-tarball", get(|| async { "hello" }))
        .route(
            "/private.tar.gz",
            get(|headers: HeaderMap| async move {
                // "alice:s3cret"
                let authorised = headers
                    .get(header::AUTHORIZATION)
                    .is_some_and(|v| v == "Basic YWxpY2U6czNjcmV0");
                if authorised {
                    (StatusCode::OK, bundle())
                } else {
                    (StatusCode::UNAUTHORIZED, Vec::new())
                }
            }),
        );
    if tls {
        let (cert, config) = common::tls_server_config();
        let addr = common::serve(router, Some(config)).await;
        (format!("https://127.0.0.1:{}", addr.port()), Some(cert))
    } else {
        let addr = common::serve(router, None).await;
        (format!("http://127.0.0.1:{}", addr.port()), None)
    }
}

fn source(url: String) -> HttpSource {
    HttpSource {
        url,
        sha256: None,
        auth: None,
        tls: TlsOptions::default(),
    }
}

#[tokio::test]
async fn a_tarball_is_downloaded_normalised_and_pinned_by_its_sha256() {
    let (base, _) = server(false).await;
    let url = format!("{base}/bundle.tar.gz");
    let unpacked = http::unpack(&source(url.clone()), &UnpackOptions::default())
        .await
        .unwrap();
    let files = unpacked.content.files(&Limits::default()).unwrap();
    assert_eq!(
        files.get("manifests/ns.yaml").map(|b| b.as_ref()),
        Some(&b"kind: Namespace"[..])
    );
    assert_eq!(
        unpacked.resolved,
        ResolvedSource::Http {
            url,
            sha256: Digest::of(&bundle()).hex()
        }
    );
}

#[tokio::test]
async fn a_matching_sha256_is_accepted_and_a_wrong_one_refused() {
    let (base, _) = server(false).await;
    let mut src = source(format!("{base}/bundle.tar.gz"));
    src.sha256 = Some(Digest::of(&bundle()).hex());
    http::unpack(&src, &UnpackOptions::default()).await.unwrap();

    src.sha256 = Some("0".repeat(64));
    let err = http::unpack(&src, &UnpackOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, HttpError::Sha256Mismatch { .. }), "{err}");
    assert!(err.is_terminal());
    assert!(
        err.to_string().contains(&format!(
            "sha256 is {}, want {}",
            Digest::of(&bundle()).hex(),
            "0".repeat(64)
        )),
        "{err}"
    );
}

#[tokio::test]
async fn a_missing_file_is_a_transient_404_error() {
    let (base, _) = server(false).await;
    let url = format!("{base}/nope.tar.gz");
    let err = http::unpack(&source(url.clone()), &UnpackOptions::default())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("failed to download {url}: unexpected status \"404 Not Found\"")
    );
    assert!(!err.is_terminal(), "the file may still appear");
}

#[tokio::test]
async fn a_tarball_with_a_parent_directory_entry_is_refused() {
    let (base, _) = server(false).await;
    let err = http::unpack(
        &source(format!("{base}/traversal.tar.gz")),
        &UnpackOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            err,
            HttpError::Content {
                source: ArchiveError::InvalidPath { .. },
                ..
            }
        ),
        "{err}"
    );
    assert!(
        report(&err).ends_with("failed to accept entry \"../x\": '..' components are not allowed")
    );
    assert!(err.is_terminal());
}

#[tokio::test]
async fn a_gzip_bomb_is_refused() {
    let (base, _) = server(false).await;
    let err = http::unpack(
        &source(format!("{base}/bomb.tar.gz")),
        &UnpackOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            err,
            HttpError::Content {
                source: ArchiveError::Limit(LimitError::Ratio { .. }),
                ..
            }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn something_that_is_not_a_tarball_is_refused() {
    let (base, _) = server(false).await;
    let err = http::unpack(
        &source(format!("{base}/not-a-tarball")),
        &UnpackOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            err,
            HttpError::Content {
                source: ArchiveError::Read { .. },
                ..
            }
        ),
        "{}",
        report(&err)
    );
}

#[tokio::test]
async fn basic_auth_is_sent_and_wrong_credentials_are_reported() {
    let (base, _) = server(false).await;
    let mut src = source(format!("{base}/private.tar.gz"));
    let err = http::unpack(&src, &UnpackOptions::default())
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .ends_with("unexpected status \"401 Unauthorized\""),
        "{err}"
    );
    src.auth = Some(BasicAuth {
        username: "alice".to_owned(),
        password: "s3cret".to_owned(),
    });
    http::unpack(&src, &UnpackOptions::default()).await.unwrap();
}

#[tokio::test]
async fn https_needs_the_servers_certificate_or_an_explicit_skip() {
    let (base, cert) = server(true).await;
    let mut src = source(format!("{base}/bundle.tar.gz"));
    let err = http::unpack(&src, &UnpackOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, HttpError::Request { .. }), "{}", report(&err));
    assert!(
        report(&err).to_lowercase().contains("certificate"),
        "{}",
        report(&err)
    );

    src.tls.certificate_data = cert.map(String::into_bytes);
    http::unpack(&src, &UnpackOptions::default()).await.unwrap();

    src.tls = TlsOptions {
        certificate_data: None,
        insecure_skip_verify: true,
    };
    http::unpack(&src, &UnpackOptions::default()).await.unwrap();
}
