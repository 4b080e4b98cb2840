//! The conversion webhook (bundle 0.2.0): `cache.example.com/v1beta1` renamed `spec.size` to
//! `spec.replicas`; everything else is the same in both versions.

use axum::http::StatusCode;
use serde_json::{Value, json};

/// The path the bundle's conversion webhook definition names.
pub const PATH: &str = "/convert";

const GROUP: &str = "cache.example.com";
/// Each served version and the name it gives the instance count.
const SIZE_FIELDS: [(&str, &str); 2] = [("v1alpha1", "size"), ("v1beta1", "replicas")];

/// Answers one `ConversionReview` (apiextensions.k8s.io/v1): the HTTP status and the body.
/// A review whose objects cannot all be converted fails as a whole, as the API server
/// requires, with the reason in `result.message`.
pub fn answer(body: &[u8]) -> (StatusCode, String) {
    let Ok(review) = serde_json::from_slice::<Value>(body) else {
        return (
            StatusCode::BAD_REQUEST,
            "the body is not a ConversionReview".into(),
        );
    };
    let request = &review["request"];
    let (Some(uid), Some(desired)) = (
        request["uid"].as_str(),
        request["desiredAPIVersion"].as_str(),
    ) else {
        return (
            StatusCode::BAD_REQUEST,
            "the ConversionReview has no request.uid or request.desiredAPIVersion".into(),
        );
    };
    let objects = request["objects"].as_array().cloned().unwrap_or_default();
    let converted: Result<Vec<Value>, String> =
        objects.into_iter().map(|o| convert(o, desired)).collect();
    let response = match converted {
        Ok(objects) => json!({
            "uid": uid, "convertedObjects": objects, "result": { "status": "Success" }
        }),
        Err(message) => json!({
            "uid": uid, "convertedObjects": [],
            "result": { "status": "Failure", "message": message }
        }),
    };
    let reply = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "response": response,
    });
    (StatusCode::OK, reply.to_string())
}

/// The name `apiVersion` gives the instance count, for a version of this group.
fn size_field(api_version: &str) -> Option<&'static str> {
    let version = api_version.strip_prefix(GROUP)?.strip_prefix('/')?;
    SIZE_FIELDS
        .iter()
        .find(|(v, _)| *v == version)
        .map(|(_, field)| *field)
}

/// `object` at `desired`: the instance count moved to the field that version names.
fn convert(mut object: Value, desired: &str) -> Result<Value, String> {
    let from = object["apiVersion"].as_str().unwrap_or_default().to_owned();
    let (Some(from_field), Some(to_field)) = (size_field(&from), size_field(desired)) else {
        return Err(format!(
            "cannot convert {from:?} to {desired:?}: the versions are {}",
            SIZE_FIELDS
                .iter()
                .map(|(v, _)| format!("{GROUP}/{v}"))
                .collect::<Vec<_>>()
                .join(" and ")
        ));
    };
    if let Some(spec) = object["spec"].as_object_mut()
        && from_field != to_field
        && let Some(count) = spec.remove(from_field)
    {
        spec.insert(to_field.to_owned(), count);
    }
    object["apiVersion"] = json!(desired);
    Ok(object)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn review(desired: &str, objects: Value) -> Vec<u8> {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": { "uid": "u-1", "desiredAPIVersion": desired, "objects": objects }
        })
        .to_string()
        .into_bytes()
    }

    fn response(body: &str) -> Value {
        serde_json::from_str::<Value>(body).unwrap()["response"].clone()
    }

    fn memcached(version: &str, field: &str, count: i64) -> Value {
        json!({
            "apiVersion": format!("cache.example.com/{version}"), "kind": "Memcached",
            "metadata": { "name": "m", "uid": "x" },
            "spec": { field: count }, "status": { "conditions": [] }
        })
    }

    #[test]
    fn size_and_replicas_convert_both_ways_keeping_everything_else() {
        let (status, body) = answer(&review(
            "cache.example.com/v1beta1",
            json!([memcached("v1alpha1", "size", 4)]),
        ));
        assert_eq!(status, StatusCode::OK);
        let first = response(&body);
        assert_eq!(first["uid"], "u-1");
        assert_eq!(first["result"]["status"], "Success");
        assert_eq!(
            first["convertedObjects"][0],
            memcached("v1beta1", "replicas", 4)
        );

        let (_, body) = answer(&review(
            "cache.example.com/v1alpha1",
            json!([memcached("v1beta1", "replicas", 2)]),
        ));
        assert_eq!(
            response(&body)["convertedObjects"][0],
            memcached("v1alpha1", "size", 2)
        );
    }

    #[test]
    fn an_object_already_at_the_desired_version_is_unchanged() {
        let object = memcached("v1beta1", "replicas", 7);
        let (_, body) = answer(&review(
            "cache.example.com/v1beta1",
            json!([object.clone()]),
        ));
        assert_eq!(response(&body)["convertedObjects"][0], object);
    }

    #[test]
    fn an_unknown_version_fails_the_whole_review_with_a_reason() {
        let (status, body) = answer(&review(
            "cache.example.com/v2",
            json!([memcached("v1alpha1", "size", 1)]),
        ));
        assert_eq!(status, StatusCode::OK);
        let failed = response(&body);
        assert_eq!(failed["result"]["status"], "Failure");
        assert_eq!(failed["convertedObjects"], json!([]));
        let message = failed["result"]["message"].as_str().unwrap();
        assert!(message.contains("cache.example.com/v2"), "{message}");
    }

    #[test]
    fn garbage_is_a_bad_request() {
        assert_eq!(answer(b"not json").0, StatusCode::BAD_REQUEST);
        assert_eq!(answer(b"{}").0, StatusCode::BAD_REQUEST);
    }
}
