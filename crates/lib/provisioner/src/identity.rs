//! Who a BundleDeployment applies as, and telling the admission policy.
//!
//! A BundleDeployment applies as its `spec.serviceAccount` (by impersonation); without
//! one, as the provisioner's `--default-service-account` (also by impersonation); without
//! that, as the provisioner itself. The admission policy `bundle-identity.core.rukpak.io`
//! lets only those allowed to impersonate that identity create or change the
//! BundleDeployment, so a BundleDeployment never does more than the person who wrote it
//! could do. The policy cannot read a provisioner's flags, so the provisioner publishes its
//! default identity for every ProvisionerClass it serves ([`publish`]): in the ConfigMap
//! [`rukpak_api::BUNDLE_IDENTITIES_CONFIG_MAP`], which the policy reads, and in the class's
//! `status.defaultIdentity`, for people. Until it has, only those allowed to impersonate
//! every ServiceAccount (cluster administrators) may create BundleDeployments without
//! `spec.serviceAccount`.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use rukpak_api::{
    ApplyIdentity, BUNDLE_IDENTITIES_CONFIG_MAP, BundleDeployment, ProvisionerClass,
    ServiceAccountRef,
};
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

use kit::retry::Backoff;

/// The ServiceAccount `deployment` applies as; `None` means the provisioner's own identity.
pub fn account_for<'a>(
    deployment: &'a BundleDeployment,
    default: Option<&'a ServiceAccountRef>,
) -> Option<&'a ServiceAccountRef> {
    deployment.spec.service_account.as_ref().or(default)
}

/// `config` changed to impersonate `account`, with the groups the API server gives a
/// ServiceAccount's own token (impersonating a user adds no groups by itself).
pub fn impersonating(config: &kube::Config, account: &ServiceAccountRef) -> kube::Config {
    let mut config = config.clone();
    config.auth_info.impersonate = Some(account.username());
    config.auth_info.impersonate_groups = Some(vec![
        "system:serviceaccounts".to_owned(),
        format!("system:serviceaccounts:{}", account.namespace),
        "system:authenticated".to_owned(),
    ]);
    config
}

/// What the provisioner publishes as a class's default identity: the default
/// ServiceAccount when one is configured, else `own_username`.
pub fn default_identity(own_username: &str, default: Option<&ServiceAccountRef>) -> ApplyIdentity {
    match default {
        Some(account) => ApplyIdentity::service_account(account.clone()),
        None => ApplyIdentity::from_username(own_username),
    }
}

/// The user name the API server authenticates `client` as (a SelfSubjectReview).
pub async fn whoami(client: &Client) -> Result<String, kube::Error> {
    let review = Api::<SelfSubjectReview>::all(client.clone())
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await?;
    Ok(review
        .status
        .and_then(|s| s.user_info)
        .and_then(|u| u.username)
        .unwrap_or_default())
}

/// What [`publish`] needs.
struct Publisher {
    client: Client,
    /// The ConfigMap the admission policy reads, in its namespace.
    identities: Api<ConfigMap>,
    provisioner_id: String,
    default: Option<ServiceAccountRef>,
    own_username: OnceCell<String>,
    backoff: Backoff,
}

