//! deppy-resolver holds catalogs parsed with `fbc::Detail::Resolution`, which drops what
//! resolution does not read: every request resolves the same on such a catalog as on the
//! full one, selections, explanations and minKubeVersion refusals alike.

// Test helpers outside #[test] functions are not covered by clippy.toml's test allowances.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use deppy_resolver::{Constraint, KubeVersion, NamedCatalog, Request, Resolver};
use fbc::{CatalogIndex, Detail};

fn load(name: &str, detail: Detail) -> CatalogIndex {
    let dir = testkit::package_path(format!("tests/fixtures/{name}"));
    CatalogIndex::from_dir_with(&dir, detail).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

/// The outcome of requiring each package of the catalog alone, on clusters of several
/// Kubernetes versions (and none).
fn outcomes(index: &CatalogIndex) -> Vec<String> {
    let kubes = [
        None,
        Some(KubeVersion::new(1, 20, 0)),
        Some(KubeVersion::new(1, 36, 4)),
    ];
    let mut out = Vec::new();
    for kube in kubes {
        let resolver = Resolver::new([NamedCatalog::new("c", index)])
            .unwrap()
            .with_kube_version(kube);
        for package in index.packages() {
            let request = Request::new([Constraint::required(&package.name, None, None)]);
            out.push(match resolver.resolve(&request) {
                Ok(resolution) => format!("{:?}", resolution.selection_strings()),
                Err(e) => e.to_string(),
            });
        }
    }
    out
}

#[test]
fn every_fixture_resolves_the_same_at_resolution_detail() {
    for name in ["community", "certified", "upgrades", "graphs"] {
        let full = outcomes(&load(name, Detail::Full));
        let lean = outcomes(&load(name, Detail::Resolution));
        assert!(!full.is_empty(), "{name}");
        assert_eq!(lean, full, "{name}");
    }
}
