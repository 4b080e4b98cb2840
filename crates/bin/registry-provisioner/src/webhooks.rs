//! Webhooks and API services: what a CSV's `spec.webhookdefinitions` and
//! `spec.apiservicedefinitions.owned` become, and how their serving certificates are made.
//!
//! As OLM does it (and operator-controller after it):
//! - every Deployment that serves a webhook or an API service gets a Service named
//!   `<deployment>-service` (dots become dashes) selecting its pods, with one port per
//!   distinct webhook port (`containerPort`, default 443, to `targetPort`, default the
//!   container port) and port 443 to the container port for an API service;
//! - its serving certificate lives in the Secret `<service>-cert` (keys `tls.crt`,
//!   `tls.key`), mounted into every container of the Deployment at
//!   `/tmp/k8s-webhook-server/serving-certs` (`tls.crt`, `tls.key`, where controller-runtime
//!   looks) and `/apiserver.local.config/certificates` (`apiserver.crt`, `apiserver.key`,
//!   where OLM v0 mounts API service certificates);
//! - a validating or mutating webhook becomes a configuration of one webhook, both named
//!   after its `generateName` without a trailing `-`; outside all-namespaces mode its
//!   `namespaceSelector` is the target namespaces (`kubernetes.io/metadata.name In ...`);
//! - a conversion webhook sets `spec.conversion` of each CRD it names (path `/` unless it
//!   has one);
//! - an owned API service becomes an `APIService` `<version>.<group>` (group priority
//!   2000, version priority 15, as OLM v0).
//!
//! The certificate itself comes from a [`CertProvider`]: built in (the apply engine's CA per
//! BundleDeployment, see `provisioner::certificates`), cert-manager (a self-signed Issuer
//! and a Certificate, `cert-manager.io/inject-ca-from`) or OpenShift's service-ca (the
//! serving-cert annotation on the Service, `inject-cabundle` on the consumers).
//!
//! Refused, naming the CSV field, before anything is applied: a webhook or API service
//! naming a Deployment the CSV does not have, a port out of range, names that are not DNS
//! subdomains or repeat, a conversion webhook for a CRD the bundle does not own (or one CRD
//! served by two), a conversion webhook in a bundle that supports more than the
//! AllNamespaces install mode (a CRD is cluster-wide; OLM refuses it too), and rules that no
//! setting makes safe: rules on every API group, on webhook configurations or on this
//! system's own API groups (a broken webhook there could never be removed by the system that
//! installed it).
//!
//! Made safe rather than refused: an admission webhook whose rules reach the objects the
//! cluster and this system keep in the protected namespaces (pods, ConfigMaps, Secrets,
//! leases, ... in `kube-system`, `kube-node-lease`, the installer's own and those the
//! administrator lists) gets a `namespaceSelector` that also excludes those namespaces
//! (`kubernetes.io/metadata.name NotIn [...]`, added to the vendor's own requirements, nothing
//! else changed), so a webhook whose server is down cannot stop the control plane. Each such
//! change is reported as an adjustment. [`SelectorPolicy::AsWritten`] keeps the vendor's
//! selector exactly, as OLM does.

use std::collections::{BTreeMap, BTreeSet};
use std::str::FromStr;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::bundle::{Bundle, null_as_default};

/// Where the webhook serving certificate is mounted for controller-runtime based servers.
pub const WEBHOOK_CERT_DIR: &str = "/tmp/k8s-webhook-server/serving-certs";
/// Where OLM v0 mounts the serving certificate of an API service.
pub const APISERVICE_CERT_DIR: &str = "/apiserver.local.config/certificates";
/// The label every namespace carries with its own name; target namespaces select on it.
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";
/// The cert-manager annotation that injects a Certificate's CA into a consumer.
pub const CERT_MANAGER_INJECT_ANNOTATION: &str = "cert-manager.io/inject-ca-from";
/// The service-ca annotation that asks for a serving certificate Secret for a Service.
pub const SERVICE_CA_SECRET_ANNOTATION: &str = "service.beta.openshift.io/serving-cert-secret-name";
/// The service-ca annotation that injects the service CA into a consumer.
pub const SERVICE_CA_INJECT_ANNOTATION: &str = "service.beta.openshift.io/inject-cabundle";
/// API groups no webhook of a bundle may intercept: every group, OLM v1's, and this
/// system's own (a failing webhook on them would stop the system from removing it).
pub const FORBIDDEN_RULE_GROUPS: &[&str] = &[
    "*",
    "olm.operatorframework.io",
    "core.rukpak.io",
    "deppy.io",
    "platform.openshift.io",
];
/// Resources of `admissionregistration.k8s.io` no webhook may intercept: a webhook on
/// webhook configurations could keep itself from being removed.
const FORBIDDEN_ADMISSION_RESOURCES: &[&str] = &[
    "*",
    "mutatingwebhookconfigurations",
    "validatingwebhookconfigurations",
];
/// Namespaced resources the cluster and this system keep in protected namespaces (core group
/// unless `group/` says otherwise): a webhook that intercepts them there can stop the
/// control plane or the installer.
const PROTECTED_RESOURCES: &[&str] = &[
    "pods",
    "configmaps",
    "secrets",
    "serviceaccounts",
    "services",
    "endpoints",
    "events",
    "coordination.k8s.io/leases",
    "discovery.k8s.io/endpointslices",
    "apps/deployments",
    "apps/replicasets",
];
/// The namespace every cluster protects; the installer's own are added by its settings.
pub const KUBE_SYSTEM: &str = "kube-system";
/// The namespaces every cluster protects: the control plane's and the nodes' heartbeats
/// (a webhook on leases there with its server down would mark every node unready).
pub const ALWAYS_PROTECTED: &[&str] = &[KUBE_SYSTEM, "kube-node-lease"];
/// The longest object name.
const MAX_NAME_LENGTH: usize = 63;

/// Who makes the serving certificates of webhooks and API services.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CertProvider {
    /// The apply engine: a CA per BundleDeployment kept in a Secret, serving certificates
    /// it signs, `caBundle` filled in before the objects are applied, rotated with an
    /// overlap. Needs nothing else on the cluster.
    #[default]
    BuiltIn,
    /// cert-manager: a self-signed Issuer and a Certificate per Service; cert-manager's CA
    /// injector fills `caBundle`. Needs cert-manager installed.
    CertManager,
    /// OpenShift's service-ca operator: it writes the serving Secret and injects its CA.
    ServiceCa,
}

