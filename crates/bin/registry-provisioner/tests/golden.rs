//! Golden tests: every directory under `tests/golden/<case>/` holds a registry+v1 bundle
//! (`bundle/`), the conversion options (`options.yaml`, the keys of a BundleDeployment's
//! `spec.config`; optionally `deployment-config.yaml`, what `render --deployment-config`
//! reads) and the expected result: `expected.yaml` (the `render` output) with
//! `expected.adjustments` (what render reports it changed, one per line; absent when it
//! changed nothing), or `expected.error` (the error message). Run with `UPDATE_GOLDEN=1` to rewrite the expected
//! files after a deliberate change; a missing expected file fails the test.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;

use registry_provisioner::{DeploymentConfig, Options, conversion, render};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Every case, in `tests/golden/`; a directory not listed here fails
/// `every_golden_directory_is_a_case`.
const CASES: &[&str] = &[
    "all-namespaces",
    "apiservice",
    "deployment-config",
    "duplicate-conflict",
    "extra-objects",
    "huge-crd",
    "messy",
    "missing-csv",
    "multi-namespace",
    "no-default-target",
    "olm-shapes",
    "olm-shapes-as-written",
    "own-namespace",
    "single-namespace",
    "two-csvs",
    "unsupported-install-mode",
    "unsupported-kind",
    "v1beta1-crd",
    "webhook-csv",
    "webhooks-builtin",
    "webhooks-cert-manager",
    "webhooks-service-ca",
    "yaml-merge-keys-and-nulls",
];

fn golden(case: &str) -> PathBuf {
    testkit::package_path("").join("tests/golden").join(case)
}

fn updating() -> bool {
    std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| !v.is_empty() && v != "0")
}

/// The options of a case, from `options.yaml` (absent keys take the defaults).
fn options(case: &str) -> Options {
    let text = std::fs::read_to_string(golden(case).join("options.yaml")).unwrap_or_default();
    let value: Value = serde_yaml_ng::from_str(&text).unwrap_or(Value::Null);
    Options {
        install_namespace: value["installNamespace"].as_str().map(str::to_owned),
        target_namespaces: value["targetNamespaces"]
            .as_array()
            .map(|list| {
                list.iter()
                    .map(|ns| ns.as_str().unwrap().to_owned())
                    .collect()
            })
            .unwrap_or_default(),
        deployment_config: std::fs::read_to_string(golden(case).join("deployment-config.yaml"))
            .ok()
            .and_then(|text| DeploymentConfig::from_yaml(&text).unwrap()),
        cert_provider: value["certProvider"]
            .as_str()
            .map(|name| name.parse().unwrap())
            .unwrap_or_default(),
        protected_namespaces: std::iter::once("rukpak-system".to_owned())
            .chain(
                value["protectedNamespaces"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|ns| ns.as_str().unwrap().to_owned()),
            )
            .collect(),
        webhook_namespace_selector: value["webhookNamespaceSelector"]
            .as_str()
            .map(|name| name.parse().unwrap()),
    }
}

/// The bundle of a case: its own `bundle/`, or that of the case `bundleFrom` in
/// `options.yaml` names (cases that render one bundle with other options).
fn bundle_dir(case: &str) -> PathBuf {
    let text = std::fs::read_to_string(golden(case).join("options.yaml")).unwrap_or_default();
    let value: Value = serde_yaml_ng::from_str(&text).unwrap_or(Value::Null);
    match value["bundleFrom"].as_str() {
        Some(other) => golden(other).join("bundle"),
        None => golden(case).join("bundle"),
    }
}

/// Converts files and renders them as `render` does: the YAML stream, or the error message.
fn render_files(files: &[(String, Vec<u8>)], options: &Options) -> Result<String, String> {
    render_with_adjustments(files, options).map(|(yaml, _)| yaml)
}

/// The YAML stream and the adjustments, or the error message.
fn render_with_adjustments(
    files: &[(String, Vec<u8>)],
    options: &Options,
) -> Result<(String, Vec<String>), String> {
    let converted = conversion(
        files.iter().map(|(p, b)| (p.as_str(), b.as_slice())),
        options,
    )
    .map_err(|err| err.to_string())?;
    Ok((
        render::to_yaml(&converted.objects).unwrap(),
        converted.adjustments,
    ))
}

fn render_case(case: &str) -> Result<String, String> {
    let files = render::read_dir(&bundle_dir(case)).unwrap();
    let (yaml, adjustments) = render_with_adjustments(&files, &options(case))?;
    let path = golden(case).join("expected.adjustments");
    if adjustments.is_empty() {
        if updating() {
            let _ = std::fs::remove_file(&path);
        }
        assert!(
            !path.exists(),
            "{case} adjusts nothing but has an expected.adjustments"
        );
    } else {
        let mut text = adjustments.join("\n");
        text.push('\n');
        compare(case, "expected.adjustments", &text);
    }
    Ok(yaml)
}

/// Compares `actual` with `<case>/<file>`, or writes it there under `UPDATE_GOLDEN=1`.
fn compare(case: &str, file: &str, actual: &str) {
    let path = golden(case).join(file);
    if updating() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|err| {
        panic!(
            "{}: {err}; run with UPDATE_GOLDEN=1 to create it",
            path.display()
        )
    });
    if expected != actual {
        let line = expected
            .lines()
            .zip(actual.lines())
            .position(|(e, a)| e != a)
            .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()));
        panic!(
            "{} differs from the conversion, first at line {}:\n  expected: {:?}\n  actual:   {:?}\n\
             (run with UPDATE_GOLDEN=1 to accept the new output)",
            path.display(),
            line + 1,
            expected.lines().nth(line),
            actual.lines().nth(line),
        );
    }
}

