//! Publishing Kubernetes Events about an object.
//!
//! [`Recorder`] replaces kube-runtime's recorder of the same name, which had two problems on
//! a busy cluster: it folded an Event into the previous one with the same reason even when
//! the note differed (the new message never reached anyone: the series count went up on
//! the old text), and it kept every Event it sent, whole, for six minutes in a table that
//! never shrank (8.9 MB in a plain-provisioner that had just installed 1,000
//! BundleDeployments). Here a repeat is the same reason, action, type, object *and* note;
//! what is remembered of it is its name and count, and the table is swept and shrunk.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher, RandomState};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as K8sEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};

/// The longest note the API server accepts, in bytes: a longer one fails the whole Event.
pub const NOTE_LIMIT: usize = 1024;

/// How long a published Event is remembered so that a repeat counts up its series instead
/// of creating another Event (as kube-runtime and client-go do).
const REPEAT_WINDOW: Duration = Duration::from_secs(6 * 60);

/// At most this many Events are remembered; past it the oldest is forgotten, so its next
/// repeat creates a new Event instead of counting up (nothing is lost but a fold).
const MAX_REMEMBERED: usize = 4096;

/// Expired entries are swept at most this often (a sweep walks the whole table).
const SWEEP_EVERY: Duration = Duration::from_secs(30);

/// What an Event says about which object; the same fields kube-runtime's `Event` has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// A warning (something a person should look at) or normal.
    pub warning: bool,
    /// Why, in UpperCamelCase (e.g. `InstallFailed`).
    pub reason: String,
    /// What the controller was doing (e.g. `Reconcile`).
    pub action: String,
    /// The sentence a person reads; cut to [`NOTE_LIMIT`] bytes by [`fit_note`].
    pub note: String,
}

/// Publishes Events as one controller; clones share what was sent, so repeats from any
/// clone count up the same series. See the [module documentation](self).
#[derive(Clone)]
pub struct Recorder {
    client: Client,
    controller: String,
    /// Randomly keyed per process, so that nobody who can choose a note's text can craft
    /// two Events with the same key.
    keys: Arc<[RandomState; 2]>,
    recent: Arc<Mutex<Recent>>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("controller", &self.controller)
            .finish_non_exhaustive()
    }
}

impl Recorder {
    /// A recorder whose Events name `controller` as their reporting controller.
    pub fn new(client: Client, controller: &str) -> Self {
        Self {
            client,
            controller: controller.to_owned(),
            keys: Arc::new([RandomState::new(), RandomState::new()]),
            recent: Arc::default(),
        }
    }