impl CertProvider {
    /// Every provider's name, as the flag and class parameter spell it.
    pub const NAMES: [&'static str; 3] = ["builtin", "cert-manager", "service-ca"];

    /// The name the flag and the class parameter use.
    pub fn name(self) -> &'static str {
        match self {
            Self::BuiltIn => Self::NAMES[0],
            Self::CertManager => Self::NAMES[1],
            Self::ServiceCa => Self::NAMES[2],
        }
    }
}

impl FromStr for CertProvider {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "builtin" => Ok(Self::BuiltIn),
            "cert-manager" => Ok(Self::CertManager),
            "service-ca" => Ok(Self::ServiceCa),
            other => Err(format!(
                "unknown certificate provider {other:?}; use one of {}",
                Self::NAMES.join(", ")
            )),
        }
    }
}

impl std::fmt::Display for CertProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What happens to an admission webhook whose rules reach the protected namespaces'
/// system objects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SelectorPolicy {
    /// Its `namespaceSelector` also excludes the protected namespaces (the default).
    #[default]
    ExcludeProtected,
    /// Its `namespaceSelector` is exactly the vendor's, as OLM renders it.
    AsWritten,
}

impl SelectorPolicy {
    /// Every policy's name, as the flag, the class parameter and the deployment config spell it.
    pub const NAMES: [&'static str; 2] = ["exclude-protected", "as-written"];

    /// The name the flag, the class parameter and the deployment config use.
    pub fn name(self) -> &'static str {
        match self {
            Self::ExcludeProtected => Self::NAMES[0],
            Self::AsWritten => Self::NAMES[1],
        }
    }
}

impl FromStr for SelectorPolicy {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "exclude-protected" => Ok(Self::ExcludeProtected),
            "as-written" => Ok(Self::AsWritten),
            other => Err(format!(
                "unknown webhook namespace selector policy {other:?}; use one of {}",
                Self::NAMES.join(", ")
            )),
        }
    }
}

impl std::fmt::Display for SelectorPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The kind of a webhook definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum WebhookType {
    /// `ValidatingAdmissionWebhook`.
    Validating,
    /// `MutatingAdmissionWebhook`.
    Mutating,
    /// `ConversionWebhook`.
    Conversion,
}

impl WebhookType {
    fn parse(name: &str) -> Option<Self> {
        match name {
            "ValidatingAdmissionWebhook" => Some(Self::Validating),
            "MutatingAdmissionWebhook" => Some(Self::Mutating),
            "ConversionWebhook" => Some(Self::Conversion),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Validating => "ValidatingAdmissionWebhook",
            Self::Mutating => "MutatingAdmissionWebhook",
            Self::Conversion => "ConversionWebhook",
        }
    }
}

/// One entry of `spec.webhookdefinitions`, as OLM's `WebhookDescription`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawWebhook {
    #[serde(rename = "type", default, deserialize_with = "null_as_default")]
    kind: String,
    #[serde(default, deserialize_with = "null_as_default")]
    generate_name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    deployment_name: String,
    #[serde(default)]
    container_port: Option<i64>,
    #[serde(default)]
    target_port: Option<Value>,
    #[serde(default)]
    webhook_path: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    rules: Vec<Rule>,
    #[serde(default)]
    failure_policy: Option<String>,
    #[serde(default)]
    match_policy: Option<String>,
    #[serde(default)]
    object_selector: Option<Value>,
    #[serde(default)]
    namespace_selector: Option<Value>,
    #[serde(default)]
    side_effects: Option<String>,
    #[serde(default)]
    timeout_seconds: Option<i64>,
    #[serde(default, deserialize_with = "null_as_default")]
    admission_review_versions: Vec<String>,
    #[serde(default)]
    reinvocation_policy: Option<String>,
    #[serde(
        rename = "conversionCRDs",
        default,
        deserialize_with = "null_as_default"
    )]
    conversion_crds: Vec<String>,
}

/// A rule of an admission webhook: the fields checked, the rest kept as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    #[serde(default, deserialize_with = "null_as_default")]
    api_groups: Vec<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    resources: Vec<String>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

impl Rule {
    fn to_value(&self) -> Value {
        let mut map = self.rest.clone();
        map.insert("apiGroups".to_owned(), json!(self.api_groups));
        map.insert("resources".to_owned(), json!(self.resources));
        if let Some(scope) = &self.scope {
            map.insert("scope".to_owned(), json!(scope));
        }
        Value::Object(map)
    }

    /// Whether this rule matches `resource` of `group` in a namespace.
    fn intercepts(&self, group: &str, resource: &str) -> bool {
        let group_matches = self.api_groups.iter().any(|g| g == "*" || g == group);
        let resource_matches = self.resources.iter().any(|r| {
            let base = r.split('/').next().unwrap_or_default();
            r == "*" || r == "*/*" || base == resource || base == "*"
        });
        let namespaced = self.scope.as_deref().is_none_or(|s| s != "Cluster");
        group_matches && resource_matches && namespaced
    }
}

/// A checked webhook definition.
#[derive(Debug, Clone)]
struct Webhook {
    field: String,
    kind: WebhookType,
    name: String,
    deployment: String,
    port: i64,
    target_port: Value,
    raw: RawWebhook,
}

/// One entry of `spec.apiservicedefinitions.owned`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawApiService {
    #[serde(default, deserialize_with = "null_as_default")]
    group: String,
    #[serde(default, deserialize_with = "null_as_default")]
    version: String,
    #[serde(default, deserialize_with = "null_as_default")]
    deployment_name: String,
    #[serde(default)]
    container_port: Option<i64>,
}

/// A checked owned API service.
#[derive(Debug, Clone)]
struct ApiService {
    group: String,
    version: String,
    deployment: String,
    port: i64,
}

