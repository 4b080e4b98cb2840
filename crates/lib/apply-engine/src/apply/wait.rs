//! Waiting within an apply: CRDs until Established, the servers behind webhooks and API
//! services until they answer, and the probes between phases; and reading the live
//! objects those waits look at.

use crate::object::ObjectKey;
use crate::phase::{ApplyStep, Phase, sort_for_apply};
use health::Health;
use health::checks::{CompiledChecks, judge};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, ListParams};
use kube::core::GroupVersionKind;
use rukpak_api::InventoryEntry;
use serde_json::json;
use std::collections::HashMap;
use std::time::Duration;

use super::*;

impl Applier {
    /// The probes before `next`: every object of `written` that a declared health check
    /// selects, or whose kind rolls out (Deployments, StatefulSets, DaemonSets, Jobs), read
    /// as the provisioner and judged; `None` when all pass.
    pub(super) async fn gate(
        &self,
        next: Phase,
        written: &[&Resolved],
        after_write: &HashMap<ObjectKey, DynamicObject>,
        checks: &CompiledChecks,
    ) -> Result<Option<PhaseWait>, ApplyError> {
        let mut objects = Vec::new();
        for item in written {
            let desired = serde_json::to_value(&item.object).unwrap_or_default();
            if !(rolls_out(&item.key) || checks.selects(&desired)) {
                continue;
            }
            let live = self
                .observe(&item.key, &item.resource, after_write)
                .await
                .map_err(|source| ApplyError::Read {
                    object: item.key.clone(),
                    source,
                })?;
            let verdict = match &live {
                Some(live) => judge(checks, &serde_json::to_value(live).unwrap_or_default()),
                None => Health::Progressing("not found yet".to_owned()),
            };
            if !verdict.is_healthy() {
                // A Deployment's own status says how many replicas are missing, not why: name
                // a pod and what keeps it from Ready.
                let verdict = match (&live, &verdict) {
                    (Some(live), Health::Progressing(message) | Health::Unhealthy(message))
                        if item.key.group == "apps" && item.key.kind == "Deployment" =>
                    {
                        match self.why_pods_are_not_ready(item, live).await {
                            Some(why) => verdict.with_message(format!("{message} ({why})")),
                            None => verdict,
                        }
                    }
                    _ => verdict,
                };
                objects.push((item.key.clone(), verdict));
            }
        }
        if objects.is_empty() {
            return Ok(None);
        }
        self.report(ApplyStep::WaitingForProbes {
            phase: next,
            objects: objects.len(),
        });
        Ok(Some(PhaseWait { next, objects }))
    }

    /// The live object as the provisioner sees it: as this apply's write returned it, else
    /// as the drift watch of its kind holds it, else read from the API server.
    pub(super) async fn observe(
        &self,
        key: &ObjectKey,
        resource: &ApiResource,
        after_write: &HashMap<ObjectKey, DynamicObject>,
    ) -> Result<Option<DynamicObject>, kube::Error> {
        observe(
            &self.observer,
            self.watches.as_ref(),
            key,
            resource,
            after_write,
        )
        .await
    }

