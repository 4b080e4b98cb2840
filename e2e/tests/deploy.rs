//! The kustomize overlays administrators apply are accepted by a real API server.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

#[tokio::test]
async fn the_kind_overlay_and_the_base_pass_a_server_side_dry_run() {
    let client = testkit::client().await;
    // Custom resources (Catalog, ProvisionerClass) need their CRDs, and namespaced objects
    // their namespaces, to exist for a dry run.
    testkit::install_crds(&client).await;
    testkit::apply_dir(&client, "deploy/namespaces").await;
    for overlay in [
        "deploy/overlays/kind",
        "deploy/base",
        "deploy/overlays/local-node",
    ] {
        let output = Command::new("kubectl")
            .args([
                "apply",
                "--server-side",
                "--force-conflicts",
                "--dry-run=server",
                "-k",
            ])
            .arg(testkit::workspace_path(overlay))
            .output()
            .unwrap();
        let applied = String::from_utf8_lossy(&output.stdout);
        let warnings = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "kubectl apply --dry-run=server -k {overlay}: {warnings}{applied}"
        );
        // The namespaces enforce `restricted` (deploy/namespaces): the Pod Security admission
        // warns about each Deployment whose Pods would break it. Only the local node's
        // overlay may, and only by the host networking its loopback-only network needs.
        if overlay.ends_with("local-node") {
            for warning in warnings.lines().filter(|l| l.contains("PodSecurity")) {
                let rest = warning
                    .split_once("\": ")
                    .map_or(warning, |(_, rest)| rest)
                    .replace("host namespaces (hostNetwork=true)", "");
                let rest = rest
                    .split(", ")
                    .filter(|part| !part.trim().is_empty() && !part.starts_with("hostPort ("))
                    .collect::<Vec<_>>();
                assert!(
                    rest.is_empty(),
                    "{overlay} breaks more than host networking: {warning}"
                );
            }
            assert!(
                warnings.contains("hostNetwork=true"),
                "the namespaces no longer warn at `restricted`: {warnings}"
            );
        } else {
            assert!(
                !warnings.contains("PodSecurity"),
                "{overlay} breaks the restricted Pod Security level: {warnings}"
            );
        }
        for object in [
            "deployment.apps/platform-operators serverside-applied (server dry run)",
            "clusterrole.rbac.authorization.k8s.io/olmv1:rukpak-core serverside-applied (server dry run)",
            "networkpolicy.networking.k8s.io/default-deny serverside-applied (server dry run)",
            "networkpolicy.networking.k8s.io/rukpak-core serverside-applied (server dry run)",
            "validatingadmissionpolicy.admissionregistration.k8s.io/bundle-identity.core.rukpak.io serverside-applied (server dry run)",
        ] {
            assert!(
                applied.contains(object),
                "{overlay}: no {object:?} in\n{applied}"
            );
        }
    }
}
