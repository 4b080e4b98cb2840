//! `kubectl olm search`, `show` and `upgrades` without `--catalog`: the cluster's catalogs
//! read through the catalog query API of a deppy-resolver running in this test process, on
//! the real control plane, both through the API server (the aggregated API, with the test
//! kubeconfig's client certificate) and straight with a token. What they print must be what
//! the same command prints for the same catalog given as a directory.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::Duration;

use deppy_api::Catalog;
use deppy_resolver::controller::{self, ApiSettings, Metrics, ServedCatalogs, Settings};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::json;
use testkit::{unique_name, wait_for};

const TIMEOUT: Duration = Duration::from_secs(60);

fn system_namespace() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| unique_name("olm-online"))
}

fn address() -> SocketAddr {
    static ADDRESS: OnceLock<SocketAddr> = OnceLock::new();
    *ADDRESS.get_or_init(|| {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap()
    })
}

/// Starts deppy-resolver with the API, once per process.
async fn setup() -> Client {
    static STARTED: OnceLock<()> = OnceLock::new();
    let client = testkit::client().await;
    if STARTED.set(()).is_ok() {
        testkit::install_crds(&client).await;
        let ns: Namespace =
            serde_json::from_value(json!({ "metadata": { "name": system_namespace() } })).unwrap();
        let _ = Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await;
        testkit::spawn_background(move || async move {
            let client = Client::try_default().await.unwrap();
            let settings = Settings {
                system_namespace: system_namespace().to_owned(),
                default_poll_interval: Duration::from_secs(600),
                unpack: content::UnpackOptions::default(),
                selector: None,
                content_sweep_interval: Duration::from_secs(600),
                api: Some(ApiSettings {
                    address: address(),
                    store_dir: std::env::temp_dir(),
                    base_url: format!("https://deppy-catalogs.{}.svc", system_namespace()),
                }),
            };
            controller::run(
                client,
                settings,
                Metrics::register(&prometheus::Registry::new()).unwrap(),
                ServedCatalogs::default(),
                &kit::admin::Readiness::default(),
                tokio_util::sync::CancellationToken::new(),
            )
            .await;
        });
    }
    client
}

/// A catalog with an operator of three versions in `stable` (one deprecated channel
/// beside it) and a second package.
const CATALOG: &str = r#"{"schema":"olm.package","name":"cache-operator","defaultChannel":"stable","description":"Runs a distributed cache.\n\nLonger text."}
{"schema":"olm.channel","package":"cache-operator","name":"stable","entries":[{"name":"cache-operator.v1.0.0"},{"name":"cache-operator.v1.1.0","replaces":"cache-operator.v1.0.0"},{"name":"cache-operator.v1.2.0","replaces":"cache-operator.v1.1.0","skips":["cache-operator.v1.0.0"]}]}
{"schema":"olm.channel","package":"cache-operator","name":"alpha","entries":[{"name":"cache-operator.v1.0.0"}]}
{"schema":"olm.bundle","package":"cache-operator","name":"cache-operator.v1.0.0","image":"example.com/cache:1.0.0","properties":[{"type":"olm.package","value":{"packageName":"cache-operator","version":"1.0.0"}}]}
{"schema":"olm.bundle","package":"cache-operator","name":"cache-operator.v1.1.0","image":"example.com/cache:1.1.0","properties":[{"type":"olm.package","value":{"packageName":"cache-operator","version":"1.1.0"}}]}
{"schema":"olm.bundle","package":"cache-operator","name":"cache-operator.v1.2.0","image":"example.com/cache:1.2.0","properties":[{"type":"olm.package","value":{"packageName":"cache-operator","version":"1.2.0"}}]}
{"schema":"olm.deprecations","package":"cache-operator","entries":[{"reference":{"schema":"olm.channel","name":"alpha"},"message":"alpha is frozen; use stable"}]}
{"schema":"olm.package","name":"queue-operator","defaultChannel":"stable","description":"A message queue."}
{"schema":"olm.channel","package":"queue-operator","name":"stable","entries":[{"name":"queue-operator.v0.3.0"}]}
{"schema":"olm.bundle","package":"queue-operator","name":"queue-operator.v0.3.0","image":"example.com/queue:0.3.0","properties":[{"type":"olm.package","value":{"packageName":"queue-operator","version":"0.3.0"}}]}
"#;

