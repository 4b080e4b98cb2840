//! Generated multi-document YAML against the bundle manifest reader: document separators
//! in odd places, BOMs, CRLF, comment-only documents, anchors and alias bombs never panic;
//! N object documents yield N objects; empty documents are skipped.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

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
