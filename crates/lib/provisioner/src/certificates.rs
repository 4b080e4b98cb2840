//! Built-in serving certificates: a CA per BundleDeployment, serving certificates it signs,
//! and its trust bundle injected as `caBundle`, all filled into the objects before they are
//! applied, so a webhook is never registered without the CA that verifies its server.
//!
//! A bundle asks for them with two annotations (the registry+v1 provisioner writes them for
//! webhooks and API services; a plain bundle may use them too):
//! - [`SERVING_CERT_ANNOTATION`] on a Secret (`kubernetes.io/tls`): its value lists the DNS
//!   names, comma-separated; the Secret gets `tls.crt`, `tls.key` and `ca.crt`;
//! - [`INJECT_CA_ANNOTATION`] (`"true"`) on a Validating/MutatingWebhookConfiguration (every
//!   webhook's `clientConfig.caBundle`), a CRD (its conversion webhook's) or an APIService
//!   (`spec.caBundle`).
//!
//! The CA lives in the Secret [`ca_secret_name`] of the install namespace, applied with the
//! bundle (so it leaves with it). Each reconcile: read the CA Secret, the serving Secrets and
//! the live consumers' `caBundle`s as the BundleDeployment's identity → decide (pure, the
//! `certificates` crate: reuse, issue, or rotate with an overlap: a new CA is trusted
//! everywhere before it signs anything) → fill the objects. Nothing is written here; the
//! apply writes the Secrets before the webhook configurations.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};

pub use certificates::Policy;

/// On a Secret: fill it with a serving certificate for these DNS names (comma-separated).
pub const SERVING_CERT_ANNOTATION: &str = "core.rukpak.io/serving-certificate-for";
/// On a webhook configuration, CRD or APIService (`"true"`): inject the CA trust bundle.
pub const INJECT_CA_ANNOTATION: &str = "core.rukpak.io/inject-ca-bundle";
/// The longest Secret name.
const MAX_NAME_LENGTH: usize = 253;

/// A failure to provide certificates.
#[derive(Debug, thiserror::Error)]
pub enum CertificateError {
    /// The bundle asks for something that cannot be done; it will not work until it changes.
    #[error("{0}")]
    Request(String),
    /// Reading a Secret or a live consumer failed.
    #[error("failed to read {what} for its certificates")]
    Read {
        /// What.
        what: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// Issuing a certificate failed.
    #[error("failed to issue certificates: {0}")]
    Issue(String),
}

/// What providing certificates did, for Events and the next reconcile.
#[derive(Debug, Clone, Default)]
pub struct Provisioned {
    /// What changed: the Event reason (one per kind of change, so Events of different
    /// changes are not folded into one series), whether it is a warning, and a sentence.
    pub changes: Vec<(&'static str, bool, String)>,
    /// Reconcile again within this long (a rotation step is due, or waits for one apply).
    pub recheck_after: Option<Duration>,
}

/// The CA Secret of a BundleDeployment.
pub fn ca_secret_name(owner: &str) -> String {
    let suffix = "-webhook-ca";
    let base: String = owner.chars().take(MAX_NAME_LENGTH - suffix.len()).collect();
    format!("{}{suffix}", base.trim_end_matches(['-', '.']))
}

/// Which objects (by index) ask for certificates. Pure.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Requests {
    /// Secrets to fill, with their DNS names.
    pub serving: Vec<(usize, Vec<String>)>,
    /// Objects to inject the trust bundle into.
    pub consumers: Vec<usize>,
}

impl Requests {
    /// Whether nothing asks for certificates.
    pub fn is_empty(&self) -> bool {
        self.serving.is_empty() && self.consumers.is_empty()
    }
}

fn annotation<'a>(object: &'a DynamicObject, key: &str) -> Option<&'a str> {
    object
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

fn kind_of(object: &DynamicObject) -> (&str, &str) {
    object
        .types
        .as_ref()
        .map(|t| (t.api_version.as_str(), t.kind.as_str()))
        .unwrap_or_default()
}

