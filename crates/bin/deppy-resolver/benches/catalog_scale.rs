//! Resolves every package of a synthetic 1,000-package × 20-version catalog, one request at a
//! time, and reports time per resolution and peak memory.
//!
//! The catalog is generated in memory as file-based-catalog JSON blobs and loaded through
//! `fbc` like a real one. Shape (deterministic):
//! - package `pNNNN`, default channel `stable` holding `pNNNN.v1.V.0` for V = 0..19 on one
//!   replaces chain, with a skipRange over the previous five versions on every fifth; every
//!   fourth package also has a `candidate` channel with its five newest versions (so those
//!   bundles are offered twice);
//! - every bundle provides API `KindNNNN`; packages 50k+1 and 50k+2 also both provide API
//!   `SharedKK`, so 40 APIs have two providing packages;
//! - packages depend on 0 (50%), 1 (35%) or 2 (15%) lower-numbered packages, 70% through
//!   `olm.package.required` with a lower bound that rises with the dependent's version, 30%
//!   through `olm.gvk.required`; a dependency on a package 50k+1 or 50k+2 is always on
//!   `SharedKK`, which either provider satisfies (a package dependency on one of them would
//!   rule the other out wherever both are needed).
//!
//! Run: `cargo bench -p deppy-resolver --bench catalog_scale`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::time::{Duration, Instant};

use deppy_resolver::{Constraint, NamedCatalog, Request, Resolver};
use fbc::CatalogIndex;
use serde_json::{Value, json};

const PACKAGES: usize = 1000;
const VERSIONS: usize = 20;

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

enum Dependency {
    Package(usize),
    Api(usize),
    Shared(usize),
}

fn kind(p: usize) -> Value {
    json!({"group": "bench.example.com", "version": "v1", "kind": format!("Kind{p:04}")})
}

fn shared(k: usize) -> Value {
    json!({"group": "bench.example.com", "version": "v1", "kind": format!("Shared{k:02}")})
}

/// Packages 50k+1 and 50k+2 both provide `Sharedk`.
fn shares(p: usize) -> bool {
    matches!(p % 50, 1 | 2)
}

fn generate() -> Vec<u8> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut blobs: Vec<Value> = Vec::new();
    for p in 0..PACKAGES {
        let name = format!("p{p:04}");
        let bundle = |v: usize| format!("{name}.v1.{v}.0");
        let dependencies: Vec<Dependency> = if p == 0 {
            Vec::new()
        } else {
            let count = match rng.below(100) {
                0..50 => 0,
                50..85 => 1,
                _ => 2,
            };
            (0..count)
                .map(|_| {
                    let target = rng.below(p);
                    if shares(target) {
                        Dependency::Shared(target / 50)
                    } else if rng.below(10) < 7 {
                        Dependency::Package(target)
                    } else {
                        Dependency::Api(target)
                    }
                })
                .collect()
        };

        blobs.push(json!({"schema": "olm.package", "name": name, "defaultChannel": "stable"}));
        let entries: Vec<Value> = (0..VERSIONS)
            .map(|v| {
                let mut entry = json!({"name": bundle(v)});
                if v > 0 {
                    entry["replaces"] = json!(bundle(v - 1));
                }
                if v >= 5 && v % 5 == 0 {
                    entry["skipRange"] = json!(format!(">=1.{}.0 <1.{v}.0", v - 5));
                }
                entry
            })
            .collect();
        blobs.push(
            json!({"schema": "olm.channel", "package": name, "name": "stable", "entries": entries}),
        );
        if p % 4 == 0 {
            let newest: Vec<Value> = (VERSIONS - 5..VERSIONS)
                .map(|v| {
                    let mut entry = json!({"name": bundle(v)});
                    if v > VERSIONS - 5 {
                        entry["replaces"] = json!(bundle(v - 1));
                    }
                    entry
                })
                .collect();
            blobs.push(json!({"schema": "olm.channel", "package": name, "name": "candidate", "entries": newest}));
        }
        for v in 0..VERSIONS {
            let mut properties = vec![
                json!({"type": "olm.package", "value": {"packageName": name, "version": format!("1.{v}.0")}}),
                json!({"type": "olm.gvk", "value": kind(p)}),
            ];
            if shares(p) {
                properties.push(json!({"type": "olm.gvk", "value": shared(p / 50)}));
            }
            for dependency in &dependencies {
                properties.push(match *dependency {
                    Dependency::Package(q) => json!({
                        "type": "olm.package.required",
                        "value": {"packageName": format!("p{q:04}"), "versionRange": format!(">=1.{}.0", v / 2)},
                    }),
                    Dependency::Api(q) => json!({"type": "olm.gvk.required", "value": kind(q)}),
                    Dependency::Shared(k) => {
                        json!({"type": "olm.gvk.required", "value": shared(k)})
                    }
                });
            }
            blobs.push(json!({
                "schema": "olm.bundle",
                "package": name,
                "name": bundle(v),
                "image": format!("registry.example.com/bench/{name}-bundle:v1.{v}.0"),
                "properties": properties,
            }));
        }
    }
    let mut out = Vec::new();
    for blob in blobs {
        serde_json::to_writer(&mut out, &blob).unwrap();
        out.push(b'\n');
    }
    out
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

