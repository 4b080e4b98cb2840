//! Publishing Kubernetes Events about an object.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder};

/// Publishes an Event; a failure is logged, never returned: an Event is a courtesy to a
/// person, and must not fail the reconcile that reports it.
pub async fn publish(
    recorder: &Recorder,
    regarding: &ObjectReference,
    warning: bool,
    reason: &str,
    action: &str,
    note: String,
) {
    let event = Event {
        type_: if warning {
            EventType::Warning
        } else {
            EventType::Normal
        },
        reason: reason.to_owned(),
        note: Some(note),
        action: action.to_owned(),
        secondary: None,
    };
    if let Err(err) = recorder.publish(&event, regarding).await {
        tracing::warn!(
            kind = regarding.kind.as_deref().unwrap_or_default(),
            name = regarding.name.as_deref().unwrap_or_default(),
            error = %err,
            "failed to publish event"
        );
    }
}
