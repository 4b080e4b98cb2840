//! Generated catalogs against the FBC parser: arbitrary, damaged and adversarial input
//! (random bytes, deep nesting, wrong types, concatenated JSON, YAML documents) never
//! panics; it parses or returns an error naming the file.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proptest::prelude::*;

/// Cases per property: `PROPTEST_CASES` overrides.
const CASES: u32 = 512;

/// JSON values shaped like FBC objects, with wrong types mixed in.
fn value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(serde_json::Value::from),
        prop_oneof![
            Just("olm.package".to_owned()),
            Just("olm.channel".to_owned()),
            Just("olm.bundle".to_owned()),
            Just("olm.deprecations".to_owned()),
            Just("1.0.0".to_owned()),
            Just(">=1.0.0 <2.0.0".to_owned()),
            "\\PC{0,12}",
        ]
        .prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
            prop::collection::btree_map(
                prop_oneof![
                    Just("schema".to_owned()),
                    Just("name".to_owned()),
                    Just("package".to_owned()),
                    Just("entries".to_owned()),
                    Just("replaces".to_owned()),
                    Just("skips".to_owned()),
                    Just("skipRange".to_owned()),
                    Just("properties".to_owned()),
                    Just("type".to_owned()),
                    Just("value".to_owned()),
                    Just("image".to_owned()),
                    Just("defaultChannel".to_owned()),
                    "[a-z]{1,8}",
                ],
                inner,
                0..8,
            )
            .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

fn parse(file: &str, bytes: &[u8]) -> Result<(), String> {
    fbc::parse_files([(file, bytes)])
        .map(|_| ())
        .map_err(|e| e.to_string())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn generated_json_streams_parse_or_fail_naming_the_file(
        objects in prop::collection::vec(value(), 0..8),
        separator in prop_oneof![Just(""), Just("\n"), Just(" \n\t")],
    ) {
        let text: Vec<String> = objects.iter().map(|o| o.to_string()).collect();
        if let Err(message) = parse("catalog.json", text.join(separator).as_bytes()) {
            prop_assert!(message.contains("catalog.json"), "{}", message);
        }
    }

    #[test]
    fn generated_yaml_documents_parse_or_fail_naming_the_file(
        objects in prop::collection::vec(value(), 0..6),
    ) {
        let docs: Vec<String> =
            objects.iter().map(|o| serde_yaml_ng::to_string(o).unwrap()).collect();
        if let Err(message) = parse("catalog.yaml", docs.join("---\n").as_bytes()) {
            prop_assert!(message.contains("catalog.yaml"), "{}", message);
        }
    }

    #[test]
    fn both_details_accept_and_refuse_the_same_documents(
        objects in prop::collection::vec(value(), 0..8),
        yaml in any::<bool>(),
    ) {
        let (file, text) = if yaml {
            let docs: Vec<String> =
                objects.iter().map(|o| serde_yaml_ng::to_string(o).unwrap()).collect();
            ("catalog.yaml", docs.join("---\n"))
        } else {
            let docs: Vec<String> = objects.iter().map(|o| o.to_string()).collect();
            ("catalog.json", docs.join("\n"))
        };
        let outcome = |detail| {
            fbc::parse_files_with([(file, text.as_bytes())], detail)
                .map(|c| (c.packages.len(), c.channels.len(), c.bundles.len(), c.others.len()))
                .map_err(|e| e.to_string())
        };
        prop_assert_eq!(outcome(fbc::Detail::Full), outcome(fbc::Detail::Resolution));
    }

    #[test]
    fn random_and_damaged_bytes_never_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..4096),
        yaml in any::<bool>(),
    ) {
        let _ = parse(if yaml { "c.yaml" } else { "c.json" }, &bytes);
    }
}

#[test]
fn deeply_nested_input_is_an_error_not_a_stack_overflow() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(parse("deep.json", deep.as_bytes()).is_err());
    let deep_yaml = format!("{}x{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(parse("deep.yaml", deep_yaml.as_bytes()).is_err());
}

#[test]
fn a_valid_generated_shape_parses() {
    let catalog = concat!(
        r#"{"schema":"olm.package","name":"p","defaultChannel":"stable"}"#,
        "\n",
        r#"{"schema":"olm.channel","name":"stable","package":"p","entries":[{"name":"p.v1.0.0"}]}"#,
        "\n",
        r#"{"schema":"olm.bundle","name":"p.v1.0.0","package":"p","image":"r/p:1","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}}]}"#,
    );
    parse("catalog.json", catalog.as_bytes()).unwrap();
}
