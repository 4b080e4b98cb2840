//! The command-line options of every binary that fetches content and keeps a content
//! store (rukpak-core for Bundles, deppy-resolver for Catalogs), as one clap group, so
//! both spell, default and document them the same way.

use std::time::Duration;

use crate::source::{DEFAULT_DENIED_NETWORKS, DeniedNetworks, UnpackOptions};

/// Where content may be fetched from, and how long unreferenced content is kept.
#[derive(Debug, Clone, clap::Args)]
pub struct SourceArgs {
    /// A registry (`host[:port]`) to reach over plain HTTP when it does not speak TLS
    /// (loopback registries always are); repeat or comma-separate for several.
    #[arg(
        long = "plain-http-registry",
        env = "PLAIN_HTTP_REGISTRIES",
        value_delimiter = ','
    )]
    pub plain_http_registries: Vec<String>,

    /// Networks (comma-separated CIDRs) no source may connect to: checked before
    /// connecting, for redirects and for what names resolve to. `none` denies nothing.
    #[arg(long, env = "DENIED_NETWORKS", default_value = DEFAULT_DENIED_NETWORKS)]
    pub denied_networks: DeniedNetworks,

    /// How often content nothing references (no Bundle, no Catalog) is swept from the
    /// content store: a pass marks it, a later pass deletes what is still unreferenced
    /// (e.g. `10m`).
    #[arg(long, env = "CONTENT_SWEEP_INTERVAL", default_value = "10m", value_parser = parse_duration)]
    pub content_sweep_interval: Duration,
}

impl SourceArgs {
    /// The unpack options these flags set; the others keep their defaults.
    pub fn unpack_options(&self) -> UnpackOptions {
        UnpackOptions {
            plain_http_registries: self.plain_http_registries.clone(),
            denied_networks: self.denied_networks.clone(),
            ..UnpackOptions::default()
        }
    }
}

/// Parses a duration such as `10m` or `90s` (the Kubernetes/Go spelling).
fn parse_duration(text: &str) -> Result<Duration, String> {
    let parsed: k8s_openapi::jiff::SignedDuration = text
        .parse()
        .map_err(|err| format!("invalid duration {text:?}: {err}"))?;
    Duration::try_from(parsed)
        .map_err(|_| format!("invalid duration {text:?}: must not be negative"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Command {
        #[command(flatten)]
        source: SourceArgs,
    }

    #[test]
    fn defaults_deny_internal_networks_and_sweep_every_ten_minutes() {
        let parsed = Command::try_parse_from(["x"]).unwrap();
        assert_eq!(
            parsed.source.content_sweep_interval,
            Duration::from_secs(600)
        );
        assert!(parsed.source.plain_http_registries.is_empty());
        assert_eq!(
            format!("{:?}", parsed.source.denied_networks),
            format!(
                "{:?}",
                DEFAULT_DENIED_NETWORKS.parse::<DeniedNetworks>().unwrap()
            )
        );
        let parsed = Command::try_parse_from([
            "x",
            "--plain-http-registry=a:5000,b",
            "--content-sweep-interval=90s",
        ])
        .unwrap();
        assert_eq!(parsed.source.plain_http_registries, ["a:5000", "b"]);
        assert_eq!(
            parsed.source.content_sweep_interval,
            Duration::from_secs(90)
        );
        assert!(Command::try_parse_from(["x", "--content-sweep-interval=-1s"]).is_err());
    }
}
