//! A render run over generated, real-world-shaped registry+v1 bundles.
//!
//! [`generate`] builds bundle number `index` of a seeded, deterministic corpus in memory
//! (no network, no disk), with the shapes published bundles have: every combination of
//! install modes (and none), permissions and clusterPermissions (shared service accounts,
//! the default one, `null` rules), one to three Deployments, owned CRDs both
//! `apiextensions.k8s.io/v1` and `v1beta1` (some of them large; v1beta1 ones with the schema
//! quirks v1 refuses, most of them repairable, a few not), extra manifests of the kinds OLM
//! supports and a few it does not, YAML anchors and merge keys, `null`s, CRLF line ends, byte
//! order marks, comments, empty and comment-only documents, JSON files, webhookdefinitions
//! (validating, mutating and conversion), owned and required apiservicedefinitions, and odd names (long, dotted).
//!
//! Every bundle is rendered in process (`conversion`, then `render::to_yaml`, what
//! `registry-provisioner render` does) in every install mode it supports, or once with the
//! default options when it supports none, under `catch_unwind`. Every converted output is
//! checked independently: CRDs are v1 with structural schemas, no YAML merge key is left, and
//! the YAML reads back. Every refusal must be one the generator planted on purpose.
//!
//! - `a_sample_of_generated_bundles_renders_without_crashes_or_unplanted_refusals`: 100
//!   bundles, with the other tests.
//! - `render_run_over_generated_bundles` (ignored): the large run, printing the table:
//!   `cargo test --release -p registry-provisioner --test corpus -- --ignored --nocapture`
//!   (`CORPUS_BUNDLES`, default 2000; `CORPUS_SEED`, default 20).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Instant;

use registry_provisioner::structural::SchemaRule;
use registry_provisioner::{ConvertError, Options, conversion, render};
use serde_json::{Map, Value, json};

// ---------------------------------------------------------------------------------------
// Deterministic randomness.

/// SplitMix64: small, seedable, the same on every platform.
struct Rng(u64);

impl Rng {
    fn new(seed: u64, index: u64) -> Self {
        let mut rng = Self(seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        rng.next();
        rng
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n.max(1) as u64).unwrap()
    }

    /// True with probability `per_mille` / 1000.
    fn chance(&mut self, per_mille: u64) -> bool {
        self.next() % 1000 < per_mille
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

// ---------------------------------------------------------------------------------------
// The generator.

const MODES: [&str; 4] = [
    "OwnNamespace",
    "SingleNamespace",
    "MultiNamespace",
    "AllNamespaces",
];

const CONVERSION_MODES: &str = "InvalidCsv: spec.webhookdefinitions[0] is a conversion webhook";
const CONVERSION_WITHOUT_CRDS: &str =
    "InvalidCsv: spec.webhookdefinitions[0].conversionCRDs is empty";
const INSTALL_MODE: &str = "InstallMode:";
const V1_UNKNOWN_FIELD: &str = "InvalidCrd: is not a field of apiextensions.k8s.io/v1";

/// A generated bundle.
struct Generated {
    /// The package name (for messages).
    package: String,
    /// `(path, bytes)` of every file.
    files: Vec<(String, Vec<u8>)>,
    /// The install modes marked supported.
    supported: Vec<&'static str>,
    /// Prefixes of the refusals planted on purpose; empty for a bundle that must convert.
    planted: Vec<String>,
    /// v1beta1 CRDs, and those of them given quirks that must be repaired.
    v1beta1_crds: usize,
    quirky_crds: usize,
    /// Extra manifests of kinds OLM does not support.
    webhooks: bool,
    owned_api_services: bool,
}

/// How a file is written.
#[derive(Clone, Copy)]
struct Encoding {
    crlf: bool,
    bom: bool,
}

impl Encoding {
    fn random(rng: &mut Rng) -> Self {
        Self {
            crlf: rng.chance(100),
            bom: rng.chance(30),
        }
    }

    fn bytes(self, text: &str) -> Vec<u8> {
        let text = if self.crlf {
            text.replace('\n', "\r\n")
        } else {
            text.to_owned()
        };
        let mut bytes = Vec::new();
        if self.bom {
            bytes.extend_from_slice(b"\xef\xbb\xbf");
        }
        bytes.extend_from_slice(text.as_bytes());
        bytes
    }
}

fn indent(text: &str, width: usize) -> String {
    let pad = " ".repeat(width);
    text.lines().map(|line| format!("{pad}{line}\n")).collect()
}

fn yaml(value: &Value) -> String {
    serde_yaml_ng::to_string(value).unwrap()
}

const PACKAGES: &[&str] = &[
    "etcd",
    "prometheus",
    "cert-utils",
    "grafana-operator",
    "mongodb-enterprise",
    "strimzi-kafka-operator",
    "x",
    "a1",
    "redis.opstree",
    "postgres-operator.v2",
    "aws-controllers-k8s-elasticache-controller-with-a-really-long-name",
    "keda",
    "node-healthcheck-operator",
    "ibm-common-service-operator",
];

const GROUPS: &[&str] = &[
    "example.com",
    "cache.example.com",
    "database.example.org",
    "monitoring.coreos.com",
    "kafka.strimzi.io",
    "snapshot.storage.k8s.io",
    "apps.x-k8s.io",
    "operator.openshift.io",
    "k8s.io",
];

const KINDS: &[&str] = &[
    "Cluster",
    "Backup",
    "Restore",
    "Instance",
    "Memcached",
    "Topic",
    "User",
    "Database",
    "Policy",
    "Gateway",
    "Snapshot",
    "Agent",
];

fn lower(kind: &str) -> String {
    kind.to_lowercase()
}

fn plural(kind: &str) -> String {
    let lower = lower(kind);
    if lower.ends_with('y') && !lower.ends_with("ay") {
        format!("{}ies", &lower[..lower.len() - 1])
    } else if lower.ends_with('s') || lower.ends_with('h') {
        format!("{lower}es")
    } else {
        format!("{lower}s")
    }
}

/// An ordinary, structural spec or status schema with `fields` fields (kubebuilder-like).
fn fields_schema(rng: &mut Rng, fields: usize, depth: usize) -> Value {
    let mut properties = Map::new();
    for i in 0..fields {
        let name = format!(
            "field{i}{}",
            ["", "Name", "Count", "Enabled", "Spec"][i % 5]
        );
        let value = match rng.below(if depth > 2 { 5 } else { 8 }) {
            0 => json!({"type": "string", "description": format!("The {name} of the resource.")}),
            1 => json!({"type": "integer", "format": "int32", "minimum": 0}),
            2 => json!({"type": "boolean"}),
            3 => json!({"type": "array", "items": {"type": "string"}}),
            4 => json!({"type": "object", "additionalProperties": {"type": "string"}}),
            5 => json!({"type": "array", "items": fields_schema(rng, 3, depth + 1)}),
            6 => {
                json!({"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}], "pattern": "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))$"})
            }
            _ => fields_schema(rng, 4, depth + 1),
        };
        properties.insert(name, value);
    }
    json!({"type": "object", "description": "Generated fields.", "properties": properties})
}

/// The quirks v1beta1 schemas of published bundles have, and what each must become.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Quirk {
    // Repairable.
    TypelessObject,
    TypelessLeaf,
    TypelessArray,
    IntOrStringReversed,
    JunctorOwnTypeAndDescription,
    MetadataDescription,
    PreserveFalse,
    ArrayWithoutItems,
    TypelessRoot,
    TypelessKind,
    MergeKeys,
    // Not repairable.
    JunctorOtherType,
    MetadataLabels,
    FieldOnlyInJunctor,
    DefaultInJunctor,
    UniqueItems,
    ItemsTuple,
}

impl Quirk {
    const REPAIRABLE: [Self; 11] = [
        Self::TypelessObject,
        Self::TypelessLeaf,
        Self::TypelessArray,
        Self::IntOrStringReversed,
        Self::JunctorOwnTypeAndDescription,
        Self::MetadataDescription,
        Self::PreserveFalse,
        Self::ArrayWithoutItems,
        Self::TypelessRoot,
        Self::TypelessKind,
        Self::MergeKeys,
    ];
    const UNREPAIRABLE: [Self; 6] = [
        Self::JunctorOtherType,
        Self::MetadataLabels,
        Self::FieldOnlyInJunctor,
        Self::DefaultInJunctor,
        Self::UniqueItems,
        Self::ItemsTuple,
    ];

