//! Git repositories: a branch, tag or commit, optionally one directory of it.
//!
//! Fetching uses gitoxide (`gix`) into a temporary bare repository; branches and tags
//! are fetched shallow (depth 1), a commit is first asked for directly (shallow) and,
//! when the server does not allow that, found in a full fetch of branches and tags. The
//! tree of the commit is read straight from the object database, never checked out.
//!
//! Transports: `https://` (and `http://`, without credentials) through reqwest with a
//! ring-backed rustls configuration; `ssh://` and `user@host:path` through the `ssh`
//! program (OpenSSH must be installed), with the private key and a pinned known_hosts
//! file written to a private temporary directory; `git://` and `file://`.

use std::collections::BTreeMap;
use std::fmt;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use gix::protocol::transport::client::blocking_io::http;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;

use crate::archive_error::ArchiveError;
use crate::extract::Extractor;
use crate::paths;
use crate::source::{
    BasicAuth, ResolvedSource, SecretDataError, TlsError, TlsOptions, UnpackOptions, Unpacked,
    utf8_key,
};

/// A git repository to unpack.
#[derive(Debug, Clone)]
pub struct GitSource {
    /// The URL: `https://...`, `ssh://...`, `user@host:path`, `git://...`, `file://...`.
    pub repository: String,
    /// Only this directory of the repository becomes the content; none takes the root.
    pub directory: Option<String>,
    /// What to check out.
    pub reference: GitRef,
    /// Credentials.
    pub auth: Option<GitAuth>,
    /// Certificate verification for https; `insecure_skip_verify` also allows ssh
    /// without a known_hosts entry (accepting any host key).
    pub tls: TlsOptions,
}

/// A branch, tag or commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GitRef {
    /// The tip of a branch (name without `refs/heads/`).
    Branch(String),
    /// A tag (name without `refs/tags/`), annotated or lightweight.
    Tag(String),
    /// A full 40-hex-digit commit hash.
    Commit(String),
}

impl fmt::Display for GitRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GitRef::Branch(name) => write!(f, "branch {name:?}"),
            GitRef::Tag(name) => write!(f, "tag {name:?}"),
            GitRef::Commit(hash) => write!(f, "commit {hash}"),
        }
    }
}

/// Credentials for a repository.
#[derive(Clone, PartialEq, Eq)]
pub enum GitAuth {
    /// https basic authentication (user name and password or token).
    Basic(BasicAuth),
    /// An ssh private key, and the known_hosts lines the server's key must match.
    Ssh {
        /// The private key (OpenSSH or PEM format, unencrypted).
        private_key: Vec<u8>,
        /// known_hosts content; required unless `insecure_skip_verify` is set.
        known_hosts: Option<Vec<u8>>,
    },
}

impl fmt::Debug for GitAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GitAuth::Basic(basic) => f.debug_tuple("Basic").field(basic).finish(),
            GitAuth::Ssh { known_hosts, .. } => f
                .debug_struct("Ssh")
                .field("private_key", &"<redacted>")
                .field("known_hosts", &known_hosts.is_some())
                .finish(),
        }
    }
}

impl GitAuth {
    /// Reads `ssh-privatekey` (and optional `ssh-knownhosts`) for ssh, else `username`
    /// and `password` for https: the layouts of `kubernetes.io/ssh-auth` and
    /// `kubernetes.io/basic-auth` Secrets.
    pub fn from_secret_data(data: &BTreeMap<String, ByteString>) -> Result<Self, SecretDataError> {
        if let Some(key) = data.get("ssh-privatekey") {
            return Ok(GitAuth::Ssh {
                private_key: key.0.clone(),
                known_hosts: data.get("ssh-knownhosts").map(|k| k.0.clone()),
            });
        }
        if data.contains_key("username") {
            return Ok(GitAuth::Basic(BasicAuth {
                username: utf8_key(data, "username")?,
                password: utf8_key(data, "password")?,
            }));
        }
        Err(SecretDataError {
            reason: "want ssh-privatekey, or username and password".to_owned(),
        })
    }

    /// [`GitAuth::from_secret_data`] on a Secret.
    pub fn from_secret(secret: &Secret) -> Result<Self, SecretDataError> {
        Self::from_secret_data(&secret.data.clone().unwrap_or_default())
    }
}

