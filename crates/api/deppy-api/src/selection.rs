//! Selections as `ActiveResolution.status.selections` lists them:
//! `catalog:package:version:channel`. deppy-resolver writes them and resolution-activator
//! reads them: this type is the contract between the two.

use std::fmt;
use std::str::FromStr;

/// One selected bundle, by the catalog it came from, its package, version and channel.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Selection {
    /// The Catalog's name.
    pub catalog: String,
    /// The package.
    pub package: String,
    /// The bundle's version, as the resolver printed it.
    pub version: String,
    /// The channel the bundle was selected through.
    pub channel: String,
}

/// A selection string that is not `catalog:package:version:channel`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("failed to parse selection {text:?}: expected catalog:package:version:channel")]
pub struct SelectionError {
    /// The text as given.
    pub text: String,
}

impl FromStr for Selection {
    type Err = SelectionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        // Catalog and package names and versions never contain ':'; a channel name might,
        // so it takes the rest.
        let mut parts = text.splitn(4, ':');
        let mut next = || {
            parts
                .next()
                .filter(|part| !part.trim().is_empty())
                .map(str::to_owned)
        };
        match (next(), next(), next(), next()) {
            (Some(catalog), Some(package), Some(version), Some(channel)) => Ok(Self {
                catalog,
                package,
                version,
                channel,
            }),
            _ => Err(SelectionError {
                text: text.to_owned(),
            }),
        }
    }
}

impl fmt::Display for Selection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}:{}",
            self.catalog, self.package, self.version, self.channel
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selection_parses_and_prints_back_unchanged() {
        let text = "examples:memcached-operator:0.2.0:stable";
        let selection: Selection = text.parse().unwrap();
        assert_eq!(selection.catalog, "examples");
        assert_eq!(selection.package, "memcached-operator");
        assert_eq!(selection.version, "0.2.0");
        assert_eq!(selection.channel, "stable");
        assert_eq!(selection.to_string(), text);
    }

    #[test]
    fn a_channel_may_contain_colons() {
        let selection: Selection = "c:p:1.0.0:odd:channel".parse().unwrap();
        assert_eq!(selection.channel, "odd:channel");
    }

    #[test]
    fn incomplete_selections_are_refused_with_the_text() {
        for text in ["", "c:p:1.0.0", "c::1.0.0:stable", "c:p:1.0.0:"] {
            let err = text.parse::<Selection>().unwrap_err();
            assert_eq!(err.text, text);
            assert!(err.to_string().contains("catalog:package:version:channel"));
        }
    }
}
