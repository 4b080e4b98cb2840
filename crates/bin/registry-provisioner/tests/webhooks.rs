//! A bundle with validating, mutating and conversion webhooks, installed by the
//! registry provisioner on the real control plane with its built-in certificates.
//!
//! Pods do not really run on the simulated nodes, so no webhook is ever called; what is
//! checked is everything that can be without a live call: the `caBundle` of every webhook
//! configuration and of the CRD's conversion verifies the served certificate for the
//! Service's DNS name (with rustls' verifier, as the API server's client would), the CRD's
//! conversion points at the Service, rotation never leaves a moment where it does not, the
//! webhooks are registered only once their Deployment is Available, and uninstalling removes
//! them before the Deployment.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use rukpak_api::BundleDeployment;
use rukpak_api::conditions::TYPE_INSTALLED;
use serde_json::{Value, json};
use testkit::servers::CraneRegistry;
use testkit::stack::{Component, Stack};
use testkit::{client, unique_name, wait_for};
use tokio::sync::OnceCell;

const TIMEOUT: Duration = Duration::from_secs(120);
mod support;

use support::{CLASS, create_deployment, create_deployment_of_class};

/// Short enough that a test sees the CA rotate: renewal starts when a third is left.
const VALIDITY: &str = "90s";

async fn stack() -> &'static Stack {
    static STACK: OnceCell<Stack> = OnceCell::const_new();
    STACK
        .get_or_init(|| async {
            Stack::start_with_env(
                &[Component::RukpakCore, Component::RegistryProvisioner],
                &[("CERTIFICATE_VALIDITY", VALIDITY)],
            )
            .await
        })
        .await
}

/// The `webhooks-builtin` golden bundle with names unique to one test.
struct WebhookBundle {
    group: String,
    namespace: String,
    service: String,
    files: Vec<(String, Vec<u8>)>,
}

impl WebhookBundle {
    fn new() -> Self {
        let id = unique_name("hooks");
        let group = format!("{id}.example.com");
        let files = support::golden_bundle(
            "webhooks-builtin",
            &[("example.com", &group), ("widget-operator", &id)],
        );
        Self {
            namespace: format!("{id}-system"),
            service: format!("{id}-controller-manager-service"),
            group,
            files,
        }
    }

    fn push(&self, registry: &CraneRegistry) -> String {
        support::push_bundle(
            registry,
            &self.files,
            &format!("bundles/{}:v1.4.0", self.namespace),
        )
    }

    fn secret(&self) -> String {
        format!("{}-cert", self.service)
    }

    fn dns_name(&self) -> String {
        format!("{}.{}.svc", self.service, self.namespace)
    }
}

fn api(client: &Client, group: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
    let (group, version) = group.split_once('/').unwrap();
    Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural),
    )
}

fn decode(b64: &Value) -> Option<String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64.as_str()?)
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// Every `caBundle` the cluster holds for the bundle, by where it is.
async fn live_ca_bundles(client: &Client, bundle: &WebhookBundle) -> Vec<(String, Option<String>)> {
    let mut found = Vec::new();
    for (kind, plural, name) in [
        (
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            format!("vwidget.{}", bundle.group),
        ),
        (
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            format!("mwidget.{}", bundle.group),
        ),
    ] {
        let object = api(client, "admissionregistration.k8s.io/v1", kind, plural)
            .get(&name)
            .await
            .unwrap();
        found.push((
            format!("{kind} {name}"),
            decode(&object.data["webhooks"][0]["clientConfig"]["caBundle"]),
        ));
    }
    let crd_name = format!("widgets.{}", bundle.group);
    let crd = api(
        client,
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
    )
    .get(&crd_name)
    .await
    .unwrap();
    found.push((
        format!("CRD {crd_name} conversion"),
        decode(&crd.data["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"]),
    ));
    found
}

async fn serving_certificate(client: &Client, bundle: &WebhookBundle) -> String {
    let secret = Api::<Secret>::namespaced(client.clone(), &bundle.namespace)
        .get(&bundle.secret())
        .await
        .unwrap();
    let data = secret.data.unwrap();
    String::from_utf8(data["tls.crt"].0.clone()).unwrap()
}

/// Checks every live `caBundle` verifies the served certificate for the Service's name.
async fn assert_trusted(client: &Client, bundle: &WebhookBundle) -> String {
    let served = serving_certificate(client, bundle).await;
    for (place, ca_bundle) in live_ca_bundles(client, bundle).await {
        let ca_bundle = ca_bundle.unwrap_or_else(|| panic!("{place} has no caBundle"));
        certificates::verify(&ca_bundle, &served, &bundle.dns_name(), SystemTime::now())
            .unwrap_or_else(|err| {
                panic!("{place}: its caBundle does not verify the served certificate: {err}")
            });
    }
    served
}

