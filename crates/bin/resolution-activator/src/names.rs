//! Label values derived from names, kept within Kubernetes' limits (names themselves are
//! fitted by [`rukpak_api::names`]).

pub use rukpak_api::names::{fit, short_hash};

/// The longest label value.
pub const LABEL_VALUE_MAX: usize = 63;

/// `name` as a label value (names of cluster-scoped objects may be longer than 63).
pub fn label_value(name: &str) -> String {
    fit(name, LABEL_VALUE_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_become_label_values_of_at_most_63_characters() {
        assert_eq!(label_value("memcached"), "memcached");
        assert_eq!(label_value(&"x".repeat(100)).len(), 63);
    }
}