/// How the administrator has webhooks rendered: the certificate provider and what the
/// webhooks are kept out of.
#[derive(Debug, Clone, Copy)]
pub struct Settings<'a> {
    /// Who makes the serving certificates.
    pub provider: CertProvider,
    /// Namespaces no webhook may intercept the system's objects in, besides
    /// [`ALWAYS_PROTECTED`].
    pub protected_namespaces: &'a [String],
    /// Whether webhooks reaching the protected namespaces are kept out of them.
    pub selector_policy: SelectorPolicy,
}

/// How webhooks are rendered: the namespaces, targets and certificate provider.
#[derive(Debug, Clone)]
pub struct Context<'a> {
    /// The install namespace.
    pub install_namespace: &'a str,
    /// The target namespaces; `[""]` for all namespaces.
    pub targets: &'a [String],
    /// Who makes the serving certificates.
    pub provider: CertProvider,
    /// Namespaces no webhook may intercept the system's objects in, besides
    /// [`ALWAYS_PROTECTED`].
    pub protected_namespaces: &'a [String],
    /// Whether webhooks reaching the protected namespaces are kept out of them.
    pub selector_policy: SelectorPolicy,
}

/// What the webhooks and API services of a bundle add to its objects.
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    /// Services, certificate objects (Secrets, Issuers, Certificates), webhook
    /// configurations and APIServices, in that order.
    pub objects: Vec<Value>,
    /// `spec.conversion` for each CRD (by name) served by a conversion webhook, and the
    /// annotations its provider needs on it.
    pub conversions: BTreeMap<String, (Value, BTreeMap<String, String>)>,
    /// The serving certificate Secret to mount, per Deployment name.
    pub cert_secrets: BTreeMap<String, String>,
    /// What was changed from the vendor's definitions to install safely, as sentences.
    pub adjustments: Vec<String>,
}

/// Reads and checks the bundle's webhooks and owned API services and renders their objects.
/// A bundle with neither renders nothing.
pub fn render(bundle: &Bundle, ctx: &Context<'_>) -> Result<Rendered, String> {
    let webhooks = read_webhooks(bundle)?;
    let api_services = read_api_services(bundle)?;
    if webhooks.is_empty() && api_services.is_empty() {
        return Ok(Rendered::default());
    }
    check_conversions(bundle, &webhooks)?;
    for webhook in &webhooks {
        check_rules(webhook)?;
    }

    let mut rendered = Rendered::default();
    let namespace = ctx.install_namespace;
    // Each Deployment's Service ports, from its webhooks and API services.
    let mut ports: BTreeMap<&str, BTreeMap<i64, (Value, String)>> = BTreeMap::new();
    for webhook in &webhooks {
        add_port(
            &mut ports,
            &webhook.deployment,
            webhook.port,
            webhook.target_port.clone(),
            &webhook.field,
        )?;
    }
    for (index, service) in api_services.iter().enumerate() {
        add_port(
            &mut ports,
            &service.deployment,
            443,
            json!(service.port),
            &format!("spec.apiservicedefinitions.owned[{index}]"),
        )?;
    }

    let mut services = Vec::new();
    let mut certificates = Vec::new();
    for deployment in &bundle.csv.spec.install.spec.deployments {
        let Some(deployment_ports) = ports.get(deployment.name.as_str()) else {
            continue;
        };
        let service = service_name(&deployment.name);
        let secret = cert_secret_name(&service);
        let selector = deployment
            .spec
            .pointer("/selector/matchLabels")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let mut object = json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": service, "namespace": namespace},
            "spec": {
                "selector": selector,
                "ports": deployment_ports.iter().map(|(port, (target, _))| json!({
                    "name": port.to_string(),
                    "port": port,
                    "targetPort": target,
                })).collect::<Vec<_>>(),
            },
        });
        if ctx.provider == CertProvider::ServiceCa {
            object["metadata"]["annotations"] = json!({SERVICE_CA_SECRET_ANNOTATION: secret});
        }
        services.push(object);
        certificates.extend(certificate_objects(
            ctx.provider,
            &service,
            &secret,
            namespace,
        ));
        rendered
            .cert_secrets
            .insert(deployment.name.clone(), secret);
    }
    rendered.objects.extend(services);
    rendered.objects.extend(certificates);

    let annotations = |deployment: &str| {
        let service = service_name(deployment);
        inject_annotations(ctx.provider, namespace, &cert_secret_name(&service))
    };
    for webhook in &webhooks {
        let service = service_name(&webhook.deployment);
        let client_config = |path: Option<&str>| {
            let mut reference =
                json!({"namespace": namespace, "name": service, "port": webhook.port});
            if let Some(path) = path {
                reference["path"] = json!(path);
            }
            json!({"service": reference})
        };
        match webhook.kind {
            WebhookType::Conversion => {
                let conversion = json!({
                    "strategy": "Webhook",
                    "webhook": {
                        "clientConfig": client_config(Some(webhook.raw.webhook_path.as_deref().unwrap_or("/"))),
                        "conversionReviewVersions": webhook.raw.admission_review_versions,
                    },
                });
                for crd in &webhook.raw.conversion_crds {
                    rendered.conversions.insert(
                        crd.clone(),
                        (conversion.clone(), annotations(&webhook.deployment)),
                    );
                }
            }
            WebhookType::Validating | WebhookType::Mutating => {
                let raw = &webhook.raw;
                let mut selector = namespace_selector(ctx.targets, raw);
                if let Some((safer, adjustment)) = protect(webhook, selector.as_ref(), ctx) {
                    selector = Some(safer);
                    rendered.adjustments.push(adjustment);
                }
                let mut entry = json!({
                    "name": webhook.name,
                    "clientConfig": client_config(raw.webhook_path.as_deref()),
                    "rules": raw.rules.iter().map(Rule::to_value).collect::<Vec<_>>(),
                    "sideEffects": raw.side_effects,
                    "admissionReviewVersions": raw.admission_review_versions,
                });
                let optional = [
                    (
                        "failurePolicy",
                        raw.failure_policy.as_ref().map(|v| json!(v)),
                    ),
                    ("matchPolicy", raw.match_policy.as_ref().map(|v| json!(v))),
                    ("objectSelector", raw.object_selector.clone()),
                    ("timeoutSeconds", raw.timeout_seconds.map(|v| json!(v))),
                    ("namespaceSelector", selector),
                ];
                for (key, value) in optional {
                    if let Some(value) = value.filter(|v| !v.is_null()) {
                        entry[key] = value;
                    }
                }
                let kind = if webhook.kind == WebhookType::Mutating {
                    if let Some(policy) = &raw.reinvocation_policy {
                        entry["reinvocationPolicy"] = json!(policy);
                    }
                    "MutatingWebhookConfiguration"
                } else {
                    "ValidatingWebhookConfiguration"
                };
                rendered.objects.push(json!({
                    "apiVersion": "admissionregistration.k8s.io/v1",
                    "kind": kind,
                    "metadata": {"name": webhook.name, "annotations": annotations(&webhook.deployment)},
                    "webhooks": [entry],
                }));
            }
        }
    }
    for service in &api_services {
        rendered.objects.push(json!({
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {
                "name": format!("{}.{}", service.version, service.group),
                "annotations": annotations(&service.deployment),
            },
            "spec": {
                "group": service.group,
                "version": service.version,
                "groupPriorityMinimum": 2000,
                "versionPriority": 15,
                "service": {"namespace": namespace, "name": service_name(&service.deployment), "port": 443},
            },
        }));
    }
    Ok(rendered)
}

