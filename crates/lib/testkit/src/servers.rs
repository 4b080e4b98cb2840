//! Real servers and fixtures for integration tests: archives (including malicious ones),
//! a `crane` OCI registry and `git daemon` on loopback ports, and a git repository with
//! history. Each server is a child process killed (by its own pid) when dropped.
// Fixtures fail loudly: that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use flate2::Compression;
use flate2::write::GzEncoder;
use tar::{EntryType, Header};

/// A tar with the given regular files (paths are written raw, so `../x` stays `../x`).
pub fn tar(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, data) in files {
        let mut header = Header::new_gnu();
        header.set_entry_type(EntryType::Regular);
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        let gnu = header.as_gnu_mut().unwrap();
        gnu.name[..path.len()].copy_from_slice(path.as_bytes());
        header.set_cksum();
        builder.append(&header, *data).unwrap();
    }
    builder.into_inner().unwrap()
}

/// gzip at the default level.
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(data).unwrap();
    encoder.finish().unwrap()
}

/// A gzip'd tar of one 64 MiB file of zeros: about 64 KiB compressed.
pub fn gzip_bomb() -> Vec<u8> {
    gzip(&tar(&[("bomb", &vec![0u8; 64 * 1024 * 1024])]))
}

/// Where [`free_port`] starts looking.
const FIRST: u16 = 20000;

/// The first port of the kernel's ephemeral range (Linux's default when it cannot be read).
fn ephemeral_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768)
}