fn describe(object: &DynamicObject) -> String {
    let (_, kind) = kind_of(object);
    let name = object.metadata.name.as_deref().unwrap_or_default();
    match object.metadata.namespace.as_deref() {
        Some(namespace) => format!("{kind} {namespace}/{name}"),
        None => format!("{kind} {name}"),
    }
}

/// Finds the objects that ask for certificates; an annotation on a kind that cannot use it
/// is refused. Pure.
pub fn requests(objects: &[DynamicObject]) -> Result<Requests, String> {
    let mut found = Requests::default();
    for (index, object) in objects.iter().enumerate() {
        if let Some(names) = annotation(object, SERVING_CERT_ANNOTATION) {
            if kind_of(object) != ("v1", "Secret") {
                return Err(format!(
                    "{} has the annotation {SERVING_CERT_ANNOTATION}, which only a Secret may have",
                    describe(object)
                ));
            }
            let names: Vec<String> = names
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(str::to_owned)
                .collect();
            if names.is_empty() {
                return Err(format!(
                    "{} has the annotation {SERVING_CERT_ANNOTATION} without DNS names",
                    describe(object)
                ));
            }
            found.serving.push((index, names));
        }
        if annotation(object, INJECT_CA_ANNOTATION) == Some("true") {
            if consumer_resource(object).is_none() {
                return Err(format!(
                    "{} has the annotation {INJECT_CA_ANNOTATION}, which only webhook \
                     configurations, CustomResourceDefinitions and APIServices may have",
                    describe(object)
                ));
            }
            found.consumers.push(index);
        }
    }
    Ok(found)
}

/// The API resource of a kind that takes a `caBundle`.
fn consumer_resource(object: &DynamicObject) -> Option<ApiResource> {
    let (plural, gvk) = match kind_of(object) {
        ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration") => (
            "validatingwebhookconfigurations",
            GroupVersionKind::gvk(
                "admissionregistration.k8s.io",
                "v1",
                "ValidatingWebhookConfiguration",
            ),
        ),
        ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration") => (
            "mutatingwebhookconfigurations",
            GroupVersionKind::gvk(
                "admissionregistration.k8s.io",
                "v1",
                "MutatingWebhookConfiguration",
            ),
        ),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => (
            "customresourcedefinitions",
            GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        ),
        ("apiregistration.k8s.io/v1", "APIService") => (
            "apiservices",
            GroupVersionKind::gvk("apiregistration.k8s.io", "v1", "APIService"),
        ),
        _ => return None,
    };
    Some(ApiResource::from_gvk_with_plural(&gvk, plural))
}

/// The `caBundle` fields of a consumer of `kind` whose data is `data`: pointers into it.
fn ca_bundle_pointers(kind: &str, data: &Value) -> Vec<String> {
    match kind {
        "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration" => (0..data
            .get("webhooks")
            .and_then(Value::as_array)
            .map_or(0, Vec::len))
            .map(|i| format!("/webhooks/{i}/clientConfig"))
            .collect(),
        "CustomResourceDefinition" => data
            .pointer("/spec/conversion/webhook/clientConfig")
            .map(|_| vec!["/spec/conversion/webhook/clientConfig".to_owned()])
            .unwrap_or_default(),
        "APIService" => vec!["/spec".to_owned()],
        _ => Vec::new(),
    }
}

/// The trust bundles a live consumer of `kind` holds (PEM), one per `caBundle` field;
/// `None` where a field is missing or unreadable. Pure.
pub fn live_bundles(kind: &str, data: &Value) -> Vec<Option<String>> {
    let pointers = ca_bundle_pointers(kind, data);
    if pointers.is_empty() {
        return vec![None];
    }
    pointers
        .iter()
        .map(|pointer| {
            data.pointer(&format!("{pointer}/caBundle"))
                .and_then(Value::as_str)
                .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok())
                .and_then(|bytes| String::from_utf8(bytes).ok())
        })
        .collect()
}

