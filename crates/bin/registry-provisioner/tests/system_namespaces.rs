//! On the real control plane: the namespaceSelector the provisioner gives a webhook that
//! reaches the protected namespaces keeps the API server from calling it there, and the
//! vendor's selector (`webhookNamespaceSelector: as-written`) does not.
//!
//! The `olm-shapes` golden bundle's ConfigMap validator (`failurePolicy: Fail`) is
//! registered as rendered, pointing at a Service with no server, so every call it gets
//! fails and refuses the request: a ConfigMap a dry run may create was not sent to it. An
//! objectSelector on a label unique to the test keeps it away from every other ConfigMap of
//! the shared cluster.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, PostParams};
use registry_provisioner::{Options, SelectorPolicy, conversion, render};
use serde_json::{Value, json};
use testkit::{client, unique_name};

/// The ConfigMap validator of the `olm-shapes` bundle, rendered with `policy`.
fn rendered_validator(policy: SelectorPolicy) -> Value {
    let bundle = testkit::package_path("").join("tests/golden/olm-shapes/bundle");
    let files = render::read_dir(&bundle).unwrap();
    let options = Options {
        protected_namespaces: vec!["rukpak-system".to_owned()],
        webhook_namespace_selector: Some(policy),
        ..Options::default()
    };
    let converted = conversion(
        files.iter().map(|(p, b)| (p.as_str(), b.as_slice())),
        &options,
    )
    .unwrap();
    converted
        .objects
        .iter()
        .map(|o| serde_json::to_value(o).unwrap())
        .find(|o| {
            o["kind"] == "ValidatingWebhookConfiguration"
                && o["metadata"]["name"] == "vconfigmap.telemetry.example.io"
        })
        .unwrap()
}

/// Whether a dry-run create of a labelled ConfigMap in `namespace` is refused by the webhook.
async fn refused_in(client: &kube::Client, namespace: &str, label: &str) -> bool {
    let config_map: ConfigMap = serde_json::from_value(json!({
        "metadata": {"generateName": "probe-", "labels": {"olmv1-test": label}},
        "data": {"k": "v"},
    }))
    .unwrap();
    let params = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    match Api::<ConfigMap>::namespaced(client.clone(), namespace)
        .create(&params, &config_map)
        .await
    {
        Ok(_) => false,
        Err(kube::Error::Api(status)) if status.message.contains("failed calling webhook") => true,
        Err(err) => panic!("unexpected error creating a ConfigMap in {namespace}: {err}"),
    }
}

/// Registers `validator` scoped to `label` and calling a Service with no server in
/// `namespace`; waits until the API server calls it for the test namespace.
async fn register(
    client: &kube::Client,
    mut validator: Value,
    name: &str,
    namespace: &str,
    label: &str,
) {
    validator["metadata"] = json!({"name": name});
    let webhook = &mut validator["webhooks"][0];
    webhook["name"] = json!(format!("{name}.telemetry.example.io"));
    webhook["objectSelector"] = json!({"matchLabels": {"olmv1-test": label}});
    webhook["clientConfig"]["service"]["namespace"] = json!(namespace);
    let configuration: ValidatingWebhookConfiguration = serde_json::from_value(validator).unwrap();
    Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .create(&PostParams::default(), &configuration)
        .await
        .unwrap();
    // The API server picks new webhook configurations up from its informer.
    for _ in 0..100 {
        if refused_in(client, namespace, label).await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("webhook {name} was never called for namespace {namespace}");
}

#[tokio::test]
async fn the_extended_selector_keeps_kube_system_out_of_the_webhooks_reach() {
    let client = client().await;
    let namespace = unique_name("telemetry");
    let namespaces = Api::<Namespace>::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": namespace}})).unwrap(),
        )
        .await
        .unwrap();
    let configurations = Api::<ValidatingWebhookConfiguration>::all(client.clone());

    // Default: the webhook is called in the test namespace but not in kube-system.
    let safe = unique_name("safe");
    register(
        &client,
        rendered_validator(SelectorPolicy::ExcludeProtected),
        &safe,
        &namespace,
        &safe,
    )
    .await;
    let kube_system_refused = refused_in(&client, "kube-system", &safe).await;

    // As written: the same webhook reaches kube-system.
    let vendor = unique_name("vendor");
    register(
        &client,
        rendered_validator(SelectorPolicy::AsWritten),
        &vendor,
        &namespace,
        &vendor,
    )
    .await;
    let vendor_refused = refused_in(&client, "kube-system", &vendor).await;

    for name in [&safe, &vendor] {
        let _ = configurations.delete(name, &DeleteParams::default()).await;
    }
    let _ = namespaces
        .delete(&namespace, &DeleteParams::background())
        .await;
    assert!(
        !kube_system_refused,
        "the provisioner's selector let the webhook intercept a ConfigMap in kube-system"
    );
    assert!(
        vendor_refused,
        "the vendor's selector should reach kube-system (else this test proves nothing)"
    );
}
