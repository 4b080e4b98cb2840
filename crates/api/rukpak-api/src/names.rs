//! Names derived from other names, kept within Kubernetes' limits.

use sha2::{Digest, Sha256};

use crate::BUNDLE_DEPLOYMENT_NAME_MAX;

/// The first 10 hex digits of the sha256 of `bytes`.
pub fn short_hash(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .take(5)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `base` when it has at most `max` characters; otherwise a prefix of it, `-` and
/// [`short_hash`] of the whole, `max` characters at most. Distinct long names stay
/// distinct, and the result still starts and ends with an alphanumeric character when
/// `base` starts with one.
pub fn fit(base: &str, max: usize) -> String {
    if base.len() <= max {
        return base.to_owned();
    }
    let hash = short_hash(base.as_bytes());
    let keep = max.saturating_sub(hash.len() + 1);
    // Names here are ASCII (DNS names, package names); stop at a char boundary anyway.
    let mut end = keep.min(base.len());
    while !base.is_char_boundary(end) {
        end -= 1;
    }
    let prefix = base[..end].trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
    if prefix.is_empty() {
        hash
    } else {
        format!("{prefix}-{hash}")
    }
}

/// The name of a BundleDeployment made for `base` (e.g. a resolution's wrapper), fitted to
/// [`BUNDLE_DEPLOYMENT_NAME_MAX`]. Controllers that follow a chain back compute it the same way.
pub fn bundle_deployment_name(base: &str) -> String {
    fit(base, BUNDLE_DEPLOYMENT_NAME_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_are_kept_and_long_ones_shortened_distinctly() {
        assert_eq!(fit("etcd", 45), "etcd");
        let a = fit(&"a".repeat(60), 45);
        let b = fit(&format!("{}b", "a".repeat(59)), 45);
        assert_eq!(a.len(), 45);
        assert_ne!(a, b);
        assert!(a.starts_with("aaaa"));
    }

    #[test]
    fn a_shortened_name_does_not_end_its_prefix_with_a_separator() {
        let name = fit(&format!("{}-{}", "a".repeat(33), "b".repeat(30)), 45);
        assert!(!name.contains("--"), "{name}");
        assert_eq!(
            bundle_deployment_name("memcached-operator"),
            "memcached-operator"
        );
    }
}
