//! The content store against a real API server: chunks, verification, sharing by digest,
//! and the mark and sweep that removes content nobody references.

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
use kube::api::{DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::{Api, ResourceExt};
use rand::RngCore;
use testkit::TestNamespace;

/// The kind of user the tests write content for.
const USER: &str = "Bundle";

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
    let content = random_content(20 * 1024 * 1024);
    assert!(content.size() >= 20 * 1024 * 1024);
    assert!(
        !content.is_in_memory(),
        "large content is spooled to a file"
    );

    let stored = store.write(&content, USER).await.unwrap();
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
        assert_eq!(object.labels()[&Store::used_by_label(USER)], "true");
        assert!(object.owner_references().is_empty());
    }

    let read = store.read(content.digest()).await.unwrap();
    assert_eq!(read.digest(), content.digest());
    assert!(
        !read.is_in_memory(),
        "large content is read back into a file"
    );
    assert_eq!(read.to_bytes().unwrap(), content.to_bytes().unwrap());
    assert_eq!(store.stat(content.digest()).await.unwrap(), Some(stored));
    ns.delete().await;
}

#[tokio::test]
async fn a_corrupted_chunk_is_detected_never_returned_and_repaired_by_the_next_write() {
    let client = testkit::client().await;
    let ns = TestNamespace::create(&client, "content-corrupt").await;
    let api: Api<ConfigMap> = ns.api();
    let store = Store::new(client.clone(), ns.name()).with_chunk_size(64 * 1024);
    let content = random_content(300 * 1024);
    let stored = store.write(&content, USER).await.unwrap();
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
    store.write(&content, USER).await.unwrap();
    assert_eq!(store.read(content.digest()).await.unwrap(), content);
    let repaired = api.get(&name).await.unwrap();
    assert_eq!(repaired.binary_data, original.binary_data);
    ns.delete().await;
}

#[tokio::test]
async fn shared_content_written_again_is_stored_once_and_costs_no_write() {
    let client = testkit::client().await;
    let ns = TestNamespace::create(&client, "content-shared").await;
    let api: Api<ConfigMap> = ns.api();
    let store = Store::new(client.clone(), ns.name()).with_chunk_size(1024);
    let content = random_content(3000);

    let a = store.write(&content, USER).await.unwrap();
    let versions = |objects: Vec<ConfigMap>| -> BTreeMap<String, String> {
        objects
            .into_iter()
            .map(|o| (o.name_any(), o.resource_version().unwrap()))
            .collect()
    };
    let before = versions(chunks(&api, &content).await);
    assert_eq!(before.len() as u32, a.chunks);
    // A hundred more sharers: the same content, and not one chunk changed.
    for _ in 0..100 {
        assert_eq!(store.write(&content, USER).await.unwrap(), a);
    }
    assert_eq!(versions(chunks(&api, &content).await), before);

    // Another kind of user labels each chunk once, then writes nothing either.
    store.write(&content, "Catalog").await.unwrap();
    let labelled = versions(chunks(&api, &content).await);
    store.write(&content, "Catalog").await.unwrap();
    assert_eq!(versions(chunks(&api, &content).await), labelled);
    for object in chunks(&api, &content).await {
        assert_eq!(object.labels()[&Store::used_by_label("Catalog")], "true");
        assert_eq!(object.labels()[&Store::used_by_label(USER)], "true");
    }

    // Content this store has just checked costs a sharer no request at all: a chunk
    // deleted behind its back goes unnoticed by writers until a read finds it missing,
    // and the next write then puts it back.
    let name = Store::chunk_name(content.digest(), 1);
    api.delete(&name, &DeleteParams::default()).await.unwrap();
    store.write(&content, USER).await.unwrap();
    assert!(
        api.get_opt(&name).await.unwrap().is_none(),
        "no request sent"
    );
    let err = store.read(content.digest()).await.unwrap_err();
    assert!(
        matches!(err, StoreError::MissingChunk { index: 1, .. }),
        "{}",
        report(&err)
    );
    store.write(&content, USER).await.unwrap();
    assert_eq!(store.read(content.digest()).await.unwrap(), content);
    ns.delete().await;
}

