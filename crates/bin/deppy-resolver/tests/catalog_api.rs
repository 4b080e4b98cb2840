//! The catalog query API on a real control plane: its certificate from the built-in CA,
//! access by TokenReview and SubjectAccessReview for ServiceAccount tokens, catalogd's paths,
//! ETags, gzip, and what a changed catalog does to a client's cached copy.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read;
use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::Duration;

use deppy_api::Catalog;
use deppy_resolver::controller::{self, ApiSettings, Metrics, ServedCatalogs, Settings};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use reqwest::StatusCode;
use serde_json::json;
use testkit::{client, install_crds, unique_name, wait_for};

const TIMEOUT: Duration = Duration::from_secs(60);

fn system_namespace() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| unique_name("deppy-api"))
}

/// The address this process's API listens on.
fn address() -> SocketAddr {
    static ADDRESS: OnceLock<SocketAddr> = OnceLock::new();
    *ADDRESS.get_or_init(|| SocketAddr::from(([127, 0, 0, 1], testkit::servers::free_port())))
}

/// The API's name, as its certificate has it (the Service in the system namespace).
fn host() -> String {
    format!("deppy-catalogs.{}.svc", system_namespace())
}

/// Installs the CRDs and starts the controllers with the API, once per process.
async fn setup() -> Client {
    static STARTED: OnceLock<()> = OnceLock::new();
    let client = client().await;
    if STARTED.get().is_none() {
        install_crds(&client).await;
        let ns: Namespace =
            serde_json::from_value(json!({ "metadata": { "name": system_namespace() } })).unwrap();
        let _ = Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await;
        if STARTED.set(()).is_ok() {
            let store_dir = std::env::temp_dir();
            testkit::spawn_background(move || async move {
                let client = Client::try_default().await.unwrap();
                let metrics = Metrics::register(&prometheus::Registry::new()).unwrap();
                let settings = Settings {
                    system_namespace: system_namespace().to_owned(),
                    default_poll_interval: Duration::from_secs(600),
                    unpack: content::UnpackOptions::default(),
                    selector: None,
                    content_sweep_interval: Duration::from_secs(600),
                    api: Some(ApiSettings {
                        address: address(),
                        store_dir,
                        base_url: format!("https://{}", host()),
                    }),
                };
                controller::run(
                    client,
                    settings,
                    metrics,
                    ServedCatalogs::default(),
                    &kit::admin::Readiness::default(),
                    tokio_util::sync::CancellationToken::new(),
                )
                .await;
            });
        }
    }
    client
}

/// A package with a `stable` channel of `versions` in upgrade order, with a description.
fn package(name: &str, versions: &[&str]) -> String {
    let mut out = format!(
        "---\nschema: olm.package\nname: {name}\ndefaultChannel: stable\ndescription: The {name} operator.\n---\nschema: olm.channel\npackage: {name}\nname: stable\nentries:\n"
    );
    for (i, version) in versions.iter().enumerate() {
        out.push_str(&format!("- name: {name}.v{version}\n"));
        if i > 0 {
            out.push_str(&format!("  replaces: {name}.v{}\n", versions[i - 1]));
        }
    }
    for version in versions {
        out.push_str(&format!(
            "---\nschema: olm.bundle\nname: {name}.v{version}\npackage: {name}\nimage: example.com/{name}:v{version}\nproperties:\n- type: olm.package\n  value: {{packageName: {name}, version: {version}}}\n"
        ));
    }
    out
}