/// A case that converts: its output matches `expected.yaml`, no `expected.error` exists,
/// and a second conversion is byte-identical.
fn converts(case: &str) -> String {
    let yaml = render_case(case).unwrap_or_else(|err| panic!("{case}: {err}"));
    assert!(
        !golden(case).join("expected.error").exists(),
        "{case} converts but has an expected.error"
    );
    compare(case, "expected.yaml", &yaml);
    assert_eq!(
        render_case(case).unwrap(),
        yaml,
        "{case}: not deterministic"
    );
    yaml
}

/// A case that fails: its message matches `expected.error` (one line) and names `file`.
fn fails(case: &str, file: &str) -> String {
    let message = match render_case(case) {
        Ok(_) => panic!("{case}: converted, but an error was expected"),
        Err(message) => message,
    };
    assert!(
        !golden(case).join("expected.yaml").exists(),
        "{case} fails but has an expected.yaml"
    );
    compare(case, "expected.error", &format!("{message}\n"));
    assert!(message.contains(file), "{message:?} does not name {file}");
    message
}

/// Kinds of the rendered documents, in order.
fn kinds(yaml: &str) -> Vec<String> {
    serde_yaml_ng::Deserializer::from_str(yaml)
        .map(|doc| {
            let value: Value = serde::Deserialize::deserialize(doc).unwrap();
            value["kind"].as_str().unwrap().to_owned()
        })
        .collect()
}

fn documents(yaml: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(yaml)
        .map(|doc| serde::Deserialize::deserialize(doc).unwrap())
        .collect()
}

fn find<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

#[test]
fn every_golden_directory_is_a_case() {
    let mut found: Vec<String> = std::fs::read_dir(golden(""))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    found.sort();
    assert_eq!(found, CASES);
}

#[test]
fn all_namespaces_only() {
    let yaml = converts("all-namespaces");
    let docs = documents(&yaml);
    // Namespaced permissions are promoted: no Role, every binding cluster-wide.
    assert!(
        !kinds(&yaml)
            .iter()
            .any(|k| k == "Role" || k == "RoleBinding")
    );
    let deployment = find(&docs, "Deployment", "cert-manager");
    assert_eq!(deployment["metadata"]["namespace"], "cert-manager");
    assert_eq!(
        deployment["spec"]["template"]["metadata"]["annotations"]["olm.targetNamespaces"],
        ""
    );
}

#[test]
fn own_namespace_by_default_when_all_namespaces_is_unsupported() {
    let yaml = converts("own-namespace");
    let docs = documents(&yaml);
    let ns = "own-namespace-operator-system";
    let deployment = find(
        &docs,
        "Deployment",
        "own-namespace-operator-controller-manager",
    );
    assert_eq!(
        deployment["spec"]["template"]["metadata"]["annotations"]["olm.targetNamespaces"],
        ns
    );
    for doc in docs
        .iter()
        .filter(|d| d["kind"] == "Role" || d["kind"] == "RoleBinding")
    {
        assert_eq!(doc["metadata"]["namespace"], ns);
    }
}

#[test]
fn single_namespace_watches_another_namespace() {
    let yaml = converts("single-namespace");
    let docs = documents(&yaml);
    let role = docs.iter().find(|d| d["kind"] == "Role").unwrap();
    assert_eq!(role["metadata"]["namespace"], "monitoring");
    let binding = docs.iter().find(|d| d["kind"] == "RoleBinding").unwrap();
    assert_eq!(binding["subjects"][0]["namespace"], "grafana");
}

#[test]
fn multi_namespace_gets_roles_in_each_target() {
    let yaml = converts("multi-namespace");
    let docs = documents(&yaml);
    let mut role_namespaces: Vec<&str> = docs
        .iter()
        .filter(|d| d["kind"] == "Role")
        .map(|d| d["metadata"]["namespace"].as_str().unwrap())
        .collect();
    role_namespaces.sort_unstable();
    // Two permissions (two ServiceAccounts) in each of two namespaces.
    assert_eq!(role_namespaces, ["team-a", "team-a", "team-b", "team-b"]);
    let deployment = find(&docs, "Deployment", "prometheus-operator");
    assert_eq!(deployment["metadata"]["namespace"], "prometheus-system");
    assert_eq!(
        deployment["spec"]["template"]["metadata"]["annotations"]["olm.targetNamespaces"],
        "team-a,team-b"
    );
}

#[test]
fn v1beta1_crds_become_v1() {
    let yaml = converts("v1beta1-crd");
    let docs = documents(&yaml);
    for name in [
        "etcdclusters.etcd.database.coreos.com",
        "etcdbackups.etcd.database.coreos.com",
    ] {
        let crd = find(&docs, "CustomResourceDefinition", name);
        assert_eq!(crd["apiVersion"], "apiextensions.k8s.io/v1");
        assert!(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].is_object());
        assert!(crd["spec"].get("validation").is_none());
    }
}