/// Why a repository could not become content.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// The URL cannot be parsed.
    #[error("failed to parse repository url {repository:?}: {reason}")]
    InvalidUrl {
        /// The URL as given.
        repository: String,
        /// What is wrong.
        reason: String,
    },
    /// The branch, tag or commit is malformed.
    #[error("failed to use {reference} of {repository}: {reason}")]
    InvalidRef {
        /// The repository.
        repository: String,
        /// The reference.
        reference: GitRef,
        /// What is wrong.
        reason: String,
    },
    /// The directory is not a clean relative path.
    #[error("failed to use directory {directory:?} of {repository}: {reason}")]
    InvalidDirectory {
        /// The repository.
        repository: String,
        /// The directory as given.
        directory: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// The certificate data cannot be used.
    #[error("failed to configure TLS for {repository}")]
    Tls {
        /// The repository.
        repository: String,
        /// What is wrong.
        #[source]
        source: TlsError,
    },
    /// ssh without known_hosts and without `insecure_skip_verify`.
    #[error(
        "failed to configure ssh for {repository}: known_hosts is required (or skip host key verification explicitly)"
    )]
    KnownHostsMissing {
        /// The repository.
        repository: String,
    },
    /// The branch, tag or commit does not exist on the server.
    #[error("failed to fetch {reference} from {repository}: not found: {message}")]
    RefNotFound {
        /// The repository.
        repository: String,
        /// The reference.
        reference: GitRef,
        /// What gitoxide said.
        message: String,
    },
    /// The server refused the credentials or demands some.
    #[error("failed to authenticate to {repository}: {message}")]
    Unauthorized {
        /// The repository.
        repository: String,
        /// What gitoxide said.
        message: String,
    },
    /// Connecting or fetching failed.
    #[error("failed to fetch {reference} from {repository}: {message}")]
    Fetch {
        /// The repository.
        repository: String,
        /// The reference.
        reference: GitRef,
        /// What gitoxide said.
        message: String,
    },
    /// Reading the fetched objects failed.
    #[error("failed to read commit {commit} of {repository}: {message}")]
    Objects {
        /// The repository.
        repository: String,
        /// The commit.
        commit: String,
        /// What gitoxide said.
        message: String,
    },
    /// The directory does not exist at that commit.
    #[error("failed to find directory {directory:?} in commit {commit} of {repository}")]
    DirectoryNotFound {
        /// The repository.
        repository: String,
        /// The commit.
        commit: String,
        /// The directory.
        directory: String,
    },
    /// The files are not acceptable content.
    #[error("failed to unpack commit {commit} of {repository}")]
    Content {
        /// The repository.
        repository: String,
        /// The commit.
        commit: String,
        /// What was refused.
        #[source]
        source: ArchiveError,
    },
    /// Temporary files could not be written.
    #[error("failed to prepare a working directory for {repository} at {path}")]
    Storage {
        /// The repository.
        repository: String,
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The fetch did not finish in time.
    #[error("failed to fetch {repository}: timed out")]
    Timeout {
        /// The repository.
        repository: String,
    },
    /// The fetch task failed.
    #[error("failed to fetch {repository}: the fetch task failed")]
    Task {
        /// The repository.
        repository: String,
    },
}

impl GitError {
    /// Whether retrying cannot help until the source changes. A missing ref and
    /// refused credentials are transient (the branch may be pushed, the Secret fixed).
    pub fn is_terminal(&self) -> bool {
        match self {
            // Local storage failing is not the content's fault.
            GitError::Content {
                source: ArchiveError::Write { .. },
                ..
            } => false,
            GitError::InvalidUrl { .. }
            | GitError::InvalidRef { .. }
            | GitError::InvalidDirectory { .. }
            | GitError::Tls { .. }
            | GitError::KnownHostsMissing { .. }
            | GitError::DirectoryNotFound { .. }
            | GitError::Content { .. } => true,
            GitError::RefNotFound { .. }
            | GitError::Unauthorized { .. }
            | GitError::Fetch { .. }
            | GitError::Objects { .. }
            | GitError::Storage { .. }
            | GitError::Timeout { .. }
            | GitError::Task { .. } => false,
        }
    }

