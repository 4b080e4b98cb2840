//! Where sources may connect: fetching on a tenant's behalf must not reach link-local or
//! cloud metadata addresses (an SSRF that hands out the node's or the cloud account's
//! credentials). Every image, git and http source's host is resolved and checked before
//! the first connection; http redirects are checked hop by hop, and the http client's
//! resolver drops denied addresses, so a name that resolves to one is refused too.
//!
//! What is not covered: a registry's blob redirects inside oci-client and git's own
//! redirects inside gix are not re-checked (their clients do not expose a hook); a host
//! whose DNS answer changes between the check and the connection (rebinding) can get past
//! the image and git checks. The NetworkPolicies in `deploy/` deny the same ranges.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

use ipnet::IpNet;

/// Networks no source may connect to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeniedNetworks(Vec<IpNet>);

/// Denied by default: IPv4 link-local (cloud metadata at 169.254.169.254 among them),
/// IPv6 link-local, and AWS's IPv6 metadata address.
pub const DEFAULT_DENIED_NETWORKS: &str = "169.254.0.0/16,fe80::/10,fd00:ec2::254/128";

impl Default for DeniedNetworks {
    fn default() -> Self {
        DEFAULT_DENIED_NETWORKS
            .parse()
            .unwrap_or_else(|_| Self(Vec::new()))
    }
}

impl FromStr for DeniedNetworks {
    type Err = String;

    /// A comma-separated list of CIDRs (or single addresses); empty or `none` denies
    /// nothing.
    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.is_empty() || text.eq_ignore_ascii_case("none") {
            return Ok(Self(Vec::new()));
        }
        text.split(',')
            .map(str::trim)
            .map(|part| {
                part.parse::<IpNet>()
                    .or_else(|_| part.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| {
                        format!("{part:?} is not a network: want a CIDR such as 169.254.0.0/16")
                    })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Self)
    }
}

impl fmt::Display for DeniedNetworks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(ToString::to_string).collect();
        f.write_str(&parts.join(","))
    }
}

/// A connection that would reach a denied network.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "refused to connect to {host}: {address} is in a denied network ({network}); an administrator can change the denied ranges with --denied-networks"
)]
pub struct Denied {
    /// The host as named by the source.
    pub host: String,
    /// The address it is or resolved to.
    pub address: IpAddr,
    /// The denied network containing it.
    pub network: IpNet,
}

impl DeniedNetworks {
    /// The denied network containing `address` (an IPv4-mapped IPv6 address counts as its
    /// IPv4 address).
    pub fn containing(&self, address: IpAddr) -> Option<IpNet> {
        let address = match address {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
            v4 => v4,
        };
        self.0.iter().copied().find(|net| net.contains(&address))
    }

    /// Refuses `address` when it is in a denied network.
    pub fn check(&self, host: &str, address: IpAddr) -> Result<(), Denied> {
        match self.containing(address) {
            Some(network) => Err(Denied {
                host: host.to_owned(),
                address,
                network,
            }),
            None => Ok(()),
        }
    }

    /// Refuses `host` (a name or an address) when it is, or any address it resolves to is,
    /// in a denied network. A name that does not resolve is left to the client, which
    /// reports that failure itself.
    pub async fn check_host(&self, host: &str, port: u16) -> Result<(), Denied> {
        if self.0.is_empty() {
            return Ok(());
        }
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(address) = bare.parse::<IpAddr>() {
            return self.check(host, address);
        }
        if let Ok(addresses) = tokio::net::lookup_host((bare, port)).await {
            for address in addresses {
                self.check(host, address.ip())?;
            }
        }
        Ok(())
    }

    /// The addresses of `addresses` that are not denied.
    pub fn allowed(&self, addresses: impl Iterator<Item = SocketAddr>) -> Vec<SocketAddr> {
        addresses
            .filter(|a| self.containing(a.ip()).is_none())
            .collect()
    }
}

/// The host and port a source URL connects to: `scheme://[user@]host[:port]/...` or git's
/// scp form `user@host:path`. `None` when it names no network host (e.g. `file://`).
pub fn url_host(url: &str) -> Option<(String, u16)> {
    if let Ok(parsed) = reqwest::Url::parse(url)
        && let Some(host) = parsed.host_str()
    {
        let port = parsed
            .port_or_known_default()
            .unwrap_or(match parsed.scheme() {
                "ssh" => 22,
                "git" => 9418,
                _ => 443,
            });
        return Some((host.to_owned(), port));
    }
    // scp-like git: [user@]host:path
    let (authority, _) = url.split_once(':')?;
    let host = authority.rsplit('@').next()?;
    (!host.is_empty() && !host.contains('/')).then(|| (host.to_owned(), 22))
}