#[test]
fn extra_objects_move_into_the_install_namespace() {
    let yaml = converts("extra-objects");
    let docs = documents(&yaml);
    for (kind, name) in [
        (
            "Service",
            "memcached-operator-controller-manager-metrics-service",
        ),
        ("ConfigMap", "memcached-operator-manager-config"),
        ("ServiceMonitor", "memcached-operator-metrics-monitor"),
        ("PrometheusRule", "memcached-operator-alerts"),
        ("Secret", "memcached-operator-defaults"),
        ("PodDisruptionBudget", "memcached-operator"),
    ] {
        assert_eq!(
            find(&docs, kind, name)["metadata"]["namespace"],
            "memcached-operator-system",
            "{kind} {name}"
        );
    }
    for (kind, name) in [
        ("PriorityClass", "memcached-operator-critical"),
        ("ClusterRole", "memcached-operator-metrics-reader"),
        ("ConsoleYAMLSample", "memcached-sample"),
    ] {
        assert!(
            find(&docs, kind, name)["metadata"]
                .get("namespace")
                .is_none()
        );
    }
    // The bundle ships the manager's ServiceAccount: it is not generated a second time.
    let accounts = docs
        .iter()
        .filter(|d| d["kind"] == "ServiceAccount")
        .count();
    assert_eq!(accounts, 1);
}

#[test]
fn messy_bundles_convert() {
    let yaml = converts("messy");
    let docs = documents(&yaml);
    // CRLF, a byte order mark, JSON, empty documents and `...` markers all parse.
    find(&docs, "Service", "messy-operator-metrics");
    find(&docs, "ServiceAccount", "messy-helper-sa");
    find(&docs, "ConfigMap", "messy-settings");
    // The helper uses the default ServiceAccount, which is never generated.
    assert!(
        !docs
            .iter()
            .any(|d| d["kind"] == "ServiceAccount" && d["metadata"]["name"] == "default")
    );
    // An env value YAML 1.1 would read as a boolean stays a string.
    assert!(yaml.contains("value: \"on\""), "{yaml}");
}

/// A bundle written with YAML merge keys (in the CSV, a CRD schema and a Service) and
/// `null` where OLM reads empty values.
#[test]
fn merge_keys_are_applied_and_nulls_read_as_empty() {
    let yaml = converts("yaml-merge-keys-and-nulls");
    assert!(!yaml.contains("<<"), "{yaml}");
    let docs = documents(&yaml);
    let crd = find(&docs, "CustomResourceDefinition", "stores.kv.example.org");
    let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
    assert_eq!(spec["replica"]["properties"], spec["primary"]["properties"]);
    assert_eq!(
        spec["replica"]["description"],
        "Read replicas of the primary."
    );
    assert_eq!(spec["shards"]["type"], "integer");
    assert_eq!(spec["shards"]["default"], 1);
    assert_eq!(
        spec["shards"]["description"],
        "How many shards the data is split into."
    );
    let deployment = find(&docs, "Deployment", "keyvalue-operator");
    let containers = &deployment["spec"]["template"]["spec"]["containers"];
    assert_eq!(containers[1]["name"], "metrics-proxy");
    assert_eq!(containers[1]["image"], containers[0]["image"]);
    assert_eq!(containers[1]["resources"]["requests"]["memory"], "32Mi");
    assert_eq!(containers[1]["resources"]["limits"]["cpu"], "10m");
    let annotations = &deployment["spec"]["template"]["metadata"]["annotations"];
    assert_eq!(annotations["createdAt"], "");
    assert_eq!(annotations["olm.operatorNamespace"], "keyvalue-system");
    assert_eq!(deployment["spec"]["revisionHistoryLimit"], 1);
    let service = find(&docs, "Service", "keyvalue-operator-metrics");
    assert_eq!(service["spec"]["ports"][1]["protocol"], "TCP");
    // `rules: null` is no rules: promoted, the account gets only the namespaces rule.
    assert!(docs.iter().any(
        |d| d["kind"] == "ClusterRoleBinding" && d["subjects"][0]["name"] == "keyvalue-backup"
    ));
}

/// Every deploymentConfig field (`deployment-config/deployment-config.yaml`) applied to a
/// bundle with two Deployments, one with two containers and an init container.
#[test]
fn deployment_config_is_applied_to_every_deployment() {
    let yaml = converts("deployment-config");
    let docs = documents(&yaml);
    let manager = find(&docs, "Deployment", "tuned-operator-controller-manager");
    let pod = &manager["spec"]["template"]["spec"];
    let containers = pod["containers"].as_array().unwrap();
    let env = &containers[0]["env"];
    assert_eq!(env[1]["name"], "LOG_LEVEL");
    assert_eq!(env[1]["value"], "debug");
    assert_eq!(env[2]["name"], "HTTPS_PROXY");
    assert_eq!(containers[0]["envFrom"].as_array().unwrap().len(), 2);
    for container in containers {
        assert_eq!(container["resources"]["limits"]["cpu"], "1");
        assert_eq!(
            container["env"].as_array().unwrap().last().unwrap()["name"],
            "HTTPS_PROXY"
        );
        assert!(
            container["volumeMounts"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["name"] == "trusted-ca")
        );
    }
    // Init containers are left as the bundle has them, as OLM leaves them.
    assert_eq!(pod["initContainers"][0]["env"][0]["value"], "info");
    assert!(pod["initContainers"][0].get("resources").is_none());
    assert_eq!(pod["volumes"][0]["emptyDir"]["medium"], "Memory");
    assert_eq!(pod["volumes"].as_array().unwrap().len(), 3);
    assert_eq!(pod["tolerations"].as_array().unwrap().len(), 2);
    assert_eq!(
        pod["nodeSelector"],
        serde_json::json!({"node-role.kubernetes.io/infra": ""})
    );
    assert!(pod["affinity"]["nodeAffinity"].is_object());
    assert!(pod["affinity"]["podAffinity"].is_object());
    assert!(pod["affinity"].get("podAntiAffinity").is_none());
    let annotations = &manager["spec"]["template"]["metadata"]["annotations"];
    assert_eq!(annotations["example.com/team"], "platform");
    assert_eq!(
        annotations["kubectl.kubernetes.io/default-container"],
        "manager"
    );
    assert_eq!(annotations["olm.targetNamespaces"], "");
    assert_eq!(
        manager["metadata"]["annotations"]["olm.targetNamespaces"],
        "ignored"
    );
    let webhook = find(&docs, "Deployment", "tuned-operator-webhook");
    let pod = &webhook["spec"]["template"]["spec"];
    assert_eq!(pod["containers"][0]["env"][0]["value"], "debug");
    assert_eq!(
        pod["affinity"]["podAffinity"],
        manager["spec"]["template"]["spec"]["affinity"]["podAffinity"]
    );
    assert_eq!(
        webhook["metadata"]["annotations"]["example.com/team"],
        "platform"
    );
    assert_eq!(
        webhook["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/default-container"],
        "webhook"
    );
}