fn main() {
    let started = Instant::now();
    let bytes = generate();
    let generated = started.elapsed();
    let started = Instant::now();
    let index = CatalogIndex::from_files([("catalog.json", &bytes)]).expect("valid catalog");
    let loaded = started.elapsed();
    drop(bytes);
    let bundles = index.catalog().bundles.len();
    println!(
        "catalog: {PACKAGES} packages x {VERSIONS} versions = {bundles} bundles; generate {:.0} ms, parse+index {:.0} ms, rss {} MiB",
        ms(generated),
        ms(loaded),
        status_kib("VmRSS:") / 1024
    );

    let resolver = Resolver::new([NamedCatalog::new("bench", &index)]).unwrap();
    let mut times = Vec::with_capacity(PACKAGES);
    let (mut variables, mut clauses, mut selected, mut largest) = (0, 0, 0, 0);
    let (mut build, mut solve) = (Duration::ZERO, Duration::ZERO);
    let mut slowest = (Duration::ZERO, 0, 0);
    let all = Instant::now();
    for p in 0..PACKAGES {
        let request = Request::new([Constraint::required(&format!("p{p:04}"), None, None)]);
        let started = Instant::now();
        let resolution = resolver
            .resolve(&request)
            .unwrap_or_else(|e| panic!("p{p:04}: {e}"));
        times.push(started.elapsed());
        // The requested package is selected at its newest version.
        assert!(
            resolution
                .selection_strings()
                .contains(&format!("bench:p{p:04}:1.{}.0:stable", VERSIONS - 1)),
            "p{p:04}: {:?}",
            resolution.selection_strings()
        );
        let stats = resolution.stats;
        build += stats.build_duration;
        solve += stats.solve_duration;
        if stats.duration > slowest.0 {
            slowest = (stats.duration, p, stats.variables);
        }
        variables += resolution.stats.variables;
        clauses += resolution.stats.clauses.unwrap_or(0);
        selected += resolution.selections.len();
        largest = largest.max(resolution.stats.variables);
    }
    let total = all.elapsed();
    times.sort();
    let mean = total / PACKAGES as u32;
    println!(
        "resolve each package alone ({PACKAGES} requests): total {:.0} ms; per resolution mean {:.2} ms, median {:.2} ms, p95 {:.2} ms, max {:.2} ms",
        ms(total),
        ms(mean),
        ms(times[PACKAGES / 2]),
        ms(times[PACKAGES * 95 / 100]),
        ms(times[PACKAGES - 1]),
    );
    println!(
        "  of which building variables {:.2} ms and solving {:.2} ms on average; slowest p{:04} ({} variables)",
        ms(build / PACKAGES as u32),
        ms(solve / PACKAGES as u32),
        slowest.1,
        slowest.2
    );
    println!(
        "  problem size per resolution: mean {} variables (max {largest}), mean {} clauses, mean {:.1} selections",
        variables / PACKAGES,
        clauses / PACKAGES,
        selected as f64 / PACKAGES as f64
    );

    // One request for every tenth package at once: one larger problem.
    let request = Request::new(
        (0..PACKAGES)
            .step_by(10)
            .map(|p| Constraint::required(&format!("p{p:04}"), None, None)),
    );
    let started = Instant::now();
    let resolution = resolver.resolve(&request).expect("batch resolves");
    let elapsed = started.elapsed();
    println!(
        "resolve {} packages in one request: {:.1} ms (build {:.1} ms, solve {:.1} ms), {} variables, {} clauses, {} selections",
        PACKAGES / 10,
        ms(elapsed),
        ms(resolution.stats.build_duration),
        ms(resolution.stats.solve_duration),
        resolution.stats.variables,
        resolution.stats.clauses.unwrap_or(0),
        resolution.selections.len()
    );
    println!("peak rss (VmHWM): {} MiB", status_kib("VmHWM:") / 1024);
}