    /// Creates the Event, or counts up the series of the same Event sent within the last
    /// six minutes. An Event that disappeared meanwhile (expired or deleted) is created
    /// again.
    pub async fn publish(
        &self,
        event: &Event,
        regarding: &ObjectReference,
    ) -> Result<(), kube::Error> {
        let key = event_key(&self.keys, &self.controller, event, regarding);
        let namespace = regarding.namespace.as_deref().unwrap_or("default");
        let api: Api<K8sEvent> = Api::namespaced(self.client.clone(), namespace);
        let repeat = self.lock().repeat(key, Instant::now());
        if let Some(Repeat { name, count }) = repeat {
            let series = serde_json::json!({
                "series": EventSeries {
                    count,
                    last_observed_time: MicroTime(Timestamp::now()),
                }
            });
            match api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&series))
                .await
            {
                Ok(_) => {
                    self.lock().remember(key, name, count, Instant::now());
                    return Ok(());
                }
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(err) => return Err(err),
            }
        }
        let created = api
            .create(
                &PostParams::default(),
                &self.new_event(event, regarding, namespace),
            )
            .await?;
        self.lock()
            .remember(key, created.name_any(), 1, Instant::now());
        Ok(())
    }

    fn new_event(&self, event: &Event, regarding: &ObjectReference, namespace: &str) -> K8sEvent {
        let now = Timestamp::now();
        K8sEvent {
            metadata: ObjectMeta {
                // The API server's own Events are named this way: the object, then time.
                name: Some(format!(
                    "{}.{:x}",
                    regarding.name.as_deref().unwrap_or(&self.controller),
                    now.as_nanosecond()
                )),
                namespace: Some(namespace.to_owned()),
                ..ObjectMeta::default()
            },
            event_time: Some(MicroTime(now)),
            type_: Some(if event.warning { "Warning" } else { "Normal" }.to_owned()),
            reason: Some(event.reason.clone()),
            action: Some(event.action.clone()),
            note: Some(fit_note(event.note.clone())),
            regarding: Some(regarding.clone()),
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.controller.clone()),
            ..K8sEvent::default()
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Recent> {
        self.recent.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// 128 bits standing for everything that makes two Events the same one: two hashes under
/// independent random keys, so a collision (which would fold two different Events) is out
/// of reach for the few thousand remembered at once, while an entry stays a few dozen bytes.
fn event_key(
    keys: &[RandomState; 2],
    controller: &str,
    event: &Event,
    regarding: &ObjectReference,
) -> u128 {
    let half = |state: &RandomState| {
        let mut hasher = state.build_hasher();
        controller.hash(&mut hasher);
        event.warning.hash(&mut hasher);
        event.reason.hash(&mut hasher);
        event.action.hash(&mut hasher);
        event.note.hash(&mut hasher);
        regarding.api_version.hash(&mut hasher);
        regarding.kind.hash(&mut hasher);
        regarding.namespace.hash(&mut hasher);
        regarding.name.hash(&mut hasher);
        regarding.uid.hash(&mut hasher);
        hasher.finish()
    };
    (u128::from(half(&keys[0])) << 64) | u128::from(half(&keys[1]))
}

/// A remembered Event to count up.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Repeat {
    name: String,
    /// The series count to send: occurrences so far, this one included.
    count: i32,
}

/// The Events sent within the repeat window, by key (pure bookkeeping, no I/O).
#[derive(Debug, Default)]
struct Recent {
    sent: HashMap<u128, Sent>,
    last_sweep: Option<Instant>,
}

#[derive(Debug)]
struct Sent {
    name: String,
    count: i32,
    at: Instant,
}

impl Recent {
    /// The Event to count up if `key` was sent within the window before `now`.
    fn repeat(&mut self, key: u128, now: Instant) -> Option<Repeat> {
        self.sweep(now);
        let sent = self.sent.get(&key)?;
        (now.saturating_duration_since(sent.at) < REPEAT_WINDOW).then(|| Repeat {
            name: sent.name.clone(),
            count: sent.count.saturating_add(1),
        })
    }

    /// Records that `key` was sent as `name`, `count` times so far, at `now`.
    fn remember(&mut self, key: u128, name: String, count: i32, now: Instant) {
        if self.sent.len() >= MAX_REMEMBERED && !self.sent.contains_key(&key) {
            self.sweep_now(now);
            if self.sent.len() >= MAX_REMEMBERED
                && let Some(oldest) = self
                    .sent
                    .iter()
                    .min_by_key(|(_, sent)| sent.at)
                    .map(|(key, _)| *key)
            {
                self.sent.remove(&oldest);
            }
        }
        self.sent.insert(
            key,
            Sent {
                name,
                count,
                at: now,
            },
        );
    }

    fn sweep(&mut self, now: Instant) {
        if self
            .last_sweep
            .is_none_or(|last| now.saturating_duration_since(last) >= SWEEP_EVERY)
        {
            self.sweep_now(now);
        }
    }

    /// Forgets expired Events and gives back the table's room when most of it is empty: a
    /// burst of thousands of Events must not stay allocated for the life of the process.
    fn sweep_now(&mut self, now: Instant) {
        self.last_sweep = Some(now);
        self.sent
            .retain(|_, sent| now.saturating_duration_since(sent.at) < REPEAT_WINDOW);
        if self.sent.capacity() > 4 * self.sent.len().max(16) {
            self.sent.shrink_to_fit();
        }
    }
}

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
        warning,
        reason: reason.to_owned(),
        action: action.to_owned(),
        note,
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

    fn event(note: &str) -> Event {
        Event {
            warning: true,
            reason: "InstallFailed".to_owned(),
            action: "Reconcile".to_owned(),
            note: note.to_owned(),
        }
    }

    fn regarding(name: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("core.rukpak.io/v1alpha1".to_owned()),
            kind: Some("BundleDeployment".to_owned()),
            name: Some(name.to_owned()),
            uid: Some(format!("uid-{name}")),
            ..ObjectReference::default()
        }
    }

    #[test]
    fn only_the_same_note_about_the_same_object_is_a_repeat() {
        let keys = [RandomState::new(), RandomState::new()];
        let key = |note: &str, name: &str| event_key(&keys, "c", &event(note), &regarding(name));
        assert_eq!(key("refused", "a"), key("refused", "a"));
        // kube-runtime's recorder took these for repeats and kept the first note.
        assert_ne!(key("refused", "a"), key("not found", "a"));
        assert_ne!(key("refused", "a"), key("refused", "b"));
        let mut normal = event("refused");
        normal.warning = false;
        assert_ne!(
            event_key(&keys, "c", &normal, &regarding("a")),
            key("refused", "a")
        );
        assert_ne!(
            event_key(&keys, "d", &event("refused"), &regarding("a")),
            key("refused", "a")
        );
    }

    #[test]
    fn a_repeat_within_the_window_counts_up_and_one_after_it_starts_over() {
        let start = Instant::now();
        let mut recent = Recent::default();
        assert_eq!(recent.repeat(7, start), None);
        recent.remember(7, "bd.1".to_owned(), 1, start);
        let second = start + Duration::from_secs(10);
        assert_eq!(
            recent.repeat(7, second),
            Some(Repeat {
                name: "bd.1".to_owned(),
                count: 2
            })
        );
        recent.remember(7, "bd.1".to_owned(), 2, second);
        // The window runs from the latest occurrence.
        let third = second + REPEAT_WINDOW - Duration::from_secs(1);
        assert_eq!(recent.repeat(7, third).map(|r| r.count), Some(3));
        assert_eq!(recent.repeat(7, third + REPEAT_WINDOW), None);
        assert!(recent.sent.is_empty(), "the expired entry was swept");
    }

    #[test]
    fn at_most_the_limit_is_remembered_and_the_oldest_goes_first() {
        let start = Instant::now();
        let mut recent = Recent::default();
        for key in 0..MAX_REMEMBERED as u128 {
            recent.remember(
                key,
                format!("e{key}"),
                1,
                start + Duration::from_millis(key as u64),
            );
        }
        let later = start + Duration::from_secs(60);
        recent.remember(u128::MAX, "new".to_owned(), 1, later);
        assert_eq!(recent.sent.len(), MAX_REMEMBERED);
        assert!(!recent.sent.contains_key(&0), "the oldest was forgotten");
        assert!(recent.sent.contains_key(&1));
        assert!(recent.sent.contains_key(&u128::MAX));
    }

    #[test]
    fn a_swept_burst_gives_its_room_back() {
        let start = Instant::now();
        let mut recent = Recent::default();
        for key in 0..3000 {
            recent.remember(key, format!("e{key}"), 1, start);
        }
        let grown = recent.sent.capacity();
        assert!(grown >= 3000);
        recent.remember(99_999, "late".to_owned(), 1, start + REPEAT_WINDOW);
        assert_eq!(
            recent
                .repeat(99_999, start + REPEAT_WINDOW + SWEEP_EVERY)
                .map(|r| r.count),
            Some(2)
        );
        assert_eq!(recent.sent.len(), 1);
        assert!(
            recent.sent.capacity() < grown / 8,
            "capacity {} after the sweep",
            recent.sent.capacity()
        );
    }

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
