//! Writing a status: the one way every controller does it.
//!
//! Server-side apply of the `status` subresource, as the controller's field manager, with
//! only the fields that controller owns. Why this and not a merge patch:
//! - a field the controller stops sending is removed (a merge patch of a serialised struct
//!   silently keeps a field that became `None`, so every writer spelled out nulls);
//! - two controllers sharing a status (deppy-resolver and the activator on an
//!   ActiveResolution) each own their fields and their own entries of `conditions` (a list
//!   map keyed by `type`, see `api_common::conditions_schema`), so neither overwrites the
//!   other's condition and no resourceVersion guard (and no 409 retry) is needed;
//! - `force`: this controller is the authority on the fields it sends.
//!
//! Callers decide whether anything changed (pure, with their status functions) and call
//! [`apply`] only then, so an unchanged object gets no write.

use kube::api::{Patch, PatchParams};
use kube::{Api, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Applies `status` (the fields this controller owns) to the status of `name`, as
/// `manager`. `null` members are dropped first: an absent field is how server-side apply
/// is told to remove one this manager set before.
pub async fn apply<K>(
    api: &Api<K>,
    name: &str,
    manager: &str,
    status: &impl Serialize,
) -> Result<(), kube::Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    let body = apply_body::<K>(status).map_err(kube::Error::SerdeError)?;
    api.patch_status(
        name,
        &PatchParams::apply(manager).force(),
        &Patch::Apply(&body),
    )
    .await
    .map(|_| ())
}

/// The apply configuration of a status: the object's type and `status` without nulls. Pure.
pub fn apply_body<K>(status: &impl Serialize) -> Result<Value, serde_json::Error>
where
    K: Resource<DynamicType = ()>,
{
    let mut status = serde_json::to_value(status)?;
    drop_nulls(&mut status);
    Ok(serde_json::json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "status": status,
    }))
}

/// Removes every `null` member of every object in `value`.
fn drop_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, member| !member.is_null());
            map.values_mut().for_each(drop_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::client::Body;
    use serde_json::json;

    /// What the API server receives, seen through a mocked API service (no cluster): one
    /// server-side apply of the status subresource, forced, as the field manager.
    #[tokio::test]
    async fn a_status_is_one_forced_apply_of_the_status_subresource() {
        let (service, mut handle) =
            tower_test::mock::pair::<http::Request<Body>, http::Response<Body>>();
        let server = tokio::spawn(async move {
            let (request, respond) = handle.next_request().await.expect("one request");
            let method = request.method().clone();
            let uri = request.uri().to_string();
            let content_type = request.headers()["content-type"]
                .to_str()
                .unwrap()
                .to_owned();
            let body = request.into_body().collect_bytes().await.unwrap();
            let echo = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}});
            respond.send_response(
                http::Response::builder()
                    .body(Body::from(serde_json::to_vec(&echo).unwrap()))
                    .unwrap(),
            );
            (
                method,
                uri,
                content_type,
                serde_json::from_slice::<Value>(&body).unwrap(),
            )
        });
        let client = kube::Client::new(service, "ns");
        let api: Api<ConfigMap> = Api::namespaced(client, "ns");
        apply(
            &api,
            "c",
            "my-controller",
            &json!({"phase": "Ready", "gone": null}),
        )
        .await
        .unwrap();
        let (method, uri, content_type, body) = server.await.unwrap();
        assert_eq!(method, http::Method::PATCH);
        assert_eq!(
            uri,
            "/api/v1/namespaces/ns/configmaps/c/status?&force=true&fieldManager=my-controller"
        );
        assert_eq!(content_type, "application/apply-patch+yaml");
        assert_eq!(
            body,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "status": {"phase": "Ready"}})
        );
    }

    #[test]
    fn the_body_names_the_type_and_leaves_out_nulls_at_every_depth() {
        let status = json!({
            "phase": "Unpacked",
            "content": null,
            "conditions": [{"type": "Ready", "observedGeneration": null, "status": "True"}],
        });
        assert_eq!(
            apply_body::<ConfigMap>(&status).unwrap(),
            json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "status": {
                    "phase": "Unpacked",
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            })
        );
    }
}
