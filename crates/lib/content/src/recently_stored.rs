//! Content this process has just stored or checked, so that the next sharer of the same
//! content writes and reads nothing: N BundleDeployments of one bundle would otherwise cost
//! a create (refused as existing) and a read of every chunk each.
//!
//! What may be trusted is bounded by the store's mark and sweep (see [`crate::store`]): a
//! sweep may mark content unreferenced, and a writer must clear that mark before relying on
//! the content. So every sweep pass of this process moves the *epoch* on when it starts
//! and again when it ends, and an entry counts only in the epoch its check started in, and
//! only while no sweep is under way. A check that started before or during a sweep may
//! have missed a mark; one that started after it saw every mark that sweep made, and
//! cleared it. Entries also expire after [`TRUST_FOR`], which bounds how long a chunk
//! deleted by hand goes unnoticed by writers (readers always verify every chunk).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::digest::Digest;

/// How long a check is trusted without a sweep in between.
pub(crate) const TRUST_FOR: Duration = Duration::from_secs(60);
/// Entries kept at most; the oldest half is dropped past it.
const CAPACITY: usize = 4096;

/// Digests (per kind of user) stored or checked by this process, with the sweep epoch
/// their check started in.
#[derive(Debug, Default)]
pub(crate) struct RecentlyStored {
    inner: Mutex<Inner>,
    /// One lock per digest and user being written, so that concurrent sharers of the same
    /// content wait for the first one's check instead of all making it.
    writing: Mutex<HashMap<(Digest, String), WriterLock>>,
    /// Digests (per user) this process has stored at any time, kept through sweeps: not
    /// trusted, only a hint that the chunks are likely there, so the next write reads each
    /// chunk before creating it rather than creating it and being refused as existing (a
    /// catalog re-polled with unchanged content would otherwise send one refused create
    /// per chunk each poll).
    stored_before: Mutex<std::collections::HashSet<(Digest, String)>>,
}

/// Held by the one writer of a digest (for one user) at a time.
pub(crate) type WriterLock = Arc<tokio::sync::Mutex<()>>;

#[derive(Debug, Default)]
struct Inner {
    /// Moves on whenever a sweep pass starts or ends.
    epoch: u64,
    /// Sweep passes under way.
    sweeping: u32,
    entries: HashMap<(Digest, String), (u64, Instant)>,
}

impl RecentlyStored {
    /// The epoch a check starting now belongs to; pass it to [`Self::record`].
    pub(crate) fn begin(&self) -> u64 {
        self.lock().epoch
    }

    /// Whether `digest` was stored or checked for `user` recently enough to skip the store.
    pub(crate) fn trusts(&self, digest: &Digest, user: &str, now: Instant) -> bool {
        let inner = self.lock();
        inner.sweeping == 0
            && inner
                .entries
                .get(&(digest.clone(), user.to_owned()))
                .is_some_and(|&(epoch, at)| {
                    epoch == inner.epoch && now.saturating_duration_since(at) < TRUST_FOR
                })
    }

    /// Whether this process has stored or checked `digest` for `user` before (see
    /// `stored_before`).
    pub(crate) fn stored_before(&self, digest: &Digest, user: &str) -> bool {
        self.stored_before
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(&(digest.clone(), user.to_owned()))
    }

    /// Records a completed store or check of `digest` for `user` that started in `epoch`.
    pub(crate) fn record(&self, digest: &Digest, user: &str, epoch: u64, now: Instant) {
        {
            let mut before = self
                .stored_before
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if before.len() >= CAPACITY {
                before.clear();
            }
            before.insert((digest.clone(), user.to_owned()));
        }
        let mut inner = self.lock();
        if epoch != inner.epoch || inner.sweeping > 0 {
            return;
        }
        if inner.entries.len() >= CAPACITY {
            let mut ages: Vec<Instant> = inner.entries.values().map(|&(_, at)| at).collect();
            ages.sort_unstable();
            let cutoff = ages[ages.len() / 2];
            inner.entries.retain(|_, &mut (_, at)| at > cutoff);
        }
        inner
            .entries
            .insert((digest.clone(), user.to_owned()), (epoch, now));
    }

    /// The lock writers of `digest` for `user` take in turn; give it back with
    /// [`Self::done_writing`].
    pub(crate) fn writer_lock(&self, digest: &Digest, user: &str) -> WriterLock {
        let mut writing = self
            .writing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        writing
            .entry((digest.clone(), user.to_owned()))
            .or_default()
            .clone()
    }

    /// Drops the lock of `digest` for `user` once no other writer holds or awaits it.
    pub(crate) fn done_writing(&self, digest: &Digest, user: &str, lock: WriterLock) {
        let mut writing = self
            .writing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // This caller's clone and the map's: nobody else is waiting.
        if Arc::strong_count(&lock) <= 2 {
            writing.remove(&(digest.clone(), user.to_owned()));
        }
    }

    /// Stops trusting `digest` for every user (a read found it missing or corrupted).
    pub(crate) fn forget(&self, digest: &Digest) {
        self.lock().entries.retain(|(known, _), _| known != digest);
    }

