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
    webhook_refusal,
};
use e2e::{TIMEOUT, env};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::{Namespace, Pod, Secret};
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
    PostParams,
};
use kube::{Api, Client, ResourceExt};
use platform_api::PlatformOperator;
use serde_json::json;
use testkit::examples::sample;
use testkit::stack::{Component, Stack};
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
    create_platform_operator(&client, name, sample::MEMCACHED, None).await;
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
    create_platform_operator(&client, name, sample::MEMCACHED, None).await;
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

/// The built-in certificate provider rotates the webhook's CA and serving certificate while
/// the API server keeps calling the webhook: every call in the rotation is answered by the
/// webhook itself. The provisioners run with a 120 s validity (renewal when 40 s are left,
/// and the old CA trusted until it expires), and the kubelet updates Secret volumes within
/// its 10 s sync (hack/clusterctl/node.go), so the pod serves the new certificate before the
/// old CA expires. Calls continue until after that expiry: a pod still serving the old
/// certificate would then fail them.
#[tokio::test]
async fn certificates_rotate_under_live_admission_calls_and_none_fails() {
    const VALIDITY: Duration = Duration::from_secs(120);
    let _serial = SERIAL.lock().await;
    let client = testkit::client().await;
    if !e2e::real_node(&client).await {
        return;
    }
    if env().await.stack().is_none() {
        eprintln!(
            "deployed controllers (E2E_DEPLOYED=1): this test runs its own stack with a short certificate validity, so it runs only with local stacks"
        );
        return;
    }
    let stack = Stack::start_with_env(
        &Component::ALL,
        &[("CERTIFICATE_VALIDITY", &format!("{}s", VALIDITY.as_secs()))],
    )
    .await;
    stack.examples().await;
    let name = "memcached-operator-rotation";
    let po = PlatformOperator {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(serde_json::from_value(stack.labels()).unwrap()),
            ..Default::default()
        },
        spec: serde_json::from_value(json!({ "package": { "name": sample::MEMCACHED } })).unwrap(),
        status: None,
    };
    Api::<PlatformOperator>::all(client.clone())
        .create(&PostParams::default(), &po)
        .await
        .unwrap();
    wait_installed(&client, name).await;
    wait_for("the operator's pod Ready on the real node", TIMEOUT, || {
        operator_pod_ready(&client)
    })
    .await;
    webhook_refusal(&client, "default").await;

    let secrets = Api::<Secret>::namespaced(client.clone(), sample::MEMCACHED_NAMESPACE);
    let secret_name = format!("{}-service-cert", sample::MEMCACHED_DEPLOYMENT);
    let serving = |secret: Secret| {
        secret
            .data
            .and_then(|d| d.get("tls.crt").cloned())
            .map(|b| b.0)
            .unwrap_or_default()
    };
    let first = serving(secrets.get(&secret_name).await.unwrap());
    let api = memcacheds(&client, "default");
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let began = Instant::now();
    let (mut answered, mut failed, mut rotated_at) = (0_u32, Vec::new(), None);
    // Until the old CA has expired (a third of the validity after the rotation) and a while
    // longer; or give up a whole validity after the start, without a rotation.
    loop {
        let elapsed = began.elapsed();
        match rotated_at {
            Some(at) if elapsed > at + VALIDITY / 3 + Duration::from_secs(10) => break,
            None if elapsed > VALIDITY + Duration::from_secs(30) => break,
            _ => {}
        }
        match api.create(&dry_run, &memcached("rotation", -1)).await {
            Err(kube::Error::Api(s)) if s.message.contains("size must be between") => answered += 1,
            other => failed.push(format!("{:.1}s: {other:?}", elapsed.as_secs_f64())),
        }
        if rotated_at.is_none() && serving(secrets.get(&secret_name).await.unwrap()) != first {
            rotated_at = Some(elapsed);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!(
        "certificate rotation under traffic: serving certificate replaced after {:?}; {answered} admission calls answered by the webhook, {} failed",
        rotated_at,
        failed.len()
    );
    assert!(
        rotated_at.is_some(),
        "the serving certificate was not replaced within {VALIDITY:?}"
    );
    assert!(
        failed.is_empty(),
        "admission calls failed during the rotation: {failed:?}"
    );
    assert!(answered > 100, "only {answered} calls were made");
    // The pod took the new certificate from its Secret volume without a restart.
    let pod = operator_pod_ready(&client).await.unwrap();
    let logs = Api::<Pod>::namespaced(client.clone(), sample::MEMCACHED_NAMESPACE)
        .logs(&pod.name_any(), &Default::default())
        .await
        .unwrap();
    assert!(
        logs.contains("serving certificate reloaded"),
        "the operator never reloaded its certificate:\n{logs}"
    );
    uninstall(&client, name).await;
}

/// `Memcached` objects at `version` in `namespace`.
fn memcacheds_at(client: &Client, namespace: &str, version: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("cache.example.com", version, "Memcached");
    Api::namespaced_with(client.clone(), namespace, &ApiResource::from_gvk(&gvk))
}

/// Upgrading 0.1.0 → 0.2.0 adds a second version, `v1beta1` (stored from then on; its
/// `spec.replicas` is v1alpha1's `spec.size`), converted by the operator's conversion
/// webhook: an object 0.1.0 stored at v1alpha1 reads at v1beta1 with its count moved, one
/// written at v1beta1 reads at v1alpha1, and the validating webhook (registered for
/// v1alpha1) still refuses a bad count written at v1beta1, which the API server converts
/// for it.
#[tokio::test]
async fn upgrading_to_a_second_version_converts_objects_through_the_operators_webhook() {
    let _serial = SERIAL.lock().await;
    let client = testkit::client().await;
    if !e2e::real_node(&client).await {
        return;
    }
    env().await;
    let name = "memcached-operator-conversion";
    let namespace = "memcached-conversion";
    create_platform_operator(&client, name, sample::MEMCACHED, Some("<0.2.0")).await;
    wait_installed(&client, name).await;
    wait_for("the 0.1.0 operator Ready", TIMEOUT, || {
        operator_pod_ready(&client)
    })
    .await;
    webhook_refusal(&client, "default").await;
    let _ = Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": namespace}})).unwrap(),
        )
        .await;
    let alpha = memcacheds_at(&client, namespace, "v1alpha1");
    let beta = memcacheds_at(&client, namespace, "v1beta1");
    alpha
        .create(&PostParams::default(), &memcached("stored-by-0-1", 4))
        .await
        .unwrap();

    let began = Instant::now();
    Api::<PlatformOperator>::all(client.clone())
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "package": { "versionRange": ">=0.2.0" } } })),
        )
        .await
        .unwrap();
    wait_for("the 0.2.0 operator Ready", TIMEOUT, || async {
        let pod = operator_pod_ready(&client).await?;
        let image = pod
            .spec
            .and_then(|s| s.containers.first().and_then(|c| c.image.clone()))
            .unwrap_or_default();
        if image.ends_with(":v0.2.0") {
            Ok(())
        } else {
            Err(image)
        }
    })
    .await;
    wait_installed(&client, name).await;
    let upgraded = began.elapsed();

    // Stored by 0.1.0 at v1alpha1, read at v1beta1: converted by the 0.2.0 pod.
    let old = wait_for("the old object at v1beta1", TIMEOUT, || async {
        beta.get("stored-by-0-1").await.map_err(|e| e.to_string())
    })
    .await;
    assert_eq!(old.data["spec"], json!({ "replicas": 4 }), "{:?}", old.data);
    // Written at v1beta1, read at v1alpha1.
    let written: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cache.example.com/v1beta1", "kind": "Memcached",
        "metadata": { "name": "written-at-v1beta1" }, "spec": { "replicas": 2 }
    }))
    .unwrap();
    beta.create(&PostParams::default(), &written).await.unwrap();
    let read = alpha.get("written-at-v1beta1").await.unwrap();
    assert_eq!(read.data["spec"], json!({ "size": 2 }), "{:?}", read.data);
    // The validating webhook sees v1alpha1 whatever version the client writes.
    let refused: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cache.example.com/v1beta1", "kind": "Memcached",
        "metadata": { "name": "minus-one" }, "spec": { "replicas": -1 }
    }))
    .unwrap();
    match beta.create(&PostParams::default(), &refused).await {
        Err(kube::Error::Api(s)) => assert!(
            s.message
                .contains("spec.size must be between 0 and 10, not -1"),
            "{}",
            s.message
        ),
        other => panic!("a v1beta1 object with replicas -1 was not refused: {other:?}"),
    }
    eprintln!(
        "upgrade to the version with a conversion webhook: operator 0.2.0 Ready and Installed {:.1}s after the PlatformOperator's range changed",
        upgraded.as_secs_f64()
    );

    for object in ["stored-by-0-1", "written-at-v1beta1"] {
        beta.delete(object, &DeleteParams::default()).await.unwrap();
    }
    let _ = Api::<Namespace>::all(client.clone())
        .delete(namespace, &DeleteParams::default())
        .await;
    uninstall(&client, name).await;
}
