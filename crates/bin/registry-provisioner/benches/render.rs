//! Conversion speed: bundles per second for `render` over a directory of bundles.
//!
//! Writes a corpus of bundle directories to a temporary directory, then times what
//! `registry-provisioner render` does for each (read the directory, convert, write YAML),
//! in one process, for two corpora:
//!
//! - `typical`: copies of the converting golden bundles (cert-manager-, etcd-, grafana-,
//!   prometheus- and memcached-like operators; 2-8 manifests, 10-30 KB each), with their
//!   options;
//! - `large`: the extra-objects bundle plus a generated 1 MB CRD, the size of the CRDs of
//!   big real operators.
//!
//! Run: `cargo bench -p registry-provisioner --bench render` (optionally `-- <bundles>`,
//! default 700 typical and 50 large).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use registry_provisioner::{Options, conversion, render};
use serde_json::Value;

const TYPICAL: &[&str] = &[
    "all-namespaces",
    "extra-objects",
    "messy",
    "multi-namespace",
    "own-namespace",
    "single-namespace",
    "v1beta1-crd",
];
const RUNS: usize = 5;

fn golden(case: &str) -> PathBuf {
    testkit::package_path("").join("tests/golden").join(case)
}

fn options(case: &str) -> Options {
    let text = std::fs::read_to_string(golden(case).join("options.yaml")).unwrap_or_default();
    let value: Value = serde_yaml_ng::from_str(&text).unwrap_or(Value::Null);
    Options {
        install_namespace: value["installNamespace"].as_str().map(str::to_owned),
        target_namespaces: value["targetNamespaces"]
            .as_array()
            .map(|l| l.iter().map(|n| n.as_str().unwrap().to_owned()).collect())
            .unwrap_or_default(),
        ..Options::default()
    }
}

fn copy_dir(from: &Path, to: &Path) {
    for (path, bytes) in render::read_dir(from).unwrap() {
        let target = to.join(&path);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(target, bytes).unwrap();
    }
}

fn large_crd() -> String {
    let mut properties = String::new();
    let mut i = 0;
    while properties.len() < 1_000_000 {
        properties.push_str(&format!(
            "              field{i:05}:\n                description: \"Field {i} of a schema as large as big operators ship.\"\n                type: string\n"
        ));
        i += 1;
    }
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: bigs.example.com\nspec:\n  group: example.com\n  names: {{kind: Big, listKind: BigList, plural: bigs, singular: big}}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n{properties}"
    )
}

/// Writes `count` bundle directories under `root`; returns each with its options.
fn corpus(root: &Path, name: &str, count: usize) -> Vec<(PathBuf, Options)> {
    let crd = (name == "large").then(large_crd);
    (0..count)
        .map(|i| {
            let case = if crd.is_some() {
                "extra-objects"
            } else {
                TYPICAL[i % TYPICAL.len()]
            };
            let dir = root.join(format!("{name}-{i:05}"));
            copy_dir(&golden(case).join("bundle"), &dir);
            if let Some(crd) = &crd {
                std::fs::write(dir.join("manifests/bigs.example.com.yaml"), crd).unwrap();
            }
            (dir, options(case))
        })
        .collect()
}

/// One `render`: read, convert, write YAML; returns the input and output sizes.
fn render_one(dir: &Path, options: &Options) -> (usize, usize) {
    let files = render::read_dir(dir).unwrap();
    let input = files.iter().map(|(_, b)| b.len()).sum();
    let converted = conversion(
        files.iter().map(|(p, b)| (p.as_str(), b.as_slice())),
        options,
    )
    .unwrap();
    let yaml = render::to_yaml(&converted.objects).unwrap();
    (input, yaml.len())
}

fn measure(name: &str, bundles: &[(PathBuf, Options)]) {
    let mut best = Duration::MAX;
    let mut sizes = (0, 0);
    for _ in 0..RUNS {
        let started = Instant::now();
        sizes = (0, 0);
        for (dir, options) in bundles {
            let (input, output) = render_one(dir, options);
            sizes.0 += input;
            sizes.1 += output;
        }
        best = best.min(started.elapsed());
    }
    let secs = best.as_secs_f64();
    println!(
        "{name:>8}: {} bundles ({:.1} MB in, {:.1} MB YAML out) in {:.3} s: {:.0} bundles/s, {:.1} MB/s in (best of {RUNS})",
        bundles.len(),
        sizes.0 as f64 / 1e6,
        sizes.1 as f64 / 1e6,
        secs,
        bundles.len() as f64 / secs,
        sizes.0 as f64 / 1e6 / secs,
    );
}

fn main() {
    let count: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(700);
    let root = tempfile::tempdir().unwrap();
    let typical = corpus(root.path(), "typical", count);
    let large = corpus(root.path(), "large", (count / 14).max(1));
    measure("typical", &typical);
    measure("large", &large);
}