/// Serves `CATALOG` under a new Catalog and waits for its URL.
async fn serve(client: &Client) -> String {
    let name = unique_name("online");
    let object: ConfigMap = serde_json::from_value(json!({
        "metadata": { "name": name, "namespace": system_namespace() },
        "immutable": true,
        "data": { "catalog.json": CATALOG }
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), system_namespace())
        .create(&PostParams::default(), &object)
        .await
        .unwrap();
    let spec = json!({
        "apiVersion": "deppy.io/v1alpha1", "kind": "Catalog",
        "metadata": { "name": name },
        "spec": { "source": { "configMap": { "name": name, "namespace": system_namespace() } } }
    });
    let api = Api::<Catalog>::all(client.clone());
    api.patch(
        &name,
        &PatchParams::apply("test").force(),
        &Patch::Apply(&spec),
    )
    .await
    .unwrap();
    wait_for("the Catalog's URL", TIMEOUT, || async {
        let catalog = api.get(&name).await.map_err(|e| e.to_string())?;
        match catalog.status.and_then(|s| s.urls) {
            Some(_) => Ok(()),
            None => Err("no urls yet".to_owned()),
        }
    })
    .await;
    name
}

/// A token of a new ServiceAccount, granted reading every catalog when `reader`.
async fn token(client: &Client, reader: bool) -> String {
    let (user, token) = testkit::users::service_account_token(client, system_namespace()).await;
    if reader {
        let rules = json!([{ "apiGroups": ["catalogs.deppy.io"], "resources": ["catalogs/content"], "verbs": ["get"] }]);
        testkit::users::grant(client, &user, &unique_name("olm-reader"), rules).await;
    }
    token
}

fn olm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kubectl-olm"))
        .args(args)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test]
