//! The BundleDeployment controller of rukpak-core: keeps exactly the Bundle of the
//! current template, plus the one still installed until the provisioner moves off it.
//!
//! A pivot, step by step: the template changes; the Bundle `<bd>-<hash>` of the new
//! template is created and unpacked; the provisioner applies it and sets `activeBundle`
//! to it; then every other Bundle of the BundleDeployment is deleted here. Until then the
//! old Bundle (and its objects) stay, so a failed pivot changes nothing on the cluster.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::events::Recorder;
use kube::runtime::watcher;
use kube::{Api, Client, Resource, ResourceExt};
use rukpak_api::labels::{OWNER_KIND, OWNER_NAME, TEMPLATE_HASH};
use rukpak_api::{Bundle, BundleDeployment, bundle_name, template_hash};
use tokio_util::sync::CancellationToken;

use kit::metrics::ReconcileMetrics;
use kit::retry::{Backoff, Classify, Retry};

/// The most Bundles one BundleDeployment may have at once. A template that changes faster
/// than Bundles unpack would otherwise create Bundles without bound.
pub const MAX_GENERATED_BUNDLES: usize = 4;

/// What the controller needs.
pub struct Context {
    client: Client,
    recorder: Recorder,
    metrics: ReconcileMetrics,
    backoff: Backoff,
    selector: Option<String>,
}

impl Context {
    /// The context. With `selector`, only BundleDeployments matching that label selector
    /// are handled.
    pub fn new(client: Client, metrics: ReconcileMetrics, selector: Option<String>) -> Self {
        Self {
            selector,
            recorder: kit::controller::recorder(client.clone(), crate::FIELD_MANAGER),
            client,
            metrics,
            backoff: Backoff::default(),
        }
    }
}

/// A failed reconcile.
#[derive(Debug, thiserror::Error)]
#[error("failed to {verb} for BundleDeployment {deployment}")]
pub struct Error {
    verb: &'static str,
    deployment: String,
    #[source]
    source: kube::Error,
}

impl Classify for Error {
    /// API server failures: worth retrying.
    fn retry(&self) -> Retry {
        Retry::Backoff
    }

    fn label(&self) -> &'static str {
        "kube"
    }
}

/// Runs the controller until `shutdown`.
pub async fn run(
    ctx: Arc<Context>,
    readiness: &kit::admin::Readiness,
    shutdown: CancellationToken,
) {
    let config = kit::watch::config(ctx.selector.as_deref());
    // Every change, status included: the provisioner's `activeBundle` decides which old
    // Bundles may go.
    let controller = kit::watch::on_every_change(
        Api::<BundleDeployment>::all(ctx.client.clone()),
        config,
        readiness,
        "watch:bundledeployments",
    )
    .owns(
        Api::<Bundle>::all(ctx.client.clone()),
        watcher::Config::default().labels(OWNER_NAME),
    )
    .graceful_shutdown_on(shutdown.cancelled_owned());
    controller
        .run(reconcile, error_policy, ctx)
        .inspect(kit::watch::report_controller_failures(
            readiness,
            "watch:bundledeployments",
        ))
        .for_each(|result| async move {
            if let Err(err) = result {
                tracing::debug!(error = %err, "bundledeployment reconcile request failed");
            }
        })
        .await;
}

fn error_policy(deployment: Arc<BundleDeployment>, error: &Error, ctx: Arc<Context>) -> Action {
    kit::controller::retry_after(
        &ctx.backoff,
        "BundleDeployment",
        &deployment.name_any(),
        error,
    )
}

/// The Bundle a BundleDeployment's template asks for.
pub fn desired_bundle(deployment: &BundleDeployment) -> Option<Bundle> {
    let hash = template_hash(&deployment.spec.template);
    let name = deployment.name_any();
    let template_meta = deployment
        .spec
        .template
        .metadata
        .clone()
        .unwrap_or_default();
    let mut labels: BTreeMap<String, String> = template_meta.labels;
    labels.insert(OWNER_KIND.into(), "BundleDeployment".into());
    labels.insert(OWNER_NAME.into(), name.clone());
    labels.insert(TEMPLATE_HASH.into(), hash.clone());
    Some(Bundle {
        metadata: ObjectMeta {
            name: Some(bundle_name(&name, &hash)),
            labels: Some(labels),
            annotations: Some(template_meta.annotations).filter(|a| !a.is_empty()),
            owner_references: Some(vec![deployment.controller_owner_ref(&())?]),
            ..ObjectMeta::default()
        },
        spec: deployment.spec.template.spec.clone(),
        status: None,
    })
}

async fn reconcile(deployment: Arc<BundleDeployment>, ctx: Arc<Context>) -> Result<Action, Error> {
    kit::controller::timed(
        &ctx.metrics,
        "bundledeployment",
        generate_bundle(&deployment, &ctx),
    )
    .await
}

/// Creates the Bundle of the current template and deletes the Bundles nothing needs.
async fn generate_bundle(deployment: &BundleDeployment, ctx: &Context) -> Result<Action, Error> {
    if deployment.meta().deletion_timestamp.is_some() {
        // The Bundles go with it through their owner references.
        return Ok(Action::await_change());
    }
    let name = deployment.name_any();
    let fail = |verb: &'static str| {
        let name = name.clone();
        move |source| Error {
            verb,
            deployment: name,
            source,
        }
    };
    let bundles: Api<Bundle> = Api::all(ctx.client.clone());
    let Some(desired) = desired_bundle(deployment) else {
        // No uid yet: a watch event will follow.
        return Ok(Action::await_change());
    };
    let desired_name = desired.name_any();
    let owned = bundles
        .list(&ListParams::default().labels(&format!("{OWNER_NAME}={name}")))
        .await
        .map_err(fail("list Bundles"))?
        .items;
    let active = deployment
        .status
        .as_ref()
        .and_then(|s| s.active_bundle.clone());

    if !owned.iter().any(|b| b.name_any() == desired_name) {
        let others = owned
            .iter()
            .filter(|b| Some(b.name_any()) != active)
            .count();
        if others >= MAX_GENERATED_BUNDLES {
            ctx.event(deployment, "TooManyBundles", format!(
                "{} Bundles are waiting to be installed; not creating {desired_name} until the provisioner catches up",
                others
            )).await;
            return Ok(Action::requeue(std::time::Duration::from_secs(30)));
        }
        match bundles.create(&PostParams::default(), &desired).await {
            Ok(_) => {}
            // Created by a concurrent reconcile or a previous run: fine.
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(source) => {
                return Err(Error {
                    verb: "create Bundle",
                    deployment: name,
                    source,
                });
            }
        }
    }

    // Once the provisioner runs the desired Bundle, nothing else is needed; before that,
    // only the active Bundle (what runs now) is kept besides the desired one.
    for bundle in owned {
        let bundle_name = bundle.name_any();
        let keep = bundle_name == desired_name || Some(&bundle_name) == active.as_ref();
        if keep || bundle.meta().deletion_timestamp.is_some() {
            continue;
        }
        match bundles
            .delete(&bundle_name, &DeleteParams::background())
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(source) => {
                return Err(Error {
                    verb: "delete an old Bundle",
                    deployment: name,
                    source,
                });
            }
        }
    }
    ctx.backoff.reset(&name);
    Ok(Action::await_change())
}

impl Context {
    async fn event(&self, deployment: &BundleDeployment, reason: &str, note: String) {
        kit::events::publish(
            &self.recorder,
            &deployment.object_ref(&()),
            true,
            reason,
            "Pivot",
            note,
        )
        .await;
    }
}
