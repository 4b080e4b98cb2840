//! Loads a large synthetic file-based catalog (1,000 packages × 10 versions, 168 MB of JSON
//! with inlined `olm.bundle.object` manifests and package icons) and reports the time to parse
//! and index it, the peak RSS while doing so and the RSS that stays once it is loaded.
//!
//! The catalog is written once to `$CARGO_TARGET_TMPDIR/catalog-load/` (one `catalog.json` per
//! package, as `opm render` lays catalogs out) and reused while its generator is unchanged.
//! Each load runs in its own child process, so its peak RSS (VmHWM) is its own. Four cases:
//! the directory read one file at a time (as `deppy-resolver resolve --catalog` reads it) or
//! every file in memory first (as the Catalog controller has unpacked content), each keeping
//! [`Detail::Full`] or [`Detail::Resolution`] (what deppy-resolver keeps).
//!
//! Shape (deterministic): package `pNNNN` with a description and a 3 KiB icon, channel
//! `stable` holding `pNNNN.v1.V.0` for V = 0..9 on one replaces chain; every bundle has
//! `olm.package`, two `olm.gvk`, 0–2 `olm.package.required` (and 1 in 5 an `olm.gvk.required`)
//! on lower-numbered packages, two related images, and three `olm.bundle.object` properties:
//! its CSV (about 9 KiB) and two CRDs (about 2 KiB each), base64-encoded.
//!
//! Run: `cargo bench -p deppy-resolver --bench catalog_load` (`-- --write DIR` only writes the
//! catalog to DIR, e.g. for `deppy-resolver resolve --catalog DIR --require p0999`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use fbc::{CatalogIndex, Detail};
use serde_json::{Value, json};

const PACKAGES: usize = 1000;
const VERSIONS: usize = 10;
const RUNS: usize = 3;
const CHILD_ENV: &str = "CATALOG_LOAD_CHILD";
/// Bumped whenever the generator changes, so a stale catalog on disk is rewritten.
const GENERATION: &str = "1";

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

/// Standard base64 with padding; a few lines instead of a dependency.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Filler text of about `len` bytes that varies with `seed`, so no two manifests are equal.
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

fn kind(p: usize) -> String {
    format!("Kind{p:04}")
}

fn crd(p: usize, v: usize, kind: &str) -> Value {
    let plural = kind.to_lowercase() + "s";
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.bench.example.com")},
        "spec": {
            "group": "bench.example.com",
            "names": {"kind": kind, "listKind": format!("{kind}List"), "plural": plural, "singular": kind.to_lowercase()},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "description": prose(p * 31 + v, 900),
                    "properties": {
                        "spec": {"type": "object", "properties": {
                            "size": {"type": "integer", "minimum": 1},
                            "version": {"type": "string"},
                            "storage": {"type": "object", "properties": {"class": {"type": "string"}, "size": {"type": "string"}}},
                        }},
                        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    },
                }},
            }],
        },
    })
}

fn csv(p: usize, v: usize, name: &str) -> Value {
    let package = format!("p{p:04}");
    json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {
            "name": name,
            "annotations": {
                "alm-examples": json!([{"apiVersion": "bench.example.com/v1", "kind": kind(p), "metadata": {"name": "example"}, "spec": {"size": 3}}]).to_string(),
                "capabilities": "Deep Insights",
                "containerImage": format!("registry.example.com/bench/{package}:v1.{v}.0"),
                "createdAt": "2026-01-01T00:00:00Z",
                "description": prose(p + v, 200),
            },
        },
        "spec": {
            "displayName": format!("Package {p}"),
            "description": prose(p * 7 + v, 6000),
            "version": format!("1.{v}.0"),
            "maturity": "stable",
            "minKubeVersion": "1.25.0",
            "keywords": ["bench", "database"],
            "provider": {"name": "Bench Example"},
            "maintainers": [{"name": "Bench", "email": "bench@example.com"}],
            "installModes": [
                {"type": "OwnNamespace", "supported": true},
                {"type": "SingleNamespace", "supported": true},
                {"type": "MultiNamespace", "supported": false},
                {"type": "AllNamespaces", "supported": true},
            ],
            "customresourcedefinitions": {"owned": [
                {"name": format!("{}s.bench.example.com", kind(p).to_lowercase()), "version": "v1", "kind": kind(p), "displayName": kind(p), "description": prose(p, 150)},
                {"name": format!("{}backups.bench.example.com", kind(p).to_lowercase()), "version": "v1", "kind": format!("{}Backup", kind(p)), "displayName": "Backup", "description": prose(p + 1, 150)},
            ]},
            "install": {"strategy": "deployment", "spec": {
                "clusterPermissions": [{"serviceAccountName": package, "rules": [
                    {"apiGroups": ["bench.example.com"], "resources": ["*"], "verbs": ["*"]},
                    {"apiGroups": [""], "resources": ["pods", "services", "configmaps", "secrets"], "verbs": ["get", "list", "watch", "create", "update", "delete"]},
                ]}],
                "deployments": [{"name": package, "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": {"name": package}},
                    "template": {"metadata": {"labels": {"name": package}}, "spec": {
                        "serviceAccountName": package,
                        "containers": [{
                            "name": "operator",
                            "image": format!("registry.example.com/bench/{package}@sha256:{:064x}", p * 100 + v),
                            "args": ["--leader-elect", "--metrics-bind-address=:8443"],
                            "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}},
                        }],
                    }},
                }}],
            }},
        },
    })
}

