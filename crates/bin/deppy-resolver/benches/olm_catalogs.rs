//! Whole resolutions (parse, index, build, solve) over generated file-based catalogs shaped
//! like the OLM problems of `deppy`'s `olm_shapes` benchmark, at three sizes; the catalogs
//! `hack/bench-deppy` runs `deppy-resolver resolve` and upstream deppy v0.3.0 on.
//!
//! Shape (deterministic), per size `packages × versions, k`: package `pNNNN`, default channel
//! `stable` holding `pNNNN.v1.V.0` (version `1.V.0`) for V = 0..versions on one replaces
//! chain; every bundle provides API `KindNNNN` and depends on `k` other packages drawn at
//! random per bundle, each dependency covering every version of its package: 70% through
//! `olm.package.required` (range `>=1.0.0`), 30% through `olm.gvk.required` on the package's
//! API. Every tenth package is requested (`--require`). Bundles carry what `opm render` gives
//! a bundle without inlined manifests: an `olm.csv.metadata` property (description, install
//! modes, maintainers ...) and two related images; packages a description. One
//! `catalog.json` per package directory, as `opm render` lays catalogs out.
//!
//! | size | packages × versions, k | bundles | requested |
//! |---|---|---|---|
//! | 2.4k | 400 × 5, 1 | 2,000 | 40 |
//! | 22k | 2,000 × 10, 1 | 20,000 | 200 |
//! | 51k | 1,000 × 50, 2 | 50,000 | 100 |
//!
//! Run: `cargo bench -p deppy-resolver --bench olm_catalogs` resolves each size in this
//! process and prints where the time goes. Its anchor, `JSON syntax`, is the least any reader
//! of the same bytes must do: serde_json checking every document's syntax and keeping
//! nothing. It runs on one thread, as `fbc` parses in-memory files; `× syntax` is the parse
//! over it (in brackets). Indexing then runs on every core. A second reference, `typed floor`, reads the
//! same documents through serde's derived readers into borrowed fields, only the ones
//! resolution needs, checks nothing beyond their types and keeps nothing: the least a typed
//! reader of these catalogs costs, whatever it builds. `-- --write DIR SIZE` only writes the catalog of
//! SIZE to DIR and prints the requested packages, one per line, on stdout (what
//! `hack/bench-deppy` does).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::path::Path;
use std::time::{Duration, Instant};

use deppy_resolver::{Constraint, NamedCatalog, Request, Resolver};
use fbc::{CatalogIndex, Detail, parse_files_with};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Value, json};
use std::borrow::Cow;

/// The allocator `deppy-resolver` ships with (see its `main.rs`), so that the phases cost
/// here what they cost there.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

struct Size {
    name: &'static str,
    packages: usize,
    versions: usize,
    k: usize,
}

const SIZES: [Size; 3] = [
    Size {
        name: "2.4k",
        packages: 400,
        versions: 5,
        k: 1,
    },
    Size {
        name: "22k",
        packages: 2000,
        versions: 10,
        k: 1,
    },
    Size {
        name: "51k",
        packages: 1000,
        versions: 50,
        k: 2,
    },
];

/// Every tenth package is requested.
const REQUEST_EVERY: usize = 10;

/// xorshift64*: deterministic and dependency-free.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize % n
    }
}

/// Filler text of about `len` bytes that varies with `seed`.
fn prose(seed: usize, len: usize) -> String {
    const WORDS: [&str; 12] = [
        "operator",
        "manages",
        "the",
        "lifecycle",
        "of",
        "clusters",
        "backups",
        "and",
        "upgrades",
        "across",
        "namespaces",
        "safely",
    ];
    let mut out = String::with_capacity(len + 16);
    let mut i = seed;
    while out.len() < len {
        out.push_str(WORDS[i % WORDS.len()]);
        out.push(' ');
        i = i.wrapping_mul(31).wrapping_add(7);
    }
    out
}

fn package_name(p: usize) -> String {
    format!("p{p:04}")
}

fn api(p: usize) -> Value {
    json!({"group": "bench.example.com", "version": "v1", "kind": format!("Kind{p:04}")})
}

fn csv_metadata(p: usize, v: usize) -> Value {
    json!({
        "annotations": {
            "capabilities": "Basic Install",
            "containerImage": format!("registry.example.com/bench/{}:v1.{v}.0", package_name(p)),
            "createdAt": "2026-01-01T00:00:00Z",
        },
        "description": prose(p * 7 + v, 400),
        "displayName": format!("Package {p}"),
        "installModes": [
            {"type": "OwnNamespace", "supported": true},
            {"type": "SingleNamespace", "supported": true},
            {"type": "MultiNamespace", "supported": false},
            {"type": "AllNamespaces", "supported": true},
        ],
        "keywords": ["bench", "database"],
        "maintainers": [{"name": "Bench", "email": "bench@example.com"}],
        "maturity": "stable",
        "minKubeVersion": "1.25.0",
        "provider": {"name": "Bench Example"},
    })
}

