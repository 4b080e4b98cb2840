//! The read → decide → write part of a reconcile: find the Bundle of the current
//! template, choose the revision (pure, [`crate::revisions::choose`]), review one that
//! waits for approval ([`super::review`]), and apply one ([`Reconcile::apply_revision`]).
//! What it did comes back as a [`Step`]; nothing here builds status.

use std::sync::Arc;
use std::time::Duration;

use kube::api::DynamicObject;
use kube::{Api, Resource, ResourceExt};
use rukpak_api::labels::OWNER_NAME;
use rukpak_api::{Bundle, BundleDeployment, BundleDeploymentStatus, InventoryEntry};
use rukpak_api::{bundle_name, template_hash};

use apply_engine::apply::{Applier, ApplyError, ApplyReport, ApplyRequest};
use apply_engine::object::ObjectKey;
use health::Health;
use health::checks::{CompiledChecks, judge};

use super::prepare::{PrepareError, Prepared, unpacked_content};
use super::{Context, Error};
use crate::format::BundleFormat;
use crate::revisions::{AppliedRevision, Progress, Target};
use crate::status::{Outcome, RevisionStep, next_status, shows_progress};

/// An apply that takes longer than this shows its steps in status (`Progressing`); a
/// quicker one only writes its outcome.
const SHOW_PROGRESS_AFTER: Duration = Duration::from_secs(2);

/// What one reconcile did, for the pure functions that make status and the next action.
pub(super) struct Step {
    /// The outcome for status.
    pub outcome: Outcome,
    /// What it decided and saw about revisions.
    pub revision: Option<RevisionStep>,
    /// The BundleDeployment's Bundles (read once, for the revision outcomes they show).
    pub bundles: Vec<Bundle>,
    /// The status last written while the apply ran (its progress), if any: what the
    /// server holds now.
    pub in_flight: Option<BundleDeploymentStatus>,
    /// When certificates want a look before the next resync (a rotation step is due).
    pub recheck_after: Option<Duration>,
}

impl Step {
    /// A step that ended before any revision was chosen.
    pub fn only(outcome: Outcome) -> Self {
        Self {
            outcome,
            revision: None,
            bundles: Vec::new(),
            in_flight: None,
            recheck_after: None,
        }
    }
}

/// What applying one revision gave: the outcome for status, what it means for the
/// revision, and what the reconcile needs afterwards.
pub(super) struct Applied {
    outcome: Outcome,
    progress: Progress,
    in_flight: Option<BundleDeploymentStatus>,
    recheck_after: Option<Duration>,
}

impl Applied {
    /// An apply that stopped at `outcome`, meaning `progress` for the revision.
    fn stopped(outcome: Outcome, progress: Progress) -> Self {
        Self {
            outcome,
            progress,
            in_flight: None,
            recheck_after: None,
        }
    }
}

/// One reconcile of one BundleDeployment: what every step of it reads.
pub(super) struct Reconcile<'a, F> {
    pub ctx: &'a Context<F>,
    pub deployment: &'a BundleDeployment,
    /// The ProvisionerClass's `spec.parameters`.
    pub class_parameters: Option<&'a serde_json::Value>,
    /// The status as the reconcile found it.
    pub current: &'a BundleDeploymentStatus,
}

/// Why the steps of [`Reconcile::apply_revision`] stopped before the end.
enum Stop {
    /// A step ended the apply with this outcome (shown in status).
    At(Box<Applied>),
    /// A step failed in a way the reconcile retries with backoff.
    Failed(Error),
}

impl Stop {
    /// Ends the apply with `applied`.
    fn at(applied: Applied) -> Self {
        Self::At(Box::new(applied))
    }
}

impl From<Error> for Stop {
    fn from(err: Error) -> Self {
        Self::Failed(err)
    }
}

/// What an apply that got through its writes carries to [`Reconcile::judge`].
struct Settled {
    bundle: String,
    warnings: Vec<String>,
    skipped: Vec<InventoryEntry>,
    adjustments: Vec<String>,
}