    /// Whether a Ready pod the Service selects has a loopback address: a host-network pod on
    /// a node whose address is 127.0.0.1 (the local real node, `hack/clusterctl/node.go`).
    /// EndpointSlices cannot hold a loopback address (API validation refuses it), so such a
    /// backend never shows up there; the API server still reaches it through the Service.
    pub(super) async fn serves_on_loopback(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<bool, ApplyError> {
        let read_error = |kind: &str, source| ApplyError::Read {
            object: ObjectKey {
                group: String::new(),
                version: "v1".to_owned(),
                kind: kind.to_owned(),
                namespace: Some(namespace.to_owned()),
                name: name.to_owned(),
            },
            source,
        };
        let services: Api<k8s_openapi::api::core::v1::Service> =
            Api::namespaced(self.observer.clone(), namespace);
        let Some(service) = services
            .get_opt(name)
            .await
            .map_err(|source| read_error("Service", source))?
        else {
            return Ok(false);
        };
        let selector = service
            .spec
            .and_then(|spec| spec.selector)
            .unwrap_or_default();
        if selector.is_empty() {
            return Ok(false);
        }
        let labels = selector
            .iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect::<Vec<_>>()
            .join(",");
        let pods: Api<DynamicObject> = Api::namespaced_with(
            self.observer.clone(),
            namespace,
            &ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "Pod"), "pods"),
        );
        let listed = pods
            .list(&ListParams::default().labels(&labels))
            .await
            .map_err(|source| read_error("Pod", source))?;
        Ok(has_ready_loopback_pod(listed.items.iter().map(|p| &p.data)))
    }

    /// What keeps a Deployment's pods from Ready, in the kubelet's words (a container
    /// waiting in `CrashLoopBackOff` or `ImagePullBackOff`, a pod not scheduled), so the
    /// status names the pod an administrator should look at. `None` when the pods cannot be
    /// read or show nothing more than "not ready yet".
    pub(super) async fn why_pods_are_not_ready(
        &self,
        deployment: &Resolved,
        live: &DynamicObject,
    ) -> Option<String> {
        let labels = live
            .data
            .pointer("/spec/selector/matchLabels")?
            .as_object()?
            .iter()
            .map(|(key, value)| format!("{key}={}", value.as_str().unwrap_or_default()))
            .collect::<Vec<_>>()
            .join(",");
        let pods: Api<DynamicObject> = Api::namespaced_with(
            self.observer.clone(),
            deployment.key.namespace.as_deref()?,
            &ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "Pod"), "pods"),
        );
        let listed = pods
            .list(&ListParams::default().labels(&labels))
            .await
            .ok()?;
        listed.items.iter().find_map(|pod| {
            describe_unready_pod(&pod.data)
                .map(|why| format!("pod {}: {why}", kube::ResourceExt::name_any(pod)))
        })
    }

    /// Waits until every Service the `admission` objects call has a ready endpoint and
    /// every Deployment of `applied` behind it is Available, reporting what it waits for.
    pub(super) async fn wait_for_backends(
        &self,
        admission: &[&Resolved],
        applied: &[&Resolved],
    ) -> Result<(), ApplyError> {
        let services = backend_services(admission.iter().map(|r| &r.object));
        if services.is_empty() {
            return Ok(());
        }
        let deployments: Vec<&Resolved> = applied
            .iter()
            .copied()
            .filter(|r| r.key.group == "apps" && r.key.kind == "Deployment")
            .collect();
        self.report(ApplyStep::WaitingForBackends {
            services: services.len(),
        });
        let deadline = tokio::time::Instant::now() + self.backend_timeout;
        loop {
            // Only the last pass says why pods are not ready: that takes a list of pods
            // per Deployment, which a pass every 500 ms should not cost.
            let last_pass = tokio::time::Instant::now() > deadline;
            let mut waiting = Vec::new();
            for (namespace, name) in &services {
                let slices: Api<DynamicObject> = Api::namespaced_with(
                    self.observer.clone(),
                    namespace,
                    &ApiResource::from_gvk_with_plural(
                        &GroupVersionKind::gvk("discovery.k8s.io", "v1", "EndpointSlice"),
                        "endpointslices",
                    ),
                );
                let listed = slices
                    .list(
                        &ListParams::default()
                            .labels(&format!("kubernetes.io/service-name={name}")),
                    )
                    .await
                    .map_err(|source| ApplyError::Read {
                        object: ObjectKey {
                            group: "discovery.k8s.io".to_owned(),
                            version: "v1".to_owned(),
                            kind: "EndpointSlice".to_owned(),
                            namespace: Some(namespace.clone()),
                            name: name.clone(),
                        },
                        source,
                    })?;
                if !has_ready_endpoint(listed.items.iter().map(|s| &s.data))
                    && !self.serves_on_loopback(namespace, name).await?
                {
                    waiting.push(format!("Service {namespace}/{name} has no ready endpoint"));
                }
            }
            for deployment in &deployments {
                let api = Api::<DynamicObject>::namespaced_with(
                    self.observer.clone(),
                    deployment.key.namespace.as_deref().unwrap_or_default(),
                    &deployment.resource,
                );
                let live =
                    api.get_opt(&deployment.key.name)
                        .await
                        .map_err(|source| ApplyError::Read {
                            object: deployment.key.clone(),
                            source,
                        })?;
                if !live
                    .as_ref()
                    .is_some_and(|d| has_true_condition(&d.data, "Available"))
                {
                    let why = match &live {
                        Some(live) if last_pass => {
                            self.why_pods_are_not_ready(deployment, live).await
                        }
                        _ => None,
                    };
                    waiting.push(match why {
                        Some(why) => format!("{} is not Available ({why})", deployment.key),
                        None => format!("{} is not Available", deployment.key),
                    });
                }
            }
            if waiting.is_empty() {
                return Ok(());
            }
            if last_pass {
                return Err(ApplyError::BackendsNotReady {
                    waiting,
                    timeout: self.backend_timeout,
                });
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    pub(super) async fn wait_established(&self, name: &str) -> Result<(), ApplyError> {
        let crds: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        let deadline = tokio::time::Instant::now() + CRD_ESTABLISH_TIMEOUT;
        loop {
            let crd = crds
                .get_opt(name)
                .await
                .map_err(|source| ApplyError::Read {
                    object: crd_key(name),
                    source,
                })?;
            let established = crd
                .and_then(|c| c.status)
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True");
            if established {
                return Ok(());
            }
            if tokio::time::Instant::now() > deadline {
                return Err(ApplyError::CrdNotEstablished {
                    name: name.to_owned(),
                    timeout: CRD_ESTABLISH_TIMEOUT,
                });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// The Services (namespace, name) that webhook configurations and APIServices call. Pure.
pub(super) fn backend_services<'a>(
    objects: impl Iterator<Item = &'a DynamicObject>,
) -> Vec<(String, String)> {
    let mut services = Vec::new();
    for object in objects {
        let references: Vec<&serde_json::Value> = match object.data.get("webhooks") {
            Some(serde_json::Value::Array(webhooks)) => webhooks
                .iter()
                .filter_map(|w| w.pointer("/clientConfig/service"))
                .collect(),
            _ => object.data.pointer("/spec/service").into_iter().collect(),
        };
        for reference in references {
            let field = |key: &str| reference.get(key).and_then(serde_json::Value::as_str);
            if let (Some(namespace), Some(name)) = (field("namespace"), field("name")) {
                let service = (namespace.to_owned(), name.to_owned());
                if !services.contains(&service) {
                    services.push(service);
                }
            }
        }
    }
    services
}

/// Whether any endpoint of these EndpointSlices is ready (a missing `ready` counts as
/// ready, as the API documents). Pure.
pub(super) fn has_ready_endpoint<'a>(slices: impl Iterator<Item = &'a serde_json::Value>) -> bool {
    slices
        .filter_map(|slice| slice.get("endpoints").and_then(serde_json::Value::as_array))
        .flatten()
        .any(|endpoint| endpoint.pointer("/conditions/ready") != Some(&json!(false)))
}

/// Why one pod is not Ready, when its status says more than "starting": a container
/// waiting for a reason other than `ContainerCreating`, a container that last ended with an
/// error, or the scheduler's reason it has no node. Pure.
pub(super) fn describe_unready_pod(pod: &serde_json::Value) -> Option<String> {
    if has_true_condition(pod, "Ready") {
        return None;
    }
    let text = |value: &serde_json::Value, key: &str| {
        value
            .get(key)
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let statuses = ["/status/initContainerStatuses", "/status/containerStatuses"]
        .iter()
        .filter_map(|path| pod.pointer(path).and_then(serde_json::Value::as_array))
        .flatten();
    for container in statuses {
        let name = text(container, "name");
        let exit = container
            .pointer("/lastState/terminated")
            .and_then(|ended| Some((ended.get("exitCode")?.as_i64()?, text(ended, "reason"))))
            .filter(|(code, _)| *code != 0);
        if let Some(waiting) = container.pointer("/state/waiting") {
            let reason = text(waiting, "reason");
            // The back-off message counts up ("back-off 40s ..."): leave it out, so a pod that
            // keeps crashing the same way does not rewrite the status each time.
            if reason == "CrashLoopBackOff" {
                return Some(match exit {
                    Some((code, why)) => {
                        format!(
                            "container {name} is in CrashLoopBackOff, last exit code {code} ({why})"
                        )
                    }
                    None => format!("container {name} is in CrashLoopBackOff"),
                });
            }
            // The kubelet alternates these two while it backs off: one sentence for both.
            if reason == "ErrImagePull" || reason == "ImagePullBackOff" {
                return Some(format!(
                    "container {name} cannot pull its image {} (the pod's events give the registry's answer)",
                    text(container, "image")
                ));
            }
            if !reason.is_empty() && reason != "ContainerCreating" && reason != "PodInitializing" {
                let message = text(waiting, "message");
                return Some(if message.is_empty() {
                    format!("container {name} is waiting: {reason}")
                } else {
                    format!("container {name} is waiting: {reason}: {message}")
                });
            }
        }
        if let Some((code, why)) = exit {
            return Some(format!("container {name} exited with code {code} ({why})"));
        }
    }
    pod.pointer("/status/conditions")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .find(|c| {
            c.get("type") == Some(&json!("PodScheduled"))
                && c.get("status") == Some(&json!("False"))
        })
        .map(|c| format!("not scheduled: {}", text(c, "message")))
}

/// Whether any of `pods` is Ready with a loopback address (see `serves_on_loopback`). Pure.
pub(super) fn has_ready_loopback_pod<'a>(
    pods: impl Iterator<Item = &'a serde_json::Value>,
) -> bool {
    pods.filter(|pod| pod.pointer("/metadata/deletionTimestamp").is_none())
        .filter(|pod| has_true_condition(pod, "Ready"))
        .filter_map(|pod| {
            pod.pointer("/status/podIP")
                .and_then(serde_json::Value::as_str)
        })
        .filter_map(|ip| ip.parse::<std::net::IpAddr>().ok())
        .any(|ip| ip.is_loopback())
}

/// Whether a Deployment reports `Available=True`. Pure.
/// Whether an object (as JSON) has the condition `type`=True: a CRD Established, a
/// Deployment Available. Pure.
pub(super) fn has_true_condition(object: &serde_json::Value, type_: &str) -> bool {
    object
        .pointer("/status/conditions")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c.get("type") == Some(&json!(type_)) && c.get("status") == Some(&json!("True")))
}

/// Whether objects of this kind roll out pods, and so gate the phases after them.
pub(super) fn rolls_out(key: &ObjectKey) -> bool {
    matches!(
        (key.group.as_str(), key.kind.as_str()),
        ("apps", "Deployment" | "StatefulSet" | "DaemonSet") | ("batch", "Job")
    )
}

/// The inventory of an apply that stopped before a phase: what it wrote, and everything the
/// previous revision had (not pruned yet), in apply order.
pub(super) fn inventory_while_waiting(
    written: &[&Resolved],
    previous: &[InventoryEntry],
) -> Vec<InventoryEntry> {
    let mut keys: Vec<ObjectKey> = written.iter().map(|r| r.key.clone()).collect();
    for entry in previous {
        let key = ObjectKey::from(entry);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    sort_for_apply(&mut keys, |k| k);
    keys.iter().map(InventoryEntry::from).collect()
}