/// The webhook Service of a Deployment, as OLM names it.
pub fn service_name(deployment: &str) -> String {
    name_with_suffix(&deployment.replace('.', "-"), "service")
}

/// The serving certificate Secret of a webhook Service, as OLM names it.
pub fn cert_secret_name(service: &str) -> String {
    name_with_suffix(service, "cert")
}

/// `<base>-<suffix>`, `base` cut so the whole fits in 63 characters.
fn name_with_suffix(base: &str, suffix: &str) -> String {
    let room = MAX_NAME_LENGTH.saturating_sub(suffix.len() + 1);
    let base: String = base.chars().take(room).collect();
    format!("{}-{suffix}", base.trim_end_matches(['-', '.']))
}

/// The DNS names a Service is reached by, which its serving certificate must hold (the API
/// server calls `<service>.<namespace>.svc`).
pub fn service_dns_names(service: &str, namespace: &str) -> Vec<String> {
    vec![
        format!("{service}.{namespace}.svc"),
        format!("{service}.{namespace}"),
        format!("{service}.{namespace}.svc.cluster.local"),
    ]
}

/// The annotations a consumer of the CA (webhook configuration, CRD, APIService) gets.
fn inject_annotations(
    provider: CertProvider,
    namespace: &str,
    secret: &str,
) -> BTreeMap<String, String> {
    let (key, value) = match provider {
        CertProvider::BuiltIn => (
            provisioner::certificates::INJECT_CA_ANNOTATION,
            "true".to_owned(),
        ),
        CertProvider::CertManager => (
            CERT_MANAGER_INJECT_ANNOTATION,
            format!("{namespace}/{secret}"),
        ),
        CertProvider::ServiceCa => (SERVICE_CA_INJECT_ANNOTATION, "true".to_owned()),
    };
    BTreeMap::from([(key.to_owned(), value)])
}

/// The objects a provider needs for the serving certificate of `service`.
fn certificate_objects(
    provider: CertProvider,
    service: &str,
    secret: &str,
    namespace: &str,
) -> Vec<Value> {
    let dns_names = service_dns_names(service, namespace);
    match provider {
        // An empty TLS Secret the apply engine fills with a certificate of its CA for
        // these names before anything is applied.
        CertProvider::BuiltIn => vec![json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/tls",
            "metadata": {
                "name": secret,
                "namespace": namespace,
                "annotations": {
                    provisioner::certificates::SERVING_CERT_ANNOTATION: dns_names.join(","),
                },
            },
            "data": {"tls.crt": "", "tls.key": ""},
        })],
        // As operator-controller (and OLM v0's lifetimes): self-signed, two years,
        // renewed a day before expiry.
        CertProvider::CertManager => {
            let issuer = name_with_suffix(secret, "selfsigned-issuer");
            vec![
                json!({
                    "apiVersion": "cert-manager.io/v1",
                    "kind": "Issuer",
                    "metadata": {"name": issuer, "namespace": namespace},
                    "spec": {"selfSigned": {}},
                }),
                json!({
                    "apiVersion": "cert-manager.io/v1",
                    "kind": "Certificate",
                    "metadata": {"name": secret, "namespace": namespace},
                    "spec": {
                        "secretName": secret,
                        "commonName": format!("{service}.{namespace}"),
                        "dnsNames": dns_names,
                        "usages": ["server auth"],
                        "isCA": false,
                        "duration": "17520h0m0s",
                        "renewBefore": "24h0m0s",
                        "issuerRef": {"name": issuer},
                    },
                }),
            ]
        }
        // service-ca writes the Secret itself, asked by the Service's annotation.
        CertProvider::ServiceCa => Vec::new(),
    }
}

/// The namespace selector of an admission webhook: the target namespaces, or in
/// all-namespaces mode the CSV's own selector.
fn namespace_selector(targets: &[String], raw: &RawWebhook) -> Option<Value> {
    if targets.iter().any(String::is_empty) {
        return raw.namespace_selector.clone();
    }
    Some(json!({"matchExpressions": [{
        "key": NAMESPACE_NAME_LABEL,
        "operator": "In",
        "values": targets,
    }]}))
}

/// Adds `port` → `target` to the Service of `deployment`; the same port with another target
/// is refused (a Service cannot send one port to two places).
fn add_port<'a>(
    ports: &mut BTreeMap<&'a str, BTreeMap<i64, (Value, String)>>,
    deployment: &'a str,
    port: i64,
    target: Value,
    field: &str,
) -> Result<(), String> {
    let entry = ports.entry(deployment).or_default();
    match entry.get(&port) {
        Some((existing, first)) if *existing != target => Err(format!(
            "{field} and {first} both use port {port} of the Service of Deployment {deployment:?} \
             with different target ports ({target} and {existing}); give them different \
             containerPorts"
        )),
        Some(_) => Ok(()),
        None => {
            entry.insert(port, (target, field.to_owned()));
            Ok(())
        }
    }
}

fn deployment_names(bundle: &Bundle) -> BTreeSet<&str> {
    bundle
        .csv
        .spec
        .install
        .spec
        .deployments
        .iter()
        .map(|d| d.name.as_str())
        .collect()
}

