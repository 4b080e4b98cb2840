//! A gzip'd tar (or plain tar) at an http(s) URL.

use futures::StreamExt;

use crate::archive_error::ArchiveError;
use crate::digest::{Digest, Hasher};
use crate::extract::Extractor;
use crate::limits::LimitError;
use crate::source::{
    BasicAuth, Denied, DeniedNetworks, ResolvedSource, TlsError, TlsOptions, UnpackOptions,
    Unpacked,
};

/// A tarball to download.
#[derive(Debug, Clone)]
pub struct HttpSource {
    /// The URL (`http` or `https`).
    pub url: String,
    /// Expected lowercase hex sha256 of the downloaded file; a mismatch is refused.
    pub sha256: Option<String>,
    /// Basic authentication.
    pub auth: Option<BasicAuth>,
    /// Certificate verification.
    pub tls: TlsOptions,
}

/// Why a download could not become content.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The URL cannot be parsed or is not http(s).
    #[error("failed to parse url {url:?}: {reason}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// `sha256` is not 64 hex digits.
    #[error("failed to parse sha256 {sha256:?} of {url}: want 64 lowercase hex digits")]
    InvalidSha256 {
        /// The URL.
        url: String,
        /// The value as given.
        sha256: String,
    },
    /// The certificate data cannot be used.
    #[error("failed to configure TLS for {url}")]
    Tls {
        /// The URL.
        url: String,
        /// What is wrong.
        #[source]
        source: TlsError,
    },
    /// Connecting or reading failed.
    #[error("failed to download {url}")]
    Request {
        /// The URL.
        url: String,
        /// The client error.
        #[source]
        source: reqwest::Error,
    },
    /// The server answered with a status other than 200.
    #[error("failed to download {url}: unexpected status \"{status}\"")]
    Status {
        /// The URL.
        url: String,
        /// The status.
        status: reqwest::StatusCode,
    },
    /// The file does not have the expected sha256.
    #[error("failed to verify {url}: sha256 is {actual}, want {expected}")]
    Sha256Mismatch {
        /// The URL.
        url: String,
        /// The expected hex digest.
        expected: String,
        /// The hex digest of what was downloaded.
        actual: String,
    },
    /// The download is larger than the content may become.
    #[error("failed to download {url}")]
    TooLarge {
        /// The URL.
        url: String,
        /// The limit crossed.
        #[source]
        source: LimitError,
    },
    /// The file is not an acceptable archive.
    #[error("failed to unpack {url}")]
    Content {
        /// The URL.
        url: String,
        /// What was refused.
        #[source]
        source: ArchiveError,
    },
    /// The download did not finish in time.
    #[error("failed to download {url}: timed out")]
    Timeout {
        /// The URL.
        url: String,
    },
    /// The extraction task failed.
    #[error("failed to unpack {url}: the extraction task failed")]
    Task {
        /// The URL.
        url: String,
    },
}

impl HttpError {
    /// Whether retrying cannot help until the source or the served file changes. Server
    /// errors, network problems, timeouts and 404/401/403/408/429 are transient: the
    /// file may appear, and credentials live in a Secret that can change.
    pub fn is_terminal(&self) -> bool {
        match self {
            // Local storage failing is not the content's fault.
            HttpError::Content {
                source: ArchiveError::Write { .. },
                ..
            } => false,
            HttpError::InvalidUrl { .. }
            | HttpError::InvalidSha256 { .. }
            | HttpError::Tls { .. }
            | HttpError::Sha256Mismatch { .. }
            | HttpError::TooLarge { .. }
            | HttpError::Content { .. } => true,
            HttpError::Status { status, .. } => {
                status.is_client_error()
                    && !matches!(status.as_u16(), 401 | 403 | 404 | 408 | 425 | 429)
            }
            HttpError::Request { source, .. } => refused_by_policy(source),
            HttpError::Timeout { .. } | HttpError::Task { .. } => false,
        }
    }

    /// A stable snake_case label for metrics and event reasons.
    pub fn label(&self) -> &'static str {
        match self {
            HttpError::InvalidUrl { .. } => "http_invalid_url",
            HttpError::InvalidSha256 { .. } => "http_invalid_sha256",
            HttpError::Tls { .. } => "http_invalid_tls",
            HttpError::Request { .. } => "http_request_failed",
            HttpError::Status { .. } => "http_unexpected_status",
            HttpError::Sha256Mismatch { .. } => "http_sha256_mismatch",
            HttpError::TooLarge { .. } => "http_too_large",
            HttpError::Content { .. } => "http_invalid_content",
            HttpError::Timeout { .. } => "http_timeout",
            HttpError::Task { .. } => "http_task_failed",
        }
    }
}

