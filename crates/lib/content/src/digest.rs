//! Content digests: `sha256:<64 lowercase hex>`.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest as _, Sha256};

/// The algorithm prefix of every digest this crate produces.
pub const ALGORITHM: &str = "sha256";

/// A sha256 digest, displayed as `sha256:<64 lowercase hex>`.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest([u8; 32]);

/// A string that is not a `sha256:<64 hex>` digest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("failed to parse digest {input:?}: want sha256:<64 lowercase hex digits>")]
pub struct ParseDigestError {
    /// The rejected input.
    pub input: String,
}

impl Digest {
    /// The digest of `data`.
    pub fn of(data: &[u8]) -> Self {
        Self(Sha256::digest(data).into())
    }

    /// Wraps a finished sha256 hash.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The 64 lowercase hex digits, without the algorithm prefix.
    pub fn hex(&self) -> String {
        let mut out = String::with_capacity(64);
        for byte in self.0 {
            out.push(hex_digit(byte >> 4));
            out.push(hex_digit(byte & 0x0f));
        }
        out
    }

    /// The first `n` hex digits (at most 64), used in object names and labels, which
    /// cannot hold the whole digest (label values stop at 63 characters).
    pub fn short(&self, n: usize) -> String {
        let mut hex = self.hex();
        hex.truncate(n.min(64));
        hex
    }

    /// Parses 64 hex digits without the algorithm prefix.
    pub fn from_hex(hex: &str) -> Result<Self, ParseDigestError> {
        let err = || ParseDigestError {
            input: hex.to_owned(),
        };
        let bytes = hex.as_bytes();
        if bytes.len() != 64 {
            return Err(err());
        }
        let mut out = [0u8; 32];
        for (i, pair) in bytes.chunks_exact(2).enumerate() {
            let hi = hex_value(pair[0]).ok_or_else(err)?;
            let lo = hex_value(pair[1]).ok_or_else(err)?;
            out[i] = (hi << 4) | lo;
        }
        Ok(Self(out))
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{ALGORITHM}:{}", self.hex())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl FromStr for Digest {
    type Err = ParseDigestError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let hex = s
            .strip_prefix(ALGORITHM)
            .and_then(|rest| rest.strip_prefix(':'))
            .ok_or_else(|| ParseDigestError {
                input: s.to_owned(),
            })?;
        Self::from_hex(hex).map_err(|_| ParseDigestError {
            input: s.to_owned(),
        })
    }
}

impl serde::Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// An incremental sha256, for data that arrives in pieces.
#[derive(Default, Clone)]
pub struct Hasher(Sha256);

impl Hasher {
    /// A fresh hasher.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds more data.
    pub fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    /// The digest of everything fed so far.
    pub fn finish(self) -> Digest {
        Digest(self.0.finalize().into())
    }
}

impl std::io::Write for Hasher {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn hex_digit(nibble: u8) -> char {
    char::from(b"0123456789abcdef"[usize::from(nibble & 0x0f)])
}

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_of_empty_input_is_the_well_known_value() {
        assert_eq!(
            Digest::of(b"").to_string(),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn digest_round_trips_through_its_string_form() {
        let digest = Digest::of(b"hello");
        let parsed: Digest = digest.to_string().parse().unwrap();
        assert_eq!(parsed, digest);
        assert_eq!(digest.short(16).len(), 16);
        assert!(digest.to_string().ends_with(&digest.hex()));
    }

    #[test]
    fn malformed_digests_are_rejected() {
        for bad in [
            "sha256:abc",
            "md5:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855",
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        ] {
            assert!(bad.parse::<Digest>().is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn incremental_hashing_matches_one_shot_hashing() {
        let mut hasher = Hasher::new();
        hasher.update(b"hel");
        hasher.update(b"lo");
        assert_eq!(hasher.finish(), Digest::of(b"hello"));
    }
}
