//! The server over real TLS on loopback: a catalog replaced while a client reads it, a client
//! that stops reading, and a flood of streams. No cluster: access is decided by a stand-in
//! (the cluster test in deppy-resolver covers TokenReview and SubjectAccessReview).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use catalog_api::{
    Authorize, Catalogs, Credentials, Denied, ServingCertificate, StoreBuilder, StoredCatalog,
};
use fbc::CatalogIndex;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

/// One catalog, swappable.
#[derive(Default)]
struct One(Mutex<Option<Arc<StoredCatalog>>>);

impl Catalogs for One {
    fn stored(&self, name: &str) -> Option<Arc<StoredCatalog>> {
        (name == "big")
            .then(|| self.0.lock().unwrap().clone())
            .flatten()
    }
}

struct Everyone;

impl Authorize for Everyone {
    fn check<'a>(
        &'a self,
        _: &'a Credentials,
        _: &'a str,
    ) -> BoxFuture<'a, Result<String, Denied>> {
        Box::pin(async { Ok("tester".to_owned()) })
    }
}

/// A catalog of `packages` packages of 20 bundles, each bundle padded with a `marker`
/// string so two versions differ in every line: about 24 MB for 100 packages.
fn catalog(packages: usize, marker: &str) -> StoredCatalog {
    let mut text = String::new();
    for p in 0..packages {
        text.push_str(&format!(
            "{{\"schema\":\"olm.package\",\"name\":\"p{p}\"}}\n"
        ));
        text.push_str(&format!(
            "{{\"schema\":\"olm.channel\",\"package\":\"p{p}\",\"name\":\"stable\",\"entries\":["
        ));
        for b in 0..20 {
            let comma = if b > 0 { "," } else { "" };
            text.push_str(&format!("{comma}{{\"name\":\"p{p}.v1.0.{b}\"}}"));
        }
        text.push_str("]}\n");
        for b in 0..20 {
            text.push_str(&format!(
                "{{\"schema\":\"olm.bundle\",\"package\":\"p{p}\",\"name\":\"p{p}.v1.0.{b}\",\"image\":\"r/p:{b}\",\"properties\":[{{\"type\":\"olm.package\",\"value\":{{\"packageName\":\"p{p}\",\"version\":\"1.0.{b}\"}}}},{{\"type\":\"marker\",\"value\":\"{}\"}}]}}\n",
                marker.repeat(12_000)
            ));
        }
    }
    let index = CatalogIndex::from_files([("catalog.json", text.as_bytes())]).unwrap();
    let mut builder = StoreBuilder::new(&std::env::temp_dir()).unwrap();
    builder.add_file("catalog.json", text.as_bytes()).unwrap();
    builder.finish(&index, format!("sha256:{marker}")).unwrap()
}

struct Server {
    address: std::net::SocketAddr,
    catalogs: Arc<One>,
    ca: reqwest::Certificate,
    shutdown: CancellationToken,
}

async fn server() -> Server {
    let ca = rcgen_pair();
    let certificate = Arc::new(ServingCertificate::default());
    certificate.set(ca.0.as_bytes(), ca.1.as_bytes()).unwrap();
    let catalogs = Arc::new(One::default());
    let router = catalog_api::router(catalogs.clone(), Arc::new(Everyone));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    tokio::spawn(catalog_api::serve(
        listener,
        certificate,
        Default::default(),
        router,
        shutdown.clone(),
    ));
    Server {
        address,
        catalogs,
        ca: reqwest::Certificate::from_pem(ca.0.as_bytes()).unwrap(),
        shutdown,
    }
}

/// A self-signed certificate for `catalogs.test` and its key, as PEM.
fn rcgen_pair() -> (String, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["catalogs.test".to_owned()]).unwrap();
    params.is_ca = rcgen::IsCa::NoCa;
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), key.serialize_pem())
}

impl Server {
    fn client(&self) -> reqwest::Client {
        reqwest::Client::builder()
            .resolve("catalogs.test", self.address)
            .tls_built_in_root_certs(false)
            .add_root_certificate(self.ca.clone())
            .build()
            .unwrap()
    }

    fn url(&self, path: &str) -> String {
        format!("https://catalogs.test{path}")
    }
}

#[tokio::test]
async fn a_catalog_replaced_mid_read_is_read_to_the_end_as_it_was() {
    let server = server().await;
    let old = Arc::new(catalog(100, "a"));
    let expected_len = old.all().len;
    assert!(expected_len > 20_000_000, "{expected_len}");
    *server.catalogs.0.lock().unwrap() = Some(old.clone());
    drop(old);

    let http = server.client();
    let mut response = http
        .get(server.url("/catalogs/big/api/v1/all"))
        .bearer_auth("t")
        .send()
        .await
        .unwrap();
    let old_etag = response.headers()["etag"].to_str().unwrap().to_owned();
    let mut received = response.chunk().await.unwrap().unwrap().to_vec();

    // Replace the catalog while the first response is still being read.
    *server.catalogs.0.lock().unwrap() = Some(Arc::new(catalog(100, "b")));
    let fresh = http
        .get(server.url("/catalogs/big/api/v1/metas?schema=olm.package&name=p0"))
        .bearer_auth("t")
        .send()
        .await
        .unwrap();
    assert_ne!(fresh.headers()["etag"].to_str().unwrap(), old_etag);

    while let Some(chunk) = response.chunk().await.unwrap() {
        received.extend_from_slice(&chunk);
    }
    assert_eq!(received.len() as u64, expected_len);
    let text = String::from_utf8(received).unwrap();
    assert!(
        text.lines().all(|line| !line.contains("\"bbbb")),
        "a line of the new catalog was served"
    );
    assert_eq!(
        text.lines().filter(|line| line.contains("\"aaaa")).count(),
        2000
    );
    server.shutdown.cancel();
}

#[tokio::test]
async fn a_client_that_stops_reading_does_not_block_the_others() {
    let server = server().await;
    *server.catalogs.0.lock().unwrap() = Some(Arc::new(catalog(100, "c")));
    let http = server.client();
    // Ten clients start reading everything and stop after the first piece.
    let mut stalled = Vec::new();
    for _ in 0..10 {
        let mut response = http
            .get(server.url("/catalogs/big/api/v1/all"))
            .bearer_auth("t")
            .send()
            .await
            .unwrap();
        response.chunk().await.unwrap();
        stalled.push(response);
    }
    // Others are answered meanwhile, and at once.
    let other = server.client();
    let started = std::time::Instant::now();
    for _ in 0..20 {
        let response = other
            .get(server.url("/catalogs/big/api/v1/metas?name=p7&schema=olm.package"))
            .bearer_auth("t")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert!(response.text().await.unwrap().contains("\"p7\""));
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    drop(stalled);
    server.shutdown.cancel();
}
