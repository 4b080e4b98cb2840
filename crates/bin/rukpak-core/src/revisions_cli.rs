//! The `plan` and `rollback` commands: a BundleDeployment's revisions, from a terminal.
//!
//! - `plan BD` prints the revision waiting for approval and what it would change, as the
//!   provisioner reviewed it (objects added, changed and removed, RBAC permissions granted,
//!   writes refused in a server-side dry run), and the command that approves it;
//! - `rollback BD [--to-revision N]` points the BundleDeployment's template back at an
//!   earlier revision's. The template of a revision is its Bundle's own (spec, labels and
//!   annotations), so the existing Bundle is used again with its stored content: nothing
//!   is fetched.

use kube::api::PostParams;
use kube::{Api, Client, ResourceExt};
use rukpak_api::labels::{OWNER_KIND, OWNER_NAME, REVISION, TEMPLATE_HASH};
use rukpak_api::{
    Bundle, BundleDeployment, BundleTemplate, RevisionOutcome, TemplateMetadata, template_hash,
};

use crate::deployment_bundles::revision_of;

/// The text `plan` prints for `deployment`.
pub fn plan_text(deployment: &BundleDeployment) -> String {
    let name = deployment.name_any();
    match deployment
        .status
        .as_ref()
        .and_then(|s| s.pending_revision.as_ref())
    {
        Some(pending) => apply_engine::review::render(&name, pending),
        None => format!(
            "BundleDeployment {name} has no revision waiting for approval (upgradeApproval: {:?}).\n",
            deployment.spec.upgrade_approval
        ),
    }
}

/// The template that makes `bundle` again: its spec, and its labels and annotations without
/// the ones rukpak-core adds. Refused when the result would not hash to the Bundle's own
/// template hash (the Bundle was not made from a template, or was edited since), since
/// another Bundle would then be created and unpacked.
pub fn template_of(bundle: &Bundle) -> Result<BundleTemplate, String> {
    let name = bundle.name_any();
    let mut labels = bundle.labels().clone();
    let expected = labels
        .remove(TEMPLATE_HASH)
        .ok_or_else(|| format!("Bundle {name} was not generated from a template"))?;
    for ours in [OWNER_KIND, OWNER_NAME, REVISION] {
        labels.remove(ours);
    }
    let annotations = bundle.annotations().clone();
    let metadata = TemplateMetadata {
        labels,
        annotations,
    };
    let template = BundleTemplate {
        metadata: (metadata != TemplateMetadata::default()).then_some(metadata),
        spec: bundle.spec.clone(),
    };
    if template_hash(&template) != expected {
        return Err(format!(
            "Bundle {name} no longer matches the template it was made from; roll back by editing spec.template instead"
        ));
    }
    Ok(template)
}

/// The Bundle to roll back to: revision `to` when given, else the newest revision before
/// the active one that was healthy once. Pure.
pub fn rollback_target(
    deployment: &BundleDeployment,
    bundles: &[Bundle],
    to: Option<i64>,
) -> Result<Bundle, String> {
    let name = deployment.name_any();
    let status = deployment.status.clone().unwrap_or_default();
    let active = status.active_bundle.clone().unwrap_or_default();
    let chosen = match to {
        Some(revision) => bundles.iter().find(|b| revision_of(b) == Some(revision)),
        None => {
            let active_revision = bundles
                .iter()
                .find(|b| b.name_any() == active)
                .and_then(revision_of)
                .unwrap_or(i64::MAX);
            let mut earlier: Vec<&Bundle> = bundles
                .iter()
                .filter(|b| b.name_any() != active)
                .filter(|b| revision_of(b).is_some_and(|r| r < active_revision))
                .filter(|b| {
                    status
                        .revisions
                        .iter()
                        .any(|r| r.bundle == b.name_any() && r.last_healthy.is_some())
                })
                .collect();
            earlier.sort_by_key(|b| revision_of(b));
            earlier.pop()
        }
    };
    let available: Vec<String> = bundles
        .iter()
        .filter_map(|b| {
            let outcome = b
                .status
                .as_ref()
                .and_then(|s| s.revision_outcome)
                .map_or("not applied", RevisionOutcome::as_str);
            Some(format!("{} ({outcome})", revision_of(b)?))
        })
        .collect();
    chosen.cloned().ok_or_else(|| match to {
        Some(revision) => format!(
            "BundleDeployment {name} has no revision {revision} to roll back to; kept revisions: {}",
            available.join(", ")
        ),
        None => format!(
            "BundleDeployment {name} has no earlier healthy revision to roll back to; kept revisions: {}",
            available.join(", ")
        ),
    })
}