/// Downloads, verifies and normalises the tarball.
pub async fn unpack(source: &HttpSource, options: &UnpackOptions) -> Result<Unpacked, HttpError> {
    let url = source.url.clone();
    let parsed = reqwest::Url::parse(&url).map_err(|err| HttpError::InvalidUrl {
        url: url.clone(),
        reason: err.to_string(),
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(HttpError::InvalidUrl {
            url,
            reason: format!("scheme {:?} is not http or https", parsed.scheme()),
        });
    }
    let expected = match &source.sha256 {
        Some(hex) => Some(Digest::from_hex(hex).map_err(|_| HttpError::InvalidSha256 {
            url: url.clone(),
            sha256: hex.clone(),
        })?),
        None => None,
    };
    let tls = source.tls.rustls_config().map_err(|err| HttpError::Tls {
        url: url.clone(),
        source: err,
    })?;
    let client = reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .connect_timeout(std::time::Duration::from_secs(30))
        .redirect(redirect_policy(&parsed, source, options))
        .dns_resolver(std::sync::Arc::new(DenyingResolver(
            options.denied_networks.clone(),
        )))
        .build()
        .map_err(|err| HttpError::Request {
            url: url.clone(),
            source: err,
        })?;

    let download = download(&client, parsed, source, options);
    let (data, actual) = tokio::time::timeout(options.timeout, download)
        .await
        .map_err(|_| HttpError::Timeout { url: url.clone() })??;
    if let Some(expected) = expected
        && expected != actual
    {
        return Err(HttpError::Sha256Mismatch {
            url,
            expected: expected.hex(),
            actual: actual.hex(),
        });
    }

    let limits = options.limits;
    let work_dir = options.work_dir.clone();
    let content = tokio::task::spawn_blocking(move || {
        let mut extractor = Extractor::new(limits).with_work_dir(work_dir);
        extractor.add_archive(&data[..])?;
        extractor.finish()
    })
    .await
    .map_err(|_| HttpError::Task { url: url.clone() })?
    .map_err(|err| HttpError::Content {
        url: url.clone(),
        source: err,
    })?;
    Ok(Unpacked {
        content,
        resolved: ResolvedSource::Http {
            url,
            sha256: actual.hex(),
        },
    })
}

/// At most this many redirects are followed.
const MAX_REDIRECTS: usize = 10;

/// Follows redirects only while they stay safe: never into a denied network (checked here
/// for address literals; names go through [`DenyingResolver`]), never more than
/// [`MAX_REDIRECTS`], and with credentials only within the URL's own origin (scheme, host
/// and port), so a server cannot bounce them to a host its owner controls.
fn redirect_policy(
    url: &reqwest::Url,
    source: &HttpSource,
    options: &UnpackOptions,
) -> reqwest::redirect::Policy {
    let origin = url.origin();
    let with_credentials = source.auth.is_some();
    let denied = options.denied_networks.clone();
    reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() >= MAX_REDIRECTS {
            return attempt.error(RedirectRefused(format!(
                "stopped after {MAX_REDIRECTS} redirects"
            )));
        }
        let next = attempt.url().clone();
        if with_credentials && next.origin() != origin {
            return attempt.error(RedirectRefused(format!(
                "refused a redirect to {}: credentials are only sent to {}",
                next.origin().ascii_serialization(),
                origin.ascii_serialization()
            )));
        }
        let host = next.host_str().unwrap_or_default().to_owned();
        if let Ok(address) = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            && let Err(denied) = denied.check(&host, address)
        {
            return attempt.error(denied);
        }
        attempt.follow()
    })
}

/// A redirect the policy would not follow.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct RedirectRefused(String);

/// Resolves names with the system resolver and refuses a name with an address in a denied
/// network, so neither the URL nor any redirect reaches one through DNS.
struct DenyingResolver(DeniedNetworks);

impl reqwest::dns::Resolve for DenyingResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let denied = self.0.clone();
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addresses: Vec<std::net::SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            for address in &addresses {
                denied.check(&host, address.ip())?;
            }
            let addresses: reqwest::dns::Addrs = Box::new(addresses.into_iter());
            Ok(addresses)
        })
    }
}

/// Whether `err` was caused by the egress rules: retrying cannot help.
fn refused_by_policy(err: &reqwest::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(err);
    while let Some(current) = cause {
        if current.is::<Denied>() || current.is::<RedirectRefused>() {
            return true;
        }
        cause = current.source();
    }
    false
}

/// GETs the URL into memory (at most the uncompressed size limit, which a valid
/// archive's compressed form cannot meaningfully exceed) and hashes it on the way.
async fn download(
    client: &reqwest::Client,
    url: reqwest::Url,
    source: &HttpSource,
    options: &UnpackOptions,
) -> Result<(Vec<u8>, Digest), HttpError> {
    let url_text = source.url.clone();
    let request_err = |err| HttpError::Request {
        url: url_text.clone(),
        source: err,
    };
    let mut request = client.get(url);
    if let Some(auth) = &source.auth {
        request = request.basic_auth(&auth.username, Some(&auth.password));
    }
    let response = request.send().await.map_err(request_err)?;
    if response.status() != reqwest::StatusCode::OK {
        return Err(HttpError::Status {
            url: url_text.clone(),
            status: response.status(),
        });
    }
    let max = options.limits.max_uncompressed_bytes;
    let too_large = || HttpError::TooLarge {
        url: url_text.clone(),
        source: LimitError::Size { limit: max },
    };
    if response.content_length().is_some_and(|len| len > max) {
        return Err(too_large());
    }
    let mut data = Vec::new();
    let mut hasher = Hasher::new();
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(request_err)?;
        if (data.len() + chunk.len()) as u64 > max {
            return Err(too_large());
        }
        hasher.update(&chunk);
        data.extend_from_slice(&chunk);
    }
    Ok((data, hasher.finish()))
}
