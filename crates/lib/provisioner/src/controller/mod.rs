//! The BundleDeployment controller every provisioner runs, generic over its
//! [`BundleFormat`]. Each reconcile has one shape (see [`reconcile`]):
//!
//! 1. read what the watches hold (the class, the BundleDeployment's Bundles);
//! 2. decide, pure, which revision to apply ([`crate::revisions::choose`]);
//! 3. write: review a pending revision, or load, plan and apply one ([`install`]);
//! 4. status, pure, from the outcome ([`crate::status::next_status`]), written once when it
//!    changed, with an Event for each condition that changed;
//! 5. the next action, pure, from the outcome ([`reconcile::next_action`]).
//!
//! Deletion runs [`cleanup`] behind the [`FINALIZER`].

mod cleanup;
mod context;
mod install;
mod prepare;
mod reconcile;
mod review;

pub use context::{Context, Error, Settings};

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource, ResourceExt};
use rukpak_api::conditions::TYPE_UNPACKED;
use rukpak_api::labels::OWNER_NAME;
use rukpak_api::{Bundle, BundleDeployment, ProvisionerClass};
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;

use kit::admin::Readiness;

use crate::format::BundleFormat;
use crate::identity;

/// Finalizer on every BundleDeployment a provisioner manages: its objects are removed
/// (keeping user data) before the BundleDeployment goes.
pub const FINALIZER: &str = "core.rukpak.io/delete-objects";

