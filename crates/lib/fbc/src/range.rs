//! Version ranges as catalogs and users write them.
//!
//! The parser is hand-written: OLM uses two Go libraries with overlapping syntax (blang/semver
//! for catalog ranges, Masterminds/semver for user requirements), and no Rust crate accepts
//! their union. Every comparator is expanded at parse time into primitive bounds, so matching
//! is a flat scan.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use semver::{BuildMetadata, Prerelease, Version};

/// How pre-release versions (`1.2.0-rc.1`) take part in matching.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PrereleasePolicy {
    /// blang/semver: a pre-release is an ordinary version ordered by semver precedence, so
    /// `<2.0.0` matches `2.0.0-rc.1`. OLM uses this for `skipRange`, `olm.package.required` and
    /// `olm.constraint` package ranges.
    Ordered,
    /// Masterminds/semver: a pre-release matches an alternative (one `||` group) only if some
    /// comparator in that group names a pre-release version itself, so `>=1.0.0` never matches
    /// `1.1.0-rc.1` but `>=1.1.0-rc.0` does. Bounds implied by wildcards, partial versions,
    /// `~` and `^` also keep the next series' pre-releases out (`^1.2.3-rc.1` does not match
    /// `2.0.0-rc.1`), as Masterminds compares major and minor numbers there. OLM v1 uses this
    /// for user version requirements.
    OptIn,
}

/// A parse failure, with the offending text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    /// The range, or one of its `||` alternatives, is empty.
    #[error("version range {range:?} has an empty alternative")]
    Empty {
        /// The whole range text.
        range: String,
    },
    /// A comparator could not be read.
    #[error("invalid comparator {comparator:?} in version range {range:?}: {reason}")]
    Comparator {
        /// The whole range text.
        range: String,
        /// The comparator as written.
        comparator: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// A parsed version range: alternatives (OR) of comparator groups (AND).
///
/// Syntax, the union of blang/semver's and Masterminds/semver's:
/// - comparators `=`, `==`, `!=`, `!`, `>`, `>=`, `=>`, `<`, `<=`, `=<`, `~`, `~>`, `^`, or none
///   (equality); whitespace may separate an operator from its version;
/// - comparators separated by whitespace or commas must all hold (AND); `||` separates
///   alternatives (OR); AND binds tighter and there are no brackets;
/// - versions may carry a `v` prefix, may be partial (`1`, `1.2`) and may use `x`, `X` or `*`
///   wildcards (`1.2.x`, `*`); a partial version stands for the interval it covers, so `1.2` is
///   `>=1.2.0 <1.3.0`, `>1.2` is `>=1.3.0` and `<=1.2` is `<1.3.0`;
/// - `~1.2.3` is `>=1.2.3 <1.3.0` and `~1` is `>=1.0.0 <2.0.0`; `^1.2.3` is `>=1.2.3 <2.0.0`,
///   `^0.2.3` is `>=0.2.3 <0.3.0` and `^0.0.3` is `>=0.0.3 <0.0.4`;
/// - hyphen ranges `A - B` (spaces required) mean `>=A <=B`.
///
/// Build metadata never affects matching. Pre-releases follow the [`PrereleasePolicy`] chosen
/// at parse time.
///
/// Deliberate differences from the Go libraries, where they have bugs or oddities: `!=1.2.x`
/// excludes exactly the 1.2 series (blang's expansion ANDs two disjoint bounds and so matches
/// nothing); `~0.0.0` means `>=0.0.0 <0.1.0` (Masterminds treats it as "anything"); `>*`, `<*`
/// and `!=*` match nothing; blang rejects the `v` prefix, `^`, `~`, commas and hyphen ranges,
/// which are accepted here whatever the policy. An empty range is an error: callers model "no
/// range" as `Option::None`.
///
/// Cloning is cheap (the parsed range is shared), and ranges parsed from the same text on
/// the same thread are one allocation: a catalog repeats a handful of range texts (`>=1.0.0`,
/// a `skipRange` per channel entry) across tens of thousands of bundles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionRange(Arc<Parsed>);

#[derive(Debug, PartialEq, Eq)]
struct Parsed {
    text: Box<str>,
    policy: PrereleasePolicy,
    alternatives: Box<[Alternative]>,
}

/// At most this many distinct range texts are remembered per thread and policy; the table is
/// emptied when full, which only costs the sharing of what came before.
const MAX_REMEMBERED_RANGES: usize = 4096;

/// Only texts up to this long are remembered: real ranges are short and repeated, and a
/// long one (a catalog's author can write anything) must not outlive its catalog in a
/// controller's thread. At most 4096 × 2 × 128 bytes of text per thread.
const MAX_REMEMBERED_TEXT: usize = 128;

thread_local! {
    /// Ranges parsed on this thread, by policy and text. Only memory depends on it: a range
    /// found here is exactly what parsing its text again would give.
    static PARSED: RefCell<[foldhash::HashMap<Box<str>, VersionRange>; 2]> = RefCell::default();
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Alternative {
    bounds: Vec<Bound>,
    // Masterminds opts a whole group into pre-releases when any of its comparators names one.
    names_prerelease: bool,
}

/// One primitive test; every comparator expands into one or more of these.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Bound {
    Any,
    Nothing,
    Eq(Version),
    Ne(Version),
    Gt(Version),
    Ge(Version),
    Lt(Version),
    Le(Version),
    /// Outside the half-open interval `[low, high)`.
    Outside(Version, Version),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    Tilde,
    Caret,
}

/// A version as written in a range: missing or wildcard parts are `None`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Partial {
    major: Option<u64>,
    minor: Option<u64>,
    patch: Option<u64>,
    pre: Prerelease,
    build: BuildMetadata,
}