#[tokio::test]
async fn two_writers_racing_on_the_same_digest_both_succeed() {
    let client = testkit::client().await;
    let ns = TestNamespace::create(&client, "content-race").await;
    let store = Store::new(client.clone(), ns.name()).with_chunk_size(4096);
    let content = random_content(64 * 1024);

    let (a, b) = tokio::join!(
        store.write(&content, USER),
        store.write(&content, "Catalog")
    );
    assert_eq!(a.unwrap(), b.unwrap());
    assert_eq!(store.read(content.digest()).await.unwrap(), content);
    ns.delete().await;
}

#[tokio::test]
async fn unreferenced_content_is_marked_then_swept_and_reuse_in_between_saves_it() {
    let client = testkit::client().await;
    let ns = TestNamespace::create(&client, "content-sweep").await;
    let api: Api<ConfigMap> = ns.api();
    let store = Store::new(client.clone(), ns.name()).with_chunk_size(1024);
    let kept = random_content(2500);
    let gone = random_content(2500);
    let reused = random_content(2500);
    for content in [&kept, &gone, &reused] {
        store.write(content, USER).await.unwrap();
    }
    let referenced = std::collections::BTreeSet::from([kept.digest().to_string()]);
    let grace = Duration::ZERO;

    // Pass 1 only marks what nothing references.
    let first = store.sweep(USER, &referenced, grace).await.unwrap();
    assert_eq!(
        first.marked,
        [gone.digest().to_string(), reused.digest().to_string()].into()
    );
    assert!(first.deleted.is_empty());
    for content in [&kept, &gone, &reused] {
        assert_eq!(store.read(content.digest()).await.unwrap(), *content);
    }
    // A writer reuses marked content before the next pass: it clears every mark.
    store.write(&reused, USER).await.unwrap();
    for object in chunks(&api, &reused).await {
        assert!(
            !object
                .annotations()
                .contains_key(content::store::ANNOTATION_UNREFERENCED_SINCE)
        );
    }

    // Pass 2 deletes what is still marked, and marks the reused content afresh.
    let second = store.sweep(USER, &referenced, grace).await.unwrap();
    assert_eq!(second.deleted, [gone.digest().to_string()].into());
    assert!(chunks(&api, &gone).await.is_empty());
    assert_eq!(store.stat(gone.digest()).await.unwrap(), None);
    assert_eq!(store.read(kept.digest()).await.unwrap(), kept);
    assert_eq!(store.read(reused.digest()).await.unwrap(), reused);
    assert_eq!(second.marked, [reused.digest().to_string()].into());

    // Referenced again: unmarked, and kept by every later pass.
    let both =
        std::collections::BTreeSet::from([kept.digest().to_string(), reused.digest().to_string()]);
    let third = store.sweep(USER, &both, grace).await.unwrap();
    assert_eq!(third.unmarked, [reused.digest().to_string()].into());
    store.sweep(USER, &both, grace).await.unwrap();
    assert_eq!(store.read(reused.digest()).await.unwrap(), reused);

    // Fresh content (younger than the grace) is never marked.
    let fresh = random_content(2000);
    store.write(&fresh, USER).await.unwrap();
    let young = store
        .sweep(USER, &both, Duration::from_secs(600))
        .await
        .unwrap();
    assert!(young.marked.is_empty(), "{young:?}");
    ns.delete().await;
}

