//! Conversion of the fixture registry+v1 bundles into plain objects.

// Test helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use kube::api::DynamicObject;
use registry_provisioner::{ConvertError, DeploymentConfig, Options, convert};
use serde_json::{Value, json};

const CSV_FILE: &str = "manifests/memcached-operator.clusterserviceversion.yaml";
const CSV_NAME: &str = "memcached-operator.v0.0.1";
const MANAGER_SA: &str = "memcached-operator-controller-manager";
const READER_SA: &str = "memcached-operator-metrics-reader";

/// The files of a fixture bundle, as (path relative to the bundle, bytes).
struct Files(Vec<(String, Vec<u8>)>);

impl Files {
    fn fixture(name: &str) -> Self {
        let root = testkit::package_path("").join("tests/fixtures").join(name);
        let mut files = Vec::new();
        for dir in ["metadata", "manifests"] {
            for entry in std::fs::read_dir(root.join(dir)).unwrap() {
                let entry = entry.unwrap();
                let path = format!("{dir}/{}", entry.file_name().to_str().unwrap());
                files.push((path, std::fs::read(entry.path()).unwrap()));
            }
        }
        files.sort();
        Self(files)
    }

    fn memcached() -> Self {
        Self::fixture("memcached-operator")
    }

    /// Adds `tests/fixtures/extra/<name>` as `manifests/<name>`.
    fn with_extra(self, name: &str) -> Self {
        let path = testkit::package_path("")
            .join("tests/fixtures/extra")
            .join(name);
        let text = std::fs::read_to_string(path).unwrap();
        self.set(&format!("manifests/{name}"), &text)
    }

    fn text(&self, path: &str) -> String {
        let (_, bytes) = self.0.iter().find(|(p, _)| p == path).unwrap();
        String::from_utf8(bytes.clone()).unwrap()
    }

    fn set(mut self, path: &str, text: &str) -> Self {
        self.0.retain(|(p, _)| p != path);
        self.0.push((path.to_owned(), text.as_bytes().to_vec()));
        self
    }

    fn remove(mut self, path: &str) -> Self {
        self.0.retain(|(p, _)| p != path);
        self
    }

    /// Replaces `from` (which must occur) with `to` in the file at `path`.
    fn edit(self, path: &str, from: &str, to: &str) -> Self {
        let text = self.text(path);
        assert!(text.contains(from), "{from:?} not in {path}");
        let text = text.replace(from, to);
        self.set(path, &text)
    }

    fn install_mode(self, mode: &str, supported: bool) -> Self {
        let line = |s: bool| format!("  - supported: {s}\n    type: {mode}\n");
        self.edit(CSV_FILE, &line(!supported), &line(supported))
    }

    fn convert(&self, options: &Options) -> Result<Vec<DynamicObject>, ConvertError> {
        convert(
            self.0.iter().map(|(p, b)| (p.as_str(), b.as_slice())),
            options,
        )
    }
}

fn options(install_namespace: Option<&str>, targets: &[&str]) -> Options {
    Options {
        install_namespace: install_namespace.map(str::to_owned),
        target_namespaces: targets.iter().map(|t| (*t).to_owned()).collect(),
        ..Options::default()
    }
}

fn kind(object: &DynamicObject) -> &str {
    object.types.as_ref().map(|t| t.kind.as_str()).unwrap_or("")
}

fn of_kind<'a>(objects: &'a [DynamicObject], wanted: &str) -> Vec<&'a DynamicObject> {
    objects.iter().filter(|o| kind(o) == wanted).collect()
}

fn name(object: &DynamicObject) -> &str {
    object.metadata.name.as_deref().unwrap_or("")
}

fn namespace(object: &DynamicObject) -> Option<&str> {
    object.metadata.namespace.as_deref()
}

