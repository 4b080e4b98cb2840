//! Every CRD applies and becomes Established, and a fully populated object of each kind
//! round-trips through the real API server (spec and status) without loss.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::fmt::Debug;

use deppy_api::{
    ActiveResolution, ActiveResolutionSpec, ActiveResolutionStatus, Catalog, CatalogSource,
    CatalogSpec, CatalogStatus, ConfigMapCatalogSource, Constraint, GvkRequirement,
    ImageCatalogSource, InstalledPackage, PackageRequirement, ProhibitedPackage, ResolvedEntity,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Patch, PatchParams, PostParams};
use kube::core::object::{HasSpec, HasStatus};
use kube::{Api, Resource};
use platform_api::{
    ActiveBundleDeployment, ClusterOperator, ClusterOperatorSpec, ClusterOperatorStatus,
    ClusterOperatorStatusCondition, ObjectReference, OperandVersion, Package, PlatformOperator,
    PlatformOperatorSpec, PlatformOperatorStatus,
};
use rukpak_api::{
    Bundle, BundleDeployment, BundleDeploymentSpec, BundleDeploymentStatus, BundlePhase,
    BundleSource, BundleSpec, BundleStatus, BundleTemplate, CollisionProtection, ConfigMapRef,
    ConfigMapSource, ContentRef, DeletionPolicy, GitAuth, GitRef, GitSource, HttpAuth, HttpSource,
    ImageSource, InventoryEntry, ProvisionerClass, ProvisionerClassSpec, ProvisionerClassStatus,
    SecretRef, ServiceAccountRef, SourceType, TemplateMetadata, UploadSource,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;
use testkit::{client, install_crds, unique_name};

fn at(second: i64) -> Time {
    Time(k8s_openapi::jiff::Timestamp::from_second(second).unwrap())
}

fn condition(type_: &str, status: &str, reason: &str) -> Condition {
    Condition {
        type_: type_.into(),
        status: status.into(),
        reason: reason.into(),
        message: format!("{type_} is {status}"),
        observed_generation: Some(1),
        last_transition_time: at(1_700_000_000),
    }
}

/// Creates `object`, reads it back, writes `status` through the status subresource and
/// reads it back: both must come back exactly as written.
async fn round_trip<K>(object: K, status: K::Status)
where
    K: Resource<DynamicType = ()>
        + HasSpec
        + HasStatus
        + Clone
        + Debug
        + Serialize
        + DeserializeOwned,
    K::Spec: PartialEq + Debug,
    K::Status: PartialEq + Debug + Serialize,
{
    let client = client().await;
    install_crds(&client).await;
    let api: Api<K> = Api::all(client);
    let created = api.create(&PostParams::default(), &object).await.unwrap();
    let name = created.meta().name.clone().unwrap();
    let read = api.get(&name).await.unwrap();
    assert_eq!(
        read.spec(),
        object.spec(),
        "{} spec round-trips",
        K::kind(&())
    );

    let patched = api
        .patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": status })),
        )
        .await
        .unwrap();
    assert_eq!(
        patched.status(),
        Some(&status),
        "{} status round-trips",
        K::kind(&())
    );
    let read = api.get(&name).await.unwrap();
    assert_eq!(read.status(), Some(&status));
    assert_eq!(
        read.spec(),
        object.spec(),
        "a status write leaves the spec alone"
    );
}

fn full_bundle_spec(source: BundleSource) -> BundleSpec {
    BundleSpec {
        provisioner_class_name: "core-rukpak-io-registry".into(),
        source,
    }
}

fn image_source() -> BundleSource {
    BundleSource {
        type_: SourceType::Image,
        image: Some(ImageSource {
            ref_: "registry.example/bundles/etcd:v1.0.0".into(),
            pull_secret: Some("registry-credentials".into()),
            insecure_skip_tls_verify: Some(false),
            certificate_data: Some(
                "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".into(),
            ),
        }),
        git: None,
        http: None,
        config_maps: None,
        upload: None,
    }
}

#[tokio::test]
async fn a_provisioner_class_round_trips() {
    let mut class = ProvisionerClass::new(
        &unique_name("class"),
        ProvisionerClassSpec {
            provisioner: "example-provisioner".into(),
            parameters: Some(json!({ "nested": { "list": [1, "two", true] }, "flag": false })),
        },
    );
    class.metadata.labels = Some(BTreeMap::from([("team".into(), "a".into())]));
    round_trip(
        class,
        ProvisionerClassStatus {
            conditions: vec![condition("Available", "True", "Serving")],
            default_identity: Some(rukpak_api::ApplyIdentity::from_username(
                "system:serviceaccount:rukpak-system:plain-provisioner",
            )),
        },
    )
    .await;
}