/// A free loopback port, closed again for the caller (or a process it starts) to bind.
///
/// Chosen at random below the kernel's ephemeral range, not by binding port 0: port 0 gives
/// a port from that range, which is also where every outgoing connection takes its source
/// port, so one of the many client connections a test run opens could take it before the
/// caller bound it (a controller's admin server failed to bind that way in one `make test`,
/// and hack/process-budgets counted its exit). Below the range only another listener can
/// take it; `Stack` relaunches a component whose bind still fails. From 20000 up, clear of
/// the ports Kubernetes components and `make run` use by default.
pub fn free_port() -> u16 {
    use std::hash::{BuildHasher, RandomState};
    let ephemeral_start = ephemeral_start();
    if ephemeral_start > FIRST {
        let span = u64::from(ephemeral_start - FIRST);
        let random = RandomState::new();
        for attempt in 0..64u32 {
            let offset = u16::try_from(random.hash_one(attempt) % span).unwrap();
            let port = FIRST + offset;
            if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
                return port;
            }
        }
    }
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits until something accepts connections on `addr`.
pub fn wait_for_port(addr: &str, what: &str) {
    let started = Instant::now();
    while std::net::TcpStream::connect(addr).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{what} did not start listening on {addr}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A child process killed (by its own pid) when dropped.
pub struct ChildGuard(pub Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `$2...` in the background; stops it when the test process (`$1`) is gone, or when
/// the watchdog is told to stop (SIGTERM), and exits with it.
///
/// With `OLMV1_PROCESS_STATS` set, it appends one line to that file as the child stops:
/// `<program> peak_rss_kib=<VmHWM> cpu_ticks=<utime+stime> exit=<code or "stopped">`,
/// where "stopped" means the watchdog stopped it (anything else is a crash or an exit of
/// its own). `hack/process-budgets` reads these lines.
const WATCHDOG: &str = r#"
parent=$1; shift
"$@" &
child=$!
record() {
  [[ -n "${OLMV1_PROCESS_STATS:-}" ]] || return 0
  local hwm ticks
  hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$child/status" 2>/dev/null)
  ticks=$(awk '{print $14 + $15}' "/proc/$child/stat" 2>/dev/null)
  echo "$(basename "$1") peak_rss_kib=${hwm:-?} cpu_ticks=${ticks:-?} exit=$2" >> "$OLMV1_PROCESS_STATS"
}
stop() { record "$1" stopped; kill -TERM "$child" 2>/dev/null; wait "$child"; }
trap 'stop "$1"; exit' TERM INT
while kill -0 "$parent" 2>/dev/null && kill -0 "$child" 2>/dev/null; do
  sleep 0.5 & wait $!
done
if kill -0 "$child" 2>/dev/null; then
  stop "$1"
else
  wait "$child"; code=$?
  [[ -n "${OLMV1_PROCESS_STATS:-}" ]] && echo "$(basename "$1") peak_rss_kib=? cpu_ticks=? exit=$code" >> "$OLMV1_PROCESS_STATS"
  exit "$code"
fi
"#;

/// Asks the watchdog to stop its controller (SIGTERM) and waits; kills it after 30 s.
pub fn terminate(watchdog: &mut Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &watchdog.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = watchdog.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = watchdog.kill();
    let _ = watchdog.wait();
}

/// A command that runs `program` under a watchdog: the program is stopped (SIGTERM) when
/// this test process goes away, even if it exits without running destructors (statics).
/// Stop it early with [`terminate`] on the spawned child.
pub fn watched(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut command = Command::new("bash");
    command
        .arg("-c")
        .arg(WATCHDOG)
        .arg("olmv1-watchdog")
        .arg(std::process::id().to_string())
        .arg(program);
    command
}

/// A process under a watchdog, stopped (SIGTERM, then SIGKILL) when dropped.
pub struct WatchedChild(pub Child);

impl Drop for WatchedChild {
    fn drop(&mut self) {
        terminate(&mut self.0);
    }
}

/// `crane registry serve` on a free loopback port.
pub struct CraneRegistry {
    _child: WatchedChild,
    /// `127.0.0.1:<port>`.
    pub addr: String,
}

impl CraneRegistry {
    pub fn start() -> Self {
        let port = free_port();
        let addr = format!("127.0.0.1:{port}");
        // The watchdog (bash) starts even when crane is missing: check first.
        if let Err(err) = Command::new("crane").arg("version").output() {
            panic!(
                "failed to run crane ({err}); crane must be on PATH: \
                 run via `make test`, or add the output of hack/build-tools to PATH"
            );
        }
        let child = watched("crane")
            .args(["registry", "serve", "--address", &addr])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|err| panic!("failed to start `crane registry serve`: {err}"));
        let guard = WatchedChild(child);
        wait_for_port(&addr, "crane registry");
        Self {
            _child: guard,
            addr,
        }
    }

    /// Pushes an image whose layers are the given tars (in order) and returns the
    /// digest reference crane prints.
    pub fn push(&self, repository_and_tag: &str, layers: &[Vec<u8>]) -> String {
        let dir = tempfile::tempdir().unwrap();
        let mut args = vec!["append".to_owned()];
        for (i, layer) in layers.iter().enumerate() {
            let path = dir.path().join(format!("layer{i}.tar"));
            std::fs::write(&path, layer).unwrap();
            args.push("-f".to_owned());
            args.push(path.display().to_string());
        }
        args.push("-t".to_owned());
        args.push(format!("{}/{repository_and_tag}", self.addr));
        let output = Command::new("crane").args(&args).output().unwrap();
        assert!(
            output.status.success(),
            "crane append failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    }
}

/// Runs git with a fixed identity and no user configuration.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .output()
        .unwrap_or_else(|err| panic!("failed to run git (is it installed?): {err}"));
    assert!(
        output.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// A bare repository `<root>/repo.git` with history:
/// - commit 1 on `main`: `manifests/a.yaml` = "v1", `docs/readme.md`; tag `v1` (annotated)
/// - commit 2 on `main`: `manifests/a.yaml` = "v2", `manifests/run.sh` (executable)
/// - branch `feature` from commit 1 adding `manifests/feature.yaml`; lightweight tag `light`
pub struct GitFixture {
    pub root: tempfile::TempDir,
    pub bare: PathBuf,
    pub first: String,
    pub second: String,
    pub feature: String,
}

impl GitFixture {
    pub fn create() -> Self {
        let root = tempfile::tempdir().unwrap();
        let work = root.path().join("work");
        std::fs::create_dir_all(work.join("manifests")).unwrap();
        std::fs::create_dir_all(work.join("docs")).unwrap();
        git(&work, &["init", "-q", "-b", "main"]);
        std::fs::write(work.join("manifests/a.yaml"), "v1").unwrap();
        std::fs::write(work.join("docs/readme.md"), "docs").unwrap();
        git(&work, &["add", "-A"]);
        git(&work, &["commit", "-q", "-m", "first"]);
        let first = git(&work, &["rev-parse", "HEAD"]);
        git(&work, &["tag", "-a", "v1", "-m", "version 1"]);

        git(&work, &["checkout", "-q", "-b", "feature"]);
        std::fs::write(work.join("manifests/feature.yaml"), "feature").unwrap();
        git(&work, &["add", "-A"]);
        git(&work, &["commit", "-q", "-m", "feature"]);
        let feature = git(&work, &["rev-parse", "HEAD"]);
        git(&work, &["tag", "light"]);

        git(&work, &["checkout", "-q", "main"]);
        std::fs::write(work.join("manifests/a.yaml"), "v2").unwrap();
        std::fs::write(work.join("manifests/run.sh"), "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            work.join("manifests/run.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        git(&work, &["add", "-A"]);
        git(&work, &["commit", "-q", "-m", "second"]);
        let second = git(&work, &["rev-parse", "HEAD"]);

        let bare = root.path().join("repo.git");
        git(
            root.path(),
            &[
                "clone",
                "-q",
                "--bare",
                work.to_str().unwrap(),
                bare.to_str().unwrap(),
            ],
        );
        Self {
            root,
            bare,
            first,
            second,
            feature,
        }
    }
}

/// `git daemon` exporting `root` on a free loopback port.
pub struct GitDaemon {
    _child: ChildGuard,
    pub port: u16,
}

impl GitDaemon {
    pub fn start(root: &Path) -> Self {
        let port = free_port();
        // Run git-daemon itself: `git daemon` would start it as a child process that
        // outlives the `git` process this guard kills.
        let exec_path = git(root, &["--exec-path"]);
        let child = Command::new(Path::new(&exec_path).join("git-daemon"))
            .args([
                "--reuseaddr",
                "--export-all",
                "--listen=127.0.0.1",
                &format!("--port={port}"),
                &format!("--base-path={}", root.display()),
                &root.display().to_string(),
            ])
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|err| panic!("failed to start git-daemon: {err}"));
        let guard = ChildGuard(child);
        wait_for_port(&format!("127.0.0.1:{port}"), "git daemon");
        Self {
            _child: guard,
            port,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{FIRST, ephemeral_start, free_port};

    #[test]
    fn free_ports_are_below_the_ephemeral_range_and_can_be_bound() {
        let ephemeral_start = ephemeral_start();
        let ports: Vec<u16> = (0..20).map(|_| free_port()).collect();
        for &port in &ports {
            // A machine whose ephemeral range starts at or below FIRST gets port 0's choice.
            if ephemeral_start > FIRST {
                assert!(
                    (FIRST..ephemeral_start).contains(&port),
                    "{port} is not below {ephemeral_start}"
                );
            }
            std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
        }
        // Chosen at random, not counted up from one place.
        assert!(ports.iter().any(|&p| p != ports[0]), "{ports:?}");
    }
}