/// One `catalog.json` per package: (package name, contents).
fn generate(size: &Size) -> Vec<(String, Vec<u8>)> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut files = Vec::with_capacity(size.packages);
    for p in 0..size.packages {
        let name = package_name(p);
        let bundle = |v: usize| format!("{name}.v1.{v}.0");
        let mut blobs = vec![json!({
            "schema": "olm.package",
            "name": name,
            "defaultChannel": "stable",
            "description": prose(p, 500),
        })];
        let entries: Vec<Value> = (0..size.versions)
            .map(|v| {
                let mut entry = json!({"name": bundle(v)});
                if v > 0 {
                    entry["replaces"] = json!(bundle(v - 1));
                }
                entry
            })
            .collect();
        blobs.push(
            json!({"schema": "olm.channel", "package": name, "name": "stable", "entries": entries}),
        );
        for v in 0..size.versions {
            let mut properties = vec![
                json!({"type": "olm.package", "value": {"packageName": name, "version": format!("1.{v}.0")}}),
                json!({"type": "olm.gvk", "value": api(p)}),
            ];
            let mut picked: Vec<usize> = Vec::with_capacity(size.k);
            while picked.len() < size.k {
                let q = rng.below(size.packages);
                if q != p && !picked.contains(&q) {
                    picked.push(q);
                }
            }
            for q in picked {
                properties.push(if rng.below(10) < 7 {
                    json!({
                        "type": "olm.package.required",
                        "value": {"packageName": package_name(q), "versionRange": ">=1.0.0"},
                    })
                } else {
                    json!({"type": "olm.gvk.required", "value": api(q)})
                });
            }
            properties.push(json!({"type": "olm.csv.metadata", "value": csv_metadata(p, v)}));
            blobs.push(json!({
                "schema": "olm.bundle",
                "package": name,
                "name": bundle(v),
                "image": format!("registry.example.com/bench/{name}-bundle:v1.{v}.0"),
                "relatedImages": [
                    {"name": "operator", "image": format!("registry.example.com/bench/{name}@sha256:{:064x}", p * 100 + v)},
                    {"image": format!("registry.example.com/bench/{name}-bundle:v1.{v}.0")},
                ],
                "properties": properties,
            }));
        }
        let mut out = Vec::new();
        for blob in blobs {
            serde_json::to_writer(&mut out, &blob).unwrap();
            out.push(b'\n');
        }
        files.push((name, out));
    }
    files
}

fn requested(size: &Size) -> Vec<String> {
    (0..size.packages)
        .step_by(REQUEST_EVERY)
        .map(package_name)
        .collect()
}

/// Writes the catalog under `dir` (replacing what is there); returns its size in bytes.
fn write(dir: &Path, size: &Size) -> u64 {
    if dir.exists() {
        std::fs::remove_dir_all(dir).unwrap();
    }
    let mut total = 0;
    for (package, contents) in generate(size) {
        let path = dir.join(package);
        std::fs::create_dir_all(&path).unwrap();
        std::fs::write(path.join("catalog.json"), &contents).unwrap();
        total += contents.len() as u64;
    }
    total
}

/// Checks the JSON syntax of every document of every file, keeping nothing: the floor under
/// any reading of the catalog. Returns the number of documents.
fn check_syntax(files: &[(String, Vec<u8>)]) -> usize {
    files
        .iter()
        .map(|(_, contents)| {
            serde_json::Deserializer::from_slice(contents)
                .into_iter::<IgnoredAny>()
                .map(|document| document.map(|_| 1).expect("valid JSON"))
                .sum::<usize>()
        })
        .sum()
}

/// A catalog document as the typed floor reads it: the fields resolution reads, borrowed
/// from the text where they have no escapes.
#[expect(
    dead_code,
    reason = "fields are read into, not from: the floor keeps nothing"
)]
#[derive(Deserialize)]
struct FloorDocument<'a> {
    #[serde(borrow)]
    schema: Cow<'a, str>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    package: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    properties: Vec<FloorProperty<'a>>,
    #[serde(borrow, default)]
    entries: Vec<FloorEntry<'a>>,
    #[serde(rename = "defaultChannel", borrow)]
    default_channel: Option<Cow<'a, str>>,
}

#[expect(
    dead_code,
    reason = "fields are read into, not from: the floor keeps nothing"
)]
#[derive(Deserialize)]
struct FloorEntry<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow)]
    replaces: Option<Cow<'a, str>>,
}

#[expect(
    dead_code,
    reason = "fields are read into, not from: the floor keeps nothing"
)]
#[derive(Deserialize)]
struct FloorGvk<'a> {
    #[serde(borrow)]
    group: Cow<'a, str>,
    #[serde(borrow)]
    version: Cow<'a, str>,
    #[serde(borrow)]
    kind: Cow<'a, str>,
}

