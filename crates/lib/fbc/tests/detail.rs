//! [`Detail::Resolution`] keeps what resolving and activating bundles read, and nothing of
//! what only a catalog browser would show; resolution sees the same catalog either way.

// Test helpers outside #[test] functions unwrap too; a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use fbc::{
    Bundle, Catalog, CatalogIndex, Detail, Property, TYPE_BUNDLE_OBJECT, parse_dir_with,
    parse_files_with,
};
use serde_json::Value;

fn fixture() -> PathBuf {
    testkit::package_path("tests/fixtures/catalog")
}

/// Everything about a bundle that resolution and activation read.
fn resolution_view(bundle: &Bundle) -> String {
    format!(
        "{} {} {} {} gvks={:?} requires={:?} maxOCP={:?} minKube={:?} inline={} at {}",
        bundle.package,
        bundle.name,
        bundle.version,
        bundle.image,
        bundle.provided_gvks().collect::<Vec<_>>(),
        bundle.requirements(),
        bundle.max_openshift_version(),
        bundle
            .csv_metadata()
            .and_then(|m| m.min_kube_version.as_deref()),
        bundle.has_inline_objects(),
        bundle.location,
    )
}

fn catalog_view(catalog: &Catalog) -> Vec<String> {
    let mut view: Vec<String> = catalog.bundles.iter().map(resolution_view).collect();
    view.extend(
        catalog
            .packages
            .iter()
            .map(|p| format!("package {} {:?} {}", p.name, p.default_channel, p.location)),
    );
    view.extend(catalog.channels.iter().map(|c| format!("{c:?}")));
    view.extend(catalog.deprecations.iter().map(|d| format!("{d:?}")));
    view.extend(catalog.others.iter().map(|m| {
        format!(
            "other {} {:?} {:?} {}",
            m.schema, m.package, m.name, m.location
        )
    }));
    view
}

#[test]
fn resolution_sees_the_same_catalog_at_either_detail() {
    let full = parse_dir_with(fixture(), Detail::Full).unwrap();
    let lean = parse_dir_with(fixture(), Detail::Resolution).unwrap();
    assert_eq!(catalog_view(&lean), catalog_view(&full));

    let full = CatalogIndex::from_dir_with(fixture(), Detail::Full).unwrap();
    let lean = CatalogIndex::from_dir_with(fixture(), Detail::Resolution).unwrap();
    let names = |index: &CatalogIndex| -> Vec<String> {
        index
            .packages()
            .flat_map(|p| index.bundles(&p.name))
            .map(|b| b.name.clone())
            .collect()
    };
    assert_eq!(names(&lean), names(&full));
    assert_eq!(
        lean.deprecation("etcd", Some("alpha"), Some("etcdoperator.v0.6.1")),
        full.deprecation("etcd", Some("alpha"), Some("etcdoperator.v0.6.1"))
    );
}

#[test]
fn resolution_detail_drops_icons_descriptions_related_images_and_unread_values() {
    let full = parse_dir_with(fixture(), Detail::Full).unwrap();
    let lean = parse_dir_with(fixture(), Detail::Resolution).unwrap();
    assert!(full.packages.iter().any(|p| p.icon.is_some()));
    assert!(full.bundles.iter().any(|b| !b.related_images.is_empty()));
    assert!(
        lean.packages
            .iter()
            .all(|p| p.icon.is_none() && p.description.is_none())
    );
    assert!(lean.bundles.iter().all(|b| b.related_images.is_empty()));

    let find = |catalog: &Catalog| {
        catalog
            .bundles
            .iter()
            .find(|b| b.name == "prometheusoperator.0.56.3")
            .unwrap()
            .clone()
    };
    let (full_bundle, lean_bundle) = (find(&full), find(&lean));
    assert_eq!(
        full_bundle.csv_metadata().unwrap().display_name.as_deref(),
        Some("Prometheus Operator")
    );
    // Of the CSV metadata, only what resolution reads is kept.
    assert!(lean_bundle.csv_metadata().is_none());
    assert_eq!(
        lean_bundle.min_kube_version(),
        full_bundle
            .csv_metadata()
            .unwrap()
            .min_kube_version
            .as_deref()
    );
    assert!(
        lean_bundle
            .properties
            .iter()
            .any(|p| matches!(p, Property::CsvMinKubeVersion(_)))
    );
    // Unread property values go, their types stay, in the same places.
    let types = |b: &Bundle| -> Vec<String> {
        b.properties
            .iter()
            .map(|p| p.type_name().to_owned())
            .collect()
    };
    assert_eq!(types(&lean_bundle), types(&full_bundle));
    assert!(lean_bundle.properties.iter().any(|p| matches!(p,
        Property::Omitted { type_name } if type_name == "com.example.audit")));

    assert_eq!(lean.others.len(), 1);
    assert_eq!(lean.others[0].blob, Value::Null);
    assert_eq!(lean.others[0].schema, "com.example.banner");
}