impl VersionRange {
    /// Parses `text` (see the type docs for the syntax) with the given pre-release policy.
    pub fn parse(text: &str, policy: PrereleasePolicy) -> Result<Self, RangeError> {
        let slot = match policy {
            PrereleasePolicy::Ordered => 0,
            PrereleasePolicy::OptIn => 1,
        };
        let known = PARSED.with(|parsed| parsed.borrow()[slot].get(text).cloned());
        if let Some(range) = known {
            return Ok(range);
        }
        let range = Self::parse_uncached(text, policy)?;
        if text.len() > MAX_REMEMBERED_TEXT {
            return Ok(range);
        }
        PARSED.with(|parsed| {
            let table = &mut parsed.borrow_mut()[slot];
            if table.len() >= MAX_REMEMBERED_RANGES {
                *table = foldhash::HashMap::default();
            }
            table.insert(text.into(), range.clone());
        });
        Ok(range)
    }

    fn parse_uncached(text: &str, policy: PrereleasePolicy) -> Result<Self, RangeError> {
        let alternatives = text
            .split("||")
            .map(|group| parse_alternative(text, group, policy))
            .collect::<Result<Box<[_]>, _>>()?;
        Ok(Self(Arc::new(Parsed {
            text: text.into(),
            policy,
            alternatives,
        })))
    }

    /// The range as written.
    pub fn as_str(&self) -> &str {
        &self.0.text
    }

    /// The pre-release policy the range was parsed with.
    pub fn policy(&self) -> PrereleasePolicy {
        self.0.policy
    }

    /// Whether `version` lies in the range. Build metadata never affects the answer.
    pub fn matches(&self, version: &Version) -> bool {
        self.0.alternatives.iter().any(|alt| {
            let gated = self.0.policy == PrereleasePolicy::OptIn
                && !version.pre.is_empty()
                && !alt.names_prerelease;
            !gated && alt.bounds.iter().all(|bound| bound.matches(version))
        })
    }
}

impl fmt::Display for VersionRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.text)
    }
}

/// Compares two versions by semver precedence: like `Ord for Version` but ignoring build
/// metadata, as both Go libraries do (the `semver` crate orders build metadata too).
pub fn compare_precedence(a: &Version, b: &Version) -> Ordering {
    (a.major, a.minor, a.patch)
        .cmp(&(b.major, b.minor, b.patch))
        .then_with(|| a.pre.cmp(&b.pre))
}

