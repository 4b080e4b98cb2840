//! Parsing image references (`registry/repository[:tag][@digest]`).
//!
//! Written by hand rather than with `oci_client::Reference`'s own parser: that one matches a
//! regular expression with Unicode classes under a `{0,127}` repetition, which costs every
//! process that parses one reference about 5 MiB for the compiled expression plus about
//! 5 MiB per thread that ever ran it, kept for the life of the process (19 of rukpak-core's
//! 24 MiB of idle heap, measured with heaptrack; docs/benchmarks.md, "Idle memory"). The
//! grammar is small and fixed by the distribution spec, so this walks it directly and
//! allocates nothing but the result. It accepts and splits exactly what the expression
//! does, except that tags are ASCII, as the spec says (the expression's `\w` also took
//! other Unicode letters, which no registry accepts); a test compares the two.

use oci_client::Reference;

/// The registry of references that name none.
const DEFAULT_REGISTRY: &str = "docker.io";
/// The legacy name of [`DEFAULT_REGISTRY`].
const LEGACY_DEFAULT_REGISTRY: &str = "index.docker.io";
/// The namespace of single-name repositories on [`DEFAULT_REGISTRY`].
const OFFICIAL_NAMESPACE: &str = "library";
/// The tag of references that name neither a tag nor a digest.
const DEFAULT_TAG: &str = "latest";
/// The longest repository name (after the registry is split off).
const REPOSITORY_MAX: usize = 255;
/// The longest tag.
const TAG_MAX: usize = 128;

/// Parses `text` as an image reference, with the defaults `docker pull` applies (registry
/// `docker.io`, namespace `library/` there, tag `latest`). The error is a sentence fragment
/// saying what is wrong.
pub fn parse(text: &str) -> Result<Reference, String> {
    if text.is_empty() {
        return Err("the reference is empty".to_owned());
    }
    let (rest, digest) = match text.split_once('@') {
        Some((rest, digest)) => (rest, Some(digest)),
        None => (text, None),
    };
    // A tag follows the last ':' that is not inside the registry's host:port, that is,
    // after the last '/'.
    let last_slash = rest.rfind('/').map_or(0, |at| at + 1);
    let (name, tag) = match rest[last_slash..].rfind(':') {
        Some(at) => (&rest[..last_slash + at], Some(&rest[last_slash + at + 1..])),
        None => (rest, None),
    };
    if !is_name(name) {
        return Err(format!(
            "{name:?} is not a repository name (lowercase letters, digits and separators, optionally after a registry host)"
        ));
    }
    if let Some(tag) = tag
        && !is_tag(tag)
    {
        return Err(format!(
            "{tag:?} is not a tag (up to {TAG_MAX} letters, digits, '_', '.' and '-', not starting with '.' or '-')"
        ));
    }
    if let Some(digest) = digest {
        check_digest(digest)?;
    }
    let (registry, repository) = split_registry(name);
    if repository.len() > REPOSITORY_MAX {
        return Err(format!(
            "the repository name is longer than {REPOSITORY_MAX} characters"
        ));
    }
    Ok(match (tag, digest) {
        (Some(tag), Some(digest)) => {
            Reference::with_tag_and_digest(registry, repository, tag.into(), digest.into())
        }
        (None, Some(digest)) => Reference::with_digest(registry, repository, digest.into()),
        (tag, None) => Reference::with_tag(registry, repository, tag.unwrap_or(DEFAULT_TAG).into()),
    })
}

/// `[registry/]component(/component)*`: the registry part is told apart only if it could
/// not be a path component (as the distribution spec's expression does).
fn is_name(name: &str) -> bool {
    let mut components = name.split('/');
    let Some(first) = components.next() else {
        return false;
    };
    let rest: Vec<&str> = components.collect();
    let first_ok = is_path_component(first) || (!rest.is_empty() && is_registry(first));
    first_ok && rest.iter().all(|component| is_path_component(component))
}

/// `[a-z0-9]+` joined by `.`, `_`, `__` or any number of `-`.
fn is_path_component(component: &str) -> bool {
    let bytes = component.as_bytes();
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let mut i = 0;
    loop {
        // A run of lowercase letters and digits.
        let start = i;
        while i < bytes.len() && alnum(bytes[i]) {
            i += 1;
        }
        if i == start {
            return false;
        }
        if i == bytes.len() {
            return true;
        }
        // A separator, then another run.
        match bytes[i] {
            b'.' => i += 1,
            b'_' => {
                i += if bytes.get(i + 1) == Some(&b'_') {
                    2
                } else {
                    1
                }
            }
            b'-' => {
                while bytes.get(i) == Some(&b'-') {
                    i += 1;
                }
            }
            _ => return false,
        }
    }
}