    /// A stable snake_case label for metrics and event reasons.
    pub fn label(&self) -> &'static str {
        match self {
            GitError::InvalidUrl { .. } => "git_invalid_url",
            GitError::InvalidRef { .. } => "git_invalid_ref",
            GitError::InvalidDirectory { .. } => "git_invalid_directory",
            GitError::Tls { .. } => "git_invalid_tls",
            GitError::KnownHostsMissing { .. } => "git_known_hosts_missing",
            GitError::RefNotFound { .. } => "git_ref_not_found",
            GitError::Unauthorized { .. } => "git_unauthorized",
            GitError::Fetch { .. } => "git_fetch_failed",
            GitError::Objects { .. } => "git_objects_unreadable",
            GitError::DirectoryNotFound { .. } => "git_directory_not_found",
            GitError::Content { .. } => "git_invalid_content",
            GitError::Storage { .. } => "git_storage_failed",
            GitError::Timeout { .. } => "git_timeout",
            GitError::Task { .. } => "git_task_failed",
        }
    }
}

/// The program run for ssh transports; tests replace it.
const DEFAULT_SSH_PROGRAM: &str = "ssh";

/// Fetches and normalises the repository content.
pub async fn unpack(source: &GitSource, options: &UnpackOptions) -> Result<Unpacked, GitError> {
    unpack_with_ssh(source, options, DEFAULT_SSH_PROGRAM).await
}

/// [`unpack`] with another ssh program (for tests with a fake ssh).
#[doc(hidden)]
pub async fn unpack_with_ssh(
    source: &GitSource,
    options: &UnpackOptions,
    ssh_program: &str,
) -> Result<Unpacked, GitError> {
    let source = source.clone();
    let options = options.clone();
    let ssh_program = ssh_program.to_owned();
    let interrupt = Arc::new(AtomicBool::new(false));
    let task_interrupt = interrupt.clone();
    let repository = source.repository.clone();
    let timeout = options.timeout;
    let task = tokio::task::spawn_blocking(move || {
        fetch_and_read(&source, &options, &ssh_program, &task_interrupt)
    });
    match tokio::time::timeout(timeout, task).await {
        Ok(Ok(result)) => result,
        Ok(Err(_)) => Err(GitError::Task { repository }),
        Err(_) => {
            // gitoxide checks this flag between steps and stops the blocking fetch.
            interrupt.store(true, Ordering::Relaxed);
            Err(GitError::Timeout { repository })
        }
    }
}

struct Prepared {
    url: gix::Url,
    directory: String,
    revision: String,
    ssh_command: Option<String>,
}

fn fetch_and_read(
    source: &GitSource,
    options: &UnpackOptions,
    ssh_program: &str,
    interrupt: &AtomicBool,
) -> Result<Unpacked, GitError> {
    let repository = source.repository.clone();
    let work = options.temp_dir().map_err(|err| GitError::Storage {
        repository: repository.clone(),
        path: options.work_dir.clone().unwrap_or_else(std::env::temp_dir),
        source: err,
    })?;
    let prepared = prepare(source, work.path(), ssh_program)?;

    let shallow = fetch(
        source,
        &prepared,
        &work.path().join("shallow"),
        true,
        interrupt,
    );
    let repo = match (shallow, &source.reference) {
        (Ok(repo), _) => repo,
        // Servers may refuse a want for a bare commit id; a full fetch of branches and
        // tags finds any commit reachable from them.
        (Err(err), GitRef::Commit(_)) => {
            tracing::debug!(
                repository = %source.repository,
                error = %err,
                "fetching the commit by id failed; fetching all branches and tags"
            );
            fetch(
                source,
                &prepared,
                &work.path().join("full"),
                false,
                interrupt,
            )?
        }
        (Err(err), _) => return Err(err),
    };
    read_commit(source, &repo, &prepared, options)
}