/// Why a class's identity could not be published.
#[derive(Debug, thiserror::Error)]
enum PublishError {
    #[error("failed to learn the provisioner's own user name")]
    WhoAmI(#[source] kube::Error),
    #[error("failed to write the default identity of ProvisionerClass {0}")]
    Write(String, #[source] kube::Error),
    #[error("failed to publish the default identity of ProvisionerClass {0} in ConfigMap {1}")]
    WriteConfigMap(String, String, #[source] kube::Error),
}

/// Keeps the published default identity of every ProvisionerClass whose
/// `spec.provisioner` is `provisioner_id` equal to this provisioner's, until `shutdown`:
/// its key in the ConfigMap [`BUNDLE_IDENTITIES_CONFIG_MAP`] of `namespace` (restored
/// when someone changes it) and its `status.defaultIdentity`.
pub async fn publish(
    client: Client,
    provisioner_id: String,
    default: Option<ServiceAccountRef>,
    namespace: String,
    shutdown: CancellationToken,
) {
    let identities = Api::<ConfigMap>::namespaced(client.clone(), &namespace);
    // A change to the ConfigMap re-checks every class.
    let changed = watcher(
        identities.clone(),
        watcher::Config::default().fields(&format!("metadata.name={BUNDLE_IDENTITIES_CONFIG_MAP}")),
    )
    .backoff(kit::watch::WatchBackoff::default())
    .touched_objects()
    .filter_map(|event| async move { event.ok().map(|_| ()) });
    let ctx = Arc::new(Publisher {
        client: client.clone(),
        identities,
        provisioner_id,
        default,
        own_username: OnceCell::new(),
        backoff: Backoff::new(Duration::from_secs(1), Duration::from_secs(120)),
    });
    Controller::new(Api::<ProvisionerClass>::all(client), watcher::Config::default())
        .trigger_backoff(kit::watch::WatchBackoff::default())
        .reconcile_all_on(changed)
        .graceful_shutdown_on(shutdown.cancelled_owned())
        .run(
            publish_one,
            |class, error, ctx: Arc<Publisher>| {
                tracing::warn!(class = %class.name_any(), error = %kit::error_chain(error), "failed to publish the default identity");
                Action::requeue(ctx.backoff.next_delay(&class.name_any()))
            },
            ctx,
        )
        .for_each(|_| async {})
        .await;
}

async fn publish_one(
    class: Arc<ProvisionerClass>,
    ctx: Arc<Publisher>,
) -> Result<Action, PublishError> {
    if class.spec.provisioner != ctx.provisioner_id {
        return Ok(Action::await_change());
    }
    let own = ctx
        .own_username
        .get_or_try_init(|| whoami(&ctx.client))
        .await
        .map_err(PublishError::WhoAmI)?;
    let wanted = default_identity(own, ctx.default.as_ref());
    let name = class.name_any();
    // The ConfigMap first: once the status shows the identity, the policy has it too.
    publish_in_config_map(&ctx, &name, &wanted.username).await?;
    let published = class
        .status
        .as_ref()
        .and_then(|s| s.default_identity.as_ref());
    if published != Some(&wanted) {
        kit::status::apply(
            &Api::<ProvisionerClass>::all(ctx.client.clone()),
            &name,
            &format!("{}-provisioner", ctx.provisioner_id),
            &serde_json::json!({ "defaultIdentity": wanted }),
        )
        .await
        .map_err(|source| PublishError::Write(name.clone(), source))?;
    }
    ctx.backoff.reset(&class.name_any());
    Ok(Action::await_change())
}

/// Makes key `class` of the identities ConfigMap `username`, creating the ConfigMap when
/// it is missing. Only that key is written: other provisioners own the other keys.
async fn publish_in_config_map(
    ctx: &Publisher,
    class: &str,
    username: &str,
) -> Result<(), PublishError> {
    let failed = |source| {
        PublishError::WriteConfigMap(
            class.to_owned(),
            BUNDLE_IDENTITIES_CONFIG_MAP.to_owned(),
            source,
        )
    };
    let current = ctx
        .identities
        .get_opt(BUNDLE_IDENTITIES_CONFIG_MAP)
        .await
        .map_err(failed)?;
    let data = serde_json::json!({ class: username });
    match current {
        Some(map)
            if map
                .data
                .as_ref()
                .and_then(|d| d.get(class))
                .map(String::as_str)
                == Some(username) =>
        {
            return Ok(());
        }
        Some(_) => {
            ctx.identities
                .patch(
                    BUNDLE_IDENTITIES_CONFIG_MAP,
                    &PatchParams::default(),
                    &Patch::Merge(&serde_json::json!({ "data": data })),
                )
                .await
                .map_err(failed)?;
        }
        None => {
            let map: ConfigMap = serde_json::from_value(serde_json::json!({
                "metadata": { "name": BUNDLE_IDENTITIES_CONFIG_MAP },
                "data": data,
            }))
            .map_err(|err| failed(kube::Error::SerdeError(err)))?;
            ctx.identities
                .create(&PostParams::default(), &map)
                .await
                .map_err(failed)?;
        }
    }
    tracing::info!(
        class,
        identity = username,
        "published the default identity of BundleDeployments of this class"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn account(text: &str) -> ServiceAccountRef {
        text.parse().unwrap()
    }

    fn deployment(service_account: Option<&str>) -> BundleDeployment {
        let mut spec = serde_json::json!({
            "provisionerClassName": "core-rukpak-io-plain",
            "template": { "spec": { "provisionerClassName": "core-rukpak-io-plain",
                "source": { "type": "upload", "upload": {} } } }
        });
        if let Some(sa) = service_account {
            let sa = account(sa);
            spec["serviceAccount"] =
                serde_json::json!({ "namespace": sa.namespace, "name": sa.name });
        }
        serde_json::from_value(serde_json::json!({
            "apiVersion": "core.rukpak.io/v1alpha1", "kind": "BundleDeployment",
            "metadata": { "name": "x" }, "spec": spec
        }))
        .unwrap()
    }

    #[test]
    fn the_named_account_wins_then_the_default_then_the_provisioner() {
        let default = account("tenants/installer");
        assert_eq!(
            account_for(&deployment(Some("team-a/deployer")), Some(&default)),
            Some(&account("team-a/deployer"))
        );
        assert_eq!(
            account_for(&deployment(None), Some(&default)),
            Some(&default)
        );
        assert_eq!(account_for(&deployment(None), None), None);
    }

    #[test]
    fn the_published_identity_is_the_default_account_or_the_provisioner() {
        let own = "system:serviceaccount:rukpak-system:plain-provisioner";
        assert_eq!(
            default_identity(own, None).service_account,
            Some(account("rukpak-system/plain-provisioner"))
        );
        let default = account("tenants/installer");
        let published = default_identity(own, Some(&default));
        assert_eq!(
            published.username,
            "system:serviceaccount:tenants:installer"
        );
        assert_eq!(published.service_account, Some(default));
        let admin = default_identity("kubernetes-admin", None);
        assert_eq!(
            (admin.username.as_str(), admin.service_account),
            ("kubernetes-admin", None)
        );
    }

    #[test]
    fn impersonation_carries_the_service_account_groups() {
        let config = kube::Config::new("https://127.0.0.1:6443".parse().unwrap());
        let config = impersonating(&config, &account("team-a/deployer"));
        assert_eq!(
            config.auth_info.impersonate.as_deref(),
            Some("system:serviceaccount:team-a:deployer")
        );
        assert_eq!(
            config.auth_info.impersonate_groups.unwrap(),
            [
                "system:serviceaccounts",
                "system:serviceaccounts:team-a",
                "system:authenticated"
            ]
        );
    }
}