    /// The refusal an unrepairable quirk must get.
    fn refusal(self) -> Option<SchemaRule> {
        Some(match self {
            Self::JunctorOtherType => SchemaRule::JunctorType,
            Self::MetadataLabels => SchemaRule::Metadata,
            Self::FieldOnlyInJunctor => SchemaRule::JunctorFieldNotOutside,
            Self::DefaultInJunctor => SchemaRule::JunctorKeyword,
            Self::UniqueItems => SchemaRule::UniqueItems,
            Self::ItemsTuple => SchemaRule::ItemsList,
            _ => return None,
        })
    }
}

/// The root schema of a CRD with `quirks` applied.
fn crd_schema(rng: &mut Rng, big: bool, quirks: &[Quirk]) -> Value {
    let fields = if big {
        400 + rng.below(2500)
    } else {
        3 + rng.below(25)
    };
    let mut spec = fields_schema(rng, fields, 0);
    spec["properties"]["size"] = json!({"type": "integer", "description": "Members."});
    spec["properties"]["version"] = json!({"type": "string"});
    let status = json!({"type": "object", "properties": {
        "phase": {"type": "string"},
        "conditions": {"type": "array", "items": {"type": "object", "properties": {
            "type": {"type": "string"}, "status": {"type": "string"},
            "lastTransitionTime": {"type": "string", "format": "date-time"},
        }}},
    }});
    let mut root = json!({
        "type": "object",
        "description": "A generated resource.",
        "properties": {
            "apiVersion": {"type": "string", "description": "APIVersion defines the versioned schema."},
            "kind": {"type": "string", "description": "Kind is a string value."},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
    });
    for quirk in quirks {
        let spec = &mut root["properties"]["spec"];
        match quirk {
            Quirk::TypelessObject => {
                spec.as_object_mut().unwrap().remove("type");
            }
            Quirk::TypelessLeaf => {
                spec["properties"]["config"] =
                    json!({"description": "Free-form configuration passed to the operand."});
            }
            Quirk::TypelessArray => {
                spec["properties"]["hosts"] = json!({"items": {"type": "string"}});
            }
            Quirk::IntOrStringReversed => {
                spec["properties"]["maxUnavailable"] =
                    json!({"anyOf": [{"type": "string"}, {"type": "integer"}]});
            }
            Quirk::JunctorOwnTypeAndDescription => {
                spec["oneOf"] = json!([
                    {"type": "object", "description": "Sized.", "required": ["size"]},
                    {"title": "Versioned", "required": ["version"], "properties": {"version": {"minLength": 1}}},
                ]);
            }
            Quirk::MetadataDescription => {
                root["properties"]["metadata"] =
                    json!({"description": "Standard object metadata."});
            }
            Quirk::PreserveFalse => {
                spec["x-kubernetes-preserve-unknown-fields"] = json!(false);
            }
            Quirk::ArrayWithoutItems => {
                spec["properties"]["extraArgs"] = json!({"type": "array"});
            }
            Quirk::TypelessRoot => {
                root.as_object_mut().unwrap().remove("type");
            }
            Quirk::TypelessKind => {
                root["properties"]["kind"] = json!({"description": "Kind is a string value."});
            }
            Quirk::MergeKeys => {} // written into the text
            Quirk::JunctorOtherType => {
                spec["properties"]["value"] =
                    json!({"anyOf": [{"type": "string"}, {"type": "boolean"}]});
            }
            Quirk::MetadataLabels => {
                root["properties"]["metadata"] = json!({"type": "object", "properties": {
                    "name": {"type": "string", "maxLength": 63},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                }});
            }
            Quirk::FieldOnlyInJunctor => {
                spec["anyOf"] = json!([{"required": ["size"]}, {"required": ["replicas"], "properties": {"replicas": {"minimum": 1}}}]);
            }
            Quirk::DefaultInJunctor => {
                spec["properties"]["mode"] =
                    json!({"type": "string", "allOf": [{"enum": ["a", "b"]}, {"default": "a"}]});
            }
            Quirk::UniqueItems => {
                spec["properties"]["zones"] =
                    json!({"type": "array", "uniqueItems": true, "items": {"type": "string"}});
            }
            Quirk::ItemsTuple => {
                spec["properties"]["pair"] =
                    json!({"type": "array", "items": [{"type": "string"}, {"type": "integer"}]});
            }
        }
    }
    root
}

/// `schema` as YAML at `width`, with anchors and merge keys among the root's properties
/// when asked.
fn schema_text(schema: &Value, width: usize, merge_keys: bool) -> String {
    let mut text = yaml(schema);
    if merge_keys && let Some(at) = text.find("properties:\n") {
        let shared = "  shared: &shared\n    type: object\n    properties:\n      enabled:\n        type: boolean\n      schedule: &schedule\n        type: string\n        description: A cron schedule.\n  backup:\n    <<: *shared\n    description: Backup settings.\n  retention:\n    <<: *schedule\n    description: How long to keep backups.\n";
        text.insert_str(at + "properties:\n".len(), shared);
    }
    indent(&text, width)
}

struct CrdOut {
    file: String,
    text: String,
    v1beta1: bool,
    quirky: bool,
    /// The prefix of the refusal planted in it, if any.
    refusal: Option<String>,
    group: String,
    kind: String,
    version: String,
}

fn crd(rng: &mut Rng, index: usize, used: &mut Vec<String>) -> CrdOut {
    let group = rng.pick(GROUPS).to_string();
    let mut kind = rng.pick(KINDS).to_string();
    while used.contains(&format!("{kind}.{group}")) {
        kind.push('X');
    }
    used.push(format!("{kind}.{group}"));
    let plural = plural(&kind);
    let name = format!("{plural}.{group}");
    let big = rng.chance(30);
    let v1beta1 = rng.chance(350);
    let version = rng
        .pick(&["v1", "v1alpha1", "v1beta1", "v2beta2"])
        .to_string();
    let mut quirks = Vec::new();
    let mut refusal = None;
    if v1beta1 {
        for quirk in Quirk::REPAIRABLE {
            if rng.chance(220) {
                quirks.push(quirk);
            }
        }
        for quirk in Quirk::UNREPAIRABLE {
            if rng.chance(6) && refusal.is_none() {
                quirks.push(quirk);
                refusal = quirk
                    .refusal()
                    .map(|rule| format!("CrdSchema: {}", rule.as_str()));
            }
        }
    } else if rng.chance(100) {
        quirks.push(Quirk::MergeKeys);
    }
    let schema = crd_schema(rng, big, &quirks);
    let merge_keys = quirks.contains(&Quirk::MergeKeys);
    let scope = match rng.below(10) {
        0 if v1beta1 => String::new(), // v1beta1 defaulted it
        1..=3 => "  scope: Cluster\n".to_owned(),
        _ => "  scope: Namespaced\n".to_owned(),
    };
    let approval = if group.ends_with("k8s.io") && (!v1beta1 || rng.chance(500)) {
        "  annotations:\n    api-approved.kubernetes.io: https://github.com/kubernetes/enhancements/pull/1111\n"
    } else {
        ""
    };
    let names = format!(
        "  names:\n    kind: {kind}\n    listKind: {kind}List\n    plural: {plural}\n    singular: {}\n",
        lower(&kind)
    );
    let text = if v1beta1 {
        let preserve = match rng.below(4) {
            0 => "  preserveUnknownFields: false\n",
            1 => "  preserveUnknownFields: true\n",
            _ => "",
        };
        let columns = if rng.chance(400) {
            "  additionalPrinterColumns:\n  - name: Phase\n    type: string\n    JSONPath: .status.phase\n  - name: Age\n    type: date\n    JSONPath: .metadata.creationTimestamp\n"
        } else {
            ""
        };
        let subresources = if rng.chance(500) {
            "  subresources:\n    status: {}\n"
        } else {
            ""
        };
        let conversion = if rng.chance(50) {
            "  conversion:\n    strategy: Webhook\n    webhookClientConfig:\n      service:\n        namespace: system\n        name: webhook-service\n        path: /convert\n"
        } else {
            ""
        };
        let versions = if rng.chance(300) {
            // Per-version schemas, an older version not served.
            format!(
                "  versions:\n  - name: {version}\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n{}  - name: v0\n    served: false\n    storage: false\n    schema:\n      openAPIV3Schema:\n{}",
                schema_text(&schema, 8, merge_keys),
                schema_text(&schema, 8, false)
            )
        } else {
            format!(
                "  version: {version}\n  versions:\n  - name: {version}\n    served: true\n    storage: true\n  validation:\n    openAPIV3Schema:\n{}",
                schema_text(&schema, 6, merge_keys)
            )
        };
        format!(
            "# Generated by an old operator-sdk.\napiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\nmetadata:\n  name: {name}\n{approval}spec:\n  group: {group}\n{names}{scope}{preserve}{columns}{subresources}{conversion}{versions}status:\n  acceptedNames:\n    kind: \"\"\n    plural: \"\"\n  conditions: null\n  storedVersions: null\n"
        )
    } else {
        let scope = if scope.is_empty() {
            "  scope: Namespaced\n".to_owned()
        } else {
            scope
        };
        // v1 CRDs published with what v1 does not have: a v1beta1 field name kept through a
        // hand migration, or a typo in the schema. The API server refuses them; so must render.
        let (columns, typo) = if rng.chance(15) {
            refusal = Some(V1_UNKNOWN_FIELD.to_owned());
            if rng.chance(500) {
                (
                    "    additionalPrinterColumns:\n    - name: Phase\n      type: string\n      JSONPath: .status.phase\n",
                    "",
                )
            } else {
                ("", "        descripton: Migrated by hand from v1beta1.\n")
            }
        } else {
            ("", "")
        };
        format!(
            "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  annotations:\n    controller-gen.kubebuilder.io/version: v0.14.0\n{}  name: {name}\nspec:\n  group: {group}\n{names}{scope}  versions:\n  - name: {version}\n    served: true\n    storage: true\n    subresources:\n      status: {{}}\n{columns}    schema:\n      openAPIV3Schema:\n{typo}{}",
            approval.replace("  annotations:\n", ""),
            schema_text(&schema, 8, merge_keys)
        )
    };
    let file = if rng.chance(50) {
        // Some bundles ship CRDs as JSON.
        let value: Value = serde_yaml_ng::from_str(text.trim_start_matches("---\n")).unwrap();
        return CrdOut {
            file: format!("manifests/{index}-{name}.crd.json"),
            text: serde_json::to_string_pretty(&value).unwrap(),
            v1beta1,
            quirky: v1beta1 && !quirks.is_empty(),
            refusal,
            group,
            kind,
            version,
        };
    } else {
        format!("manifests/{group}_{plural}.yaml")
    };
    CrdOut {
        file,
        text,
        v1beta1,
        quirky: v1beta1 && !quirks.is_empty(),
        refusal,
        group,
        kind,
        version,
    }
}

/// Rules of one permission. Anchors are named uniquely per list (`anchor`): serde_yaml_ng
/// 0.10 resolves an alias of a name defined twice to the wrong node when another anchor
/// follows (`a: &x [1]`, `b: &x [2]`, `c: *x`, `d: &y {k: v}` reads `c` as `{k: v}`), so
/// redefined anchors are left out of the corpus (see docs/registry-provisioner.md).
fn rules_text(rng: &mut Rng, groups: &[String], cluster: bool, anchor: usize) -> String {
    let mut text = String::new();
    let count = 1 + rng.below(6);
    for i in 0..count {
        let group = if i == 0 && !groups.is_empty() {
            groups[0].clone()
        } else {
            rng.pick(&[
                "",
                "apps",
                "coordination.k8s.io",
                "monitoring.coreos.com",
                "batch",
            ])
            .to_string()
        };
        let resources = rng.pick(&[
            "[configmaps, secrets, services]",
            "[deployments, statefulsets]",
            "[leases]",
            "[pods, pods/log]",
            "[servicemonitors]",
            "[jobs, cronjobs]",
            "[events]",
        ]);
        let verbs = if i > 0 && rng.chance(300) {
            format!("*crud{anchor}")
        } else if i == 0 {
            format!("&crud{anchor} [get, list, watch, create, update, patch, delete]")
        } else {
            rng.pick(&["[get, list, watch]", "[create, patch]", "['*']"])
                .to_string()
        };
        let _ = write!(
            text,
            "        - apiGroups: [{group:?}]\n          resources: {resources}\n          verbs: {verbs}\n"
        );
        if rng.chance(100) {
            text.push_str("          resourceNames: [leader-lock]\n");
        }
    }
    if cluster && rng.chance(200) {
        text.push_str("        - nonResourceURLs: [/metrics]\n          verbs: [get]\n");
    }
    text
}

fn permissions_text(rng: &mut Rng, key: &str, accounts: &[String], groups: &[String]) -> String {
    match rng.below(12) {
        0 => return format!("      {key}: null\n"),
        1 => return String::new(),
        _ => {}
    }
    let cluster = key == "clusterPermissions";
    let mut text = format!("      {key}:\n");
    for (n, account) in accounts
        .iter()
        .take(1 + rng.below(accounts.len()))
        .enumerate()
    {
        let _ = writeln!(text, "      - serviceAccountName: {account}");
        if rng.chance(40) {
            text.push_str("        rules: null\n");
        } else {
            text.push_str("        rules:\n");
            text.push_str(&rules_text(
                rng,
                groups,
                cluster,
                10 * usize::from(cluster) + n,
            ));
        }
    }
    text
}

fn deployment_text(rng: &mut Rng, name: &str, account: &str, merge_keys: bool) -> String {
    let undeclared = UndeclaredFields::random(rng);
    // A label value holds at most 63 characters (authors shorten long names, as OLM would
    // otherwise fail the install).
    let value: String = name.chars().take(63).collect();
    let value = value.trim_end_matches(['-', '.']);
    let labels = if merge_keys {
        "              labels:\n                <<: *selector\n                app.kubernetes.io/part-of: generated\n"
            .to_owned()
    } else {
        format!("              labels:\n                control-plane: {value}\n")
    };
    let selector = if merge_keys {
        format!("            matchLabels: &selector\n              control-plane: {value}\n")
    } else {
        format!("            matchLabels:\n              control-plane: {value}\n")
    };
    let annotations = match rng.below(4) {
        0 => "              annotations: null\n",
        1 => {
            "              annotations:\n                kubectl.kubernetes.io/default-container: manager\n"
        }
        _ => "",
    };
    let replicas = rng.pick(&["1", "null", "2"]);
    let account_line = if account.is_empty() {
        String::new()
    } else {
        format!("              serviceAccountName: {account}\n")
    };
    format!(
        "      - name: {name}\n        label:\n          control-plane: {value}\n        spec:\n          replicas: {replicas}\n          revisionHistoryLimit: 10\n          selector:\n{selector}          strategy: {{}}\n          template:\n            metadata:\n{labels}{annotations}            spec:\n{account_line}              securityContext:\n                runAsNonRoot: true\n              containers:\n              - name: manager\n                image: quay.io/example/{name}@sha256:{:064x}\n                args: [--leader-elect, --metrics-bind-address=:8080]\n                env:\n                - name: WATCH_NAMESPACE\n                  valueFrom:\n                    fieldRef:\n                      fieldPath: metadata.annotations['olm.targetNamespaces']\n                - name: OPERATOR_NAMESPACE\n                  valueFrom:\n                    fieldRef:\n                      fieldPath: metadata.annotations['olm.operatorNamespace']\n                - name: EMPTY\n                  value: null\n                resources:\n                  limits: {{cpu: 500m, memory: 128Mi}}\n                  requests: {{cpu: 10m, memory: 64Mi}}\n{probe}              terminationGracePeriodSeconds: 10\n{volumes}",
        rng.next(),
        probe = undeclared.probe,
        volumes = undeclared.volumes,
    )
    .replacen("          strategy: {}\n", undeclared.strategy, 1)
    .replacen(
        "          template:\n",
        if undeclared.template_containers {
            "          template:\n            containers: []\n"
        } else {
            "          template:\n"
        },
        1,
    )
}

/// Fields published CSVs carry in deployment specs that Kubernetes does not have (OLM drops
/// them; render must too, or server-side apply refuses the Deployment), or none.
struct UndeclaredFields {
    probe: &'static str,
    volumes: &'static str,
    strategy: &'static str,
    /// `containers` one level too high, beside the template's `spec`.
    template_containers: bool,
}

impl UndeclaredFields {
    fn random(rng: &mut Rng) -> Self {
        let mut fields = Self {
            probe: "",
            volumes: "",
            strategy: "          strategy: {}\n",
            template_containers: false,
        };
        if rng.chance(60) {
            fields.probe = "                readinessProbe:\n                  httpGet: {path: /readyz, port: 8081}\n                  resources:\n                    requests: {cpu: 10m}\n";
        }
        if rng.chance(60) {
            fields.volumes = "              volumes:\n              - name: tmp\n                defaultMode: 420\n                emptyDir: {}\n";
        }
        if rng.chance(40) {
            fields.strategy = "          strategy: {}\n          metadata:\n            labels: {app: operator}\n";
        }
        fields.template_containers = rng.chance(30);
        fields
    }
}

/// Extra manifests OLM supports, each `(file stem, text)`.
fn extra_manifests(rng: &mut Rng, package: &str) -> Vec<(String, String)> {
    let all = [
        (
            "metrics-service",
            format!(
                "apiVersion: v1\nkind: Service\nmetadata:\n  name: {package}-metrics\n  labels:\n    control-plane: controller-manager\nspec:\n  ports:\n  - name: https\n    port: 8443\n    targetPort: https\n  selector:\n    control-plane: controller-manager\n"
            ),
        ),
        (
            "config",
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {package}-config\ndata:\n  config.yaml: |\n    leaderElection: true\n  enabled: \"on\"\n  empty:\n"
            ),
        ),
        (
            "monitor",
            format!(
                "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata:\n  name: {package}-monitor\nspec:\n  endpoints:\n  - port: https\n    scheme: https\n  selector:\n    matchLabels:\n      control-plane: controller-manager\n"
            ),
        ),
        (
            "alerts",
            format!(
                "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata:\n  name: {package}-alerts\nspec:\n  groups:\n  - name: operator\n    rules:\n    - alert: OperatorDown\n      expr: absent(up{{job=\"{package}\"}})\n      for: 10m\n"
            ),
        ),
        (
            "metrics-reader",
            format!(
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {package}-metrics-reader\nrules:\n- nonResourceURLs: [/metrics]\n  verbs: [get]\n"
            ),
        ),
        (
            "secret",
            format!(
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {package}-defaults\ntype: Opaque\nstringData:\n  mode: \"yes\"\n"
            ),
        ),
        (
            "pdb",
            format!(
                "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: {package}\nspec:\n  minAvailable: 1\n  selector:\n    matchLabels:\n      control-plane: controller-manager\n"
            ),
        ),
        (
            "priority",
            format!(
                "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: {package}-critical\nvalue: 1000000\nglobalDefault: false\n"
            ),
        ),
        (
            "sample",
            format!(
                "apiVersion: console.openshift.io/v1\nkind: ConsoleYAMLSample\nmetadata:\n  name: {package}-sample\nspec:\n  title: Sample\n  description: A sample.\n  targetResource:\n    apiVersion: example.com/v1\n    kind: Cluster\n  yaml: |\n    apiVersion: example.com/v1\n    kind: Cluster\n"
            ),
        ),
        (
            "netpol",
            format!(
                "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: {package}-allow-metrics\nspec:\n  podSelector: {{}}\n  policyTypes: [Ingress]\n"
            ),
        ),
        (
            "role",
            format!(
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: {package}-leader-election\nrules:\n- apiGroups: [coordination.k8s.io]\n  resources: [leases]\n  verbs: [get, create, update]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: {package}-leader-election\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: {package}-leader-election\nsubjects:\n- kind: ServiceAccount\n  name: {package}-controller-manager\n"
            ),
        ),
        (
            "vpa",
            format!(
                "apiVersion: autoscaling.k8s.io/v1\nkind: VerticalPodAutoscaler\nmetadata:\n  name: {package}\nspec:\n  targetRef:\n    apiVersion: apps/v1\n    kind: Deployment\n    name: {package}-controller-manager\n"
            ),
        ),
    ];
    let mut out = Vec::new();
    for (stem, text) in all {
        if rng.chance(250) {
            out.push((stem.to_owned(), text));
        }
    }
    out
}

const UNSUPPORTED_KINDS: &[(&str, &str)] = &[
    ("PodMonitor", "monitoring.coreos.com/v1"),
    ("Job", "batch/v1"),
    (
        "ValidatingWebhookConfiguration",
        "admissionregistration.k8s.io/v1",
    ),
    ("Issuer", "cert-manager.io/v1"),
    ("Deployment", "apps/v1"),
];

/// Bundle number `index` of the corpus seeded with `seed`.
fn generate(seed: u64, index: usize) -> Generated {
    let rng = &mut Rng::new(seed, index as u64);
    let base = rng.pick(PACKAGES).to_string();
    let package = if rng.chance(500) {
        format!("{base}-{index}")
    } else {
        base
    };
    let version = format!(
        "{}.{}.{}{}",
        rng.below(4),
        rng.below(20),
        rng.below(10),
        if rng.chance(100) { "-rc.1" } else { "" }
    );
    let csv_name = format!("{package}.v{version}");
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut planted = Vec::new();

    // Install modes.
    let mut supported = Vec::new();
    let mut modes_text = String::from("  installModes:\n");
    if rng.chance(10) {
        modes_text = "  installModes: null\n".to_owned();
    } else {
        let combination = rng.below(16);
        for (bit, mode) in MODES.iter().enumerate() {
            let on = combination & (1 << bit) != 0;
            if on {
                supported.push(*mode);
            }
            if on || rng.chance(800) {
                let _ = write!(modes_text, "  - type: {mode}\n    supported: {on}\n");
            }
        }
    }
    if supported.is_empty() {
        planted.push(INSTALL_MODE.to_owned());
    }

    // CRDs.
    let mut used = Vec::new();
    let crds: Vec<CrdOut> = (0..rng.below(5)).map(|i| crd(rng, i, &mut used)).collect();
    let v1beta1_crds = crds.iter().filter(|c| c.v1beta1).count();
    let quirky_crds = crds.iter().filter(|c| c.quirky).count();
    for crd in &crds {
        if let Some(rule) = &crd.refusal {
            planted.push(rule.clone());
        }
    }
    let groups: Vec<String> = crds.iter().map(|c| c.group.clone()).collect();
    let mut owned = String::new();
    for crd in &crds {
        let _ = write!(
            owned,
            "    - name: {}.{}\n      version: {}\n      kind: {}\n      displayName: {}\n      description: null\n",
            plural(&crd.kind),
            crd.group,
            crd.version,
            crd.kind,
            crd.kind
        );
    }
    let owned = if owned.is_empty() {
        "    owned: null\n".to_owned()
    } else {
        format!("    owned:\n{owned}")
    };

    // Service accounts, permissions, deployments.
    let long = format!("{package}-controller-manager-with-an-unusually-long-account-name");
    let accounts: Vec<String> = [
        format!("{package}-controller-manager"),
        format!("{package}.webhook"),
        long,
        String::new(),
    ]
    .into_iter()
    .take(1 + rng.below(3))
    .collect();
    let mut accounts = accounts;
    if rng.chance(50) {
        accounts.push(String::new());
    }
    let merge_keys = rng.chance(150);
    let permissions = permissions_text(rng, "permissions", &accounts, &groups);
    let cluster_permissions = permissions_text(rng, "clusterPermissions", &accounts, &groups);
    let mut deployments = String::from("      deployments:\n");
    for d in 0..1 + rng.below(3) {
        let name = if d == 0 {
            format!("{package}-controller-manager")
        } else {
            format!("{package}-worker-{d}")
        };
        let account = accounts[d % accounts.len()].clone();
        deployments.push_str(&deployment_text(rng, &name, &account, merge_keys && d == 0));
    }

    // Webhooks and API services.
    let mut extra_services: Vec<(String, String)> = Vec::new();
    let webhooks = rng.chance(190);
    let webhooks_text = if webhooks {
        let kind = rng.pick(&[
            "ValidatingAdmissionWebhook",
            "MutatingAdmissionWebhook",
            "ConversionWebhook",
        ]);
        // A conversion webhook converts the first owned CRD; OLM allows it only in bundles
        // that install for all namespaces and nothing else.
        let conversion_crds = if *kind == "ConversionWebhook" {
            if supported != ["AllNamespaces"] {
                planted.push(CONVERSION_MODES.to_owned());
            }
            match crds.first() {
                Some(crd) => format!(
                    "    conversionCRDs: [{}.{}]\n",
                    plural(&crd.kind),
                    crd.group
                ),
                None => {
                    planted.push(CONVERSION_WITHOUT_CRDS.to_owned());
                    String::new()
                }
            }
        } else {
            String::new()
        };
        // Operators that inject sidecars or validate configuration intercept core kinds in
        // every namespace, with no namespaceSelector; 0 or no targetPort means the port.
        let (group, resources) = if *kind == "ConversionWebhook" || rng.chance(500) {
            ("example.com", "[clusters]")
        } else {
            (
                "\"\"",
                *rng.pick(&[
                    "[pods]",
                    "[configmaps, secrets]",
                    "[services, endpoints]",
                    "[pods, pods/exec]",
                ]),
            )
        };
        let target_port = *rng.pick(&["    targetPort: 9443\n", "    targetPort: 0\n", ""]);
        if rng.chance(300) {
            // A Service shipped under the name OLM gives the webhook Service.
            extra_services.push((
                "webhook-service".to_owned(),
                format!("apiVersion: v1\nkind: Service\nmetadata:\n  name: {}\nspec:\n  ports:\n  - port: 443\n    targetPort: 9443\n  selector:\n    control-plane: controller-manager\n", registry_provisioner::webhooks::service_name(&format!("{package}-controller-manager"))),
            ));
        }
        format!(
            "  webhookdefinitions:\n  - type: {kind}\n    admissionReviewVersions: [v1]\n    containerPort: 9443\n{target_port}    deploymentName: {package}-controller-manager\n    failurePolicy: Fail\n    generateName: v{}.kb.io\n    sideEffects: None\n    webhookPath: /validate\n{conversion_crds}    rules:\n    - apiGroups: [{group}]\n      apiVersions: [v1]\n      operations: [CREATE, UPDATE]\n      resources: {resources}\n",
            lower(&package).replace('.', "-")
        )
    } else if rng.chance(100) {
        "  webhookdefinitions: null\n".to_owned()
    } else {
        String::new()
    };
    let owned_api_services = rng.chance(20);
    let api_services = if owned_api_services {
        format!(
            "  apiservicedefinitions:\n    owned:\n    - group: metrics.{package}.example.com\n      version: v1beta1\n      kind: PodMetrics\n      name: podmetrics\n      deploymentName: {package}-controller-manager\n      containerPort: 6443\n"
        )
    } else if rng.chance(30) {
        "  apiservicedefinitions:\n    required:\n    - group: metrics.k8s.io\n      version: v1beta1\n      kind: PodMetrics\n      name: pods\n".to_owned()
    } else {
        "  apiservicedefinitions: {}\n".to_owned()
    };

    // The CSV.
    let suggested = if rng.chance(400) {
        // A valid namespace name, as authors suggest (an invalid one is refused; see the
        // install_modes unit tests).
        let base: String = package
            .chars()
            .take(40)
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        format!(
            "    operatorframework.io/suggested-namespace: {}-ops\n",
            base.trim_matches('-')
        )
    } else {
        String::new()
    };
    let created = rng.pick(&["\"2024-01-02T03:04:05Z\"", "", "null", "2019-07-08"]);
    let replaces = if rng.chance(500) {
        format!("  replaces: {package}.v0.0.1\n")
    } else {
        "  replaces: null\n".to_owned()
    };
    let labels = if merge_keys {
        "  labels:\n    <<: &arch\n      operatorframework.io/arch.amd64: supported\n      operatorframework.io/os.linux: supported\n"
    } else {
        ""
    };
    let csv = format!(
        "# This file was generated; do not edit.\n---\n# comment-only document\n---\napiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: {csv_name}\n  namespace: placeholder\n  annotations:\n    alm-examples: '[{{\"apiVersion\": \"example.com/v1\", \"kind\": \"Cluster\", \"metadata\": {{\"name\": \"example\"}}}}]'\n    capabilities: Basic Install\n    createdAt: {created}\n    description:\n    olm.skipRange: '>=0.0.1 <{version}'\n{suggested}{labels}spec:\n  displayName: {package}\n  description: null\n  version: {version}\n{replaces}  maturity: alpha\n  keywords: null\n  maintainers:\n  - name: null\n    email: ops@example.com\n  customresourcedefinitions:\n{owned}    required: null\n{api_services}{webhooks_text}{modes_text}  install:\n    strategy: deployment\n    spec:\n{permissions}{cluster_permissions}{deployments}  relatedImages: null\n...\n"
    );
    let csv_file = if rng.chance(300) {
        format!("manifests/{package}.clusterserviceversion.yaml")
    } else {
        format!("manifests/{}.clusterserviceversion.yaml", lower(&package))
    };
    files.push((csv_file, Encoding::random(rng).bytes(&csv)));

    for crd in &crds {
        files.push((crd.file.clone(), Encoding::random(rng).bytes(&crd.text)));
    }

    // Extra manifests, sometimes several per file, sometimes one twice in two files (as
    // bundles assembled by two generators are).
    let mut extras = extra_manifests(rng, &package);
    extras.extend(extra_services);
    if rng.chance(100)
        && let Some((stem, text)) = extras.first().cloned()
    {
        extras.push((format!("{stem}-copy"), text));
    }
    if rng.chance(300) && extras.len() > 1 {
        let joined = extras
            .iter()
            .map(|(_, text)| text.clone())
            .collect::<Vec<_>>()
            .join("---\n# next\n---\n");
        files.push((
            "manifests/extras.yaml".to_owned(),
            Encoding::random(rng).bytes(&joined),
        ));
    } else {
        for (stem, text) in &extras {
            files.push((
                format!("manifests/{package}-{stem}.yaml"),
                Encoding::random(rng).bytes(text),
            ));
        }
    }
    if rng.chance(25) {
        let (kind, api_version) = *rng.pick(UNSUPPORTED_KINDS);
        planted.push(format!("UnsupportedKind: {kind}"));
        files.push((
            format!("manifests/{}.yaml", lower(kind)),
            format!("apiVersion: {api_version}\nkind: {kind}\nmetadata:\n  name: {package}-extra\nspec: {{}}\n").into_bytes(),
        ));
    }
    if rng.chance(50) {
        files.push((
            "manifests/empty.yaml".to_owned(),
            b"# nothing here yet\n---\n".to_vec(),
        ));
    }

    // Metadata.
    let annotations = format!(
        "annotations:\n  # Core bundle annotations.\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.manifests.v1: manifests/\n  operators.operatorframework.io.bundle.metadata.v1: metadata/\n  operators.operatorframework.io.bundle.package.v1: {package}\n  operators.operatorframework.io.bundle.channels.v1: stable,alpha\n  operators.operatorframework.io.bundle.channel.default.v1: stable\n  operators.operatorframework.io.metrics.builder: null\n"
    );
    files.push((
        "metadata/annotations.yaml".to_owned(),
        Encoding::random(rng).bytes(&annotations),
    ));
    if rng.chance(200) {
        files.push((
            "tests/scorecard/config.yaml".to_owned(),
            b"kind: Configuration\nstages: []\n".to_vec(),
        ));
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));