fn target_annotation(objects: &[DynamicObject]) -> String {
    let deployments = of_kind(objects, "Deployment");
    assert_eq!(deployments.len(), 1);
    deployments[0].data["spec"]["template"]["metadata"]["annotations"]["olm.targetNamespaces"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn rules(object: &DynamicObject) -> &Vec<Value> {
    object.data["rules"].as_array().unwrap()
}

#[test]
fn default_install_targets_all_namespaces_in_the_suggested_namespace() {
    let objects = Files::memcached().convert(&Options::default()).unwrap();
    assert_eq!(target_annotation(&objects), "");
    let deployment = of_kind(&objects, "Deployment")[0];
    assert_eq!(namespace(deployment), Some("memcached-system"));
    assert!(of_kind(&objects, "Role").is_empty());
    assert!(of_kind(&objects, "RoleBinding").is_empty());
}

#[test]
fn all_namespaces_promotes_permissions_to_cluster_roles_with_a_namespaces_read_rule() {
    let objects = Files::memcached().convert(&options(None, &[""])).unwrap();
    let generated: Vec<_> = of_kind(&objects, "ClusterRole")
        .into_iter()
        .filter(|o| name(o).starts_with("memcached-operator-"))
        .filter(|o| name(o) != "memcached-operator-metrics-reader")
        .collect();
    // One clusterPermission plus the two promoted permissions.
    assert_eq!(generated.len(), 3);
    let namespaces_rule = json!({
        "apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]
    });
    let promoted: Vec<_> = generated
        .iter()
        .filter(|o| rules(o).contains(&namespaces_rule))
        .collect();
    assert_eq!(promoted.len(), 2);
    let leases = promoted
        .iter()
        .any(|o| rules(o).iter().any(|r| r["resources"] == json!(["leases"])));
    assert!(
        leases,
        "the namespaced rules are kept in the promoted ClusterRole"
    );
    let bindings = of_kind(&objects, "ClusterRoleBinding");
    assert_eq!(bindings.len(), 3);
    for binding in bindings {
        assert_eq!(binding.data["roleRef"]["kind"], "ClusterRole");
        assert_eq!(binding.data["roleRef"]["name"], name(binding));
        assert_eq!(binding.data["subjects"][0]["namespace"], "memcached-system");
    }
}

#[test]
fn service_accounts_are_created_for_deployments_and_permissions_in_the_install_namespace() {
    let objects = Files::memcached()
        .convert(&options(Some("ops"), &[]))
        .unwrap();
    let accounts = of_kind(&objects, "ServiceAccount");
    let names: Vec<_> = accounts.iter().map(|o| name(o)).collect();
    assert_eq!(names, [MANAGER_SA, READER_SA]);
    assert!(accounts.iter().all(|o| namespace(o) == Some("ops")));
}

#[test]
fn the_default_service_account_is_never_created() {
    let objects = Files::memcached()
        .edit(
            CSV_FILE,
            "              serviceAccountName: memcached-operator-controller-manager",
            "              serviceAccountName: default",
        )
        .edit(
            CSV_FILE,
            "        serviceAccountName: memcached-operator-metrics-reader",
            "        serviceAccountName: default",
        )
        .convert(&Options::default())
        .unwrap();
    let names: Vec<_> = of_kind(&objects, "ServiceAccount")
        .into_iter()
        .map(name)
        .collect();
    assert_eq!(names, [MANAGER_SA]);
}

#[test]
fn an_explicit_install_namespace_wins_over_the_suggested_one() {
    let objects = Files::memcached()
        .convert(&options(Some("operators"), &[]))
        .unwrap();
    let deployment = of_kind(&objects, "Deployment")[0];
    assert_eq!(namespace(deployment), Some("operators"));
}

#[test]
fn without_a_suggestion_the_install_namespace_is_the_package_system_namespace() {
    let objects = Files::memcached()
        .edit(
            CSV_FILE,
            "    operatorframework.io/suggested-namespace: memcached-system\n",
            "",
        )
        .convert(&Options::default())
        .unwrap();
    let deployment = of_kind(&objects, "Deployment")[0];
    assert_eq!(namespace(deployment), Some("memcached-operator-system"));
}

#[test]
fn a_package_name_that_is_no_namespace_name_still_gives_a_valid_install_namespace() {
    let without_suggestion = |package: &str| {
        Files::memcached()
            .edit(
                CSV_FILE,
                "    operatorframework.io/suggested-namespace: memcached-system\n",
                "",
            )
            .edit(
                "metadata/annotations.yaml",
                "package.v1: memcached-operator",
                &format!("package.v1: {package}"),
            )
            .convert(&Options::default())
            .unwrap()
    };
    let objects = without_suggestion("redis.opstree");
    assert_eq!(
        namespace(of_kind(&objects, "Deployment")[0]),
        Some("redis-opstree-system")
    );
    let long = "aws-controllers-k8s-elasticache-controller-with-a-really-long-name";
    let objects = without_suggestion(long);
    let install = namespace(of_kind(&objects, "Deployment")[0])
        .unwrap()
        .to_owned();
    assert!(install.len() <= 63, "{install}");
    assert!(
        install.starts_with("aws-controllers-k8s-elasticache"),
        "{install}"
    );
    // Distinct long packages keep distinct namespaces.
    let other = without_suggestion(&format!("{long}-2"));
    assert_ne!(
        namespace(of_kind(&other, "Deployment")[0]),
        Some(install.as_str())
    );
}

#[test]
fn a_suggested_namespace_that_is_no_namespace_name_is_refused_saying_what_to_do() {
    let err = Files::memcached()
        .edit(
            CSV_FILE,
            "suggested-namespace: memcached-system",
            "suggested-namespace: Memcached.System",
        )
        .convert(&Options::default())
        .unwrap_err();
    assert!(
        matches!(err, ConvertError::InstallNamespace { .. }),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "failed to choose the install namespace of ClusterServiceVersion \"{CSV_NAME}\" in {CSV_FILE}: the install namespace \"Memcached.System\" that the operatorframework.io/suggested-namespace annotation suggests is not a valid namespace name (at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit): set spec.installNamespace on the BundleDeployment, or pass --install-namespace to render"
        )
    );
    // An explicit install namespace makes the suggestion irrelevant.
    Files::memcached()
        .edit(
            CSV_FILE,
            "suggested-namespace: memcached-system",
            "suggested-namespace: Memcached.System",
        )
        .convert(&options(Some("operators"), &[]))
        .unwrap();
}

#[test]
fn own_namespace_creates_roles_and_bindings_in_the_install_namespace() {
    let objects = Files::memcached()
        .convert(&options(Some("ops"), &["ops"]))
        .unwrap();
    assert_eq!(target_annotation(&objects), "ops");
    let roles = of_kind(&objects, "Role");
    assert_eq!(roles.len(), 2);
    assert!(roles.iter().all(|o| namespace(o) == Some("ops")));
    let bindings = of_kind(&objects, "RoleBinding");
    assert_eq!(bindings.len(), 2);
    for binding in bindings {
        assert_eq!(binding.data["roleRef"]["kind"], "Role");
        assert_eq!(binding.data["roleRef"]["name"], name(binding));
        assert_eq!(binding.data["subjects"][0]["namespace"], "ops");
    }
    // Only the clusterPermission, plus the ClusterRole shipped in the bundle.
    assert_eq!(of_kind(&objects, "ClusterRole").len(), 2);
}

#[test]
fn single_namespace_creates_roles_in_the_target_namespace_bound_to_install_namespace_accounts() {
    let objects = Files::memcached()
        .convert(&options(Some("ops"), &["team-a"]))
        .unwrap();
    assert_eq!(target_annotation(&objects), "team-a");
    let roles = of_kind(&objects, "Role");
    assert_eq!(roles.len(), 2);
    assert!(roles.iter().all(|o| namespace(o) == Some("team-a")));
    for binding in of_kind(&objects, "RoleBinding") {
        assert_eq!(namespace(binding), Some("team-a"));
        assert_eq!(binding.data["subjects"][0]["namespace"], "ops");
    }
}

#[test]
fn multi_namespace_is_rejected_when_unsupported() {
    let err = Files::memcached()
        .convert(&options(Some("ops"), &["b", "a"]))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "failed to validate target namespaces against ClusterServiceVersion \
         \"memcached-operator.v0.0.1\" in manifests/memcached-operator.clusterserviceversion.yaml: \
         supported install modes [AllNamespaces OwnNamespace SingleNamespace] do not support \
         target namespaces [a b]"
    );
}

