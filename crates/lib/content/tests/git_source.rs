//! The git source against real git servers: `git daemon` (git://), `git http-backend`
//! behind a TLS server with basic auth (https://), and ssh through a stand-in `ssh`
//! program that runs `git-upload-pack` locally.

// Test helpers outside #[test] functions unwrap too; a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use content::source::git::{self, GitAuth, GitError, GitRef, GitSource};
use content::source::{BasicAuth, ResolvedSource, TlsOptions, UnpackOptions};
use content::{Limits, Unpacked, report};
use tokio::io::AsyncWriteExt;

fn source(repository: &str, reference: GitRef) -> GitSource {
    GitSource {
        repository: repository.to_owned(),
        directory: None,
        reference,
        auth: None,
        tls: TlsOptions::default(),
    }
}

fn files(unpacked: &Unpacked) -> Vec<(String, String)> {
    unpacked
        .content
        .files(&Limits::default())
        .unwrap()
        .iter()
        .map(|(p, d)| (p.to_owned(), String::from_utf8_lossy(d).into_owned()))
        .collect()
}

fn commit(unpacked: &Unpacked) -> String {
    match &unpacked.resolved {
        ResolvedSource::Git { commit, .. } => commit.clone(),
        other => panic!("wrong resolved source {other:?}"),
    }
}

fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

#[tokio::test]
async fn a_branch_is_fetched_at_its_tip() {
    let fixture = common::GitFixture::create();
    let daemon = common::GitDaemon::start(fixture.root.path());
    let url = format!("git://127.0.0.1:{}/repo.git", daemon.port);

    let main = git::unpack(
        &source(&url, GitRef::Branch("main".into())),
        &UnpackOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(commit(&main), fixture.second);
    assert_eq!(
        files(&main),
        owned(&[
            ("docs/readme.md", "docs"),
            ("manifests/a.yaml", "v2"),
            ("manifests/run.sh", "#!/bin/sh\n"),
        ])
    );

    let feature = git::unpack(
        &source(&url, GitRef::Branch("feature".into())),
        &UnpackOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(commit(&feature), fixture.feature);
    assert!(
        files(&feature)
            .iter()
            .any(|(p, _)| p == "manifests/feature.yaml")
    );
}

#[tokio::test]
async fn executable_files_keep_their_executable_bit() {
    let fixture = common::GitFixture::create();
    let daemon = common::GitDaemon::start(fixture.root.path());
    let url = format!("git://127.0.0.1:{}/repo.git", daemon.port);
    let main = git::unpack(
        &source(&url, GitRef::Branch("main".into())),
        &UnpackOptions::default(),
    )
    .await
    .unwrap();
    let decoded = flate2::read::GzDecoder::new(main.content.reader());
    let mut archive = tar::Archive::new(decoded);
    let modes: Vec<(String, u32)> = archive
        .entries()
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.path().unwrap().display().to_string(),
                e.header().mode().unwrap(),
            )
        })
        .filter(|(p, _)| p.starts_with("manifests/") && !p.ends_with('/'))
        .collect();
    assert_eq!(
        modes,
        [
            ("manifests/a.yaml".to_owned(), 0o644),
            ("manifests/run.sh".to_owned(), 0o755)
        ]
    );
}