    Generated {
        package,
        files,
        supported,
        planted,
        v1beta1_crds,
        quirky_crds,
        webhooks,
        owned_api_services,
    }
}

// ---------------------------------------------------------------------------------------
// Rendering and checking.

/// The options rendering a bundle in `mode`.
fn options_for(mode: &str) -> Options {
    match mode {
        "AllNamespaces" => Options {
            install_namespace: None,
            target_namespaces: vec![String::new()],
            ..Options::default()
        },
        "OwnNamespace" => Options {
            install_namespace: Some("operators".to_owned()),
            target_namespaces: vec!["operators".to_owned()],
            ..Options::default()
        },
        "SingleNamespace" => Options {
            install_namespace: None,
            target_namespaces: vec!["team-a".to_owned()],
            ..Options::default()
        },
        _ => Options {
            install_namespace: None,
            target_namespaces: vec!["team-a".to_owned(), "team-b".to_owned()],
            ..Options::default()
        },
    }
}

/// The rule of a refusal: the error's kind and its fixed first words.
fn rule_of(err: &ConvertError) -> String {
    let first_words = |message: &str| {
        message
            .split(':')
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .take(8)
            .collect::<Vec<_>>()
            .join(" ")
    };
    match err {
        ConvertError::UnsupportedCsv { message, .. } => {
            format!("UnsupportedCsv: {}", first_words(message))
        }
        ConvertError::UnsupportedKind { kind, .. } => format!("UnsupportedKind: {kind}"),
        ConvertError::InstallMode { message, .. } => {
            format!("InstallMode: {}", first_words(message))
        }
        ConvertError::CrdSchema { problem, .. } => format!("CrdSchema: {}", problem.rule),
        ConvertError::CrdConversion { message, .. } => {
            format!("CrdConversion: {}", first_words(message))
        }
        ConvertError::InvalidCsv { message, .. } => {
            format!("InvalidCsv: {}", first_words(message))
        }
        ConvertError::InvalidCrd { message, .. } => {
            format!("InvalidCrd: {}", first_words(message))
        }
        ConvertError::Manifest(err) => format!("Manifest: {}", first_words(&err.to_string())),
        other => format!("other: {}", first_words(&other.to_string())),
    }
}

