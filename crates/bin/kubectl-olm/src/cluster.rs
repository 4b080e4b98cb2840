//! The commands that talk to the cluster, with the kubeconfig as kubectl reads it:
//! `catalogs` (the Catalogs and whether they serve), `install` (a PlatformOperator) and
//! `uninstall`. Every request is the user's own: what RBAC and the admission policies
//! refuse them is refused here, with the API server's sentence.

use std::path::PathBuf;

use deppy_api::Catalog;
use deppy_api::conditions::TYPE_SERVING;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, ResourceExt};
use platform_api::{Package, PlatformOperator, PlatformOperatorSpec};
use serde::Serialize;

/// Which cluster, and as whom: kubectl's own flags of the same names (kubectl does not pass
/// its flags to a plugin).
#[derive(Debug, Clone, clap::Args)]
pub struct ClusterArgs {
    /// The kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then the
    /// in-cluster ServiceAccount).
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (default: the current one).
    #[arg(long)]
    context: Option<String>,
    /// Act as this user (impersonation, as `kubectl --as`).
    #[arg(long = "as", value_name = "USER")]
    as_user: Option<String>,
}

/// Why a cluster command failed: the exit code and a sentence.
pub type Failure = (u8, String);

/// Exit code: what was asked for does not exist.
pub const NOT_FOUND: u8 = 1;
/// Exit code: the API server refused the request (forbidden, invalid, already there).
pub const REFUSED: u8 = 2;
/// Exit code: the cluster could not be reached, or no kubeconfig was found.
pub const UNREACHABLE: u8 = 3;

impl ClusterArgs {
    /// A client for the cluster these flags name.
    pub async fn client(&self) -> Result<Client, Failure> {
        self.connect().await.map(|(client, _)| client)
    }

    /// A client for the cluster these flags name, and the kubeconfig's bearer token if it
    /// has one (from `token` or `tokenFile`), for the catalog query API.
    pub async fn connect(&self) -> Result<(Client, Option<String>), Failure> {
        let unreachable = |why: String| (UNREACHABLE, why);
        let options = KubeConfigOptions {
            context: self.context.clone(),
            ..KubeConfigOptions::default()
        };
        let mut config = match &self.kubeconfig {
            Some(path) => {
                let file = Kubeconfig::read_from(path).map_err(|err| {
                    unreachable(format!("cannot read kubeconfig {}: {err}", path.display()))
                })?;
                kube::Config::from_custom_kubeconfig(file, &options)
                    .await
                    .map_err(|err| unreachable(format!("cannot use kubeconfig: {err}")))?
            }
            None if self.context.is_some() => kube::Config::from_kubeconfig(&options)
                .await
                .map_err(|err| unreachable(format!("cannot use kubeconfig: {err}")))?,
            None => kube::Config::infer()
                .await
                .map_err(|err| unreachable(format!("cannot find a cluster: {err}")))?,
        };
        if let Some(user) = &self.as_user {
            config.auth_info.impersonate = Some(user.clone());
        }
        let token = config
            .auth_info
            .token
            .as_ref()
            .map(|token| secrecy::ExposeSecret::expose_secret(token).to_owned())
            .or_else(|| {
                let file = config.auth_info.token_file.as_ref()?;
                std::fs::read_to_string(file)
                    .ok()
                    .map(|text| text.trim().to_owned())
            });
        let client = Client::try_from(config)
            .map_err(|err| unreachable(format!("cannot build a client: {err}")))?;
        Ok((client, token))
    }

    /// Whether `--as` is set (the catalog query API cannot act as another user).
    pub fn impersonates(&self) -> bool {
        self.as_user.is_some()
    }
}

/// A failed request as an exit code and a sentence: the API server's own message for a
/// refusal, else why the cluster could not be reached.
pub fn failure(doing: &str, err: kube::Error) -> Failure {
    match err {
        kube::Error::Api(status) if status.code == 404 => {
            (NOT_FOUND, format!("failed to {doing}: {}", status.message))
        }
        kube::Error::Api(status) => (
            REFUSED,
            format!("the API server refused to {doing}: {}", status.message),
        ),
        other => (
            UNREACHABLE,
            format!("failed to {doing}: cannot reach the cluster: {other}"),
        ),
    }
}