#[test]
fn the_render_command_reads_a_deployment_config_file() {
    let case = golden("deployment-config");
    let output = binary()
        .arg("render")
        .arg(case.join("bundle"))
        .arg("--deployment-config")
        .arg(case.join("deployment-config.yaml"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let expected = std::fs::read_to_string(case.join("expected.yaml")).unwrap();
    assert_eq!(String::from_utf8(output.stdout).unwrap(), expected);

    // JSON works too; an unknown field is refused naming it.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.json");
    std::fs::write(&file, r#"{"env": [{"name": "A", "valeu": "1"}]}"#).unwrap();
    let output = binary()
        .arg("render")
        .arg(case.join("bundle"))
        .arg("--deployment-config")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(output.stderr).unwrap(),
        format!(
            "registry-provisioner: failed to render bundle {}: failed to read the deployment config {}: \
             spec.config.deploymentConfig.env[0].valeu is not a field of EnvVar\n",
            case.join("bundle").display(),
            file.display()
        )
    );
}

#[test]
fn no_default_target_says_what_to_give() {
    let message = fails(
        "no-default-target",
        "manifests/tenant-operator.clusterserviceversion.yaml",
    );
    assert!(
        message.contains("spec.config.targetNamespaces"),
        "{message}"
    );
}

#[test]
fn unsupported_kind_is_rejected() {
    let message = fails("unsupported-kind", "manifests/podmonitor.yaml");
    assert!(message.contains("Kind: PodMonitor"), "{message}");
}

#[test]
fn a_validating_webhook_is_served_for_its_target_namespaces() {
    let yaml = converts("webhook-csv");
    let docs = documents(&yaml);
    let service = find(
        &docs,
        "Service",
        "memcached-operator-controller-manager-service",
    );
    let deployment = find(&docs, "Deployment", "memcached-operator-controller-manager");
    assert_eq!(
        service["spec"]["ports"],
        serde_json::json!([{"name": "443", "port": 443, "targetPort": 9443}])
    );
    assert_eq!(
        service["spec"]["selector"],
        deployment["spec"]["selector"]["matchLabels"]
    );
    let webhook = &find(&docs, "ValidatingWebhookConfiguration", "vmemcached.kb.io")["webhooks"][0];
    assert_eq!(
        webhook["namespaceSelector"]["matchExpressions"][0]["values"],
        serde_json::json!(["team-a"])
    );
    assert_eq!(
        webhook["clientConfig"]["service"],
        serde_json::json!({"name": "memcached-operator-controller-manager-service",
            "namespace": "memcached", "path": "/validate-cache-example-com-v1alpha1-memcached", "port": 443})
    );
    // The serving certificate is mounted where controller-runtime and OLM look for it.
    let mounts = &deployment["spec"]["template"]["spec"]["containers"][0]["volumeMounts"];
    for path in [
        "/tmp/k8s-webhook-server/serving-certs",
        "/apiserver.local.config/certificates",
    ] {
        assert!(
            mounts
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["mountPath"] == path),
            "{mounts}"
        );
    }
    // Webhook configurations come last, after the Deployment that serves them.
    let kinds = kinds(&yaml);
    assert_eq!(kinds.last().unwrap(), "ValidatingWebhookConfiguration");
}

#[test]
fn every_install_mode_scopes_admission_webhooks_to_its_targets() {
    let files = render::read_dir(&golden("webhook-csv").join("bundle")).unwrap();
    for (targets, expected) in [
        (vec![], None),
        (vec!["".to_owned()], None),
        (vec!["ops".to_owned()], Some(serde_json::json!(["ops"]))),
        (
            vec!["team-b".to_owned()],
            Some(serde_json::json!(["team-b"])),
        ),
    ] {
        let options = Options {
            install_namespace: Some("ops".to_owned()),
            target_namespaces: targets.clone(),
            ..options("webhook-csv")
        };
        let docs = documents(&render_files(&files, &options).unwrap());
        let webhook =
            &find(&docs, "ValidatingWebhookConfiguration", "vmemcached.kb.io")["webhooks"][0];
        assert_eq!(
            webhook["namespaceSelector"]
                .pointer("/matchExpressions/0/values")
                .cloned(),
            expected,
            "{targets:?}"
        );
    }
}

#[test]
fn webhooks_with_built_in_certificates() {
    let yaml = converts("webhooks-builtin");
    let docs = documents(&yaml);
    let service = "widget-operator-controller-manager-service";
    let secret = find(
        &docs,
        "Secret",
        "widget-operator-controller-manager-service-cert",
    );
    assert_eq!(secret["type"], "kubernetes.io/tls");
    assert_eq!(
        secret["metadata"]["annotations"]["core.rukpak.io/serving-certificate-for"],
        format!(
            "{service}.widget-operator-system.svc,{service}.widget-operator-system,{service}.widget-operator-system.svc.cluster.local"
        )
    );
    // Two webhook ports of one Deployment: one Service port each, by number and by name.
    assert_eq!(
        find(&docs, "Service", service)["spec"]["ports"],
        serde_json::json!([
            {"name": "443", "port": 443, "targetPort": 9443},
            {"name": "8443", "port": 8443, "targetPort": "webhook-server"},
        ])
    );
    let crd = find(&docs, "CustomResourceDefinition", "widgets.example.com");
    assert_eq!(
        crd["metadata"]["annotations"]["core.rukpak.io/inject-ca-bundle"],
        "true"
    );
    assert_eq!(
        crd["spec"]["conversion"],
        serde_json::json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"service": {"name": service, "namespace": "widget-operator-system", "path": "/convert", "port": 443}},
            "conversionReviewVersions": ["v1"]}})
    );
    // A CRD no conversion webhook names is left alone.
    assert!(
        find(&docs, "CustomResourceDefinition", "gadgets.example.com")["spec"]
            .get("conversion")
            .is_none()
    );
    let mutating = find(&docs, "MutatingWebhookConfiguration", "mwidget.example.com");
    assert_eq!(mutating["webhooks"][0]["reinvocationPolicy"], "IfNeeded");
    assert_eq!(mutating["webhooks"][0]["matchPolicy"], "Equivalent");
    // All namespaces: the CSV's selectors are kept, none is added.
    assert!(mutating["webhooks"][0].get("namespaceSelector").is_none());
    // The scaffolded cert volume at the serving path is replaced, not doubled.
    let deployment = find(&docs, "Deployment", "widget-operator-controller-manager");
    let volumes: Vec<&str> = deployment["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(volumes, ["apiservice-cert", "webhook-cert"]);
}

