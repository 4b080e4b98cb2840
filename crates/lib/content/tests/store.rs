//! The content store against a real API server (and its garbage collector).

// Test helpers outside #[test] functions unwrap too; a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use content::store::{
    ANNOTATION_CHUNK_DIGEST, ANNOTATION_DIGEST, DATA_KEY, LABEL_CHUNK, LABEL_CHUNKS, Store,
    StoreError,
};
use content::{Content, Extractor, Limits, UploadInput, report, upload};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::{Api, ResourceExt};
use rand::RngCore;
use testkit::TestNamespace;

/// A ConfigMap in the namespace to own content (owners must exist, or the garbage
/// collector removes the content at once).
async fn owner(api: &Api<ConfigMap>, name: &str) -> OwnerReference {
    let created = api
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    name: Some(name.to_owned()),
                    ..ObjectMeta::default()
                },
                ..ConfigMap::default()
            },
        )
        .await
        .unwrap();
    OwnerReference {
        api_version: "v1".to_owned(),
        kind: "ConfigMap".to_owned(),
        name: name.to_owned(),
        uid: created.uid().unwrap(),
        ..OwnerReference::default()
    }
}

/// Content of about `size` bytes that gzip cannot shrink (random files).
fn random_content(size: usize) -> Content {
    let mut rng = rand::rng();
    let mut extractor = Extractor::new(Limits::default());
    let file_size = 1024 * 1024;
    for i in 0..size.div_ceil(file_size) {
        let mut data = vec![0u8; file_size.min(size - i * file_size)];
        rng.fill_bytes(&mut data);
        extractor
            .add_file(&format!("blobs/{i:03}.bin"), data, false)
            .unwrap();
    }
    extractor.finish().unwrap()
}

fn small_content(text: &str) -> Content {
    let mut extractor = Extractor::new(Limits::default());
    extractor
        .add_file("manifests/a.yaml", text.as_bytes().to_vec(), false)
        .unwrap();
    extractor.finish().unwrap()
}

async fn chunks(api: &Api<ConfigMap>, content: &Content) -> Vec<ConfigMap> {
    api.list(&ListParams::default().labels(&Store::selector(content.digest())))
        .await
        .unwrap()
        .items
}

#[tokio::test]
async fn a_20_mib_bundle_round_trips_through_several_verified_chunks() {
    let client = testkit::client().await;
    let ns = TestNamespace::create(&client, "content-store").await;
    let api: Api<ConfigMap> = ns.api();
    let store = Store::new(client.clone(), ns.name());
    let owner = owner(&api, "owner").await;
    let content = random_content(20 * 1024 * 1024);
    assert!(content.size() >= 20 * 1024 * 1024);

    let stored = store.write(&content, &owner).await.unwrap();
    assert_eq!(&stored.digest, content.digest());
    assert_eq!(stored.size, content.size());
    assert_eq!(
        u64::from(stored.chunks),
        content.size().div_ceil(900 * 1024),
        "900 KiB chunks"
    );

    let objects = chunks(&api, &content).await;
    assert_eq!(objects.len() as u32, stored.chunks);
    for object in &objects {
        assert_eq!(object.immutable, Some(true));
        let data = &object.binary_data.as_ref().unwrap()[DATA_KEY].0;
        assert!(data.len() <= 900 * 1024);
        assert_eq!(object.labels()[LABEL_CHUNKS], stored.chunks.to_string());
        assert_eq!(
            object.annotations()[ANNOTATION_DIGEST],
            content.digest().to_string()
        );
        assert_eq!(object.owner_references(), std::slice::from_ref(&owner));
    }

    let read = store.read(content.digest()).await.unwrap();
    assert_eq!(read.digest(), content.digest());
    assert_eq!(read.data(), content.data());
    assert_eq!(store.stat(content.digest()).await.unwrap(), Some(stored));
    ns.delete().await;
}

