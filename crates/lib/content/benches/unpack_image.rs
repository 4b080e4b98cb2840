//! Benchmark: unpack a ~100 MiB image from a local `crane registry serve` with this
//! crate, and pull the same image with `crane pull` (and flatten it with
//! `crane export`), reporting wall time and peak memory (VmHWM) of each and the ratios
//! against `crane pull` measured in the same run.
//!
//! Run: `PATH=$(hack/build-tools | tail -n1):$PATH cargo bench -p content --bench unpack_image`
//! Sizes: `CONTENT_BENCH_MIB`, a comma-separated list (default `100`; `100,1024` adds the
//! 1 GiB image, unpacked with a 1 GiB-plus limit). Each measurement runs in its own
//! process so that VmHWM is that operation's peak alone. Two images are measured:
//! incompressible files (the worst case for the normalised tar.gz, which must deflate
//! every byte) and YAML-like text (what bundles and catalogs hold, about 4:1 under gzip).
//!
//! With `KUBECONFIG` pointing at a `hack/cluster` cluster, each image's content is also
//! written to the content store (namespace `content-bench`) and the bench reports the
//! time and peak memory of unpack-and-store, and what it cost etcd: its in-use and total
//! database size (read from etcd's `/metrics`, found through the cluster's `ports.json`
//! next to the kubeconfig) and the apiserver's object count before and after, per
//! stored MiB. The content is deleted again afterwards.
//!
//! `CONTENT_BENCH_PROFILE=DIR` also records a `perf` profile of one more unpack of each
//! image into `DIR`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use content::Limits;
use content::source::UnpackOptions;
use content::source::image::{self, ImageSource};
use rand::RngCore;

const RUNS: usize = 3;
/// Namespace of the content store the bench writes to.
const STORE_NAMESPACE: &str = "content-bench";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child-unpack") {
        child_unpack(&args[i + 1], args[i + 2].parse().unwrap(), false);
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--child-store") {
        child_unpack(&args[i + 1], args[i + 2].parse().unwrap(), true);
        return;
    }
    let sizes: Vec<usize> = std::env::var("CONTENT_BENCH_MIB")
        .unwrap_or_else(|_| "100".to_owned())
        .split(',')
        .filter_map(|v| v.trim().parse().ok())
        .collect();

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let registry_dir = tempfile::tempdir().unwrap();
    let mut registry = Command::new("crane")
        .args(["registry", "serve", "--address", &addr, "--disk"])
        .arg(registry_dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("crane must be on PATH (add the output of hack/build-tools)");
    let started = Instant::now();
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "registry did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    for &mib in &sizes {
        for kind in [Kind::Random, Kind::Yaml] {
            let reference = push_image(&addr, mib, kind);
            eprintln!("pushed {reference} ({mib} MiB of {kind:?} files in 4 layers)");
            measure(&reference, mib, kind);
            profile(&reference, mib, kind);
            if std::env::var_os("KUBECONFIG").is_some() {
                measure_store(&reference, mib, kind);
            }
        }
    }
    let _ = registry.kill();
    let _ = registry.wait();
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Random,
    Yaml,
}

fn measure(reference: &str, mib: usize, kind: Kind) {
    let ours: Vec<(f64, u64)> = (0..RUNS)
        .map(|_| {
            let line = run_child("--child-unpack", reference, mib);
            let mut fields = line.split_whitespace();
            (
                fields.next().unwrap().parse().unwrap(),
                fields.next().unwrap().parse().unwrap(),
            )
        })
        .collect();

    let out_dir = tempfile::tempdir().unwrap();
    let pull = measure_command(RUNS, || {
        let mut command = Command::new("crane");
        command
            .args(["pull", reference])
            .arg(out_dir.path().join("image.tar"));
        command
    });
    let export = measure_command(RUNS, || {
        let mut command = Command::new("crane");
        command
            .args(["export", reference])
            .arg(out_dir.path().join("fs.tar"));
        command
    });

    let report = |name: &str, runs: &[(f64, u64)]| {
        let best = runs.iter().map(|r| r.0).fold(f64::INFINITY, f64::min);
        let mean = runs.iter().map(|r| r.0).sum::<f64>() / runs.len() as f64;
        let hwm = runs.iter().map(|r| r.1).max().unwrap_or(0);
        println!(
            "{name:<28} best {best:6.2} s   mean {mean:6.2} s   peak VmHWM {:7.1} MiB",
            hwm as f64 / 1024.0
        );
        (best, hwm)
    };
    println!("image: {mib} MiB of {kind:?} files, {RUNS} runs each, fresh process per run");
    let (ours_s, ours_m) = report("content::image::unpack", &ours);
    let (pull_s, pull_m) = report("crane pull (tarball)", &pull);
    let (export_s, export_m) = report("crane export (flattened)", &export);
    println!(
        "ratio ours/crane pull:   time {:.2}x   memory {:.2}x",
        ours_s / pull_s,
        ours_m as f64 / pull_m as f64
    );
    println!(
        "ratio ours/crane export: time {:.2}x   memory {:.2}x",
        ours_s / export_s,
        ours_m as f64 / export_m as f64
    );
    println!();
}