#[test]
fn webhooks_with_cert_manager() {
    let docs = documents(&converts("webhooks-cert-manager"));
    let secret = "widget-operator-controller-manager-service-cert";
    let certificate = find(&docs, "Certificate", secret);
    assert_eq!(certificate["spec"]["secretName"], secret);
    // The issuer's name is cut to fit 63 characters, as upstream cuts it.
    let issuer = docs.iter().find(|d| d["kind"] == "Issuer").unwrap();
    assert_eq!(
        issuer["metadata"]["name"],
        "widget-operator-controller-manager-service-ce-selfsigned-issuer"
    );
    assert_eq!(
        certificate["spec"]["issuerRef"]["name"],
        issuer["metadata"]["name"]
    );
    let inject = format!("widget-operator-system/{secret}");
    for (kind, name) in [
        ("ValidatingWebhookConfiguration", "vwidget.example.com"),
        ("MutatingWebhookConfiguration", "mwidget.example.com"),
        ("CustomResourceDefinition", "widgets.example.com"),
    ] {
        assert_eq!(
            find(&docs, kind, name)["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
            inject.as_str()
        );
    }
    assert!(!docs.iter().any(|d| d["kind"] == "Secret"));
}

#[test]
fn webhooks_with_the_openshift_service_ca() {
    let docs = documents(&converts("webhooks-service-ca"));
    let service = find(
        &docs,
        "Service",
        "widget-operator-controller-manager-service",
    );
    assert_eq!(
        service["metadata"]["annotations"]["service.beta.openshift.io/serving-cert-secret-name"],
        "widget-operator-controller-manager-service-cert"
    );
    assert_eq!(
        find(
            &docs,
            "ValidatingWebhookConfiguration",
            "vwidget.example.com"
        )["metadata"]["annotations"]["service.beta.openshift.io/inject-cabundle"],
        "true"
    );
    assert!(
        !docs
            .iter()
            .any(|d| d["kind"] == "Secret" || d["kind"] == "Certificate")
    );
}

#[test]
fn an_owned_api_service_is_served_with_its_webhook_on_one_service() {
    let docs = documents(&converts("apiservice"));
    let api_service = find(&docs, "APIService", "v1beta2.custom.metrics.k8s.io");
    assert_eq!(
        api_service["spec"],
        serde_json::json!({"group": "custom.metrics.k8s.io", "version": "v1beta2",
            "groupPriorityMinimum": 2000, "versionPriority": 15,
            "service": {"namespace": "custom-metrics", "name": "adapter-service", "port": 443}})
    );
    assert_eq!(
        find(&docs, "Service", "adapter-service")["spec"]["ports"],
        serde_json::json!([
            {"name": "443", "port": 443, "targetPort": 6443},
            {"name": "9443", "port": 9443, "targetPort": 9443},
        ])
    );
}

#[test]
fn webhooks_that_reach_system_namespaces_are_kept_out_of_them() {
    let docs = documents(&converts("olm-shapes"));
    let not_in_protected = serde_json::json!({
        "key": "kubernetes.io/metadata.name",
        "operator": "NotIn",
        "values": ["kube-system", "kube-node-lease", "rukpak-system"],
    });
    // No selector of its own: the exclusion is the whole selector; the rest is the vendor's.
    let pods = &find(
        &docs,
        "MutatingWebhookConfiguration",
        "mpod.telemetry.example.io",
    )["webhooks"][0];
    assert_eq!(
        pods["namespaceSelector"],
        serde_json::json!({"matchExpressions": [not_in_protected]})
    );
    assert_eq!(pods["failurePolicy"], "Ignore");
    assert_eq!(
        pods["objectSelector"]["matchExpressions"][0]["key"],
        "telemetry.example.io/inject"
    );
    // The vendor's own requirements are kept and the exclusion is added to them.
    let configmaps = &find(
        &docs,
        "ValidatingWebhookConfiguration",
        "vconfigmap.telemetry.example.io",
    )["webhooks"][0];
    assert_eq!(
        configmaps["namespaceSelector"]["matchExpressions"],
        serde_json::json!([
            {"key": "telemetry.example.io/ignore", "operator": "DoesNotExist"},
            not_in_protected,
        ])
    );
    assert_eq!(configmaps["failurePolicy"], "Fail");
    // A webhook on the operator's own kind reaches nothing protected: left as written.
    let own = &find(
        &docs,
        "ValidatingWebhookConfiguration",
        "vcollector.telemetry.example.io",
    )["webhooks"][0];
    assert!(own.get("namespaceSelector").is_none(), "{own}");

    // Opted out: exactly the vendor's selectors, and nothing refused.
    let vendor = documents(&converts("olm-shapes-as-written"));
    let pods = &find(
        &vendor,
        "MutatingWebhookConfiguration",
        "mpod.telemetry.example.io",
    )["webhooks"][0];
    assert!(pods.get("namespaceSelector").is_none(), "{pods}");
    let configmaps = &find(
        &vendor,
        "ValidatingWebhookConfiguration",
        "vconfigmap.telemetry.example.io",
    )["webhooks"][0];
    assert_eq!(
        configmaps["namespaceSelector"],
        serde_json::json!({"matchExpressions": [
            {"key": "telemetry.example.io/ignore", "operator": "DoesNotExist"},
        ]})
    );
    let adjustments =
        std::fs::read_to_string(golden("olm-shapes-as-written").join("expected.adjustments"))
            .unwrap();
    assert!(!adjustments.contains("namespaceSelector"), "{adjustments}");
}

#[test]
fn a_target_port_of_zero_is_the_container_port_as_olm_reads_it() {
    let docs = documents(&converts("olm-shapes"));
    let service = find(
        &docs,
        "Service",
        "telemetry-operator-controller-manager-service",
    );
    assert_eq!(
        service["spec"]["ports"],
        serde_json::json!([
            {"name": "443", "port": 443, "targetPort": 9443},
            {"name": "9443", "port": 9443, "targetPort": 9443},
        ])
    );
}

#[test]
fn one_object_per_identity_with_olms_precedence() {
    let yaml = converts("olm-shapes");
    let docs = documents(&yaml);
    let count = |kind: &str, name: &str| {
        docs.iter()
            .filter(|d| d["kind"] == kind && d["metadata"]["name"] == name)
            .count()
    };
    // Two identical files: installed once.
    assert_eq!(
        count("RoleBinding", "telemetry-operator-leader-election"),
        1
    );
    // The bundle's Service under OLM's name gives way to the generated webhook Service.
    assert_eq!(
        count("Service", "telemetry-operator-controller-manager-service"),
        1
    );
    let service = find(
        &docs,
        "Service",
        "telemetry-operator-controller-manager-service",
    );
    assert!(service["metadata"].get("labels").is_none(), "{service}");
    let adjustments =
        std::fs::read_to_string(golden("olm-shapes").join("expected.adjustments")).unwrap();
    assert!(
        adjustments.contains(
            "RoleBinding \"telemetry-operator-leader-election\" in namespace \"telemetry-operator\" \
             is defined identically in manifests/leader-election-rolebinding.yaml and \
             manifests/telemetry-operator-leader-election_rbac.authorization.k8s.io_v1_rolebinding.yaml"
        ),
        "{adjustments}"
    );
    assert!(
        adjustments.contains(
            "Service \"telemetry-operator-controller-manager-service\" in namespace \
             \"telemetry-operator\" of \
             manifests/telemetry-operator-controller-manager-service_v1_service.yaml is replaced \
             by the one generated from the CSV"
        ),
        "{adjustments}"
    );
    // Two files that define one object differently: refused, naming both.
    let message = fails(
        "duplicate-conflict",
        "manifests/telemetry-operator-leader-election_rbac.authorization.k8s.io_v1_rolebinding.yaml",
    );
    assert!(
        message.contains("manifests/leader-election-rolebinding.yaml"),
        "{message}"
    );
}

#[test]
fn fields_kubernetes_does_not_have_are_dropped_from_deployments() {
    let docs = documents(&converts("olm-shapes"));
    let deployment = find(&docs, "Deployment", "telemetry-operator-controller-manager");
    let spec = &deployment["spec"];
    assert!(spec.get("metadata").is_none(), "{spec}");
    let container = &spec["template"]["spec"]["containers"][0];
    assert!(container["readinessProbe"].get("resources").is_none());
    assert_eq!(container["readinessProbe"]["httpGet"]["port"], 8081);
    assert!(container["ports"][1].get("porst").is_none());
    assert_eq!(container["ports"][1]["containerPort"], 8080);
    let volume = spec["template"]["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "cert")
        .unwrap();
    assert!(volume.get("defaultMode").is_none(), "{volume}");
    assert_eq!(volume["secret"]["defaultMode"], 420);
    let adjustments =
        std::fs::read_to_string(golden("olm-shapes").join("expected.adjustments")).unwrap();
    assert!(
        adjustments.contains(
            "Deployment telemetry-operator-controller-manager (spec.install.spec.deployments[0]): \
             dropped spec.metadata, spec.template.spec.containers[0].ports[1].porst, \
             spec.template.spec.containers[0].readinessProbe.resources, \
             spec.template.spec.volumes[0].defaultMode"
        ),
        "{adjustments}"
    );
}

#[test]
fn bad_webhook_definitions_are_refused_naming_the_csv_field() {
    let files = render::read_dir(&golden("webhooks-builtin").join("bundle")).unwrap();
    let csv_path = "manifests/widget-operator.clusterserviceversion.yaml";
    let csv: Value =
        serde_yaml_ng::from_slice(&files.iter().find(|(p, _)| p == csv_path).unwrap().1).unwrap();
    type Change = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(&str, Change, &str)> = vec![
        (
            "unknown deployment",
            Box::new(|csv| csv["spec"]["webhookdefinitions"][0]["deploymentName"] = "gone".into()),
            "spec.webhookdefinitions[0].deploymentName \"gone\" names no Deployment of spec.install.spec.deployments (it has: widget-operator-controller-manager)",
        ),
        (
            "port out of range",
            Box::new(|csv| csv["spec"]["webhookdefinitions"][1]["containerPort"] = 70000.into()),
            "spec.webhookdefinitions[1].containerPort 70000 is out of range (1-65535)",
        ),
        (
            "conversion of a CRD the bundle does not own",
            Box::new(|csv| {
                csv["spec"]["webhookdefinitions"][2]["conversionCRDs"] =
                    serde_json::json!(["things.other.io"])
            }),
            "spec.webhookdefinitions[2].conversionCRDs names CRD \"things.other.io\", which is not in spec.customresourcedefinitions.owned: a bundle may only convert its own CRDs",
        ),
        (
            "duplicate generateName",
            Box::new(|csv| {
                let first = csv["spec"]["webhookdefinitions"][0].clone();
                csv["spec"]["webhookdefinitions"]
                    .as_array_mut()
                    .unwrap()
                    .push(first);
            }),
            "spec.webhookdefinitions[3].generateName \"vwidget.example.com\" repeats spec.webhookdefinitions[0].generateName: webhooks of type ValidatingAdmissionWebhook must have distinct names",
        ),
        (
            "every API group",
            Box::new(|csv| {
                csv["spec"]["webhookdefinitions"][0]["rules"][0]["apiGroups"] =
                    serde_json::json!(["*"])
            }),
            "spec.webhookdefinitions[0].rules[0] intercepts API group \"*\"",
        ),
        (
            "this system's own kinds",
            Box::new(|csv| {
                csv["spec"]["webhookdefinitions"][0]["rules"][0]["apiGroups"] =
                    serde_json::json!(["core.rukpak.io"])
            }),
            "spec.webhookdefinitions[0].rules[0] intercepts API group \"core.rukpak.io\"",
        ),
        (
            "a conversion webhook in a bundle that supports more than all namespaces",
            Box::new(|csv| csv["spec"]["installModes"][0]["supported"] = true.into()),
            "spec.webhookdefinitions[2] is a conversion webhook, but the CSV supports the install modes [OwnNamespace, AllNamespaces]",
        ),
        (
            "no sideEffects",
            Box::new(|csv| {
                csv["spec"]["webhookdefinitions"][0]
                    .as_object_mut()
                    .unwrap()
                    .remove("sideEffects");
            }),
            "spec.webhookdefinitions[0].sideEffects must be None or NoneOnDryRun (the API server refuses others), found nothing",
        ),
    ];
    for (what, change, expected) in cases {
        let mut changed = csv.clone();
        change(&mut changed);
        let mut damaged = files.clone();
        damaged.iter_mut().find(|(p, _)| p == csv_path).unwrap().1 =
            serde_yaml_ng::to_string(&changed).unwrap().into_bytes();
        let message = render_files(&damaged, &options("webhooks-builtin")).unwrap_err();
        assert!(message.contains(csv_path), "{what}: {message}");
        assert!(
            message.contains(expected),
            "{what}:\n{message}\ndoes not contain\n{expected}"
        );
    }
    // A namespaceSelector that leaves the protected namespaces out makes the pod webhook fine.
    let mut changed = csv.clone();
    changed["spec"]["webhookdefinitions"][1]["rules"][0] = serde_json::json!(
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]});
    changed["spec"]["webhookdefinitions"][1]["namespaceSelector"] = serde_json::json!({"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", "rukpak-system"]}]});
    let mut fixed = files.clone();
    fixed.iter_mut().find(|(p, _)| p == csv_path).unwrap().1 =
        serde_yaml_ng::to_string(&changed).unwrap().into_bytes();
    render_files(&fixed, &options("webhooks-builtin")).unwrap();
}

