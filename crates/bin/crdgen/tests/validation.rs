//! Each validation rule of the CRDs rejects what it should, with the API server's own
//! message, and accepts the boundary case next to it.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use kube::api::{ApiResource, DynamicObject, PostParams};
use kube::{Api, Client, Resource};
use serde_json::{Value, json};
use testkit::{client, install_crds, unique_name};

async fn setup() -> Client {
    let client = client().await;
    install_crds(&client).await;
    client
}

fn api<K: Resource<DynamicType = ()>>(client: &Client) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &ApiResource::erase::<K>(&()))
}

fn object<K: Resource<DynamicType = ()>>(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "metadata": { "name": name },
        "spec": spec,
    }))
    .unwrap()
}

/// Creating the object must fail with a message containing every one of `expected`.
async fn rejected<K: Resource<DynamicType = ()>>(
    client: &Client,
    name: &str,
    spec: Value,
    expected: &[&str],
) {
    let result = api::<K>(client)
        .create(&PostParams::default(), &object::<K>(name, spec))
        .await;
    let err = match result {
        Ok(_) => panic!(
            "{} {name} was accepted; expected: {expected:?}",
            K::kind(&())
        ),
        Err(err) => err.to_string(),
    };
    for want in expected {
        assert!(err.contains(want), "message lacks {want:?}: {err}");
    }
}

async fn accepted<K: Resource<DynamicType = ()>>(client: &Client, name: &str, spec: Value) {
    api::<K>(client)
        .create(&PostParams::default(), &object::<K>(name, spec))
        .await
        .unwrap_or_else(|err| panic!("{} {name} was rejected: {err}", K::kind(&())));
}

fn image_spec() -> Value {
    json!({
        "provisionerClassName": "core-rukpak-io-plain",
        "source": { "type": "image", "image": { "ref": "registry.example/bundle:v1" } }
    })
}

fn git_spec(git: Value) -> Value {
    json!({ "provisionerClassName": "core-rukpak-io-plain", "source": { "type": "git", "git": git } })
}

/// A name of exactly `len` characters.
fn name_of_length(len: usize) -> String {
    let prefix = unique_name("n");
    format!("{prefix}{}", "x".repeat(len - prefix.len()))
}

use rukpak_api::{Bundle, BundleDeployment, ProvisionerClass};

#[tokio::test]
async fn a_bundle_source_must_set_exactly_one_source() {
    let client = setup().await;
    let two = json!({
        "provisionerClassName": "core-rukpak-io-plain",
        "source": { "type": "image", "image": { "ref": "r/b:v1" },
                    "git": { "repository": "https://g.example/r.git", "ref": { "branch": "main" } } }
    });
    rejected::<Bundle>(
        &client,
        &unique_name("two"),
        two,
        &["exactly one of image, git, http, configMaps or upload must be set"],
    )
    .await;
    let none =
        json!({ "provisionerClassName": "core-rukpak-io-plain", "source": { "type": "image" } });
    rejected::<Bundle>(
        &client,
        &unique_name("none"),
        none,
        &["exactly one of image, git, http, configMaps or upload must be set"],
    )
    .await;
}

#[tokio::test]
async fn a_bundle_source_must_match_its_type() {
    let client = setup().await;
    let mismatched = json!({
        "provisionerClassName": "core-rukpak-io-plain",
        "source": { "type": "git", "image": { "ref": "r/b:v1" } }
    });
    rejected::<Bundle>(
        &client,
        &unique_name("mismatch"),
        mismatched,
        &["the field named by type must be set"],
    )
    .await;
    let unknown = json!({ "provisionerClassName": "core-rukpak-io-plain", "source": { "type": "ftp", "image": { "ref": "r" } } });
    rejected::<Bundle>(
        &client,
        &unique_name("ftp"),
        unknown,
        &["spec.source.type", "Unsupported value: \"ftp\""],
    )
    .await;
}