impl<F: BundleFormat> Reconcile<'_, F> {
    /// Finds the Bundle of the current template, decides which revision to apply (see
    /// [`crate::revisions`]), reviews one that waits for approval, and applies.
    pub async fn run(&self) -> Result<Step, Error> {
        let name = self.deployment.name_any();
        // Read.
        let desired = bundle_name(&name, &template_hash(&self.deployment.spec.template));
        let bundles: Vec<Bundle> = self
            .ctx
            .bundles
            .state_filter(|b| b.labels().get(OWNER_NAME) == Some(&name))
            .into_iter()
            .map(|b| Bundle::clone(&b))
            .collect();
        let Some(found) = bundles.iter().find(|b| b.name_any() == desired) else {
            return Ok(Step::only(Outcome::BundleMissing { bundle: desired }));
        };
        if let Err(outcome) = unpacked_content(&desired, found.status.as_ref()) {
            return Ok(Step::only(*outcome));
        }
        let checks = match CompiledChecks::compile(&self.deployment.spec.health_checks) {
            Ok(checks) => Arc::new(checks),
            Err(message) => return Ok(Step::only(Outcome::InvalidHealthChecks { message })),
        };
        // Decide.
        let target = crate::revisions::choose(&self.deployment.spec, self.current, found, &bundles);
        // Write.
        let pending = match &target {
            Target::AwaitApproval {
                pending, digest, ..
            } => Some(self.review(found, pending, digest, &checks).await),
            _ => None,
        };
        let Some(applied) = target
            .applies()
            .and_then(|n| bundles.iter().find(|b| b.name_any() == n))
        else {
            let digest = crate::revisions::digest_of(found)
                .unwrap_or_default()
                .to_owned();
            return Ok(Step {
                outcome: Outcome::AwaitingApproval {
                    bundle: desired,
                    digest,
                },
                revision: Some(RevisionStep {
                    target,
                    applied: None,
                    progress: Progress::Progressing,
                    pending,
                }),
                bundles,
                in_flight: None,
                recheck_after: None,
            });
        };
        let result = self.apply_revision(applied, checks).await?;
        let revision = RevisionStep {
            applied: Some(AppliedRevision::of(applied)),
            target,
            progress: result.progress,
            pending,
        };
        Ok(Step {
            outcome: result.outcome,
            revision: Some(revision),
            bundles,
            in_flight: result.in_flight,
            recheck_after: result.recheck_after,
        })
    }

    /// The review of the pending revision: the one in status when it is of the same
    /// revision and complete, else worked out again. Content does not change under a
    /// digest, so the drift events of what runs meanwhile do not each reload the content
    /// and dry-run every object again; an incomplete review (refusals) is redone.
    async fn review(
        &self,
        bundle: &Bundle,
        pending: &str,
        digest: &str,
        checks: &Arc<CompiledChecks>,
    ) -> rukpak_api::PendingRevision {
        let reviewed = self
            .current
            .pending_revision
            .as_ref()
            .filter(|p| p.digest == digest && p.bundle == pending && p.refused.is_empty());
        match reviewed {
            Some(reviewed) => reviewed.clone(),
            None => super::review::pending(self, bundle, pending, digest, checks).await,
        }
    }

    /// Loads the Bundle `found`, applies its objects and judges the result. The steps in
    /// order; each that fails ends the apply with its own outcome ([`Stop`]).
    async fn apply_revision(
        &self,
        found: &Bundle,
        checks: Arc<CompiledChecks>,
    ) -> Result<Applied, Error> {
        let bundle = found.name_any();
        let steps = async {
            let mut prepared = self.prepared(found, &bundle).await?;
            let (applier, warnings) = self.ctx.applier_for(self.deployment).await?;
            let certificates = self.certificates(&applier, &bundle, &mut prepared).await?;
            let request = ApplyRequest {
                owner: self.deployment.name_any(),
                objects: prepared.objects,
                install_namespace: prepared.install_namespace,
                collision_protection: self.deployment.spec.collision_protection,
                previous_inventory: self.current.inventory.clone(),
                health_checks: checks.clone(),
                absent: prepared.absent,
                installed_already: crate::status::installed_already(self.current, &bundle),
            };
            let (applied, in_flight) = self.write(&bundle, applier, request).await;
            let report = applied.map_err(|err| {
                let message = kit::error_chain(&err);
                let progress = if err.is_terminal() {
                    Progress::Failed(message.clone())
                } else {
                    Progress::Retrying
                };
                Stop::at(Applied {
                    in_flight: in_flight.clone(),
                    ..Applied::stopped(
                        Outcome::ApplyFailed {
                            bundle: bundle.clone(),
                            message,
                        },
                        progress,
                    )
                })
            })?;
            let warnings = warnings.take();
            let skipped: Vec<InventoryEntry> =
                report.skipped.iter().map(InventoryEntry::from).collect();
            self.announce_applied(&bundle, &report, &warnings, &prepared.adjustments, &skipped)
                .await;
            for (reason, warning, message) in &certificates.changes {
                self.ctx
                    .event(self.deployment, *warning, reason, message.clone())
                    .await;
            }
            let settled = Settled {
                bundle: bundle.clone(),
                warnings,
                skipped,
                adjustments: prepared.adjustments,
            };
            let (outcome, progress) = self.judge(settled, report, &checks).await;
            Ok(Applied {
                outcome,
                progress,
                in_flight,
                recheck_after: certificates.recheck_after,
            })
        };
        match steps.await {
            Ok(applied) => Ok(applied),
            Err(Stop::At(applied)) => Ok(*applied),
            Err(Stop::Failed(err)) => Err(err),
        }
    }

    /// Step 1: the revision's objects ([`Reconcile::prepare`]), or the outcome that says
    /// why there are none.
    async fn prepared(&self, found: &Bundle, bundle: &str) -> Result<Prepared, Stop> {
        let bundle = bundle.to_owned();
        if let Err(outcome) = unpacked_content(&bundle, found.status.as_ref()) {
            return Err(Stop::at(Applied::stopped(*outcome, Progress::Retrying)));
        }
        self.prepare(found).await.map_err(|err| match err {
            PrepareError::Load(message) => Stop::at(Applied::stopped(
                Outcome::LoadFailed { bundle, message },
                Progress::Retrying,
            )),
            PrepareError::Plan(message) => Stop::at(Applied::stopped(
                Outcome::LoadFailed {
                    bundle,
                    message: message.clone(),
                },
                Progress::Failed(message),
            )),
            PrepareError::Kube(err) => Stop::Failed(err),
        })
    }

    /// Step 2: the built-in webhook certificates, filled into the objects. Read and decided
    /// as the deployment's identity, before anything is written, so the webhook
    /// configurations go out with the CA that verifies their server.
    async fn certificates(
        &self,
        applier: &Applier,
        bundle: &str,
        prepared: &mut Prepared,
    ) -> Result<crate::certificates::Provisioned, Stop> {
        crate::certificates::provide(
            applier.client(),
            &self.deployment.name_any(),
            prepared.install_namespace.as_deref(),
            &mut prepared.objects,
            &self.ctx.settings.certificates,
        )
        .await
        .map_err(|err| {
            let bundle = bundle.to_owned();
            Stop::at(match err {
                crate::certificates::CertificateError::Request(message) => {
                    Applied::stopped(Outcome::LoadFailed { bundle, message }, Progress::Retrying)
                }
                err => {
                    let message = kit::error_chain(&err);
                    Applied::stopped(
                        Outcome::ApplyFailed {
                            bundle,
                            message: message.clone(),
                        },
                        Progress::Failed(message),
                    )
                }
            })
        })
    }

    /// Last step: what the written objects say. Still waiting for a phase's probes, or
    /// everything written and judged healthy or not.
    async fn judge(
        &self,
        settled: Settled,
        report: ApplyReport,
        checks: &CompiledChecks,
    ) -> (Outcome, Progress) {
        let Settled {
            bundle,
            warnings,
            skipped,
            adjustments,
        } = settled;
        if let Some(wait) = &report.waiting {
            // Watch what is waited for, so its status changes wake this BundleDeployment.
            self.watch_kinds(&report.inventory).await;
            let message = wait.message();
            let progress = if wait.failed() {
                Progress::Failed(format!("a probe failed: {message}"))
            } else {
                Progress::Progressing
            };
            let outcome = Outcome::Waiting {
                bundle,
                message,
                failed: wait.failed(),
                inventory: report.inventory,
                skipped,
                adjustments,
            };
            return (outcome, progress);
        }
        let overall = self
            .judge_health(&report.inventory, &report.after_write, checks)
            .await;
        let outcome = Outcome::Installed {
            bundle,
            inventory: report.inventory,
            healthy: overall.is_healthy(),
            health_message: overall.message().unwrap_or_default().to_owned(),
            warnings,
            kept: report
                .kept
                .iter()
                .map(|(key, reason)| format!("{key}: {reason}"))
                .collect(),
            skipped,
            adjustments,
        };
        (outcome, Progress::of_health(&overall))
    }

    /// Runs the apply; one that is shown in progress (see [`shows_progress`]) writes each
    /// step it starts into status (`Progressing`) once it has taken
    /// [`SHOW_PROGRESS_AFTER`]. Returns the apply's result and the last status written.
    /// Best effort: a failed status write is logged and the apply goes on.
    async fn write(
        &self,
        bundle: &str,
        applier: Applier,
        request: ApplyRequest,
    ) -> (
        Result<ApplyReport, ApplyError>,
        Option<BundleDeploymentStatus>,
    ) {
        let generation = self.deployment.meta().generation;
        if !shows_progress(self.current, bundle, generation) {
            return (applier.apply(request).await, None);
        }
        let (progress, mut steps) = tokio::sync::watch::channel(None);
        let applier = applier.with_progress(progress);
        let apply = applier.apply(request);
        tokio::pin!(apply);
        let quiet = tokio::time::sleep(SHOW_PROGRESS_AFTER);
        tokio::pin!(quiet);
        let mut showing = false;
        let mut in_flight = None;
        loop {
            tokio::select! {
                biased;
                result = &mut apply => return (result, in_flight),
                () = &mut quiet, if !showing => showing = true,
                changed = steps.changed(), if showing => {
                    // The sender went with the finished apply, which the next turn returns.
                    if changed.is_err() {
                        continue;
                    }
                }
            }
            let Some(step) = steps.borrow_and_update().clone() else {
                continue;
            };
            let next = next_status(
                self.current,
                &Outcome::Applying {
                    bundle: bundle.to_owned(),
                    step: step.to_string(),
                },
                generation,
                &kit::conditions::now(),
            );
            if in_flight.as_ref() == Some(&next) {
                continue;
            }
            let name = self.deployment.name_any();
            match kit::status::apply(
                &Api::<BundleDeployment>::all(self.ctx.client.clone()),
                &name,
                &self.ctx.field_manager,
                &next,
            )
            .await
            {
                Ok(_) => in_flight = Some(next),
                Err(err) => {
                    tracing::debug!(bundle_deployment = %name, error = %kit::error_chain(&err), "failed to show the apply step in status");
                }
            }
        }
    }

    /// Events for what an apply left for a person to know: the API server's warnings, the
    /// objects kept instead of pruned, and, when they changed, the format's adjustments
    /// and the optional objects skipped.
    async fn announce_applied(
        &self,
        bundle: &str,
        report: &ApplyReport,
        warnings: &[String],
        adjustments: &[String],
        skipped: &[InventoryEntry],
    ) {
        let mut events = Vec::new();
        for warning in warnings {
            events.push((
                true,
                "APIWarning",
                format!("the API server warned: {warning}"),
            ));
        }
        for (key, reason) in &report.kept {
            events.push((false, "PruneSkipped", format!("kept {key}: {reason}")));
        }
        if adjustments != self.current.adjustments && !adjustments.is_empty() {
            events.push((
                false,
                "BundleAdjusted",
                format!(
                    "the {bundle} Bundle was adjusted to install safely: {}",
                    adjustments.join("; ")
                ),
            ));
        }
        if skipped != self.current.skipped && !skipped.is_empty() {
            let kinds: Vec<String> = report.skipped.iter().map(ToString::to_string).collect();
            events.push((
                false,
                "OptionalSkipped",
                format!(
                    "skipped {} optional object(s) whose kind the cluster does not serve: {}",
                    skipped.len(),
                    kinds.join(", ")
                ),
            ));
        }
        for (warning, reason, note) in events {
            self.ctx.event(self.deployment, warning, reason, note).await;
        }
    }

    /// Makes sure every kind of `inventory` is watched (drift, and status changes that
    /// move a probe or health along).
    async fn watch_kinds(&self, inventory: &[InventoryEntry]) {
        for entry in inventory {
            let key = ObjectKey::from(entry);
            let gvk = kube::core::GroupVersionKind::gvk(&key.group, &key.version, &key.kind);
            if let Ok(Some((resource, _))) = self.ctx.kinds.resolve(&self.ctx.client, &gvk).await {
                self.ctx.drift.ensure(&resource);
            }
        }
    }

    /// Watches every kind applied (drift), then judges health from the live objects: a
    /// declared health check where one selects the object, else the built-in rules.
    async fn judge_health(
        &self,
        inventory: &[InventoryEntry],
        after_write: &std::collections::HashMap<ObjectKey, DynamicObject>,
        checks: &CompiledChecks,
    ) -> Health {
        let ctx = self.ctx;
        let mut verdicts = Vec::new();
        for entry in inventory {
            let key = ObjectKey::from(entry);
            let gvk = kube::core::GroupVersionKind::gvk(&key.group, &key.version, &key.kind);
            let Ok(Some((resource, _))) = ctx.kinds.resolve(&ctx.client, &gvk).await else {
                continue;
            };
            ctx.drift.ensure(&resource);
            let live = apply_engine::apply::observe(
                &ctx.client,
                Some(&ctx.drift),
                &key,
                &resource,
                after_write,
            )
            .await;
            let verdict = match live {
                Ok(Some(live)) if checks.is_empty() => health::evaluate(&live),
                Ok(Some(live)) => judge(checks, &serde_json::to_value(&live).unwrap_or_default()),
                Ok(None) => Health::Unhealthy("not found".to_owned()),
                Err(err) => Health::Progressing(format!("failed to read: {err}")),
            };
            verdicts.push((key.to_string(), verdict));
        }
        health::aggregate(verdicts)
    }
}