#[test]
fn missing_csv_is_rejected() {
    fails("missing-csv", "manifests/");
}

#[test]
fn two_csvs_are_rejected_naming_both_files() {
    let message = fails(
        "two-csvs",
        "manifests/memcached-operator.v0.1.0.clusterserviceversion.yaml",
    );
    assert!(
        message.contains("manifests/memcached-operator.clusterserviceversion.yaml"),
        "{message}"
    );
}

#[test]
fn unsupported_install_mode_is_rejected() {
    let message = fails(
        "unsupported-install-mode",
        "manifests/own-namespace-operator.clusterserviceversion.yaml",
    );
    assert_eq!(
        message,
        "failed to validate target namespaces against ClusterServiceVersion \"own-namespace-operator.v1.0.0\" in \
         manifests/own-namespace-operator.clusterserviceversion.yaml: supported install modes [OwnNamespace] do not \
         support target namespaces [other]"
    );
}

/// A multi-megabyte CRD, generated (the same every time) rather than committed; the output
/// is checked by size and SHA-256 against `huge-crd/expected.sha256`.
#[test]
fn huge_crd_converts() {
    let mut files = render::read_dir(&golden("extra-objects").join("bundle")).unwrap();
    let mut properties = String::new();
    for i in 0..30_000 {
        properties.push_str(&format!(
            "              field{i:05}:\n                description: \"A generated field, number {i}, of a schema as large as real operators ship.\"\n                type: string\n                maxLength: {}\n",
            64 + i % 512
        ));
    }
    let crd = format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: bigs.example.com\nspec:\n  group: example.com\n  names: {{kind: Big, listKind: BigList, plural: bigs, singular: big}}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n{properties}"
    );
    assert!(crd.len() > 4_000_000, "{}", crd.len());
    files.push((
        "manifests/bigs.example.com.yaml".to_owned(),
        crd.into_bytes(),
    ));
    let yaml = render_files(&files, &Options::default()).unwrap();
    assert!(yaml.len() > 4_000_000);
    let docs = documents(&yaml);
    let big = find(&docs, "CustomResourceDefinition", "bigs.example.com");
    let fields = &big["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
    assert_eq!(fields.as_object().unwrap().len(), 30_000);
    let digest = format!(
        "{:x}  {} bytes\n",
        Sha256::digest(yaml.as_bytes()),
        yaml.len()
    );
    compare("huge-crd", "expected.sha256", &digest);
    assert_eq!(render_files(&files, &Options::default()).unwrap(), yaml);
}

