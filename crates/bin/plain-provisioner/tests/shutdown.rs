//! A controller exits on SIGTERM even when the API server cannot be reached: it used to
//! wait forever for its first list and ignore the signal.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn sigterm_stops_the_process_even_when_the_api_server_is_unreachable() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    // Port 1 on loopback: connections are refused.
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\", insecure-skip-tls-verify: true}}]\nusers: [{name: u, user: {token: x}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n",
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_plain-provisioner"))
        .args(["run", "--admin-address", "127.0.0.1:0"])
        .env("KUBECONFIG", &kubeconfig)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        child.try_wait().unwrap().is_none(),
        "exited before the signal"
    );
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let signalled = Instant::now();
    let deadline = kit::serve::SHUTDOWN_GRACE + Duration::from_secs(10);
    while signalled.elapsed() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            eprintln!("exited {:?} after SIGTERM: {status}", signalled.elapsed());
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    panic!("still running {deadline:?} after SIGTERM");
}
