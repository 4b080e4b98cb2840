//! Unpack slots: how many unpacks run at once, without letting slow ones hold up the rest.
//!
//! Many Bundles created together (a thousand BundleDeployments applied at once) would all be
//! unpacked at once, each with its buffers, and the process's peak memory would grow with
//! them. Limiting the controller's concurrency bounds that, but then a handful of sources
//! that never answer (an image on an address that drops packets, a registry that trickles)
//! hold every place for the length of the unpack timeout, and any tenant who can create a
//! few Bundles can stop every other tenant's installs. So the limit is bounded in time on
//! both sides, by [`DEFAULT_SLOT_HOLD`]: an unpack still running after that gives its slot
//! to the next and carries on outside the limit, and an unpack that has waited that long
//! for a slot starts without one. Bursts of fast unpacks, the ones that come by the
//! hundred, are bounded; nothing waits longer than the hold, however many sources hang.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

/// How long one unpack may keep its slot. Unpacking a typical bundle (a few hundred KiB)
/// takes well under a second; one that takes longer is waiting on a network or is large,
/// and holds little memory per second of waiting.
pub const DEFAULT_SLOT_HOLD: Duration = Duration::from_secs(10);

/// At most `limit` unpacks at once, each counted for at most its hold.
#[derive(Debug)]
pub struct UnpackSlots {
    /// `None`: no limit.
    semaphore: Option<Arc<Semaphore>>,
    hold: Duration,
}

impl UnpackSlots {
    /// `limit` slots (0: no limit), each held for at most `hold`.
    pub fn new(limit: u16, hold: Duration) -> Self {
        Self {
            semaphore: (limit > 0).then(|| Arc::new(Semaphore::new(usize::from(limit)))),
            hold,
        }
    }

    /// Runs `work` once a slot is free, or after waiting the hold for one in vain; frees the
    /// slot when `work` ends or after the hold, whichever comes first (`work` then carries
    /// on). So nothing waits longer than the hold to start.
    pub async fn run<F: Future>(&self, work: F) -> F::Output {
        let Some(semaphore) = &self.semaphore else {
            return work.await;
        };
        // Waiting is bounded too: behind many sources that never answer, each taking a
        // slot in turn for its hold, a healthy unpack would otherwise wait one hold per
        // handful of them. (The semaphore is never closed: an error cannot happen.)
        let permit = tokio::time::timeout(self.hold, semaphore.clone().acquire_owned())
            .await
            .ok()
            .and_then(Result::ok);
        let mut work = std::pin::pin!(work);
        tokio::select! {
            output = &mut work => return output,
            () = tokio::time::sleep(self.hold) => {}
        }
        drop(permit);
        tracing::debug!(hold = ?self.hold, "an unpack outlasted its slot; it carries on outside the limit");
        work.await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::time::Instant;

    /// Work that counts how many run at once and records the highest count.
    async fn counted(running: &AtomicUsize, highest: &AtomicUsize, length: Duration) {
        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
        highest.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(length).await;
        running.fetch_sub(1, Ordering::SeqCst);
    }

    #[tokio::test(start_paused = true)]
    async fn at_most_the_limit_runs_at_once() {
        let slots = UnpackSlots::new(2, Duration::from_secs(10));
        let (running, highest) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let start = Instant::now();
        futures::future::join_all(
            (0..6).map(|_| slots.run(counted(&running, &highest, Duration::from_secs(1)))),
        )
        .await;
        assert_eq!(highest.load(Ordering::SeqCst), 2);
        // Six one-second unpacks, two at a time.
        assert_eq!(start.elapsed(), Duration::from_secs(3));
    }

    /// How long an unpack queued behind `stuck` never-ending ones waits to start, on 2
    /// slots held for at most 10 s.
    async fn waited_behind(stuck: usize) -> Duration {
        let slots = UnpackSlots::new(2, Duration::from_secs(10));
        let start = Instant::now();
        let stuck =
            futures::future::join_all((0..stuck).map(|_| slots.run(std::future::pending::<()>())));
        let healthy = async {
            // Queued behind the stuck ones.
            tokio::task::yield_now().await;
            slots.run(async { start.elapsed() }).await
        };
        tokio::time::timeout(Duration::from_secs(60), async {
            tokio::select! {
                _ = stuck => unreachable!("pending work never ends"),
                waited = healthy => waited,
            }
        })
        .await
        .expect("the healthy unpack waited for the stuck ones to end")
    }

    #[tokio::test(start_paused = true)]
    async fn unpacks_that_never_end_hold_their_slots_only_for_the_hold() {
        assert_eq!(waited_behind(2).await, Duration::from_secs(10));
    }

    #[tokio::test(start_paused = true)]
    async fn nothing_waits_longer_than_the_hold_however_many_never_end() {
        // Not one hold per two stuck unpacks ahead of it: one hold at most.
        assert_eq!(waited_behind(8).await, Duration::from_secs(10));
    }

    #[tokio::test(start_paused = true)]
    async fn no_limit_runs_everything_at_once() {
        let slots = UnpackSlots::new(0, Duration::from_secs(10));
        let (running, highest) = (AtomicUsize::new(0), AtomicUsize::new(0));
        futures::future::join_all(
            (0..50).map(|_| slots.run(counted(&running, &highest, Duration::from_secs(1)))),
        )
        .await;
        assert_eq!(highest.load(Ordering::SeqCst), 50);
    }

    #[tokio::test(start_paused = true)]
    async fn work_that_outlasts_its_slot_still_finishes_with_its_result() {
        let slots = UnpackSlots::new(1, Duration::from_secs(1));
        let output = slots
            .run(async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                42
            })
            .await;
        assert_eq!(output, 42);
    }
}