/// Rolls `deployment` back (see the module docs); returns what was done, as a sentence.
pub async fn rollback(
    client: &Client,
    deployment: &str,
    to: Option<i64>,
) -> Result<String, String> {
    let deployments: Api<BundleDeployment> = Api::all(client.clone());
    let found = deployments
        .get_opt(deployment)
        .await
        .map_err(|e| kit::error_chain(&e))?
        .ok_or_else(|| format!("BundleDeployment {deployment} not found"))?;
    if let Some(owner) = found.labels().get(OWNER_NAME) {
        return Err(format!(
            "BundleDeployment {deployment} is managed by BundleDeployment {owner}, which would undo the rollback; roll back {owner} (or what owns it) instead"
        ));
    }
    let bundles: Vec<Bundle> = Api::<Bundle>::all(client.clone())
        .list(&kube::api::ListParams::default().labels(&format!("{OWNER_NAME}={deployment}")))
        .await
        .map_err(|e| kit::error_chain(&e))?
        .items;
    let target = rollback_target(&found, &bundles, to)?;
    let template = template_of(&target)?;
    // A replace carries the resourceVersion read above: a concurrent change fails it
    // instead of being overwritten.
    let mut changed = found.clone();
    changed.spec.template = template;
    deployments
        .replace(deployment, &PostParams::default(), &changed)
        .await
        .map_err(|e| kit::error_chain(&e))?;
    Ok(format!(
        "BundleDeployment {deployment} now asks for revision {} (Bundle {}); its stored content is applied without fetching",
        revision_of(&target).unwrap_or_default(),
        target.name_any()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment() -> BundleDeployment {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "core.rukpak.io/v1alpha1",
            "kind": "BundleDeployment",
            "metadata": {"name": "bd", "uid": "u1"},
            "spec": {"provisionerClassName": "core-rukpak-io-plain",
                     "template": {"metadata": {"labels": {"team": "a"}},
                                  "spec": {"provisionerClassName": "core-rukpak-io-plain",
                                           "source": {"type": "image", "image": {"ref": "example.com/a:1"}}}}},
        }))
        .unwrap()
    }

    #[test]
    fn a_generated_bundle_gives_back_the_template_it_was_made_from() {
        let deployment = deployment();
        let mut bundle = crate::deployment_bundles::desired_bundle(&deployment).unwrap();
        bundle.labels_mut().insert(REVISION.into(), "3".into());
        let template = template_of(&bundle).unwrap();
        assert_eq!(template, deployment.spec.template);
        // Edited since (a label added by hand): refused, it would make a new Bundle.
        bundle.labels_mut().insert("extra".into(), "x".into());
        let refused = template_of(&bundle).unwrap_err();
        assert!(refused.contains("no longer matches"), "{refused}");
    }

    #[test]
    fn rollback_picks_the_newest_earlier_healthy_revision_or_the_one_asked_for() {
        let mut deployment = deployment();
        let bundle = |revision: i64| -> Bundle {
            let mut b = crate::deployment_bundles::desired_bundle(&deployment).unwrap();
            b.metadata.name = Some(format!("bd-{revision}"));
            b.labels_mut().insert(REVISION.into(), revision.to_string());
            b
        };
        let bundles = vec![bundle(1), bundle(2), bundle(3)];
        let record = |revision: i64, healthy: bool| rukpak_api::RevisionRecord {
            revision,
            bundle: format!("bd-{revision}"),
            digest: "sha256:0".into(),
            outcome: RevisionOutcome::Superseded,
            started: None,
            last_healthy: healthy.then(kit::conditions::now),
            message: None,
        };
        deployment.status = Some(rukpak_api::BundleDeploymentStatus {
            active_bundle: Some("bd-3".into()),
            revisions: vec![record(1, true), record(2, false), record(3, true)],
            ..Default::default()
        });
        assert_eq!(
            rollback_target(&deployment, &bundles, None)
                .unwrap()
                .name_any(),
            "bd-1"
        );
        assert_eq!(
            rollback_target(&deployment, &bundles, Some(2))
                .unwrap()
                .name_any(),
            "bd-2"
        );
        let missing = rollback_target(&deployment, &bundles, Some(9)).unwrap_err();
        assert!(missing.contains("no revision 9"), "{missing}");
    }
}