#[tokio::test]
async fn a_corrupted_chunk_is_detected_never_returned_and_repaired_by_the_next_write() {
    let client = testkit::client().await;
    let ns = TestNamespace::create(&client, "content-corrupt").await;
    let api: Api<ConfigMap> = ns.api();
    let store = Store::new(client.clone(), ns.name()).with_chunk_size(64 * 1024);
    let owner = owner(&api, "owner").await;
    let content = random_content(300 * 1024);
    let stored = store.write(&content, &owner).await.unwrap();
    assert!(stored.chunks >= 4, "{} chunks", stored.chunks);

    // Immutable data cannot be patched: replace chunk 2 with different bytes under the
    // same name, labels and annotations.
    let name = Store::chunk_name(content.digest(), 2);
    let original = api.get(&name).await.unwrap();
    api.delete(&name, &DeleteParams::default()).await.unwrap();
    let mut forged = original.clone();
    forged.metadata = ObjectMeta {
        name: original.metadata.name.clone(),
        labels: original.metadata.labels.clone(),
        annotations: original.metadata.annotations.clone(),
        owner_references: original.metadata.owner_references.clone(),
        ..ObjectMeta::default()
    };
    let data = &mut forged
        .binary_data
        .as_mut()
        .unwrap()
        .get_mut(DATA_KEY)
        .unwrap()
        .0;
    data[0] ^= 0xff;
    api.create(&PostParams::default(), &forged).await.unwrap();

    let err = store.read(content.digest()).await.unwrap_err();
    assert!(
        matches!(err, StoreError::Corrupt { .. }),
        "{}",
        report(&err)
    );
    assert!(report(&err).contains(&format!("configmap {}/{name} is corrupted", ns.name())));

    // Even a chunk whose own digest annotation was forged to match is caught by the
    // digest of the whole.
    api.delete(&name, &DeleteParams::default()).await.unwrap();
    let forged_digest = content::Digest::of(&forged.binary_data.as_ref().unwrap()[DATA_KEY].0);
    forged.metadata.annotations.as_mut().unwrap().insert(
        ANNOTATION_CHUNK_DIGEST.to_owned(),
        forged_digest.to_string(),
    );
    api.create(&PostParams::default(), &forged).await.unwrap();
    let err = store.read(content.digest()).await.unwrap_err();
    assert!(
        matches!(err, StoreError::Corrupt { .. }),
        "{}",
        report(&err)
    );

    api.delete(&name, &DeleteParams::default()).await.unwrap();
    let err = store.read(content.digest()).await.unwrap_err();
    assert!(
        matches!(err, StoreError::MissingChunk { index: 2, .. }),
        "{}",
        report(&err)
    );

    // Writing again recreates the missing chunk; a corrupted one is replaced.
    api.create(&PostParams::default(), &forged).await.unwrap();
    store.write(&content, &owner).await.unwrap();
    assert_eq!(store.read(content.digest()).await.unwrap(), content);
    let repaired = api.get(&name).await.unwrap();
    assert_eq!(repaired.binary_data, original.binary_data);
    ns.delete().await;
}

#[tokio::test]
async fn shared_content_written_twice_is_stored_once_with_two_owners() {
    let client = testkit::client().await;
    let ns = TestNamespace::create(&client, "content-shared").await;
    let api: Api<ConfigMap> = ns.api();
    let store = Store::new(client.clone(), ns.name()).with_chunk_size(1024);
    let first = owner(&api, "first").await;
    let second = owner(&api, "second").await;
    let content = random_content(3000);

    let a = store.write(&content, &first).await.unwrap();
    let b = store.write(&content, &second).await.unwrap();
    assert_eq!(a, b);
    let objects = chunks(&api, &content).await;
    assert_eq!(objects.len() as u32, a.chunks, "no duplicate chunks");
    for object in objects {
        let mut uids: Vec<&str> = object
            .owner_references()
            .iter()
            .map(|o| o.uid.as_str())
            .collect();
        uids.sort_unstable();
        let mut expected = [first.uid.as_str(), second.uid.as_str()];
        expected.sort_unstable();
        assert_eq!(uids, expected);
    }
    // Writing again with an existing owner changes nothing.
    store.write(&content, &first).await.unwrap();
    assert_eq!(chunks(&api, &content).await[0].owner_references().len(), 2);
    ns.delete().await;
}

#[tokio::test]
async fn two_writers_racing_on_the_same_digest_both_succeed() {
    let client = testkit::client().await;
    let ns = TestNamespace::create(&client, "content-race").await;
    let api: Api<ConfigMap> = ns.api();
    let store = Store::new(client.clone(), ns.name()).with_chunk_size(4096);
    let first = owner(&api, "first").await;
    let second = owner(&api, "second").await;
    let content = random_content(64 * 1024);

    let (a, b) = tokio::join!(
        store.write(&content, &first),
        store.write(&content, &second)
    );
    assert_eq!(a.unwrap(), b.unwrap());
    for object in chunks(&api, &content).await {
        assert_eq!(object.owner_references().len(), 2, "{}", object.name_any());
    }
    assert_eq!(store.read(content.digest()).await.unwrap(), content);
    ns.delete().await;
}

