//! `plan <name>` and `approve <name> [--digest D]`: manual revisions
//! (`upgradeApproval: Manual`). A name is a PlatformOperator (every BundleDeployment it made
//! is looked at) or a BundleDeployment of one's own. What is approved is exactly a digest
//! that waits: the one `plan` showed, when `--digest` is given.

use kube::api::{Patch, PatchParams};
use kube::{Api, Client, ResourceExt};
use platform_api::PlatformOperator;
use rukpak_api::labels::OWNER_NAME;
use rukpak_api::{BundleDeployment, PendingRevision};
use serde_json::json;

use crate::cluster::{Failure, NOT_FOUND, REFUSED, failure};

/// A revision waiting for approval, and the BundleDeployment it waits on.
pub struct Waiting {
    /// The BundleDeployment.
    pub deployment: String,
    /// What it waits with.
    pub pending: PendingRevision,
}

/// Where approvals of `name` are written.
enum Approver {
    /// A PlatformOperator: `spec.approvedRevision`, passed to every BundleDeployment it made,
    /// with the digest it approves now.
    Operator(String, Option<String>),
    /// A BundleDeployment nobody else manages: its own `spec.approvedRevision`.
    Deployment(String),
}

/// The revisions waiting under `name`, and where approving them is written.
async fn waiting(client: &Client, name: &str) -> Result<(Approver, Vec<Waiting>), Failure> {
    let operators: Api<PlatformOperator> = Api::all(client.clone());
    let deployments: Api<BundleDeployment> = Api::all(client.clone());
    let pending_of = |deployment: &BundleDeployment| {
        deployment
            .status
            .as_ref()
            .and_then(|s| s.pending_revision.clone())
            .map(|pending| Waiting {
                deployment: deployment.name_any(),
                pending,
            })
    };
    if let Some(operator) = operators
        .get_opt(name)
        .await
        .map_err(|err| failure(&format!("read PlatformOperator {name}"), err))?
    {
        // The wrapper and the BundleDeployments it applied (its inventory).
        let wrapper_name = rukpak_api::names::bundle_deployment_name(name);
        let mut found = Vec::new();
        if let Some(wrapper) = deployments
            .get_opt(&wrapper_name)
            .await
            .map_err(|err| failure(&format!("read BundleDeployment {wrapper_name}"), err))?
        {
            found.extend(pending_of(&wrapper));
            let children = wrapper
                .status
                .as_ref()
                .map(|s| s.inventory.clone())
                .unwrap_or_default();
            for entry in children.iter().filter(|e| e.kind == "BundleDeployment") {
                if let Some(child) = deployments
                    .get_opt(&entry.name)
                    .await
                    .map_err(|err| failure(&format!("read BundleDeployment {}", entry.name), err))?
                {
                    found.extend(pending_of(&child));
                }
            }
        }
        let approved = operator.spec.approved_revision.clone();
        return Ok((Approver::Operator(name.to_owned(), approved), found));
    }
    let deployment = deployments
        .get_opt(name)
        .await
        .map_err(|err| failure(&format!("read BundleDeployment {name}"), err))?
        .ok_or_else(|| {
            (
                NOT_FOUND,
                format!("there is no PlatformOperator or BundleDeployment {name}"),
            )
        })?;
    // One applied by another BundleDeployment would have its approval overwritten by
    // that one's next apply: approve where the spec comes from.
    if let Some(owner) = deployment.labels().get(OWNER_NAME) {
        return Err((
            REFUSED,
            format!(
                "BundleDeployment {name} is managed by BundleDeployment {owner}, which would undo an approval written here; approve through its PlatformOperator: kubectl olm approve {owner}"
            ),
        ));
    }
    let found = pending_of(&deployment).into_iter().collect();
    Ok((Approver::Deployment(name.to_owned()), found))
}

/// What `plan` prints for `name`: each revision waiting, what it changes, and the command
/// that approves exactly it.
pub async fn plan(client: Client, name: &str) -> Result<String, Failure> {
    let (approver, found) = waiting(&client, name).await?;
    if found.is_empty() {
        return Err((
            NOT_FOUND,
            format!("nothing under {name} waits for approval"),
        ));
    }
    let mut out = String::new();
    for (i, waiting) in found.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let pending = &waiting.pending;
        out.push_str(&format!(
            "BundleDeployment {}: revision {} is waiting for approval\n  bundle: {}\n  digest: {}\n\nTo approve it:\n  kubectl olm approve {name} --digest {}\n",
            waiting.deployment, pending.revision, pending.bundle, pending.digest, pending.digest
        ));
        out.push_str(&apply_engine::review::render_changes(pending));
    }
    if matches!(approver, Approver::Operator(..)) && found.len() > 1 {
        out.push_str(&format!(
            "\nPlatformOperator {name} approves one digest at a time: approve one, wait until `kubectl olm status {name}` shows it installed, then approve the next.\n"
        ));
    }
    Ok(out)
}

