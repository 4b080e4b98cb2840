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
    for overlay in ["deploy/overlays/kind", "deploy/base"] {
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
        assert!(
            output.status.success(),
            "kubectl apply --dry-run=server -k {overlay}: {}{applied}",
            String::from_utf8_lossy(&output.stderr)
        );
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