/// The Service's `targetPort` for a webhook definition's `targetPort` and port: absent, null
/// or 0 mean the port itself, as Kubernetes and OLM read an unset or zero target port.
fn target_port(raw: Option<&Value>, port: i64, field: &str) -> Result<Value, String> {
    match raw {
        None | Some(Value::Null) => Ok(json!(port)),
        Some(Value::Number(n)) if n.as_i64() == Some(0) => Ok(json!(port)),
        Some(Value::Number(n)) if n.as_i64().is_some_and(|p| (1..=65535).contains(&p)) => {
            Ok(json!(n))
        }
        Some(Value::String(name)) if port_name(name) => Ok(json!(name)),
        Some(other) => Err(format!(
            "{field}.targetPort {other} is neither a port number (1-65535) nor a port \
             name (at most 15 lowercase letters, digits and dashes)"
        )),
    }
}

/// Reads and checks every webhook definition on its own.
fn read_webhooks(bundle: &Bundle) -> Result<Vec<Webhook>, String> {
    let deployments = deployment_names(bundle);
    let mut webhooks: Vec<Webhook> = Vec::new();
    for (index, value) in bundle.csv.spec.webhookdefinitions.iter().enumerate() {
        let field = format!("spec.webhookdefinitions[{index}]");
        let raw: RawWebhook = serde_json::from_value(value.clone())
            .map_err(|err| format!("{field} is not a valid webhook definition: {err}"))?;
        let kind = WebhookType::parse(&raw.kind).ok_or_else(|| {
            format!(
                "{field}.type {:?} is not one of ValidatingAdmissionWebhook, \
                 MutatingAdmissionWebhook, ConversionWebhook",
                raw.kind
            )
        })?;
        let name = raw.generate_name.trim_end_matches('-').to_owned();
        if let Err(why) = dns_subdomain(&name) {
            return Err(format!(
                "{field}.generateName {:?} is not a valid name: {why}",
                raw.generate_name
            ));
        }
        if kind != WebhookType::Conversion && name.split('.').count() < 3 {
            return Err(format!(
                "{field}.generateName {:?} must be a fully qualified name of at least three \
                 dot-separated parts (such as vwidget.example.com), as the API server requires \
                 of webhook names",
                raw.generate_name
            ));
        }
        if let Some(first) = webhooks.iter().find(|w| w.kind == kind && w.name == name) {
            return Err(format!(
                "{field}.generateName {:?} repeats {}.generateName: webhooks of type {} must \
                 have distinct names",
                raw.generate_name,
                first.field,
                kind.name()
            ));
        }
        if !deployments.contains(raw.deployment_name.as_str()) {
            return Err(format!(
                "{field}.deploymentName {:?} names no Deployment of \
                 spec.install.spec.deployments (it has: {})",
                raw.deployment_name,
                deployments.iter().copied().collect::<Vec<_>>().join(", ")
            ));
        }
        let port = raw.container_port.unwrap_or(443);
        if !(1..=65535).contains(&port) {
            return Err(format!(
                "{field}.containerPort {port} is out of range (1-65535)"
            ));
        }
        let target_port = target_port(raw.target_port.as_ref(), port, &field)?;
        if kind != WebhookType::Conversion {
            match raw.side_effects.as_deref() {
                Some("None" | "NoneOnDryRun") => {}
                other => {
                    return Err(format!(
                        "{field}.sideEffects must be None or NoneOnDryRun (the API server \
                         refuses others), found {}",
                        other.map_or_else(|| "nothing".to_owned(), |v| format!("{v:?}"))
                    ));
                }
            }
        }
        if raw.admission_review_versions.is_empty() {
            return Err(format!(
                "{field}.admissionReviewVersions is empty; list the versions the server \
                 understands (such as v1)"
            ));
        }
        webhooks.push(Webhook {
            field,
            kind,
            name,
            deployment: raw.deployment_name.clone(),
            port,
            target_port,
            raw,
        });
    }
    Ok(webhooks)
}

/// Reads and checks every owned API service.
fn read_api_services(bundle: &Bundle) -> Result<Vec<ApiService>, String> {
    let deployments = deployment_names(bundle);
    let mut services: Vec<ApiService> = Vec::new();
    for (index, value) in bundle
        .csv
        .spec
        .apiservicedefinitions
        .owned
        .iter()
        .enumerate()
    {
        let field = format!("spec.apiservicedefinitions.owned[{index}]");
        let raw: RawApiService = serde_json::from_value(value.clone())
            .map_err(|err| format!("{field} is not a valid API service definition: {err}"))?;
        if let Err(why) = dns_subdomain(&raw.group) {
            return Err(format!("{field}.group {:?} is not valid: {why}", raw.group));
        }
        if raw.version.is_empty()
            || !raw
                .version
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        {
            return Err(format!(
                "{field}.version {:?} must be a non-empty version of lowercase letters and \
                 digits (such as v1alpha1)",
                raw.version
            ));
        }
        if !deployments.contains(raw.deployment_name.as_str()) {
            return Err(format!(
                "{field}.deploymentName {:?} names no Deployment of spec.install.spec.deployments",
                raw.deployment_name
            ));
        }
        let port = raw.container_port.unwrap_or(443);
        if !(1..=65535).contains(&port) {
            return Err(format!(
                "{field}.containerPort {port} is out of range (1-65535)"
            ));
        }
        if services
            .iter()
            .any(|s| s.group == raw.group && s.version == raw.version)
        {
            return Err(format!(
                "{field} repeats API service {}.{}",
                raw.version, raw.group
            ));
        }
        services.push(ApiService {
            group: raw.group,
            version: raw.version,
            deployment: raw.deployment_name,
            port,
        });
    }
    Ok(services)
}

