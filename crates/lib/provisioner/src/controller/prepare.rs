//! What reviewing and applying a revision both start with: the Bundle's content loaded
//! (from memory when it was read before), the format's plan for it, and the install
//! namespace to manage.

use std::sync::Arc;

use kube::api::DynamicObject;
use kube::{Api, ResourceExt};
use rukpak_api::conditions::{TYPE_UNPACKED, reasons::UNPACK_FAILED};
use rukpak_api::{Bundle, BundlePhase};

use apply_engine::object::ObjectKey;
use kit::kube_error::KubeCallError;

use super::install::Reconcile;
use super::{Context, Error};
use crate::format::{BundleFormat, Plan};
use crate::status::Outcome;

/// The objects of a revision, ready for the applier.
pub(super) struct Prepared {
    /// The format's objects, with the install namespace first when it is managed.
    pub objects: Vec<DynamicObject>,
    /// The install namespace, if any.
    pub install_namespace: Option<String>,
    /// Objects known not to exist yet (a namespace about to be created).
    pub absent: Vec<ObjectKey>,
    /// What the format changed so the bundle installs safely.
    pub adjustments: Vec<String>,
}

/// Why a revision could not be prepared.
pub(super) enum PrepareError {
    /// The content could not be read (the store, a digest): worth retrying.
    Load(String),
    /// The format refused the content: it will refuse it again.
    Plan(String),
    /// Reading the install namespace failed.
    Kube(Error),
}

impl std::fmt::Display for PrepareError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Load(message) | Self::Plan(message) => f.write_str(message),
            Self::Kube(err) => f.write_str(&kit::error_chain(err)),
        }
    }
}

impl<F: BundleFormat> Reconcile<'_, F> {
    /// Loads the unpacked Bundle `found`, asks the format for its plan, and adds the
    /// install namespace when this BundleDeployment manages it.
    pub(super) async fn prepare(&self, found: &Bundle) -> Result<Prepared, PrepareError> {
        let bundle = found.name_any();
        let content_ref = unpacked_content(&bundle, found.status.as_ref())
            .map_err(|_| PrepareError::Load("the Bundle is not unpacked".to_owned()))?;
        let files = load(self.ctx, &content_ref)
            .await
            .map_err(PrepareError::Load)?;
        let Plan {
            mut objects,
            install_namespace,
            adjustments,
        } = self
            .ctx
            .format
            .plan(&files, self.deployment, self.class_parameters)
            .map_err(PrepareError::Plan)?;
        let mut absent = Vec::new();
        if let Some((namespace, missing)) = self
            .install_namespace_to_manage(install_namespace.as_deref(), &objects)
            .await
            .map_err(PrepareError::Kube)?
        {
            if missing {
                absent.push(ObjectKey::of(&namespace));
            }
            objects.insert(0, namespace);
        }
        Ok(Prepared {
            objects,
            install_namespace,
            absent,
            adjustments,
        })
    }

    /// The Namespace object to add for the install namespace (`spec.installNamespace`, or
    /// the format's [`Plan::install_namespace`]), and whether it is missing: when it is
    /// missing, or was created by this BundleDeployment before, it is managed like the
    /// bundle's own objects (and so removed with them, unless it holds anything else). An
    /// existing namespace of someone else's is used as it is and never claimed.
    async fn install_namespace_to_manage(
        &self,
        install_namespace: Option<&str>,
        objects: &[DynamicObject],
    ) -> Result<Option<(DynamicObject, bool)>, Error> {
        let Some(name) = install_namespace else {
            return Ok(None);
        };
        let in_bundle = objects.iter().any(|o| {
            o.types
                .as_ref()
                .is_some_and(|t| t.api_version == "v1" && t.kind == "Namespace")
                && o.metadata.name.as_deref() == Some(name)
        });
        if in_bundle {
            return Ok(None);
        }
        let owner = self.deployment.name_any();
        let ours = |labels: Option<&std::collections::BTreeMap<String, String>>| {
            apply_engine::object::owning_bundle_deployment(labels) == Some(owner.as_str())
        };
        let namespace = serde_json::json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": name } });
        // The drift watch of Namespaces holds the ones BundleDeployments manage: one this
        // BundleDeployment manages needs no read.
        let resource = kube::api::ApiResource::erase::<k8s_openapi::api::core::v1::Namespace>(&());
        if self
            .ctx
            .drift
            .cached(&resource, None, name)
            .is_some_and(|ns| ours(ns.metadata.labels.as_ref()))
        {
            return Ok(serde_json::from_value(namespace).ok().map(|ns| (ns, false)));
        }
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> =
            Api::all(self.ctx.client.clone());
        let existing = namespaces
            .get_opt(name)
            .await
            .map_err(|source| KubeCallError::new("read", format!("Namespace {name}"), source))?;
        if !existing
            .as_ref()
            .is_none_or(|ns| ours(ns.metadata.labels.as_ref()))
        {
            return Ok(None);
        }
        let missing = existing.is_none();
        Ok(serde_json::from_value(namespace)
            .ok()
            .map(|ns| (ns, missing)))
    }
}

