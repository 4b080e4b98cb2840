//! Reading the cluster's catalogs through the catalog query API (docs/catalog-api.md), for
//! `search`, `show` and `upgrades` without `--catalog`.
//!
//! Two ways in:
//! - **Through the Kubernetes API server** (the default): the API is the aggregated API
//!   `catalogs.deppy.io/v1`, so requests go where every kubectl request goes, with the
//!   kubeconfig's own credentials (client certificates, OIDC, tokens) and `--as`. The API
//!   server checks the user's `get` on `catalogs/content` before it forwards.
//! - **Straight to the Service** (`--catalog-api HOST:PORT` or `--token`, e.g. after a
//!   port-forward): the Catalogs' URLs (`status.urls.base`) with a bearer token. Only https
//!   URLs are used, and the server is verified against the trust bundle deppy-resolver
//!   publishes in its own namespace (ConfigMap `deppy-catalog-api-ca`,
//!   `--catalog-api-namespace`), never one a URL points at: the token goes only to a server
//!   holding a certificate of that CA.
//!
//! Only what a command needs is fetched: the `packages` summary for `search`, one
//! package's blobs for `show` and `upgrades`, never a whole catalog.

use std::net::SocketAddr;

use catalog_api::PackageSummary;
use deppy_api::Catalog;
use deppy_api::conditions::TYPE_SERVING;
use fbc::{CatalogIndex, Detail};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};

use crate::catalogs;
use crate::cluster::{Failure, NOT_FOUND, REFUSED, UNREACHABLE, failure};
use crate::search::{Found, first_line};

/// How to reach the catalog query API.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ApiArgs {
    /// Connect straight to the catalog query API at this address instead of through the
    /// Kubernetes API server, verifying the certificate for its Service's name: e.g.
    /// `127.0.0.1:8443` after `kubectl port-forward -n deppy-system svc/deppy-catalogs 8443:443`.
    #[arg(long, value_name = "HOST:PORT")]
    pub catalog_api: Option<SocketAddr>,
    /// Connect straight to the catalog query API (as --catalog-api does) with this bearer
    /// token (default there: the kubeconfig's token).
    #[arg(long, env = "KUBECTL_OLM_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// The namespace deppy-resolver runs in: the API's trust bundle (ConfigMap
    /// `deppy-catalog-api-ca`) is read there, and only servers it vouches for get the token.
    #[arg(long, value_name = "NAMESPACE", default_value = "deppy-system")]
    pub catalog_api_namespace: String,
}

/// The trust bundle's ConfigMap, in the API's namespace.
const TRUST_CONFIGMAP: &str = "deppy-catalog-api-ca";

/// A served catalog and where its content is.
struct Served {
    name: String,
    base: String,
    /// The host of `base`.
    host: String,
}

/// The aggregated API's path for a catalog's content; its catalogd paths hang off it.
const AGGREGATED: &str = "/apis/catalogs.deppy.io/v1/catalogs";
/// The APIService registering it, for messages.
const API_SERVICE: &str = "v1.catalogs.deppy.io";

/// The catalog query API as this user sees it.
pub struct CatalogApi {
    transport: Transport,
    catalogs: Vec<Served>,
}

/// How requests reach the API.
enum Transport {
    /// Through the Kubernetes API server, as the kubeconfig's user.
    ApiServer(Client),
    /// Straight to the Service's address, with a bearer token.
    Direct {
        http: reqwest::Client,
        token: String,
    },
}

impl ApiArgs {
    /// Whether these flags ask to reach the API straight rather than through the API server.
    pub fn direct(&self) -> bool {
        self.catalog_api.is_some() || self.token.is_some()
    }
}

impl CatalogApi {
    /// Lists the served Catalogs and prepares the way to their content: through the API
    /// server, or straight (see [`ApiArgs::direct`]). `token` is the kubeconfig's bearer
    /// token, if it has one.
    pub async fn connect(
        client: Client,
        token: Option<String>,
        args: &ApiArgs,
    ) -> Result<Self, Failure> {
        if !args.direct() {
            let catalogs = served(&client, false).await?;
            return Ok(Self {
                transport: Transport::ApiServer(client),
                catalogs,
            });
        }
        let token = args.token.clone().or(token).ok_or_else(|| {
            (
                REFUSED,
                "the catalog query API needs a bearer token and this kubeconfig has none (it may use a client certificate): pass --token, e.g. --token \"$(kubectl create token NAME -n NAMESPACE)\" for a ServiceAccount that may get catalogs/content, or give --catalog DIR|IMAGE".to_owned(),
            )
        })?;
        let catalogs = served(&client, true).await?;
        // Only the trust bundle of deppy-resolver's own namespace: a server must hold a
        // certificate of its CA before the token is sent, whatever a URL names.
        let namespace = &args.catalog_api_namespace;
        let certificates = trust_bundle(&client, namespace).await?;
        let mut builder = reqwest::Client::builder()
            .tls_built_in_root_certs(false)
            .https_only(true)
            // The API never redirects; a redirect is not followed with the token.
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(std::time::Duration::from_secs(10))
            .timeout(std::time::Duration::from_secs(120));
        for certificate in certificates {
            builder = builder.add_root_certificate(certificate);
        }
        if let Some(address) = args.catalog_api {
            let mut hosts: Vec<&str> = catalogs.iter().map(|c| c.host.as_str()).collect();
            hosts.sort_unstable();
            hosts.dedup();
            for host in hosts {
                builder = builder.resolve(host, address);
            }
        }
        let http = builder
            .build()
            .map_err(|err| (UNREACHABLE, format!("cannot build an HTTPS client: {err}")))?;
        Ok(Self {
            transport: Transport::Direct { http, token },
            catalogs,
        })
    }