#[test]
fn multi_namespace_creates_roles_in_every_target_namespace_when_supported() {
    let objects = Files::memcached()
        .install_mode("MultiNamespace", true)
        .convert(&options(Some("ops"), &["b", "a", "b"]))
        .unwrap();
    assert_eq!(target_annotation(&objects), "a,b");
    let roles = of_kind(&objects, "Role");
    let placed: Vec<_> = roles.iter().map(|o| namespace(o).unwrap()).collect();
    assert_eq!(placed, ["a", "b", "a", "b"]);
    assert_eq!(of_kind(&objects, "RoleBinding").len(), 4);
}

#[test]
fn multi_namespace_including_all_namespaces_is_rejected() {
    let err = Files::memcached()
        .install_mode("MultiNamespace", true)
        .convert(&options(Some("ops"), &["a", ""]))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("do not support target namespaces [ a]"),
        "{err}"
    );
}

#[test]
fn own_namespace_is_rejected_when_neither_own_nor_single_namespace_is_supported() {
    let err = Files::memcached()
        .install_mode("OwnNamespace", false)
        .install_mode("SingleNamespace", false)
        .convert(&options(Some("ops"), &["ops"]))
        .unwrap_err();
    assert_eq!(
        err,
        ConvertError::InstallMode {
            file: CSV_FILE.to_owned(),
            name: CSV_NAME.to_owned(),
            message:
                "supported install modes [AllNamespaces] do not support target namespaces [ops]"
                    .to_owned()
        }
    );
}

#[test]
fn single_namespace_may_target_the_install_namespace_as_upstream_allows() {
    let objects = Files::memcached()
        .install_mode("OwnNamespace", false)
        .convert(&options(Some("ops"), &["ops"]))
        .unwrap();
    assert_eq!(target_annotation(&objects), "ops");
}

#[test]
fn multi_namespace_including_the_install_namespace_needs_own_namespace() {
    let err = Files::memcached()
        .install_mode("MultiNamespace", true)
        .install_mode("OwnNamespace", false)
        .convert(&options(Some("ops"), &["ops", "team-a"]))
        .unwrap_err();
    assert!(
        err.to_string().ends_with(
            "supported install modes [AllNamespaces MultiNamespace SingleNamespace] do not support targeting own namespace"
        ),
        "{err}"
    );
}

#[test]
fn single_namespace_is_rejected_when_unsupported() {
    let err = Files::memcached()
        .install_mode("SingleNamespace", false)
        .convert(&options(Some("ops"), &["team-a"]))
        .unwrap_err();
    assert!(
        err.to_string().ends_with(
            "supported install modes [AllNamespaces OwnNamespace] do not support target namespaces [team-a]"
        ),
        "{err}"
    );
}

#[test]
fn all_namespaces_is_rejected_when_unsupported() {
    let err = Files::memcached()
        .install_mode("AllNamespaces", false)
        .convert(&options(Some("ops"), &[""]))
        .unwrap_err();
    assert!(
        err.to_string().ends_with(
            "supported install modes [OwnNamespace SingleNamespace] do not support targeting all namespaces"
        ),
        "{err}"
    );
}

#[test]
fn without_all_namespaces_the_default_target_is_the_own_namespace() {
    let objects = Files::memcached()
        .install_mode("AllNamespaces", false)
        .convert(&options(Some("ops"), &[]))
        .unwrap();
    assert_eq!(target_annotation(&objects), "ops");
    assert_eq!(of_kind(&objects, "Role").len(), 2);
}

#[test]
fn with_neither_all_nor_own_namespace_the_message_says_which_target_to_give_and_where() {
    let err = Files::memcached()
        .install_mode("AllNamespaces", false)
        .install_mode("OwnNamespace", false)
        .convert(&options(Some("ops"), &[]))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "failed to validate target namespaces against ClusterServiceVersion \"{CSV_NAME}\" in \
             {CSV_FILE}: supported install modes [SingleNamespace] have no default target \
             namespace: this operator needs exactly one namespace to watch; set it in the \
             BundleDeployment's spec.config.targetNamespaces (for example [\"team-a\"]), or pass \
             --target-namespaces team-a to render"
        )
    );
}

#[test]
fn a_multi_namespace_only_operator_is_told_to_give_several_namespaces() {
    let err = Files::memcached()
        .install_mode("AllNamespaces", false)
        .install_mode("OwnNamespace", false)
        .install_mode("SingleNamespace", false)
        .install_mode("MultiNamespace", true)
        .convert(&options(Some("ops"), &[]))
        .unwrap_err();
    assert!(
        err.to_string().ends_with(
            "supported install modes [MultiNamespace] have no default target namespace: this \
             operator needs two or more namespaces to watch, not including its install namespace \
             \"ops\"; set them in the BundleDeployment's spec.config.targetNamespaces (for \
             example [\"team-a\", \"team-b\"]), or pass --target-namespaces team-a,team-b to render"
        ),
        "{err}"
    );
}

#[test]
fn an_operator_supporting_no_install_mode_is_told_so() {
    let err = Files::memcached()
        .install_mode("AllNamespaces", false)
        .install_mode("OwnNamespace", false)
        .install_mode("SingleNamespace", false)
        .convert(&options(Some("ops"), &[]))
        .unwrap_err();
    assert!(
        err.to_string().ends_with(
            "supported install modes []: the ClusterServiceVersion marks no install mode as \
             supported in spec.installModes, so it cannot be installed for any target namespaces"
        ),
        "{err}"
    );
}

#[test]
fn objects_come_in_a_fixed_kind_order() {
    let objects = Files::memcached()
        .convert(&options(Some("ops"), &["ops"]))
        .unwrap();
    let kinds: Vec<_> = objects.iter().map(kind).collect();
    assert_eq!(
        kinds,
        [
            "ServiceAccount",
            "ServiceAccount",
            "Role",
            "Role",
            "RoleBinding",
            "RoleBinding",
            "ClusterRole",
            "ClusterRoleBinding",
            "CustomResourceDefinition",
            "Service",
            "ClusterRole",
            "Deployment",
        ]
    );
}

#[test]
fn converting_the_same_bundle_twice_gives_identical_output() {
    let first = Files::memcached().convert(&Options::default()).unwrap();
    let second = Files::memcached().convert(&Options::default()).unwrap();
    assert_eq!(
        serde_json::to_string(&first).unwrap(),
        serde_json::to_string(&second).unwrap()
    );
}