fn prepare(source: &GitSource, work: &Path, ssh_program: &str) -> Result<Prepared, GitError> {
    let repository = source.repository.clone();
    let url = gix::url::parse(gix::bstr::BStr::new(repository.as_bytes())).map_err(|err| {
        GitError::InvalidUrl {
            repository: repository.clone(),
            reason: err.to_string(),
        }
    })?;
    let directory = match &source.directory {
        Some(dir) => paths::clean_str(dir).map_err(|problem| GitError::InvalidDirectory {
            repository: repository.clone(),
            directory: dir.clone(),
            reason: problem.describe(),
        })?,
        None => String::new(),
    };
    let invalid_ref = |reason: String| GitError::InvalidRef {
        repository: repository.clone(),
        reference: source.reference.clone(),
        reason,
    };
    let revision = match &source.reference {
        GitRef::Branch(name) | GitRef::Tag(name) => {
            let prefix = if matches!(source.reference, GitRef::Branch(_)) {
                "refs/heads/"
            } else {
                "refs/tags/"
            };
            let full = format!("{prefix}{name}");
            gix::refs::FullName::try_from(full.as_str())
                .map_err(|err| invalid_ref(err.to_string()))?;
            full
        }
        GitRef::Commit(hash) => {
            if hash.len() != 40 || !hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
                return Err(invalid_ref(
                    "want a full 40-digit lowercase hex commit hash".to_owned(),
                ));
            }
            hash.clone()
        }
    };
    let ssh_command = match (&source.auth, &url.scheme) {
        (
            Some(GitAuth::Ssh {
                private_key,
                known_hosts,
            }),
            gix::url::Scheme::Ssh,
        ) => Some(ssh_command(
            source,
            work,
            ssh_program,
            private_key,
            known_hosts.as_deref(),
        )?),
        (None, gix::url::Scheme::Ssh) => Some(ssh_command(source, work, ssh_program, &[], None)?),
        _ => None,
    };
    Ok(Prepared {
        url,
        directory,
        revision,
        ssh_command,
    })
}

/// Writes the key and known_hosts to private files and returns the ssh command line
/// that uses only them: no agent, no user config, no prompts.
fn ssh_command(
    source: &GitSource,
    work: &Path,
    program: &str,
    private_key: &[u8],
    known_hosts: Option<&[u8]>,
) -> Result<String, GitError> {
    let repository = &source.repository;
    let storage_err = |path: &Path, err| GitError::Storage {
        repository: repository.clone(),
        path: path.to_owned(),
        source: err,
    };
    let mut command = vec![
        quote(program),
        "-F".to_owned(),
        "/dev/null".to_owned(),
        "-o".to_owned(),
        "BatchMode=yes".to_owned(),
        "-o".to_owned(),
        "GlobalKnownHostsFile=/dev/null".to_owned(),
    ];
    match known_hosts {
        Some(known_hosts) => {
            let path = work.join("known_hosts");
            write_private(&path, known_hosts).map_err(|err| storage_err(&path, err))?;
            command.extend([
                "-o".to_owned(),
                format!("UserKnownHostsFile={}", quote(&path.to_string_lossy())),
                "-o".to_owned(),
                "StrictHostKeyChecking=yes".to_owned(),
            ]);
        }
        None if source.tls.insecure_skip_verify => command.extend([
            "-o".to_owned(),
            "UserKnownHostsFile=/dev/null".to_owned(),
            "-o".to_owned(),
            "StrictHostKeyChecking=no".to_owned(),
        ]),
        None => {
            return Err(GitError::KnownHostsMissing {
                repository: repository.clone(),
            });
        }
    }
    if !private_key.is_empty() {
        let path = work.join("id_key");
        let mut key = private_key.to_vec();
        // OpenSSH rejects a key without its final newline ("invalid format").
        if !key.ends_with(b"\n") {
            key.push(b'\n');
        }
        write_private(&path, &key).map_err(|err| storage_err(&path, err))?;
        command.extend([
            "-i".to_owned(),
            quote(&path.to_string_lossy()),
            "-o".to_owned(),
            "IdentitiesOnly=yes".to_owned(),
            "-o".to_owned(),
            "IdentityAgent=none".to_owned(),
        ]);
    }
    Ok(command.join(" "))
}

fn write_private(path: &Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(data)
}

/// Single-quotes a word for the shell that runs `core.sshCommand`.
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

