//! The validating webhook: a `Memcached` may ask for 0 to 10 instances.

use axum::http::StatusCode;
use serde_json::{Value, json};

/// The path the bundle's webhook definition names.
pub const PATH: &str = "/validate-cache-example-com-v1alpha1-memcached";

/// The sizes a `Memcached` may ask for.
const SIZES: std::ops::RangeInclusive<i64> = 0..=10;

/// Answers one `AdmissionReview` (admission.k8s.io/v1): the HTTP status and the body.
pub fn answer(body: &[u8]) -> (StatusCode, String) {
    let Ok(review) = serde_json::from_slice::<Value>(body) else {
        return (
            StatusCode::BAD_REQUEST,
            "the body is not an AdmissionReview".into(),
        );
    };
    let Some(uid) = review["request"]["uid"].as_str() else {
        return (
            StatusCode::BAD_REQUEST,
            "the AdmissionReview has no request.uid".into(),
        );
    };
    let refusal = refusal(&review["request"]["object"]);
    let mut response = json!({ "uid": uid, "allowed": refusal.is_none() });
    if let Some(message) = refusal {
        response["status"] = json!({ "code": 422, "reason": "Invalid", "message": message });
    }
    let reply = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": response,
    });
    (StatusCode::OK, reply.to_string())
}

/// Why `object` may not be stored, or `None` when it may.
fn refusal(object: &Value) -> Option<String> {
    match &object["spec"]["size"] {
        Value::Null => None,
        size => match size.as_i64() {
            Some(n) if SIZES.contains(&n) => None,
            _ => Some(format!(
                "spec.size must be between {} and {}, not {size}",
                SIZES.start(),
                SIZES.end()
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn review(size: Value) -> Vec<u8> {
        json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": { "uid": "u-1", "object": { "spec": { "size": size } } }
        })
        .to_string()
        .into_bytes()
    }

    fn response(body: &str) -> Value {
        serde_json::from_str::<Value>(body).unwrap()["response"].clone()
    }

    #[test]
    fn sizes_in_range_are_allowed_and_echo_the_uid() {
        for size in [0, 3, 10] {
            let (status, body) = answer(&review(json!(size)));
            assert_eq!(status, StatusCode::OK);
            let response = response(&body);
            assert_eq!(response["allowed"], true, "{size}");
            assert_eq!(response["uid"], "u-1");
        }
    }

    #[test]
    fn sizes_out_of_range_or_not_integers_are_refused_with_the_rule() {
        for size in [json!(-1), json!(11), json!(2.5), json!("3")] {
            let (_, body) = answer(&review(size.clone()));
            let response = response(&body);
            assert_eq!(response["allowed"], false, "{size}");
            let message = response["status"]["message"].as_str().unwrap();
            assert!(
                message.contains("size must be between 0 and 10"),
                "{message}"
            );
        }
    }

    #[test]
    fn an_object_without_a_size_is_allowed() {
        let (_, body) = answer(&review(Value::Null));
        assert_eq!(response(&body)["allowed"], true);
    }

    #[test]
    fn garbage_is_a_bad_request() {
        assert_eq!(answer(b"not json").0, StatusCode::BAD_REQUEST);
        assert_eq!(answer(b"{}").0, StatusCode::BAD_REQUEST);
    }
}