#[tokio::test]
async fn annotated_and_lightweight_tags_resolve_to_their_commits() {
    let fixture = common::GitFixture::create();
    let daemon = common::GitDaemon::start(fixture.root.path());
    let url = format!("git://127.0.0.1:{}/repo.git", daemon.port);

    let v1 = git::unpack(
        &source(&url, GitRef::Tag("v1".into())),
        &UnpackOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(commit(&v1), fixture.first, "the annotated tag is peeled");
    assert!(files(&v1).contains(&("manifests/a.yaml".to_owned(), "v1".to_owned())));

    let light = git::unpack(
        &source(&url, GitRef::Tag("light".into())),
        &UnpackOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(commit(&light), fixture.feature);
}

#[tokio::test]
async fn a_commit_that_is_not_a_branch_tip_is_fetched_by_its_hash() {
    let fixture = common::GitFixture::create();
    let daemon = common::GitDaemon::start(fixture.root.path());
    let url = format!("git://127.0.0.1:{}/repo.git", daemon.port);
    let unpacked = git::unpack(
        &source(&url, GitRef::Commit(fixture.first.clone())),
        &UnpackOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(commit(&unpacked), fixture.first);
    assert_eq!(
        files(&unpacked),
        owned(&[("docs/readme.md", "docs"), ("manifests/a.yaml", "v1")])
    );
}

#[tokio::test]
async fn a_directory_of_the_repository_becomes_the_root() {
    let fixture = common::GitFixture::create();
    let daemon = common::GitDaemon::start(fixture.root.path());
    let url = format!("git://127.0.0.1:{}/repo.git", daemon.port);
    let mut src = source(&url, GitRef::Branch("main".into()));
    src.directory = Some("./manifests/".into());
    let unpacked = git::unpack(&src, &UnpackOptions::default()).await.unwrap();
    assert_eq!(
        files(&unpacked),
        owned(&[("a.yaml", "v2"), ("run.sh", "#!/bin/sh\n")])
    );
    assert_eq!(
        unpacked.resolved,
        ResolvedSource::Git {
            repository: url,
            commit: fixture.second,
            directory: Some("manifests".into())
        }
    );

    src.directory = Some("nope".into());
    let err = git::unpack(&src, &UnpackOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, GitError::DirectoryNotFound { .. }),
        "{}",
        report(&err)
    );
}

#[tokio::test]
async fn unknown_branches_tags_and_commits_are_not_found_errors() {
    let fixture = common::GitFixture::create();
    let daemon = common::GitDaemon::start(fixture.root.path());
    let url = format!("git://127.0.0.1:{}/repo.git", daemon.port);
    for reference in [
        GitRef::Branch("nope".into()),
        GitRef::Tag("v9".into()),
        GitRef::Commit("0123456789abcdef0123456789abcdef01234567".into()),
    ] {
        let err = git::unpack(&source(&url, reference.clone()), &UnpackOptions::default())
            .await
            .unwrap_err();
        assert!(
            matches!(err, GitError::RefNotFound { .. }),
            "{reference}: {}",
            report(&err)
        );
        assert!(
            err.to_string().starts_with(&format!(
                "failed to fetch {reference} from {url}: not found"
            )),
            "{}",
            report(&err)
        );
    }
}

/// `git http-backend` as CGI behind basic auth (alice:s3cret).
async fn http_backend(State(root): State<Arc<PathBuf>>, request: Request) -> Response {
    let authorised = request
        .headers()
        .get(header::AUTHORIZATION)
        .is_some_and(|v| v == "Basic YWxpY2U6czNjcmV0");
    if !authorised {
        let mut response = (StatusCode::UNAUTHORIZED, "").into_response();
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"git\""),
        );
        return response;
    }
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 64 * 1024 * 1024).await.unwrap();
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let mut child = tokio::process::Command::new("git")
        .arg("http-backend")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_PROJECT_ROOT", root.as_os_str())
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", parts.method.as_str())
        .env("PATH_INFO", parts.uri.path())
        .env("QUERY_STRING", parts.uri.query().unwrap_or_default())
        .env("CONTENT_TYPE", header("content-type"))
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("HTTP_CONTENT_ENCODING", header("content-encoding"))
        .env("GIT_PROTOCOL", header("git-protocol"))
        .env("REMOTE_USER", "alice")
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&body).await.unwrap();
    drop(stdin);
    let output = child.wait_with_output().await.unwrap();
    let out = output.stdout;
    let split = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4))
        .or_else(|| out.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2)))
        .unwrap();
    let head = String::from_utf8_lossy(&out[..split.0]).into_owned();
    let mut response = Response::builder().status(200);
    for line in head.lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("status") {
            let code: u16 = value.split_whitespace().next().unwrap().parse().unwrap();
            response = response.status(code);
        } else {
            response = response.header(name, value);
        }
    }
    response
        .body(Body::from(out[split.0 + split.1..].to_vec()))
        .unwrap()
}

async fn https_server(fixture: &common::GitFixture) -> (String, String) {
    let router = Router::new()
        .fallback(http_backend)
        .with_state(Arc::new(fixture.root.path().to_owned()));
    let (cert, config) = common::tls_server_config();
    let addr = common::serve(router, Some(config)).await;
    (format!("https://127.0.0.1:{}/repo.git", addr.port()), cert)
}