/// Conversion webhooks: only for CRDs the bundle owns and ships, one webhook per CRD, and
/// only in bundles that install for all namespaces only (the CRD itself is checked once
/// converted to v1, in [`crate::objects`]).
fn check_conversions(bundle: &Bundle, webhooks: &[Webhook]) -> Result<(), String> {
    let conversions: Vec<&Webhook> = webhooks
        .iter()
        .filter(|w| w.kind == WebhookType::Conversion)
        .collect();
    if conversions.is_empty() {
        return Ok(());
    }
    let supported: Vec<&str> = bundle
        .csv
        .spec
        .install_modes
        .iter()
        .filter(|m| m.supported)
        .map(|m| m.mode.as_str())
        .collect();
    if supported != ["AllNamespaces"] {
        return Err(format!(
            "{} is a conversion webhook, but the CSV supports the install modes [{}]: a \
             conversion webhook serves a cluster-wide CRD, so the bundle must support \
             AllNamespaces and no other mode (as OLM requires)",
            conversions[0].field,
            supported.join(", ")
        ));
    }
    let owned: BTreeSet<&str> = bundle
        .csv
        .spec
        .customresourcedefinitions
        .owned
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    let shipped: BTreeSet<&str> = bundle
        .others
        .iter()
        .filter(|(_, o)| {
            o.types
                .as_ref()
                .is_some_and(|t| t.kind == crate::bundle::CRD_KIND)
        })
        .filter_map(|(_, o)| o.metadata.name.as_deref())
        .collect();
    let mut served: BTreeMap<&str, &str> = BTreeMap::new();
    for webhook in conversions {
        if webhook.raw.conversion_crds.is_empty() {
            return Err(format!(
                "{}.conversionCRDs is empty; a conversion webhook must name the CRDs it converts",
                webhook.field
            ));
        }
        for crd in &webhook.raw.conversion_crds {
            if !owned.contains(crd.as_str()) {
                return Err(format!(
                    "{}.conversionCRDs names CRD {crd:?}, which is not in \
                     spec.customresourcedefinitions.owned: a bundle may only convert its own CRDs",
                    webhook.field
                ));
            }
            if !shipped.contains(crd.as_str()) {
                return Err(format!(
                    "{}.conversionCRDs names CRD {crd:?}, which the bundle's manifests do not contain",
                    webhook.field
                ));
            }
            if let Some(first) = served.insert(crd.as_str(), webhook.field.as_str()) {
                return Err(format!(
                    "CRD {crd:?} is converted by both {first} and {}; one webhook per CRD",
                    webhook.field
                ));
            }
        }
    }
    Ok(())
}

/// Refuses rules that no setting makes safe: a failing webhook on them could stop the
/// cluster or this system from working or from removing the webhook (see the module docs).
fn check_rules(webhook: &Webhook) -> Result<(), String> {
    if webhook.kind == WebhookType::Conversion {
        return Ok(());
    }
    let way_out = "no setting of this installer makes such a webhook safe; ask the operator's \
                   vendor for a bundle whose webhook lists the API groups and resources it needs";
    for (index, rule) in webhook.raw.rules.iter().enumerate() {
        let field = format!("{}.rules[{index}]", webhook.field);
        for group in &rule.api_groups {
            if FORBIDDEN_RULE_GROUPS.contains(&group.as_str()) {
                return Err(format!(
                    "{field} intercepts API group {group:?}; webhooks may not intercept every API \
                     group or the installer's own groups ({}), which a failing webhook would \
                     lock: {way_out}",
                    FORBIDDEN_RULE_GROUPS[1..].join(", ")
                ));
            }
            if group == "admissionregistration.k8s.io"
                && let Some(resource) = rule.resources.iter().find(|r| {
                    FORBIDDEN_ADMISSION_RESOURCES.contains(&r.to_ascii_lowercase().as_str())
                })
            {
                return Err(format!(
                    "{field} intercepts {resource:?} of admissionregistration.k8s.io; a webhook \
                     on webhook configurations could keep itself from being removed: {way_out}"
                ));
            }
        }
    }
    Ok(())
}

/// The protected namespaces (always, then the settings'), each once, in order.
fn protected_namespaces<'a>(ctx: &'a Context<'_>) -> Vec<&'a str> {
    let mut namespaces: Vec<&str> = Vec::new();
    for namespace in ALWAYS_PROTECTED
        .iter()
        .copied()
        .chain(ctx.protected_namespaces.iter().map(String::as_str))
    {
        if !namespace.is_empty() && !namespaces.contains(&namespace) {
            namespaces.push(namespace);
        }
    }
    namespaces
}

/// For an admission webhook whose rules reach what the cluster and this system keep in a
/// protected namespace its `selector` selects: the selector that also excludes those
/// namespaces, and the sentence that reports the change. `None` when nothing needs to change
/// or the policy keeps the vendor's selector.
fn protect(
    webhook: &Webhook,
    selector: Option<&Value>,
    ctx: &Context<'_>,
) -> Option<(Value, String)> {
    if ctx.selector_policy == SelectorPolicy::AsWritten || webhook.kind == WebhookType::Conversion {
        return None;
    }
    let reached: Vec<String> = PROTECTED_RESOURCES
        .iter()
        .filter_map(|protected| {
            let (group, resource) = protected.split_once('/').unwrap_or(("", protected));
            webhook
                .raw
                .rules
                .iter()
                .any(|rule| rule.intercepts(group, resource))
                .then(|| {
                    if group.is_empty() {
                        resource.to_owned()
                    } else {
                        format!("{resource}.{group}")
                    }
                })
        })
        .collect();
    if reached.is_empty() {
        return None;
    }
    let excluded: Vec<&str> = protected_namespaces(ctx)
        .into_iter()
        .filter(|namespace| selector_matches(selector, namespace))
        .collect();
    if excluded.is_empty() {
        return None;
    }
    let mut safer = selector.cloned().unwrap_or_else(|| json!({}));
    let requirement = json!({
        "key": NAMESPACE_NAME_LABEL,
        "operator": "NotIn",
        "values": excluded,
    });
    match safer
        .get_mut("matchExpressions")
        .and_then(Value::as_array_mut)
    {
        Some(expressions) => expressions.push(requirement),
        None => safer["matchExpressions"] = json!([requirement]),
    }
    let kind = if webhook.kind == WebhookType::Mutating {
        "MutatingWebhookConfiguration"
    } else {
        "ValidatingWebhookConfiguration"
    };
    let adjustment = format!(
        "{kind} {} ({}) would intercept {} in {}, which the cluster and the installer depend \
         on; its namespaceSelector now also excludes {}, so the webhook cannot stop them while \
         its server is down (webhookNamespaceSelector: as-written keeps the vendor's selector)",
        webhook.name,
        webhook.field,
        reached.join(", "),
        excluded.join(", "),
        if excluded.len() == 1 { "it" } else { "them" },
    );
    Some((safer, adjustment))
}

