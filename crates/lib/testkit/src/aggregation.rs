//! The catalog query API as an aggregated API, for tests that run deppy-resolver in the test
//! process: a Service in front of its port, an EndpointSlice standing in for the Pod that
//! does not exist, and the APIService of deploy/components/deppy-resolver/api-service.yaml
//! pointing at them. The API server reaches the Service through the local control plane's
//! egress proxy, which maps its address to 127.0.0.1 and the target port (the port the
//! test's API listens on).

use std::time::Duration;

use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::{Api, Client};

/// The APIService's name, as deployed.
pub const API_SERVICE: &str = "v1.catalogs.deppy.io";

/// The registration, removed when dropped (also when the test fails): once the test's
/// deppy-resolver is gone, an APIService left behind would be unavailable, and the
/// namespace controller does not finish deleting any namespace while an aggregated API's
/// discovery fails, which would hold up every later test's cleanup.
#[must_use = "the APIService is removed when this is dropped"]
#[derive(Debug)]
pub struct Registration;

impl Drop for Registration {
    fn drop(&mut self) {
        // Synchronous, as Drop is; kubectl is on the tests' PATH (hack/build-tools).
        let deleted = std::process::Command::new("kubectl")
            .args([
                "delete",
                "apiservice",
                API_SERVICE,
                "--ignore-not-found",
                "--wait=false",
            ])
            .output();
        if let Err(err) = deleted {
            eprintln!("failed to delete APIService {API_SERVICE}: {err}");
        }
    }
}

/// Registers the API listening on 127.0.0.1:`port` as served from `namespace`, and waits
/// until the API server counts it available (deppy-resolver must be running there: it
/// gives the APIService its CA bundle, and the API server probes it).
pub async fn register_catalog_api(client: &Client, namespace: &str, port: u16) -> Registration {
    let registration = Registration;
    let manifests = format!(
        r#"
apiVersion: v1
kind: Service
metadata: {{name: deppy-catalogs, namespace: {namespace}}}
spec:
  ports: [{{name: https, port: 443, targetPort: {port}}}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: deppy-catalogs-test
  namespace: {namespace}
  labels: {{kubernetes.io/service-name: deppy-catalogs, endpointslice.kubernetes.io/managed-by: testkit}}
addressType: IPv4
endpoints: [{{addresses: ["192.0.2.1"], conditions: {{ready: true}}}}]
ports: [{{name: https, port: {port}, protocol: TCP}}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {{name: {API_SERVICE}}}
spec:
  group: catalogs.deppy.io
  version: v1
  service: {{namespace: {namespace}, name: deppy-catalogs, port: 443}}
  groupPriorityMinimum: 1000
  versionPriority: 15
"#
    );
    crate::apply_manifests(client, &manifests).await;
    let api_services = Api::<APIService>::all(client.clone());
    crate::wait_for(
        "APIService v1.catalogs.deppy.io to be Available",
        Duration::from_secs(90),
        || async {
            let service = api_services
                .get(API_SERVICE)
                .await
                .map_err(|e| e.to_string())?;
            let pointed_here = service
                .spec
                .as_ref()
                .and_then(|spec| spec.service.as_ref())
                .is_some_and(|s| s.namespace.as_deref() == Some(namespace));
            let available = service
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .and_then(|c| c.iter().find(|c| c.type_ == "Available"))
                .cloned();
            match available {
                Some(c) if pointed_here && c.status == "True" => Ok(()),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
    registration
}