fn fetch(
    source: &GitSource,
    prepared: &Prepared,
    path: &Path,
    shallow: bool,
    interrupt: &AtomicBool,
) -> Result<gix::Repository, GitError> {
    let repository = source.repository.clone();
    let fetch_err = |err: gix::Error| classify(source, err);
    let mut prepare = gix::clone::PrepareFetch::new(
        prepared.url.clone(),
        path,
        gix::create::Kind::Bare,
        gix::create::Options::default(),
        gix::open::Options::isolated(),
    )
    .map_err(fetch_err)?;
    if let Some(command) = &prepared.ssh_command {
        prepare = prepare.with_in_memory_config_overrides([
            format!("core.sshCommand={command}"),
            "ssh.variant=ssh".to_owned(),
        ]);
    }
    if shallow {
        prepare = prepare
            .with_revision(Some(prepared.revision.as_str()))
            .map_err(fetch_err)?
            .with_shallow(gix::remote::fetch::Shallow::DepthAtRemote(NonZeroU32::MIN));
    }
    let credentials = match &source.auth {
        Some(GitAuth::Basic(basic)) => Some(basic.clone()),
        _ => None,
    };
    let is_http = matches!(
        prepared.url.scheme,
        gix::url::Scheme::Http | gix::url::Scheme::Https
    );
    let tls = if is_http {
        Some(source.tls.rustls_config().map_err(|err| GitError::Tls {
            repository: repository.clone(),
            source: err,
        })?)
    } else {
        None
    };
    prepare = prepare.configure_connection(move |connection| {
        if let Some(basic) = credentials.clone() {
            connection.set_credentials(move |action| credentials_for(&basic, action));
        } else {
            // Never fall back to helpers or prompts from the environment.
            connection.set_credentials(|_| Ok(None));
        }
        if let Some(tls) = tls.clone() {
            connection.set_transport_options(http_options(tls));
        }
        Ok(())
    });
    let (repo, _outcome) = prepare
        .fetch_only(gix::progress::Discard, interrupt)
        .map_err(fetch_err)?;
    Ok(repo)
}

fn credentials_for(
    basic: &BasicAuth,
    action: gix::credentials::helper::Action,
) -> gix::Result<Option<gix::credentials::protocol::Outcome>> {
    match action {
        gix::credentials::helper::Action::Get(context) => {
            Ok(Some(gix::credentials::protocol::Outcome {
                identity: gix::sec::identity::Account {
                    username: basic.username.clone(),
                    password: basic.password.clone(),
                    oauth_refresh_token: None,
                },
                next: context.into(),
            }))
        }
        // Nothing is remembered between fetches.
        gix::credentials::helper::Action::Store(_) | gix::credentials::helper::Action::Erase(_) => {
            Ok(None)
        }
    }
}

/// Transport options that hand reqwest our rustls configuration (ring provider, extra
/// CA or no verification), as gitoxide's reqwest backend ignores `http.sslCAInfo`.
fn http_options(tls: rustls::ClientConfig) -> Box<dyn std::any::Any> {
    let backend = http::reqwest::Options {
        configure_client: Some(Box::new(
            move |builder: reqwest_013::blocking::ClientBuilder| {
                Ok(builder.tls_backend_preconfigured(tls.clone()))
            },
        )),
        configure_request: None,
    };
    Box::new(http::Options {
        backend: Some(Arc::new(Mutex::new(backend))),
        ..http::Options::default()
    })
}

fn classify(source: &GitSource, err: gix::Error) -> GitError {
    let message = render(&err);
    let repository = source.repository.clone();
    if err.is_unauthenticated() || err.is_permission_denied() {
        GitError::Unauthorized {
            repository,
            message,
        }
    } else if err.is_not_found() {
        GitError::RefNotFound {
            repository,
            reference: source.reference.clone(),
            message,
        }
    } else {
        GitError::Fetch {
            repository,
            reference: source.reference.clone(),
            message,
        }
    }
}

/// gitoxide's errors form a tree; flatten it into one line.
fn render(err: &gix::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in err.iter_errors() {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
    }
    parts.join(": ")
}

