//! `kubectl olm` as a user runs it: the built binary on catalog directories written here,
//! its exact output and exit codes.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output};

/// A catalog in the shapes real ones have: a Markdown description with a heading, an icon,
/// two channels (one deprecated) with replaces, skips and a skipRange, a deprecated bundle,
/// and a second package without a default channel's head version.
const DATABASES: &str = r#"---
schema: olm.package
name: etcd-operator
defaultChannel: stable
description: |
  ## Etcd Operator
  Creates and maintains highly available etcd clusters.
icon:
  base64data: PHN2Zy8+
  mediatype: image/svg+xml
---
schema: olm.channel
package: etcd-operator
name: stable
entries:
  - name: etcd-operator.v0.9.2
  - name: etcd-operator.v0.9.4
    replaces: etcd-operator.v0.9.2
  - name: etcd-operator.v1.0.0
    replaces: etcd-operator.v0.9.4
    skips: [etcd-operator.v0.9.2]
---
schema: olm.channel
package: etcd-operator
name: alpha
entries:
  - name: etcd-operator.v0.9.4
  - name: etcd-operator.v1.1.0-alpha.1
    replaces: etcd-operator.v0.9.4
    skipRange: ">=0.9.0 <1.1.0-alpha.1"
---
schema: olm.bundle
package: etcd-operator
name: etcd-operator.v0.9.2
image: registry.example.com/etcd-operator-bundle:v0.9.2
properties:
  - {type: olm.package, value: {packageName: etcd-operator, version: 0.9.2}}
---
schema: olm.bundle
package: etcd-operator
name: etcd-operator.v0.9.4
image: registry.example.com/etcd-operator-bundle:v0.9.4
properties:
  - {type: olm.package, value: {packageName: etcd-operator, version: 0.9.4}}
---
schema: olm.bundle
package: etcd-operator
name: etcd-operator.v1.0.0
image: registry.example.com/etcd-operator-bundle:v1.0.0
properties:
  - {type: olm.package, value: {packageName: etcd-operator, version: 1.0.0}}
---
schema: olm.bundle
package: etcd-operator
name: etcd-operator.v1.1.0-alpha.1
image: registry.example.com/etcd-operator-bundle:v1.1.0-alpha.1
properties:
  - {type: olm.package, value: {packageName: etcd-operator, version: 1.1.0-alpha.1}}
---
schema: olm.deprecations
package: etcd-operator
entries:
  - reference: {schema: olm.channel, name: alpha}
    message: The alpha channel is no longer updated; use stable.
  - reference: {schema: olm.bundle, name: etcd-operator.v0.9.2}
    message: etcd-operator 0.9.2 corrupts snapshots; upgrade to 0.9.4.
---
schema: olm.package
name: redis-operator
defaultChannel: preview
description: Redis clusters with failover.
---
schema: olm.channel
package: redis-operator
name: preview
entries:
  - name: redis-operator.v0.1.0
---
schema: olm.bundle
package: redis-operator
name: redis-operator.v0.1.0
image: registry.example.com/redis-operator-bundle:v0.1.0
properties:
  - {type: olm.package, value: {packageName: redis-operator, version: 0.1.0}}
"#;

fn catalog_dir(content: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("catalog.yaml"), content).unwrap();
    dir
}

fn olm(args: &[&str], catalog: &Path) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kubectl-olm"));
    command.args(args);
    command.arg(format!("--catalog={}=databases", catalog.display()));
    command.output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

#[test]
fn search_matches_every_word_in_names_and_descriptions() {
    let catalog = catalog_dir(DATABASES);
    let found = olm(&["search", "ETCD", "clusters"], catalog.path());
    assert_eq!(found.status.code(), Some(0), "{}", stderr(&found));
    assert_eq!(
        stdout(&found),
        "CATALOG    PACKAGE        DEFAULT CHANNEL  LATEST  DEPRECATED  SUMMARY\n\
         databases  etcd-operator  stable           1.0.0   -           Etcd Operator\n"
    );
    // Every package when no word is given, by name.
    let all = olm(&["search"], catalog.path());
    let packages: Vec<String> = stdout(&all)
        .lines()
        .skip(1)
        .map(|line| line.split_whitespace().nth(1).unwrap().to_owned())
        .collect();
    assert_eq!(packages, ["etcd-operator", "redis-operator"]);
}

