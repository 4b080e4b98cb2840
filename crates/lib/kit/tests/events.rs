//! Events against the real API server: a repeat counts up one Event's series, a different
//! note about the same object is a new Event with that note, and an Event deleted meanwhile
//! is created again.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use k8s_openapi::api::events::v1::Event as K8sEvent;
use kit::events::{Event, NOTE_LIMIT, Recorder};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, Resource, ResourceExt};
use testkit::{TestNamespace, client};

fn failed(note: &str) -> Event {
    Event {
        warning: true,
        reason: "UnpackFailed".to_owned(),
        action: "Unpack".to_owned(),
        note: note.to_owned(),
    }
}

/// The Events about `regarding`, oldest first.
async fn events_about(api: &Api<K8sEvent>, regarding: &ObjectReference) -> Vec<K8sEvent> {
    let mut events: Vec<K8sEvent> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.uid.as_ref()) == regarding.uid.as_ref())
        .collect();
    events.sort_by_key(|e| e.event_time.clone().map(|t| t.0));
    events
}

fn count(event: &K8sEvent) -> i32 {
    event.series.as_ref().map_or(1, |s| s.count)
}

#[tokio::test]
async fn repeats_count_up_and_a_new_note_is_a_new_event() {
    let client = client().await;
    let namespace = TestNamespace::create(&client, "events").await;
    let object = namespace
        .api::<ConfigMap>()
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: kube::api::ObjectMeta {
                    name: Some("subject".to_owned()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let regarding = object.object_ref(&());
    let events: Api<K8sEvent> = namespace.api();
    let recorder = Recorder::new(client.clone(), "events-test");

    for _ in 0..3 {
        recorder
            .publish(&failed("connection refused"), &regarding)
            .await
            .unwrap();
    }
    let seen = events_about(&events, &regarding).await;
    assert_eq!(seen.len(), 1, "three repeats are one Event: {seen:?}");
    assert_eq!(count(&seen[0]), 3);
    assert_eq!(seen[0].note.as_deref(), Some("connection refused"));
    assert_eq!(seen[0].reporting_controller.as_deref(), Some("events-test"));

    // Same reason, new message: the person must see the new message.
    recorder
        .publish(&failed("manifest unknown"), &regarding)
        .await
        .unwrap();
    let seen = events_about(&events, &regarding).await;
    let notes: Vec<(Option<&str>, i32)> =
        seen.iter().map(|e| (e.note.as_deref(), count(e))).collect();
    assert_eq!(
        notes,
        [
            (Some("connection refused"), 3),
            (Some("manifest unknown"), 1)
        ]
    );

    // A clone shares what was sent; an Event deleted meanwhile is created again.
    let first = seen[0].name_any();
    events
        .delete(&first, &DeleteParams::default())
        .await
        .unwrap();
    recorder
        .clone()
        .publish(&failed("connection refused"), &regarding)
        .await
        .unwrap();
    let seen = events_about(&events, &regarding).await;
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen.iter().all(|e| e.name_any() != first));
    assert!(
        seen.iter()
            .any(|e| e.note.as_deref() == Some("connection refused") && count(e) == 1)
    );

    // A note longer than the API server takes is cut, not refused.
    recorder
        .publish(&failed(&"x".repeat(3 * NOTE_LIMIT)), &regarding)
        .await
        .unwrap();
    let seen = events_about(&events, &regarding).await;
    assert_eq!(seen.len(), 3);
    assert!(seen.iter().any(|e| {
        e.note
            .as_ref()
            .is_some_and(|n| n.len() <= NOTE_LIMIT && n.ends_with('…'))
    }));

    namespace.delete().await;
}
