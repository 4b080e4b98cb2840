//! The built `deppy-resolver resolve` command on the fixture catalogs: output and exit codes.

// Test helpers outside #[test] functions are not covered by clippy.toml's test allowances.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Output};

fn resolve(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_deppy-resolver"))
        .current_dir(testkit::package_path(""))
        .arg("resolve")
        .args(args)
        .output()
        .expect("run deppy-resolver")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

const COMMUNITY: &str = "tests/fixtures/community";
const CERTIFIED: &str = "tests/fixtures/certified";
const UPGRADES: &str = "tests/fixtures/upgrades";
const GRAPHS: &str = "tests/fixtures/graphs";

const REFUSED_DOWNGRADE: &str = "package memcached-operator is installed at 0.2.0; the upgrade \
    graph allows 0.2.0 (stay) or 0.3.0 from it, and none of these is in range <0.2.0 of channel \
    stable\n";

#[test]
fn resolved_selections_are_printed_one_per_line_sorted_with_exit_code_0() {
    let output = resolve(&["--catalog", COMMUNITY, "--require", "portal"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "community:app:1.0.0:stable\ncommunity:lib:1.1.0:stable\ncommunity:portal:1.0.0:stable\n"
    );
    assert_eq!(stderr(&output), "");
}

#[test]
fn timings_go_to_stderr_as_one_line_and_leave_the_answer_alone() {
    let output = resolve(&["--catalog", COMMUNITY, "--require", "portal", "--timings"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "community:app:1.0.0:stable\ncommunity:lib:1.1.0:stable\ncommunity:portal:1.0.0:stable\n"
    );
    let line = stderr(&output);
    let fields: Vec<(&str, f64)> = line
        .trim_end()
        .split(' ')
        .map(|field| {
            let (name, seconds) = field.split_once('=').unwrap();
            (name, seconds.parse().unwrap())
        })
        .collect();
    let names: Vec<&str> = fields.iter().map(|(name, _)| *name).collect();
    assert_eq!(names, ["load_s", "build_s", "solve_s"], "{line}");
    assert!(
        fields.iter().all(|(_, s)| (0.0..10.0).contains(s)),
        "{line}"
    );
}

#[test]
fn catalog_names_and_priorities_come_from_the_catalog_argument() {
    let output = resolve(&[
        "--catalog",
        &format!("{COMMUNITY}=hub"),
        "--catalog",
        &format!("{CERTIFIED}=,10"),
        "--require",
        "lib,<2.0.0",
        "--require",
        "etcd,,fast",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "certified:lib:1.1.0:stable\nhub:etcd:1.0.0:fast\n"
    );
}

#[test]
fn installed_prohibit_and_function_form_flags_shape_the_result() {
    let output = resolve(&[
        "--catalog",
        COMMUNITY,
        "--installed",
        "etcd=0.6.1",
        "--prohibit",
        "backend",
        "--constraint",
        r#"required("analytics")"#,
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "community:analytics:1.0.0:stable\ncommunity:etcd:0.9.2:stable\ncommunity:lib:2.0.0:stable\n"
    );
}

#[test]
fn unsatisfiable_constraints_print_the_explanation_to_stderr_with_exit_code_1() {
    let output = resolve(&["--catalog", COMMUNITY, "--require", "broken"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "");
    assert_eq!(
        stderr(&output),
        "constraints not satisfiable:\n\
         required(\"broken\") is mandatory\n\
         required(\"broken\") requires community:broken:1.0.0:stable\n\
         bundle community:broken:1.0.0:stable requires an operator providing an API with \
         group: x.example.com, version: v1, kind: Missing\n"
    );
}

#[test]
fn invalid_input_exits_with_code_2_and_says_what_is_wrong() {
    let cases: [(&[&str], &str); 5] = [
        (
            &["--catalog", COMMUNITY, "--require", "lib,>=one"],
            "error: failed to parse the version range of required(\"lib\", \">=one\"): ",
        ),
        (
            &["--catalog", COMMUNITY, "--constraint", r#"required("lib""#],
            "failed to parse constraint expression",
        ),
        (
            &["--catalog", "tests/fixtures/missing", "--require", "lib"],
            "error: failed to load catalog tests/fixtures/missing: ",
        ),
        (
            &["--catalog", COMMUNITY, "--installed", "etcd=latest"],
            "error: failed to parse the installed version of installed(\"etcd\", \"latest\")",
        ),
        (&["--require", "lib"], "--catalog"),
    ];
    for (args, expected) in cases.iter().copied().chain([(
        &["--catalog", UPGRADES, "--kube-version", "latest"][..],
        "invalid value 'latest' for '--kube-version <VERSION>': failed to read \"latest\" as a \
         Kubernetes version: expected MAJOR.MINOR[.PATCH], e.g. 1.36.4",
    )]) {
        let output = resolve(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&output).contains(expected),
            "{args:?}: {:?} not in {:?}",
            expected,
            stderr(&output)
        );
        assert_eq!(stdout(&output), "", "{args:?}");
    }
}

#[test]
fn two_catalogs_with_the_same_name_are_invalid_input() {
    let output = resolve(&[
        "--catalog",
        COMMUNITY,
        "--catalog",
        &format!("{CERTIFIED}=community"),
        "--require",
        "lib",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("another catalog has the same name"));
}

#[test]
fn json_output_carries_images_and_problem_statistics() {
    let output = resolve(&[
        "--catalog",
        COMMUNITY,
        "--require",
        "app",
        "--output",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let selections = document["selections"].as_array().unwrap();
    assert_eq!(selections.len(), 2);
    assert_eq!(selections[1]["selection"], "community:lib:1.1.0:stable");
    assert_eq!(selections[1]["bundle"], "lib.v1.1.0");
    assert_eq!(
        selections[1]["image"],
        "quay.io/community/lib-bundle:v1.1.0"
    );
    assert_eq!(document["stats"]["bundles"], 3);
    assert!(document["stats"]["clauses"].as_u64().unwrap() > 0);
}

#[test]
fn json_output_of_an_unsatisfiable_request_lists_the_explanation() {
    let output = resolve(&[
        "--catalog",
        COMMUNITY,
        "--require",
        "mysql",
        "--require",
        "postgres",
        "--output",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let explanation = document["explanation"].as_array().unwrap();
    assert_eq!(explanation.len(), 5);
    assert!(
        explanation[4]
            .as_str()
            .unwrap()
            .starts_with("there can be only one provider of Database (db.example.com/v1)")
    );
    assert!(document["stats"]["clauses"].is_null());
    assert!(stderr(&output).starts_with("constraints not satisfiable:\n"));
}

#[test]
fn an_installed_version_moves_only_to_a_direct_successor() {
    let output = resolve(&[
        "--catalog",
        UPGRADES,
        "--installed",
        "memcached-operator=0.1.0",
        "--require",
        "memcached-operator",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "upgrades:memcached-operator:0.2.0:stable\n"
    );
}

#[test]
fn a_refused_path_prints_the_versions_the_upgrade_graph_allows_first() {
    let output = resolve(&[
        "--catalog",
        UPGRADES,
        "--installed",
        "memcached-operator=0.2.0",
        "--require",
        "memcached-operator,<0.2.0,stable",
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "");
    let text = stderr(&output);
    assert!(
        text.starts_with(&format!(
            "{REFUSED_DOWNGRADE}constraints not satisfiable:\n"
        )),
        "{text}"
    );
}

#[test]
fn json_output_of_a_refused_path_carries_the_summary() {
    let output = resolve(&[
        "--catalog",
        UPGRADES,
        "--installed",
        "memcached-operator=0.2.0",
        "--require",
        "memcached-operator,<0.2.0,stable",
        "--output",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        document["summary"],
        serde_json::json!([REFUSED_DOWNGRADE.trim_end()])
    );
    assert!(!document["explanation"].as_array().unwrap().is_empty());
}

#[test]
fn a_self_certified_package_may_move_anywhere_in_range_downgrades_included() {
    let output = resolve(&[
        "--catalog",
        UPGRADES,
        "--installed",
        "memcached-operator=0.2.0",
        "--require",
        "memcached-operator,<0.2.0,stable",
        "--self-certified",
        "memcached-operator",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "upgrades:memcached-operator:0.1.0:stable\n"
    );

    // Only the named package: cache-lib still follows its graph, also when installed(...)
    // comes in function form.
    let output = resolve(&[
        "--catalog",
        UPGRADES,
        "--constraint",
        r#"installed("memcached-operator", "0.2.0")"#,
        "--installed",
        "cache-lib=1.0.0",
        "--require",
        "memcached-operator,>=0.3.0",
        "--self-certified",
        "memcached-operator",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "upgrades:cache-lib:1.1.0:stable\nupgrades:memcached-operator:0.3.0:stable\n"
    );
}

#[test]
fn kube_version_passes_over_bundles_for_newer_clusters_and_says_so_when_nothing_is_left() {
    let args = [
        "--catalog",
        UPGRADES,
        "--require",
        "memcached-operator,,candidate",
    ];
    let output = resolve(&args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("upgrades:memcached-operator:0.4.0:candidate"));

    let output = resolve(&[&args[..], &["--kube-version", "v1.36.4"]].concat());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("upgrades:memcached-operator:0.3.0:candidate"));

    let output = resolve(&[
        "--catalog",
        UPGRADES,
        "--require",
        "memcached-operator,>=0.4.0",
        "--kube-version",
        "1.36.4",
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).ends_with(
            "bundle upgrades:memcached-operator:0.4.0:candidate requires Kubernetes >= 1.40.0 \
             (minKubeVersion) and this cluster runs 1.36.4\n"
        ),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_catalog_with_a_broken_channel_graph_warns_and_serves_its_other_packages() {
    let output = resolve(&["--catalog", GRAPHS, "--require", "sound"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "graphs:sound:1.1.0:stable\n");
    assert_eq!(
        stderr(&output),
        "warning: catalog graphs cannot offer package forked until it is fixed: forked.yaml \
         document 2 (olm.channel \"stable\"): invalid channel \"stable\" of package \"forked\": \
         channel has several heads: forked.v1.1.0, forked.v2.0.0\n\
         warning: catalog graphs cannot offer package looped until it is fixed: looped.yaml \
         document 2 (olm.channel \"stable\"): invalid channel \"stable\" of package \"looped\": \
         upgrade edges form a cycle: looped.v1.0.0 -> looped.v1.1.0 -> looped.v1.0.0\n"
    );

    let output = resolve(&["--catalog", GRAPHS, "--require", "looped"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains(
            "catalog graphs cannot offer package looped until it is fixed: the upgrade graph of \
             channel stable is invalid (upgrade edges form a cycle"
        ),
        "{}",
        stderr(&output)
    );
}
