//! "Is everything we set still set?": the drift test that lets a resync of an unchanged
//! BundleDeployment send no writes at all.
//!
//! A server-side apply patch is a write request even when it changes nothing, so the
//! engine compares first: the desired object must be a subset of the live one (the API
//! server adds defaults and status; those are not drift). Values the server normalises
//! (e.g. `cpu: 1000m` stored as `1`) read as drift and cost one idempotent patch; that is
//! the safe direction to err in.

use base64::Engine;
use serde_json::Value;

/// The form of `desired` the API server stores, for comparison: a Secret's write-only
/// `stringData` is stored base64-encoded under `data` (and never read back), so comparing
/// it as written would report drift on every resync.
pub fn as_stored(desired: &Value) -> Value {
    let is_secret = desired.get("kind").and_then(Value::as_str) == Some("Secret")
        && desired.get("apiVersion").and_then(Value::as_str) == Some("v1");
    let Some(string_data) = desired
        .get("stringData")
        .and_then(Value::as_object)
        .filter(|_| is_secret)
    else {
        return desired.clone();
    };
    let mut stored = desired.clone();
    if let Some(object) = stored.as_object_mut() {
        object.remove("stringData");
        let data = object
            .entry("data")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if let Some(data) = data.as_object_mut() {
            for (key, value) in string_data {
                let text = value.as_str().unwrap_or_default();
                // stringData wins over data for the same key, as on the server.
                data.insert(
                    key.clone(),
                    Value::String(base64::engine::general_purpose::STANDARD.encode(text)),
                );
            }
        }
    }
    stored
}

/// Whether every field of `desired` is present in `live` with the same value; arrays must
/// have the same length, with each desired item a subset of the live item at its index.
pub fn is_subset(desired: &Value, live: &Value) -> bool {
    match (desired, live) {
        (Value::Object(want), Value::Object(have)) => want.iter().all(|(key, value)| {
            have.get(key)
                .is_some_and(|live_value| is_subset(value, live_value))
                || value.is_null()
        }),
        (Value::Array(want), Value::Array(have)) => {
            want.len() == have.len() && want.iter().zip(have).all(|(w, h)| is_subset(w, h))
        }
        (Value::Number(want), Value::Number(have)) => want.as_f64() == have.as_f64(),
        _ => desired == live,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn server_defaults_and_status_are_not_drift() {
        let desired = json!({"spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        let live = json!({
            "spec": {"replicas": 1, "revisionHistoryLimit": 10,
                     "template": {"spec": {"containers": [{"name": "c", "image": "i", "imagePullPolicy": "IfNotPresent"}]}}},
            "status": {"replicas": 1}
        });
        assert!(is_subset(&desired, &live));
    }

    #[test]
    fn a_changed_or_missing_field_is_drift() {
        let desired = json!({"data": {"a": "1", "b": "2"}});
        assert!(!is_subset(
            &desired,
            &json!({"data": {"a": "1", "b": "changed"}})
        ));
        assert!(!is_subset(&desired, &json!({"data": {"a": "1"}})));
    }

    #[test]
    fn list_length_changes_are_drift() {
        let desired = json!({"rules": [{"verbs": ["get"]}]});
        assert!(!is_subset(
            &desired,
            &json!({"rules": [{"verbs": ["get"]}, {"verbs": ["list"]}]})
        ));
        assert!(!is_subset(
            &desired,
            &json!({"rules": [{"verbs": ["get", "list"]}]})
        ));
    }

    #[test]
    fn secret_string_data_compares_as_the_stored_base64_data() {
        let desired = json!({"apiVersion": "v1", "kind": "Secret", "stringData": {"token": "abc"}, "data": {"other": "eHl6"}});
        let live = json!({"apiVersion": "v1", "kind": "Secret", "data": {"token": "YWJj", "other": "eHl6"}, "type": "Opaque"});
        assert!(
            !is_subset(&desired, &live),
            "as written, stringData never matches"
        );
        assert!(is_subset(&as_stored(&desired), &live));
        let changed = json!({"apiVersion": "v1", "kind": "Secret", "data": {"token": "Y2hhbmdlZA==", "other": "eHl6"}});
        assert!(
            !is_subset(&as_stored(&desired), &changed),
            "a changed value is still drift"
        );
        let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap", "stringData": {"a": "b"}});
        assert_eq!(
            as_stored(&config_map),
            config_map,
            "only Secrets are rewritten"
        );
    }

    #[test]
    fn numbers_compare_by_value() {
        assert!(is_subset(&json!({"port": 80}), &json!({"port": 80.0})));
    }
}
