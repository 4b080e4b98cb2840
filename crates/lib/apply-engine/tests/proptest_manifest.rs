//! Generated multi-document YAML against the bundle manifest reader: document separators
//! in odd places, BOMs, CRLF, comment-only documents, anchors and alias bombs never panic;
//! N object documents yield N objects; empty documents are skipped; merge keys are applied
//! as YAML 1.1 readers apply them and never reach an object.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;

use apply_engine::manifest::parse_documents;
use proptest::prelude::*;

/// Cases per property: `PROPTEST_CASES` overrides.
const CASES: u32 = 512;

fn object(name: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  key: value\n")
}

/// Documents that hold nothing.
fn empty() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("# only a comment\n".to_owned()),
        Just("\n\n".to_owned()),
        Just("# a\n# b\n".to_owned()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn n_object_documents_among_empty_ones_yield_n_objects(
        layout in prop::collection::vec(prop::option::of(empty()), 0..12),
        crlf in any::<bool>(),
        bom in any::<bool>(),
        explicit_end in any::<bool>(),
    ) {
        let mut text = String::new();
        let mut names = Vec::new();
        let mut after_object = false;
        for (i, slot) in layout.iter().enumerate() {
            if i > 0 {
                // `...` ends a document that has content; before any it is not YAML.
                text.push_str(if explicit_end && after_object { "...\n---\n" } else { "---\n" });
            }
            match slot {
                Some(empty) => text.push_str(empty),
                None => {
                    names.push(format!("cm-{i}"));
                    text.push_str(&object(&format!("cm-{i}")));
                }
            }
            after_object = slot.is_none();
        }
        if crlf {
            text = text.replace('\n', "\r\n");
        }
        if bom {
            text.insert(0, '\u{feff}');
        }
        let objects = parse_documents("bundle.yaml", text.as_bytes()).unwrap();
        let parsed: Vec<String> =
            objects.iter().map(|o| o.metadata.name.clone().unwrap_or_default()).collect();
        prop_assert_eq!(parsed, names);
    }

    /// `data: {<written keys>, <<: [*b0, *b1, ...]}`: the result holds every written key
    /// with its written value, then each base's keys the written ones and earlier bases lack.
    #[test]
    fn merged_mappings_fill_in_keys_the_mapping_lacks_earlier_first(
        bases in prop::collection::vec(
            prop::collection::btree_map("[a-e]", "v[a-z]{1,4}", 0..4), 1..4),
        written in prop::collection::btree_map("[a-e]", "v[a-z]{1,4}", 0..4),
        merge_first in any::<bool>(),
        as_list in any::<bool>(),
    ) {
        let flow = |map: &BTreeMap<String, String>| {
            let entries: Vec<String> = map.iter().map(|(k, v)| format!("{k}: {v}")).collect();
            format!("{{{}}}", entries.join(", "))
        };
        let mut text = String::from("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: m}\nbases:\n");
        for (i, base) in bases.iter().enumerate() {
            text.push_str(&format!("  b{i}: &b{i} {}\n", flow(base)));
        }
        // One base may be merged on its own; several need the list form.
        let aliases: Vec<String> = (0..bases.len()).map(|i| format!("*b{i}")).collect();
        let merge = if bases.len() == 1 && !as_list {
            format!("  <<: {}\n", aliases[0])
        } else {
            format!("  <<: [{}]\n", aliases.join(", "))
        };
        text.push_str("data:\n");
        if merge_first {
            text.push_str(&merge);
        }
        for (k, v) in &written {
            text.push_str(&format!("  {k}: {v}\n"));
        }
        if !merge_first {
            text.push_str(&merge);
        }
        let mut expected = written.clone();
        for base in &bases {
            for (k, v) in base {
                expected.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        let objects = parse_documents("merge.yaml", text.as_bytes()).unwrap();
        let data: BTreeMap<String, String> =
            serde_json::from_value(objects[0].data["data"].clone()).unwrap();
        prop_assert_eq!(data, expected);
        prop_assert!(!serde_json::to_string(&objects[0].data).unwrap().contains("<<"));
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,256}") {
        let _ = parse_documents("bundle.yaml", text.as_bytes());
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..1024)) {
        let _ = parse_documents("bundle.yaml", &bytes);
    }
}

#[test]
fn an_alias_bomb_is_refused_rather_than_expanded() {
    // Each level doubles: 2^30 strings if expanded.
    let mut text = String::from("a: &a [\"x\", \"x\"]\n");
    let mut previous = "a".to_owned();
    for level in 1..30 {
        let name = format!("l{level}");
        text.push_str(&format!("{name}: &{name} [*{previous}, *{previous}]\n"));
        previous = name;
    }
    let started = std::time::Instant::now();
    let result = parse_documents("bomb.yaml", text.as_bytes());
    assert!(result.is_err(), "an alias bomb was accepted");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn an_alias_bomb_through_merge_keys_is_refused_rather_than_expanded() {
    // Each level merges two copies of the one below under new keys: 2^30 entries if expanded.
    let mut text = String::from("l0: &l0 {a: x, b: x}\n");
    for level in 1..30 {
        let previous = level - 1;
        text.push_str(&format!(
            "l{level}: &l{level} {{<<: *l{previous}, p: *l{previous}, q: *l{previous}}}\n"
        ));
    }
    let started = std::time::Instant::now();
    let result = parse_documents("bomb.yaml", text.as_bytes());
    assert!(result.is_err(), "an alias bomb was accepted");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}