fn icon(p: usize) -> Value {
    let svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 64 64\"><title>{}</title><path d=\"{}\"/></svg>",
        p,
        prose(p, 2200)
    );
    json!({"base64data": base64(svg.as_bytes()), "mediatype": "image/svg+xml"})
}

/// One `catalog.json` per package: (directory name, contents).
fn generate() -> Vec<(String, Vec<u8>)> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut files = Vec::with_capacity(PACKAGES);
    for p in 0..PACKAGES {
        let name = format!("p{p:04}");
        let bundle = |v: usize| format!("{name}.v1.{v}.0");
        let count = if p == 0 {
            0
        } else {
            match rng.below(100) {
                0..50 => 0,
                50..85 => 1,
                _ => 2,
            }
        };
        let dependencies: Vec<usize> = (0..count).map(|_| rng.below(p)).collect();
        let api_dependency = (p > 0 && rng.below(5) == 0).then(|| rng.below(p));

        let mut blobs = vec![json!({
            "schema": "olm.package",
            "name": name,
            "defaultChannel": "stable",
            "description": prose(p, 1000),
            "icon": icon(p),
        })];
        let entries: Vec<Value> = (0..VERSIONS)
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
        for v in 0..VERSIONS {
            let gvk =
                |kind: String| json!({"group": "bench.example.com", "version": "v1", "kind": kind});
            let mut properties = vec![
                json!({"type": "olm.package", "value": {"packageName": name, "version": format!("1.{v}.0")}}),
                json!({"type": "olm.gvk", "value": gvk(kind(p))}),
                json!({"type": "olm.gvk", "value": gvk(format!("{}Backup", kind(p)))}),
            ];
            for q in &dependencies {
                properties.push(json!({
                    "type": "olm.package.required",
                    "value": {"packageName": format!("p{q:04}"), "versionRange": format!(">=1.{}.0", v / 4)},
                }));
            }
            if let Some(q) = api_dependency {
                properties.push(json!({"type": "olm.gvk.required", "value": gvk(kind(q))}));
            }
            let objects = [
                csv(p, v, &bundle(v)),
                crd(p, v, &kind(p)),
                crd(p, v + 1, &format!("{}Backup", kind(p))),
            ];
            for object in objects {
                let data = base64(object.to_string().as_bytes());
                properties.push(json!({"type": "olm.bundle.object", "value": {"data": data}}));
            }
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

/// Writes the catalog under `dir` (replacing what is there); returns its size in bytes.
fn write(dir: &Path) -> u64 {
    if dir.exists() {
        std::fs::remove_dir_all(dir).unwrap();
    }
    let mut total = 0;
    for (package, contents) in generate() {
        let path = dir.join(package);
        std::fs::create_dir_all(&path).unwrap();
        std::fs::write(path.join("catalog.json"), &contents).unwrap();
        total += contents.len() as u64;
    }
    std::fs::write(marker(dir), GENERATION).unwrap();
    total
}

/// Beside the catalog, not in it: every file in a catalog directory is a catalog file.
fn marker(dir: &Path) -> PathBuf {
    dir.with_extension("generation")
}

fn size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| std::fs::metadata(e.path().join("catalog.json")).map_or(0, |m| m.len()))
        .sum()
}

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// How the files reach the parser.
#[derive(Clone, Copy)]
enum Load {
    /// `CatalogIndex::from_dir_with`: one file at a time, as `deppy-resolver resolve` reads.
    Dir,
    /// Every file read first, then `CatalogIndex::from_files_with`: what the Catalog
    /// controller does with unpacked content.
    Memory,
}

