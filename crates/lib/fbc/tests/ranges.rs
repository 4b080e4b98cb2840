//! Version ranges: the syntax catalogs and users write, under both pre-release policies.
//!
//! Expected answers come from the documented semantics of blang/semver (skipRange) and
//! Masterminds/semver (OLM v1 version requirements).

// Test helpers outside #[test] functions unwrap too; a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use fbc::{PrereleasePolicy, RangeError, Version, VersionRange};

use PrereleasePolicy::{OptIn, Ordered};

/// Asserts, for each `(version, expected)`, whether `range` matches `version` under `policy`.
fn check(policy: PrereleasePolicy, range: &str, cases: &[(&str, bool)]) {
    let parsed = VersionRange::parse(range, policy)
        .unwrap_or_else(|e| panic!("{range:?} should parse: {e}"));
    for (version, expected) in cases {
        let v = Version::parse(version).unwrap();
        assert_eq!(
            parsed.matches(&v),
            *expected,
            "{range:?} ({policy:?}) on {version}"
        );
    }
}

/// Same answers under both policies (no pre-release versions involved).
fn both(range: &str, cases: &[(&str, bool)]) {
    check(Ordered, range, cases);
    check(OptIn, range, cases);
}

#[test]
fn plain_comparators_compare_by_precedence() {
    both(
        ">=1.0.0",
        &[("1.0.0", true), ("0.9.9", false), ("2.0.0", true)],
    );
    both(">1.0.0", &[("1.0.0", false), ("1.0.1", true)]);
    both("<2.0.0", &[("1.9.9", true), ("2.0.0", false)]);
    both("<=2.0.0", &[("2.0.0", true), ("2.0.1", false)]);
    both("1.2.3", &[("1.2.3", true), ("1.2.4", false)]);
    both("=1.2.3", &[("1.2.3", true), ("1.2.2", false)]);
    both("==1.2.3", &[("1.2.3", true), ("1.3.0", false)]);
    both("!=1.2.3", &[("1.2.3", false), ("1.2.4", true)]);
    both("!1.2.3", &[("1.2.3", false), ("0.1.0", true)]);
}

#[test]
fn alternative_operator_spellings_mean_the_same() {
    both("=>1.0.0", &[("1.0.0", true), ("0.9.0", false)]);
    both("=<1.0.0", &[("1.0.0", true), ("1.0.1", false)]);
    both("~>1.2.3", &[("1.2.9", true), ("1.3.0", false)]);
}

#[test]
fn whitespace_and_commas_join_comparators_with_and() {
    let cases = [
        ("0.9.0", false),
        ("1.0.0", true),
        ("1.5.0", true),
        ("2.0.0", false),
    ];
    both(">=1.0.0 <2.0.0", &cases);
    both(">=1.0.0, <2.0.0", &cases);
    both(">=1.0.0,<2.0.0", &cases);
    both(">= 1.0.0 , < 2.0.0", &cases);
    both("  >=1.0.0\t<2.0.0  ", &cases);
}

#[test]
fn double_pipes_join_alternatives_with_or() {
    both(
        "<1.0.0 || >=3.0.0",
        &[("0.5.0", true), ("2.0.0", false), ("3.1.0", true)],
    );
    // The example from blang's documentation: AND binds tighter than OR.
    both(
        ">1.0.0 <2.0.0 || >3.0.0 !4.2.1",
        &[
            ("1.2.3", true),
            ("1.9.9", true),
            ("3.1.1", true),
            ("4.2.1", false),
            ("2.1.1", false),
        ],
    );
    both(
        "1.0.0||2.0.0",
        &[("1.0.0", true), ("2.0.0", true), ("1.5.0", false)],
    );
}

#[test]
fn wildcards_cover_the_versions_they_leave_open() {
    let series = [
        ("1.1.9", false),
        ("1.2.0", true),
        ("1.2.9", true),
        ("1.3.0", false),
    ];
    both("1.2.x", &series);
    both("1.2.X", &series);
    both("1.2.*", &series);
    both("=1.2.x", &series);
    both("1.2", &series);
    both("v1.2.x", &series);
    both(
        "1.x",
        &[
            ("0.9.0", false),
            ("1.0.0", true),
            ("1.9.0", true),
            ("2.0.0", false),
        ],
    );
    both("1.x.x", &[("1.5.5", true), ("2.0.0", false)]);
    both("1", &[("1.4.0", true), ("2.0.0", false)]);
    both("*", &[("0.0.0", true), ("0.0.1", true), ("99.0.0", true)]);
    both("x", &[("3.2.1", true)]);
}

#[test]
fn comparators_on_wildcards_bound_the_covered_interval() {
    both(">1.2.x", &[("1.2.9", false), ("1.3.0", true)]);
    both(">=1.2.x", &[("1.1.9", false), ("1.2.0", true)]);
    both("<1.2.x", &[("1.1.9", true), ("1.2.0", false)]);
    both("<=1.2.x", &[("1.2.9", true), ("1.3.0", false)]);
    both(">1.x", &[("1.9.9", false), ("2.0.0", true)]);
    both("<=1.x", &[("1.9.9", true), ("2.0.0", false)]);
    both(">1.2", &[("1.2.5", false), ("1.3.0", true)]);
    both("<=1", &[("1.9.9", true), ("2.0.0", false)]);
    both(">=*", &[("0.0.0", true)]);
    both(">*", &[("0.0.0", false), ("9.9.9", false)]);
}