#[test]
fn nothing_found_is_exit_code_1_with_a_sentence_and_an_empty_list_for_scripts() {
    let catalog = catalog_dir(DATABASES);
    let none = olm(&["search", "postgres"], catalog.path());
    assert_eq!(none.status.code(), Some(1));
    assert_eq!(stdout(&none), "");
    assert_eq!(
        stderr(&none),
        "kubectl olm: no package in catalog databases matches \"postgres\"\n"
    );
    let json = olm(&["search", "postgres", "-o", "json"], catalog.path());
    assert_eq!(json.status.code(), Some(1));
    assert_eq!(stdout(&json), "[]\n");

    let unknown = olm(&["show", "postgres-operator"], catalog.path());
    assert_eq!(unknown.status.code(), Some(1));
    assert_eq!(
        stderr(&unknown),
        "kubectl olm: package postgres-operator is in none of catalog databases; look for it with `kubectl olm search postgres-operator`\n"
    );
}

#[test]
fn show_lists_channels_versions_deprecations_and_upgrades() {
    let catalog = catalog_dir(DATABASES);
    let shown = olm(&["show", "etcd-operator"], catalog.path());
    assert_eq!(shown.status.code(), Some(0), "{}", stderr(&shown));
    assert_eq!(
        stdout(&shown),
        "Package:          etcd-operator\n\
         Catalog:          databases\n\
         Summary:          Etcd Operator\n\
         Default channel:  stable\n\
         Deprecated:       -\n\
         Icon:             yes\n\
         \n\
         CHANNEL  HEAD           VERSIONS                          DEPRECATED\n\
         alpha    1.1.0-alpha.1  1.1.0-alpha.1, 0.9.4              The alpha channel is no longer updated; use stable.\n\
         stable   1.0.0          1.0.0, 0.9.4, 0.9.2 (deprecated)  -\n\
         \n\
         Upgrades in channel alpha:\n  0.9.4 -> 1.1.0-alpha.1\n\
         \n\
         Upgrades in channel stable:\n  0.9.2 -> 0.9.4\n  0.9.2 -> 1.0.0\n  0.9.4 -> 1.0.0\n"
    );
}