impl Bound {
    fn matches(&self, v: &Version) -> bool {
        let cmp = |other: &Version| compare_precedence(v, other);
        match self {
            Bound::Any => true,
            Bound::Nothing => false,
            Bound::Eq(o) => cmp(o) == Ordering::Equal,
            Bound::Ne(o) => cmp(o) != Ordering::Equal,
            Bound::Gt(o) => cmp(o) == Ordering::Greater,
            Bound::Ge(o) => cmp(o) != Ordering::Less,
            Bound::Lt(o) => cmp(o) == Ordering::Less,
            Bound::Le(o) => cmp(o) != Ordering::Greater,
            Bound::Outside(low, high) => cmp(low) == Ordering::Less || cmp(high) != Ordering::Less,
        }
    }
}

fn parse_alternative(
    range: &str,
    group: &str,
    policy: PrereleasePolicy,
) -> Result<Alternative, RangeError> {
    let tokens = tokenize(group);
    if tokens.is_empty() {
        return Err(RangeError::Empty {
            range: range.to_owned(),
        });
    }
    let bad = |comparator: &str, reason: &str| RangeError::Comparator {
        range: range.to_owned(),
        comparator: comparator.to_owned(),
        reason: reason.to_owned(),
    };

    // Join operators written apart from their versions (`>= 1.2`), keeping `-` as its own token.
    let mut comparators: Vec<String> = Vec::new();
    let mut pending_op: Option<&str> = None;
    for token in &tokens {
        if let Some(op) = pending_op.take() {
            if *token == "-" {
                return Err(bad(op, "operator without a version"));
            }
            comparators.push(format!("{op}{token}"));
        } else if is_operator_only(token) {
            pending_op = Some(token);
        } else {
            comparators.push((*token).to_owned());
        }
    }
    if let Some(op) = pending_op {
        return Err(bad(op, "operator without a version"));
    }

    let mut bounds = Vec::new();
    let mut names_prerelease = false;
    let mut i = 0;
    while i < comparators.len() {
        let current = &comparators[i];
        if current == "-" {
            return Err(bad("-", "hyphen range needs a version on each side"));
        }
        if comparators.get(i + 1).is_some_and(|next| next == "-") {
            let Some(upper) = comparators.get(i + 2).filter(|u| *u != "-") else {
                return Err(bad(current, "hyphen range needs a version on each side"));
            };
            if starts_with_operator(current) || starts_with_operator(upper) {
                return Err(bad(current, "hyphen range bounds take no operator"));
            }
            let low = parse_partial(current).map_err(|reason| bad(current, &reason))?;
            let high = parse_partial(upper).map_err(|reason| bad(upper, &reason))?;
            names_prerelease |= !low.pre.is_empty() || !high.pre.is_empty();
            bounds.extend(expand(Op::Ge, &low, policy));
            bounds.extend(expand(Op::Le, &high, policy));
            i += 3;
            continue;
        }
        let (op, rest) = split_operator(current);
        let partial = parse_partial(rest).map_err(|reason| bad(current, &reason))?;
        names_prerelease |= !partial.pre.is_empty();
        bounds.extend(expand(op, &partial, policy));
        i += 1;
    }
    bounds.shrink_to_fit();
    Ok(Alternative {
        bounds,
        names_prerelease,
    })
}

fn tokenize(group: &str) -> Vec<&str> {
    group
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|t| !t.is_empty())
        .collect()
}

const OPERATORS: [(&str, Op); 13] = [
    (">=", Op::Ge),
    ("=>", Op::Ge),
    ("<=", Op::Le),
    ("=<", Op::Le),
    ("!=", Op::Ne),
    ("==", Op::Eq),
    ("~>", Op::Tilde),
    (">", Op::Gt),
    ("<", Op::Lt),
    ("=", Op::Eq),
    ("!", Op::Ne),
    ("~", Op::Tilde),
    ("^", Op::Caret),
];

fn split_operator(comparator: &str) -> (Op, &str) {
    for (text, op) in OPERATORS {
        if let Some(rest) = comparator.strip_prefix(text) {
            return (op, rest);
        }
    }
    (Op::Eq, comparator)
}

fn is_operator_only(token: &str) -> bool {
    OPERATORS.iter().any(|(text, _)| *text == token)
}

fn starts_with_operator(token: &str) -> bool {
    OPERATORS.iter().any(|(text, _)| token.starts_with(text))
}