fn read_commit(
    source: &GitSource,
    repo: &gix::Repository,
    prepared: &Prepared,
    options: &UnpackOptions,
) -> Result<Unpacked, GitError> {
    let repository = source.repository.clone();
    let commit_id = match &source.reference {
        GitRef::Commit(hash) => {
            gix::ObjectId::from_hex(hash.as_bytes()).map_err(|err| GitError::InvalidRef {
                repository: repository.clone(),
                reference: source.reference.clone(),
                reason: err.to_string(),
            })?
        }
        _ => {
            let id = repo.head_id().map_err(|err| GitError::Objects {
                repository: repository.clone(),
                commit: "HEAD".to_owned(),
                message: render(&err),
            })?;
            id.detach()
        }
    };
    let hex = commit_id.to_string();
    let objects_err = |message: String| GitError::Objects {
        repository: repository.clone(),
        commit: hex.clone(),
        message,
    };
    let object = repo.find_object(commit_id).map_err(|err| {
        if let GitRef::Commit(_) = source.reference {
            GitError::RefNotFound {
                repository: repository.clone(),
                reference: source.reference.clone(),
                message: render(&err),
            }
        } else {
            objects_err(render(&err))
        }
    })?;
    let commit = object
        .peel_to_commit()
        .map_err(|err| objects_err(render(&err)))?;
    let commit_hex = commit.id.to_string();
    let mut tree = commit.tree().map_err(|err| objects_err(render(&err)))?;
    if !prepared.directory.is_empty() {
        let entry = tree
            .peel_to_entry_by_path(&prepared.directory)
            .map_err(|err| objects_err(render(&err)))?;
        let not_found = || GitError::DirectoryNotFound {
            repository: repository.clone(),
            commit: commit_hex.clone(),
            directory: prepared.directory.clone(),
        };
        let entry = entry.ok_or_else(not_found)?;
        if !entry.mode().is_tree() {
            return Err(not_found());
        }
        tree = entry
            .object()
            .map_err(|err| objects_err(render(&err)))?
            .into_tree();
    }

    let mut extractor = Extractor::new(options.limits).with_work_dir(options.work_dir.clone());
    let content_err = |source| GitError::Content {
        repository: repository.clone(),
        commit: commit_hex.clone(),
        source,
    };
    add_tree(
        repo,
        &tree,
        "",
        &mut extractor,
        options,
        &content_err,
        &objects_err,
    )?;
    let content = extractor.finish().map_err(content_err)?;
    Ok(Unpacked {
        content,
        resolved: ResolvedSource::Git {
            repository,
            commit: commit_hex,
            directory: (!prepared.directory.is_empty()).then(|| prepared.directory.clone()),
        },
    })
}