/// A host name (labels of letters, digits and inner hyphens, joined by dots) with an
/// optional `:port`.
fn is_registry(registry: &str) -> bool {
    let (host, port) = match registry.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (registry, None),
    };
    let label_ok = |label: &str| {
        let bytes = label.as_bytes();
        !bytes.is_empty()
            && bytes
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
            && bytes.first() != Some(&b'-')
            && bytes.last() != Some(&b'-')
    };
    host.split('.').all(label_ok)
        && port.is_none_or(|port| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()))
}

/// `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`.
fn is_tag(tag: &str) -> bool {
    let word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
    let bytes = tag.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= TAG_MAX
        && word(&bytes[0])
        && bytes[1..]
            .iter()
            .all(|b| word(b) || *b == b'.' || *b == b'-')
}

/// `algorithm:hex`, with a known algorithm and the hex length that goes with it.
fn check_digest(digest: &str) -> Result<(), String> {
    let malformed = || {
        format!("{digest:?} is not a digest (an algorithm such as sha256, ':', then hexadecimal)")
    };
    let (algorithm, hex) = digest.split_once(':').ok_or_else(malformed)?;
    let algorithm_ok = algorithm.split(['+', '.', '-', '_']).all(|part| {
        let mut bytes = part.bytes();
        bytes.next().is_some_and(|b| b.is_ascii_alphabetic())
            && bytes.all(|b| b.is_ascii_alphanumeric())
    });
    if !algorithm_ok || hex.len() < 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(malformed());
    }
    let expected = match algorithm {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        other => return Err(format!("digest algorithm {other:?} is not supported")),
    };
    if hex.len() == expected {
        Ok(())
    } else {
        Err(format!(
            "a {algorithm} digest has {expected} hexadecimal digits, not {}",
            hex.len()
        ))
    }
}

/// The registry part of a name or reference and the rest, when it names one: the first
/// `/`-separated component, if it has a `.` or a `:` or is `localhost`. Otherwise the whole
/// name is a repository on Docker Hub. The one rule for what pulling an image and the egress
/// check both take as the registry.
pub(crate) fn registry_part(name: &str) -> Option<(&str, &str)> {
    name.split_once('/')
        .filter(|(first, _)| first.contains(['.', ':']) || *first == "localhost")
}

/// Where oci-client connects for Docker Hub (its `Reference::resolve_registry`), whichever of
/// its names a reference uses.
const DOCKER_HUB_HOST: &str = "index.docker.io";

/// The registry (`host[:port]`) a pull of `reference` connects to: its registry part, or
/// Docker Hub's host when it names none or names Docker Hub. The egress check examines this
/// host, so that what is checked is what is connected to.
pub(crate) fn pulled_registry(reference: &str) -> &str {
    match registry_part(reference) {
        Some((first, _)) if first != DEFAULT_REGISTRY && first != LEGACY_DEFAULT_REGISTRY => first,
        _ => DOCKER_HUB_HOST,
    }
}