enum Outcome {
    /// Converted, with the kinds of adjustment made (see [`adjustment_kind`]).
    Converted(Vec<&'static str>),
    Refused(String, String),
    Crashed(String),
    /// Converted, but the output breaks a rule the API server enforces.
    Invalid(String),
}

fn render_once(bundle: &Generated, options: &Options) -> Outcome {
    let files = &bundle.files;
    let result = catch_unwind(AssertUnwindSafe(|| {
        let conversion = conversion(
            files.iter().map(|(p, b)| (p.as_str(), b.as_slice())),
            options,
        )?;
        let yaml = render::to_yaml(&conversion.objects).map_err(|err| err.to_string());
        Ok::<_, ConvertError>((conversion.objects, conversion.adjustments, yaml))
    }));
    match result {
        Err(panic) => Outcome::Crashed(
            panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default(),
        ),
        Ok(Err(err)) => Outcome::Refused(rule_of(&err), err.to_string()),
        Ok(Ok((_, _, Err(err)))) => Outcome::Invalid(format!("failed to write YAML: {err}")),
        Ok(Ok((objects, adjustments, Ok(yaml)))) => {
            let documents: Vec<Value> = match serde_yaml_ng::Deserializer::from_str(&yaml)
                .map(|doc| serde::Deserialize::deserialize(doc).map_err(|e| e.to_string()))
                .collect::<Result<_, _>>()
            {
                Ok(documents) => documents,
                Err(err) => return Outcome::Invalid(format!("the YAML does not read back: {err}")),
            };
            if documents.len() != objects.len() {
                return Outcome::Invalid("the YAML has a different number of objects".to_owned());
            }
            for document in &documents {
                if let Err(problem) = check_object(document) {
                    return Outcome::Invalid(format!(
                        "{} {}: {problem}",
                        document["kind"], document["metadata"]["name"]
                    ));
                }
            }
            let mut kinds: Vec<&'static str> =
                adjustments.iter().map(|a| adjustment_kind(a)).collect();
            kinds.sort_unstable();
            kinds.dedup();
            Outcome::Converted(kinds)
        }
    }
}

/// What an adjustment reported by the conversion is, for the table.
fn adjustment_kind(adjustment: &str) -> &'static str {
    if adjustment.contains("its namespaceSelector now also excludes") {
        "webhook kept out of the protected namespaces"
    } else if adjustment.contains("which Kubernetes does not have") {
        "fields Kubernetes does not have dropped from a Deployment"
    } else if adjustment.contains("is defined identically in") {
        "identical manifests installed once"
    } else if adjustment.contains("is replaced by the one generated from the CSV") {
        "manifest replaced by the object OLM generates"
    } else {
        "other"
    }
}