#[test]
fn not_equal_to_a_wildcard_excludes_the_whole_series() {
    both(
        "!=1.2.x",
        &[
            ("1.1.0", true),
            ("1.2.0", false),
            ("1.2.5", false),
            ("1.3.0", true),
        ],
    );
    both(
        "!=1.x",
        &[("0.9.0", true), ("1.5.0", false), ("2.0.0", true)],
    );
    both("!=*", &[("1.0.0", false)]);
}

#[test]
fn tilde_allows_patch_changes_or_minor_changes_when_only_a_major_is_given() {
    both(
        "~1.2.3",
        &[
            ("1.2.2", false),
            ("1.2.3", true),
            ("1.2.9", true),
            ("1.3.0", false),
        ],
    );
    both(
        "~1.2",
        &[("1.2.0", true), ("1.2.7", true), ("1.3.0", false)],
    );
    both("~1", &[("1.0.0", true), ("1.9.0", true), ("2.0.0", false)]);
    both("~1.x", &[("1.9.0", true), ("2.0.0", false)]);
    both("~0.0.0", &[("0.0.5", true), ("0.1.0", false)]);
    both("~ 1.2.3", &[("1.2.4", true)]);
}

#[test]
fn caret_allows_changes_that_keep_the_leftmost_non_zero_part() {
    both(
        "^1.2.3",
        &[
            ("1.2.2", false),
            ("1.2.3", true),
            ("1.9.9", true),
            ("2.0.0", false),
        ],
    );
    both(
        "^1.2",
        &[("1.1.0", false), ("1.2.0", true), ("2.0.0", false)],
    );
    both("^1", &[("1.0.0", true), ("1.99.0", true), ("2.0.0", false)]);
    both(
        "^0.2.3",
        &[("0.2.2", false), ("0.2.5", true), ("0.3.0", false)],
    );
    both("^0.2", &[("0.2.0", true), ("0.3.0", false)]);
    both("^0.0.3", &[("0.0.3", true), ("0.0.4", false)]);
    both("^0.0", &[("0.0.9", true), ("0.1.0", false)]);
    both("^0", &[("0.9.0", true), ("1.0.0", false)]);
    both("^*", &[("5.0.0", true)]);
    both("^v1.2", &[("1.3.0", true)]);
}

#[test]
fn hyphen_ranges_are_inclusive_and_widen_partial_upper_bounds() {
    both(
        "1.2 - 1.4.5",
        &[
            ("1.1.9", false),
            ("1.2.0", true),
            ("1.4.5", true),
            ("1.4.6", false),
        ],
    );
    both(
        "2.3.4 - 4.5",
        &[
            ("2.3.3", false),
            ("2.3.4", true),
            ("4.5.9", true),
            ("4.6.0", false),
        ],
    );
    both(
        "1.0.0 - 2.0.0 || 3.0.0",
        &[("1.5.0", true), ("2.5.0", false), ("3.0.0", true)],
    );
    both("v1.0.0 - v1.1.0", &[("1.1.0", true), ("1.1.1", false)]);
    both(
        ">=0.5.0 1.0.0 - 2.0.0",
        &[("0.7.0", false), ("1.0.0", true)],
    );
}

#[test]
fn a_v_prefix_is_accepted_everywhere() {
    both("v1.2.3", &[("1.2.3", true), ("1.2.4", false)]);
    both(">=v1.0.0 <v2.0.0", &[("1.5.0", true), ("2.0.0", false)]);
    both(">= v1.0.0", &[("1.0.0", true)]);
}

#[test]
fn build_metadata_never_affects_matching() {
    both("1.2.3", &[("1.2.3+build.5", true), ("1.2.3+other", true)]);
    both(">1.2.3", &[("1.2.3+build.9", false)]);
    both(
        "=1.2.3+build.1",
        &[("1.2.3", true), ("1.2.3+build.2", true)],
    );
}

#[test]
fn ordered_policy_treats_pre_releases_as_ordinary_versions() {
    check(Ordered, "<2.0.0", &[("2.0.0-rc.1", true), ("2.0.0", false)]);
    check(
        Ordered,
        ">=1.0.0",
        &[("1.0.0-alpha", false), ("1.1.0-alpha", true)],
    );
    // A typical skipRange reaching up to a release candidate.
    check(
        Ordered,
        ">=0.9.0 <1.0.0-rc.1",
        &[("1.0.0-rc.0", true), ("1.0.0-rc.1", false), ("0.9.5", true)],
    );
    check(
        Ordered,
        ">1.0.0-alpha.1",
        &[
            ("1.0.0-alpha", false),
            ("1.0.0-alpha.1", false),
            ("1.0.0-beta", true),
            ("1.0.0", true),
        ],
    );
    check(
        Ordered,
        "1.2.x",
        &[("1.2.5-rc.1", true), ("1.2.0-rc.1", false)],
    );
    // blang expands `<=1.2.x` to `<1.3.0`, which a 1.3.0 pre-release is below.
    check(Ordered, "<=1.2.x", &[("1.3.0-rc.1", true)]);
    check(Ordered, ">1.2.x", &[("1.3.0-rc.1", false), ("1.3.0", true)]);
}