#[test]
fn generated_rbac_names_are_csv_and_account_cut_as_upstream_before_the_whole_hash() {
    let objects = Files::memcached()
        .convert(&options(Some("ops"), &["ops"]))
        .unwrap();
    let roles = of_kind(&objects, "Role");
    let names: Vec<_> = roles.iter().map(|o| name(o)).collect();
    assert_ne!(names[0], names[1]);
    for role_name in &names {
        let hash = role_name.rsplit('-').next().unwrap();
        assert!((40..=44).contains(&hash.len()), "{role_name}");
        assert!(
            hash.chars()
                .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase())
        );
        // "<csv>-<sa>" is cut to 62 - <hash length> bytes, as upstream cuts it (which may
        // end in the CSV name's dot).
        assert_eq!(role_name.len(), 63, "{role_name}");
        assert_eq!(
            &role_name[..role_name.len() - hash.len() - 1],
            &CSV_NAME[..62 - hash.len()]
        );
    }
    // The "<csv>-<sa>" prefix is cut only as far as needed for the hash to fit.
    let short = Files::memcached()
        .edit(CSV_FILE, &format!("  name: {CSV_NAME}\n"), "  name: m.v1\n")
        .convert(&options(Some("ops"), &["ops"]))
        .unwrap();
    let mut prefixes: Vec<_> = of_kind(&short, "Role")
        .into_iter()
        .map(|o| {
            let (prefix, hash) = name(o).rsplit_once('-').unwrap();
            assert_eq!(prefix.len() + 1 + hash.len(), 63, "{}", name(o));
            prefix.to_owned()
        })
        .collect();
    prefixes.sort();
    assert!(format!("m.v1-{READER_SA}").starts_with(&prefixes[0]));
    assert!(format!("m.v1-{MANAGER_SA}").starts_with(&prefixes[1]));
}

/// Names computed by hand from upstream's algorithm: `sha224sum` of Go's JSON of the
/// permission (`{"serviceAccountName":"memcached-operator-metrics-reader","rules":[{"verbs":
/// ["get","list"],"apiGroups":[""],"resources":["pods"]}]}` and a newline) written in base 36,
/// after `<csv>-<sa>` cut to 62 - <hash length> bytes (here ending in the CSV name's dot).
#[test]
fn rbac_names_are_the_ones_upstream_computes() {
    let own = Files::memcached()
        .convert(&options(Some("ops"), &["ops"]))
        .unwrap();
    let reader = "memcached-operator.-sbsvcfwa6lu8s78hpfkryuqlvb16i9ux07nypojkgti";
    assert!(of_kind(&own, "Role").iter().any(|o| name(o) == reader));
    assert!(
        of_kind(&own, "RoleBinding")
            .iter()
            .any(|o| name(o) == reader)
    );
    // In AllNamespaces mode the promoted permission is hashed with its namespaces rule.
    let all = Files::memcached().convert(&Options::default()).unwrap();
    let promoted = "memcached-operator-1tyyu80p1vjwf01caxf9jcp7emdx721tuj0ltk49u7wj";
    assert!(
        of_kind(&all, "ClusterRole")
            .iter()
            .any(|o| name(o) == promoted)
    );
}

const READER_RULES: &str = "      - rules:
        - apiGroups:
          - \"\"
          resources:
          - pods
          verbs:
          - get
          - list
        serviceAccountName: memcached-operator-metrics-reader
";

/// OLM's Go reader leaves a field at its zero value on `null`; three published bundles rely
/// on it.
#[test]
fn null_in_csv_list_string_and_map_fields_reads_as_empty() {
    let objects = Files::memcached()
        .edit(
            CSV_FILE,
            "  apiservicedefinitions: {}\n",
            "  apiservicedefinitions: null\n  webhookdefinitions: null\n  minKubeVersion: null\n",
        )
        .edit(
            CSV_FILE,
            "  description: Memcached Operator description. TODO.\n",
            "  description: null\n",
        )
        .edit(
            CSV_FILE,
            "    createdAt: \"2024-05-01T10:00:00Z\"\n",
            "    createdAt:\n",
        )
        .edit(
            CSV_FILE,
            READER_RULES,
            "      - rules: null\n        serviceAccountName: memcached-operator-metrics-reader\n",
        )
        .edit(
            CSV_FILE,
            "          app.kubernetes.io/name: memcached-operator\n          control-plane",
            "          app.kubernetes.io/name:\n          control-plane",
        )
        .convert(&options(Some("ops"), &["ops"]))
        .unwrap();
    let deployment = of_kind(&objects, "Deployment")[0];
    assert_eq!(
        deployment.data["spec"]["template"]["metadata"]["annotations"]["createdAt"],
        ""
    );
    assert_eq!(
        deployment.metadata.labels.as_ref().unwrap()["app.kubernetes.io/name"],
        ""
    );
    // `rules: null` is no rules; Go hashes it as `"rules":null`, so the name is upstream's.
    let reader = of_kind(&objects, "Role")
        .into_iter()
        .find(|o| name(o) == "memcached-operator.-8r4rdkrh6c04jmo85vay3vjzrebwvii74xb96ri2y98")
        .unwrap();
    assert!(rules(reader).is_empty());

    let owned_null = Files::memcached()
        .edit(
            CSV_FILE,
            "  customresourcedefinitions:\n    owned:\n    - description: Memcached is the Schema for the memcacheds API\n      displayName: Memcached\n      kind: Memcached\n      name: memcacheds.cache.example.com\n      version: v1alpha1\n",
            "  customresourcedefinitions:\n    owned: null\n",
        )
        .convert(&Options::default());
    assert!(owned_null.is_ok(), "{owned_null:?}");
}

#[test]
fn null_install_modes_read_as_none_supported() {
    let err = Files::memcached()
        .edit(
            CSV_FILE,
            "  installModes:\n  - supported: true\n    type: OwnNamespace\n  - supported: true\n    type: SingleNamespace\n  - supported: false\n    type: MultiNamespace\n  - supported: true\n    type: AllNamespaces\n",
            "  installModes: null\n",
        )
        .convert(&Options::default())
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("marks no install mode as supported in spec.installModes"),
        "{err}"
    );
}