fn binary() -> Command {
    Command::new(env!("CARGO_BIN_EXE_registry-provisioner"))
}

#[test]
fn the_render_command_prints_the_golden_output() {
    let bundle = golden("multi-namespace").join("bundle");
    let output = binary()
        .arg("render")
        .arg(&bundle)
        .args(["--target-namespaces", "team-b,team-a"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let expected =
        std::fs::read_to_string(golden("multi-namespace").join("expected.yaml")).unwrap();
    assert_eq!(String::from_utf8(output.stdout).unwrap(), expected);

    let bundle = golden("single-namespace").join("bundle");
    let output = binary()
        .arg("render")
        .arg(&bundle)
        .args([
            "--install-namespace",
            "grafana",
            "--target-namespaces=monitoring",
        ])
        .output()
        .unwrap();
    assert!(output.status.success());
    let expected =
        std::fs::read_to_string(golden("single-namespace").join("expected.yaml")).unwrap();
    assert_eq!(String::from_utf8(output.stdout).unwrap(), expected);
}

#[test]
fn the_render_command_reports_errors_on_stderr_with_a_failure_status() {
    let bundle = golden("unsupported-kind").join("bundle");
    let output = binary().arg("render").arg(&bundle).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    let expected =
        std::fs::read_to_string(golden("unsupported-kind").join("expected.error")).unwrap();
    assert_eq!(
        String::from_utf8(output.stderr).unwrap(),
        format!(
            "registry-provisioner: failed to render bundle {}: {expected}",
            bundle.display()
        )
    );

    let output = binary()
        .args(["render", "/nonexistent/bundle"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.starts_with(
            "registry-provisioner: failed to render bundle /nonexistent/bundle: failed to list directory /nonexistent/bundle: "
        ),
        "{stderr}"
    );
}

/// Damaged bundles never crash the converter: every golden bundle with each manifest cut
/// short at several points, or replaced by pathological YAML, converts or fails with a
/// message naming a bundle file.
#[test]
fn damaged_bundles_fail_with_messages_naming_a_file() {
    let pathological: [(&str, String); 4] = [
        ("deep", "[".repeat(1_000)),
        ("deep-maps", "a:\n".to_owned() + &"{a: ".repeat(1_000)),
        (
            "aliases",
            "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n\
             c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n\
             e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n\
             g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\nh: [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]\n"
                .to_owned(),
        ),
        ("binary", String::from_utf8_lossy(&[0xff, 0xfe, 0, 1, 2, 0x80]).into_owned()),
    ];
    let mut checked = 0;
    for case in ["all-namespaces", "messy", "v1beta1-crd"] {
        let files = render::read_dir(&golden(case).join("bundle")).unwrap();
        let options = options(case);
        for (index, (path, bytes)) in files.iter().enumerate() {
            let mut variants: Vec<Vec<u8>> = (1..8)
                .map(|n| bytes[..bytes.len() * n / 8].to_vec())
                .collect();
            variants.extend(
                pathological
                    .iter()
                    .map(|(_, text)| text.clone().into_bytes()),
            );
            for variant in variants {
                let mut damaged = files.clone();
                damaged[index].1 = variant;
                if let Err(message) = render_files(&damaged, &options) {
                    assert!(
                        message.contains("manifests/") || message.contains("metadata/"),
                        "{case} {path}: {message}"
                    );
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 100, "{checked}");
}
