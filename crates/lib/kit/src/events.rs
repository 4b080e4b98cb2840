//! Publishing Kubernetes Events about an object.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder};

/// The longest note the API server accepts, in bytes: a longer one fails the whole Event.
pub const NOTE_LIMIT: usize = 1024;

/// `note` cut to [`NOTE_LIMIT`] bytes at a character boundary, ending in "…" when cut: a
/// long failure (a list of conflicting objects, an error chain) still reaches a person,
/// and the full text stays in the object's status.
pub fn fit_note(mut note: String) -> String {
    if note.len() <= NOTE_LIMIT {
        return note;
    }
    const ELLIPSIS: &str = "…";
    let mut end = NOTE_LIMIT - ELLIPSIS.len();
    while !note.is_char_boundary(end) {
        end -= 1;
    }
    note.truncate(end);
    note.push_str(ELLIPSIS);
    note
}

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
        note: Some(fit_note(note)),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_note_is_kept_whole() {
        let note = "x".repeat(NOTE_LIMIT);
        assert_eq!(fit_note(note.clone()), note);
    }

    #[test]
    fn a_long_note_is_cut_to_the_limit_at_a_character_boundary() {
        // Two-byte characters, so a cut at the byte limit would split one.
        let note = format!("a{}", "é".repeat(NOTE_LIMIT));
        let fitted = fit_note(note.clone());
        assert!(fitted.len() <= NOTE_LIMIT, "{}", fitted.len());
        assert!(fitted.ends_with('…'));
        let kept = fitted.trim_end_matches('…');
        assert!(note.starts_with(kept));
        assert!(
            kept.len() > NOTE_LIMIT - 8,
            "cut {} bytes",
            note.len() - kept.len()
        );
    }
}