    /// Calls `each` on every served catalog; a catalog that fails is reported on stderr
    /// and skipped, unless every one fails (then the first failure is the error).
    async fn each_catalog<T>(
        &self,
        mut each: impl AsyncFnMut(&Served) -> Result<T, Failure>,
    ) -> Result<Vec<T>, Failure> {
        let mut results = Vec::new();
        let mut failures: Vec<Failure> = Vec::new();
        for served in &self.catalogs {
            match each(served).await {
                Ok(result) => results.push(result),
                Err(failure) => failures.push(failure),
            }
        }
        if results.is_empty()
            && let Some(first) = failures.first()
        {
            return Err(first.clone());
        }
        for (_, why) in &failures {
            eprintln!("kubectl olm: skipped {why}");
        }
        Ok(results)
    }

    /// The names of the served catalogs.
    pub fn names(&self) -> Vec<&str> {
        self.catalogs.iter().map(|c| c.name.as_str()).collect()
    }

    async fn get(&self, served: &Served, path: &str) -> Result<Vec<u8>, Failure> {
        match &self.transport {
            Transport::ApiServer(client) => through_api_server(client, served, path).await,
            Transport::Direct { http, token } => direct(http, token, served, path).await,
        }
    }

    /// `search` over every served catalog's `packages` summary.
    pub async fn search(&self, words: &[String]) -> Result<Vec<Found>, Failure> {
        let words: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
        let answers = self
            .each_catalog(async |served| {
                let body = self.get(served, "packages").await?;
                serde_json::from_slice::<Vec<PackageSummary>>(&body)
                    .map(|packages| (served.name.clone(), packages))
                    .map_err(|err| {
                        (
                            UNREACHABLE,
                            format!(
                                "catalog {}: the packages answer is not what this plugin reads: {err}",
                                served.name
                            ),
                        )
                    })
            })
            .await?;
        let mut found = Vec::new();
        for (catalog, packages) in answers {
            for package in packages {
                let description = package.description.as_deref().unwrap_or_default();
                let haystack = format!("{}\n{}", package.name, description).to_lowercase();
                if !words.iter().all(|word| haystack.contains(word.as_str())) {
                    continue;
                }
                let latest = package
                    .channels
                    .iter()
                    .find(|c| Some(&c.name) == package.default_channel.as_ref())
                    .and_then(|c| c.head_version.clone());
                found.push(Found {
                    catalog: catalog.clone(),
                    package: package.name.clone(),
                    default_channel: package.default_channel.clone(),
                    latest,
                    deprecated: package.deprecation.clone(),
                    summary: first_line(description),
                });
            }
        }
        found.sort_by(|a, b| (&a.catalog, &a.package).cmp(&(&b.catalog, &b.package)));
        Ok(found)
    }

    /// The server's `upgrades` answer for `package` at `from` in every served catalog that
    /// has that version (see [`fbc::upgrades`]); catalogs without it are left out.
    pub async fn upgrades(
        &self,
        package: &str,
        from: &fbc::Version,
        channel: Option<&str>,
    ) -> Result<Vec<fbc::upgrades::Upgrades>, Failure> {
        let mut query = form_urlencoded::Serializer::new(String::new());
        query.append_pair("package", package);
        query.append_pair("from", &from.to_string());
        if let Some(channel) = channel {
            query.append_pair("channel", channel);
        }
        let path = format!("upgrades?{}", query.finish());
        let found = self
            .each_catalog(async |served| match self.get(served, &path).await {
                Ok(body) => serde_json::from_slice(&body).map(Some).map_err(|err| {
                    (
                        UNREACHABLE,
                        format!(
                            "catalog {}: the upgrades answer is not what this plugin reads: {err}",
                            served.name
                        ),
                    )
                }),
                // This catalog lacks the package or the version: not a failure.
                Err((NOT_FOUND, _)) => Ok(None),
                Err(failure) => Err(failure),
            })
            .await?;
        Ok(found.into_iter().flatten().collect())
    }

