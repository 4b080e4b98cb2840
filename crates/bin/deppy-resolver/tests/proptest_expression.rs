//! Generated input against the constraint expression parser
//! (`required("pkg", ">= 1.0.0", "stable")`): arbitrary and near-valid text never panics,
//! a refusal points at a column inside the text, and every constraint's `Display` parses
//! back to the same constraint.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use deppy_resolver::Constraint;
use proptest::prelude::*;

/// Cases per property: `PROPTEST_CASES` overrides.
const CASES: u32 = 1024;

/// Argument text as the API allows it: no quotes or backslashes.
fn word() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 .<>=!,~^*|_-]{1,16}"
}

fn constraint() -> impl Strategy<Value = Constraint> {
    prop_oneof![
        (
            word(),
            proptest::option::of(word()),
            proptest::option::of(word())
        )
            .prop_map(|(package, version_range, channel)| Constraint::Required {
                package,
                version_range,
                channel,
            }),
        (word(), proptest::option::of(word())).prop_map(|(package, version_range)| {
            Constraint::Prohibited {
                package,
                version_range,
            }
        }),
        (word(), word(), word()).prop_map(|(group, version, kind)| Constraint::GvkRequired {
            group,
            version,
            kind,
        }),
        (word(), word()).prop_map(|(package, version)| Constraint::Installed { package, version }),
    ]
}

/// Mutations of a valid expression: insertions, deletions and replacements.
fn mutated() -> impl Strategy<Value = String> {
    (
        constraint(),
        prop::collection::vec(
            (
                any::<prop::sample::Index>(),
                prop::option::of("[(),\" a-z\\\\]"),
            ),
            1..6,
        ),
    )
        .prop_map(|(constraint, edits)| {
            let mut chars: Vec<char> = constraint.to_string().chars().collect();
            for (at, insert) in edits {
                let i = at.index(chars.len() + 1);
                match insert {
                    Some(text) => chars.splice(i..i, text.chars()).for_each(drop),
                    None if i < chars.len() => {
                        chars.remove(i);
                    }
                    None => {}
                }
            }
            chars.into_iter().collect()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn every_constraint_round_trips_through_its_display(constraint in constraint()) {
        // Whitespace-only optional arguments print as absent, as the parser reads them.
        let text = constraint.to_string();
        let parsed: Constraint = text.parse().unwrap();
        prop_assert_eq!(parsed.to_string(), text);
    }

    #[test]
    fn arbitrary_text_never_panics_and_refusals_point_inside_it(text in "\\PC{0,64}") {
        if let Err(err) = text.parse::<Constraint>() {
            prop_assert!(err.column >= 1 && err.column <= text.chars().count() + 1, "{}", err);
        }
    }

    #[test]
    fn near_valid_expressions_never_panic(text in mutated()) {
        if let Err(err) = text.parse::<Constraint>() {
            prop_assert!(err.column >= 1 && err.column <= text.chars().count() + 1, "{}", err);
        }
    }

    #[test]
    fn deep_nesting_is_refused(depth in 1usize..2000) {
        let text = format!("{}required(\"a\"){}", "(".repeat(depth), ")".repeat(depth));
        prop_assert!(text.parse::<Constraint>().is_err());
    }
}