/// The content of the Bundle `bundle` (with `status`), or the outcome that says why there
/// is none yet. Pure.
pub(super) fn unpacked_content(
    bundle: &str,
    status: Option<&rukpak_api::BundleStatus>,
) -> Result<rukpak_api::ContentRef, Box<Outcome>> {
    let status = status.cloned().unwrap_or_default();
    let unpacked = kit::conditions::find(&status.conditions, TYPE_UNPACKED);
    status
        .content
        .clone()
        .filter(|_| status.phase == Some(BundlePhase::Unpacked))
        .ok_or_else(|| {
            Box::new(Outcome::BundleNotUnpacked {
                failed: unpacked.is_some_and(|c| c.reason == UNPACK_FAILED),
                message: unpacked
                    .map(|c| c.message.clone())
                    .unwrap_or_else(|| "unpacking has not started".to_owned()),
                bundle: bundle.to_owned(),
            })
        })
}

/// Reads and verifies the Bundle's content; the error is a message for the user.
async fn load<F: BundleFormat>(
    ctx: &Context<F>,
    content_ref: &rukpak_api::ContentRef,
) -> Result<Arc<content::FileMap>, String> {
    if let Some(files) = ctx.contents.get(&content_ref.digest) {
        return Ok(files);
    }
    let digest: content::Digest = content_ref
        .digest
        .parse()
        .map_err(|err| format!("invalid content digest {}: {err}", content_ref.digest))?;
    let content = ctx
        .store
        .read(&digest)
        .await
        .map_err(|err| kit::error_chain(&err))?;
    let files = content
        .files(&ctx.settings.limits)
        .map_err(|err| kit::error_chain(&err))?;
    Ok(ctx.contents.insert(&content_ref.digest, files))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(value: serde_json::Value) -> rukpak_api::BundleStatus {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn only_an_unpacked_bundle_has_content_and_otherwise_its_own_message_is_shown() {
        let unpacked = status(serde_json::json!({
            "phase": "Unpacked",
            "content": { "digest": format!("sha256:{}", "0".repeat(64)), "size": 1, "chunks": 1 }
        }));
        assert!(unpacked_content("b", Some(&unpacked)).is_ok());

        let failing = status(serde_json::json!({
            "phase": "Failing",
            "conditions": [{ "type": "Unpacked", "status": "False", "reason": "UnpackFailed",
                "message": "refused to connect", "lastTransitionTime": "2026-01-01T00:00:00Z" }]
        }));
        assert_eq!(
            *unpacked_content("b", Some(&failing)).unwrap_err(),
            Outcome::BundleNotUnpacked {
                bundle: "b".into(),
                failed: true,
                message: "refused to connect".into()
            }
        );
        assert_eq!(
            *unpacked_content("b", None).unwrap_err(),
            Outcome::BundleNotUnpacked {
                bundle: "b".into(),
                failed: false,
                message: "unpacking has not started".into()
            }
        );
    }
}