#[test]
fn an_empty_service_account_is_the_default_one_as_upstream() {
    let objects = Files::memcached()
        .edit(
            CSV_FILE,
            "        serviceAccountName: memcached-operator-metrics-reader\n",
            "        serviceAccountName: null\n",
        )
        .convert(&options(Some("ops"), &["ops"]))
        .unwrap();
    let subjects: Vec<&Value> = of_kind(&objects, "RoleBinding")
        .into_iter()
        .map(|o| &o.data["subjects"][0]["name"])
        .collect();
    assert!(subjects.contains(&&json!("default")), "{subjects:?}");
    assert!(
        !of_kind(&objects, "ServiceAccount")
            .iter()
            .any(|o| name(o).is_empty() || name(o) == "default")
    );
}

#[test]
fn a_rule_of_the_wrong_shape_is_an_error_naming_the_csv_field() {
    let err = Files::memcached()
        .edit(
            CSV_FILE,
            READER_RULES,
            "      - rules:\n        - verbs: get\n        serviceAccountName: memcached-operator-metrics-reader\n",
        )
        .convert(&options(Some("ops"), &["ops"]))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "failed to read ClusterServiceVersion \"{CSV_NAME}\" in {CSV_FILE}: \
             spec.install.spec.permissions[1].rules[0].verbs must be a list of strings"
        )
    );
}

#[test]
fn rbac_names_change_when_the_rules_change() {
    let before = Files::memcached().convert(&Options::default()).unwrap();
    let after = Files::memcached()
        .edit(
            CSV_FILE,
            "          - pods\n",
            "          - pods\n          - services\n",
        )
        .convert(&Options::default())
        .unwrap();
    let names = |objects: &[DynamicObject]| -> Vec<String> {
        of_kind(objects, "ClusterRole")
            .into_iter()
            .map(|o| name(o).to_owned())
            .collect()
    };
    let (before, after) = (names(&before), names(&after));
    assert_eq!(before.len(), after.len());
    assert_eq!(before.iter().filter(|n| !after.contains(n)).count(), 1);
}

#[test]
fn namespaced_manifests_move_into_the_install_namespace_and_cluster_ones_stay_cluster_scoped() {
    let objects = Files::memcached()
        .edit(
            "manifests/memcached-operator-controller-manager-metrics-service_v1_service.yaml",
            "  name: memcached-operator-controller-manager-metrics-service\n",
            "  name: memcached-operator-controller-manager-metrics-service\n  namespace: elsewhere\n",
        )
        .convert(&options(Some("ops"), &[]))
        .unwrap();
    let service = of_kind(&objects, "Service")[0];
    assert_eq!(namespace(service), Some("ops"));
    let shipped = of_kind(&objects, "ClusterRole")
        .into_iter()
        .find(|o| name(o) == "memcached-operator-metrics-reader")
        .unwrap();
    assert_eq!(namespace(shipped), None);
}

#[test]
fn crds_are_passed_through_verbatim() {
    let files = Files::memcached();
    let crd_text = files.text("manifests/cache.example.com_memcacheds.yaml");
    let expected: Value = serde_yaml_ng::from_str(&crd_text).unwrap();
    let objects = files.convert(&Options::default()).unwrap();
    let crd = of_kind(&objects, "CustomResourceDefinition")[0];
    let crd = serde_json::to_value(crd).unwrap();
    // Only the null creationTimestamp is dropped, by the object metadata type.
    assert_eq!(crd["spec"], expected["spec"]);
    assert_eq!(crd["status"], expected["status"]);
    assert_eq!(
        crd["metadata"]["annotations"],
        expected["metadata"]["annotations"]
    );
    assert_eq!(crd["apiVersion"], "apiextensions.k8s.io/v1");
}

#[test]
fn the_pod_template_carries_csv_annotations_and_keeps_its_own() {
    let objects = Files::memcached()
        .convert(&options(Some("ops"), &["team-a"]))
        .unwrap();
    let deployment = of_kind(&objects, "Deployment")[0];
    let annotations = &deployment.data["spec"]["template"]["metadata"]["annotations"];
    assert_eq!(annotations["olm.targetNamespaces"], "team-a");
    assert_eq!(annotations["olm.operatorNamespace"], "ops");
    assert_eq!(
        annotations["kubectl.kubernetes.io/default-container"],
        "manager"
    );
    assert_eq!(annotations["capabilities"], "Basic Install");
    assert_eq!(name(deployment), "memcached-operator-controller-manager");
    assert_eq!(
        deployment.metadata.labels.as_ref().unwrap()["control-plane"],
        "controller-manager"
    );
    assert_eq!(deployment.data["spec"]["replicas"], 1);
    assert_eq!(deployment.data["spec"]["revisionHistoryLimit"], 1);
}

/// Upstream sets `olm.operatorNamespace` and `olm.targetNamespaces` over whatever the CSV or
/// the template says, and always renders `revisionHistoryLimit: 1`, as OLM v0 does.
#[test]
fn olm_pod_annotations_and_the_revision_history_limit_override_the_csv() {
    let objects = Files::memcached()
        .edit(
            CSV_FILE,
            "        spec:\n          replicas: 1\n",
            "        spec:\n          replicas: 1\n          revisionHistoryLimit: 10\n",
        )
        .edit(
            CSV_FILE,
            "    capabilities: Basic Install\n",
            "    capabilities: Basic Install\n    olm.operatorNamespace: elsewhere\n",
        )
        .convert(&Options::default())
        .unwrap();
    let deployment = of_kind(&objects, "Deployment")[0];
    let annotations = &deployment.data["spec"]["template"]["metadata"]["annotations"];
    assert_eq!(annotations["olm.operatorNamespace"], "memcached-system");
    assert_eq!(annotations["olm.targetNamespaces"], "");
    assert_eq!(deployment.data["spec"]["revisionHistoryLimit"], 1);
}

#[test]
fn a_bundle_without_a_csv_is_rejected() {
    let err = Files::memcached()
        .remove(CSV_FILE)
        .convert(&Options::default())
        .unwrap_err();
    assert_eq!(err, ConvertError::NoCsv);
    assert!(err.to_string().contains("manifests/"));
}

