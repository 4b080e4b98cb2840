//! Writing an apply: dry runs first, then the foundations (namespaces, CRDs), then the
//! rest in phases, pruning what left the bundle, and undoing what this apply created when
//! it fails before its end.

use crate::object::ObjectKey;
use crate::phase::{ApplyStep, Phase, is_crd, phase_of, sort_for_apply, sort_for_delete};
use kube::api::{DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use rukpak_api::InventoryEntry;
use std::collections::{HashMap, HashSet};

use super::*;

impl Applier {
    /// Removes the objects a refused apply created (newest first), sparing what the
    /// previous revision recorded. Best effort: what cannot be removed now is logged (and
    /// stays this BundleDeployment's, so deleting it removes them).
    pub(super) async fn undo_created(&self, request: &ApplyRequest, created: &[ObjectKey]) {
        let recorded: Vec<ObjectKey> = request
            .previous_inventory
            .iter()
            .map(ObjectKey::from)
            .collect();
        let mut undo: Vec<&ObjectKey> = created
            .iter()
            .filter(|key| !recorded.iter().any(|r| r.same_object(key)))
            .collect();
        sort_for_delete(&mut undo, |k| k);
        for key in undo {
            match self.remove(&request.owner, key).await {
                Ok(Removal::Kept(reason)) => {
                    tracing::warn!(bundle_deployment = %request.owner, object = %key, %reason, "kept an object of a refused install");
                }
                Ok(_) => {
                    tracing::info!(bundle_deployment = %request.owner, object = %key, "removed an object of a refused install");
                }
                Err(err) => {
                    tracing::warn!(bundle_deployment = %request.owner, object = %key, error = %kit::error_chain(&err), "failed to remove an object of a refused install");
                }
            }
        }
    }

    pub(super) async fn apply_into(
        &self,
        request: &ApplyRequest,
        report: &mut ApplyReport,
    ) -> Result<(), ApplyError> {
        self.report(ApplyStep::Checking {
            objects: request.objects.len(),
        });
        let (ready, deferred, mut skipped) = self.resolve_objects(request).await?;
        let live = self.read_live(&ready, request).await?;
        let plan = preflight(
            &request.owner,
            self.author.as_deref(),
            request.collision_protection,
            ready,
            &live,
        )?;

        // A refusal (forbidden to the impersonated account, invalid) stops the install before
        // the first real write. Objects in namespaces this bundle creates can only be tried
        // once those exist, right after the foundations.
        let params = PatchParams::apply(&Self::field_manager(&request.owner)).force();
        let dry_run = PatchParams {
            dry_run: true,
            ..params.clone()
        };
        // The object written first is not dry-run: the API server refuses its real write as
        // it would refuse the dry run, and nothing has been written before it.
        let first_write = plan
            .foundations
            .iter()
            .find(|r| needs_write(r, live.get(&r.key)))
            .map(|r| &r.key);
        for item in plan
            .dry_run_first(&live)
            .filter(|r| Some(&r.key) != first_write)
        {
            self.patch(item, &dry_run).await?;
        }

        self.write_foundations(&plan, &live, &params, report)
            .await?;
        // Custom resources of the bundle's own CRDs resolve now that those are served.
        let (late, late_skipped) = self.resolve_deferred(request, deferred).await?;
        skipped.extend(late_skipped);
        // Objects that could not be dry-run before the foundations existed: those in the
        // namespaces just created and the custom resources of the CRDs just established.
        let second_batch: HashSet<ObjectKey> = plan
            .rest
            .iter()
            .filter(|r| plan.in_new_namespace(r))
            .chain(late.iter())
            .map(|r| r.key.clone())
            .collect();
        let mut rest = plan.rest;
        rest.extend(late);
        sort_for_apply(&mut rest, |r| &r.key);
        let mut applied: Vec<ObjectKey> = plan
            .foundations
            .iter()
            .chain(rest.iter())
            .map(|r| r.key.clone())
            .collect();
        sort_for_apply(&mut applied, |k| k);
        // As above, the object written next needs no dry run, unless webhooks are removed
        // before it is written.
        let next_write = if admission_prunes(request, &applied) {
            None
        } else {
            first_rest_write(&rest, &live)
        };
        for item in rest
            .iter()
            .filter(|r| second_batch.contains(&r.key) && Some(&r.key) != next_write)
        {
            self.patch(item, &dry_run).await?;
        }

        // Webhooks leaving the bundle go before the workloads change under them, and new
        // or changed ones only once their servers are ready.
        self.prune_where(request, &applied, report, |key| {
            phase_of(key) == Phase::Admission
        })
        .await?;
        // Each later phase waits until the probed objects before it (workloads rolled out,
        // objects a declared health check selects) pass; until then the apply stops here,
        // keeps what it wrote in the inventory, prunes nothing, and goes on next time.
        let mut written: Vec<&Resolved> = plan.foundations.iter().collect();
        for phase in [Phase::Configuration, Phase::Workloads, Phase::Admission] {
            let items: Vec<&Resolved> = rest.iter().filter(|r| phase_of(&r.key) == phase).collect();
            if items.is_empty() {
                continue;
            }
            let unchanged = items
                .iter()
                .all(|item| !needs_write(item, live.get(&item.key)));
            if !(request.installed_already && unchanged)
                && let Some(wait) = self
                    .gate(phase, &written, &report.after_write, &request.health_checks)
                    .await?
            {
                report.inventory = inventory_while_waiting(&written, &request.previous_inventory);
                sort_for_apply(&mut skipped, |k| k);
                report.skipped = skipped;
                report.waiting = Some(wait);
                return Ok(());
            }
            if phase == Phase::Admission
                && items
                    .iter()
                    .any(|item| needs_write(item, live.get(&item.key)))
            {
                let admission: Vec<&Resolved> = items.clone();
                self.wait_for_backends(&admission, &written).await?;
            }
            self.write_in_phases(&items, &live, &params, report).await?;
            written.extend(items);
        }

        report.inventory = applied.iter().map(InventoryEntry::from).collect();
        self.prune_where(request, &applied, report, |_| true)
            .await?;
        sort_for_apply(&mut skipped, |k| k);
        report.skipped = skipped;
        Ok(())
    }

    /// Writes the namespaces and CRDs, then waits until those CRDs are established.
    pub(super) async fn write_foundations(
        &self,
        plan: &Plan,
        live: &HashMap<ObjectKey, DynamicObject>,
        params: &PatchParams,
        report: &mut ApplyReport,
    ) -> Result<(), ApplyError> {
        if !plan.foundations.is_empty() {
            self.report(ApplyStep::Writing {
                phase: Phase::Foundations,
                objects: plan.foundations.len(),
            });
        }
        for item in &plan.foundations {
            self.write(item, live.get(&item.key), params, report)
                .await?;
        }
        let crds = plan.foundations.iter().filter(|r| is_crd(&r.key)).count();
        if crds > 0 {
            self.report(ApplyStep::WaitingForCrds { crds });
        }
        for item in plan.foundations.iter().filter(|r| is_crd(&r.key)) {
            // A CRD this apply did not change and that was established when read needs no
            // look: most reconciles of an installed bundle.
            let unchanged = !report.written.contains(&item.key);
            if unchanged
                && live
                    .get(&item.key)
                    .is_some_and(|crd| has_true_condition(&crd.data, "Established"))
            {
                continue;
            }
            self.wait_established(&item.key.name).await?;
        }
        Ok(())
    }

    /// Writes `rest` (in apply order), reporting each phase as it starts.
    pub(super) async fn write_in_phases(
        &self,
        rest: &[&Resolved],
        live: &HashMap<ObjectKey, DynamicObject>,
        params: &PatchParams,
        report: &mut ApplyReport,
    ) -> Result<(), ApplyError> {
        let mut phase = None;
        for item in rest {
            let this = phase_of(&item.key);
            if phase != Some(this) {
                phase = Some(this);
                self.report(ApplyStep::Writing {
                    phase: this,
                    objects: rest.iter().filter(|r| phase_of(&r.key) == this).count(),
                });
            }
            self.write(item, live.get(&item.key), params, report)
                .await?;
        }
        Ok(())
    }

    /// Removes what the previous bundle had and `applied` does not (see [`stale`]), of the
    /// objects `which` selects.
    pub(super) async fn prune_where(
        &self,
        request: &ApplyRequest,
        applied: &[ObjectKey],
        report: &mut ApplyReport,
        which: impl Fn(&ObjectKey) -> bool,
    ) -> Result<(), ApplyError> {
        let stale = stale_where(request, applied, &report.pruned, which);
        if !stale.is_empty() {
            self.report(ApplyStep::Pruning {
                objects: stale.len(),
            });
        }
        for key in stale {
            match self.remove(&request.owner, &key).await? {
                Removal::Deleted => report.pruned.push(key),
                Removal::Kept(reason) => report.kept.push((key, reason)),
                Removal::Gone => {}
            }
        }
        Ok(())
    }

    /// Patches one object unless the live copy already holds every desired field.
    pub(super) async fn write(
        &self,
        item: &Resolved,
        live: Option<&DynamicObject>,
        params: &PatchParams,
        report: &mut ApplyReport,
    ) -> Result<(), ApplyError> {
        if !needs_write(item, live) {
            return Ok(());
        }
        let written = self.patch(item, params).await?;
        if let Some(watches) = &self.watches {
            watches.wrote(&item.resource, &written);
        }
        if live.is_none() {
            report.created.push(item.key.clone());
        }
        report.written.push(item.key.clone());
        report.after_write.insert(item.key.clone(), written);
        Ok(())
    }

    /// Server-side applies one object (with `params`, which may be a dry run); the object
    /// as the API server returned it.
    pub(super) async fn patch(
        &self,
        item: &Resolved,
        params: &PatchParams,
    ) -> Result<DynamicObject, ApplyError> {
        self.api(&item.resource, item.key.namespace.as_deref())
            .patch(&item.key.name, params, &Patch::Apply(&item.object))
            .await
            .map_err(|source| {
                // The kind may have stopped being served since discovery was cached.
                if is_not_found(&source) {
                    self.kinds.forget(&GroupVersionKind::gvk(
                        &item.key.group,
                        &item.key.version,
                        &item.key.kind,
                    ));
                }
                ApplyError::Apply {
                    object: item.key.clone(),
                    source,
                }
            })
    }
}