/// One Catalog, as `catalogs` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogRow {
    /// The Catalog's name.
    pub name: String,
    /// Its source: the image reference, or `configmap NAMESPACE/NAME`.
    pub source: String,
    /// `True`, `False` or `Unknown`: whether deppy-resolver serves it.
    pub serving: String,
    /// The `Serving` condition's message.
    pub message: String,
    /// Packages and bundles served.
    pub packages: Option<i64>,
    /// Bundles served.
    pub bundles: Option<i64>,
}

/// Every Catalog the user may list, by name.
pub async fn catalogs(client: Client) -> Result<Vec<CatalogRow>, Failure> {
    let list = Api::<Catalog>::all(client)
        .list(&ListParams::default())
        .await
        .map_err(|err| failure("list Catalogs", err))?;
    let mut rows: Vec<CatalogRow> = list.items.iter().map(catalog_row).collect();
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(rows)
}

/// What `catalogs` shows of `catalog`. Pure.
fn catalog_row(catalog: &Catalog) -> CatalogRow {
    let source = &catalog.spec.source;
    let source = match (&source.image, &source.config_map) {
        (Some(image), _) => image.ref_.clone(),
        (None, Some(config_map)) => {
            format!("configmap {}/{}", config_map.namespace, config_map.name)
        }
        (None, None) => "-".to_owned(),
    };
    let status = catalog.status.clone().unwrap_or_default();
    let serving = status.conditions.iter().find(|c| c.type_ == TYPE_SERVING);
    CatalogRow {
        name: catalog.name_any(),
        source,
        serving: serving.map_or_else(|| "Unknown".to_owned(), |c| c.status.clone()),
        message: serving.map(|c| c.message.clone()).unwrap_or_default(),
        packages: status.packages,
        bundles: status.bundles,
    }
}

/// What `install` asks for.
#[derive(Debug, Clone, clap::Args)]
pub struct InstallArgs {
    /// The package to install.
    pub package: String,
    /// The PlatformOperator's name (default: the package's).
    #[arg(long)]
    pub name: Option<String>,
    /// The channel to follow (default: the package's default channel).
    #[arg(long)]
    pub channel: Option<String>,
    /// The versions allowed, a range such as `>=1.2.0 <2.0.0` or one version.
    #[arg(long, value_name = "RANGE")]
    pub version: Option<String>,
    /// Upgrades wait for an approval of each revision (`kubectl olm plan` / `approve`).
    #[arg(long)]
    pub manual_approval: bool,
}

/// Creates the PlatformOperator `install` asks for; returns it as created.
pub async fn install(client: Client, args: &InstallArgs) -> Result<PlatformOperator, Failure> {
    let name = args.name.clone().unwrap_or_else(|| args.package.clone());
    let operator = PlatformOperator::new(
        &name,
        PlatformOperatorSpec {
            package: Package {
                name: args.package.clone(),
                channel: args.channel.clone(),
                version_range: args.version.clone(),
                ..Package::default()
            },
            config: None,
            upgrade_approval: args
                .manual_approval
                .then_some(rukpak_api::UpgradeApproval::Manual),
            approved_revision: None,
        },
    );
    Api::<PlatformOperator>::all(client)
        .create(&PostParams::default(), &operator)
        .await
        .map_err(|err| failure(&format!("create PlatformOperator {name}"), err))
}

/// Deletes the PlatformOperator `name` (the operator and what it installed go with it,
/// CRDs holding custom resources excepted).
pub async fn uninstall(client: Client, name: &str) -> Result<(), Failure> {
    Api::<PlatformOperator>::all(client)
        .delete(name, &DeleteParams::default())
        .await
        .map(|_| ())
        .map_err(|err| failure(&format!("delete PlatformOperator {name}"), err))
}