/// Serves `catalog` from a new immutable ConfigMap under Catalog `name`, and waits until
/// the Catalog's status names that ConfigMap and publishes its URL.
async fn serve(client: &Client, name: &str, catalog: &str) -> Catalog {
    let config_map = unique_name("content");
    let object: ConfigMap = serde_json::from_value(json!({
        "metadata": { "name": config_map, "namespace": system_namespace() },
        "immutable": true,
        "data": { "catalog.yaml": catalog }
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), system_namespace())
        .create(&PostParams::default(), &object)
        .await
        .unwrap();
    let spec = json!({
        "apiVersion": "deppy.io/v1alpha1", "kind": "Catalog",
        "metadata": { "name": name },
        "spec": { "source": { "configMap": { "name": config_map, "namespace": system_namespace() } } }
    });
    let api = Api::<Catalog>::all(client.clone());
    api.patch(
        name,
        &PatchParams::apply("test").force(),
        &Patch::Apply(&spec),
    )
    .await
    .unwrap();
    wait_for(
        &format!("Catalog {name} to publish its URL"),
        TIMEOUT,
        || async {
            let catalog = api.get(name).await.map_err(|e| e.to_string())?;
            let status = catalog.status.clone().unwrap_or_default();
            let current = status
                .resolved_source
                .as_deref()
                .is_some_and(|s| s.contains(&format!("/{config_map}@")));
            match status.urls {
                Some(_) if current => Ok(catalog),
                _ => Err(format!("{status:?}")),
            }
        },
    )
    .await
}

/// A ServiceAccount's user name and token, the account granted `rules` when given.
async fn token(client: &Client, rules: Option<serde_json::Value>) -> (String, String) {
    let (user, token) = testkit::users::service_account_token(client, system_namespace()).await;
    if let Some(rules) = rules {
        testkit::users::grant(client, &user, &unique_name("catalog-reader"), rules).await;
    }
    (user, token)
}

/// An HTTPS client that trusts the published CA and reaches the API's name on loopback.
async fn https(client: &Client) -> reqwest::Client {
    let configmaps = Api::<ConfigMap>::namespaced(client.clone(), system_namespace());
    let bundle = wait_for("the API's trust bundle", TIMEOUT, || async {
        let cm = configmaps
            .get("deppy-catalog-api-ca")
            .await
            .map_err(|e| e.to_string())?;
        cm.data
            .and_then(|d| d.get("ca.crt").cloned())
            .ok_or_else(|| "no ca.crt".to_owned())
    })
    .await;
    let mut builder = reqwest::Client::builder()
        .resolve(&host(), address())
        .tls_built_in_root_certs(false);
    for cert in reqwest::Certificate::from_pem_bundle(bundle.as_bytes()).unwrap() {
        builder = builder.add_root_certificate(cert);
    }
    builder.build().unwrap()
}

async fn get(
    http: &reqwest::Client,
    path: &str,
    token: Option<&str>,
    headers: &[(&str, &str)],
) -> (StatusCode, reqwest::header::HeaderMap, Vec<u8>) {
    let mut request = http.get(format!("https://{}{path}", host()));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    // The server may still be waiting for its certificate on the first call.
    let response = wait_for("the API to answer", TIMEOUT, || {
        let request = request.try_clone().unwrap();
        async move { request.send().await.map_err(|e| format!("{e:?}")) }
    })
    .await;
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.bytes().await.unwrap().to_vec();
    (status, headers, body)
}

fn text(body: &[u8]) -> String {
    String::from_utf8_lossy(body).into_owned()
}

#[tokio::test]
async fn readers_get_catalogd_paths_with_etags_and_gzip_and_others_get_a_sentence() {
    let client = setup().await;
    let name = unique_name("api");
    let catalog = serve(
        &client,
        &name,
        &format!(
            "{}{}",
            package("app", &["1.0.0", "1.1.0"]),
            package("lib", &["2.0.0"])
        ),
    )
    .await;
    let base = catalog.status.unwrap().urls.unwrap().base;
    assert_eq!(base, format!("https://{}/catalogs/{name}", host()));
    let http = https(&client).await;
    let all = format!("/catalogs/{name}/api/v1/all");

    // No token, a token of nobody, a user without the permission.
    let (status, headers, body) = get(&http, &all, None, &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{}", text(&body));
    assert_eq!(headers["www-authenticate"], "Bearer");
    assert!(
        text(&body).contains("needs a bearer token"),
        "{}",
        text(&body)
    );
    let (status, _, body) = get(&http, &all, Some("not-a-token"), &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{}", text(&body));
    let (stranger, stranger_token) = token(&client, None).await;
    let (status, _, body) = get(&http, &all, Some(&stranger_token), &[]).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        text(&body).trim(),
        format!(
            "user {stranger:?} may not read Catalog {name:?}: it needs \"get\" on \"catalogs/content\" in API group \"catalogs.deppy.io\" for this Catalog"
        )
    );
    // A reader of this catalog only: another name is refused before it is looked up.
    let (_, reader) = token(
        &client,
        Some(
            json!([{ "apiGroups": ["catalogs.deppy.io"], "resources": ["catalogs/content"],
                      "resourceNames": [name], "verbs": ["get"] }]),
        ),
    )
    .await;
    let (status, _, _) = get(
        &http,
        "/catalogs/no-such-catalog/api/v1/all",
        Some(&reader),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (_, everything) = token(
        &client,
        Some(json!([{ "apiGroups": ["catalogs.deppy.io"], "resources": ["catalogs/content"], "verbs": ["get"] }])),
    )
    .await;
    let (status, _, body) = get(
        &http,
        "/catalogs/no-such-catalog/api/v1/all",
        Some(&everything),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(
        text(&body).contains("\"no-such-catalog\" is not served"),
        "{}",
        text(&body)
    );

    // Every blob, one per line, in path and document order.
    let (status, headers, every_blob) = get(&http, &all, Some(&reader), &[]).await;
    assert_eq!(status, StatusCode::OK, "{}", text(&every_blob));
    assert_eq!(headers["content-type"], "application/jsonl");
    let lines: Vec<serde_json::Value> = text(&every_blob)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 2 + 2 + 2 + 1, "{lines:?}");
    assert_eq!(lines[0]["schema"], "olm.package");
    assert_eq!(lines[0]["name"], "app");
    assert_eq!(
        headers["content-length"],
        every_blob.len().to_string().as_str()
    );
    let etag = headers["etag"].to_str().unwrap().to_owned();
    assert!(etag.starts_with("\"sha256:"), "{etag}");

    // Unchanged: 304 by tag and by date; gzip is the same lines.
    let (status, _, body) = get(&http, &all, Some(&reader), &[("if-none-match", &etag)]).await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    assert!(body.is_empty());
    let modified = headers["last-modified"].to_str().unwrap().to_owned();
    let (status, _, _) = get(
        &http,
        &all,
        Some(&reader),
        &[("if-modified-since", &modified)],
    )
    .await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    let (status, gz_headers, gz_body) =
        get(&http, &all, Some(&reader), &[("accept-encoding", "gzip")]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(gz_headers["content-encoding"], "gzip");
    let mut unzipped = Vec::new();
    flate2::read::GzDecoder::new(&gz_body[..])
        .read_to_end(&mut unzipped)
        .unwrap();
    assert_eq!(unzipped, every_blob);

    // metas by schema and package; bad parameters name themselves.
    let metas = format!("/catalogs/{name}/api/v1/metas?schema=olm.bundle&package=app");
    let (status, _, body) = get(&http, &metas, Some(&reader), &[]).await;
    assert_eq!(status, StatusCode::OK);
    let names: Vec<String> = text(&body)
        .lines()
        .map(|line| {
            serde_json::from_str::<serde_json::Value>(line).unwrap()["name"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(names, ["app.v1.0.0", "app.v1.1.0"]);
    let unknown = format!("/catalogs/{name}/api/v1/metas?package=nope");
    let (status, _, body) = get(&http, &unknown, Some(&reader), &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        text(&body).trim(),
        format!("Catalog {name:?} has no package \"nope\"")
    );
    let bad = format!("/catalogs/{name}/api/v1/metas?pakage=app");
    let (status, _, body) = get(&http, &bad, Some(&reader), &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(text(&body).contains("\"pakage\""), "{}", text(&body));

    // The packages summary.
    let (status, _, body) = get(
        &http,
        &format!("/catalogs/{name}/api/v1/packages"),
        Some(&reader),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let packages: Vec<catalog_api::PackageSummary> = serde_json::from_slice(&body).unwrap();
    let app = packages.iter().find(|p| p.name == "app").unwrap();
    assert_eq!(app.versions, ["1.1.0", "1.0.0"]);
    assert_eq!(app.channels[0].head.as_deref(), Some("app.v1.1.0"));
    assert_eq!(app.description.as_deref(), Some("The app operator."));

    // Upgrade edges from a version; a version the package lacks; a missing parameter.
    let upgrades = |query: &str| format!("/catalogs/{name}/api/v1/upgrades?{query}");
    let (status, headers, body) = get(
        &http,
        &upgrades("package=app&from=1.0.0"),
        Some(&reader),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{}", text(&body));
    assert_eq!(headers["content-type"], "application/json");
    let answer: fbc::upgrades::Upgrades = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer.catalog, name);
    assert_eq!(answer.from.version, "1.0.0");
    let next: Vec<&str> = answer.next.iter().map(|s| s.version.as_str()).collect();
    assert_eq!(next, ["1.1.0"]);
    assert_eq!(answer.next[0].channels, ["stable"]);
    let (status, _, body) = get(
        &http,
        &upgrades("package=app&from=1.1.0"),
        Some(&reader),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let head: fbc::upgrades::Upgrades = serde_json::from_slice(&body).unwrap();
    assert!(
        head.next.is_empty() && head.reachable.is_empty(),
        "{head:?}"
    );
    let (status, _, body) = get(
        &http,
        &upgrades("package=app&from=9.9.9"),
        Some(&reader),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(
        text(&body).starts_with(&format!(
            "Catalog {name:?} has no version 9.9.9 of package \"app\""
        )),
        "{}",
        text(&body)
    );
    let (status, _, body) = get(&http, &upgrades("package=app"), Some(&reader), &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        text(&body).contains("\"from\" is required"),
        "{}",
        text(&body)
    );

    // New content: the old tag no longer matches, and the new lines are served.
    serve(
        &client,
        &name,
        &package("app", &["1.0.0", "1.1.0", "1.2.0"]),
    )
    .await;
    let (status, headers, body) =
        get(&http, &all, Some(&reader), &[("if-none-match", &etag)]).await;
    assert_eq!(status, StatusCode::OK);
    assert_ne!(headers["etag"].to_str().unwrap(), etag);
    assert_eq!(text(&body).lines().count(), 1 + 1 + 3);
}

/// A catalog of 100 packages of 20 bundles, every bundle padded with eight `marker`s and
/// 12,000 pseudo-random hex digits (so it does not compress past the unpacker's ratio
/// limit) so that two versions differ on every bundle line: about 24 MB, far more than
/// socket buffers hold.
fn big_catalog(marker: char) -> String {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15 ^ u64::from(marker);
    let mut text = String::new();
    for p in 0..100 {
        let entries: Vec<String> = (0..20)
            .map(|b| format!("{{\"name\":\"p{p}.v1.0.{b}\"}}"))
            .collect();
        text.push_str(&format!(
            "{{\"schema\":\"olm.package\",\"name\":\"p{p}\"}}\n{{\"schema\":\"olm.channel\",\"package\":\"p{p}\",\"name\":\"stable\",\"entries\":[{}]}}\n",
            entries.join(",")
        ));
        for b in 0..20 {
            let mut padding: String = std::iter::repeat_n(marker, 8).collect();
            for _ in 0..12_000 / 16 {
                // xorshift64: cheap digits a compressor cannot shrink much.
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                padding.push_str(&format!("{state:016x}"));
            }
            text.push_str(&format!(
                "{{\"schema\":\"olm.bundle\",\"package\":\"p{p}\",\"name\":\"p{p}.v1.0.{b}\",\"image\":\"r/p:{b}\",\"properties\":[{{\"type\":\"olm.package\",\"value\":{{\"packageName\":\"p{p}\",\"version\":\"1.0.{b}\"}}}},{{\"type\":\"padding\",\"value\":\"{padding}\"}}]}}\n"
            ));
        }
    }
    text
}

#[tokio::test]
async fn a_catalog_replaced_while_a_client_reads_it_is_read_to_the_end_as_it_was() {
    let client = setup().await;
    let registry = testkit::servers::CraneRegistry::start();
    let push = |tag: &str, marker: char| {
        let catalog = big_catalog(marker);
        let layer = testkit::servers::tar(&[("configs/catalog.json", catalog.as_bytes())]);
        registry.push(&format!("catalogs/big:{tag}"), &[layer])
    };
    let first = push("a", 'a');
    let name = unique_name("big");
    let api = Api::<Catalog>::all(client.clone());
    let point_at = |reference: String| {
        let api = api.clone();
        let name = name.clone();
        async move {
            let spec = json!({
                "apiVersion": "deppy.io/v1alpha1", "kind": "Catalog",
                "metadata": { "name": name },
                "spec": { "source": { "image": { "ref": reference } } }
            });
            api.patch(
                &name,
                &PatchParams::apply("test").force(),
                &Patch::Apply(&spec),
            )
            .await
            .unwrap();
            wait_for(
                &format!("Catalog {name} to serve {reference}"),
                TIMEOUT,
                || async {
                    let status = api
                        .get(&name)
                        .await
                        .map_err(|e| e.to_string())?
                        .status
                        .unwrap_or_default();
                    let serving = status.resolved_source.as_deref() == Some(reference.as_str())
                        && status.urls.is_some();
                    if serving {
                        Ok(())
                    } else {
                        Err(format!("{status:?}"))
                    }
                },
            )
            .await;
        }
    };
    point_at(first.clone()).await;
    let (_, reader) = token(
        &client,
        Some(json!([{ "apiGroups": ["catalogs.deppy.io"], "resources": ["catalogs/content"], "verbs": ["get"] }])),
    )
    .await;
    let http = https(&client).await;
    let all = format!("https://{}/catalogs/{name}/api/v1/all", host());

    // Start reading, take one piece, and stop reading for now.
    let mut reading = http.get(&all).bearer_auth(&reader).send().await.unwrap();
    assert_eq!(reading.status(), StatusCode::OK);
    let length: u64 = reading.headers()["content-length"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    // More than the socket buffers on both ends hold, so most of the body is still in the
    // server's store file when the catalog is replaced below: the sender's buffer at its
    // largest, the receiver's at its start (autotuning grows it only while the reader
    // reads, and this one stops).
    let buffer = |path: &str, field: usize| -> u64 {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|text| {
                text.split_whitespace()
                    .nth(field)
                    .and_then(|n| n.parse().ok())
            })
            .unwrap_or(8 << 20)
    };
    let in_flight =
        buffer("/proc/sys/net/ipv4/tcp_wmem", 2) + buffer("/proc/sys/net/ipv4/tcp_rmem", 1);
    assert!(
        length > in_flight + (4 << 20),
        "{length} bytes could all be buffered ({in_flight})"
    );
    let old_tag = reading.headers()["etag"].to_str().unwrap().to_owned();
    let mut received = reading.chunk().await.unwrap().unwrap().to_vec();

    // The Catalog moves to new content meanwhile; new requests get it.
    point_at(push("b", 'b')).await;
    let (status, headers, _) = get(
        &http,
        &format!("/catalogs/{name}/api/v1/metas?schema=olm.package&name=p0"),
        Some(&reader),
        &[("if-none-match", &old_tag)],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_ne!(headers["etag"].to_str().unwrap(), old_tag);

    // The first reader gets the old content, whole and untorn.
    while let Some(chunk) = reading.chunk().await.unwrap() {
        received.extend_from_slice(&chunk);
    }
    assert_eq!(received.len() as u64, length);
    let text = String::from_utf8(received).unwrap();
    assert_eq!(
        text.lines().filter(|l| l.contains("\"aaaaaaaa")).count(),
        2000
    );
    assert!(
        !text.contains("\"bbbbbbbb"),
        "a line of the new content was served to the old reader"
    );
}

/// One GET through the Kubernetes API server, as `client`'s user.
async fn through_api_server(client: &Client, path: &str) -> Result<String, kube::Error> {
    let request = http::Request::get(path).body(Vec::new()).unwrap();
    client.request_text(request).await
}

/// The admin kubeconfig's client certificate and key, as one PEM: a certificate the
/// cluster's CA signed, but not the front-proxy CA.
async fn admin_identity() -> reqwest::Identity {
    let config = kube::config::Kubeconfig::read().unwrap();
    let auth = &config.auth_infos[0].auth_info.as_ref().unwrap();
    let decode = |data: &Option<String>| {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD
            .decode(data.as_ref().unwrap())
            .unwrap()
    };
    let mut pem = decode(&auth.client_certificate_data);
    pem.extend(decode(
        &auth
            .client_key_data
            .as_ref()
            .map(|k| secrecy::ExposeSecret::expose_secret(k).to_owned()),
    ));
    reqwest::Identity::from_pem(&pem).unwrap()
}

#[tokio::test]
async fn any_kubeconfig_reads_through_the_api_server_and_forged_user_headers_are_ignored() {
    let client = setup().await;
    let _registered =
        testkit::aggregation::register_catalog_api(&client, system_namespace(), address().port())
            .await;
    let name = unique_name("agg");
    serve(&client, &name, &package("app", &["1.0.0", "1.1.0"])).await;
    let packages = format!("/apis/catalogs.deppy.io/v1/catalogs/{name}/content/api/v1/packages");

    // A user granted this catalog, by name, reads through the API server: a user the API
    // server authenticated (here by impersonation, as `kubectl --as`), no token of theirs.
    let reader = unique_name("reader");
    testkit::users::grant(
        &client,
        &reader,
        &unique_name("catalog-reader"),
        json!([{ "apiGroups": ["catalogs.deppy.io"], "resources": ["catalogs/content"],
                  "resourceNames": [name], "verbs": ["get"] }]),
    )
    .await;
    let as_reader = testkit::users::impersonating(&reader).await;
    let body = wait_for("packages through the API server", TIMEOUT, || async {
        through_api_server(&as_reader, &packages)
            .await
            .map_err(|e| e.to_string())
    })
    .await;
    let summary: Vec<catalog_api::PackageSummary> = serde_json::from_str(&body).unwrap();
    assert_eq!(summary.len(), 1);
    assert_eq!(summary[0].name, "app");
    let metas = format!(
        "/apis/catalogs.deppy.io/v1/catalogs/{name}/content/api/v1/metas?schema=olm.bundle"
    );
    let bundles = through_api_server(&as_reader, &metas).await.unwrap();
    assert_eq!(bundles.lines().count(), 2, "{bundles}");

    // A user without the grant is refused by the API server, in its words, before the
    // request reaches the catalog API; another catalog's name is refused to the reader.
    let stranger = testkit::users::impersonating(&unique_name("stranger")).await;
    match through_api_server(&stranger, &packages).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 403, "{status:?}");
            assert!(
                status.message.contains(
                    "cannot get resource \"catalogs/content\" in API group \"catalogs.deppy.io\""
                ),
                "{}",
                status.message
            );
        }
        other => panic!("a stranger read the catalog: {other:?}"),
    }
    let other = "/apis/catalogs.deppy.io/v1/catalogs/someone-elses/content/api/v1/packages";
    match through_api_server(&as_reader, other).await {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 403, "{status:?}"),
        other => panic!("a per-name grant read another catalog: {other:?}"),
    }

    // Straight to the API, the front proxy's headers are forged: without a certificate of
    // the front-proxy CA they are ignored, so there is no user at all...
    let http = https(&client).await;
    let direct = format!("/catalogs/{name}/api/v1/packages");
    let forged = [
        ("x-remote-user", reader.as_str()),
        ("x-remote-group", "system:masters"),
    ];
    let (status, _, body) = get(&http, &direct, None, &forged).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{}", text(&body));
    // ...and with a token, the token's user is the one checked, not the header's.
    let (stranger_sa, stranger_token) = token(&client, None).await;
    let (status, _, body) = get(&http, &direct, Some(&stranger_token), &forged).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(text(&body).contains(&stranger_sa), "{}", text(&body));

    // A client certificate the cluster's own CA signed (the admin's) is not a front proxy's:
    // the handshake is refused, whatever headers would follow.
    let configmaps = Api::<ConfigMap>::namespaced(client.clone(), system_namespace());
    let bundle = configmaps
        .get("deppy-catalog-api-ca")
        .await
        .unwrap()
        .data
        .unwrap()["ca.crt"]
        .clone();
    let mut builder = reqwest::Client::builder()
        .resolve(&host(), address())
        .tls_built_in_root_certs(false)
        .identity(admin_identity().await);
    for cert in reqwest::Certificate::from_pem_bundle(bundle.as_bytes()).unwrap() {
        builder = builder.add_root_certificate(cert);
    }
    let with_admin_cert = builder.build().unwrap();
    let refused = with_admin_cert
        .get(format!("https://{}{direct}", host()))
        .header("x-remote-user", reader.as_str())
        .send()
        .await;
    assert!(
        refused.is_err(),
        "a non-front-proxy certificate was accepted: {:?}",
        refused.map(|r| r.status())
    );
}
