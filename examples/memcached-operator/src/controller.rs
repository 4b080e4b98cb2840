//! The reconciler: every `Memcached` gets `Available=True` for the generation it was seen at.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

/// The field manager of the status this operator writes.
const MANAGER: &str = "memcached-operator";

fn resource() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(
        "cache.example.com",
        "v1alpha1",
        "Memcached",
    ))
}

/// Runs the controller until its watch ends (it retries on its own until then).
pub async fn run(client: Client) {
    let resource = resource();
    let memcacheds = Api::<DynamicObject>::all_with(client.clone(), &resource);
    Controller::new_with(memcacheds, watcher::Config::default(), resource.clone())
        .run(
            reconcile,
            |_, err, _| {
                tracing::warn!("{err}");
                Action::requeue(Duration::from_secs(5))
            },
            Arc::new((client, resource)),
        )
        .for_each(|result| async move {
            if let Err(err) = result {
                tracing::debug!("{err}");
            }
        })
        .await;
}

async fn reconcile(
    memcached: Arc<DynamicObject>,
    context: Arc<(Client, ApiResource)>,
) -> Result<Action, kube::Error> {
    let (client, resource) = &*context;
    let Some(namespace) = memcached.namespace() else {
        return Ok(Action::await_change());
    };
    let generation = memcached.metadata.generation.unwrap_or_default();
    let Some(status) = next_status(&memcached.data, generation, Timestamp::now()) else {
        return Ok(Action::await_change());
    };
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &namespace, resource);
    let patch = json!({
        "apiVersion": resource.api_version, "kind": resource.kind, "status": status,
    });
    api.patch_status(
        &memcached.name_any(),
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(&patch),
    )
    .await?;
    tracing::info!(
        namespace,
        name = memcached.name_any(),
        generation,
        "available"
    );
    Ok(Action::await_change())
}

/// The status to write, or `None` when the object already says what it would.
fn next_status(data: &Value, generation: i64, now: Timestamp) -> Option<Value> {
    let status = &data["status"];
    let available = status["conditions"]
        .as_array()
        .and_then(|conditions| conditions.iter().find(|c| c["type"] == "Available"));
    if status["observedGeneration"] == generation
        && available.is_some_and(|c| c["status"] == "True")
    {
        return None;
    }
    // The transition time moves only when the condition's status changes.
    let since = available
        .filter(|c| c["status"] == "True")
        .and_then(|c| c["lastTransitionTime"].as_str().map(str::to_owned))
        .unwrap_or_else(|| now.to_string());
    let size = data["spec"]["size"].as_i64().unwrap_or(0);
    Some(json!({
        "observedGeneration": generation,
        "conditions": [{
            "type": "Available",
            "status": "True",
            "reason": "Reconciled",
            "message": format!("Generation {generation} is reconciled: {size} instances requested."),
            "observedGeneration": generation,
            "lastTransitionTime": since,
        }],
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_object_becomes_available_at_its_generation() {
        let now = Timestamp::from_second(1_000_000).unwrap();
        let status = next_status(&json!({"spec": {"size": 3}}), 1, now).unwrap();
        assert_eq!(status["observedGeneration"], 1);
        assert_eq!(status["conditions"][0]["status"], "True");
        assert_eq!(
            status["conditions"][0]["lastTransitionTime"],
            now.to_string()
        );
        assert!(
            status["conditions"][0]["message"]
                .as_str()
                .unwrap()
                .contains("3 instances")
        );
    }

    #[test]
    fn an_object_already_reconciled_is_left_alone_and_a_new_generation_keeps_the_time() {
        let now = Timestamp::from_second(2_000_000).unwrap();
        let seen = json!({"spec": {"size": 3}, "status": {"observedGeneration": 1, "conditions": [
            {"type": "Available", "status": "True", "lastTransitionTime": "1970-01-12T13:46:40Z"}]}});
        assert_eq!(next_status(&seen, 1, now), None);
        let status = next_status(&seen, 2, now).unwrap();
        assert_eq!(status["observedGeneration"], 2);
        assert_eq!(
            status["conditions"][0]["lastTransitionTime"],
            "1970-01-12T13:46:40Z"
        );
    }
}
