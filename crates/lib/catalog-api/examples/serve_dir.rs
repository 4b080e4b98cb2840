//! Serves one catalog directory with the catalog query API, for benchmarks
//! (hack/bench-catalog-api): the same store and server deppy-resolver runs, a self-signed
//! certificate, and every request allowed (no cluster to review tokens with).
//!
//! `cargo run --release -p catalog-api --example serve_dir -- DIR NAME ADDRESS`

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use catalog_api::{
    Authorize, Catalogs, Credentials, Denied, ServingCertificate, StoreBuilder, StoredCatalog,
};
use fbc::{CatalogIndex, Detail};
use futures::future::BoxFuture;

struct One(String, Arc<StoredCatalog>);

impl Catalogs for One {
    fn stored(&self, name: &str) -> Option<Arc<StoredCatalog>> {
        (name == self.0).then(|| self.1.clone())
    }
}

struct Everyone;

impl Authorize for Everyone {
    fn check<'a>(
        &'a self,
        _: &'a Credentials,
        _: &'a str,
    ) -> BoxFuture<'a, Result<String, Denied>> {
        Box::pin(async { Ok("bench".to_owned()) })
    }
}

fn files(root: &Path, dir: &Path, out: &mut Vec<(String, std::path::PathBuf)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(root, &path, out);
        } else {
            let relative = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            out.push((relative, path));
        }
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (dir, name, address) = (Path::new(&args[1]), args[2].clone(), &args[3]);
    let started = std::time::Instant::now();
    let mut list = Vec::new();
    files(dir, dir, &mut list);
    list.sort();
    let mut builder = StoreBuilder::new(&std::env::temp_dir()).unwrap();
    for (relative, path) in &list {
        builder
            .add_file(relative, &std::fs::read(path).unwrap())
            .unwrap();
    }
    let index = CatalogIndex::from_dir_with(dir, Detail::Resolution).unwrap();
    let stored = Arc::new(builder.finish(&index, "sha256:bench".to_owned()).unwrap());
    drop(index);
    eprintln!(
        "stored {} blobs in {:?}",
        stored.blob_count(),
        started.elapsed()
    );
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let certificate = Arc::new(ServingCertificate::default());
    certificate
        .set(cert.pem().as_bytes(), key.serialize_pem().as_bytes())
        .unwrap();
    let router = catalog_api::router(Arc::new(One(name, stored)), Arc::new(Everyone));
    let listener = tokio::net::TcpListener::bind(address).await.unwrap();
    println!("ready");
    catalog_api::serve(
        listener,
        certificate,
        Default::default(),
        router,
        Default::default(),
    )
    .await
    .unwrap();
}