/// With `CONTENT_BENCH_PROFILE=DIR`, unpacks the image once more under
/// `perf record --call-graph dwarf` into `DIR/unpack-<kind>-<mib>.perf` (after the timed
/// runs, so that they are not slowed down); read it with `perf report -i FILE`.
fn profile(reference: &str, mib: usize, kind: Kind) {
    let Some(dir) = std::env::var_os("CONTENT_BENCH_PROFILE") else {
        return;
    };
    let out = std::path::Path::new(&dir).join(format!("unpack-{kind:?}-{mib}.perf"));
    let status = Command::new("perf")
        .args(["record", "--call-graph", "dwarf,16384", "-F", "499", "-o"])
        .arg(&out)
        .arg("--")
        .arg(std::env::current_exe().unwrap())
        .args(["--child-unpack", reference, &mib.to_string()])
        .stdout(Stdio::null())
        .status()
        .expect("perf must be on PATH for CONTENT_BENCH_PROFILE");
    assert!(status.success(), "perf record failed");
    println!("profile: {}", out.display());
}

/// Runs this bench binary as a child with `flag reference mib`; returns its stdout.
fn run_child(flag: &str, reference: &str, mib: usize) -> String {
    let exe = std::env::current_exe().unwrap();
    let output = Command::new(exe)
        .args([flag, reference, &mib.to_string()])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "child {flag} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Unpacks and stores the image once in a child process, and reports what the store
/// cost etcd.
fn measure_store(reference: &str, mib: usize, kind: Kind) {
    let line = run_child("--child-store", reference, mib);
    let mut fields = line.split_whitespace();
    let seconds: f64 = fields.next().unwrap().parse().unwrap();
    let hwm_kib: u64 = fields.next().unwrap().parse().unwrap();
    let size: u64 = fields.next().unwrap().parse().unwrap();
    let chunks: u64 = fields.next().unwrap().parse().unwrap();
    let mut sizes = || -> Option<EtcdSizes> {
        let values: Vec<f64> = (0..3)
            .map(|_| fields.next().unwrap().parse().unwrap())
            .collect();
        (values[0] >= 0.0).then(|| EtcdSizes {
            in_use: values[0],
            total: values[1],
            keys: values[2],
        })
    };
    let before = sizes();
    let after = sizes();
    let stored_mib = size as f64 / (1024.0 * 1024.0);
    println!(
        "unpack + store ({kind:?}, {mib} MiB): {seconds:.2} s, peak VmHWM {:.1} MiB, \
         {stored_mib:.1} MiB of tar.gz in {chunks} ConfigMaps",
        hwm_kib as f64 / 1024.0
    );
    if let (Some(before), Some(after)) = (before, after) {
        let per_mib = |a: f64, b: f64| (b - a) / stored_mib / (1024.0 * 1024.0);
        println!(
            "etcd: in use {:.1} -> {:.1} MiB ({:.2} MiB per stored MiB), db file {:.1} -> {:.1} MiB ({:.2} MiB per stored MiB), keys {} -> {}",
            before.in_use / 1048576.0,
            after.in_use / 1048576.0,
            per_mib(before.in_use, after.in_use),
            before.total / 1048576.0,
            after.total / 1048576.0,
            per_mib(before.total, after.total),
            before.keys,
            after.keys,
        );
    } else {
        println!("etcd: sizes not available (no ports.json next to KUBECONFIG)");
    }
    println!();
}

#[derive(Debug, Clone, Copy)]
struct EtcdSizes {
    in_use: f64,
    total: f64,
    keys: f64,
}

/// etcd's database sizes from its `/metrics` (plain http on loopback in `hack/cluster`).
fn etcd_sizes() -> Option<EtcdSizes> {
    let kubeconfig = std::path::PathBuf::from(std::env::var_os("KUBECONFIG")?);
    let dir = kubeconfig.parent()?;
    let ports = [dir.join("ports.json"), dir.parent()?.join("ports.json")]
        .into_iter()
        .find_map(|p| std::fs::read_to_string(p).ok())?;
    let ports: serde_json::Value = serde_json::from_str(&ports).ok()?;
    let port = ports.get("etcd")?.as_u64()?;
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port as u16)).ok()?;
    write!(stream, "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut body = String::new();
    std::io::Read::read_to_string(&mut stream, &mut body).ok()?;
    let metric = |name: &str| {
        body.lines()
            .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<f64>().ok())
    };
    Some(EtcdSizes {
        in_use: metric("etcd_mvcc_db_total_size_in_use_in_bytes")?,
        total: metric("etcd_mvcc_db_total_size_in_bytes")?,
        keys: metric("etcd_debugging_mvcc_keys_total").unwrap_or(0.0),
    })
}

