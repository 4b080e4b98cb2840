//! The ConfigMap source with ConfigMaps read back from a real API server.

// Test helpers outside #[test] functions unwrap too; a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;

use content::Limits;
use content::source::configmap::{self, ConfigMapError, ConfigMapSource};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use testkit::TestNamespace;

async fn create(api: &Api<ConfigMap>, name: &str, immutable: Option<bool>) -> ConfigMap {
    api.create(
        &PostParams::default(),
        &ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            immutable,
            data: Some(BTreeMap::from([(
                "deployment.yaml".to_owned(),
                "kind: Deployment".to_owned(),
            )])),
            binary_data: Some(BTreeMap::from([(
                "logo.png".to_owned(),
                ByteString(vec![0x89, b'P', b'N', b'G', 0, 0xff]),
            )])),
        },
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn immutable_configmaps_from_the_api_server_become_files_and_mutable_ones_are_refused() {
    let client = testkit::client().await;
    let ns = TestNamespace::create(&client, "content-cm").await;
    let api: Api<ConfigMap> = ns.api();
    let frozen = create(&api, "frozen", Some(true)).await;
    let unpacked = configmap::unpack(
        &[ConfigMapSource {
            config_map: api.get("frozen").await.unwrap(),
            path: "manifests".to_owned(),
        }],
        &Limits::default(),
    )
    .unwrap();
    let files = unpacked.content.files(&Limits::default()).unwrap();
    assert_eq!(
        files.get("manifests/deployment.yaml").map(|b| b.as_ref()),
        Some(&b"kind: Deployment"[..])
    );
    assert_eq!(
        files.get("manifests/logo.png").map(|b| b.as_ref()),
        Some(&[0x89, b'P', b'N', b'G', 0, 0xff][..])
    );
    let content::ResolvedSource::ConfigMaps(resolved) = unpacked.resolved else {
        panic!("wrong resolved source");
    };
    assert_eq!(resolved[0].name, format!("{}/frozen", ns.name()));
    assert_eq!(resolved[0].uid, frozen.metadata.uid);

    create(&api, "mutable", None).await;
    let err = configmap::unpack(
        &[ConfigMapSource {
            config_map: api.get("mutable").await.unwrap(),
            path: "manifests".to_owned(),
        }],
        &Limits::default(),
    )
    .unwrap_err();
    assert!(matches!(err, ConfigMapError::Mutable { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        format!(
            "failed to use configmap {}/mutable: it is not immutable (set immutable: true)",
            ns.name()
        )
    );
    ns.delete().await;
}