async fn search_show_and_upgrades_read_the_cluster_as_they_read_a_directory() {
    let client = setup().await;
    let _registered =
        testkit::aggregation::register_catalog_api(&client, system_namespace(), address().port())
            .await;
    let name = serve(&client).await;
    let reader = token(&client, true).await;
    let api = address().to_string();
    // Through the API server, as the test kubeconfig's user (a client certificate).
    let online = |args: &[&str]| olm(args);
    // Straight to the API with a ServiceAccount's token.
    let direct = |args: &[&str]| {
        let mut all: Vec<&str> = args.to_vec();
        all.extend([
            "--catalog-api",
            &api,
            "--token",
            &reader,
            "--catalog-api-namespace",
            system_namespace(),
        ]);
        olm(&all)
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("catalog.json"), CATALOG).unwrap();
    let offline_catalog = format!("{}={name}", dir.path().display());
    let offline = |args: &[&str]| {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--catalog", &offline_catalog]);
        olm(&all)
    };

    // search: the same rows (other tests' catalogs may be served too: keep this one's).
    let found = online(&["search", "cache", "-o", "json"]);
    assert_eq!(found.status.code(), Some(0), "{}", text(&found.stderr));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&found.stdout).unwrap();
    let ours: Vec<&serde_json::Value> = rows
        .iter()
        .filter(|r| r["catalog"] == name.as_str())
        .collect();
    let expected: Vec<serde_json::Value> =
        serde_json::from_slice(&offline(&["search", "cache", "-o", "json"]).stdout).unwrap();
    assert_eq!(ours.len(), 1, "{rows:?}");
    assert_eq!(*ours[0], expected[0]);
    assert_eq!(ours[0]["latest"], "1.2.0");
    assert_eq!(ours[0]["summary"], "Runs a distributed cache.");
    let straight = direct(&["search", "cache", "-o", "json"]);
    assert_eq!(
        straight.status.code(),
        Some(0),
        "{}",
        text(&straight.stderr)
    );
    assert_eq!(straight.stdout, found.stdout);

    // show and upgrades: byte for byte what the directory gives.
    for args in [
        vec!["show", "cache-operator"],
        vec!["show", "cache-operator", "-o", "json"],
        vec!["upgrades", "cache-operator", "--from", "1.0.0"],
        vec![
            "upgrades",
            "cache-operator",
            "--from",
            "1.0.0",
            "--channel",
            "alpha",
        ],
    ] {
        let from_cluster = online(&args);
        let from_dir = offline(&args);
        assert_eq!(
            from_cluster.status.code(),
            from_dir.status.code(),
            "{args:?}: {}",
            text(&from_cluster.stderr)
        );
        let keep = |out: &[u8]| {
            // Other catalogs served by this process could hold the package too.
            text(out)
        };
        if args[0] == "show" && args.len() == 2 {
            assert!(
                keep(&from_cluster.stdout).contains(&keep(&from_dir.stdout)),
                "{args:?}\n{}\n---\n{}",
                text(&from_cluster.stdout),
                text(&from_dir.stdout)
            );
        } else if args.len() > 2 && args[2] == "-o" {
            let cluster: Vec<serde_json::Value> =
                serde_json::from_slice(&from_cluster.stdout).unwrap();
            let dir: Vec<serde_json::Value> = serde_json::from_slice(&from_dir.stdout).unwrap();
            assert!(cluster.contains(&dir[0]), "{args:?}");
        } else {
            assert!(
                from_cluster.status.success() == from_dir.status.success(),
                "{args:?}"
            );
            assert!(
                keep(&from_cluster.stdout).contains(keep(&from_dir.stdout).trim()),
                "{args:?}\n{}\n---\n{}",
                text(&from_cluster.stdout),
                text(&from_dir.stdout)
            );
        }
    }

    // An installed operator: what it runs, what it may reach, and its controllers' words.
    let po_name = unique_name("cache");
    let platform_operators: Api<platform_api::PlatformOperator> = Api::all(client.clone());
    let po: platform_api::PlatformOperator = serde_json::from_value(json!({
        "apiVersion": "platform.openshift.io/v1alpha1", "kind": "PlatformOperator",
        "metadata": { "name": po_name },
        "spec": { "package": { "name": "cache-operator", "channel": "stable", "versionRange": "<1.2.0" } }
    }))
    .unwrap();
    platform_operators
        .create(&PostParams::default(), &po)
        .await
        .unwrap();
    // What platform-operators writes once 1.0.0 runs and the range keeps 1.2.0 out.
    platform_operators
        .patch_status(
            &po_name,
            &PatchParams::apply("platform-operators").force(),
            &Patch::Apply(json!({
                "apiVersion": "platform.openshift.io/v1alpha1", "kind": "PlatformOperator",
                "status": {
                    "installedBundles": [{ "package": "cache-operator", "version": "1.0.0" }],
                    "conditions": [{
                        "type": "Progressing", "status": "False", "reason": "UpgradeBlocked",
                        "message": "cache-operator 1.0.0 stays: 1.2.0 is outside versionRange <1.2.0",
                        "lastTransitionTime": "2026-11-29T00:00:00Z"}]},
            })),
        )
        .await
        .unwrap();
    let installed = online(&["upgrades", &po_name]);
    assert_eq!(
        installed.status.code(),
        Some(0),
        "{}",
        text(&installed.stderr)
    );
    let printed = text(&installed.stdout);
    assert!(printed.starts_with(&format!("PlatformOperator:  {po_name}\nRuns:              cache-operator 1.0.0\nFollows:           channel stable, versions <1.2.0, policy CatalogProvided\nProgressing:       False (UpgradeBlocked): cache-operator 1.0.0 stays: 1.2.0 is outside versionRange <1.2.0\n")), "{printed}");
    assert!(
        printed.contains(&text(
            &offline(&[
                "upgrades",
                "cache-operator",
                "--from",
                "1.0.0",
                "--channel",
                "stable"
            ])
            .stdout
        )),
        "{printed}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&online(&["upgrades", &po_name, "-o", "json"]).stdout).unwrap();
    assert_eq!(json["version"], "1.0.0");
    assert_eq!(json["progressing"]["reason"], "UpgradeBlocked");
    let ours = json["upgrades"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["catalog"] == name.as_str())
        .unwrap();
    let next: Vec<&str> = ours["next"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["version"].as_str().unwrap())
        .collect();
    assert_eq!(next, ["1.2.0", "1.1.0"]);
    let nothing = online(&["upgrades", "no-such-platform-operator"]);
    assert_eq!(nothing.status.code(), Some(1), "{}", text(&nothing.stderr));

    // A package no catalog has: exit 1.
    let missing = online(&["show", "no-such-operator"]);
    assert_eq!(missing.status.code(), Some(1), "{}", text(&missing.stderr));

    // Without a token (the test kubeconfig authenticates with a certificate): exit 2, and how.
    let bare = olm(&[
        "search",
        "cache",
        "--catalog-api",
        &api,
        "--catalog-api-namespace",
        system_namespace(),
    ]);
    assert_eq!(bare.status.code(), Some(2), "{}", text(&bare.stderr));
    assert!(
        text(&bare.stderr).contains("needs a bearer token"),
        "{}",
        text(&bare.stderr)
    );

    // Through the API server, `--as` a user who may list Catalogs but read none: each is
    // refused in the API server's words.
    let lister = unique_name("lister");
    testkit::users::grant(
        &client,
        &lister,
        &unique_name("catalog-lister"),
        json!([{ "apiGroups": ["deppy.io"], "resources": ["catalogs"], "verbs": ["get", "list"] }]),
    )
    .await;
    let forbidden = olm(&["search", "cache", "--as", &lister]);
    assert_eq!(
        forbidden.status.code(),
        Some(2),
        "{}",
        text(&forbidden.stderr)
    );
    assert!(
        text(&forbidden.stderr).contains(
            "cannot get resource \"catalogs/content\" in API group \"catalogs.deppy.io\""
        ),
        "{}",
        text(&forbidden.stderr)
    );

    // Straight to the API, a user who may read no catalog: refused with the API's sentence.
    let stranger = token(&client, false).await;
    let refused = olm(&[
        "search",
        "cache",
        "--catalog-api",
        &api,
        "--token",
        &stranger,
        "--catalog-api-namespace",
        system_namespace(),
    ]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    assert!(
        text(&refused.stderr).contains("may not read Catalog"),
        "{}",
        text(&refused.stderr)
    );
}