/// Pushes an image of `mib` MiB of files in four layers; returns its digest ref.
fn push_image(addr: &str, mib: usize, kind: Kind) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand::rng();
    let mut args = vec!["append".to_owned()];
    let per_layer = mib.div_ceil(4);
    for layer in 0..4 {
        let path = dir.path().join(format!("layer{layer}.tar"));
        let mut builder = tar::Builder::new(std::fs::File::create(&path).unwrap());
        for file in 0..per_layer {
            let data = match kind {
                Kind::Random => {
                    let mut data = vec![0u8; 1024 * 1024];
                    rng.fill_bytes(&mut data);
                    data
                }
                Kind::Yaml => yaml(&mut rng, 1024 * 1024),
            };
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            builder
                .append_data(
                    &mut header,
                    format!("manifests/layer{layer}/file{file:03}.bin"),
                    &data[..],
                )
                .unwrap();
        }
        builder.into_inner().unwrap().flush().unwrap();
        args.push("-f".to_owned());
        args.push(path.display().to_string());
    }
    args.push("-t".to_owned());
    args.push(format!("{addr}/bench/{kind:?}:v1").to_lowercase());
    let output = Command::new("crane").args(&args).output().unwrap();
    assert!(
        output.status.success(),
        "crane append failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// About `size` bytes of YAML with random values, compressing about 4:1.
fn yaml(rng: &mut impl RngCore, size: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(size + 128);
    let mut n = 0u64;
    while out.len() < size {
        n += 1;
        let value = rng.next_u64();
        let line = match n % 4 {
            0 => format!("- name: field-{n}\n"),
            1 => format!("  type: string\n  description: value {value:016x}\n"),
            2 => format!("  default: \"{:08x}\"\n", value as u32),
            _ => format!(
                "  x-kubernetes-validations: [{{rule: \"self.size() < {}\"}}]\n",
                value % 1000
            ),
        };
        out.extend_from_slice(line.as_bytes());
    }
    out.truncate(size);
    out
}

/// Runs the image unpack once in this (fresh) process and prints "seconds vmhwm_kib";
/// with `store`, also writes the content to the store (timed too) and prints its size
/// and chunk count, then deletes it.
fn child_unpack(reference: &str, mib: u64, store: bool) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let options = UnpackOptions {
        limits: Limits {
            // The files plus room for tar headers and directories.
            max_uncompressed_bytes: (mib + mib / 8 + 16) * 1024 * 1024,
            ..Limits::default()
        },
        ..UnpackOptions::default()
    };
    let source = ImageSource {
        reference: reference.to_owned(),
        ..ImageSource::default()
    };
    let etcd_before = etcd_sizes();
    let started = Instant::now();
    let unpacked = runtime
        .block_on(image::unpack(&source, &options))
        .unwrap_or_else(|err| panic!("{}", content::report(&err)));
    assert!(unpacked.content.size() > 0);
    if !store {
        let seconds = started.elapsed().as_secs_f64();
        println!("{seconds} {}", vm_hwm_kib("self"));
        return;
    }
    runtime.block_on(async {
        let client = kube::Client::try_default().await.unwrap();
        let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> =
            kube::Api::all(client.clone());
        let namespace = serde_json::from_value(serde_json::json!({
            "metadata": {"name": STORE_NAMESPACE}}))
        .unwrap();
        let _ = namespaces
            .create(&kube::api::PostParams::default(), &namespace)
            .await;
        let store = content::Store::new(client, STORE_NAMESPACE);
        let stored = store
            .write(&unpacked.content, "Bench")
            .await
            .unwrap_or_else(|err| panic!("{}", content::report(&err)));
        let seconds = started.elapsed().as_secs_f64();
        let hwm = vm_hwm_kib("self");
        let etcd_after = etcd_sizes();
        // Reading it back verifies every chunk and the digest.
        let read = store.read(&stored.digest).await.unwrap();
        assert_eq!(read.digest(), unpacked.content.digest());
        let etcd = |sizes: Option<EtcdSizes>| match sizes {
            Some(s) => format!("{} {} {}", s.in_use, s.total, s.keys),
            None => "-1 -1 -1".to_owned(),
        };
        println!(
            "{seconds} {hwm} {} {} {} {}",
            stored.size,
            stored.chunks,
            etcd(etcd_before),
            etcd(etcd_after)
        );
        store.delete(&stored.digest).await.unwrap();
    });
}

/// Runs a command `runs` times, sampling its VmHWM every 5 ms until it exits.
fn measure_command(runs: usize, command: impl Fn() -> Command) -> Vec<(f64, u64)> {
    (0..runs)
        .map(|_| {
            let started = Instant::now();
            let mut child = command()
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let pid = child.id().to_string();
            let mut hwm = 0;
            loop {
                hwm = hwm.max(vm_hwm_kib(&pid));
                if let Some(status) = child.try_wait().unwrap() {
                    assert!(status.success(), "command failed");
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            (started.elapsed().as_secs_f64(), hwm)
        })
        .collect()
}

fn vm_hwm_kib(pid: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}