/// Whether a namespace selector (`None`: every namespace) selects `namespace`, judged on the
/// one label every namespace is known to have: its name. Requirements on other labels are
/// taken as not met (`In`, `Exists`, matchLabels) or met (`NotIn`, `DoesNotExist`), as for
/// a namespace with no other labels.
fn selector_matches(selector: Option<&Value>, namespace: &str) -> bool {
    let Some(selector) = selector else {
        return true;
    };
    let label = |key: &str| (key == NAMESPACE_NAME_LABEL).then_some(namespace);
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for (key, value) in labels {
            if label(key) != value.as_str() {
                return false;
            }
        }
    }
    for expression in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = expression
            .get("key")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let values: Vec<&str> = expression
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let value = label(key);
        let met = match expression.get("operator").and_then(Value::as_str) {
            Some("In") => value.is_some_and(|v| values.contains(&v)),
            Some("NotIn") => value.is_none_or(|v| !values.contains(&v)),
            Some("Exists") => value.is_some(),
            Some("DoesNotExist") => value.is_none(),
            _ => false,
        };
        if !met {
            return false;
        }
    }
    true
}

/// Checks a DNS-1123 subdomain: at most 253 characters of lowercase letters, digits, `-`
/// and `.`, each dot-separated part starting and ending with a letter or digit.
fn dns_subdomain(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("it is empty");
    }
    if name.len() > 253 {
        return Err("it is longer than 253 characters");
    }
    let part_ok = |part: &str| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !part.starts_with('-')
            && !part.ends_with('-')
    };
    if name.split('.').all(part_ok) {
        Ok(())
    } else {
        Err(
            "use lowercase letters, digits, '-' and '.', starting and ending each part with a letter or digit",
        )
    }
}

/// A Kubernetes port name: at most 15 lowercase letters, digits and dashes, with a letter.
fn port_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 15
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && name.chars().any(|c| c.is_ascii_lowercase())
        && !name.starts_with('-')
        && !name.ends_with('-')
}

