//! Independent work spread over the machine's cores, with results in input order.
//!
//! Catalog files parse independently, and once a catalog's blobs are grouped by package each
//! package indexes independently. Loading a large catalog is most of a whole `resolve` run, so
//! both run on every core. Scoped threads from the standard library are enough for that: the
//! work is a few coarse loops, and a thread pool crate would stay resident in a controller that
//! loads catalogs rarely.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs `work` on every item and returns the results in the order of `items`. A worker takes
/// `batch` items at a time: 1 for coarse work such as a file, more for small work such as a
/// package, so that taking items costs nothing next to the work.
///
/// Once a result satisfies `stop`, no item after it is started (items already running finish)
/// and the returned list ends with that result, so that what comes back is what a single
/// thread stopping at the first such result would give. Uses one thread when the machine has
/// one core or there are few items.
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
/// buffer, say) and hands it to `work` with every item it takes.
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
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(items.len().div_ceil(batch));
    if threads <= 1 {
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
        return results;
    }
    let next = AtomicUsize::new(0);
    let first_stop = AtomicUsize::new(usize::MAX);
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut scratch = init();
                    let mut done = Vec::new();
                    'batches: loop {
                        let start = next.fetch_add(batch, Ordering::Relaxed);
                        if start >= items.len() {
                            break;
                        }
                        for (index, item) in items.iter().enumerate().skip(start).take(batch) {
                            if index > first_stop.load(Ordering::Relaxed) {
                                break 'batches;
                            }
                            let result = work(&mut scratch, item);
                            if stop(&result) {
                                first_stop.fetch_min(index, Ordering::Relaxed);
                            }
                            done.push((index, result));
                        }
                    }
                    done
                })
            })
            .collect();
        workers
            .into_iter()
            // A worker only panics if `work` does: carry on unwinding here, as a single
            // thread would have.
            .flat_map(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    done.sort_unstable_by_key(|(index, _)| *index);
    let stopped_at = first_stop.into_inner();
    let mut results = Vec::with_capacity(done.len());
    for (position, (index, result)) in done.into_iter().enumerate() {
        if index != position || index > stopped_at {
            break;
        }
        results.push(result);
    }
    results
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
    fn no_items_give_no_results() {
        let items: Vec<u32> = Vec::new();
        assert!(map_in_order(&items, 1, |&n| n, |_| true).is_empty());
    }
}