#[test]
fn a_bundle_with_two_csvs_is_rejected_naming_both_files() {
    let files = Files::memcached();
    let copy = files.text(CSV_FILE).replace(
        &format!("  name: {CSV_NAME}\n"),
        "  name: memcached-operator.v0.0.2\n",
    );
    let err = files
        .set("manifests/zz-copy.clusterserviceversion.yaml", &copy)
        .convert(&Options::default())
        .unwrap_err();
    let message = err.to_string();
    assert!(message.contains(CSV_FILE), "{message}");
    assert!(
        message.contains("manifests/zz-copy.clusterserviceversion.yaml"),
        "{message}"
    );
    assert!(message.contains("memcached-operator.v0.0.2"), "{message}");
}

#[test]
fn an_unsupported_kind_is_rejected_naming_file_and_kind() {
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: stray\nspec:\n  containers: []\n";
    let err = Files::memcached()
        .set("manifests/stray.yaml", pod)
        .convert(&Options::default())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "failed to convert manifests/stray.yaml: bundle contains unsupported resource: Name: stray, Kind: Pod"
    );
}

#[test]
fn a_bundle_of_another_mediatype_is_rejected() {
    let err = Files::memcached()
        .edit(
            "metadata/annotations.yaml",
            "mediatype.v1: registry+v1",
            "mediatype.v1: plain+v0",
        )
        .convert(&Options::default())
        .unwrap_err();
    assert_eq!(
        err,
        ConvertError::UnsupportedMediatype {
            file: "metadata/annotations.yaml".to_owned(),
            found: "plain+v0".to_owned(),
        }
    );
}

#[test]
fn a_bundle_without_metadata_is_rejected() {
    let err = Files::memcached()
        .remove("metadata/annotations.yaml")
        .convert(&Options::default())
        .unwrap_err();
    assert!(
        err.to_string().contains("metadata/annotations.yaml"),
        "{err}"
    );
}

#[test]
fn a_bundle_without_a_package_annotation_is_rejected() {
    let err = Files::memcached()
        .edit(
            "metadata/annotations.yaml",
            "  operators.operatorframework.io.bundle.package.v1: memcached-operator\n",
            "",
        )
        .convert(&Options::default())
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("operators.operatorframework.io.bundle.package.v1"),
        "{err}"
    );
}

#[test]
fn an_incomplete_webhook_definition_is_refused_naming_its_field() {
    let err = Files::memcached()
        .edit(
            CSV_FILE,
            "  apiservicedefinitions: {}\n",
            "  apiservicedefinitions: {}\n  webhookdefinitions:\n  - type: ValidatingAdmissionWebhook\n    generateName: vmemcached.kb.io\n",
        )
        .convert(&Options::default())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "failed to read ClusterServiceVersion \"{CSV_NAME}\" in {CSV_FILE}: \
             spec.webhookdefinitions[0].deploymentName \"\" names no Deployment of \
             spec.install.spec.deployments (it has: memcached-operator-controller-manager)"
        )
    );
}

#[test]
fn a_malformed_manifest_is_an_error_naming_its_file() {
    let err = Files::memcached()
        .set("manifests/broken.yaml", "kind: [unclosed\n")
        .convert(&Options::default())
        .unwrap_err();
    assert!(err.to_string().contains("manifests/broken.yaml"), "{err}");
}

#[test]
fn files_outside_metadata_and_manifests_are_ignored() {
    let objects = Files::memcached()
        .set("tests/scorecard/config.yaml", "kind: Configuration\n")
        .set("README.md", "# not yaml: [\n")
        .convert(&Options::default())
        .unwrap();
    assert_eq!(of_kind(&objects, "Deployment").len(), 1);
}

const V1BETA1_CRD: &str = "etcdclusters.etcd.database.coreos.com.crd.yaml";

fn etcd_crd(objects: &[DynamicObject]) -> Value {
    let crd = of_kind(objects, "CustomResourceDefinition")
        .into_iter()
        .find(|o| name(o) == "etcdclusters.etcd.database.coreos.com")
        .unwrap();
    serde_json::to_value(crd).unwrap()
}