/// What the API server would check of a rendered object, independently of the conversion's
/// own code: no YAML merge key left; CRDs are v1 with a scope and structural schemas.
fn check_object(object: &Value) -> Result<(), String> {
    if let Some(namespace) = object["metadata"]["namespace"].as_str() {
        let label = namespace.len() <= 63
            && !namespace.starts_with('-')
            && !namespace.ends_with('-')
            && namespace
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !label || namespace.is_empty() {
            return Err(format!(
                "metadata.namespace {namespace:?} is not a valid namespace name"
            ));
        }
    }
    fn no_merge_key(value: &Value, path: &str) -> Result<(), String> {
        match value {
            Value::Object(map) => {
                if map.contains_key("<<") {
                    return Err(format!("a YAML merge key is left at {path}"));
                }
                for (k, v) in map {
                    no_merge_key(v, &format!("{path}.{k}"))?;
                }
                Ok(())
            }
            Value::Array(items) => items
                .iter()
                .enumerate()
                .try_for_each(|(i, v)| no_merge_key(v, &format!("{path}[{i}]"))),
            _ => Ok(()),
        }
    }
    no_merge_key(object, "")?;
    if object["kind"] != "CustomResourceDefinition" {
        return Ok(());
    }
    if object["apiVersion"] != "apiextensions.k8s.io/v1" {
        return Err(format!("apiVersion is {}", object["apiVersion"]));
    }
    let spec = &object["spec"];
    for moved in [
        "validation",
        "version",
        "preserveUnknownFields",
        "subresources",
    ] {
        if spec.get(moved).is_some() {
            return Err(format!("spec.{moved} is not v1"));
        }
    }
    if !matches!(spec["scope"].as_str(), Some("Namespaced" | "Cluster")) {
        return Err("spec.scope is missing".to_owned());
    }
    let group = spec["group"].as_str().unwrap_or_default();
    if (group == "k8s.io" || group.ends_with(".k8s.io"))
        && object["metadata"]["annotations"]["api-approved.kubernetes.io"]
            .as_str()
            .is_none_or(str::is_empty)
    {
        return Err("api-approved.kubernetes.io is missing".to_owned());
    }
    for version in spec["versions"].as_array().into_iter().flatten() {
        let schema = &version["schema"]["openAPIV3Schema"];
        structural(schema, "openAPIV3Schema", true)
            .map_err(|e| format!("version {}: {e}", version["name"]))?;
    }
    Ok(())
}