/// Mounts the serving certificate Secret into every container of a Deployment, where OLM
/// mounts it, replacing volumes of the same names or mounts at the same paths.
pub fn mount_certificates(deployment: &mut Value, secret: &str) -> Result<(), String> {
    let Some(pod) = deployment
        .pointer_mut("/spec/template/spec")
        .and_then(Value::as_object_mut)
    else {
        return Err("spec.template.spec is not a mapping".to_owned());
    };
    let mounts = [
        (
            "apiservice-cert",
            APISERVICE_CERT_DIR,
            "apiserver.crt",
            "apiserver.key",
        ),
        ("webhook-cert", WEBHOOK_CERT_DIR, "tls.crt", "tls.key"),
    ];
    let mut replaced: BTreeSet<String> = mounts.iter().map(|m| m.0.to_owned()).collect();
    let containers = match pod.get_mut("containers") {
        Some(Value::Array(containers)) => containers,
        _ => return Err("spec.template.spec.containers is not a list".to_owned()),
    };
    for container in containers.iter() {
        for mount in container
            .get("volumeMounts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let path = mount.get("mountPath").and_then(Value::as_str);
            if mounts.iter().any(|m| Some(m.1) == path)
                && let Some(name) = mount.get("name").and_then(Value::as_str)
            {
                replaced.insert(name.to_owned());
            }
        }
    }
    for container in containers.iter_mut() {
        let Some(container) = container.as_object_mut() else {
            return Err(
                "spec.template.spec.containers holds an entry that is not a mapping".to_owned(),
            );
        };
        let mut list: Vec<Value> = container
            .get("volumeMounts")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        list.retain(|m| {
            m.get("name")
                .and_then(Value::as_str)
                .is_none_or(|n| !replaced.contains(n))
        });
        list.extend(
            mounts
                .iter()
                .map(|(name, path, _, _)| json!({"name": name, "mountPath": path})),
        );
        container.insert("volumeMounts".to_owned(), Value::Array(list));
    }
    let mut volumes: Vec<Value> = pod
        .get("volumes")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    volumes.retain(|v| {
        v.get("name")
            .and_then(Value::as_str)
            .is_none_or(|n| !replaced.contains(n))
    });
    volumes.extend(mounts.iter().map(|(name, _, cert, key)| {
        json!({"name": name, "secret": {"secretName": secret, "items": [
            {"key": "tls.crt", "path": cert},
            {"key": "tls.key", "path": key},
        ]}})
    }));
    pod.insert("volumes".to_owned(), Value::Array(volumes));
    Ok(())
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_target_port_of_zero_or_none_is_the_webhook_port() {
        let field = "spec.webhookdefinitions[0]";
        assert_eq!(super::target_port(None, 9443, field), Ok(json!(9443)));
        assert_eq!(
            super::target_port(Some(&json!(null)), 9443, field),
            Ok(json!(9443))
        );
        assert_eq!(
            super::target_port(Some(&json!(0)), 9443, field),
            Ok(json!(9443))
        );
        assert_eq!(
            super::target_port(Some(&json!(8443)), 9443, field),
            Ok(json!(8443))
        );
        assert_eq!(
            super::target_port(Some(&json!("webhook")), 9443, field),
            Ok(json!("webhook"))
        );
        let err = super::target_port(Some(&json!(70000)), 9443, field).unwrap_err();
        assert!(
            err.starts_with("spec.webhookdefinitions[0].targetPort 70000"),
            "{err}"
        );
    }

    use super::*;

    #[test]
    fn names_follow_olm_and_fit_in_63_characters() {
        assert_eq!(
            service_name("memcached.controller"),
            "memcached-controller-service"
        );
        assert_eq!(
            cert_secret_name("memcached-controller-service"),
            "memcached-controller-service-cert"
        );
        let long = "a".repeat(80);
        let service = service_name(&long);
        assert_eq!(service.len(), 63);
        assert!(service.ends_with("-service"));
        assert_eq!(cert_secret_name(&service).len(), 63);
    }

    #[test]
    fn selectors_are_judged_on_the_namespace_name() {
        assert!(selector_matches(None, "kube-system"));
        let not_in = json!({"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "NotIn", "values": ["kube-system"]}]});
        assert!(!selector_matches(Some(&not_in), "kube-system"));
        assert!(selector_matches(Some(&not_in), "rukpak-system"));
        let by_other_label = json!({"matchLabels": {"webhooks": "enabled"}});
        assert!(!selector_matches(Some(&by_other_label), "kube-system"));
        let unless_opted_out =
            json!({"matchExpressions": [{"key": "control-plane", "operator": "DoesNotExist"}]});
        assert!(selector_matches(Some(&unless_opted_out), "kube-system"));
    }

    #[test]
    fn rules_match_resources_in_their_group_and_scope() {
        let rule: Rule = serde_json::from_value(json!({
            "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods/*"],
        }))
        .unwrap();
        assert!(rule.intercepts("", "pods"));
        assert!(!rule.intercepts("", "secrets"));
        assert!(!rule.intercepts("apps", "pods"));
        let cluster: Rule = serde_json::from_value(json!({
            "apiGroups": [""], "resources": ["*"], "scope": "Cluster",
        }))
        .unwrap();
        assert!(!cluster.intercepts("", "pods"));
        // Fields the checks do not read are kept as written.
        assert_eq!(rule.to_value()["operations"], json!(["CREATE"]));
    }

    fn pod_webhook(namespace_selector: Option<Value>) -> Webhook {
        let raw: RawWebhook = serde_json::from_value(json!({
            "type": "ValidatingAdmissionWebhook",
            "generateName": "vpod.example.com",
            "deploymentName": "op",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "namespaceSelector": namespace_selector,
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}],
        }))
        .unwrap();
        Webhook {
            field: "spec.webhookdefinitions[0]".to_owned(),
            kind: WebhookType::Validating,
            name: "vpod.example.com".to_owned(),
            deployment: "op".to_owned(),
            port: 443,
            target_port: json!(443),
            raw,
        }
    }

    fn context<'a>(
        targets: &'a [String],
        protected: &'a [String],
        policy: SelectorPolicy,
    ) -> Context<'a> {
        Context {
            install_namespace: "ops",
            targets,
            provider: CertProvider::BuiltIn,
            protected_namespaces: protected,
            selector_policy: policy,
        }
    }

    #[test]
    fn only_the_protected_namespaces_a_selector_still_selects_are_excluded() {
        let all = vec![String::new()];
        let protected = vec![
            "rukpak-system".to_owned(),
            "kube-system".to_owned(),
            String::new(),
        ];
        let ctx = context(&all, &protected, SelectorPolicy::ExcludeProtected);
        // The vendor already keeps kube-system out: only the others are added, once each.
        let vendor = json!({"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "NotIn", "values": ["kube-system"]}]});
        let webhook = pod_webhook(Some(vendor.clone()));
        let (selector, adjustment) = protect(&webhook, Some(&vendor), &ctx).unwrap();
        assert_eq!(
            selector["matchExpressions"][1],
            json!({"key": NAMESPACE_NAME_LABEL, "operator": "NotIn", "values": ["kube-node-lease", "rukpak-system"]})
        );
        assert!(
            adjustment.contains("pods in kube-node-lease, rukpak-system"),
            "{adjustment}"
        );
        // A selector that selects no protected namespace is left alone.
        let only_apps = json!({"matchLabels": {NAMESPACE_NAME_LABEL: "apps"}});
        assert!(protect(&webhook, Some(&only_apps), &ctx).is_none());
        // Target namespaces that include a protected one: that one is still excluded.
        let targets = vec!["apps".to_owned(), "kube-system".to_owned()];
        let ctx = context(&targets, &protected, SelectorPolicy::ExcludeProtected);
        let selector = namespace_selector(&targets, &webhook.raw);
        let (safer, _) = protect(&webhook, selector.as_ref(), &ctx).unwrap();
        assert!(selector_matches(Some(&safer), "apps"));
        assert!(!selector_matches(Some(&safer), "kube-system"));
        // As written: nothing changes.
        let ctx = context(&all, &protected, SelectorPolicy::AsWritten);
        assert!(protect(&webhook, None, &ctx).is_none());
    }

    #[test]
    fn ports_and_names_are_checked() {
        assert!(port_name("https"));
        assert!(!port_name("HTTPS"));
        assert!(!port_name("9443"));
        assert!(!port_name("a-very-long-port-name"));
        assert!(dns_subdomain("vwidget.example.com").is_ok());
        assert!(dns_subdomain("Widget.example.com").is_err());
        assert!(dns_subdomain("widget..example.com").is_err());
    }

    #[test]
    fn providers_parse_from_their_names() {
        for name in CertProvider::NAMES {
            assert_eq!(name.parse::<CertProvider>().unwrap().name(), name);
        }
        assert_eq!(
            "vault".parse::<CertProvider>().unwrap_err(),
            "unknown certificate provider \"vault\"; use one of builtin, cert-manager, service-ca"
        );
    }

    #[test]
    fn certificates_replace_volumes_at_the_same_path() {
        let mut deployment = json!({"spec": {"template": {"spec": {
            "containers": [{"name": "manager", "volumeMounts": [
                {"name": "cert", "mountPath": WEBHOOK_CERT_DIR},
                {"name": "data", "mountPath": "/data"},
            ]}],
            "volumes": [{"name": "cert", "secret": {"secretName": "old"}}, {"name": "data", "emptyDir": {}}],
        }}}});
        mount_certificates(&mut deployment, "svc-cert").unwrap();
        let pod = &deployment["spec"]["template"]["spec"];
        let volumes: Vec<&str> = pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["name"].as_str().unwrap())
            .collect();
        assert_eq!(volumes, ["data", "apiservice-cert", "webhook-cert"]);
        let mounts: Vec<&str> = pod["containers"][0]["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["mountPath"].as_str().unwrap())
            .collect();
        assert_eq!(mounts, ["/data", APISERVICE_CERT_DIR, WEBHOOK_CERT_DIR]);
        assert_eq!(pod["volumes"][2]["secret"]["secretName"], "svc-cert");
    }
}