#[tokio::test]
async fn content_two_kinds_use_is_released_by_one_and_kept_for_the_other() {
    let client = testkit::client().await;
    let ns = TestNamespace::create(&client, "content-kinds").await;
    let api: Api<ConfigMap> = ns.api();
    let store = Store::new(client.clone(), ns.name()).with_chunk_size(1024);
    let content = random_content(2500);
    store.write(&content, USER).await.unwrap();
    store.write(&content, "Catalog").await.unwrap();
    let nothing = std::collections::BTreeSet::new();

    store.sweep(USER, &nothing, Duration::ZERO).await.unwrap();
    let second = store.sweep(USER, &nothing, Duration::ZERO).await.unwrap();
    assert_eq!(second.released, [content.digest().to_string()].into());
    assert!(second.deleted.is_empty());
    for object in chunks(&api, &content).await {
        assert!(!object.labels().contains_key(&Store::used_by_label(USER)));
        assert_eq!(object.labels()[&Store::used_by_label("Catalog")], "true");
    }
    assert_eq!(store.read(content.digest()).await.unwrap(), content);

    // The other kind lets go too: now it is deleted.
    store
        .sweep("Catalog", &nothing, Duration::ZERO)
        .await
        .unwrap();
    let last = store
        .sweep("Catalog", &nothing, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(last.deleted, [content.digest().to_string()].into());
    assert_eq!(store.stat(content.digest()).await.unwrap(), None);
    ns.delete().await;
}

#[tokio::test]
async fn a_chunk_name_taken_by_other_content_is_a_collision_not_an_overwrite() {
    let client = testkit::client().await;
    let ns = TestNamespace::create(&client, "content-collide").await;
    let api: Api<ConfigMap> = ns.api();
    let store = Store::new(client.clone(), ns.name());
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
    let err = store.write(&content, USER).await.unwrap_err();
    assert!(
        matches!(err, StoreError::Collision { .. }),
        "{}",
        report(&err)
    );
    assert!(err.is_terminal());
    ns.delete().await;
}

#[tokio::test]
async fn an_uploaded_directory_lands_in_the_store_for_its_user() {
    let client = testkit::client().await;
    let ns = TestNamespace::create(&client, "content-upload").await;
    let store = Store::new(client.clone(), ns.name());
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("manifests")).unwrap();
    std::fs::write(dir.path().join("manifests/ns.yaml"), "kind: Namespace").unwrap();

    let stored = upload(
        &store,
        USER,
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
        USER,
        UploadInput::Archive(Bytes::from(tarball)),
        &Limits::default(),
    )
    .await
    .unwrap();
    assert_eq!(again.digest, stored.digest);

    let evil = common::gzip(&common::tar(&[("../x", b"evil")]));
    let err = upload(
        &store,
        USER,
        UploadInput::Archive(Bytes::from(evil)),
        &Limits::default(),
    )
    .await
    .unwrap_err();
    assert!(err.is_terminal(), "{}", report(&err));
    ns.delete().await;
}

/// Content stored before the mark and sweep is owned by the Bundles that wrote it. The first
/// writer to reuse it drops those owners: left there, the garbage collector would delete the
/// content when they go, under sharers that never wrote.
#[tokio::test]
async fn content_owned_the_old_way_loses_its_owners_when_reused() {
    let client = testkit::client().await;
    let ns = TestNamespace::create(&client, "content-migrate").await;
    let api: Api<ConfigMap> = ns.api();
    let store = Store::new(client.clone(), ns.name()).with_chunk_size(1024);
    let content = random_content(2500);
    store.write(&content, USER).await.unwrap();
    let owner = api
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    name: Some("old-bundle".to_owned()),
                    ..ObjectMeta::default()
                },
                ..ConfigMap::default()
            },
        )
        .await
        .unwrap();
    let owners = serde_json::json!({ "metadata": { "ownerReferences": [{
        "apiVersion": "v1", "kind": "ConfigMap", "name": "old-bundle", "uid": owner.uid().unwrap(),
    }]}});
    for object in chunks(&api, &content).await {
        api.patch(
            &object.name_any(),
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&owners),
        )
        .await
        .unwrap();
    }
    assert!(
        chunks(&api, &content)
            .await
            .iter()
            .all(|o| !o.owner_references().is_empty())
    );

    // Reused by a process of the new version, which has not checked this content yet.
    let upgraded = Store::new(client.clone(), ns.name()).with_chunk_size(1024);
    upgraded.write(&content, USER).await.unwrap();
    for object in chunks(&api, &content).await {
        assert!(
            object.owner_references().is_empty(),
            "{}",
            object.name_any()
        );
    }
    // The old owner goes; the content stays for the sharers.
    api.delete("old-bundle", &DeleteParams::background())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(store.read(content.digest()).await.unwrap(), content);
    ns.delete().await;
}