/// A structural schema, as the API server defines it (its `ValidateStructural`).
fn structural(node: &Value, path: &str, root: bool) -> Result<(), String> {
    let map = node.as_object().ok_or(format!("{path} is not a mapping"))?;
    let preserve = map.get("x-kubernetes-preserve-unknown-fields");
    if preserve == Some(&Value::Bool(false)) {
        return Err(format!(
            "{path}: x-kubernetes-preserve-unknown-fields is false"
        ));
    }
    let int_or_string = map.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true));
    let ty = map.get("type").and_then(Value::as_str).unwrap_or_default();
    if ty.is_empty() && preserve.is_none() && !int_or_string {
        return Err(format!("{path}: no type"));
    }
    if root && ty != "object" {
        return Err(format!("{path}: the root is not an object"));
    }
    if ty == "array" && !map.contains_key("items") {
        return Err(format!("{path}: an array without items"));
    }
    if map.get("uniqueItems") == Some(&Value::Bool(true)) {
        return Err(format!("{path}: uniqueItems"));
    }
    if let Some(Value::Object(properties)) = map.get("properties") {
        for (key, value) in properties {
            let child = format!("{path}.properties.{key}");
            if root && key == "metadata" {
                let meta = value
                    .as_object()
                    .ok_or(format!("{child} is not a mapping"))?;
                let only_type_and_names = meta.iter().all(|(k, v)| match k.as_str() {
                    "type" => v == "object",
                    "properties" => v
                        .as_object()
                        .is_some_and(|p| p.keys().all(|k| k == "name" || k == "generateName")),
                    _ => false,
                });
                if !only_type_and_names || meta.get("type").is_none() {
                    return Err(format!("{child}: more than type and name restrictions"));
                }
                continue;
            }
            if root && (key == "kind" || key == "apiVersion") && value["type"] != "string" {
                return Err(format!("{child}: not a string"));
            }
            structural(value, &child, false)?;
        }
    }
    if let Some(items) = map.get("items") {
        structural(items, &format!("{path}.items"), false)?;
    }
    if let Some(additional) = map.get("additionalProperties")
        && additional.is_object()
    {
        structural(additional, &format!("{path}.additionalProperties"), false)?;
    }
    let pattern = json!([{"type": "integer"}, {"type": "string"}]);
    for key in ["allOf", "anyOf", "oneOf"] {
        for (i, clause) in map
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            if key == "anyOf" && map.get("anyOf") == Some(&pattern) {
                continue;
            }
            let mut clause = clause.clone();
            if key == "allOf" && i == 0 && clause.get("anyOf") == Some(&pattern) {
                clause.as_object_mut().unwrap().remove("anyOf");
            }
            value_validation(&clause, map, &format!("{path}.{key}[{i}]"))?;
        }
    }
    if let Some(not) = map.get("not") {
        value_validation(not, map, &format!("{path}.not"))?;
    }
    Ok(())
}