#[tokio::test]
async fn a_bundle_spec_cannot_change_but_its_metadata_can() {
    let client = setup().await;
    let name = unique_name("immutable");
    accepted::<Bundle>(&client, &name, image_spec()).await;
    let bundles = api::<Bundle>(&client);
    let mut changed = bundles.get(&name).await.unwrap();
    changed.data["spec"]["source"]["image"]["ref"] = json!("registry.example/bundle:v2");
    let err = bundles
        .replace(&name, &PostParams::default(), &changed)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("spec is immutable: create a new Bundle instead"),
        "{err}"
    );

    let mut labelled = bundles.get(&name).await.unwrap();
    labelled.metadata.labels = Some([("relabelled".to_owned(), "yes".to_owned())].into());
    bundles
        .replace(&name, &PostParams::default(), &labelled)
        .await
        .unwrap();
}

#[tokio::test]
async fn bundle_names_are_limited_to_52_characters() {
    let client = setup().await;
    rejected::<Bundle>(
        &client,
        &name_of_length(53),
        image_spec(),
        &["Too long: may not be longer than 52"],
    )
    .await;
    accepted::<Bundle>(&client, &name_of_length(52), image_spec()).await;
}

fn deployment_spec(class: &str, template_class: &str) -> Value {
    json!({
        "provisionerClassName": class,
        "template": { "spec": {
            "provisionerClassName": template_class,
            "source": { "type": "image", "image": { "ref": "r/b:v1" } }
        }}
    })
}

#[tokio::test]
async fn bundle_deployment_names_are_limited_to_45_characters() {
    let client = setup().await;
    let spec = deployment_spec("core-rukpak-io-plain", "core-rukpak-io-registry");
    rejected::<BundleDeployment>(
        &client,
        &name_of_length(46),
        spec.clone(),
        &["Too long: may not be longer than 45"],
    )
    .await;
    accepted::<BundleDeployment>(&client, &name_of_length(45), spec).await;
}

#[tokio::test]
async fn class_names_must_be_dns_labels() {
    let client = setup().await;
    for bad in [
        "invalid/class-name",
        "Plain",
        "-plain",
        "plain-",
        "a".repeat(64).as_str(),
    ] {
        let bundle = json!({ "provisionerClassName": bad, "source": { "type": "image", "image": { "ref": "r/b:v1" } } });
        rejected::<Bundle>(
            &client,
            &unique_name("class"),
            bundle,
            &["spec.provisionerClassName"],
        )
        .await;
        let on_deployment = deployment_spec(bad, "core-rukpak-io-plain");
        rejected::<BundleDeployment>(
            &client,
            &unique_name("class"),
            on_deployment,
            &["spec.provisionerClassName"],
        )
        .await;
        let on_template = deployment_spec("core-rukpak-io-plain", bad);
        rejected::<BundleDeployment>(
            &client,
            &unique_name("class"),
            on_template,
            &["spec.template.spec.provisionerClassName"],
        )
        .await;
    }
    rejected::<ProvisionerClass>(
        &client,
        "Bad.Name",
        json!({ "provisioner": "x" }),
        &["metadata.name must be a DNS label"],
    )
    .await;
}

#[tokio::test]
async fn a_git_ref_sets_exactly_one_of_branch_tag_or_commit() {
    let client = setup().await;
    let two = git_spec(
        json!({ "repository": "https://g.example/r.git", "ref": { "branch": "main", "tag": "v1" } }),
    );
    rejected::<Bundle>(
        &client,
        &unique_name("refs"),
        two,
        &["exactly one of branch, tag or commit must be set"],
    )
    .await;
    let none = git_spec(json!({ "repository": "https://g.example/r.git", "ref": {} }));
    rejected::<Bundle>(
        &client,
        &unique_name("refs"),
        none,
        &["exactly one of branch, tag or commit must be set"],
    )
    .await;
    let short_commit =
        git_spec(json!({ "repository": "https://g.example/r.git", "ref": { "commit": "abc123" } }));
    rejected::<Bundle>(
        &client,
        &unique_name("refs"),
        short_commit,
        &["spec.source.git.ref.commit"],
    )
    .await;
}

#[tokio::test]
async fn a_git_directory_may_not_escape_the_repository() {
    let client = setup().await;
    for bad in ["../secrets", "manifests/../../etc", "/etc", ".."] {
        let spec = git_spec(
            json!({ "repository": "https://g.example/r.git", "directory": bad, "ref": { "branch": "main" } }),
        );
        rejected::<Bundle>(
            &client,
            &unique_name("dir"),
            spec,
            &["directory must be a relative path inside the repository"],
        )
        .await;
    }
    for good in ["manifests", "bundles/etcd/..manifests", "a/b.."] {
        let spec = git_spec(
            json!({ "repository": "https://g.example/r.git", "directory": good, "ref": { "branch": "main" } }),
        );
        accepted::<Bundle>(&client, &unique_name("dir"), spec).await;
    }
}