#[expect(
    dead_code,
    reason = "fields are read into, not from: the floor keeps nothing"
)]
#[derive(Deserialize)]
#[serde(tag = "type", content = "value")]
enum FloorProperty<'a> {
    #[serde(rename = "olm.package")]
    Package {
        #[serde(rename = "packageName", borrow)]
        package_name: Cow<'a, str>,
        #[serde(borrow)]
        version: Cow<'a, str>,
    },
    #[serde(rename = "olm.gvk")]
    Gvk(#[serde(borrow)] FloorGvk<'a>),
    #[serde(rename = "olm.gvk.required")]
    GvkRequired(#[serde(borrow)] FloorGvk<'a>),
    #[serde(rename = "olm.package.required")]
    PackageRequired {
        #[serde(rename = "packageName", borrow)]
        package_name: Cow<'a, str>,
        #[serde(rename = "versionRange", borrow)]
        version_range: Cow<'a, str>,
    },
    #[serde(rename = "olm.csv.metadata")]
    CsvMetadata {
        #[serde(rename = "minKubeVersion", borrow)]
        min_kube_version: Option<Cow<'a, str>>,
    },
    #[serde(other)]
    Other,
}

/// Reads every document through [`FloorDocument`] and drops it (through `black_box`, so
/// that nothing is optimised away). Returns the number of bundles.
fn read_typed_floor(files: &[(String, Vec<u8>)]) -> usize {
    let mut bundles = 0;
    for (_, contents) in files {
        let text = std::str::from_utf8(contents).expect("UTF-8");
        for document in serde_json::Deserializer::from_str(text).into_iter::<FloorDocument>() {
            let document = std::hint::black_box(document.expect("valid document"));
            bundles += usize::from(document.schema == "olm.bundle");
        }
    }
    bundles
}

/// `took` and its ratio to `anchor`, as one column.
fn over(took: Duration, anchor: Duration) -> String {
    format!(
        "{:.1} ms ({:.1}×)",
        ms(took),
        took.as_secs_f64() / anchor.as_secs_f64()
    )
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn size_named(name: &str) -> &'static Size {
    SIZES
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("unknown size {name:?}; one of 2.4k, 22k, 51k"))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--write") {
        let (Some(dir), Some(name)) = (args.get(i + 1), args.get(i + 2)) else {
            panic!("usage: --write DIR SIZE");
        };
        let size = size_named(name);
        let bytes = write(Path::new(dir), size);
        eprintln!("wrote {dir} ({:.1} MB)", bytes as f64 / 1e6);
        for package in requested(size) {
            println!("{package}");
        }
        return;
    }
    println!(
        "{:<6} {:>9} {:>8} {:>11} {:>18} {:>18} {:>9} {:>9} {:>9} {:>11}",
        "size",
        "JSON MB",
        "bundles",
        "JSON syntax",
        "typed floor",
        "parse",
        "index",
        "build",
        "solve",
        "variables"
    );
    for size in &SIZES {
        if args.iter().skip(1).any(|a| !a.starts_with('-')) && !args.contains(&size.name.into()) {
            continue;
        }
        let files = generate(size);
        let bytes: usize = files.iter().map(|(_, c)| c.len()).sum();
        // Once before timing, so that both readings find the bytes in cache and the thread
        // pool started.
        let documents = check_syntax(&files);
        let started = Instant::now();
        assert_eq!(check_syntax(&files), documents);
        let syntax = started.elapsed();
        let started = Instant::now();
        let floor_bundles = read_typed_floor(&files);
        let floor = started.elapsed();
        let started = Instant::now();
        let catalog = parse_files_with(
            files
                .iter()
                .map(|(p, c)| (format!("{p}/catalog.json"), c.as_slice())),
            Detail::Resolution,
        )
        .expect("valid catalog");
        let parsed = started.elapsed();
        let started = Instant::now();
        let index = CatalogIndex::new(catalog).expect("valid catalog");
        let indexed = started.elapsed();
        assert_eq!(floor_bundles, index.catalog().bundles.len());
        let resolver = Resolver::new([NamedCatalog::new("bench", &index)]).unwrap();
        let request = Request::new(
            requested(size)
                .iter()
                .map(|p| Constraint::required(p, None, None)),
        );
        let resolution = resolver.resolve(&request).expect("resolves");
        println!(
            "{:<6} {:>9.1} {:>8} {:>8.1} ms {:>18} {:>18} {:>6.1} ms {:>6.1} ms {:>6.1} ms {:>11}",
            size.name,
            bytes as f64 / 1e6,
            index.catalog().bundles.len(),
            ms(syntax),
            over(floor, syntax),
            over(parsed, syntax),
            ms(indexed),
            ms(resolution.stats.build_duration),
            ms(resolution.stats.solve_duration),
            resolution.stats.variables,
        );
    }
}