#[tokio::test]
async fn bundles_of_every_source_type_round_trip() {
    let status = BundleStatus {
        phase: Some(BundlePhase::Unpacked),
        resolved_source: Some(image_source()),
        content: Some(ContentRef {
            digest: format!("sha256:{}", "a".repeat(64)),
            size: 123_456_789,
            chunks: 3,
        }),
        observed_generation: Some(1),
        conditions: vec![condition("Unpacked", "True", "UnpackSuccessful")],
        revision_outcome: Some(rukpak_api::RevisionOutcome::Healthy),
    };
    let git = BundleSource {
        type_: SourceType::Git,
        git: Some(GitSource {
            repository: "https://git.example/bundles.git".into(),
            directory: Some("bundles/etcd/manifests".into()),
            ref_: GitRef {
                branch: None,
                tag: None,
                commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
            },
            auth: Some(GitAuth {
                secret: Some(SecretRef {
                    name: "git-credentials".into(),
                }),
                insecure_skip_tls_verify: Some(true),
            }),
        }),
        ..image_source_cleared(SourceType::Git)
    };
    let http = BundleSource {
        http: Some(HttpSource {
            url: "https://files.example/bundle.tgz".into(),
            sha256: Some("b".repeat(64)),
            auth: Some(HttpAuth {
                secret: Some(SecretRef {
                    name: "http-credentials".into(),
                }),
                insecure_skip_tls_verify: Some(false),
                certificate_data: Some("pem".into()),
            }),
        }),
        ..image_source_cleared(SourceType::Http)
    };
    let config_maps = BundleSource {
        config_maps: Some(vec![
            ConfigMapSource {
                config_map: ConfigMapRef {
                    name: "manifests-a".into(),
                },
                path: Some("manifests".into()),
            },
            ConfigMapSource {
                config_map: ConfigMapRef {
                    name: "manifests-b".into(),
                },
                path: None,
            },
        ]),
        ..image_source_cleared(SourceType::ConfigMaps)
    };
    let upload = BundleSource {
        upload: Some(UploadSource {}),
        ..image_source_cleared(SourceType::Upload)
    };
    for source in [image_source(), git, http, config_maps, upload] {
        let bundle = Bundle::new(&unique_name("bundle"), full_bundle_spec(source));
        round_trip(bundle, status.clone()).await;
    }
}

fn image_source_cleared(type_: SourceType) -> BundleSource {
    BundleSource {
        type_,
        image: None,
        git: None,
        http: None,
        config_maps: None,
        upload: None,
    }
}

