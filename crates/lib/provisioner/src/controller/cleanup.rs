//! Deletion of a BundleDeployment, behind its finalizer: its objects are removed (user
//! data kept), or released in place with `deletionPolicy: Orphan`.

use kube::ResourceExt;
use kube::runtime::controller::Action;
use rukpak_api::{BundleDeployment, DeletionPolicy};

use apply_engine::apply::Applier;

use super::{Context, Error};
use crate::format::BundleFormat;

/// Removes (or, with `deletionPolicy: Orphan`, releases) every object of `deployment`'s
/// inventory, as the provisioner: a ServiceAccount that lost its rights must not strand
/// objects.
pub(super) async fn cleanup<F: BundleFormat>(
    deployment: &BundleDeployment,
    ctx: &Context<F>,
) -> Result<Action, Error> {
    let name = deployment.name_any();
    let inventory = deployment.status.clone().unwrap_or_default().inventory;
    // Deletion uses the provisioner's identity: a ServiceAccount that lost its rights must
    // not strand objects.
    let applier = Applier::new(ctx.client.clone(), ctx.kinds.clone());
    if deployment.spec.deletion_policy == DeletionPolicy::Orphan {
        let released = applier
            .release_all(&name, &inventory)
            .await
            .map_err(|err| Error::Cleanup(name.clone(), Box::new(err)))?;
        if !released.is_empty() {
            ctx.event(
                deployment,
                false,
                "Orphaned",
                format!(
                    "deletionPolicy is Orphan: left {} object(s) in place without ownership labels",
                    released.len()
                ),
            )
            .await;
        }
        ctx.backoff.reset(&name);
        return Ok(Action::await_change());
    }
    let report = applier
        .delete_all(&name, &inventory)
        .await
        .map_err(|err| Error::Cleanup(name.clone(), Box::new(err)))?;
    for (key, reason) in &report.orphaned {
        ctx.event(
            deployment,
            true,
            "Orphaned",
            format!("left {key} in place: {reason}"),
        )
        .await;
    }
    ctx.backoff.reset(&name);
    Ok(Action::await_change())
}