#[test]
fn opt_in_policy_matches_pre_releases_only_when_the_group_names_one() {
    check(
        OptIn,
        "<2.0.0",
        &[("2.0.0-rc.1", false), ("1.5.0-rc.1", false)],
    );
    check(OptIn, ">=1.0.0", &[("1.1.0-alpha", false), ("1.1.0", true)]);
    check(OptIn, "*", &[("1.0.0-alpha", false)]);
    check(
        OptIn,
        ">=1.1.0-alpha",
        &[("1.1.0-beta", true), ("1.2.0-beta", true), ("1.0.0", false)],
    );
    // The pre-release in one comparator opts in the whole AND group.
    check(OptIn, ">=1.1.0-alpha <2.0.0", &[("1.5.0-rc.1", true)]);
    // ...but not other alternatives.
    check(
        OptIn,
        "<1.0.0 || >=2.0.0-alpha",
        &[("0.5.0-rc.1", false), ("2.1.0-rc.1", true)],
    );
    check(
        OptIn,
        "^1.2.3-beta.2",
        &[
            ("1.2.3-beta.4", true),
            ("1.2.3", true),
            ("1.2.3-alpha", false),
            ("2.0.0-rc.1", false),
        ],
    );
    check(
        OptIn,
        "1.0.0-rc.1 - 1.0.0",
        &[("1.0.0-rc.2", true), ("1.0.0", true)],
    );
}

#[test]
fn opt_in_policy_keeps_the_next_series_pre_releases_out_of_implied_upper_bounds() {
    // Each group names a pre-release, so pre-releases are in play; the series bound decides.
    check(
        OptIn,
        ">=1.2.0-0 1.2.x",
        &[("1.2.5-rc.1", true), ("1.3.0-rc.1", false)],
    );
    check(OptIn, ">=1.2.0-0 <=1.2", &[("1.3.0-rc.1", false)]);
    check(
        OptIn,
        ">=1.0.0-0 >1.2",
        &[("1.3.0-rc.1", true), ("1.2.9", false)],
    );
    check(
        OptIn,
        "~1.2.3-rc.1",
        &[("1.2.3", true), ("1.3.0-rc.1", false)],
    );
    check(Ordered, "~1.2.3-rc.1", &[("1.3.0-rc.1", true)]);
}

#[test]
fn a_range_remembers_its_text_and_policy() {
    let range = VersionRange::parse(">= 1.0.0, <2", OptIn).unwrap();
    assert_eq!(range.to_string(), ">= 1.0.0, <2");
    assert_eq!(range.as_str(), ">= 1.0.0, <2");
    assert_eq!(range.policy(), OptIn);
}

#[test]
fn empty_ranges_and_alternatives_are_rejected() {
    for text in [
        "",
        "   ",
        ">=1.0.0 ||",
        "|| 1.0.0",
        "1.0.0 || || 2.0.0",
        ",",
    ] {
        let err = VersionRange::parse(text, Ordered).unwrap_err();
        assert!(matches!(err, RangeError::Empty { .. }), "{text:?}: {err:?}");
    }
}

#[test]
fn malformed_comparators_are_rejected_with_the_offending_text() {
    for (text, culprit) in [
        (">=", ">="),
        ("~>", "~>"),
        ("1.2.3.4", "1.2.3.4"),
        ("abc", "abc"),
        (">=1..2", ">=1..2"),
        ("1.x.3", "1.x.3"),
        ("1.2-beta", "1.2-beta"),
        ("1.2.3-01", "1.2.3-01"),
        (">=1.0.0 -", ">=1.0.0"),
        ("- 1.0.0", "-"),
        (">=1.0.0 - 2.0.0", ">=1.0.0"),
        ("1.0.0 - ~2.0.0", "1.0.0"),
        ("<>1.0.0", "<>1.0.0"),
        ("18446744073709551616.0.0", "18446744073709551616.0.0"),
        ("1.0.0 >= ", ">="),
    ] {
        match VersionRange::parse(text, OptIn) {
            Err(RangeError::Comparator {
                comparator, range, ..
            }) => {
                assert_eq!(comparator, culprit, "{text:?}");
                assert_eq!(range, text);
            }
            other => panic!("{text:?}: expected a comparator error, got {other:?}"),
        }
    }
}

#[test]
fn errors_read_as_sentences_naming_the_range() {
    let err = VersionRange::parse(">=1.0.0 <abc", Ordered).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("\"<abc\""), "{text}");
    assert!(text.contains("\">=1.0.0 <abc\""), "{text}");
}