async fn wait_installed(client: &Client, stack: &Stack, name: &str) {
    let deployments: Api<BundleDeployment> = Api::all(client.clone());
    let what = format!("{name} Installed");
    let probe = wait_for(&what, TIMEOUT, || async {
        let bd = deployments.get(name).await.map_err(|e| e.to_string())?;
        let conditions = bd.status.map(|s| s.conditions).unwrap_or_default();
        match kit::conditions::find(&conditions, TYPE_INSTALLED) {
            Some(c) if c.status == "True" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });
    if tokio::time::timeout(TIMEOUT + Duration::from_secs(5), probe)
        .await
        .is_err()
    {
        panic!(
            "{name} was not installed; registry-provisioner:\n{}",
            stack.logs(Component::RegistryProvisioner)
        );
    }
}

#[tokio::test]
async fn webhooks_install_with_certificates_that_verify_rotate_without_a_gap_and_leave_first() {
    let stack = stack().await;
    let client = client().await;
    let registry = CraneRegistry::start();
    let bundle = WebhookBundle::new();
    let image = bundle.push(&registry);
    let name = unique_name("hooks");
    let started = Timestamp::now();
    create_deployment(&client, stack, &name, &image, None).await;
    wait_installed(&client, stack, &name).await;

    // The conversion webhook is the Service's, on the path and port of the CSV.
    let crd = api(
        &client,
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
    )
    .get(&format!("widgets.{}", bundle.group))
    .await
    .unwrap();
    assert_eq!(
        crd.data["spec"]["conversion"]["webhook"]["clientConfig"]["service"],
        json!({"name": bundle.service, "namespace": bundle.namespace, "path": "/convert", "port": 443})
    );
    let first = assert_trusted(&client, &bundle).await;

    // Rotation: the CA is renewed when a third of its 90 s is left; watch until the served
    // certificate comes from another CA, checking the trust at every look.
    let ca_secrets = Api::<Secret>::namespaced(client.clone(), &bundle.namespace);
    let ca_secret = provisioner::certificates::ca_secret_name(&name);
    let signing_ca = || async {
        let data = ca_secrets.get(&ca_secret).await.unwrap().data.unwrap();
        data["ca.crt"].0.clone()
    };
    let first_ca = signing_ca().await;
    let mut cas = BTreeSet::from([first_ca.clone()]);
    let mut served = first.clone();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(150);
    while tokio::time::Instant::now() < deadline {
        served = assert_trusted(&client, &bundle).await;
        cas.insert(signing_ca().await);
        if cas.len() >= 2 && served != first {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(
        cas.len() >= 2,
        "the serving certificate was not re-issued by a new CA within 150 s; registry-provisioner:\n{}",
        stack.logs(Component::RegistryProvisioner)
    );
    assert_ne!(served, first);
    // And it stays trusted once the old CA has gone.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_trusted(&client, &bundle).await;

    // Renewals are told as Events on the BundleDeployment.
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::all(client.clone());
    let told: BTreeSet<String> = events
        .list(&kube::api::ListParams::default().fields(&format!("involvedObject.name={name}")))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|e| e.reason)
        .collect();
    for reason in [
        "WebhookCACreated",
        "ServingCertificateIssued",
        "WebhookCARenewalStarted",
        "WebhookCAPromoted",
    ] {
        assert!(told.contains(reason), "no {reason} Event among {told:?}");
    }

    // Uninstalling removes the webhook configurations before the Deployment.
    testkit::delete_and_wait(
        &Api::<BundleDeployment>::all(client.clone()),
        &name,
        TIMEOUT,
    )
    .await;
    let deletes: Vec<testkit::audit::Request> = testkit::audit::requests(started, Timestamp::now())
        .into_iter()
        .filter(|r| r.verb == "delete" && r.user_agent.starts_with("registry-provisioner"))
        .collect();
    let when = |resource: &str| {
        deletes
            .iter()
            .find(|r| r.resource.as_deref() == Some(resource))
            .map(|r| r.at)
            .unwrap_or_else(|| panic!("no delete of {resource}: {deletes:?}"))
    };
    assert!(when("validatingwebhookconfigurations") <= when("deployments"));
    assert!(when("mutatingwebhookconfigurations") <= when("deployments"));
    assert!(when("deployments") <= when("secrets"));
}

#[tokio::test]
async fn a_webhook_bundle_on_a_cluster_without_cert_manager_is_refused_before_anything_is_applied()
{
    let stack = stack().await;
    let client = client().await;
    let registry = CraneRegistry::start();
    let bundle = WebhookBundle::new();
    let image = bundle.push(&registry);
    // A class of its own that asks for cert-manager, which this cluster does not have.
    let class = unique_name("cm-class");
    let provisioner_class: rukpak_api::ProvisionerClass = serde_json::from_value(json!({
        "apiVersion": "core.rukpak.io/v1alpha1",
        "kind": "ProvisionerClass",
        "metadata": {"name": class},
        "spec": {"provisioner": CLASS, "parameters": {"certificateProvider": "cert-manager"}},
    }))
    .unwrap();
    Api::<rukpak_api::ProvisionerClass>::all(client.clone())
        .create(&PostParams::default(), &provisioner_class)
        .await
        .unwrap();
    let name = unique_name("cm");
    create_deployment_of_class(&client, stack, &name, &class, &image, None).await;
    let deployments: Api<BundleDeployment> = Api::all(client.clone());
    let message = wait_for(&format!("{name} to fail"), TIMEOUT, || async {
        let bd = deployments.get(&name).await.map_err(|e| e.to_string())?;
        let conditions = bd.status.map(|s| s.conditions).unwrap_or_default();
        match kit::conditions::find(&conditions, TYPE_INSTALLED) {
            Some(c) if c.status == "False" && c.message.contains("cert-manager.io") => {
                Ok(c.message.clone())
            }
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert!(message.contains("Issuer"), "{message}");
    // Nothing of the bundle was written: no CRD, no namespace content.
    let crd = api(
        &client,
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
    )
    .get_opt(&format!("widgets.{}", bundle.group))
    .await
    .unwrap();
    assert!(
        crd.is_none(),
        "a CRD was applied although the install was refused"
    );
    testkit::delete_and_wait(&deployments, &name, TIMEOUT).await;
    Api::<rukpak_api::ProvisionerClass>::all(client.clone())
        .delete(&class, &DeleteParams::default())
        .await
        .unwrap();
}

#[tokio::test]
async fn webhooks_are_registered_only_once_their_server_is_ready() {
    let stack = stack().await;
    let client = client().await;
    let registry = CraneRegistry::start();
    let bundle = WebhookBundle::new();
    let image = bundle.push(&registry);
    let name = unique_name("gate");
    // The operator's pods may only run on nodes with this label, which none has yet.
    let label = format!("olmv1-test-gate-{name}");
    create_deployment(
        &client,
        stack,
        &name,
        &image,
        Some(json!({"deploymentConfig": {"nodeSelector": {label.clone(): "yes"}}})),
    )
    .await;
    let deployments: Api<BundleDeployment> = Api::all(client.clone());
    let waiting = wait_for(
        &format!("{name} to wait for its webhook server"),
        TIMEOUT,
        || async {
            let bd = deployments.get(&name).await.map_err(|e| e.to_string())?;
            bd.status
                .map(|s| s.conditions)
                .unwrap_or_default()
                .into_iter()
                .find(|c| {
                    c.type_ == rukpak_api::conditions::TYPE_PROGRESSING
                        && c.reason == rukpak_api::conditions::reasons::WAITING_FOR_PROBES
                })
                .map(|c| c.message)
                .ok_or_else(|| "not waiting yet".to_owned())
        },
    )
    .await;
    // The admission phase waits for the Deployment behind the webhooks, named in status.
    assert!(
        waiting.contains("phase 4 of 4 (webhooks and API services) waits for Deployment"),
        "{waiting}"
    );
    // The Deployment is there, its webhooks are not.
    let operator = format!(
        "{}-controller-manager",
        bundle.namespace.trim_end_matches("-system")
    );
    assert!(
        Api::<Deployment>::namespaced(client.clone(), &bundle.namespace)
            .get_opt(&operator)
            .await
            .unwrap()
            .is_some()
    );
    let validating = api(
        &client,
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
    );
    let webhook_name = format!("vwidget.{}", bundle.group);
    assert!(validating.get_opt(&webhook_name).await.unwrap().is_none());

    // A node the pods may run on: the server becomes ready and the webhooks follow.
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(client.clone());
    let node = nodes.list(&Default::default()).await.unwrap().items[0]
        .metadata
        .name
        .clone()
        .unwrap();
    let labelled = |value: Option<&str>| json!({"metadata": {"labels": {label.clone(): value}}});
    nodes
        .patch(
            &node,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(labelled(Some("yes"))),
        )
        .await
        .unwrap();
    wait_installed(&client, stack, &name).await;
    assert!(validating.get_opt(&webhook_name).await.unwrap().is_some());
    assert_trusted(&client, &bundle).await;

    nodes
        .patch(
            &node,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(labelled(None)),
        )
        .await
        .unwrap();
    testkit::delete_and_wait(&deployments, &name, TIMEOUT).await;
    assert!(validating.get_opt(&webhook_name).await.unwrap().is_none());
}
