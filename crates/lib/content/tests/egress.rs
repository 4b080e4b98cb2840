//! Fetching on a tenant's behalf: denied networks are refused before any connection,
//! redirects cannot carry credentials to another origin or lead into a denied network,
//! and a server's response body never reaches the error text.

// Test helpers outside #[test] functions unwrap too; a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::routing::get;
use content::source::http::HttpSource;
use content::source::{
    BasicAuth, GitRef, GitSource, ImageSource, Source, TlsOptions, UnpackOptions, Unpacker,
};
use content::{Error, report};

/// A TCP listener on loopback that counts the connections it accepts.
async fn counting_listener() -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    tokio::spawn(async move {
        while let Ok((_socket, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
        }
    });
    (port, accepted)
}

fn unpacker(denied: &str) -> Unpacker {
    Unpacker::new(UnpackOptions {
        denied_networks: denied.parse().unwrap(),
        ..UnpackOptions::default()
    })
}

fn http(url: String, auth: Option<BasicAuth>) -> Source {
    Source::Http(HttpSource {
        url,
        sha256: None,
        auth,
        tls: TlsOptions::default(),
    })
}

#[tokio::test]
async fn a_denied_address_is_refused_before_any_connection_for_every_source_type() {
    let (port, accepted) = counting_listener().await;
    let sources = [
        http(format!("http://127.0.0.1:{port}/bundle.tar.gz"), None),
        Source::Git(GitSource {
            repository: format!("http://127.0.0.1:{port}/repo.git"),
            directory: None,
            reference: GitRef::Branch("main".into()),
            auth: None,
            tls: TlsOptions::default(),
        }),
        Source::Image(ImageSource {
            reference: format!("127.0.0.1:{port}/bundle:v1"),
            pull_secret: None,
            tls: TlsOptions::default(),
            directory: None,
        }),
        // A name is resolved first: localhost is loopback too.
        http(format!("http://localhost:{port}/bundle.tar.gz"), None),
    ];
    for source in sources {
        let err = unpacker("127.0.0.0/8,::1/128")
            .unpack(&source)
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Denied(_)), "{err:?}");
        assert!(err.is_terminal());
        let message = report(&err);
        assert!(
            message.contains("is in a denied network (127.0.0.0/8)")
                || message.contains("is in a denied network (::1/128)"),
            "{message}"
        );
    }
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        0,
        "a denied address was connected to"
    );
}

/// Server B: counts requests and remembers whether any carried credentials.
async fn server_b() -> (String, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let requests = Arc::new(AtomicUsize::new(0));
    let with_auth = Arc::new(AtomicUsize::new(0));
    let (r, a) = (requests.clone(), with_auth.clone());
    let router = Router::new().route(
        "/steal",
        get(move |headers: HeaderMap| {
            r.fetch_add(1, Ordering::SeqCst);
            if headers.contains_key(header::AUTHORIZATION) {
                a.fetch_add(1, Ordering::SeqCst);
            }
            async { "" }
        }),
    );
    let addr = common::serve(router, None).await;
    (
        format!("http://127.0.0.1:{}", addr.port()),
        requests,
        with_auth,
    )
}

/// Server A: answers every request with a redirect to `target`.
async fn redirecting_to(target: String) -> String {
    let router = Router::new().route(
        "/bundle.tar.gz",
        get(move || {
            let target = target.clone();
            async move { (StatusCode::FOUND, [(header::LOCATION, target)]) }
        }),
    );
    let addr = common::serve(router, None).await;
    format!("http://127.0.0.1:{}/bundle.tar.gz", addr.port())
}

#[tokio::test]
async fn credentials_never_follow_a_redirect_to_another_origin() {
    let (b, requests, with_auth) = server_b().await;
    let a = redirecting_to(format!("{b}/steal")).await;
    let auth = BasicAuth {
        username: "alice".into(),
        password: "s3cret".into(),
    };
    let err = unpacker("none")
        .unpack(&http(a, Some(auth)))
        .await
        .unwrap_err();
    let message = report(&err);
    assert!(
        message.contains("refused a redirect to http://127.0.0.1:"),
        "{message}"
    );
    assert!(
        message.contains("credentials are only sent to"),
        "{message}"
    );
    assert!(!message.contains("s3cret"), "{message}");
    assert!(err.is_terminal(), "{message}");
    assert_eq!(
        requests.load(Ordering::SeqCst),
        0,
        "the other origin was contacted"
    );
    assert_eq!(with_auth.load(Ordering::SeqCst), 0);

    // Without credentials, a redirect to another origin is followed as usual.
    let (b, requests, with_auth) = server_b().await;
    let a = redirecting_to(format!("{b}/steal")).await;
    let _ = unpacker("none").unpack(&http(a, None)).await;
    assert_eq!(requests.load(Ordering::SeqCst), 1);
    assert_eq!(with_auth.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_redirect_into_a_denied_network_is_refused() {
    let a = redirecting_to("http://169.254.169.254/latest/meta-data/".into()).await;
    let err = unpacker(content::source::DEFAULT_DENIED_NETWORKS)
        .unpack(&http(a, None))
        .await
        .unwrap_err();
    let message = report(&err);
    assert!(
        message.contains("169.254.169.254 is in a denied network (169.254.0.0/16)"),
        "{message}"
    );
    assert!(err.is_terminal(), "{message}");
}

#[tokio::test]
async fn a_servers_error_body_never_reaches_the_message() {
    let router = Router::new().route(
        "/bundle.tar.gz",
        get(|| async { (StatusCode::NOT_FOUND, "SECRET-MARKER internal details") }),
    );
    let addr = common::serve(router, None).await;
    let err = unpacker("none")
        .unpack(&http(
            format!("http://127.0.0.1:{}/bundle.tar.gz", addr.port()),
            None,
        ))
        .await
        .unwrap_err();
    let message = report(&err);
    assert!(message.contains("404"), "{message}");
    assert!(!message.contains("SECRET-MARKER"), "{message}");
}