/// The registry and repository of a valid name, with `docker pull`'s defaults.
fn split_registry(name: &str) -> (String, String) {
    let (mut registry, mut repository) = match registry_part(name) {
        Some((first, rest)) => (first.to_owned(), rest.to_owned()),
        None => (DEFAULT_REGISTRY.to_owned(), name.to_owned()),
    };
    if registry == LEGACY_DEFAULT_REGISTRY {
        registry = DEFAULT_REGISTRY.to_owned();
    }
    if registry == DEFAULT_REGISTRY && !repository.contains('/') {
        repository = format!("{OFFICIAL_NAMESPACE}/{repository}");
    }
    (registry, repository)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What a reference parsed into, or `None` for a refusal.
    fn parts(reference: Option<Reference>) -> Option<[Option<String>; 4]> {
        reference.map(|r| {
            [
                Some(r.registry().to_owned()),
                Some(r.repository().to_owned()),
                r.tag().map(str::to_owned),
                r.digest().map(str::to_owned),
            ]
        })
    }

    /// Ours and the crate's parser agree on `text`.
    fn agree(text: &str) -> Result<(), TestCaseError> {
        let ours = parts(parse(text).ok());
        let theirs = parts(text.parse::<Reference>().ok());
        prop_assert_eq!(ours, theirs, "{:?}", text);
        Ok(())
    }

    const SHA256: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn splits_like_docker_pull() {
        let r = parse("busybox").unwrap();
        assert_eq!(
            (r.registry(), r.repository(), r.tag()),
            ("docker.io", "library/busybox", Some("latest"))
        );
        let r = parse("127.0.0.1:5000/olmv1/bundle:v1.0.0").unwrap();
        assert_eq!(
            (r.registry(), r.repository(), r.tag()),
            ("127.0.0.1:5000", "olmv1/bundle", Some("v1.0.0"))
        );
        let r = parse(&format!("localhost/a/b@{SHA256}")).unwrap();
        assert_eq!(
            (r.registry(), r.repository(), r.tag(), r.digest()),
            ("localhost", "a/b", None, Some(SHA256))
        );
        let r = parse("index.docker.io/x").unwrap();
        assert_eq!((r.registry(), r.repository()), ("docker.io", "library/x"));
    }

    #[test]
    fn says_what_is_wrong() {
        assert!(parse("").unwrap_err().contains("empty"));
        assert!(
            parse("Upper/case").is_ok(),
            "an upper-case host is a registry"
        );
        assert!(parse("upper/Case").unwrap_err().contains("repository name"));
        assert!(parse("a:-tag").unwrap_err().contains("not a tag"));
        assert!(parse("a@sha256:abc").unwrap_err().contains("not a digest"));
        assert!(
            parse("a@md5:0123456789abcdef0123456789abcdef")
                .unwrap_err()
                .contains("not supported")
        );
        assert!(parse(&format!("a@{SHA256}0")).unwrap_err().contains("64"));
        assert!(
            parse(&format!("a/{}", "b".repeat(300)))
                .unwrap_err()
                .contains("255")
        );
    }

    #[test]
    fn agrees_with_the_crate_on_odd_references() {
        let odd = [
            "a",
            "a:b",
            "a:b:c",
            "a/b:c",
            "host:5000/a",
            "host:5000/a:t",
            "host:5000",
            "host:/a",
            "host:x/a",
            "-host/a",
            "host-/a",
            "ho-st.example.com/a",
            "a..b",
            "a.b",
            "a__b",
            "a___b",
            "a--b",
            "a-",
            "_a",
            "a_",
            "a//b",
            "/a",
            "a/",
            "a:",
            ":a",
            "@",
            "a@",
            "a@sha256:",
            "localhost:5000/a_b.c-d/e",
            "LOCALHOST/a",
            "Foo/bar",
            "foo/Bar",
            "a:t@sha256:0123",
            "a:.t",
            "a:_t",
            "a:t.-_",
            "docker.io/a",
            "docker.io/a/b",
            "index.docker.io/library/a",
            "a@sha384:00",
            "a b",
            "a\n",
            "a/b c",
            "é/a",
            "a/é",
            "1.2.3.4/a",
            "[::1]:5000/a",
        ];
        for text in odd {
            agree(text).unwrap();
        }
        for digest in [
            SHA256.to_owned(),
            format!("sha384:{}", "a".repeat(96)),
            format!("sha512:{}", "A".repeat(128)),
            format!("sha256:{}", "a".repeat(63)),
            format!("sha256+b64:{}", "a".repeat(64)),
            format!("sha256:{}", "g".repeat(64)),
        ] {
            agree(&format!("quay.io/org/op:v1@{digest}")).unwrap();
            agree(&format!("op@{digest}")).unwrap();
        }
        agree(&format!("a:{}", "t".repeat(128))).unwrap();
        agree(&format!("a:{}", "t".repeat(129))).unwrap();
        agree(&format!("r.io/{}", "b".repeat(255))).unwrap();
        agree(&format!("r.io/{}", "b".repeat(256))).unwrap();
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Strings built from the characters that matter to the grammar.
        #[test]
        fn agrees_with_the_crate_on_generated_references(text in "[a-cA:/@._0-9-]{0,24}") {
            agree(&text)?;
        }

        /// Well-formed shapes with random pieces.
        #[test]
        fn agrees_with_the_crate_on_generated_shapes(
            registry in proptest::option::of("[a-zA-Z0-9-]{1,6}(\\.[a-z0-9-]{1,4}){0,2}(:[0-9]{1,5})?"),
            path in "[a-z0-9]{1,3}([._-]{1,2}[a-z0-9]{1,3}){0,2}(/[a-z0-9]{1,4}){0,2}",
            tag in proptest::option::of("[a-zA-Z0-9_.-]{1,10}"),
            digest in proptest::option::of("sha256:[0-9a-f]{63,65}"),
        ) {
            let mut text = String::new();
            if let Some(registry) = registry {
                text.push_str(&registry);
                text.push('/');
            }
            text.push_str(&path);
            if let Some(tag) = tag {
                text.push(':');
                text.push_str(&tag);
            }
            if let Some(digest) = digest {
                text.push('@');
                text.push_str(&digest);
            }
            agree(&text)?;
        }
    }
}
