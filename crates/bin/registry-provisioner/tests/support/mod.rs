//! What the registry provisioner's cluster tests share: pushing a bundle image and creating
//! BundleDeployments for a test stack.

#![allow(dead_code, clippy::unwrap_used)]

use kube::Client;
use kube::api::{Api, PostParams};
use rukpak_api::BundleDeployment;
use serde_json::json;
use testkit::servers::CraneRegistry;
use testkit::stack::Stack;

/// The provisioner class of registry+v1 bundles.
pub const CLASS: &str = "core-rukpak-io-registry";

/// The files of the golden case `case`'s bundle with every `(from, to)` replaced in their
/// contents, in order, so tests can give it names of their own (paths are kept).
pub fn golden_bundle(case: &str, replacements: &[(&str, &str)]) -> Vec<(String, Vec<u8>)> {
    let root = testkit::package_path("")
        .join("tests/golden")
        .join(case)
        .join("bundle");
    let replace = |text: String| {
        replacements
            .iter()
            .fold(text, |text, (from, to)| text.replace(from, to))
    };
    registry_provisioner::render::read_dir(&root)
        .unwrap()
        .into_iter()
        .map(|(path, bytes)| {
            let text = replace(String::from_utf8(bytes).unwrap());
            (path, text.into_bytes())
        })
        .collect()
}

/// Pushes `files` as a one-layer image to `repository` (`name:tag`) and returns its
/// reference.
pub fn push_bundle(
    registry: &CraneRegistry,
    files: &[(String, Vec<u8>)],
    repository: &str,
) -> String {
    let files: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_slice()))
        .collect();
    registry.push(repository, &[testkit::servers::tar(&files)]);
    format!("{}/{repository}", registry.addr)
}

/// Creates a BundleDeployment of the registry class for `image`, labelled for the stack on
/// its metadata and its template's.
pub async fn create_deployment(
    client: &Client,
    stack: &Stack,
    name: &str,
    image: &str,
    config: Option<serde_json::Value>,
) -> BundleDeployment {
    create_deployment_of_class(client, stack, name, CLASS, image, config).await
}

/// [`create_deployment`] of the ProvisionerClass `class` (whose provisioner must be the
/// registry provisioner); the template's Bundle is unpacked by the registry class.
pub async fn create_deployment_of_class(
    client: &Client,
    stack: &Stack,
    name: &str,
    class: &str,
    image: &str,
    config: Option<serde_json::Value>,
) -> BundleDeployment {
    let mut spec = json!({
        "provisionerClassName": class,
        "template": {
            "metadata": { "labels": stack.labels() },
            "spec": {
                "provisionerClassName": CLASS,
                "source": { "type": "image", "image": { "ref": image } }
            }
        }
    });
    if let Some(config) = config {
        spec["config"] = config;
    }
    let deployment: BundleDeployment = serde_json::from_value(json!({
        "apiVersion": "core.rukpak.io/v1alpha1",
        "kind": "BundleDeployment",
        "metadata": { "name": name, "labels": stack.labels() },
        "spec": spec,
    }))
    .unwrap();
    Api::<BundleDeployment>::all(client.clone())
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap()
}