/// Runs the controller until `shutdown`.
///
/// What a reconcile reads it reads from memory where a watch keeps it: ProvisionerClasses,
/// the Bundles of BundleDeployments, the objects applied (see [`apply_engine::drift`]) and
/// unpacked content (see [`crate::content_cache`]). Its triggers are the changes that can
/// change what it does: what an author wrote on the BundleDeployment, the unpacking of its
/// Bundle, and changes to the applied objects that are not this process's own writes;
/// triggers within [`Settings::debounce`] of each other make one reconcile.
pub async fn run<F: BundleFormat>(
    ctx: Arc<Context<F>>,
    requests: tokio::sync::mpsc::Receiver<ObjectRef<BundleDeployment>>,
    readiness: &Readiness,
    shutdown: CancellationToken,
) {
    let writers = ctx
        .writers
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    let Some((class_writer, bundle_writer)) = writers else {
        tracing::error!("the BundleDeployment controller of this context runs already");
        return;
    };
    tokio::spawn(identity::publish(
        ctx.client.clone(),
        ctx.format.provisioner_id().to_owned(),
        ctx.settings.default_service_account.clone(),
        ctx.settings.identity_namespace.clone(),
        shutdown.clone(),
    ));
    let classes = kit::watch::cached(
        Api::<ProvisionerClass>::all(ctx.client.clone()),
        watcher::Config::default(),
        class_writer,
        readiness,
        "watch:provisionerclasses",
    )
    .touched_objects();
    let (class_requests, from_classes) = tokio::sync::mpsc::channel(1024);
    let bundles = kit::watch::cached(
        Api::<Bundle>::all(ctx.client.clone()),
        watcher::Config::default().labels(OWNER_NAME),
        bundle_writer,
        readiness,
        "watch:bundles",
    )
    .touched_objects()
    .predicate_filter(unpack_progress, Default::default());
    let (bundle_requests, from_bundles) = tokio::sync::mpsc::channel(1024);
    tokio::spawn(kit::watch::forward(
        bundles,
        |bundle: &Bundle| {
            bundle
                .labels()
                .get(OWNER_NAME)
                .map(|owner| ObjectRef::new(owner))
        },
        bundle_requests,
        shutdown.clone(),
    ));

    let deployments: Api<BundleDeployment> = Api::all(ctx.client.clone());
    let config = kit::watch::config(ctx.settings.selector.as_deref());
    let controller = kit::watch::on_spec_changes_except_finalizers(
        deployments,
        config,
        readiness,
        "watch:bundledeployments",
    )
    .with_config(
        kube::runtime::controller::Config::default()
            .concurrency(ctx.settings.concurrency)
            .debounce(ctx.settings.debounce),
    );
    // A class appearing or changing (its provisioner, its parameters) concerns the
    // BundleDeployments that name it.
    let of_class = controller.store();
    tokio::spawn(kit::watch::forward(
        classes,
        move |class: &ProvisionerClass| {
            let name = class.name_any();
            of_class
                .state()
                .iter()
                .filter(|d| d.spec.provisioner_class_name == name)
                .map(|d| ObjectRef::from_obj(d.as_ref()))
                .collect::<Vec<_>>()
        },
        class_requests,
        shutdown.clone(),
    ));
    // A CRD appearing (or becoming Established) may serve a kind an optional object waits
    // for: reconcile the BundleDeployments that skipped one of its group. Metadata only: the
    // group is in the CRD's name, and whole CRDs can be megabytes each.
    let store = controller.store();
    let crds = watcher(
        Api::<PartialObjectMeta<CustomResourceDefinition>>::all(ctx.client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .touched_objects();
    let controller = controller
        .watches_stream(crds, move |crd| {
            waiting_for_group(&store.state(), crd_group(&crd.name_any()))
        })
        .reconcile_on(futures::stream::select(
            ReceiverStream::new(requests),
            futures::stream::select(
                ReceiverStream::new(from_bundles),
                ReceiverStream::new(from_classes),
            ),
        ))
        .graceful_shutdown_on(shutdown.cancelled_owned());
    controller
        .run(reconcile::reconcile, reconcile::error_policy, ctx)
        .for_each(|result| async move {
            if let Err(err) = result {
                tracing::debug!(error = %err, "reconcile request failed");
            }
        })
        .await;
}

/// A predicate (for `predicate_filter`) on a Bundle that changes when what its
/// BundleDeployment reads of it does: which Bundle it is, its spec, whether it is being
/// deleted, its phase and content, and its `Unpacked` condition (shown while it unpacks or
/// fails). Not `revisionOutcome`, which the provisioner writes itself. Pure.
fn unpack_progress(bundle: &Bundle) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let meta = bundle.meta();
    meta.uid.hash(&mut hasher);
    meta.generation.hash(&mut hasher);
    meta.deletion_timestamp.is_some().hash(&mut hasher);
    if let Some(status) = &bundle.status {
        status.phase.map(|p| p as u8).hash(&mut hasher);
        status.content.as_ref().map(|c| &c.digest).hash(&mut hasher);
        if let Some(unpacked) = kit::conditions::find(&status.conditions, TYPE_UNPACKED) {
            (&unpacked.status, &unpacked.reason, &unpacked.message).hash(&mut hasher);
        }
    }
    Some(hasher.finish())
}

/// The API group a CRD defines: its name is `<plural>.<group>`. Pure.
fn crd_group(name: &str) -> &str {
    name.split_once('.').map_or("", |(_, group)| group)
}

/// The BundleDeployments that skipped an optional object of `group`. Pure.
fn waiting_for_group(
    deployments: &[Arc<BundleDeployment>],
    group: &str,
) -> Vec<kube::runtime::reflector::ObjectRef<BundleDeployment>> {
    deployments
        .iter()
        .filter(|d| {
            d.status
                .as_ref()
                .is_some_and(|s| s.skipped.iter().any(|e| e.group == group))
        })
        .map(|d| kube::runtime::reflector::ObjectRef::from_obj(d.as_ref()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crd_wakes_the_deployments_that_skipped_a_kind_of_its_group() {
        let deployment = |name: &str, skipped_group: Option<&str>| {
            let mut value = serde_json::json!({
                "apiVersion": "core.rukpak.io/v1alpha1", "kind": "BundleDeployment",
                "metadata": {"name": name},
                "spec": {"provisionerClassName": "p", "template": {"spec": {
                    "provisionerClassName": "p", "source": {"type": "image", "image": {"ref": "r"}}}}},
            });
            if let Some(group) = skipped_group {
                value["status"] = serde_json::json!({"skipped": [{"group": group, "version": "v1",
                    "kind": "ServiceMonitor", "namespace": "ns", "name": "m"}]});
            }
            Arc::new(serde_json::from_value::<BundleDeployment>(value).unwrap())
        };
        let all = vec![
            deployment("monitored", Some("monitoring.coreos.com")),
            deployment("plain", None),
            deployment("other", Some("example.com")),
        ];
        assert_eq!(
            crd_group("servicemonitors.monitoring.coreos.com"),
            "monitoring.coreos.com"
        );
        let woken: Vec<String> =
            waiting_for_group(&all, crd_group("servicemonitors.monitoring.coreos.com"))
                .into_iter()
                .map(|r| r.name)
                .collect();
        assert_eq!(woken, ["monitored"]);
        assert!(waiting_for_group(&all, crd_group("widgets.unrelated.io")).is_empty());
    }
}
