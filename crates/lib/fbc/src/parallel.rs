//! Independent work spread over the machine's cores, with results in input order.
//!
//! A catalog directory's top-level folders are listed and read independently, and once its
//! blobs are grouped by package each package indexes independently. Loading a large catalog
//! is most of a whole `resolve` run, so both steps run on every core.
//!
//! The threads are rayon's, in a pool made for one load ([`with_workers`]) and ended with it:
//! the steps share them instead of starting and ending threads of their own each time
//! (on a small catalog that was 0.7 ms of a 15 ms `resolve`), and a controller that loads
//! catalogs rarely keeps no idle threads between loads.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

/// The cores this process may use, asked once: the standard library reads the process's
/// cgroup files every time (about twenty system calls), and one catalog load used to ask three
/// times. A pod resized in place keeps the first answer until it restarts, which only sets
/// how many threads share a load.
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// Runs `work` on every item and returns the results in the order of `items`. Items are
/// handed out in runs of at least `batch`: 1 for coarse work such as a file, more for small
/// work such as a package, so that handing them out costs nothing next to the work.
///
/// Once a result satisfies `stop`, no item after it is started (items already running finish)
/// and the returned list ends with that result, so that what comes back is what a single
/// thread stopping at the first such result would give. Uses one thread when the machine has
/// one core, there are few items, or no thread can be started.
pub(crate) fn map_in_order<T, R, W, S>(items: &[T], batch: usize, work: W, stop: S) -> Vec<R>
where
    T: Sync,
    R: Send,
    W: Fn(&T) -> R + Sync,
    S: Fn(&R) -> bool + Sync,
{
    map_in_order_with(items, batch, || (), |(), item| work(item), stop)
}

/// [`map_in_order`], where each worker first makes its own scratch state with `init` (a
/// buffer, say) and hands it to `work` with the items it takes.
pub(crate) fn map_in_order_with<T, R, I, A, W, S>(
    items: &[T],
    batch: usize,
    init: I,
    work: W,
    stop: S,
) -> Vec<R>
where
    T: Sync,
    R: Send,
    I: Fn() -> A + Sync,
    W: Fn(&mut A, &T) -> R + Sync,
    S: Fn(&R) -> bool + Sync,
{
    let batch = batch.max(1);
    if cores().min(items.len().div_ceil(batch)) <= 1 {
        return in_turn(items, &init, &work, &stop);
    }
    if rayon::current_thread_index().is_some() {
        return in_parallel(items, batch, &init, &work, &stop);
    }
    match workers() {
        Some(pool) => pool.install(|| in_parallel(items, batch, &init, &work, &stop)),
        None => in_turn(items, &init, &work, &stop),
    }
}

/// Runs `work` with one worker per core that the parallel loops inside it share, so that a
/// load of several steps starts its threads once; they are told to end when `work` returns.
/// `work` itself runs on one of them. Inside another call's `work`, it runs `work` right
/// there, on that call's workers.
pub(crate) fn with_workers<R: Send>(work: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_some() || cores() <= 1 {
        return work();
    }
    match workers() {
        Some(pool) => pool.install(work),
        // The loops inside try for themselves, and run on this thread if they cannot.
        None => work(),
    }
}

/// A pool of one thread per core, or `None` when the threads cannot be started. Never
/// rayon's global pool, which would outlive the load.
fn workers() -> Option<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(cores())
        .build()
        .ok()
}

fn in_turn<T, R, A>(
    items: &[T],
    init: &impl Fn() -> A,
    work: &impl Fn(&mut A, &T) -> R,
    stop: &impl Fn(&R) -> bool,
) -> Vec<R> {
    let mut scratch = init();
    let mut results = Vec::with_capacity(items.len());
    for item in items {
        let result = work(&mut scratch, item);
        let stopped = stop(&result);
        results.push(result);
        if stopped {
            break;
        }
    }
    results
}

/// On the current pool's workers.
fn in_parallel<T, R, A>(
    items: &[T],
    batch: usize,
    init: &(impl Fn() -> A + Sync),
    work: &(impl Fn(&mut A, &T) -> R + Sync),
    stop: &(impl Fn(&R) -> bool + Sync),
) -> Vec<R>
where
    T: Sync,
    R: Send,
{
    let first_stop = AtomicUsize::new(usize::MAX);
    let done: Vec<Option<R>> = items
        .par_iter()
        .enumerate()
        .with_min_len(batch)
        .map_init(init, |scratch, (index, item)| {
            // An item after a stop is skipped, not started: its result would be dropped.
            if index > first_stop.load(Ordering::Relaxed) {
                return None;
            }
            let result = work(scratch, item);
            if stop(&result) {
                first_stop.fetch_min(index, Ordering::Relaxed);
            }
            Some(result)
        })
        .collect();
    // Every item up to the first stop ran: it was checked against a stop at or after it.
    let stopped_at = first_stop.into_inner();
    done.into_iter()
        .take(stopped_at.saturating_add(1))
        .map_while(|result| result)
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn results_come_back_in_input_order() {
        let items: Vec<u64> = (0..1000).collect();
        let squares = map_in_order(&items, 8, |n| n * n, |_| false);
        assert_eq!(squares, items.iter().map(|n| n * n).collect::<Vec<_>>());
    }

    #[test]
    fn results_end_at_the_first_that_stops_the_work() {
        let items: Vec<u32> = (0..1000).collect();
        for batch in [1, 8] {
            for stop_at in [0, 7, 8, 500, 999] {
                let stop = |&n: &u32| n == stop_at || n == stop_at + 3;
                let results = map_in_order(&items, batch, |&n| n, stop);
                let expected: Vec<u32> = (0..=stop_at).collect();
                assert_eq!(results, expected, "batch {batch}, stop at {stop_at}");
            }
        }
    }

    #[test]
    fn loops_inside_one_call_share_its_workers() {
        let items: Vec<u32> = (0..64).collect();
        let spin = |&n: &u32| {
            // Long enough that every worker takes some of the items.
            std::thread::sleep(std::time::Duration::from_millis(1));
            (n, std::thread::current().id())
        };
        let (first, second) = with_workers(|| {
            (
                map_in_order(&items, 1, spin, |_| false),
                map_in_order(&items, 1, spin, |_| false),
            )
        });
        let threads: std::collections::HashSet<_> = first
            .iter()
            .chain(&second)
            .map(|(_, thread)| *thread)
            .collect();
        assert!(
            threads.len() <= cores(),
            "{} threads for two loops on {} cores",
            threads.len(),
            cores()
        );
        for results in [first, second] {
            let order: Vec<u32> = results.into_iter().map(|(n, _)| n).collect();
            assert_eq!(order, items);
        }
    }

    #[test]
    fn no_items_give_no_results() {
        let items: Vec<u32> = Vec::new();
        assert!(map_in_order(&items, 1, |&n| n, |_| true).is_empty());
    }
}