#[test]
fn a_v1beta1_crd_is_converted_to_v1_with_per_version_schema_columns_and_subresources() {
    let objects = Files::memcached()
        .with_extra(V1BETA1_CRD)
        .convert(&Options::default())
        .unwrap();
    let crd = etcd_crd(&objects);
    assert_eq!(crd["apiVersion"], "apiextensions.k8s.io/v1");
    let spec = &crd["spec"];
    for moved in [
        "version",
        "validation",
        "subresources",
        "additionalPrinterColumns",
    ] {
        assert!(
            spec.get(moved).is_none(),
            "spec.{moved} is left at the top level"
        );
    }
    assert!(crd.get("status").is_none());
    let versions = spec["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 1);
    let version = &versions[0];
    assert_eq!(version["name"], "v1beta2");
    assert_eq!(version["served"], true);
    assert_eq!(version["storage"], true);
    let schema = &version["schema"]["openAPIV3Schema"];
    assert_eq!(
        schema["properties"]["spec"]["properties"]["size"]["type"],
        "integer"
    );
    // preserveUnknownFields defaults to true in v1beta1 and is not allowed in v1.
    assert!(spec.get("preserveUnknownFields").is_none());
    assert_eq!(schema["x-kubernetes-preserve-unknown-fields"], true);
    assert_eq!(
        version["subresources"]["scale"]["specReplicasPath"],
        ".spec.size"
    );
    assert_eq!(
        version["additionalPrinterColumns"],
        json!([
            {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ])
    );
    assert_eq!(
        spec["conversion"],
        json!({
            "strategy": "Webhook",
            "webhook": {
                "conversionReviewVersions": ["v1beta1"],
                "clientConfig": {
                    "service": {"namespace": "etcd", "name": "etcd-conversion", "path": "/convert"}
                },
            },
        })
    );
}

#[test]
fn a_v1beta1_crd_that_prunes_unknown_fields_keeps_pruning_in_v1() {
    let files = Files::memcached().with_extra(V1BETA1_CRD);
    let path = format!("manifests/{V1BETA1_CRD}");
    let objects = files
        .edit(
            &path,
            "  scope: Namespaced\n",
            "  scope: Namespaced\n  preserveUnknownFields: false\n",
        )
        .convert(&Options::default())
        .unwrap();
    let crd = etcd_crd(&objects);
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    assert!(schema.get("x-kubernetes-preserve-unknown-fields").is_none());
    assert!(crd["spec"].get("preserveUnknownFields").is_none());
}

#[test]
fn a_v1beta1_crd_with_per_version_settings_keeps_them() {
    let files = Files::memcached().with_extra(V1BETA1_CRD);
    let path = format!("manifests/{V1BETA1_CRD}");
    let objects = files
        .edit(
            &path,
            "  version: v1beta2\n",
            "  versions:\n  - name: v1beta2\n    served: true\n    storage: true\n    additionalPrinterColumns:\n    - name: Version\n      type: string\n      JSONPath: .spec.version\n  - name: v1beta1\n    served: false\n    storage: false\n",
        )
        .convert(&Options::default())
        .unwrap();
    let crd = etcd_crd(&objects);
    let versions = crd["spec"]["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 2);
    assert_eq!(
        versions[0]["additionalPrinterColumns"],
        json!([{"name": "Version", "type": "string", "jsonPath": ".spec.version"}])
    );
    assert_eq!(versions[1]["additionalPrinterColumns"][0]["name"], "Size");
    assert_eq!(versions[1]["served"], false);
    assert!(versions[1]["schema"]["openAPIV3Schema"]["properties"]["spec"].is_object());
}

#[test]
fn a_crd_kind_not_in_the_supported_list_is_rejected() {
    let err = Files::memcached()
        .with_extra("podmonitor.yaml")
        .convert(&Options::default())
        .unwrap_err();
    assert_eq!(
        err,
        ConvertError::UnsupportedKind {
            file: "manifests/podmonitor.yaml".to_owned(),
            kind: "PodMonitor".to_owned(),
            name: "memcached-operator-pods".to_owned(),
        }
    );
}

#[test]
fn supported_extra_kinds_are_placed_by_scope() {
    let objects = Files::memcached()
        .with_extra("servicemonitor-and-configmap.yaml")
        .convert(&options(Some("ops"), &[]))
        .unwrap();
    let monitor = of_kind(&objects, "ServiceMonitor")[0];
    assert_eq!(namespace(monitor), Some("ops"));
    let config = of_kind(&objects, "ConfigMap")[0];
    assert_eq!(namespace(config), Some("ops"));
    assert!(config.data["data"]["controller_manager_config.yaml"].is_string());
    let priority = of_kind(&objects, "PriorityClass")[0];
    assert_eq!(namespace(priority), None);
    assert_eq!(priority.data["value"], 1_000_000);
}

#[test]
fn a_service_account_shipped_in_the_bundle_is_not_generated_twice() {
    let account = format!(
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {READER_SA}\n  labels:\n    shipped: \"true\"\n"
    );
    let objects = Files::memcached()
        .set("manifests/reader_v1_serviceaccount.yaml", &account)
        .convert(&options(Some("ops"), &[]))
        .unwrap();
    let accounts = of_kind(&objects, "ServiceAccount");
    let readers: Vec<_> = accounts.iter().filter(|o| name(o) == READER_SA).collect();
    assert_eq!(readers.len(), 1);
    assert!(
        readers[0].metadata.labels.is_some(),
        "the shipped one is kept"
    );
    assert_eq!(namespace(readers[0]), Some("ops"));
}

#[test]
fn a_csv_without_an_install_strategy_is_an_error_naming_its_file() {
    let files = Files::memcached();
    let csv = files.text(CSV_FILE);
    let cut = csv.find("  install:\n").unwrap();
    let end = csv.find("  installModes:\n").unwrap();
    let csv = format!("{}{}", &csv[..cut], &csv[end..]);
    let err = files
        .set(CSV_FILE, &csv)
        .convert(&Options::default())
        .unwrap_err();
    let message = err.to_string();
    assert!(message.contains(CSV_FILE), "{message}");
    assert!(message.contains("install"), "{message}");
}

#[test]
fn a_multi_megabyte_crd_is_converted() {
    let mut properties = String::new();
    for i in 0..40_000 {
        properties.push_str(&format!(
            "              field{i:05}:\n                description: a generated field of a large schema\n                type: string\n"
        ));
    }
    let crd = format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: bigs.example.com\nspec:\n  group: example.com\n  names:\n    kind: Big\n    plural: bigs\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n{properties}"
    );
    assert!(crd.len() > 3_000_000);
    let objects = Files::memcached()
        .set("manifests/bigs.example.com.yaml", &crd)
        .convert(&Options::default())
        .unwrap();
    let big = of_kind(&objects, "CustomResourceDefinition")
        .into_iter()
        .find(|o| name(o) == "bigs.example.com")
        .unwrap();
    let fields = &big.data["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        ["properties"];
    assert_eq!(fields.as_object().unwrap().len(), 40_000);
}

#[test]
fn an_owned_api_service_becomes_an_apiservice_and_its_service() {
    let objects = Files::memcached()
        .edit(
            CSV_FILE,
            "  apiservicedefinitions: {}\n",
            "  apiservicedefinitions:\n    owned:\n    - group: metrics.example.com\n      version: v1\n      kind: PodMetrics\n      name: podmetrics\n      deploymentName: memcached-operator-controller-manager\n",
        )
        .convert(&Options::default())
        .unwrap();
    let api_service = objects
        .iter()
        .find(|o| o.types.as_ref().unwrap().kind == "APIService")
        .unwrap();
    assert_eq!(
        api_service.metadata.name.as_deref(),
        Some("v1.metrics.example.com")
    );
    assert_eq!(
        api_service.data["spec"]["service"]["name"],
        "memcached-operator-controller-manager-service"
    );
    // It comes last: the engine registers it once its server is ready.
    assert_eq!(
        objects.last().unwrap().metadata.name,
        api_service.metadata.name
    );
}

#[test]
fn a_deployment_spec_of_the_wrong_shape_is_an_error_naming_the_csv_file() {
    let err = Files::memcached()
        .edit(
            CSV_FILE,
            "          strategy: {}\n          template:\n            metadata:\n",
            "          strategy: {}\n          template: [not, an, object]\n          unused:\n            metadata:\n",
        )
        .convert(&Options::default())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "failed to read ClusterServiceVersion \"{CSV_NAME}\" in {CSV_FILE}: \
             spec.install.spec.deployments[memcached-operator-controller-manager].spec.template \
             is not an object"
        )
    );
}

/// Two mounts at one path in a container (here both from the deploymentConfig) would make
/// the API server refuse the Deployment: refused at conversion, naming the Deployment.
#[test]
fn a_deployment_config_that_cannot_be_applied_is_an_error_naming_the_deployment() {
    let config = DeploymentConfig::from_value(&serde_json::json!({
        "volumeMounts": [{"name": "a", "mountPath": "/tmp"}, {"name": "b", "mountPath": "/tmp"}],
    }))
    .unwrap();
    let options = Options {
        deployment_config: config,
        ..Options::default()
    };
    let err = Files::memcached().convert(&options).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "failed to apply spec.config.deploymentConfig to Deployment \
             \"memcached-operator-controller-manager\" of ClusterServiceVersion \"{CSV_NAME}\" in \
             {CSV_FILE}: spec.config.deploymentConfig.volumeMounts[0] mounts volume \"a\" at \
             \"/tmp\", where container \"manager\" already mounts volume \"b\""
        )
    );
}