    /// Every served catalog that has `package`, holding that package's blobs only.
    pub async fn package(&self, package: &str) -> Result<Vec<catalogs::Catalog>, Failure> {
        let encoded: String = form_urlencoded::byte_serialize(package.as_bytes()).collect();
        let found = self
            .each_catalog(async |served| {
                let head = self
                    .get(served, &format!("metas?schema=olm.package&name={encoded}"))
                    .await?;
                if head.is_empty() {
                    return Ok(None);
                }
                let mut blobs = head;
                let rest = self
                    .get(served, &format!("metas?package={encoded}"))
                    .await?;
                blobs.extend(rest);
                let index = CatalogIndex::from_files_with([("package.json", blobs)], Detail::Full)
                    .map_err(|err| {
                        let name = &served.name;
                        (
                            UNREACHABLE,
                            format!("catalog {name}: package {package} does not load: {err}"),
                        )
                    })?;
                Ok(Some(catalogs::Catalog {
                    name: served.name.clone(),
                    index,
                }))
            })
            .await?;
        Ok(found.into_iter().flatten().collect())
    }
}

/// One GET straight to the catalog's URL with the bearer token.
async fn direct(
    http: &reqwest::Client,
    token: &str,
    served: &Served,
    path: &str,
) -> Result<Vec<u8>, Failure> {
    let url = format!("{}/api/v1/{path}", served.base);
    let response = http
        .get(&url)
        .bearer_auth(token)
        .header("accept-encoding", "identity")
        .send()
        .await
        .map_err(|err| {
            (
                UNREACHABLE,
                format!(
                    "cannot reach the catalog query API at {url} ({}): from outside the cluster, run `kubectl port-forward -n deppy-system svc/deppy-catalogs 8443:443` and pass --catalog-api 127.0.0.1:8443",
                    error_chain(&err)
                ),
            )
        })?;
    let status = response.status();
    let body = response.bytes().await.map_err(|err| {
        (
            UNREACHABLE,
            format!("reading {url} failed: {}", error_chain(&err)),
        )
    })?;
    if status.is_success() {
        return Ok(body.to_vec());
    }
    let sentence = String::from_utf8_lossy(&body).trim().to_owned();
    let code = match status.as_u16() {
        404 => NOT_FOUND,
        400 | 401 | 403 => REFUSED,
        _ => UNREACHABLE,
    };
    Err((code, format!("catalog {}: {sentence}", served.name)))
}

/// One GET through the Kubernetes API server, as the kubeconfig's user.
async fn through_api_server(
    client: &Client,
    served: &Served,
    path: &str,
) -> Result<Vec<u8>, Failure> {
    let name = &served.name;
    let uri = format!("{AGGREGATED}/{name}/content/api/v1/{path}");
    let request = http::Request::get(&uri)
        .header("accept-encoding", "identity")
        .body(Vec::new())
        .map_err(|err| (REFUSED, format!("cannot build a request for {uri}: {err}")))?;
    match client.request_text(request).await {
        Ok(text) => Ok(text.into_bytes()),
        Err(kube::Error::Api(status)) => {
            Err(aggregated_failure(name, status.code, &status.message))
        }
        Err(err) => Err(failure(
            &format!("read catalog {name} through the API server"),
            err,
        )),
    }
}

/// What a refused or failed request through the API server means, as a sentence. The API
/// server's own answers (not registered, unavailable, forbidden) are told apart from the
/// catalog API's sentences by their words. Pure.
fn aggregated_failure(catalog: &str, code: u16, message: &str) -> Failure {
    let direct = "or reach the API straight: `kubectl port-forward -n deppy-system svc/deppy-catalogs 8443:443` and --catalog-api 127.0.0.1:8443 --token TOKEN";
    match code {
        404 if message == "the server could not find the requested resource" => (
            UNREACHABLE,
            format!(
                "the catalog query API is not registered with this cluster's API server (APIService {API_SERVICE}); deploy it with deppy-resolver, {direct}"
            ),
        ),
        503 => (
            UNREACHABLE,
            format!(
                "the catalog query API is unavailable ({message}): see `kubectl get apiservice {API_SERVICE}`, {direct}"
            ),
        ),
        404 => (NOT_FOUND, format!("catalog {catalog}: {message}")),
        400 | 401 | 403 => (REFUSED, format!("catalog {catalog}: {message}")),
        _ => (UNREACHABLE, format!("catalog {catalog}: {message}")),
    }
}