#[tokio::test]
async fn content_is_garbage_collected_when_its_last_owner_goes() {
    let client = testkit::client().await;
    let ns = TestNamespace::create(&client, "content-gc").await;
    let api: Api<ConfigMap> = ns.api();
    let store = Store::new(client.clone(), ns.name()).with_chunk_size(1024);
    let first = owner(&api, "first").await;
    let second = owner(&api, "second").await;
    let content = small_content("gc me");
    let other = small_content("keep me");
    store.write(&content, &first).await.unwrap();
    store.write(&content, &second).await.unwrap();
    store.write(&other, &second).await.unwrap();

    api.delete("first", &DeleteParams::background())
        .await
        .unwrap();
    // Give the collector time to (wrongly) act, then check the content survived.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(store.read(content.digest()).await.unwrap(), content);
    let owners: Vec<String> = chunks(&api, &content).await[0]
        .owner_references()
        .iter()
        .map(|o| o.name.clone())
        .collect();
    assert_eq!(owners, ["second"]);

    api.delete("second", &DeleteParams::background())
        .await
        .unwrap();
    let digest = content.digest().clone();
    testkit::wait_for(
        "the garbage collector to delete the content",
        Duration::from_secs(60),
        || {
            let store = store.clone();
            let digest = digest.clone();
            async move {
                match store.read(&digest).await {
                    Err(StoreError::NotFound { .. }) => Ok(()),
                    other => Err(format!("{other:?}")),
                }
            }
        },
    )
    .await;
    testkit::wait_for(
        "the other content to go too",
        Duration::from_secs(60),
        || {
            let store = store.clone();
            let digest = other.digest().clone();
            async move {
                match store.stat(&digest).await {
                    Ok(None) => Ok(()),
                    other => Err(format!("{other:?}")),
                }
            }
        },
    )
    .await;
    ns.delete().await;
}

#[tokio::test]
async fn removing_the_last_owner_deletes_the_content_and_others_keep_theirs() {
    let client = testkit::client().await;
    let ns = TestNamespace::create(&client, "content-remove").await;
    let api: Api<ConfigMap> = ns.api();
    let store = Store::new(client.clone(), ns.name()).with_chunk_size(1024);
    let first = owner(&api, "first").await;
    let second = owner(&api, "second").await;
    let content = random_content(2500);
    store.write(&content, &first).await.unwrap();
    store.add_owner(content.digest(), &second).await.unwrap();

    store
        .remove_owner(content.digest(), &first.uid)
        .await
        .unwrap();
    for object in chunks(&api, &content).await {
        assert_eq!(object.owner_references(), std::slice::from_ref(&second));
    }
    store
        .remove_owner(content.digest(), &second.uid)
        .await
        .unwrap();
    assert!(chunks(&api, &content).await.is_empty());
    assert_eq!(store.stat(content.digest()).await.unwrap(), None);
    ns.delete().await;
}

#[tokio::test]
async fn a_chunk_name_taken_by_other_content_is_a_collision_not_an_overwrite() {
    let client = testkit::client().await;
    let ns = TestNamespace::create(&client, "content-collide").await;
    let api: Api<ConfigMap> = ns.api();
    let store = Store::new(client.clone(), ns.name());
    let owner = owner(&api, "owner").await;
    let content = small_content("mine");
    let squatter = ConfigMap {
        metadata: ObjectMeta {
            name: Some(Store::chunk_name(content.digest(), 0)),
            annotations: Some(BTreeMap::from([(
                ANNOTATION_DIGEST.to_owned(),
                "sha256:somebody-else".to_owned(),
            )])),
            labels: Some(BTreeMap::from([(LABEL_CHUNK.to_owned(), "0".to_owned())])),
            ..ObjectMeta::default()
        },
        binary_data: Some(BTreeMap::from([(DATA_KEY.to_owned(), ByteString(vec![1]))])),
        ..ConfigMap::default()
    };
    api.create(&PostParams::default(), &squatter).await.unwrap();
    let err = store.write(&content, &owner).await.unwrap_err();
    assert!(
        matches!(err, StoreError::Collision { .. }),
        "{}",
        report(&err)
    );
    assert!(err.is_terminal());
    ns.delete().await;
}

#[tokio::test]
async fn an_uploaded_directory_lands_in_the_store_for_its_owner() {
    let client = testkit::client().await;
    let ns = TestNamespace::create(&client, "content-upload").await;
    let api: Api<ConfigMap> = ns.api();
    let store = Store::new(client.clone(), ns.name());
    let owner = owner(&api, "bundle").await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("manifests")).unwrap();
    std::fs::write(dir.path().join("manifests/ns.yaml"), "kind: Namespace").unwrap();

    let stored = upload(
        &store,
        &owner,
        UploadInput::Directory(dir.path().to_owned()),
        &Limits::default(),
    )
    .await
    .unwrap();
    let files = store
        .read(&stored.digest)
        .await
        .unwrap()
        .files(&Limits::default())
        .unwrap();
    assert_eq!(
        files.get("manifests/ns.yaml").map(|b| b.as_ref()),
        Some(&b"kind: Namespace"[..])
    );

    // The same files as a tarball are the same content: stored once.
    let tarball = common::gzip(&common::tar(&[("manifests/ns.yaml", b"kind: Namespace")]));
    let again = upload(
        &store,
        &owner,
        UploadInput::Archive(Bytes::from(tarball)),
        &Limits::default(),
    )
    .await
    .unwrap();
    assert_eq!(again.digest, stored.digest);

    let evil = common::gzip(&common::tar(&[("../x", b"evil")]));
    let err = upload(
        &store,
        &owner,
        UploadInput::Archive(Bytes::from(evil)),
        &Limits::default(),
    )
    .await
    .unwrap_err();
    assert!(err.is_terminal(), "{}", report(&err));
    ns.delete().await;
}