    /// Marks a sweep pass as under way until the guard is dropped, whether the pass ends,
    /// fails or is cancelled.
    pub(crate) fn sweeping(&self) -> Sweeping<'_> {
        self.sweep_started();
        Sweeping(self)
    }

    /// A sweep pass starts: nothing recorded so far is trusted any more.
    fn sweep_started(&self) {
        let mut inner = self.lock();
        inner.epoch += 1;
        inner.sweeping += 1;
        inner.entries.clear();
    }

    /// The sweep pass ended (however it ended): checks starting from now may be trusted.
    fn sweep_ended(&self) {
        let mut inner = self.lock();
        inner.epoch += 1;
        inner.sweeping = inner.sweeping.saturating_sub(1);
        inner.entries.clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic under this lock cannot leave the map inconsistent; keep using it.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A sweep pass under way (see [`RecentlyStored::sweeping`]).
pub(crate) struct Sweeping<'a>(&'a RecentlyStored);

impl Drop for Sweeping<'_> {
    fn drop(&mut self) {
        self.0.sweep_ended();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(n: u8) -> Digest {
        Digest::of(&[n])
    }

    #[test]
    fn a_recorded_check_is_trusted_for_its_user_until_it_expires() {
        let recent = RecentlyStored::default();
        let now = Instant::now();
        let epoch = recent.begin();
        assert!(!recent.trusts(&digest(1), "bundle", now));
        recent.record(&digest(1), "bundle", epoch, now);
        assert!(recent.trusts(&digest(1), "bundle", now));
        assert!(!recent.trusts(&digest(1), "catalog", now), "another user");
        assert!(!recent.trusts(&digest(2), "bundle", now), "another digest");
        assert!(
            !recent.trusts(&digest(1), "bundle", now + TRUST_FOR),
            "expired"
        );
        recent.forget(&digest(1));
        assert!(!recent.trusts(&digest(1), "bundle", now), "forgotten");
    }

    #[test]
    fn content_stored_before_is_remembered_through_sweeps_and_expiry_as_a_hint() {
        let recent = RecentlyStored::default();
        let now = Instant::now();
        assert!(!recent.stored_before(&digest(1), "catalog"));
        recent.record(&digest(1), "catalog", recent.begin(), now);
        recent.sweep_started();
        recent.sweep_ended();
        assert!(
            !recent.trusts(&digest(1), "catalog", now),
            "not trusted after a sweep"
        );
        assert!(
            recent.stored_before(&digest(1), "catalog"),
            "but stored before"
        );
        assert!(!recent.stored_before(&digest(1), "bundle"), "another user");
        assert!(
            !recent.stored_before(&digest(2), "catalog"),
            "another digest"
        );
    }

    #[test]
    fn no_check_from_before_or_during_a_sweep_is_trusted() {
        let recent = RecentlyStored::default();
        let now = Instant::now();
        let before = recent.begin();
        recent.record(&digest(1), "bundle", before, now);
        recent.sweep_started();
        assert!(
            !recent.trusts(&digest(1), "bundle", now),
            "dropped by the sweep"
        );
        // A check that started before the sweep and ends during it may have missed a mark.
        recent.record(&digest(2), "bundle", before, now);
        assert!(!recent.trusts(&digest(2), "bundle", now));
        // So may one that started during it.
        let during = recent.begin();
        recent.record(&digest(3), "bundle", during, now);
        assert!(!recent.trusts(&digest(3), "bundle", now));
        recent.sweep_ended();
        assert!(
            !recent.trusts(&digest(3), "bundle", now),
            "nor once it ended"
        );
        recent.record(&digest(3), "bundle", during, now);
        assert!(
            !recent.trusts(&digest(3), "bundle", now),
            "its epoch is over"
        );
        // A check that started after the sweep saw (and cleared) every mark it made.
        let after = recent.begin();
        recent.record(&digest(4), "bundle", after, now);
        assert!(recent.trusts(&digest(4), "bundle", now));
        // Two passes at once: nothing is trusted until both have ended, cancelled or not.
        let first = recent.sweeping();
        let second = recent.sweeping();
        drop(first);
        let between = recent.begin();
        recent.record(&digest(5), "bundle", between, now);
        assert!(!recent.trusts(&digest(5), "bundle", now));
        drop(second);
        let after = recent.begin();
        recent.record(&digest(5), "bundle", after, now);
        assert!(recent.trusts(&digest(5), "bundle", now));
    }

    #[test]
    fn the_oldest_entries_go_first_when_full() {
        let recent = RecentlyStored::default();
        let start = Instant::now();
        let epoch = recent.begin();
        for i in 0..CAPACITY + 1 {
            let name = format!("user{i}");
            recent.record(
                &digest(0),
                &name,
                epoch,
                start + Duration::from_millis(i as u64),
            );
        }
        let last = start + Duration::from_millis(CAPACITY as u64);
        assert!(recent.trusts(&digest(0), &format!("user{CAPACITY}"), last));
        assert!(!recent.trusts(&digest(0), "user0", last));
        assert!(recent.lock().entries.len() <= CAPACITY / 2 + 1);
    }
}
