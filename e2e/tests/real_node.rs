//! Installs that really run, on the local real node (`hack/cluster up --real-node`): the
//! sample operator's pod started by containerd and the kubelet, Ready by its own probe, and
//! its admission webhook called by the API server with the certificate this system made.
//!
//! "Installed" here means working: the PlatformOperator is Installed, the operator's pod is
//! Ready on the real node, a `Memcached` it reconciles turns `Available`, and one its webhook
//! refuses is refused with the webhook's own message.
//!
//! The real node exists when the host can run containers (`hack/node-runtime`). Without it
//! these tests print why and end; with `OLMV1_REAL_NODE=1` (hack/test-integration sets it
//! when it started a real node) its absence fails them instead.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use e2e::sample_operator::{
    create_platform_operator, memcached, memcacheds, operator_pod_ready, uninstall, wait_installed,
};
use e2e::{TIMEOUT, env};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::ResourceExt;
use kube::api::{DeleteParams, ListParams, PostParams};
use serde_json::json;
use testkit::wait_for;

/// The tests that install the sample operator run one at a time: it is one package, and its
/// host-network pod holds its ports on the node.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test]
async fn a_platform_operator_installs_an_operator_that_runs_reconciles_and_refuses_through_its_webhook()
 {
    let _serial = SERIAL.lock().await;
    let client = testkit::client().await;
    if !e2e::real_node(&client).await {
        return;
    }
    env().await;
    let name = "memcached-operator-live";
    let namespace = "memcached-live";
    let began = Instant::now();
    create_platform_operator(&client, name, None).await;
    wait_installed(&client, name).await;
    let installed = began.elapsed();

    let pod = wait_for("the operator's pod Ready on the real node", TIMEOUT, || {
        operator_pod_ready(&client)
    })
    .await;
    let ready = began.elapsed();
    // Host networking on the real node: the pod's address is the node's, 127.0.0.1.
    assert_eq!(
        pod.status.as_ref().and_then(|s| s.pod_ip.as_deref()),
        Some("127.0.0.1")
    );
    let webhooks = Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .list(&ListParams::default())
        .await
        .unwrap();
    let webhook = webhooks
        .items
        .iter()
        .find(|w| w.name_any().starts_with("vmemcached.cache.example.com"))
        .unwrap_or_else(|| {
            panic!(
                "no webhook configuration registered: {:?}",
                webhooks
                    .items
                    .iter()
                    .map(|w| w.name_any())
                    .collect::<Vec<_>>()
            )
        });
    assert!(
        webhook.webhooks.iter().flatten().all(|w| w
            .client_config
            .ca_bundle
            .as_ref()
            .is_some_and(|ca| !ca.0.is_empty())),
        "every webhook carries the CA of the certificate the pod serves"
    );

    let _ = Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": namespace}})).unwrap(),
        )
        .await;
    let api = memcacheds(&client, namespace);
    // The first admission call may race the webhook's registration reaching the API server's
    // cache; a refusal naming the size rule is what counts, anything else is retried.
    api.create(&PostParams::default(), &memcached("three", 3))
        .await
        .unwrap();
    let available = wait_for("Memcached three Available", TIMEOUT, || async {
        let object = api.get("three").await.map_err(|e| e.to_string())?;
        let conditions = object.data["status"]["conditions"].as_array().cloned();
        match conditions
            .unwrap_or_default()
            .iter()
            .find(|c| c["type"] == "Available")
        {
            Some(c) if c["status"] == "True" => Ok(c["message"].as_str().unwrap_or("").to_owned()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let reconciled = began.elapsed();
    assert!(available.contains("3 instances"), "{available}");

    let refused = wait_for(
        "the webhook to refuse size -1",
        Duration::from_secs(30),
        || async {
            match api
                .create(&PostParams::default(), &memcached("minus-one", -1))
                .await
            {
                Err(kube::Error::Api(status))
                    if status.message.contains("size must be between 0 and 10") =>
                {
                    Ok(status.message)
                }
                Err(err) => Err(format!("refused, but not by the webhook: {err}")),
                Ok(_) => {
                    let _ = api.delete("minus-one", &DeleteParams::default()).await;
                    Err("admitted".to_owned())
                }
            }
        },
    )
    .await;
    assert!(
        refused.contains("vmemcached.cache.example.com"),
        "{refused}"
    );
    eprintln!(
        "install to working operator: PlatformOperator Installed {:.1}s, pod Ready {:.1}s, first Memcached Available {:.1}s",
        installed.as_secs_f64(),
        ready.as_secs_f64(),
        reconciled.as_secs_f64()
    );

    let _ = api.delete("three", &DeleteParams::default()).await;
    let _ = Api::<Namespace>::all(client.clone())
        .delete(namespace, &DeleteParams::default())
        .await;
    uninstall(&client, name).await;
}

/// A bundle whose operator cannot start: its image is on a registry port nothing listens on.
/// The webhook it serves must stay unregistered (a `failurePolicy: Fail` webhook without its
/// server would refuse every Pod), and the status must name the pod and why it is not Ready.
#[tokio::test]
async fn an_operator_that_never_becomes_ready_keeps_its_webhook_back_and_the_status_names_its_pod()
{
    let client = testkit::client().await;
    if !e2e::real_node(&client).await {
        return;
    }
    let Some(stack) = env().await.stack() else {
        eprintln!(
            "deployed controllers (E2E_DEPLOYED=1): this test serves its bundle from a ConfigMap of the local stack, so it runs only with the local stack"
        );
        return;
    };
    let name = testkit::unique_name("never-ready");
    let namespace = name.clone();
    let deployment = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: server\n  namespace: {namespace}\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: server}}\n  template:\n    metadata:\n      labels: {{app: server}}\n    spec:\n      hostNetwork: true\n      containers:\n      - name: server\n        image: 127.0.0.1:1/nowhere/server:v1\n"
    );
    let service = format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: server\n  namespace: {namespace}\nspec:\n  selector: {{app: server}}\n  ports:\n  - port: 443\n    targetPort: 19999\n"
    );
    let webhook = format!(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata:\n  name: {name}\nwebhooks:\n- name: pods.{name}.example.com\n  admissionReviewVersions: [v1]\n  sideEffects: None\n  failurePolicy: Fail\n  clientConfig:\n    service: {{namespace: {namespace}, name: server, path: /validate}}\n  rules:\n  - apiGroups: [\"\"]\n    apiVersions: [v1]\n    operations: [CREATE]\n    resources: [configmaps]\n  namespaceSelector:\n    matchLabels: {{kubernetes.io/metadata.name: {namespace}}}\n"
    );
    let files = [
        ("00-ns.yaml".to_owned(), e2e::namespace_manifest(&namespace)),
        ("01-deployment.yaml".to_owned(), deployment),
        ("02-service.yaml".to_owned(), service),
        ("03-webhook.yaml".to_owned(), webhook),
    ];
    let source = e2e::bundle_config_map(&client, stack, &name, &files).await;
    let bd = e2e::plain_deployment(stack, &name, source);
    let bds: Api<rukpak_api::BundleDeployment> = Api::all(client.clone());
    bds.create(&PostParams::default(), &bd).await.unwrap();

    let message = wait_for(
        "the status to name the pod that cannot start",
        TIMEOUT,
        || async {
            let bd = bds.get(&name).await.map_err(|e| e.to_string())?;
            let messages: Vec<String> = bd
                .status
                .iter()
                .flat_map(|s| s.conditions.iter())
                .map(|c| c.message.clone())
                .collect();
            messages
                .into_iter()
                .find(|m| m.contains("pod server-") && m.contains("container server"))
                .ok_or_else(|| format!("{:?}", bd.status))
        },
    )
    .await;
    assert!(
        message.contains("cannot pull its image 127.0.0.1:1/nowhere/server:v1"),
        "{message}"
    );
    eprintln!("status while the operator cannot start: {message}");
    let registered = Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .get_opt(&name)
        .await
        .unwrap();
    assert!(
        registered.is_none(),
        "the webhook was registered without its server"
    );
    let _ = bds.delete(&name, &DeleteParams::default()).await;
}