#[tokio::test]
async fn a_config_map_path_may_not_escape_the_bundle() {
    let client = setup().await;
    let spec = json!({
        "provisionerClassName": "core-rukpak-io-plain",
        "source": { "type": "configMaps", "configMaps": [{ "configMap": { "name": "cm" }, "path": "../x" }] }
    });
    rejected::<Bundle>(
        &client,
        &unique_name("cm"),
        spec,
        &["path must be relative and stay inside the bundle"],
    )
    .await;
}

#[tokio::test]
async fn platform_operator_package_names_are_anchored_dns_labels_of_at_most_56_characters() {
    use platform_api::PlatformOperator;
    let client = setup().await;
    let spec = |name: &str| json!({ "package": { "name": name } });
    rejected::<PlatformOperator>(
        &client,
        &unique_name("po"),
        spec(&"a".repeat(57)),
        &["spec.package.name", "Too long: may not be more than 56"],
    )
    .await;
    // Upstream's unanchored pattern accepted these because they contain a valid substring.
    for bad in [
        "-cert-manager",
        "cert-manager-",
        "Cert-Manager",
        "cert_manager",
        "cert manager",
    ] {
        rejected::<PlatformOperator>(
            &client,
            &unique_name("po"),
            spec(bad),
            &["spec.package.name", "should match"],
        )
        .await;
    }
    accepted::<PlatformOperator>(&client, &unique_name("po"), spec(&"a".repeat(56))).await;
}

#[tokio::test]
async fn active_resolution_constraints_must_be_well_formed() {
    use deppy_api::ActiveResolution;
    let client = setup().await;
    let two_kinds = json!({ "constraints": [{ "required": { "name": "etcd" }, "prohibited": { "name": "etcd" } }] });
    rejected::<ActiveResolution>(&client, &unique_name("ar"), two_kinds, &["each constraint sets exactly one of required, gvkRequired, prohibited, installed or expression"]).await;
    let empty_entry = json!({ "constraints": [{}] });
    rejected::<ActiveResolution>(
        &client,
        &unique_name("ar"),
        empty_entry,
        &["each constraint sets exactly one"],
    )
    .await;
    let no_constraints = json!({ "constraints": [] });
    rejected::<ActiveResolution>(
        &client,
        &unique_name("ar"),
        no_constraints,
        &["spec.constraints"],
    )
    .await;
    for bad in [
        "required(etcd)",
        r#"required("etcd", ">=1", "stable", "extra")"#,
        r#"prohibited("etcd")"#,
        r#"required("")"#,
    ] {
        let spec = json!({ "constraints": [{ "expression": bad }] });
        rejected::<ActiveResolution>(
            &client,
            &unique_name("ar"),
            spec,
            &["spec.constraints[0].expression", "should match"],
        )
        .await;
    }
    for good in [
        r#"required("etcd")"#,
        r#"required("first-example-operator", ">= 1.0.0", "stable")"#,
        r#" required( "etcd" , "" ) "#,
    ] {
        let spec = json!({ "constraints": [{ "expression": good }] });
        accepted::<ActiveResolution>(&client, &unique_name("ar"), spec).await;
    }
}

#[tokio::test]
async fn a_catalog_sets_exactly_one_source() {
    use deppy_api::Catalog;
    let client = setup().await;
    let both = json!({ "source": { "image": { "ref": "r/c:latest" }, "configMap": { "name": "c", "namespace": "deppy-system" } } });
    rejected::<Catalog>(
        &client,
        &unique_name("cat"),
        both,
        &["exactly one of image or configMap must be set"],
    )
    .await;
    let none = json!({ "source": {} });
    rejected::<Catalog>(
        &client,
        &unique_name("cat"),
        none,
        &["exactly one of image or configMap must be set"],
    )
    .await;
    let bad_interval =
        json!({ "source": { "image": { "ref": "r/c:latest" } }, "pollInterval": "often" });
    rejected::<Catalog>(
        &client,
        &unique_name("cat"),
        bad_interval,
        &["spec.pollInterval"],
    )
    .await;
}