#[tokio::test]
async fn a_bundle_deployment_round_trips() {
    let deployment = BundleDeployment::new(
        &unique_name("bd"),
        BundleDeploymentSpec {
            provisioner_class_name: "core-rukpak-io-plain".into(),
            template: BundleTemplate {
                metadata: Some(TemplateMetadata {
                    labels: BTreeMap::from([("app".into(), "etcd".into())]),
                    annotations: BTreeMap::from([("note".into(), "kept".into())]),
                }),
                spec: full_bundle_spec(image_source()),
            },
            config: Some(json!({ "installNamespace": "etcd", "targetNamespaces": ["a", "b"] })),
            install_namespace: Some("etcd-system".into()),
            paused: Some(true),
            service_account: Some(ServiceAccountRef {
                namespace: "etcd-system".into(),
                name: "installer".into(),
            }),
            collision_protection: CollisionProtection::IfNoController,
            deletion_policy: DeletionPolicy::Orphan,
            revision_history_limit: Some(3),
            health_checks: vec![rukpak_api::HealthCheck {
                group: "cert-manager.io".into(),
                kind: "Certificate".into(),
                name: None,
                match_labels: std::collections::BTreeMap::from([("app".into(), "web".into())]),
                ready: "self.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')"
                    .into(),
                failed: Some(
                    "self.status.conditions.exists(c, c.type == 'Issuing' && c.reason == 'Failed')"
                        .into(),
                ),
            }],
            progress_deadline_seconds: Some(600),
            rollback_on_failure: Some(true),
            upgrade_approval: rukpak_api::UpgradeApproval::Manual,
            approved_revision: Some(format!("sha256:{}", "b".repeat(64))),
        },
    );
    let status = BundleDeploymentStatus {
        active_bundle: Some("etcd-5d7f9c".into()),
        inventory: vec![
            InventoryEntry {
                group: String::new(),
                version: "v1".into(),
                kind: "Namespace".into(),
                namespace: None,
                name: "etcd-system".into(),
            },
            InventoryEntry {
                group: "apps".into(),
                version: "v1".into(),
                kind: "Deployment".into(),
                namespace: Some("etcd-system".into()),
                name: "etcd-operator".into(),
            },
        ],
        skipped: vec![InventoryEntry {
            group: "monitoring.coreos.com".into(),
            version: "v1".into(),
            kind: "ServiceMonitor".into(),
            namespace: Some("etcd-system".into()),
            name: "etcd-operator".into(),
        }],
        adjustments: vec![
            "Deployment etcd-operator (spec.install.spec.deployments[0]): dropped spec.metadata, which Kubernetes does not have and the API server would refuse (OLM drops it too)".into(),
        ],
        observed_generation: Some(1),
        conditions: vec![
            condition("HasValidBundle", "True", "UnpackSuccessful"),
            condition("Installed", "True", "InstallationSucceeded"),
            condition("Healthy", "False", "Unhealthy"),
        ],
        revisions: vec![rukpak_api::RevisionRecord {
            revision: 4,
            bundle: "etcd-5d7f9c".into(),
            digest: format!("sha256:{}", "c".repeat(64)),
            outcome: rukpak_api::RevisionOutcome::Failed,
            started: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::from_second(1_700_000_000).unwrap(),
            )),
            last_healthy: None,
            message: Some("did not become ready within spec.progressDeadlineSeconds (600s)".into()),
        }],
        pending_revision: Some(rukpak_api::PendingRevision {
            revision: 5,
            bundle: "etcd-8a1b2c".into(),
            digest: format!("sha256:{}", "d".repeat(64)),
            added: vec!["ConfigMap etcd-system/extra".into()],
            changed: vec!["Deployment etcd-system/etcd-operator".into()],
            removed: vec!["Service etcd-system/old".into()],
            permissions_added: vec![
                "cluster-wide (ClusterRole etcd-operator): get on nodes".into(),
            ],
            refused: Vec::new(),
        }),
    };
    round_trip(deployment, status).await;
}

#[tokio::test]
async fn catalogs_round_trip() {
    let status = CatalogStatus {
        resolved_source: Some(format!(
            "registry.example/catalog@sha256:{}",
            "c".repeat(64)
        )),
        content: Some(ContentRef {
            digest: format!("sha256:{}", "d".repeat(64)),
            size: 42,
            chunks: 1,
        }),
        bundle_index: Some(ContentRef {
            digest: format!("sha256:{}", "e".repeat(64)),
            size: 7,
            chunks: 1,
        }),
        urls: Some(deppy_api::CatalogUrls {
            base: "https://deppy-catalogs.deppy-system.svc/catalogs/operatorhub".to_owned(),
        }),
        packages: Some(12),
        bundles: Some(240),
        last_polled: Some(at(1_700_000_100)),
        observed_generation: Some(1),
        conditions: vec![
            condition("Unpacked", "True", "UnpackSuccessful"),
            condition("Serving", "True", "Serving"),
        ],
    };
    let image = Catalog::new(
        &unique_name("catalog"),
        CatalogSpec {
            source: CatalogSource {
                image: Some(ImageCatalogSource {
                    ref_: "registry.example/catalog:latest".into(),
                    pull_secret: Some("pull".into()),
                    insecure_skip_tls_verify: Some(true),
                }),
                config_map: None,
            },
            priority: Some(-5),
            poll_interval: Some("1h30m".into()),
        },
    );
    round_trip(image, status.clone()).await;
    let config_map = Catalog::new(
        &unique_name("catalog"),
        CatalogSpec {
            source: CatalogSource {
                image: None,
                config_map: Some(ConfigMapCatalogSource {
                    name: "catalog".into(),
                    namespace: "deppy-system".into(),
                }),
            },
            priority: None,
            poll_interval: None,
        },
    );
    round_trip(config_map, status).await;
}

