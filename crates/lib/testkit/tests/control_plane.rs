//! The local control plane is a real Kubernetes: these tests fail on an API server
//! alone (no scheduler, no kwok, no controller manager) or on a fake.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams,
};
use kube::{Api, ResourceExt};
use serde_json::json;
use testkit::{TestNamespace, client, unique_name, wait_for};

const TIMEOUT: Duration = Duration::from_secs(90);

#[tokio::test]
async fn api_server_reports_the_pinned_kubernetes_release() {
    let info = client().await.apiserver_version().await.unwrap();
    assert_eq!(info.major, "1");
    assert_eq!(info.minor, "36", "k8s-openapi is built for v1_36: {info:?}");
    assert!(info.git_version.starts_with("v1.36."), "{info:?}");
}

#[tokio::test]
async fn a_deployment_becomes_available_on_a_simulated_node() {
    let client = client().await;
    let ns = TestNamespace::create(&client, "deploy").await;
    let deployments: Api<Deployment> = ns.api();
    let deployment: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": { "name": "web" },
        "spec": {
            "replicas": 2,
            "selector": { "matchLabels": { "app": "web" } },
            "template": {
                "metadata": { "labels": { "app": "web" } },
                // kwok never pulls images; the name only has to be valid.
                "spec": { "containers": [{ "name": "web", "image": "example.invalid/web:1.0" }] }
            }
        }
    }))
    .unwrap();
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();

    // Deployment controller -> ReplicaSet -> Pods -> scheduler binds -> kwok runs them.
    wait_for(
        "deployment web Available with 2 replicas",
        TIMEOUT,
        || async {
            let d = deployments.get("web").await.map_err(|e| e.to_string())?;
            let status = d.status.unwrap_or_default();
            let available = status
                .conditions
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Available" && c.status == "True");
            if available && status.available_replicas == Some(2) {
                Ok(())
            } else {
                Err(format!(
                    "available={available} replicas={:?}",
                    status.available_replicas
                ))
            }
        },
    )
    .await;

    let pods = ns
        .api::<Pod>()
        .list(&ListParams::default().labels("app=web"))
        .await
        .unwrap();
    assert_eq!(pods.items.len(), 2);
    for pod in &pods.items {
        let spec = pod.spec.as_ref().unwrap();
        assert_eq!(
            spec.node_name.as_deref(),
            Some("kwok-node-0"),
            "scheduled on the kwok node"
        );
        let phase = pod.status.as_ref().and_then(|s| s.phase.clone());
        assert_eq!(
            phase.as_deref(),
            Some("Running"),
            "kwok ran {}",
            pod.name_any()
        );
    }
    ns.delete().await;
}

#[tokio::test]
async fn deleting_an_owner_makes_the_garbage_collector_delete_its_dependent() {
    let client = client().await;
    let ns = TestNamespace::create(&client, "gc").await;
    let owners: Api<ConfigMap> = ns.api();
    let owner = owners
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({ "metadata": { "name": "owner" } })).unwrap(),
        )
        .await
        .unwrap();
    let secrets: Api<Secret> = ns.api();
    let dependent: Secret = serde_json::from_value(json!({
        "metadata": {
            "name": "dependent",
            "ownerReferences": [{
                "apiVersion": "v1", "kind": "ConfigMap",
                "name": "owner", "uid": owner.uid().unwrap(),
            }]
        },
        "stringData": { "k": "v" }
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &dependent)
        .await
        .unwrap();

    owners
        .delete("owner", &DeleteParams::background())
        .await
        .unwrap();
    wait_for(
        "the garbage collector to delete the dependent",
        TIMEOUT,
        || async {
            match secrets
                .get_opt("dependent")
                .await
                .map_err(|e| e.to_string())?
            {
                None => Ok(()),
                Some(_) => Err("dependent still exists".to_owned()),
            }
        },
    )
    .await;

    // Control: an object without an owner reference survives.
    let standalone: Secret =
        serde_json::from_value(json!({ "metadata": { "name": "standalone" } })).unwrap();
    secrets
        .create(&PostParams::default(), &standalone)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(secrets.get_opt("standalone").await.unwrap().is_some());
    ns.delete().await;
}

#[tokio::test]
async fn a_crd_becomes_established_and_its_custom_resources_round_trip() {
    let client = client().await;
    let group = format!("{}.testkit.olmv1.io", unique_name("g"));
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": { "name": format!("widgets.{group}") },
        "spec": {
            "group": group,
            "names": { "kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList" },
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": { "openAPIV3Schema": {
                    "type": "object",
                    "properties": { "spec": {
                        "type": "object",
                        "required": ["size"],
                        "properties": { "size": { "type": "integer", "minimum": 1 } }
                    }}
                }}
            }]
        }
    }))
    .unwrap();
    crds.create(&PostParams::default(), &crd).await.unwrap();
    let name = crd.name_any();
    wait_for("the CRD to become Established", TIMEOUT, || async {
        let crd = crds.get(&name).await.map_err(|e| e.to_string())?;
        let established = crd
            .status
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True");
        if established {
            Ok(())
        } else {
            Err("not Established".to_owned())
        }
    })
    .await;

    let ns = TestNamespace::create(&client, "crd").await;
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(&group, "v1", "Widget"));
    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns.name(), &resource);
    let widget = DynamicObject::new("w1", &resource).data(json!({ "spec": { "size": 3 } }));
    // The API may take a moment to serve a just-established CRD.
    wait_for("creating a Widget", TIMEOUT, || async {
        widgets
            .create(&PostParams::default(), &widget)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    })
    .await;
    let read = widgets.get("w1").await.unwrap();
    assert_eq!(read.data["spec"]["size"], json!(3));

    // The schema is enforced by the real API server.
    let invalid = DynamicObject::new("w2", &resource).data(json!({ "spec": { "size": 0 } }));
    let err = widgets
        .create(&PostParams::default(), &invalid)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("spec.size"), "{err}");

    ns.delete().await;
    crds.delete(&name, &DeleteParams::default()).await.unwrap();
}