#[test]
fn upgrades_follow_replaces_skips_and_skip_ranges() {
    let catalog = catalog_dir(DATABASES);
    let from_092 = olm(
        &["upgrades", "etcd-operator", "--from", "0.9.2"],
        catalog.path(),
    );
    assert_eq!(from_092.status.code(), Some(0), "{}", stderr(&from_092));
    assert_eq!(
        stdout(&from_092),
        "Package:    etcd-operator\n\
         Catalog:    databases\n\
         Installed:  0.9.2 (etcd-operator.v0.9.2), in channel stable\n\
         Deprecated: etcd-operator 0.9.2 corrupts snapshots; upgrade to 0.9.4.\n\
         \n\
         NEXT           BUNDLE                        CHANNELS  DEPRECATED\n\
         1.1.0-alpha.1  etcd-operator.v1.1.0-alpha.1  alpha     -\n\
         1.0.0          etcd-operator.v1.0.0          stable    -\n\
         0.9.4          etcd-operator.v0.9.4          stable    -\n"
    );
    // Upgrades from 0.9.4 in stable: 1.0.0 next; the alpha prerelease only through alpha.
    let from_094 = olm(
        &["upgrades", "etcd-operator", "--from", "0.9.4", "-o", "json"],
        catalog.path(),
    );
    let value: serde_json::Value = serde_json::from_str(&stdout(&from_094)).unwrap();
    let versions = |key: &str| -> Vec<String> {
        value[0][key]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["version"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(versions("next"), ["1.1.0-alpha.1", "1.0.0"]);
    assert_eq!(versions("reachable"), ["1.1.0-alpha.1", "1.0.0"]);
    // Only the alpha channel's edges: 0.9.2 is not in it, but its skipRange covers 0.9.2.
    let alpha = olm(
        &[
            "upgrades",
            "etcd-operator",
            "--from",
            "0.9.2",
            "--channel",
            "alpha",
            "-o",
            "json",
        ],
        catalog.path(),
    );
    let value: serde_json::Value = serde_json::from_str(&stdout(&alpha)).unwrap();
    let next: Vec<&str> = value[0]["next"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["version"].as_str().unwrap())
        .collect();
    assert_eq!(next, ["1.1.0-alpha.1"]);
    // The head of stable upgrades nowhere in stable.
    let head = olm(
        &[
            "upgrades",
            "etcd-operator",
            "--from",
            "1.0.0",
            "--channel",
            "stable",
        ],
        catalog.path(),
    );
    assert!(
        stdout(&head).ends_with("No upgrade: nothing in channel stable upgrades from 1.0.0.\n"),
        "{}",
        stdout(&head)
    );
    // A version the catalog does not have: nothing found, saying where to look.
    let unknown = olm(
        &["upgrades", "etcd-operator", "--from", "0.8.0"],
        catalog.path(),
    );
    assert_eq!(unknown.status.code(), Some(1));
    assert_eq!(
        stderr(&unknown),
        "kubectl olm: version 0.8.0 of package etcd-operator is in none of the catalogs, so nothing is known of its upgrades; list its versions with `kubectl olm show etcd-operator`\n"
    );
    let invalid = olm(
        &["upgrades", "etcd-operator", "--from", "latest"],
        catalog.path(),
    );
    assert_eq!(invalid.status.code(), Some(1));
}

#[test]
fn json_and_yaml_carry_the_same_fields_for_scripts() {
    let catalog = catalog_dir(DATABASES);
    let json = olm(&["show", "etcd-operator", "-o", "json"], catalog.path());
    assert_eq!(json.status.code(), Some(0));
    let value: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    let stable = &value[0]["channels"][1];
    assert_eq!(stable["name"], "stable");
    assert_eq!(stable["head"]["bundle"], "etcd-operator.v1.0.0");
    assert_eq!(
        stable["versions"][2]["deprecated"],
        "etcd-operator 0.9.2 corrupts snapshots; upgrade to 0.9.4."
    );
    assert_eq!(
        stable["upgrades"][0],
        serde_json::json!({"from": "etcd-operator.v0.9.2", "to": "etcd-operator.v0.9.4"})
    );
    let yaml = olm(&["show", "etcd-operator", "-o", "yaml"], catalog.path());
    let from_yaml: serde_json::Value = serde_yaml_ng::from_str(&stdout(&yaml)).unwrap();
    assert_eq!(from_yaml, value);
}

#[test]
fn a_catalog_that_does_not_load_is_invalid_input_naming_it() {
    let broken =
        catalog_dir("---\nschema: olm.channel\npackage: missing\nname: stable\nentries: []\n");
    let output = olm(&["search"], broken.path());
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(
        message.starts_with("kubectl olm: failed to load catalog "),
        "{message}"
    );
    // A directory that is not there (and cannot be an image reference).
    let output = Command::new(env!("CARGO_BIN_EXE_kubectl-olm"))
        .args(["search", "--catalog", "nonexistent/catalog"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        "kubectl olm: catalog nonexistent/catalog is neither a directory nor an image reference (registry/repository:tag)\n"
    );
    // No catalog: the cluster's are read, and a cluster that cannot be found is exit 3.
    let output = Command::new(env!("CARGO_BIN_EXE_kubectl-olm"))
        .args(["search", "etcd", "--kubeconfig", "/nonexistent/kubeconfig"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3));
    assert!(
        stderr(&output).starts_with("kubectl olm: cannot read kubeconfig /nonexistent/kubeconfig"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_catalog_image_is_read_from_its_configs_directory() {
    let registry = testkit::servers::CraneRegistry::start();
    let layer = testkit::servers::tar(&[("configs/databases/catalog.yaml", DATABASES.as_bytes())]);
    registry.push("olm/databases-catalog:v1", &[layer]);
    let image = format!("{}/olm/databases-catalog:v1", registry.addr);
    let output = Command::new(env!("CARGO_BIN_EXE_kubectl-olm"))
        .args(["search", "redis", "--catalog", &image])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "CATALOG            PACKAGE         DEFAULT CHANNEL  LATEST  DEPRECATED  SUMMARY\n\
         databases-catalog  redis-operator  preview          0.1.0   -           Redis clusters with failover.\n"
    );
    // A tag that is not there: invalid input naming the image.
    let missing = format!("{}/olm/databases-catalog:v2", registry.addr);
    let output = Command::new(env!("CARGO_BIN_EXE_kubectl-olm"))
        .args(["search", "--catalog", &missing])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).starts_with(&format!(
            "kubectl olm: failed to load catalog image {missing}: "
        )),
        "{}",
        stderr(&output)
    );
}

#[test]
fn completion_scripts_name_the_commands() {
    let output = Command::new(env!("CARGO_BIN_EXE_kubectl-olm"))
        .args(["completion", "bash"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let script = stdout(&output);
    assert!(
        script.contains("search") && script.contains("show"),
        "{script}"
    );
}
