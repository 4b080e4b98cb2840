//! The exact messages (with their causes) that bad blobs give, whatever the level of detail
//! kept. The expectations were recorded from the parser that read whole documents into
//! `serde_json::Value` first, so reading them typed and in place changes no message.

// Test helpers outside #[test] functions unwrap too; a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use fbc::{Detail, parse_files_with};

fn chain(error: &dyn std::error::Error) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}

const BUNDLE_JSON: &str = r#"{"schema":"olm.bundle","package":"foo","name":"foo.v1","image":"r/foo:1","properties":[{"type":"olm.package","value":{"packageName":"foo","version":"1.0.0"}}PROPS]EXTRA}"#;

fn bundle(props: &str, extra: &str) -> String {
    BUNDLE_JSON.replace("PROPS", props).replace("EXTRA", extra)
}

/// (file, contents, the message and causes of the error, or `ok`).
fn cases() -> Vec<(&'static str, String, &'static str)> {
    vec![
        ("c.json", "{\"schema\": \"olm.package\", \"name\": \"foo\"}\n{\"schema\": \"olm.bundle\",".to_owned(),
            "malformed JSON in c.json document 2: EOF while parsing a value at line 2 column 24"),
        ("c.json", "{\"schema\": \"x\"}\n[1, 2]".to_owned(),
            "c.json document 2: a catalog blob must be an object"),
        ("c.json", "{\"schema\": \"x\", \"n\": [1e400]}".to_owned(),
            "malformed JSON in c.json document 1: number out of range at line 1 column 27"),
        ("c.json", "{\"schema\": \"x\"} 5".to_owned(),
            "c.json document 2: a catalog blob must be an object"),
        ("c.json", "{\"schema\": \"x\"}\n{\"name\": \"orphan\", \"schema\": 5}".to_owned(),
            "c.json document 2 (\"orphan\"): blob has no schema"),
        ("c.yaml", "schema: olm.package\nname: foo\n---\nname: [unclosed\n".to_owned(),
            "malformed YAML in c.yaml document 2: did not find expected ',' or ']' at line 5 column 1, while parsing a flow sequence at line 4 column 7"),
        ("c.yaml", "just some prose\n".to_owned(),
            "c.yaml document 1: a catalog blob must be an object"),
        ("c.yaml", "schema: olm.bundle\nname: foo.v1\nimage: x\nproperties: []\n".to_owned(),
            "c.yaml document 1 (olm.bundle \"foo.v1\"): package must be set"),
        ("c.json", bundle("", r#","name":5"#).replace(r#""name":"foo.v1","#, ""),
            "c.json document 1 (olm.bundle): blob does not match the olm.bundle format: invalid type: integer `5`, expected a string"),
        ("c.json", bundle("", r#","image":[1]"#).replace(r#""image":"r/foo:1","#, ""),
            "c.json document 1 (olm.bundle \"foo.v1\"): blob does not match the olm.bundle format: invalid type: sequence, expected a string"),
        ("c.json", bundle("", r#","relatedImages":[{"name":"x"}]"#),
            "c.json document 1 (olm.bundle \"foo.v1\"): blob does not match the olm.bundle format: missing field `image`"),
        ("c.json", bundle("", r#","relatedImages":null"#),
            "ok"),
        ("c.json", bundle(r#",{"value":{}}"#, ""),
            "c.json document 1 (olm.bundle \"foo.v1\"): blob does not match the olm.bundle format: missing field `type`"),
        ("c.json", bundle(r#",{"type":5}"#, ""),
            "c.json document 1 (olm.bundle \"foo.v1\"): blob does not match the olm.bundle format: invalid type: integer `5`, expected a string"),
        ("c.json", bundle(r#",{"type":"olm.gvk","value":{"group":"g"}}"#, ""),
            "c.json document 1 (olm.bundle \"foo.v1\"): property 1 (olm.gvk) is invalid: value does not match the olm.gvk format: missing field `version`"),
        ("c.json", bundle(r#",{"type":"olm.gvk"}"#, ""),
            "c.json document 1 (olm.bundle \"foo.v1\"): property 1 (olm.gvk) is invalid: value does not match the olm.gvk format: invalid type: null, expected struct Gvk"),
        ("c.json", bundle(r#",{"type":"olm.gvk","value":{"group":"g","version":1,"kind":"K"}}"#, ""),
            "c.json document 1 (olm.bundle \"foo.v1\"): property 1 (olm.gvk) is invalid: value does not match the olm.gvk format: invalid type: integer `1`, expected a string"),
        ("c.json", bundle(r#",{"type":"olm.gvk.required","value":[]}"#, ""),
            "c.json document 1 (olm.bundle \"foo.v1\"): property 1 (olm.gvk.required) is invalid: value does not match the olm.gvk.required format: invalid length 1, expected struct Gvk with 3 elements"),
        ("c.json", bundle(r#",{"type":"olm.package.required","value":{"packageName":"bar","versionRange":">=1.0.0 ||"}}"#, ""),
            "c.json document 1 (olm.bundle \"foo.v1\"): property 1 (olm.package.required) is invalid: invalid version range: version range \">=1.0.0 ||\" has an empty alternative"),
        ("c.json", bundle(r#",{"type":"olm.package.required","value":{"packageName":"bar"}}"#, ""),
            "c.json document 1 (olm.bundle \"foo.v1\"): property 1 (olm.package.required) is invalid: value does not match the olm.package.required format: missing field `versionRange`"),
        ("c.json", bundle(r#",{"type":"olm.package","value":{"packageName":"foo","version":"2.0.0"}}"#, ""),
            "c.json document 1 (olm.bundle \"foo.v1\"): a bundle needs exactly one olm.package property, found 2"),
        ("c.json", bundle(r#",{"type":"olm.constraint","value":{"gvk":{"group":"g","version":"v1","kind":"K"},"package":{"packageName":"b","versionRange":">=1.0.0"}}}"#, ""),
            "c.json document 1 (olm.bundle \"foo.v1\"): property 1 (olm.constraint) is invalid: olm.constraint sets more than one of [\"gvk\", \"package\"]"),
        ("c.json", bundle(r#",{"type":"olm.constraint","value":{"failureMessage":5,"gvk":{}}}"#, ""),
            "c.json document 1 (olm.bundle \"foo.v1\"): property 1 (olm.constraint) is invalid: olm.constraint failureMessage must be a string"),
        ("c.json", bundle(r#",{"type":"olm.constraint","value":{"all":{"constraints":[{"gvk":{"version":"v1"}}]}}}"#, ""),
            "c.json document 1 (olm.bundle \"foo.v1\"): property 1 (olm.constraint) is invalid: olm.constraint gvk has an invalid value: missing field `kind`"),
        ("c.json", bundle(r#",{"type":"olm.constraint","value":"x"}"#, ""),
            "c.json document 1 (olm.bundle \"foo.v1\"): property 1 (olm.constraint) is invalid: olm.constraint must be an object"),
        ("c.json", bundle(r#",{"type":"olm.maxOpenShiftVersion","value":true}"#, ""),
            "c.json document 1 (olm.bundle \"foo.v1\"): property 1 (olm.maxOpenShiftVersion) is invalid: olm.maxOpenShiftVersion must be a string or a number"),
        ("c.json", bundle(r#",{"type":"olm.csv.metadata","value":{"installModes":5}}"#, ""),
            "c.json document 1 (olm.bundle \"foo.v1\"): property 1 (olm.csv.metadata) is invalid: value does not match the olm.csv.metadata format: invalid type: integer `5`, expected a sequence"),
        ("c.json", bundle(r#",{"type":"olm.csv.metadata","value":{"annotations":{"a":1}}}"#, ""),
            "c.json document 1 (olm.bundle \"foo.v1\"): property 1 (olm.csv.metadata) is invalid: value does not match the olm.csv.metadata format: invalid type: integer `1`, expected a string"),
        ("c.json", bundle(r#",{"type":"olm.csv.metadata","value":[]}"#, ""),
            "c.json document 1 (olm.bundle \"foo.v1\"): property 1 (olm.csv.metadata) is invalid: value does not match the olm.csv.metadata format: invalid type: sequence, expected struct CsvMetadata"),
        ("c.json", bundle("", "").replace("1.0.0", "v1.0"),
            "c.json document 1 (olm.bundle \"foo.v1\"): property 0 (olm.package) is invalid: version \"v1.0\" is not valid semver: unexpected character 'v' while parsing major version number"),
        ("c.json", bundle("", "").replace(r#""packageName":"foo""#, r#""packageName":"bar""#),
            "c.json document 1 (olm.bundle \"foo.v1\"): olm.package property names package \"bar\", but the bundle's package is \"foo\""),
        ("c.json", bundle("", "").replace(r#"[{"type":"olm.package","value":{"packageName":"foo","version":"1.0.0"}}]"#, "[]"),
            "c.json document 1 (olm.bundle \"foo.v1\"): a bundle needs exactly one olm.package property, found 0"),
        ("c.json", bundle("", "").replace(r#"[{"type":"olm.package","value":{"packageName":"foo","version":"1.0.0"}}]"#, "7"),
            "c.json document 1 (olm.bundle \"foo.v1\"): blob does not match the olm.bundle format: invalid type: integer `7`, expected a sequence"),
        ("c.json", r#"{"schema":"olm.package","name":"foo","icon":"x"}"#.to_owned(),
            "c.json document 1 (olm.package \"foo\"): blob does not match the olm.package format: invalid type: string \"x\", expected struct Icon"),
        ("c.json", r#"{"schema":"olm.package","name":"foo","icon":{"base64data":null}}"#.to_owned(),
            "c.json document 1 (olm.package \"foo\"): blob does not match the olm.package format: invalid type: null, expected a string"),
        ("c.json", r#"{"schema":"olm.package","name":"foo","defaultChannel":5}"#.to_owned(),
            "c.json document 1 (olm.package \"foo\"): blob does not match the olm.package format: invalid type: integer `5`, expected a string"),
        ("c.json", r#"{"schema":"olm.package","name":"foo","description":["x"]}"#.to_owned(),
            "c.json document 1 (olm.package \"foo\"): blob does not match the olm.package format: invalid type: sequence, expected a string"),
        ("c.json", r#"{"schema":"olm.package","name":""}"#.to_owned(),
            "c.json document 1 (olm.package): name must be set"),
        ("c.json", r#"{"schema":"olm.channel","package":"foo","name":"stable","entries":"x"}"#.to_owned(),
            "c.json document 1 (olm.channel \"stable\"): blob does not match the olm.channel format: invalid type: string \"x\", expected a sequence"),
        ("c.json", r#"{"schema":"olm.channel","package":"foo","name":"stable","entries":[{"name":"a","skips":"b"}]}"#.to_owned(),
            "c.json document 1 (olm.channel \"stable\"): blob does not match the olm.channel format: invalid type: string \"b\", expected a sequence"),
        ("c.json", r#"{"schema":"olm.channel","package":"foo","name":"stable","entries":[{"name":"a","skipRange":">=1.0.0 <"}]}"#.to_owned(),
            "c.json document 1 (olm.channel \"stable\"): entry \"a\" has an invalid skipRange: invalid comparator \"<\" in version range \">=1.0.0 <\": operator without a version"),
        ("c.json", r#"{"schema":"olm.channel","package":"foo","name":"stable","entries":[{"replaces":"a"}]}"#.to_owned(),
            "c.json document 1 (olm.channel \"stable\"): entries[].name must be set"),
        ("c.json", r#"{"schema":"olm.channel","package":"foo","entries":[]}"#.to_owned(),
            "c.json document 1 (olm.channel): name must be set"),
        ("c.json", r#"{"schema":"olm.deprecations","package":"foo","entries":[{"message":"m"}]}"#.to_owned(),
            "c.json document 1 (olm.deprecations): blob does not match the olm.deprecations format: missing field `reference`"),
        ("c.json", r#"{"schema":"olm.deprecations","package":"foo","entries":[{"reference":{"schema":"olm.widget","name":"w"},"message":"m"}]}"#.to_owned(),
            "c.json document 1 (olm.deprecations): deprecation entry 0 references unsupported schema \"olm.widget\""),
        ("c.json", r#"{"schema":"olm.deprecations","package":"foo","entries":[{"reference":{"schema":"olm.bundle"},"message":"m"}]}"#.to_owned(),
            "c.json document 1 (olm.deprecations): deprecation entry 0 references a olm.bundle without a name"),
        ("c.json", r#"{"schema":"olm.deprecations","package":"foo","entries":[{"reference":{"schema":""},"message":"m"}]}"#.to_owned(),
            "c.json document 1 (olm.deprecations): entries[].reference.schema must be set"),
        ("c.json", r#"{"schema":"olm.deprecations","package":"foo","entries":[{"reference":{"schema":"olm.package"}}]}"#.to_owned(),
            "c.json document 1 (olm.deprecations): entries[].message must be set"),
        ("c.yaml", "schema: olm.bundle\npackage: foo\nname: foo.v1\nimage: 5\n".to_owned(),
            "c.yaml document 1 (olm.bundle \"foo.v1\"): blob does not match the olm.bundle format: invalid type: integer `5`, expected a string"),
        ("c.yaml", "schema: olm.bundle\npackage: foo\nname: foo.v1\nimage: x\nproperties:\n- type: olm.gvk\n  value: {group: g, version: 1.5, kind: K}\n".to_owned(),
            "c.yaml document 1 (olm.bundle \"foo.v1\"): property 0 (olm.gvk) is invalid: value does not match the olm.gvk format: invalid type: floating point `1.5`, expected a string"),
        ("c.yaml", "schema: olm.bundle\npackage: foo\nname: foo.v1\nimage: x\nproperties:\n- type: olm.package\n  value: {packageName: foo, version: 1.0}\n".to_owned(),
            "c.yaml document 1 (olm.bundle \"foo.v1\"): property 0 (olm.package) is invalid: value does not match the olm.package format: invalid type: floating point `1.0`, expected a string"),
        ("c.json", format!("{}{}", "[".repeat(200), "]".repeat(200)),
            "malformed YAML in c.json document 1: recursion limit exceeded at line 1 column 129"),
        ("c.json", format!("{{\"schema\":\"x\",\"a\":{}{}}}", "[".repeat(200), "]".repeat(200)),
            "malformed JSON in c.json document 1: recursion limit exceeded at line 1 column 145"),
    ]
}

#[test]
fn messages_are_those_of_the_value_based_parser() {
    for (file, contents, expected) in cases() {
        for detail in [Detail::Full, Detail::Resolution] {
            let message = match parse_files_with([(file, contents.as_bytes())], detail) {
                Ok(_) => "ok".to_owned(),
                Err(e) => chain(&e),
            };
            assert_eq!(message, expected, "{detail:?} {file}: {contents}");
        }
    }
}