/// The registry host and port an image pull connects to (`registry[:port]/repo[:tag|@digest]`;
/// Docker Hub, by any of its names, is the host the client reaches it at: the rule of
/// `reference::pulled_registry`).
pub fn image_host(reference: &str) -> (String, u16) {
    let first = super::reference::pulled_registry(reference);
    if let Some(rest) = first.strip_prefix('[') {
        // [v6]:port
        let (address, port) = rest.split_once(']').unwrap_or((rest, ""));
        let port = port.trim_start_matches(':').parse().unwrap_or(443);
        return (address.to_owned(), port);
    }
    match first.rsplit_once(':') {
        Some((host, port)) if port.chars().all(|c| c.is_ascii_digit()) => {
            (host.to_owned(), port.parse().unwrap_or(443))
        }
        _ => (first.to_owned(), 443),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_denies_link_local_and_metadata_addresses_only() {
        let denied = DeniedNetworks::default();
        for address in [
            "169.254.169.254",
            "169.254.0.1",
            "fe80::1",
            "fd00:ec2::254",
            "::ffff:169.254.169.254",
        ] {
            assert!(
                denied.containing(address.parse().unwrap()).is_some(),
                "{address}"
            );
        }
        for address in ["127.0.0.1", "10.0.0.1", "8.8.8.8", "::1", "fd00:ec2::253"] {
            assert!(
                denied.containing(address.parse().unwrap()).is_none(),
                "{address}"
            );
        }
    }

    #[test]
    fn lists_parse_and_bad_entries_say_why() {
        let denied: DeniedNetworks = "127.0.0.0/8, 10.1.2.3".parse().unwrap();
        assert_eq!(denied.to_string(), "127.0.0.0/8,10.1.2.3/32");
        assert!(denied.containing("127.9.9.9".parse().unwrap()).is_some());
        assert_eq!(
            "none".parse::<DeniedNetworks>().unwrap(),
            DeniedNetworks(vec![])
        );
        assert_eq!(
            "".parse::<DeniedNetworks>().unwrap(),
            DeniedNetworks(vec![])
        );
        assert_eq!(
            "10.0.0.0/8,metadata".parse::<DeniedNetworks>().unwrap_err(),
            "\"metadata\" is not a network: want a CIDR such as 169.254.0.0/16"
        );
    }

    #[test]
    fn the_refusal_names_host_address_network_and_the_flag() {
        let err = DeniedNetworks::default()
            .check("metadata.internal", "169.254.169.254".parse().unwrap())
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "refused to connect to metadata.internal: 169.254.169.254 is in a denied network (169.254.0.0/16); an administrator can change the denied ranges with --denied-networks"
        );
    }

    #[tokio::test]
    async fn names_are_resolved_before_they_are_allowed() {
        let loopback: DeniedNetworks = "127.0.0.0/8,::1/128".parse().unwrap();
        assert!(loopback.check_host("localhost", 80).await.is_err());
        assert!(loopback.check_host("[::1]", 80).await.is_err());
        assert!(
            DeniedNetworks::default()
                .check_host("localhost", 80)
                .await
                .is_ok()
        );
    }

    #[test]
    fn hosts_are_found_in_every_url_and_reference_form() {
        assert_eq!(
            url_host("http://169.254.169.254/latest"),
            Some(("169.254.169.254".into(), 80))
        );
        assert_eq!(
            url_host("https://user@git.example:8443/r.git"),
            Some(("git.example".into(), 8443))
        );
        assert_eq!(
            url_host("git@github.example:org/r.git"),
            Some(("github.example".into(), 22))
        );
        assert_eq!(
            url_host("ssh://[fe80::1]/r"),
            Some(("[fe80::1]".into(), 22))
        );
        assert_eq!(image_host("quay.io/org/img:1"), ("quay.io".into(), 443));
        assert_eq!(
            image_host("127.0.0.1:5000/img@sha256:ab"),
            ("127.0.0.1".into(), 5000)
        );
        assert_eq!(image_host("localhost/img"), ("localhost".into(), 443));
        assert_eq!(image_host("busybox:1"), ("index.docker.io".into(), 443));
        assert_eq!(image_host("[fe80::1]:5000/img"), ("fe80::1".into(), 5000));
    }

    #[test]
    fn the_egress_check_takes_the_registry_that_pulling_takes() {
        // What is checked against the denied networks must be where the pull connects.
        for reference in [
            "quay.io/org/img:1",
            "127.0.0.1:5000/img@sha256:0000000000000000000000000000000000000000000000000000000000000000",
            "localhost/img",
            "localhost:5000/a/b",
            "busybox:1",
            "library/busybox",
            "org/img",
            "index.docker.io/img",
            "docker.io/library/busybox",
            "registry.internal:8443/team/op-bundle:v1",
        ] {
            // The registry the image source connects to (source/image.rs).
            let pulled = super::super::reference::parse(reference).unwrap();
            let registry = pulled.resolve_registry();
            let (host, port) = image_host(reference);
            let expected = match registry.rsplit_once(':') {
                Some((host, port)) => (host.to_owned(), port.parse().unwrap()),
                None => (registry.to_owned(), 443),
            };
            assert_eq!((host, port), expected, "{reference}");
        }
    }
}
