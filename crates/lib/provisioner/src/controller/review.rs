//! The review of a revision that waits for approval (`spec.upgradePolicy: Manual`): what
//! applying it would change, worked out with dry runs, nothing written.

use std::sync::Arc;

use kube::ResourceExt;
use rukpak_api::{Bundle, PendingRevision};

use apply_engine::apply::ApplyRequest;
use apply_engine::object::ObjectKey;
use apply_engine::review::{Proposed, changes};
use health::checks::CompiledChecks;

use super::install::Reconcile;
use super::prepare::Prepared;
use crate::format::BundleFormat;

/// What applying the revision `pending` (the unpacked Bundle `bundle`, content `digest`)
/// would change, for an administrator to approve: objects added, changed and removed,
/// RBAC permissions granted, and writes the API server refuses in a dry run. Nothing is
/// written. A failure to compute it is shown as a refusal, so it is never approved blind.
pub(super) async fn pending<F: BundleFormat>(
    reconcile: &Reconcile<'_, F>,
    bundle: &Bundle,
    pending: &str,
    digest: &str,
    checks: &Arc<CompiledChecks>,
) -> PendingRevision {
    let revision = crate::revisions::revision_of(bundle);
    let current = reconcile.current;
    let reviewed = async {
        let Prepared {
            objects,
            install_namespace,
            absent,
            adjustments: _,
        } = reconcile
            .prepare(bundle)
            .await
            .map_err(|err| err.to_string())?;
        let (applier, _warnings) = reconcile
            .ctx
            .applier_for(reconcile.deployment)
            .await
            .map_err(|err| kit::error_chain(&err))?;
        applier
            .review(&ApplyRequest {
                owner: reconcile.deployment.name_any(),
                objects,
                install_namespace,
                collision_protection: reconcile.deployment.spec.collision_protection,
                previous_inventory: current.inventory.clone(),
                health_checks: checks.clone(),
                absent,
                installed_already: false,
            })
            .await
            .map_err(|err| kit::error_chain(&err))
    };
    match reviewed.await {
        Ok(review) => {
            let proposed: Vec<Proposed<'_>> = review
                .objects
                .iter()
                .map(|o| Proposed {
                    key: o.key.clone(),
                    desired: &o.desired,
                    live: o.live.as_ref(),
                    differs: o.differs,
                })
                .collect();
            let previous: Vec<ObjectKey> = current.inventory.iter().map(ObjectKey::from).collect();
            changes(&proposed, &previous).into_pending(revision, pending, digest, review.refused)
        }
        Err(message) => PendingRevision {
            revision,
            bundle: pending.to_owned(),
            digest: digest.to_owned(),
            refused: vec![format!(
                "the changes could not be worked out, so this revision cannot be reviewed: {message}"
            )],
            ..Default::default()
        },
    }
}