/// A clause of `allOf`/`anyOf`/`oneOf`/`not`: no generic or structural keywords, and every
/// field or items it names also specified on the node.
fn value_validation(clause: &Value, node: &Map<String, Value>, path: &str) -> Result<(), String> {
    let map = clause
        .as_object()
        .ok_or(format!("{path} is not a mapping"))?;
    for key in [
        "type",
        "default",
        "description",
        "title",
        "additionalProperties",
        "externalDocs",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-int-or-string",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-list-type",
        "x-kubernetes-map-type",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-validations",
    ] {
        if map.contains_key(key) {
            return Err(format!("{path}: {key} inside a junctor"));
        }
    }
    if map.get("nullable") == Some(&Value::Bool(true)) {
        return Err(format!("{path}: nullable inside a junctor"));
    }
    if let Some(Value::Object(properties)) = map.get("properties") {
        for (key, value) in properties {
            let Some(Value::Object(outside)) = node.get("properties").and_then(|p| p.get(key))
            else {
                return Err(format!("{path}.properties.{key}: not specified outside"));
            };
            value_validation(value, outside, &format!("{path}.properties.{key}"))?;
        }
    }
    if let Some(items) = map.get("items") {
        let Some(Value::Object(outside)) = node.get("items") else {
            return Err(format!("{path}.items: not specified outside"));
        };
        value_validation(items, outside, &format!("{path}.items"))?;
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for (i, inner) in map
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            value_validation(inner, node, &format!("{path}.{key}[{i}]"))?;
        }
    }
    if let Some(not) = map.get("not") {
        value_validation(not, node, &format!("{path}.not"))?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// The run.

#[derive(Default)]
struct Report {
    bundles: usize,
    renders: usize,
    converted_bundles: usize,
    converted_renders: usize,
    refused_bundles: usize,
    /// Rule -> (bundles, renders).
    refusals: BTreeMap<String, (usize, usize)>,
    /// Rule -> the first message with that rule.
    examples: BTreeMap<String, String>,
    crashes: Vec<String>,
    invalid: Vec<String>,
    /// Refusals the generator did not plant, and planted ones that did not happen.
    unplanted: Vec<String>,
    v1beta1_crds: usize,
    v1beta1_converted: usize,
    quirky_converted: usize,
    webhook_bundles: usize,
    api_service_bundles: usize,
    bytes: usize,
    /// Adjustment kind -> (bundles, renders) converted with it.
    adjustments: BTreeMap<&'static str, (usize, usize)>,
}

fn run(seed: u64, count: usize) -> Report {
    let mut report = Report::default();
    for index in 0..count {
        let bundle = generate(seed, index);
        report.bundles += 1;
        report.bytes += bundle.files.iter().map(|(_, b)| b.len()).sum::<usize>();
        report.v1beta1_crds += bundle.v1beta1_crds;
        report.webhook_bundles += usize::from(bundle.webhooks);
        report.api_service_bundles += usize::from(bundle.owned_api_services);
        let runs: Vec<Options> = if bundle.supported.is_empty() {
            vec![Options::default()]
        } else {
            bundle.supported.iter().map(|m| options_for(m)).collect()
        };
        let mut bundle_rule: Option<String> = None;
        let mut bundle_adjusted = std::collections::BTreeSet::new();
        let mut all_converted = true;
        for options in &runs {
            report.renders += 1;
            match render_once(&bundle, options) {
                Outcome::Converted(kinds) => {
                    report.converted_renders += 1;
                    for kind in kinds {
                        let counts = report.adjustments.entry(kind).or_default();
                        counts.1 += 1;
                        if bundle_adjusted.insert(kind) {
                            counts.0 += 1;
                        }
                    }
                    if !bundle.planted.is_empty() {
                        report.unplanted.push(format!(
                            "bundle {index} ({}) converted with {:?} although {:?} was planted",
                            bundle.package, options.target_namespaces, bundle.planted
                        ));
                    }
                }
                Outcome::Refused(rule, message) => {
                    all_converted = false;
                    report.refusals.entry(rule.clone()).or_default().1 += 1;
                    report
                        .examples
                        .entry(rule.clone())
                        .or_insert_with(|| message.clone());
                    if !bundle.planted.iter().any(|p| rule.starts_with(p.as_str())) {
                        report
                            .unplanted
                            .push(format!("bundle {index} ({}): {message}", bundle.package));
                    }
                    bundle_rule.get_or_insert(rule);
                }
                Outcome::Crashed(message) => {
                    all_converted = false;
                    report
                        .crashes
                        .push(format!("bundle {index} ({}): {message}", bundle.package));
                }
                Outcome::Invalid(message) => {
                    all_converted = false;
                    report
                        .invalid
                        .push(format!("bundle {index} ({}): {message}", bundle.package));
                }
            }
        }
        if all_converted {
            report.converted_bundles += 1;
            report.v1beta1_converted += bundle.v1beta1_crds;
            report.quirky_converted += bundle.quirky_crds;
        }
        if let Some(rule) = bundle_rule {
            report.refused_bundles += 1;
            report.refusals.entry(rule).or_default().0 += 1;
        }
    }
    report
}

impl Report {
    fn table(&self, seed: u64, seconds: f64) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "seed {seed}: {} bundles ({:.1} MB), {} renders (one per supported install mode) in {seconds:.1} s",
            self.bundles,
            self.bytes as f64 / 1e6,
            self.renders
        );
        let _ = writeln!(out);
        let _ = writeln!(out, "| outcome | bundles | renders |");
        let _ = writeln!(out, "|---|---:|---:|");
        let _ = writeln!(
            out,
            "| converted (in every mode tried) | {} | {} |",
            self.converted_bundles, self.converted_renders
        );
        let _ = writeln!(
            out,
            "| refused | {} | {} |",
            self.refused_bundles,
            self.renders - self.converted_renders - self.crashes.len() - self.invalid.len()
        );
        for (rule, (bundles, renders)) in &self.refusals {
            let _ = writeln!(out, "| refused: {rule} | {bundles} | {renders} |");
        }
        for (kind, (bundles, renders)) in &self.adjustments {
            let _ = writeln!(
                out,
                "| converted, adjusted: {kind} | {bundles} | {renders} |"
            );
        }
        let _ = writeln!(
            out,
            "| crashed | {} | {} |",
            self.crashes.len(),
            self.crashes.len()
        );
        let _ = writeln!(
            out,
            "| converted but not valid for the API server | {} | {} |",
            self.invalid.len(),
            self.invalid.len()
        );
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "v1beta1 CRDs: {} generated, {} in converted bundles ({} of them with quirks repaired); {} bundles with webhookdefinitions, {} with owned apiservicedefinitions",
            self.v1beta1_crds,
            self.v1beta1_converted,
            self.quirky_converted,
            self.webhook_bundles,
            self.api_service_bundles
        );
        let _ = writeln!(out);
        let _ = writeln!(out, "A message of each rule:");
        for (rule, message) in &self.examples {
            let _ = writeln!(out, "- {rule}: `{message}`");
        }
        out
    }

    fn assert_clean(&self) {
        assert!(self.crashes.is_empty(), "crashes: {:#?}", self.crashes);
        assert!(
            self.invalid.is_empty(),
            "invalid output: {:#?}",
            self.invalid
        );
        assert!(
            self.unplanted.is_empty(),
            "unexpected outcomes: {:#?}",
            self.unplanted
        );
    }
}

