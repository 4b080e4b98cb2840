//! The built `deppy-resolver resolve` command on the fixture catalogs: output and exit codes.

// Test helpers outside #[test] functions are not covered by clippy.toml's test allowances.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Output};

fn resolve(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_deppy-resolver"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
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
    for (args, expected) in cases {
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