#[tokio::test]
async fn https_with_basic_auth_and_a_private_ca_works_and_wrong_credentials_fail() {
    let fixture = common::GitFixture::create();
    let (url, cert) = https_server(&fixture).await;
    let mut src = source(&url, GitRef::Branch("main".into()));
    src.tls.certificate_data = Some(cert.into_bytes());
    src.auth = Some(GitAuth::Basic(BasicAuth {
        username: "alice".into(),
        password: "s3cret".into(),
    }));
    let unpacked = git::unpack(&src, &UnpackOptions::default()).await.unwrap();
    assert_eq!(commit(&unpacked), fixture.second);

    src.auth = Some(GitAuth::Basic(BasicAuth {
        username: "alice".into(),
        password: "wrong".into(),
    }));
    let err = git::unpack(&src, &UnpackOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, GitError::Unauthorized { .. }),
        "{}",
        report(&err)
    );
    assert!(!err.is_terminal(), "the secret can be fixed");

    src.auth = None;
    let err = git::unpack(&src, &UnpackOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, GitError::Unauthorized { .. }),
        "{}",
        report(&err)
    );
}

#[tokio::test]
async fn https_with_an_unknown_certificate_fails_unless_verification_is_skipped() {
    let fixture = common::GitFixture::create();
    let (url, _cert) = https_server(&fixture).await;
    let mut src = source(&url, GitRef::Tag("v1".into()));
    src.auth = Some(GitAuth::Basic(BasicAuth {
        username: "alice".into(),
        password: "s3cret".into(),
    }));
    let err = git::unpack(&src, &UnpackOptions::default())
        .await
        .unwrap_err();
    assert!(
        report(&err).to_lowercase().contains("certificate"),
        "{}",
        report(&err)
    );
    src.tls.insecure_skip_verify = true;
    let unpacked = git::unpack(&src, &UnpackOptions::default()).await.unwrap();
    assert_eq!(commit(&unpacked), fixture.first);
}

#[tokio::test]
async fn ssh_uses_the_given_key_and_pinned_known_hosts() {
    let fixture = common::GitFixture::create();
    let scratch = tempfile::tempdir().unwrap();
    let log = scratch.path().join("ssh-args");
    let fake_ssh = scratch.path().join("fake-ssh");
    // Stands in for OpenSSH: records its arguments and the files they name, then runs
    // the remote command (the words after the host, as ssh joins them) locally.
    std::fs::write(
        &fake_ssh,
        format!(
            r#"#!/bin/sh
printf '%s\n' "$@" > '{log}'
command=""
after_host=""
for arg; do
  if [ -n "$after_host" ]; then command="$command $arg"; fi
  case "$arg" in
    UserKnownHostsFile=*) cat "${{arg#UserKnownHostsFile=}}" >> '{log}.known_hosts' ;;
    *@example.test) after_host=1 ;;
  esac
  if [ "$prev" = "-i" ]; then cat "$arg" > '{log}.key'; fi
  prev="$arg"
done
exec sh -c "$command"
"#,
            log = log.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake_ssh, std::fs::Permissions::from_mode(0o755)).unwrap();

    let url = format!("ssh://git@example.test{}", fixture.bare.display());
    let mut src = source(&url, GitRef::Branch("main".into()));
    src.auth = Some(GitAuth::Ssh {
        private_key:
            b"-----BEGIN OPENSSH PRIVATE KEY-----\nfake\n-----END OPENSSH PRIVATE KEY-----".to_vec(),
        known_hosts: Some(b"example.test ssh-ed25519 AAAAfake".to_vec()),
    });
    let unpacked =
        git::unpack_with_ssh(&src, &UnpackOptions::default(), fake_ssh.to_str().unwrap())
            .await
            .unwrap_or_else(|err| panic!("{}", report(&err)));
    assert_eq!(commit(&unpacked), fixture.second);

    let args = std::fs::read_to_string(&log).unwrap();
    for expected in [
        "StrictHostKeyChecking=yes",
        "IdentitiesOnly=yes",
        "BatchMode=yes",
        "git@example.test",
    ] {
        assert!(
            args.lines().any(|l| l.contains(expected)),
            "{expected} not in {args}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(format!("{}.known_hosts", log.display())).unwrap(),
        "example.test ssh-ed25519 AAAAfake"
    );
    assert!(
        std::fs::read_to_string(format!("{}.key", log.display()))
            .unwrap()
            .ends_with("-----END OPENSSH PRIVATE KEY-----\n")
    );
}