#[tokio::test]
async fn an_active_resolution_with_every_constraint_kind_round_trips() {
    let one = |c: Constraint| c;
    let resolution = ActiveResolution::new(
        &unique_name("resolution"),
        ActiveResolutionSpec {
            sources: vec!["example-operators".into()],
            constraints: vec![
                one(Constraint {
                    required: Some(PackageRequirement {
                        name: "etcd".into(),
                        version_range: Some(">=1.0.0 <2.0.0".into()),
                        channel: Some("stable".into()),
                    }),
                    ..Default::default()
                }),
                one(Constraint {
                    gvk_required: Some(GvkRequirement {
                        group: "etcd.database.coreos.com".into(),
                        version: "v1beta2".into(),
                        kind: "EtcdCluster".into(),
                    }),
                    ..Default::default()
                }),
                one(Constraint {
                    prohibited: Some(ProhibitedPackage {
                        name: "legacy-operator".into(),
                        version_range: None,
                    }),
                    ..Default::default()
                }),
                one(Constraint {
                    installed: Some(InstalledPackage {
                        name: "etcd".into(),
                        version: "1.0.0".into(),
                    }),
                    ..Default::default()
                }),
                one(Constraint {
                    expression: Some(
                        r#"required("first-example-operator", ">= 1.0.0", "stable")"#.into(),
                    ),
                    ..Default::default()
                }),
            ],
        },
    );
    let status = ActiveResolutionStatus {
        selections: vec!["example-operators:etcd:1.2.0:stable".into()],
        entities: vec![ResolvedEntity {
            package: "etcd".into(),
            image: "registry.example/etcd-bundle@sha256:0".into(),
        }],
        deprecations: vec![deppy_api::SelectionDeprecation {
            package: "etcd".into(),
            channel: "stable".into(),
            bundle: "etcd.v1.2.0".into(),
            package_message: None,
            channel_message: Some("stable is frozen: use fast".into()),
            bundle_message: Some("1.2.0 is affected by a data-loss bug".into()),
        }],
        observed_generation: Some(1),
        conditions: vec![condition("Resolved", "True", "Succeeded")],
    };
    round_trip(resolution, status).await;
}

#[tokio::test]
async fn a_platform_operator_round_trips() {
    let operator = PlatformOperator::new(
        &unique_name("po"),
        PlatformOperatorSpec {
            package: Package {
                name: "cert-manager".into(),
                channel: Some("stable".into()),
                version_range: Some("~1.14".into()),
                upgrade_constraint_policy: platform_api::UpgradeConstraintPolicy::SelfCertified,
            },
            config: Some(platform_api::OperatorConfig {
                deployment_config: Some(serde_json::json!({"nodeSelector": {"role": "infra"}})),
            }),
            upgrade_approval: Some(rukpak_api::UpgradeApproval::Manual),
            approved_revision: Some(format!("sha256:{}", "a".repeat(64))),
        },
    );
    let status = PlatformOperatorStatus {
        active_bundle_deployment: Some(ActiveBundleDeployment {
            name: "cert-manager".into(),
        }),
        installed_bundles: vec![platform_api::InstalledBundle {
            package: "cert-manager".into(),
            version: "1.14.5".into(),
        }],
        observed_generation: Some(1),
        conditions: vec![condition("Installed", "True", "InstallSuccessful")],
    };
    round_trip(operator, status).await;
}

#[tokio::test]
async fn a_cluster_operator_round_trips() {
    let operator = ClusterOperator::new(&unique_name("co"), ClusterOperatorSpec {});
    let cond = |type_: &str, status: &str| ClusterOperatorStatusCondition {
        type_: type_.into(),
        status: status.into(),
        last_transition_time: at(1_700_000_000),
        reason: Some("AsExpected".into()),
        message: Some("All platform operators are in a successful state".into()),
    };
    let status = ClusterOperatorStatus {
        conditions: vec![
            cond("Available", "True"),
            cond("Progressing", "False"),
            cond("Degraded", "False"),
            cond("Upgradeable", "True"),
        ],
        versions: vec![OperandVersion {
            name: "operator".into(),
            version: "4.99.0".into(),
        }],
        related_objects: vec![
            ObjectReference {
                group: String::new(),
                resource: "namespaces".into(),
                namespace: None,
                name: "platform-operators-system".into(),
            },
            ObjectReference {
                group: "platform.openshift.io".into(),
                resource: "platformoperators".into(),
                namespace: None,
                name: String::new(),
            },
        ],
    };
    round_trip(operator, status).await;
}
