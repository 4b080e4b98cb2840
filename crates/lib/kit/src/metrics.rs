//! Reconcile metrics every controller exports:
//! `<component>_reconcile_total{controller,result}` and
//! `<component>_reconcile_duration_seconds{controller}`.

use std::time::Instant;

use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry};

/// The reconcile counters and latency histogram of one binary.
#[derive(Debug, Clone)]
pub struct ReconcileMetrics {
    total: IntCounterVec,
    duration: HistogramVec,
}

impl ReconcileMetrics {
    /// Creates the metrics with `component` as the name prefix (e.g. `rukpak_core`) and
    /// registers them.
    pub fn register(registry: &Registry, component: &str) -> Result<Self, prometheus::Error> {
        let total = IntCounterVec::new(
            Opts::new(
                format!("{component}_reconcile_total"),
                "Reconciliations by controller and result (success or the error class).",
            ),
            &["controller", "result"],
        )?;
        let duration = HistogramVec::new(
            HistogramOpts::new(
                format!("{component}_reconcile_duration_seconds"),
                "Time spent in one reconciliation.",
            )
            .buckets(vec![
                0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
            ]),
            &["controller"],
        )?;
        registry.register(Box::new(total.clone()))?;
        registry.register(Box::new(duration.clone()))?;
        Ok(Self { total, duration })
    }

    /// Starts timing one reconciliation of `controller`; call
    /// [`ReconcileTimer::finish`] with the result label. Most reconcilers use
    /// [`crate::controller::timed`] instead, which labels the result for them.
    pub fn start(&self, controller: &str) -> ReconcileTimer {
        ReconcileTimer {
            metrics: self.clone(),
            controller: controller.to_owned(),
            started: Instant::now(),
            finished: false,
        }
    }
}

/// Times one reconciliation. A drop guard: a timer dropped without
/// [`ReconcileTimer::finish`] (the reconcile future was cancelled, or a path forgot)
/// still records its duration, with the result [`ReconcileTimer::UNFINISHED`].
#[derive(Debug)]
pub struct ReconcileTimer {
    metrics: ReconcileMetrics,
    controller: String,
    started: Instant,
    finished: bool,
}

impl ReconcileTimer {
    /// The result label of a timer dropped without [`ReconcileTimer::finish`].
    pub const UNFINISHED: &'static str = "unfinished";

    /// Records the duration and counts the result (`success` or an error label).
    pub fn finish(mut self, result: &str) {
        self.record(result);
    }

    fn record(&mut self, result: &str) {
        if self.finished {
            return;
        }
        self.finished = true;
        self.metrics
            .duration
            .with_label_values(&[self.controller.as_str()])
            .observe(self.started.elapsed().as_secs_f64());
        self.metrics
            .total
            .with_label_values(&[self.controller.as_str(), result])
            .inc();
    }
}

impl Drop for ReconcileTimer {
    fn drop(&mut self) {
        self.record(Self::UNFINISHED);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus::{Encoder, TextEncoder};

    #[test]
    fn a_finished_timer_counts_the_result_and_observes_the_duration() {
        let registry = Registry::new();
        let metrics = ReconcileMetrics::register(&registry, "rukpak_core").unwrap();
        metrics.start("bundle").finish("success");
        metrics.start("bundle").finish("unpack_failed");
        metrics.start("bundle").finish("success");

        let mut text = Vec::new();
        TextEncoder::new()
            .encode(&registry.gather(), &mut text)
            .unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains(r#"rukpak_core_reconcile_total{controller="bundle",result="success"} 2"#),
            "{text}"
        );
        assert!(text.contains(
            r#"rukpak_core_reconcile_total{controller="bundle",result="unpack_failed"} 1"#
        ));
        assert!(
            text.contains(r#"rukpak_core_reconcile_duration_seconds_count{controller="bundle"} 3"#)
        );
    }

    #[test]
    fn a_timer_dropped_unfinished_still_records_its_duration() {
        let registry = Registry::new();
        let metrics = ReconcileMetrics::register(&registry, "x").unwrap();
        drop(metrics.start("bundle"));
        metrics.start("bundle").finish("success");
        let text = String::from_utf8({
            let mut text = Vec::new();
            TextEncoder::new()
                .encode(&registry.gather(), &mut text)
                .unwrap();
            text
        })
        .unwrap();
        assert!(
            text.contains(r#"x_reconcile_total{controller="bundle",result="unfinished"} 1"#),
            "{text}"
        );
        assert!(text.contains(r#"x_reconcile_total{controller="bundle",result="success"} 1"#));
        assert!(text.contains(r#"x_reconcile_duration_seconds_count{controller="bundle"} 2"#));
    }

    #[test]
    fn registering_twice_in_one_registry_fails() {
        let registry = Registry::new();
        ReconcileMetrics::register(&registry, "x").unwrap();
        assert!(ReconcileMetrics::register(&registry, "x").is_err());
    }
}