/// Approves the revision waiting under `name` whose digest is `digest` (or the only one
/// waiting, when no digest is given); returns what was approved.
pub async fn approve(client: Client, name: &str, digest: Option<&str>) -> Result<String, Failure> {
    let (approver, found) = waiting(&client, name).await?;
    let chosen = choose(name, &found, digest)?;
    if let Approver::Operator(_, Some(approved)) = &approver {
        unapplied_approval(name, approved, &chosen.pending.digest, &found)?;
    }
    let patch = json!({"spec": {"approvedRevision": chosen.pending.digest}});
    let params = PatchParams::default();
    match &approver {
        Approver::Operator(operator, _) => {
            Api::<PlatformOperator>::all(client)
                .patch(operator, &params, &Patch::Merge(&patch))
                .await
                .map_err(|err| failure(&format!("approve on PlatformOperator {operator}"), err))?;
        }
        Approver::Deployment(deployment) => {
            Api::<BundleDeployment>::all(client)
                .patch(deployment, &params, &Patch::Merge(&patch))
                .await
                .map_err(|err| {
                    failure(&format!("approve on BundleDeployment {deployment}"), err)
                })?;
        }
    }
    Ok(format!(
        "approved revision {} of BundleDeployment {} ({})\n",
        chosen.pending.revision, chosen.deployment, chosen.pending.digest
    ))
}

/// Refuses to replace an approval that still waits to be applied: a PlatformOperator's
/// `approvedRevision` is one digest, so approving `next` while `approved` is still pending
/// on one of its BundleDeployments would leave that one waiting for ever. Pure.
fn unapplied_approval(
    name: &str,
    approved: &str,
    next: &str,
    found: &[Waiting],
) -> Result<(), Failure> {
    if approved == next {
        return Ok(());
    }
    match found.iter().find(|w| w.pending.digest == approved) {
        None => Ok(()),
        Some(waiting) => Err((
            REFUSED,
            format!(
                "PlatformOperator {name} approves {approved}, which BundleDeployment {} has not applied yet; approving {next} now would replace that approval. Wait until `kubectl olm status {name}` shows {} installed, then approve again",
                waiting.deployment, waiting.deployment
            ),
        )),
    }
}

/// The revision `digest` names among `found`, or the only one. Pure.
fn choose<'a>(
    name: &str,
    found: &'a [Waiting],
    digest: Option<&str>,
) -> Result<&'a Waiting, Failure> {
    let digests = || {
        found
            .iter()
            .map(|w| format!("{} ({})", w.pending.digest, w.deployment))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match (digest, found) {
        (_, []) => Err((NOT_FOUND, format!("nothing under {name} waits for approval"))),
        (None, [only]) => Ok(only),
        (None, _) => Err((
            REFUSED,
            format!(
                "several revisions wait under {name}: {}; review them with `kubectl olm plan {name}` and approve one with --digest",
                digests()
            ),
        )),
        (Some(digest), _) => found
            .iter()
            .find(|w| w.pending.digest == digest)
            .ok_or_else(|| {
                (
                    REFUSED,
                    format!(
                        "{digest} is not what waits under {name} (what waits: {}); nothing was approved",
                        digests()
                    ),
                )
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting(deployment: &str, digest: &str) -> Waiting {
        Waiting {
            deployment: deployment.into(),
            pending: PendingRevision {
                revision: 2,
                bundle: format!("{deployment}-2"),
                digest: digest.into(),
                ..PendingRevision::default()
            },
        }
    }

    #[test]
    fn an_approval_still_waiting_to_be_applied_is_not_replaced() {
        let two = [
            waiting("package-a", "sha256:aa"),
            waiting("package-b", "sha256:bb"),
        ];
        // sha256:aa is approved and package-a has not applied it: approving bb would lose it.
        let (code, why) = unapplied_approval("op", "sha256:aa", "sha256:bb", &two).unwrap_err();
        assert_eq!(code, REFUSED);
        assert!(
            why.contains("package-a has not applied it yet")
                || why.contains("package-a has not applied"),
            "{why}"
        );
        // Approving the same again, or after package-a applied it, goes ahead.
        assert!(unapplied_approval("op", "sha256:aa", "sha256:aa", &two).is_ok());
        assert!(unapplied_approval("op", "sha256:aa", "sha256:bb", &two[1..]).is_ok());
    }

    #[test]
    fn only_a_digest_that_waits_is_approved_and_several_need_one_named() {
        let one = [waiting("package-a", "sha256:aa")];
        assert_eq!(choose("a", &one, None).unwrap().deployment, "package-a");
        assert_eq!(
            choose("a", &one, Some("sha256:bb")).err().unwrap(),
            (
                REFUSED,
                "sha256:bb is not what waits under a (what waits: sha256:aa (package-a)); nothing was approved".to_owned()
            )
        );
        let two = [
            waiting("package-a", "sha256:aa"),
            waiting("package-b", "sha256:bb"),
        ];
        assert_eq!(choose("a", &two, None).err().unwrap().0, REFUSED);
        assert_eq!(
            choose("a", &two, Some("sha256:bb")).unwrap().deployment,
            "package-b"
        );
        assert_eq!(choose("a", &[], None).err().unwrap().0, NOT_FOUND);
    }
}
