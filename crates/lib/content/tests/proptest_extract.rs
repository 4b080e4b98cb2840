//! Generated adversarial archives against the extractor: whatever the input, it never
//! panics, every path it accepts is relative and inside the root, and the limits hold.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use content::{Content, Extractor, Limits};
use proptest::prelude::*;

/// Small limits, so generated input crosses them.
fn limits() -> Limits {
    Limits {
        max_uncompressed_bytes: 64 * 1024,
        max_entries: 40,
        ..Limits::default()
    }
}

#[derive(Debug, Clone)]
enum Kind {
    File(Vec<u8>),
    Dir,
    Symlink(String),
    Hardlink(String),
    Char,
    Block,
    Fifo,
}

/// Entry names and link targets of the shapes attacks use.
fn path() -> impl Strategy<Value = String> {
    let segment = prop_oneof![
        Just("..".to_owned()),
        Just(".".to_owned()),
        Just(String::new()),
        "[a-z]{1,8}",
        "[a-zA-Z0-9 ._-]{1,12}",
        "\\PC{1,6}",
    ];
    (any::<bool>(), prop::collection::vec(segment, 1..6)).prop_map(|(absolute, parts)| {
        let joined = parts.join("/");
        if absolute {
            format!("/{joined}")
        } else {
            joined
        }
    })
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        4 => prop::collection::vec(any::<u8>(), 0..4096).prop_map(Kind::File),
        1 => Just(Kind::Dir),
        2 => path().prop_map(Kind::Symlink),
        2 => path().prop_map(Kind::Hardlink),
        1 => Just(Kind::Char),
        1 => Just(Kind::Block),
        1 => Just(Kind::Fifo),
    ]
}

/// Writes `bytes` into a fixed header field, truncated to fit (raw, so the tar crate's own
/// path checks cannot clean up what an attacker would send).
fn raw(field: &mut [u8], bytes: &[u8]) {
    let n = bytes.len().min(field.len());
    field[..n].copy_from_slice(&bytes[..n]);
}

fn archive(entries: &[(String, Kind)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, kind) in entries {
        let mut header = tar::Header::new_gnu();
        let (entry_type, data, link): (tar::EntryType, &[u8], Option<&str>) = match kind {
            Kind::File(data) => (tar::EntryType::Regular, data, None),
            Kind::Dir => (tar::EntryType::Directory, &[], None),
            Kind::Symlink(target) => (tar::EntryType::Symlink, &[], Some(target)),
            Kind::Hardlink(target) => (tar::EntryType::Link, &[], Some(target)),
            Kind::Char => (tar::EntryType::Char, &[], None),
            Kind::Block => (tar::EntryType::Block, &[], None),
            Kind::Fifo => (tar::EntryType::Fifo, &[], None),
        };
        header.set_entry_type(entry_type);
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        let gnu = header.as_gnu_mut().unwrap();
        raw(&mut gnu.name, name.as_bytes());
        if let Some(link) = link {
            raw(&mut gnu.linkname, link.as_bytes());
        }
        header.set_cksum();
        builder.append(&header, data).unwrap();
    }
    builder.into_inner().unwrap()
}

/// What must hold of anything the extractor accepted.
fn check_accepted(content: &Content, limits: &Limits) {
    let files = content.files(limits).unwrap();
    assert!(files.total_size() <= limits.max_uncompressed_bytes);
    assert!(files.len() as u64 <= limits.max_entries);
    for (path, _) in files.iter() {
        assert!(!path.starts_with('/'), "absolute path accepted: {path:?}");
        assert!(
            !path
                .split('/')
                .any(|part| part == ".." || part == "." || part.is_empty()),
            "unnormalised path accepted: {path:?}"
        );
    }
    for dir in files.dirs() {
        assert!(
            !dir.starts_with('/') && !dir.split('/').any(|p| p == ".."),
            "{dir:?}"
        );
    }
}

fn extract(bytes: &[u8]) -> Result<Content, content::ArchiveError> {
    let mut extractor = Extractor::new(limits());
    extractor.add_archive(bytes)?;
    extractor.finish()
}

/// Cases per property: `PROPTEST_CASES` overrides.
const CASES: u32 = 512;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn generated_archives_never_escape_the_root_or_the_limits(
        entries in prop::collection::vec((path(), kind()), 0..24),
        gzip in any::<bool>(),
    ) {
        let tar = archive(&entries);
        let bytes = if gzip { testkit::servers::gzip(&tar) } else { tar };
        if let Ok(content) = extract(&bytes) {
            check_accepted(&content, &limits());
        }
    }

    #[test]
    fn arbitrary_and_damaged_bytes_never_panic(
        entries in prop::collection::vec((path(), kind()), 0..8),
        cut in any::<prop::sample::Index>(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..16),
        gzip in any::<bool>(),
    ) {
        let tar = archive(&entries);
        let mut bytes = if gzip { testkit::servers::gzip(&tar) } else { tar };
        for (at, value) in flips {
            if !bytes.is_empty() {
                let i = at.index(bytes.len());
                bytes[i] ^= value;
            }
        }
        if !bytes.is_empty() {
            bytes.truncate(cut.index(bytes.len()) + 1);
        }
        if let Ok(content) = extract(&bytes) {
            check_accepted(&content, &limits());
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..8192)) {
        if let Ok(content) = extract(&bytes) {
            check_accepted(&content, &limits());
        }
    }
}

/// The generator's archives are real archives: clean ones are accepted whole, so the
/// properties above are not vacuously true.
#[test]
fn a_clean_generated_archive_is_accepted_whole() {
    let entries = vec![
        ("manifests".to_owned(), Kind::Dir),
        (
            "manifests/a.yaml".to_owned(),
            Kind::File(b"kind: A".to_vec()),
        ),
        (
            "manifests/b.yaml".to_owned(),
            Kind::Symlink("a.yaml".to_owned()),
        ),
    ];
    let content = extract(&archive(&entries)).unwrap();
    check_accepted(&content, &limits());
    let files = content.files(&limits()).unwrap();
    assert_eq!(
        files.get("manifests/a.yaml").map(|b| b.to_vec()),
        Some(b"kind: A".to_vec())
    );
    assert_eq!(
        files.get("manifests/b.yaml").map(|b| b.to_vec()),
        Some(b"kind: A".to_vec())
    );
    // And the unclean shapes are refused.
    for (name, kind) in [
        ("../escape", Kind::File(b"x".to_vec())),
        ("/etc/passwd", Kind::File(b"x".to_vec())),
        ("link", Kind::Symlink("../../etc/passwd".to_owned())),
        ("dev", Kind::Char),
    ] {
        assert!(
            extract(&archive(&[(name.to_owned(), kind)])).is_err(),
            "{name}"
        );
    }
}
