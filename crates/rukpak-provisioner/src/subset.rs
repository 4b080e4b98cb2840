//! "Is everything we set still set?": the drift test that lets a resync of an unchanged
//! BundleDeployment send no writes at all.
//!
//! A server-side apply patch is a write request even when it changes nothing, so the
//! engine compares first: the desired object must be a subset of the live one (the API
//! server adds defaults and status; those are not drift). Values the server normalises
//! (e.g. `cpu: 1000m` stored as `1`) read as drift and cost one idempotent patch; that is
//! the safe direction to err in.

use serde_json::Value;

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
    fn numbers_compare_by_value() {
        assert!(is_subset(&json!({"port": 80}), &json!({"port": 80.0})));
    }
}