/// Uninstalling removes the webhook configuration before the Deployment that serves it: a
/// client that keeps creating `Memcached` objects (dry runs, which the webhook is called for
/// all the same) while the operator goes away sees each call admitted by the webhook, or
/// made with no webhook at all, and never a call to a webhook whose server is gone.
#[tokio::test]
async fn uninstalling_removes_the_webhook_before_its_server_and_no_admission_call_fails() {
    let _serial = SERIAL.lock().await;
    let client = testkit::client().await;
    if !e2e::real_node(&client).await {
        return;
    }
    env().await;
    let name = "memcached-operator-uninstall";
    create_platform_operator(&client, name, None).await;
    wait_installed(&client, name).await;
    wait_for("the operator's pod Ready on the real node", TIMEOUT, || {
        operator_pod_ready(&client)
    })
    .await;
    let api = memcacheds(&client, "default");
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    // The webhook's registration reaches the API server's cache moments after it is written.
    wait_for("the webhook to answer", Duration::from_secs(30), || async {
        match api.create(&dry_run, &memcached("probe", -1)).await {
            Err(kube::Error::Api(s)) if s.message.contains("size must be between") => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;

    let deleting = {
        let client = client.clone();
        tokio::spawn(async move { uninstall(&client, name).await })
    };
    let (mut admitted, mut failed) = (0, Vec::new());
    while !deleting.is_finished() {
        match api
            .create(&dry_run, &memcached("during-uninstall", 3))
            .await
        {
            Ok(_) => admitted += 1,
            // The CRD itself goes at the end (no Memcached holds data): refused as terminating,
            // then not found. The API going away is not an admission call failing.
            Err(kube::Error::Api(s))
                if s.code == 404
                    || (s.code == 403
                        && s.message
                            .contains("custom resource definition is terminating")) => {}
            Err(err) => failed.push(err.to_string()),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    deleting.await.unwrap();
    eprintln!(
        "admission calls during the uninstall: {admitted} admitted, {} failed",
        failed.len()
    );
    assert!(
        admitted > 0,
        "the loop made no call while the operator was being removed"
    );
    assert!(
        failed.is_empty(),
        "admission calls failed during the uninstall: {failed:?}"
    );
}