/// The served Catalogs, by name; with `urls`, only those with an https URL in their status
/// (which the direct way needs), the others reported on stderr.
async fn served(client: &Client, urls: bool) -> Result<Vec<Served>, Failure> {
    let list = Api::<Catalog>::all(client.clone())
        .list(&ListParams::default())
        .await
        .map_err(|err| failure("list Catalogs", err))?;
    let mut catalogs: Vec<Served> = list
        .items
        .iter()
        .filter_map(|catalog| {
            let status = catalog.status.as_ref()?;
            if !is_serving(status) {
                return None;
            }
            let name = catalog.name_any();
            if !urls {
                return Some(Served {
                    name,
                    base: String::new(),
                    host: String::new(),
                });
            }
            let base = status.urls.as_ref()?.base.trim_end_matches('/').to_owned();
            match https_host(&base) {
                Some(host) => Some(Served { name, base, host }),
                None => {
                    // The token must never travel in the clear or to a malformed URL.
                    eprintln!(
                        "kubectl olm: skipped catalog {name}: its URL {base:?} is not an https URL"
                    );
                    None
                }
            }
        })
        .collect();
    catalogs.sort_by(|a, b| a.name.cmp(&b.name));
    if catalogs.is_empty() {
        let why = if urls {
            "no Catalog is served with a catalog query API URL (status.urls.base): is deppy-resolver running with --catalog-api-address? Or give --catalog DIR|IMAGE"
        } else {
            "no Catalog is served (none has Serving=True; see `kubectl olm catalogs`): give --catalog DIR|IMAGE to read one from a directory or image"
        };
        return Err((NOT_FOUND, why.to_owned()));
    }
    Ok(catalogs)
}

/// The certificates of the trust bundle published in `namespace`.
async fn trust_bundle(
    client: &Client,
    namespace: &str,
) -> Result<Vec<reqwest::Certificate>, Failure> {
    let bundle = Api::<ConfigMap>::namespaced(client.clone(), namespace)
        .get(TRUST_CONFIGMAP)
        .await
        .map_err(|err| {
            failure(
                &format!(
                    "read the catalog query API's trust bundle, ConfigMap {namespace}/{TRUST_CONFIGMAP} (if deppy-resolver runs in another namespace, name it with --catalog-api-namespace)"
                ),
                err,
            )
        })?
        .data
        .and_then(|data| data.get("ca.crt").cloned())
        .unwrap_or_default();
    reqwest::Certificate::from_pem_bundle(bundle.as_bytes()).map_err(|err| {
        (
            UNREACHABLE,
            format!("ConfigMap {namespace}/{TRUST_CONFIGMAP} holds no usable certificate: {err}"),
        )
    })
}

/// Whether the Catalog's `Serving` condition is True.
fn is_serving(status: &deppy_api::CatalogStatus) -> bool {
    status
        .conditions
        .iter()
        .any(|c| c.type_ == TYPE_SERVING && c.status == "True")
}

/// The host of `url` when it is an https URL. Pure.
fn https_host(url: &str) -> Option<String> {
    let url = reqwest::Url::parse(url).ok()?;
    (url.scheme() == "https")
        .then(|| url.host_str().map(str::to_owned))
        .flatten()
}

fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::{aggregated_failure, https_host};
    use crate::cluster::{NOT_FOUND, REFUSED, UNREACHABLE};

    #[test]
    fn the_api_servers_answers_are_told_from_the_catalog_apis() {
        let (code, why) =
            aggregated_failure("c", 404, "the server could not find the requested resource");
        assert_eq!(code, UNREACHABLE);
        assert!(
            why.contains("not registered") && why.contains("--catalog-api"),
            "{why}"
        );
        let (code, why) = aggregated_failure("c", 503, "service unavailable");
        assert_eq!(code, UNREACHABLE);
        assert!(
            why.contains("kubectl get apiservice v1.catalogs.deppy.io"),
            "{why}"
        );
        let (code, why) = aggregated_failure("c", 404, "Catalog \"c\" has no package \"p\"");
        assert_eq!(
            (code, why.as_str()),
            (NOT_FOUND, "catalog c: Catalog \"c\" has no package \"p\"")
        );
        assert_eq!(aggregated_failure("c", 403, "forbidden").0, REFUSED);
    }

    #[test]
    fn only_https_urls_get_the_token() {
        assert_eq!(
            https_host("https://deppy-catalogs.deppy-system.svc/catalogs/a").as_deref(),
            Some("deppy-catalogs.deppy-system.svc")
        );
        assert_eq!(
            https_host("http://deppy-catalogs.deppy-system.svc/catalogs/a"),
            None
        );
        assert_eq!(https_host("deppy-catalogs/catalogs/a"), None);
        assert_eq!(https_host("file:///etc/passwd"), None);
    }
}