fn parse_partial(text: &str) -> Result<Partial, String> {
    let text = text.strip_prefix('v').unwrap_or(text);
    if text.is_empty() {
        return Err("missing version".to_owned());
    }
    // The core ends at the first '-' (pre-release) or '+' (build).
    let core_end = text.find(['-', '+']).unwrap_or(text.len());
    let (core, suffix) = text.split_at(core_end);
    let (pre, build) = match suffix.split_once('+') {
        Some((pre, build)) => (pre, Some(build)),
        None => (suffix, None),
    };
    let pre = match pre.strip_prefix('-') {
        Some(p) => Prerelease::new(p).map_err(|e| format!("invalid pre-release: {e}"))?,
        None => Prerelease::EMPTY,
    };
    let build = match build {
        Some(b) => BuildMetadata::new(b).map_err(|e| format!("invalid build metadata: {e}"))?,
        None => BuildMetadata::EMPTY,
    };

    let parts: Vec<&str> = core.split('.').collect();
    if parts.len() > 3 {
        return Err("more than three version parts".to_owned());
    }
    let mut numbers = [None; 3];
    let mut wildcard_seen = false;
    for (slot, part) in numbers.iter_mut().zip(&parts) {
        if matches!(*part, "x" | "X" | "*") {
            wildcard_seen = true;
        } else if wildcard_seen {
            return Err("a number cannot follow a wildcard".to_owned());
        } else if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("{part:?} is not a number or wildcard"));
        } else {
            *slot = Some(part.parse::<u64>().map_err(|e| format!("{part:?}: {e}"))?);
        }
    }
    let [major, minor, patch] = numbers;
    if patch.is_none() && (!pre.is_empty() || !build.is_empty()) {
        return Err("pre-release or build metadata needs a full major.minor.patch".to_owned());
    }
    Ok(Partial {
        major,
        minor,
        patch,
        pre,
        build,
    })
}

fn version(major: u64, minor: u64, patch: u64) -> Version {
    Version::new(major, minor, patch)
}