/// Adds the entries of `tree` below `prefix`, depth first. Submodules (commit entries)
/// cannot be fetched from here and are skipped, as `git archive` does.
fn add_tree(
    repo: &gix::Repository,
    tree: &gix::Tree<'_>,
    prefix: &str,
    extractor: &mut Extractor,
    options: &UnpackOptions,
    content_err: &dyn Fn(ArchiveError) -> GitError,
    objects_err: &dyn Fn(String) -> GitError,
) -> Result<(), GitError> {
    for entry in tree.iter() {
        let entry = entry.map_err(|err| objects_err(render(&err)))?;
        let name = entry.filename().to_string();
        let path = paths::join(prefix, &name);
        let mode = entry.mode();
        if mode.is_commit() {
            continue;
        }
        if mode.is_tree() {
            extractor.add_dir(&path).map_err(content_err)?;
            let subtree = entry
                .object()
                .map_err(|err| objects_err(render(&err)))?
                .into_tree();
            add_tree(
                repo,
                &subtree,
                &path,
                extractor,
                options,
                content_err,
                objects_err,
            )?;
            continue;
        }
        // Check the size before inflating the blob, so a huge blob is refused cheaply.
        let header = repo
            .find_header(entry.oid())
            .map_err(|err| objects_err(render(&err)))?;
        if header.size() > options.limits.max_uncompressed_bytes {
            return Err(content_err(ArchiveError::Limit(crate::LimitError::Size {
                limit: options.limits.max_uncompressed_bytes,
            })));
        }
        let blob = entry
            .object()
            .map_err(|err| objects_err(render(&err)))?
            .detach()
            .data;
        if mode.is_link() {
            let target = String::from_utf8(blob).map_err(|err| {
                content_err(ArchiveError::LinkEscapes {
                    path: path.clone(),
                    target: String::from_utf8_lossy(err.as_bytes()).into_owned(),
                })
            })?;
            extractor.add_symlink(&path, &target).map_err(content_err)?;
        } else {
            extractor
                .add_file(&path, Bytes::from(blob), mode.is_executable())
                .map_err(content_err)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(reference: GitRef) -> GitSource {
        GitSource {
            repository: "https://example.com/repo.git".to_owned(),
            directory: None,
            reference,
            auth: None,
            tls: TlsOptions::default(),
        }
    }

    #[test]
    fn commits_must_be_full_hashes() {
        let dir = tempfile::tempdir().unwrap();
        for bad in ["abc123", &"A".repeat(40), &"g".repeat(40)] {
            let err = prepare(&source(GitRef::Commit(bad.to_owned())), dir.path(), "ssh")
                .err()
                .unwrap();
            assert!(matches!(err, GitError::InvalidRef { .. }), "{bad}: {err}");
            assert!(err.is_terminal());
        }
        prepare(&source(GitRef::Commit("a".repeat(40))), dir.path(), "ssh").unwrap();
    }

    #[test]
    fn malformed_branch_names_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = prepare(
            &source(GitRef::Branch("a..b".to_owned())),
            dir.path(),
            "ssh",
        )
        .err()
        .unwrap();
        assert!(
            err.to_string().starts_with("failed to use branch \"a..b\""),
            "{err}"
        );
    }

    #[test]
    fn directories_that_leave_the_repository_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut src = source(GitRef::Branch("main".to_owned()));
        src.directory = Some("../x".to_owned());
        assert!(matches!(
            prepare(&src, dir.path(), "ssh"),
            Err(GitError::InvalidDirectory { .. })
        ));
    }

    #[test]
    fn ssh_pins_known_hosts_and_uses_only_the_given_key() {
        let dir = tempfile::tempdir().unwrap();
        let mut src = source(GitRef::Branch("main".to_owned()));
        src.repository = "git@example.com:org/repo.git".to_owned();
        src.auth = Some(GitAuth::Ssh {
            private_key: b"KEY".to_vec(),
            known_hosts: Some(b"example.com ssh-ed25519 AAAA".to_vec()),
        });
        let prepared = prepare(&src, dir.path(), "ssh").unwrap();
        let command = prepared.ssh_command.unwrap();
        assert!(command.contains("StrictHostKeyChecking=yes"), "{command}");
        assert!(command.contains("IdentitiesOnly=yes"), "{command}");
        assert!(command.contains("BatchMode=yes"), "{command}");
        let key = std::fs::read(dir.path().join("id_key")).unwrap();
        assert_eq!(key, b"KEY\n");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("id_key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn ssh_without_known_hosts_needs_an_explicit_opt_out() {
        let dir = tempfile::tempdir().unwrap();
        let mut src = source(GitRef::Branch("main".to_owned()));
        src.repository = "ssh://git@example.com/org/repo.git".to_owned();
        src.auth = Some(GitAuth::Ssh {
            private_key: b"KEY\n".to_vec(),
            known_hosts: None,
        });
        assert!(matches!(
            prepare(&src, dir.path(), "ssh"),
            Err(GitError::KnownHostsMissing { .. })
        ));
        src.tls.insecure_skip_verify = true;
        let dir = tempfile::tempdir().unwrap();
        let command = prepare(&src, dir.path(), "ssh")
            .unwrap()
            .ssh_command
            .unwrap();
        assert!(command.contains("StrictHostKeyChecking=no"), "{command}");
    }

    #[test]
    fn git_auth_is_read_from_ssh_or_basic_auth_secret_data() {
        let ssh = BTreeMap::from([
            ("ssh-privatekey".to_owned(), ByteString(b"k".to_vec())),
            ("ssh-knownhosts".to_owned(), ByteString(b"h".to_vec())),
        ]);
        assert_eq!(
            GitAuth::from_secret_data(&ssh).unwrap(),
            GitAuth::Ssh {
                private_key: b"k".to_vec(),
                known_hosts: Some(b"h".to_vec())
            }
        );
        let basic = BTreeMap::from([
            ("username".to_owned(), ByteString(b"u".to_vec())),
            ("password".to_owned(), ByteString(b"p".to_vec())),
        ]);
        assert!(matches!(
            GitAuth::from_secret_data(&basic).unwrap(),
            GitAuth::Basic(_)
        ));
        assert!(GitAuth::from_secret_data(&BTreeMap::new()).is_err());
    }

    #[test]
    fn quoting_survives_single_quotes() {
        assert_eq!(quote("it's"), r"'it'\''s'");
    }
}