/// Writes the trust bundle into every `caBundle` field of a consumer. Pure.
fn inject(object: &mut DynamicObject, trust_bundle: &str) {
    let encoded = base64::engine::general_purpose::STANDARD.encode(trust_bundle);
    let kind = kind_of(object).1.to_owned();
    for pointer in ca_bundle_pointers(&kind, &object.data) {
        if let Some(Value::Object(map)) = object.data.pointer_mut(&pointer) {
            map.insert("caBundle".to_owned(), Value::String(encoded.clone()));
        }
    }
}

fn encode_data(data: &BTreeMap<String, Vec<u8>>) -> Value {
    Value::Object(
        data.iter()
            .map(|(key, value)| {
                (
                    key.clone(),
                    Value::String(base64::engine::general_purpose::STANDARD.encode(value)),
                )
            })
            .collect(),
    )
}

/// Reads what the decision needs as `client` (the BundleDeployment's identity), decides, and
/// fills `objects`, adding the CA Secret. Does nothing when nothing asks for certificates.
pub async fn provide(
    client: &Client,
    owner: &str,
    install_namespace: Option<&str>,
    objects: &mut Vec<DynamicObject>,
    policy: &Policy,
) -> Result<Provisioned, CertificateError> {
    let wanted = requests(objects).map_err(CertificateError::Request)?;
    if wanted.is_empty() {
        return Ok(Provisioned::default());
    }
    let namespace = install_namespace
        .map(str::to_owned)
        .or_else(|| {
            wanted
                .serving
                .first()
                .and_then(|(index, _)| objects[*index].metadata.namespace.clone())
        })
        .ok_or_else(|| {
            CertificateError::Request(
                "the bundle asks for certificates but has no install namespace to keep its CA in; \
                 set spec.installNamespace"
                    .to_owned(),
            )
        })?;
    let ca_name = ca_secret_name(owner);

    // Read.
    let read_secret = |namespace: String, name: String| async move {
        Api::<Secret>::namespaced(client.clone(), &namespace)
            .get_opt(&name)
            .await
            .map_err(|source| CertificateError::Read {
                what: format!("Secret {namespace}/{name}"),
                source,
            })
    };
    let ca = read_secret(namespace.clone(), ca_name.clone())
        .await?
        .map(|s| kit::secrets::data(&s));
    let mut existing = Vec::new();
    for (index, _) in &wanted.serving {
        let object = &objects[*index];
        let secret_namespace = object
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| namespace.clone());
        let name = object.metadata.name.clone().unwrap_or_default();
        existing.push(
            read_secret(secret_namespace, name)
                .await?
                .map(|s| kit::secrets::data(&s)),
        );
    }
    let mut live = Vec::new();
    for index in &wanted.consumers {
        let object = &objects[*index];
        let Some(resource) = consumer_resource(object) else {
            continue;
        };
        let name = object.metadata.name.clone().unwrap_or_default();
        let found = Api::<DynamicObject>::all_with(client.clone(), &resource)
            .get_opt(&name)
            .await
            .map_err(|source| CertificateError::Read {
                what: describe(object),
                source,
            })?;
        match found {
            Some(found) => live.extend(live_bundles(kind_of(object).1, &found.data)),
            None => live.push(None),
        }
    }

    // Decide.
    let serving_requests: Vec<certificates::ServingRequest<'_>> = wanted
        .serving
        .iter()
        .zip(&existing)
        .map(|((index, names), existing)| certificates::ServingRequest {
            secret_name: objects[*index].metadata.name.as_deref().unwrap_or_default(),
            dns_names: names.clone(),
            existing: existing.as_ref(),
        })
        .collect();
    let now = SystemTime::now();
    let decision = certificates::decide(now, policy, ca.as_ref(), &live, &serving_requests)
        .map_err(|err| CertificateError::Issue(err.to_string()))?;

    // Fill.
    for ((index, _), data) in wanted.serving.iter().zip(&decision.serving) {
        objects[*index].data["data"] = encode_data(data);
    }
    for index in &wanted.consumers {
        inject(&mut objects[*index], &decision.trust_bundle);
    }
    let ca_secret = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": ca_name, "namespace": namespace},
        "data": encode_data(&decision.ca_data),
    });
    let ca_secret: DynamicObject = serde_json::from_value(ca_secret)
        .map_err(|err| CertificateError::Issue(format!("failed to build the CA Secret: {err}")))?;
    objects.push(ca_secret);

    let rotating = decision
        .ca_data
        .contains_key(certificates::NEXT_CA_CERT_KEY);
    let recheck_after = if rotating {
        // The new CA was just added to every trust bundle; the next reconcile after this
        // apply lets it sign.
        Some(Duration::from_secs(5))
    } else {
        decision
            .next_check
            .map(|at| at.duration_since(now).unwrap_or_default())
    };
    Ok(Provisioned {
        changes: decision
            .events
            .iter()
            .map(|event| (event.reason(), event.is_warning(), event.to_string()))
            .collect(),
        recheck_after,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> DynamicObject {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn annotated_secrets_and_consumers_are_found_and_misplaced_annotations_refused() {
        let objects = vec![
            object(
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns",
                "annotations": {SERVING_CERT_ANNOTATION: "svc.ns.svc, svc.ns"}}}),
            ),
            object(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}}),
            ),
            object(
                json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": "v", "annotations": {INJECT_CA_ANNOTATION: "true"}}, "webhooks": []}),
            ),
        ];
        let found = requests(&objects).unwrap();
        assert_eq!(
            found.serving,
            [(0, vec!["svc.ns.svc".to_owned(), "svc.ns".to_owned()])]
        );
        assert_eq!(found.consumers, [2]);

        let misplaced = vec![object(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "ns", "annotations": {INJECT_CA_ANNOTATION: "true"}}}))];
        assert_eq!(
            requests(&misplaced).unwrap_err(),
            "ConfigMap ns/c has the annotation core.rukpak.io/inject-ca-bundle, which only webhook \
             configurations, CustomResourceDefinitions and APIServices may have"
        );
    }

    #[test]
    fn the_trust_bundle_goes_into_every_ca_bundle_field() {
        let mut webhooks = object(json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration", "metadata": {"name": "m"},
            "webhooks": [{"name": "a.example.com", "clientConfig": {"service": {"name": "s"}}},
                         {"name": "b.example.com", "clientConfig": {"service": {"name": "s"}}}]}));
        inject(&mut webhooks, "PEM");
        let encoded = base64::engine::general_purpose::STANDARD.encode("PEM");
        assert_eq!(
            webhooks.data["webhooks"][0]["clientConfig"]["caBundle"],
            encoded.as_str()
        );
        assert_eq!(
            webhooks.data["webhooks"][1]["clientConfig"]["caBundle"],
            encoded.as_str()
        );

        let mut api_service = object(
            json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": "v1.example.com"}, "spec": {"group": "example.com"}}),
        );
        inject(&mut api_service, "PEM");
        assert_eq!(api_service.data["spec"]["caBundle"], encoded.as_str());

        // A CRD without a conversion webhook has nowhere to put it, and gets nothing.
        let mut crd = object(
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"}, "spec": {"group": "example.com"}}),
        );
        inject(&mut crd, "PEM");
        assert_eq!(crd.data["spec"].get("conversion"), None);

        assert_eq!(
            live_bundles("MutatingWebhookConfiguration", &webhooks.data),
            [Some("PEM".to_owned()), Some("PEM".to_owned())]
        );
    }

    #[test]
    fn the_ca_secret_name_fits() {
        assert_eq!(ca_secret_name("memcached"), "memcached-webhook-ca");
        assert_eq!(ca_secret_name(&"a".repeat(300)).len(), MAX_NAME_LENGTH);
    }
}