fn env_number(key: &str, default: u64) -> u64 {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn a_sample_of_generated_bundles_renders_without_crashes_or_unplanted_refusals() {
    let started = Instant::now();
    let report = run(20, 100);
    println!("{}", report.table(20, started.elapsed().as_secs_f64()));
    report.assert_clean();
    assert!(report.converted_bundles > 40);
    assert!(report.v1beta1_converted > 0 && report.quirky_converted > 0);
    // Every shape the conversion adjusts rather than refuses is in the sample.
    for kind in [
        "webhook kept out of the protected namespaces",
        "fields Kubernetes does not have dropped from a Deployment",
        "identical manifests installed once",
        "manifest replaced by the object OLM generates",
    ] {
        assert!(
            report
                .adjustments
                .get(kind)
                .is_some_and(|(bundles, _)| *bundles > 0),
            "no bundle of the sample was adjusted for: {kind}"
        );
    }
    assert!(!report.adjustments.contains_key("other"));
}

#[test]
fn the_generator_is_deterministic() {
    for index in [0, 7, 99] {
        assert_eq!(generate(3, index).files, generate(3, index).files);
    }
    assert_ne!(generate(3, 1).files, generate(4, 1).files);
}

#[test]
#[ignore = "the large run (about 2000 bundles); prints the table"]
fn render_run_over_generated_bundles() {
    let seed = env_number("CORPUS_SEED", 20);
    let count = usize::try_from(env_number("CORPUS_BUNDLES", 2000)).unwrap();
    let started = Instant::now();
    let report = run(seed, count);
    println!("{}", report.table(seed, started.elapsed().as_secs_f64()));
    report.assert_clean();
}

/// The objects of the first bundles of the corpus that convert, each in its first supported
/// install mode (or with the default options).
fn converted_sample(seed: u64, count: usize) -> Vec<(String, Vec<Value>)> {
    let mut sample = Vec::new();
    let mut index = 0;
    while sample.len() < count && index < count * 10 {
        let bundle = generate(seed, index);
        index += 1;
        let options = bundle
            .supported
            .first()
            .map(|mode| options_for(mode))
            .unwrap_or_default();
        let files = bundle.files.iter().map(|(p, b)| (p.as_str(), b.as_slice()));
        let Ok(conversion) = conversion(files, &options) else {
            continue;
        };
        let objects = conversion
            .objects
            .iter()
            .map(|object| serde_json::to_value(object).unwrap())
            .collect();
        sample.push((bundle.package, objects));
    }
    sample
}

/// Every object of 40 converted bundles is accepted by the real API server: a server-side
/// apply with `dryRun=All` of each (CRDs, RBAC, Deployments, ServiceAccounts and the extra
/// manifests), in namespaces created for the test. What the API server refuses is what an
/// install would have failed on later; kinds this cluster does not serve (ServiceMonitor,
/// Console*) are counted and skipped.
#[tokio::test]
async fn every_rendered_object_of_a_sample_is_accepted_by_the_api_server() {
    use k8s_openapi::api::core::v1::Namespace;
    use kube::api::{Api, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams};
    use kube::discovery::Discovery;

    let client = testkit::client().await;
    let discovery = Discovery::new(client.clone()).run().await.unwrap();
    let sample = converted_sample(20, 40);
    assert_eq!(sample.len(), 40, "the corpus has 40 bundles that convert");

    // The namespaces the objects go to exist for real (a dry run cannot create them for the
    // objects in them); they are deleted at the end.
    let label = testkit::unique_name("corpus");
    let mut namespaces: Vec<String> = sample
        .iter()
        .flat_map(|(_, objects)| objects.iter())
        .filter_map(|o| o["metadata"]["namespace"].as_str().map(str::to_owned))
        .collect();
    namespaces.sort();
    namespaces.dedup();
    let namespace_api = Api::<Namespace>::all(client.clone());
    let mut created = Vec::new();
    for namespace in &namespaces {
        if namespace_api.get_opt(namespace).await.unwrap().is_none() {
            let object: Namespace = serde_json::from_value(
                json!({"metadata": {"name": namespace, "labels": {"olmv1-test": label}}}),
            )
            .unwrap();
            namespace_api
                .create(&Default::default(), &object)
                .await
                .unwrap();
            created.push(namespace.clone());
        }
    }

    let params = PatchParams {
        dry_run: true,
        ..PatchParams::apply("corpus-dry-run").force()
    };
    let (mut accepted, mut unserved) = (0, BTreeMap::<String, usize>::new());
    let mut refused = Vec::new();
    for (package, objects) in &sample {
        for object in objects {
            let (group, version) = match object["apiVersion"].as_str().unwrap().split_once('/') {
                Some((group, version)) => (group, version),
                None => ("", object["apiVersion"].as_str().unwrap()),
            };
            let kind = object["kind"].as_str().unwrap();
            let Some((resource, _)) =
                discovery.resolve_gvk(&GroupVersionKind::gvk(group, version, kind))
            else {
                *unserved.entry(kind.to_owned()).or_default() += 1;
                continue;
            };
            let api: Api<DynamicObject> = match object["metadata"]["namespace"].as_str() {
                Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
                None => Api::all_with(client.clone(), &resource),
            };
            let name = object["metadata"]["name"].as_str().unwrap();
            match api.patch(name, &params, &Patch::Apply(object)).await {
                Ok(_) => accepted += 1,
                Err(err) => refused.push(format!("{package}: {kind} {name}: {err}")),
            }
        }
    }
    for namespace in &created {
        let _ = namespace_api
            .delete(namespace, &DeleteParams::background())
            .await;
    }
    println!("dry run: {accepted} objects accepted; kinds not served here: {unserved:?}");
    assert!(
        refused.is_empty(),
        "{} of {} objects refused by the API server:\n{}",
        refused.len(),
        refused.len() + accepted,
        refused.join("\n")
    );
    assert!(accepted > 200, "{accepted} objects accepted");
}

/// Render and the API server agree on every `apiextensions.k8s.io/v1` CRD of 300 generated
/// bundles (the ones shipped as v1, planted defects included): each CRD render's check
/// (`crd::to_v1`) accepts is accepted by a server-side apply with `dryRun=All` (how the
/// installer writes), and each it refuses is refused. A refusal the server would not make is
/// a wrong refusal; an acceptance it would not make is an install that fails later.
#[tokio::test]
async fn render_and_the_api_server_agree_on_every_v1_crd() {
    use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};

    let client = testkit::client().await;
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        "customresourcedefinitions",
    );
    let crds = Api::<DynamicObject>::all_with(client, &resource);
    let params = PatchParams {
        dry_run: true,
        ..PatchParams::apply("corpus-dry-run").force()
    };
    let (mut agreed_accepted, mut agreed_refused) = (0, 0);
    let mut disagreements = Vec::new();
    for index in 0..300 {
        let generated = generate(20, index);
        let Ok(bundle) = registry_provisioner::bundle::read(
            generated
                .files
                .iter()
                .map(|(p, b)| (p.as_str(), b.as_slice())),
        ) else {
            continue;
        };
        for (file, object) in &bundle.others {
            let is_v1_crd = object.types.as_ref().is_some_and(|t| {
                t.kind == "CustomResourceDefinition" && t.api_version == "apiextensions.k8s.io/v1"
            });
            if !is_v1_crd {
                continue;
            }
            let rendered = registry_provisioner::crd::to_v1(file, object);
            let name = object.metadata.name.clone().unwrap_or_default();
            let as_written = serde_json::to_value(object).unwrap();
            let server = crds.patch(&name, &params, &Patch::Apply(&as_written)).await;
            match (&rendered, &server) {
                (Ok(_), Ok(_)) => agreed_accepted += 1,
                (Err(_), Err(_)) => agreed_refused += 1,
                (Ok(_), Err(err)) => disagreements.push(format!(
                    "bundle {index} {file}: render accepts, the API server refuses: {err}"
                )),
                (Err(err), Ok(_)) => disagreements.push(format!(
                    "bundle {index} {file}: the API server accepts, render refuses: {err}"
                )),
            }
        }
    }
    println!("v1 CRDs: {agreed_accepted} accepted by both, {agreed_refused} refused by both");
    assert!(
        disagreements.is_empty(),
        "{} disagreements:\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
    assert!(agreed_accepted > 100 && agreed_refused > 3);
}