#[test]
fn min_kube_version_is_kept_and_inline_objects_are_still_seen() {
    let bundle = r#"{"schema":"olm.bundle","package":"foo","name":"foo.v1","properties":[
        {"type":"olm.package","value":{"packageName":"foo","version":"1.0.0"}},
        {"type":"olm.csv.metadata","value":{"minKubeVersion":"1.30.0","description":"long","annotations":{"alm-examples":"[]"}}},
        {"type":"olm.bundle.object","value":{"data":"eyJraW5kIjoiQ29uZmlnTWFwIn0="}},
        {"type":"olm.maxOpenShiftVersion","value":4.15}]}"#;
    let files = [
        (
            "p.json",
            r#"{"schema":"olm.package","name":"foo","icon":{"base64data":"PHN2Zy8+","mediatype":"image/svg+xml"}}"#,
        ),
        (
            "c.json",
            r#"{"schema":"olm.channel","package":"foo","name":"stable","entries":[{"name":"foo.v1"}]}"#,
        ),
        ("b.json", bundle),
    ];
    let index = CatalogIndex::from_files_with(files, Detail::Resolution).unwrap();
    let bundle = index.bundle("foo", "foo.v1").unwrap();
    assert!(bundle.image.is_empty() && bundle.has_inline_objects());
    assert_eq!(bundle.min_kube_version(), Some("1.30.0"));
    assert!(
        bundle.csv_metadata().is_none(),
        "the description is not kept"
    );
    assert_eq!(bundle.max_openshift_version(), Some("4.15"));
    assert!(bundle.properties.iter().any(|p| matches!(p,
        Property::Omitted { type_name } if type_name == TYPE_BUNDLE_OBJECT)));
    assert!(index.package("foo").unwrap().icon.is_none());

    let full = parse_files_with(files, Detail::Full).unwrap();
    assert!(full.bundles[0].properties.iter().any(|p| matches!(p,
        Property::Other { type_name, value } if type_name == TYPE_BUNDLE_OBJECT
            && value["data"] == "eyJraW5kIjoiQ29uZmlnTWFwIn0=")));
    assert!(full.packages[0].icon.is_some());
}

#[test]
fn escaped_strings_in_property_values_are_read_like_any_other() {
    let bundle = r#"{"schema":"olm.bundle","package":"f\u006fo","name":"foo.v1","image":"r/foo:1","properties":[
        {"type":"olm.p\u0061ckage","value":{"packageName":"foo","version":"1.0.0"}},
        {"type":"olm.gvk","value":{"group":"g\/x","version":"v1","kind":"K\"ind"}},
        {"type":"x.\u00e9","value":{"note":"caf\u00e9 \ud83d\ude00"}}]}"#;
    for detail in [Detail::Full, Detail::Resolution] {
        let catalog = parse_files_with([("b.json", bundle)], detail).unwrap();
        let bundle = &catalog.bundles[0];
        assert_eq!(bundle.package, "foo");
        let gvk = bundle.provided_gvks().next().unwrap();
        assert_eq!((gvk.group.as_str(), gvk.kind.as_str()), ("g/x", "K\"ind"));
        assert_eq!(bundle.properties[2].type_name(), "x.é");
        if detail == Detail::Full {
            assert!(matches!(&bundle.properties[2],
                Property::Other { value, .. } if value["note"] == "café 😀"));
        }
    }
}