/// Expands one comparator into primitive bounds (all must hold).
fn expand(op: Op, p: &Partial, policy: PrereleasePolicy) -> Vec<Bound> {
    let Some(major) = p.major else {
        // `*`: the interval of all versions.
        return vec![match op {
            Op::Eq | Op::Ge | Op::Le | Op::Tilde | Op::Caret => Bound::Any,
            Op::Ne | Op::Gt | Op::Lt => Bound::Nothing,
        }];
    };
    let minor = p.minor.unwrap_or(0);
    let patch = p.patch.unwrap_or(0);
    let mut low = version(major, minor, patch);
    low.pre = p.pre.clone();
    low.build = p.build.clone();

    // The start of the next series: the exclusive upper end of the interval a partial version
    // covers, and of tilde and caret ranges. blang expands `<=1.2.x` to `<1.3.0`, which lets
    // 1.3.0-rc.1 in; Masterminds compares major/minor numbers, which keeps it out.
    let next_series = |major: u64, minor: u64, patch: u64| {
        let mut v = version(major, minor, patch);
        if policy == PrereleasePolicy::OptIn {
            v.pre = Prerelease::new("0").unwrap_or(Prerelease::EMPTY);
        }
        v
    };
    // Unused for full versions.
    let partial_high = match p.minor {
        None => next_series(major.saturating_add(1), 0, 0),
        Some(m) => next_series(major, m.saturating_add(1), 0),
    };
    let is_full = p.patch.is_some();

    match op {
        Op::Eq if is_full => vec![Bound::Eq(low)],
        Op::Ne if is_full => vec![Bound::Ne(low)],
        Op::Gt if is_full => vec![Bound::Gt(low)],
        Op::Le if is_full => vec![Bound::Le(low)],
        Op::Eq => vec![Bound::Ge(low), Bound::Lt(partial_high)],
        Op::Ne => vec![Bound::Outside(low, partial_high)],
        Op::Gt => vec![Bound::Ge(partial_high)],
        Op::Le => vec![Bound::Lt(partial_high)],
        Op::Ge => vec![Bound::Ge(low)],
        Op::Lt => vec![Bound::Lt(low)],
        Op::Tilde => {
            // Patch-level changes when a minor is given, minor-level changes otherwise.
            let high = match p.minor {
                Some(m) => next_series(major, m.saturating_add(1), 0),
                None => next_series(major.saturating_add(1), 0, 0),
            };
            vec![Bound::Ge(low), Bound::Lt(high)]
        }
        Op::Caret => {
            // Changes that do not modify the left-most non-zero part (or the left-most given one).
            let high = if major > 0 || p.minor.is_none() {
                next_series(major.saturating_add(1), 0, 0)
            } else if minor > 0 || p.patch.is_none() {
                next_series(0, minor.saturating_add(1), 0)
            } else {
                next_series(0, 0, patch.saturating_add(1))
            };
            vec![Bound::Ge(low), Bound::Lt(high)]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn the_same_text_parsed_again_is_shared_and_means_the_same() {
        let first = VersionRange::parse(">=1.0.0 <2.0.0", PrereleasePolicy::Ordered).unwrap();
        let again = VersionRange::parse(">=1.0.0 <2.0.0", PrereleasePolicy::Ordered).unwrap();
        assert!(Arc::ptr_eq(&first.0, &again.0));
        let fresh =
            VersionRange::parse_uncached(">=1.0.0 <2.0.0", PrereleasePolicy::Ordered).unwrap();
        assert_eq!(first, fresh);
        // The policy is part of what a text means: the other policy is another range.
        let opt_in = VersionRange::parse(">=1.0.0 <2.0.0", PrereleasePolicy::OptIn).unwrap();
        assert!(!Arc::ptr_eq(&first.0, &opt_in.0));
        assert_eq!(opt_in.policy(), PrereleasePolicy::OptIn);
        assert!(first.matches(&v("1.5.0-rc.1")));
        assert!(!opt_in.matches(&v("1.5.0-rc.1")));
        // A text that does not parse is refused every time, never remembered.
        for _ in 0..2 {
            assert!(VersionRange::parse(">=1.0.0 ||", PrereleasePolicy::Ordered).is_err());
        }
    }

    #[test]
    fn the_table_of_remembered_ranges_stays_bounded() {
        for i in 0..MAX_REMEMBERED_RANGES + 10 {
            let text = format!(">={i}.0.0");
            let range = VersionRange::parse(&text, PrereleasePolicy::Ordered).unwrap();
            assert_eq!(range.as_str(), text);
            assert!(range.matches(&v(&format!("{i}.1.0"))));
        }
        let remembered = PARSED.with(|parsed| parsed.borrow()[0].len());
        assert!(remembered <= MAX_REMEMBERED_RANGES, "{remembered}");
        // A long text is parsed as usual but not remembered.
        let long = format!(">=1.0.0 {}", "<99.0.0 ".repeat(40));
        let first = VersionRange::parse(&long, PrereleasePolicy::Ordered).unwrap();
        let again = VersionRange::parse(&long, PrereleasePolicy::Ordered).unwrap();
        assert!(!Arc::ptr_eq(&first.0, &again.0));
        assert_eq!(first, again);
        assert!(first.matches(&v("2.0.0")) && !first.matches(&v("99.0.0")));
        assert!(PARSED.with(|parsed| !parsed.borrow()[0].contains_key(long.as_str())));
    }

    #[test]
    fn operator_split_prefers_the_longest_operator() {
        assert_eq!(split_operator(">=1.0.0"), (Op::Ge, "1.0.0"));
        assert_eq!(split_operator("=<1.0.0"), (Op::Le, "1.0.0"));
        assert_eq!(split_operator("~>1.0.0"), (Op::Tilde, "1.0.0"));
        assert_eq!(split_operator("1.0.0"), (Op::Eq, "1.0.0"));
    }

    #[test]
    fn partial_versions_keep_missing_parts_open() {
        let p = parse_partial("v1.x").unwrap();
        assert_eq!((p.major, p.minor, p.patch), (Some(1), None, None));
        assert!(parse_partial("1.x.3").is_err());
        assert!(parse_partial("1.2-rc.1").is_err());
    }

    #[test]
    fn precedence_ignores_build_metadata() {
        assert_eq!(
            compare_precedence(&v("1.0.0+a"), &v("1.0.0+b")),
            Ordering::Equal
        );
        assert_eq!(
            compare_precedence(&v("1.0.0-rc.1"), &v("1.0.0")),
            Ordering::Less
        );
    }
}
