//! Solves the OLM-shaped problems of the deppy research notes (§4.3) and reports time and
//! peak memory per size.
//!
//! Each size runs in its own child process so that its peak RSS (VmHWM) is its own. Shape,
//! as op-con built problems: per package, bundles newest first; every bundle depends on `k`
//! other packages, each dependency listing all versions of that package newest first; one
//! `AtMost(1)` "uniqueness" variable per package; and one mandatory "required package"
//! variable per ten packages, depending on all versions of its package.
//!
//! Run: `cargo bench -p deppy --bench olm_shapes` (optionally `-- <size>` for one size).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::process::Command;
use std::time::{Duration, Instant};

use deppy::{Constraint, Identifiers, SolveError, Solver, Variable, identifiers};

const CASE_ENV: &str = "DEPPY_BENCH_CASE";
const RUNS: usize = 5;

struct Shape {
    name: &'static str,
    packages: usize,
    versions: usize,
    k: usize,
    /// Adds two mandatory pins on different versions of one package, so the problem is
    /// unsatisfiable and the time is that of finding and shrinking the explanation.
    pinned: bool,
}

const SHAPES: [Shape; 4] = [
    Shape {
        name: "2.4k",
        packages: 400,
        versions: 5,
        k: 1,
        pinned: false,
    },
    Shape {
        name: "22k",
        packages: 2000,
        versions: 10,
        k: 1,
        pinned: false,
    },
    Shape {
        name: "51k",
        packages: 1000,
        versions: 50,
        k: 2,
        pinned: false,
    },
    Shape {
        name: "51k-unsat",
        packages: 1000,
        versions: 50,
        k: 2,
        pinned: true,
    },
];

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

fn build(shape: &Shape) -> Vec<Variable> {
    let versions: Vec<Identifiers> = (0..shape.packages)
        .map(|p| identifiers((0..shape.versions).rev().map(|v| format!("pkg{p}.v{v}"))))
        .collect();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut variables = Vec::new();
    for (p, bundles) in versions.iter().enumerate() {
        for bundle in bundles.iter() {
            let mut variable = Variable::new(bundle);
            let mut picked = Vec::with_capacity(shape.k);
            while picked.len() < shape.k {
                let q = rng.below(shape.packages);
                if q != p && !picked.contains(&q) {
                    picked.push(q);
                }
            }
            for q in picked {
                variable = variable.with(Constraint::Dependency(versions[q].clone()));
            }
            variables.push(variable);
        }
    }
    for (p, bundles) in versions.iter().enumerate() {
        variables.push(
            Variable::new(format!("pkg{p} uniqueness")).with(Constraint::AtMost {
                n: 1,
                ids: bundles.clone(),
            }),
        );
    }
    for p in (0..shape.packages).step_by(10) {
        variables.push(
            Variable::new(format!("required package pkg{p}"))
                .mandatory()
                .with(Constraint::Dependency(versions[p].clone())),
        );
    }
    if shape.pinned {
        let last = shape.versions - 1;
        variables.push(
            Variable::new("pin newest")
                .mandatory()
                .depends_on([format!("pkg1.v{last}")]),
        );
        variables.push(
            Variable::new("pin oldest")
                .mandatory()
                .depends_on(["pkg1.v0"]),
        );
    }
    variables
}

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn run_case(shape: &Shape) {
    let started = Instant::now();
    let variables = build(shape);
    let built = started.elapsed();
    let input_rss = status_kib("VmRSS:");
    let count = variables.len();

    let started = Instant::now();
    let solver = Solver::new(variables).expect("valid input");
    let validated = started.elapsed();

    let mut times = Vec::with_capacity(RUNS);
    let mut solution = None;
    let mut explanation = None;
    for _ in 0..RUNS {
        let started = Instant::now();
        let solved = solver.solve();
        times.push(started.elapsed());
        match solved {
            Ok(solved) => solution = Some(solved),
            Err(SolveError::NotSatisfiable(e)) if shape.pinned => explanation = Some(e),
            Err(e) => panic!("size {}: {e}", shape.name),
        }
    }
    times.sort();
    if let Some(explanation) = explanation {
        assert_eq!(explanation.constraints().len(), 5, "{explanation}");
        println!(
            "{:>9}  vars {:>6}  explanation of {} constraints  \
             solve min {:>6.1} ms  median {:>6.1} ms  input-rss {:>4} MiB  peak-rss {:>4} MiB",
            shape.name,
            count,
            explanation.constraints().len(),
            millis(times[0]),
            millis(times[RUNS / 2]),
            input_rss / 1024,
            status_kib("VmHWM:") / 1024,
        );
        return;
    }
    let solution = solution.expect("at least one run");
    let stats = solution.stats();

    // The answer must make sense: every required package selected, one version each.
    let per_package = solution
        .selected()
        .iter()
        .filter(|id| id.as_str().contains(".v"))
        .count();
    assert!(per_package <= shape.packages);
    for p in (0..shape.packages).step_by(10) {
        assert!(solution.is_selected(&format!("required package pkg{p}")));
    }

    println!(
        "{:>9}  vars {:>6}  sat-vars {:>6}  clauses {:>7}  lits {:>8}  selected {:>5}  \
         guesses {:>5}  sat-calls {:>3}  build {:>7.1} ms  new {:>6.1} ms  \
         solve min {:>6.1} ms  median {:>6.1} ms  input-rss {:>4} MiB  peak-rss {:>4} MiB",
        shape.name,
        count,
        stats.sat_variables,
        stats.clauses,
        stats.literals,
        solution.selected().len(),
        stats.guesses,
        stats.sat_calls,
        millis(built),
        millis(validated),
        millis(times[0]),
        millis(times[RUNS / 2]),
        input_rss / 1024,
        status_kib("VmHWM:") / 1024,
    );
}

fn main() {
    if let Ok(name) = std::env::var(CASE_ENV) {
        let shape = SHAPES.iter().find(|s| s.name == name).expect("known size");
        run_case(shape);
        return;
    }
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let exe = std::env::current_exe().expect("own path");
    println!(
        "deppy OLM-shaped problems, {RUNS} solves each (release build; time excludes input construction)"
    );
    for shape in &SHAPES {
        if !only.is_empty() && !only.iter().any(|o| o == shape.name) {
            continue;
        }
        let status = Command::new(&exe)
            .env(CASE_ENV, shape.name)
            .status()
            .expect("run child");
        assert!(status.success(), "size {} failed", shape.name);
    }
}