#[test]
fn a_deployment_config_changes_only_the_deployments() {
    let plain = Files::memcached().convert(&Options::default()).unwrap();
    let config = DeploymentConfig::from_value(&serde_json::json!({
        "env": [{"name": "LOG_LEVEL", "value": "debug"}],
        "annotations": {"example.com/team": "platform"},
    }))
    .unwrap();
    let options = Options {
        deployment_config: config,
        ..Options::default()
    };
    let tuned = Files::memcached().convert(&options).unwrap();
    assert_eq!(plain.len(), tuned.len());
    for (plain, tuned) in plain.iter().zip(&tuned) {
        if kind(plain) == "Deployment" {
            assert_ne!(plain, tuned);
            assert_eq!(
                tuned.data["spec"]["template"]["spec"]["containers"][0]["env"][1]["value"],
                "debug"
            );
        } else {
            assert_eq!(plain, tuned);
        }
    }
}

const MEMCACHED_CRD: &str = "manifests/cache.example.com_memcacheds.yaml";

#[test]
fn a_v1_crd_the_api_server_would_refuse_is_refused_naming_file_crd_and_field() {
    let err = Files::memcached()
        .edit(
            MEMCACHED_CRD,
            "    served: true\n",
            "    served: true\n    additionalPrinterColumns:\n    - name: Size\n      type: integer\n      JSONPath: .spec.size\n",
        )
        .convert(&Options::default())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "CustomResourceDefinition \"memcacheds.cache.example.com\" in manifests/cache.example.com_memcacheds.yaml cannot be installed: spec.versions[0].additionalPrinterColumns[0].JSONPath is not a field of apiextensions.k8s.io/v1 (did you mean jsonPath? it was renamed in v1); ask the bundle's author to fix the CRD"
    );

    let err = Files::memcached()
        .edit(
            MEMCACHED_CRD,
            "            properties:\n              size:\n",
            "            properties:\n              mode:\n                descripton: The mode.\n              size:\n",
        )
        .convert(&Options::default())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "CustomResourceDefinition \"memcacheds.cache.example.com\" in manifests/cache.example.com_memcacheds.yaml cannot be installed: spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.mode.descripton is not a field of apiextensions.k8s.io/v1 (did you mean description?); ask the bundle's author to fix the CRD"
    );

    let err = Files::memcached()
        .edit(
            MEMCACHED_CRD,
            "              size:\n                format: int32\n",
            "              size:\n                anyOf:\n                - type: string\n                - type: integer\n                format: int32\n",
        )
        .convert(&Options::default())
        .unwrap_err();
    let ConvertError::InvalidCrd { field, message, .. } = err else {
        panic!("{err}");
    };
    assert_eq!(
        field,
        "spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.size.anyOf[0].type"
    );
    assert!(
        message.starts_with("is not allowed inside allOf, anyOf, oneOf or not"),
        "{message}"
    );
}

#[test]
fn a_crd_converted_from_v1beta1_is_checked_too_with_the_path_in_the_converted_crd() {
    let path = format!("manifests/{V1BETA1_CRD}");
    let err = Files::memcached()
        .with_extra(V1BETA1_CRD)
        .edit(
            &path,
            "            version:\n              type: string\n",
            "            version:\n              type: string\n              x-kubernetes-foo: true\n",
        )
        .convert(&Options::default())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "CustomResourceDefinition \"etcdclusters.etcd.database.coreos.com\" in manifests/etcdclusters.etcd.database.coreos.com.crd.yaml cannot be installed: spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.version.x-kubernetes-foo is not a field of apiextensions.k8s.io/v1 (the path is in the CRD as converted from v1beta1 to v1); ask the bundle's author to fix the CRD"
    );
}

/// Every CRD in the crate's test bundles (fixtures and golden cases, including those whose
/// conversion fails for another reason) passes the v1 check, shipped as v1 or converted.
#[test]
fn every_crd_fixture_of_the_tests_passes_the_v1_check() {
    fn files(dir: &std::path::Path, found: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files(&path, found);
            } else if path
                .extension()
                .is_some_and(|ext| ext == "yaml" || ext == "yml" || ext == "json")
            {
                found.push(path);
            }
        }
    }
    let root = testkit::package_path("").join("tests");
    let mut found = Vec::new();
    files(&root.join("fixtures"), &mut found);
    for case in std::fs::read_dir(root.join("golden")).unwrap() {
        let bundle = case.unwrap().path().join("bundle");
        if bundle.is_dir() {
            files(&bundle, &mut found);
        }
    }
    let mut crds = 0;
    for path in found {
        let name = path.display().to_string();
        let Ok(objects) =
            apply_engine::manifest::parse_documents(&name, &std::fs::read(&path).unwrap())
        else {
            continue;
        };
        for object in objects
            .iter()
            .filter(|o| kind(o) == "CustomResourceDefinition")
        {
            registry_provisioner::crd::to_v1(&name, object).unwrap_or_else(|err| panic!("{err}"));
            crds += 1;
        }
    }
    assert!(crds >= 15, "only {crds} CRDs found");
}