const CASES: [(Load, Detail, &str); 4] = [
    (Load::Dir, Detail::Full, "dir/full"),
    (Load::Dir, Detail::Resolution, "dir/resolution"),
    (Load::Memory, Detail::Full, "memory/full"),
    (Load::Memory, Detail::Resolution, "memory/resolution"),
];

/// Every catalog file under `dir`, with its path relative to it.
fn read_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        let path = entry.path().join("catalog.json");
        files.push((format!("{name}/catalog.json"), std::fs::read(path).unwrap()));
    }
    files
}

/// One load in this process, printed as `ms=… input_kib=… peak_kib=… held_kib=…`: the
/// resident memory before parsing (the input, for a load from memory), at its peak while
/// parsing and indexing, and once loaded (without the input).
fn child(dir: &Path, case: &str) {
    let &(load, detail, _) = CASES.iter().find(|(_, _, name)| *name == case).unwrap();
    let files = match load {
        Load::Dir => Vec::new(),
        Load::Memory => read_files(dir),
    };
    let input = status_kib("VmRSS:");
    // Restart the peak from here (Linux: "5" resets VmHWM), so reading the files is not in it.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let started = Instant::now();
    let index = match load {
        Load::Dir => CatalogIndex::from_dir_with(dir, detail),
        Load::Memory => CatalogIndex::from_files_with(
            files
                .iter()
                .map(|(path, bytes)| (path.as_str(), bytes.as_slice())),
            detail,
        ),
    }
    .expect("valid catalog");
    let elapsed = started.elapsed();
    let peak = status_kib("VmHWM:");
    drop(files);
    let held = status_kib("VmRSS:");
    assert_eq!(index.catalog().bundles.len(), PACKAGES * VERSIONS);
    println!(
        "ms={:.1} input_kib={input} peak_kib={peak} held_kib={held}",
        ms(elapsed)
    );
}

fn field(line: &str, name: &str) -> f64 {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let (Some(dir), Some(case)) = (std::env::var_os(CHILD_ENV), args.get(1)) {
        child(Path::new(&dir), case);
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--write") {
        let dir = PathBuf::from(args.get(i + 1).expect("--write DIR"));
        let bytes = write(&dir);
        println!("wrote {} ({:.1} MB)", dir.display(), bytes as f64 / 1e6);
        return;
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("catalog-load");
    let current = std::fs::read_to_string(marker(&dir)).is_ok_and(|g| g == GENERATION);
    if !current {
        let started = Instant::now();
        write(&dir);
        println!("generated in {:.1} s", started.elapsed().as_secs_f64());
    }
    println!(
        "catalog {}: {PACKAGES} packages x {VERSIONS} versions, {:.1} MB of JSON; \
         parse+index, {RUNS} runs per case, each in its own process",
        dir.display(),
        size(&dir) as f64 / 1e6
    );
    println!(
        "{:<18} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "case", "min ms", "median ms", "input MiB", "peak MiB", "held MiB"
    );
    let exe = std::env::current_exe().expect("own path");
    let mib = |kib: f64| kib / 1024.0;
    for (_, _, case) in CASES {
        let mut runs = Vec::with_capacity(RUNS);
        for _ in 0..RUNS {
            let output = Command::new(&exe)
                .arg(case)
                .env(CHILD_ENV, &dir)
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
            assert!(
                output.status.success(),
                "{stdout}{}",
                String::from_utf8_lossy(&output.stderr)
            );
            runs.push(stdout.trim().to_owned());
        }
        let mut times: Vec<f64> = runs.iter().map(|r| field(r, "ms")).collect();
        times.sort_by(f64::total_cmp);
        let median = |name: &str| {
            let mut values: Vec<f64> = runs.iter().map(|r| field(r, name)).collect();
            values.sort_by(f64::total_cmp);
            mib(values[RUNS / 2])
        };
        println!(
            "{case:<18} {:>10.0} {:>10.0} {:>10.0} {:>10.0} {:>10.0}",
            times[0],
            times[RUNS / 2],
            median("input_kib"),
            median("peak_kib"),
            median("held_kib"),
        );
    }
}
