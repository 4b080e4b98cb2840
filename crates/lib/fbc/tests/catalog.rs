//! The example catalog under tests/fixtures/catalog, read from disk and from memory.

// Test helpers outside #[test] functions unwrap too; a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use fbc::{
    Catalog, CatalogIndex, Gvk, PrereleasePolicy, Property, Version, VersionRange, parse_dir,
    parse_files,
};

fn fixture() -> PathBuf {
    testkit::package_path("tests/fixtures/catalog")
}

fn index() -> CatalogIndex {
    CatalogIndex::from_dir(fixture()).unwrap()
}

fn names<'a>(bundles: impl IntoIterator<Item = &'a fbc::Bundle>) -> Vec<&'a str> {
    bundles.into_iter().map(|b| b.name.as_str()).collect()
}

fn gvk(group: &str, version: &str, kind: &str) -> Gvk {
    Gvk {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
    }
}

fn read_tree(root: &Path, rel: &str, out: &mut Vec<(String, Vec<u8>)>) {
    for entry in std::fs::read_dir(root.join(rel)).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        let child = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        if entry.file_type().unwrap().is_dir() {
            read_tree(root, &child, out);
        } else {
            out.push((child, std::fs::read(entry.path()).unwrap()));
        }
    }
}

#[test]
fn the_fixture_parses_into_every_blob_that_is_not_ignored() {
    let catalog = parse_dir(fixture()).unwrap();
    let mut packages: Vec<&str> = catalog.packages.iter().map(|p| p.name.as_str()).collect();
    packages.sort();
    assert_eq!(packages, ["etcd", "etcd-backup", "prometheus"]);
    assert_eq!(catalog.channels.len(), 4);
    assert_eq!(catalog.bundles.len(), 9);
    assert_eq!(catalog.deprecations.len(), 2);
    // README.md, drafts/ and etcd/*.txt would each fail to parse if they were read.
    let files: Vec<&str> = catalog.bundles.iter().map(|b| &*b.location.file).collect();
    assert!(files.iter().all(|f| !f.starts_with("drafts/")), "{files:?}");
}

#[test]
fn blobs_of_unknown_schemas_are_kept_verbatim() {
    let catalog = parse_dir(fixture()).unwrap();
    assert_eq!(catalog.others.len(), 1);
    let banner = &catalog.others[0];
    assert_eq!(banner.schema, "com.example.banner");
    assert_eq!(banner.package.as_deref(), Some("etcd"));
    assert_eq!(banner.name.as_deref(), Some("etcd-banner"));
    assert_eq!(banner.blob["text"], "Try the new etcd backup operator.");
    assert_eq!(&*banner.location.file, "extras/banner.yaml");
}

#[test]
fn in_memory_files_parse_to_the_same_catalog_as_the_directory() {
    let mut files = Vec::new();
    read_tree(&fixture(), "", &mut files);
    // Tar archives often prefix entries with "./" and list directories too.
    let mut tar_like: Vec<(String, Vec<u8>)> = files
        .into_iter()
        .map(|(path, bytes)| (format!("./{path}"), bytes))
        .collect();
    tar_like.push(("./etcd/".to_owned(), Vec::new()));
    tar_like.reverse();

    let from_memory: Catalog = parse_files(tar_like).unwrap();
    let from_disk = parse_dir(fixture()).unwrap();
    assert_eq!(from_memory, from_disk);
}

#[test]
fn locations_name_the_file_and_the_document() {
    let catalog = parse_dir(fixture()).unwrap();
    let rc = catalog
        .bundles
        .iter()
        .find(|b| b.name == "etcdoperator.v1.0.0-rc.1")
        .unwrap();
    assert_eq!(&*rc.location.file, "etcd/catalog.yaml");
    assert_eq!(rc.location.document, 8);
    assert_eq!(rc.location.schema.as_deref(), Some("olm.bundle"));
    let second_json = catalog
        .bundles
        .iter()
        .find(|b| b.name == "prometheusoperator.0.56.3")
        .unwrap();
    assert_eq!(&*second_json.location.file, "prometheus/bundles.json");
    assert_eq!(second_json.location.document, 2);
    assert!(
        second_json
            .location
            .to_string()
            .contains("prometheus/bundles.json document 2")
    );
}

#[test]
fn packages_expose_their_default_channel() {
    let index = index();
    assert_eq!(index.default_channel("etcd").unwrap().name, "stable");
    assert_eq!(index.default_channel("prometheus").unwrap().name, "beta");
    let channels: Vec<&str> = index.channels("etcd").map(|c| c.name.as_str()).collect();
    assert_eq!(channels, ["alpha", "stable"]);
    assert!(index.package("nope").is_none());
    assert!(index.default_channel("nope").is_none());
}

#[test]
fn bundles_of_a_package_come_newest_first() {
    let index = index();
    assert_eq!(
        names(index.bundles("etcd")),
        [
            "etcdoperator.v1.0.0-rc.1",
            "etcdoperator.v0.9.4",
            "etcdoperator.v0.9.2",
            "etcdoperator.v0.9.0",
            "etcdoperator.v0.6.1",
        ]
    );
    let bundle = index.bundle("etcd", "etcdoperator.v0.9.4").unwrap();
    assert_eq!(bundle.version, Version::new(0, 9, 4));
    assert_eq!(bundle.related_images.len(), 1);
    assert_eq!(bundle.max_openshift_version(), Some("4.15"));
    assert!(index.bundle("prometheus", "etcdoperator.v0.9.4").is_none());
}

#[test]
fn bundles_are_found_by_the_apis_they_provide() {
    let index = index();
    let backup = gvk("etcd.database.coreos.com", "v1beta2", "EtcdBackup");
    assert_eq!(
        names(index.providers(&backup)),
        [
            "etcdoperator.v0.9.4",
            "etcdoperator.v0.9.2",
            "etcdoperator.v0.9.0"
        ]
    );
    let monitor = gvk("monitoring.coreos.com", "v1", "ServiceMonitor");
    assert_eq!(
        names(index.providers(&monitor)),
        ["prometheusoperator.0.56.3"]
    );
    assert_eq!(index.providers(&gvk("x", "v1", "Y")).count(), 0);
}

#[test]
fn bundles_can_be_filtered_by_channel_and_version_range() {
    let index = index();
    let range = VersionRange::parse(">=0.9.0", PrereleasePolicy::OptIn).unwrap();
    assert_eq!(
        names(index.bundles_matching("etcd", None, Some(&range))),
        [
            "etcdoperator.v0.9.4",
            "etcdoperator.v0.9.2",
            "etcdoperator.v0.9.0"
        ]
    );
    let blang = VersionRange::parse(">=0.9.0", PrereleasePolicy::Ordered).unwrap();
    assert_eq!(
        names(index.bundles_matching("etcd", Some("alpha"), Some(&blang))),
        ["etcdoperator.v1.0.0-rc.1", "etcdoperator.v0.9.4"]
    );
    assert_eq!(index.bundles_matching("etcd", Some("beta"), None).len(), 0);
    let channels: Vec<&str> = index
        .bundle_channels("etcd", "etcdoperator.v0.9.4")
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(channels, ["alpha", "stable"]);
}

#[test]
fn successors_follow_replaces_skips_and_skip_range() {
    let index = index();
    let v = |s: &str| Version::parse(s).unwrap();
    // 0.6.1 is replaced by 0.9.0 and inside 0.9.2's skipRange.
    assert_eq!(
        names(index.successors(
            "etcd",
            Some("stable"),
            "etcdoperator.v0.6.1",
            Some(&v("0.6.1"))
        )),
        ["etcdoperator.v0.9.2", "etcdoperator.v0.9.0"]
    );
    // Across all channels, 0.9.4 leads only to the release candidate in alpha.
    assert_eq!(
        names(index.successors("etcd", None, "etcdoperator.v0.9.4", Some(&v("0.9.4")))),
        ["etcdoperator.v1.0.0-rc.1"]
    );
    // A bundle unknown to the catalog still upgrades through skipRange.
    assert_eq!(
        names(index.successors(
            "etcd",
            Some("stable"),
            "etcdoperator.v0.9.1",
            Some(&v("0.9.1"))
        )),
        ["etcdoperator.v0.9.4"]
    );
    // Skipping a bundle that is not in the catalog is an edge too.
    assert_eq!(
        names(index.successors("prometheus", None, "prometheusoperator.0.50.0", None)),
        ["prometheusoperator.0.56.3"]
    );
}

#[test]
fn deprecations_are_looked_up_per_package_channel_and_bundle() {
    let index = index();
    assert_eq!(
        index.channel_deprecation("etcd", "alpha"),
        Some("The alpha channel is no longer updated; use stable.")
    );
    assert_eq!(index.channel_deprecation("etcd", "stable"), None);
    assert!(
        index
            .bundle_deprecation("etcd", "etcdoperator.v0.6.1")
            .unwrap()
            .contains("end of life")
    );
    assert_eq!(
        index.bundle_deprecation("etcd", "etcdoperator.v0.9.4"),
        None
    );
    assert!(index.package_deprecation("etcd-backup").is_some());
    assert_eq!(index.package_deprecation("etcd"), None);
}

#[test]
fn one_lookup_answers_every_deprecation_level_of_a_choice() {
    let index = index();
    let old = index.deprecation("etcd", Some("alpha"), Some("etcdoperator.v0.6.1"));
    assert!(old.is_deprecated());
    assert_eq!(old.package, None);
    assert_eq!(
        old.channel,
        Some("The alpha channel is no longer updated; use stable.")
    );
    assert!(old.bundle.unwrap().contains("end of life"));

    let current = index.deprecation("etcd", Some("stable"), Some("etcdoperator.v0.9.4"));
    assert_eq!(current, fbc::Deprecation::default());
    assert!(!current.is_deprecated());

    let whole = index.deprecation("etcd-backup", None, None);
    assert!(whole.package.is_some() && whole.is_deprecated());
    assert_eq!(
        index.deprecation("nope", Some("x"), Some("y")),
        fbc::Deprecation::default()
    );
}

#[test]
fn a_bundle_in_a_channel_gets_its_deprecation_and_its_package_default_channel_at_once() {
    let index = index();
    for (package, channel, bundle) in [
        ("etcd", "alpha", "etcdoperator.v0.6.1"),
        ("etcd", "stable", "etcdoperator.v0.9.4"),
        ("etcd-backup", "stable", "no-such-bundle"),
        ("nope", "x", "y"),
    ] {
        let (deprecation, default_channel) =
            index.deprecation_and_default_channel(package, channel, bundle);
        // The same answers as asking each on its own.
        assert_eq!(
            deprecation,
            index.deprecation(package, Some(channel), Some(bundle)),
            "{package}/{channel}/{bundle}"
        );
        assert_eq!(
            default_channel,
            index
                .package(package)
                .and_then(|p| p.default_channel.as_deref()),
            "{package}"
        );
    }
    let (old, default_channel) =
        index.deprecation_and_default_channel("etcd", "alpha", "etcdoperator.v0.6.1");
    assert!(old.channel.is_some() && old.bundle.is_some());
    assert!(default_channel.is_some());
    assert_eq!(
        index.deprecation_and_default_channel("nope", "x", "y"),
        (fbc::Deprecation::default(), None)
    );
}

#[test]
fn unknown_properties_are_kept_and_csv_metadata_is_typed() {
    let index = index();
    let bundle = index
        .bundle("prometheus", "prometheusoperator.0.56.3")
        .unwrap();
    let other = bundle
        .properties
        .iter()
        .find(|p| p.type_name() == "com.example.audit")
        .unwrap();
    assert!(matches!(other, Property::Other { value, .. } if value["reviewed"] == true));
    let csv = bundle.csv_metadata().unwrap();
    assert_eq!(csv.display_name.as_deref(), Some("Prometheus Operator"));
    assert_eq!(csv.install_modes.len(), 2);
    assert!(csv.install_modes.iter().all(|m| m.supported));
    assert_eq!(csv.annotations["capabilities"], "Deep Insights");
    assert_eq!(csv.extra["provider"]["name"], "Example Community");
}

#[test]
fn bundle_requirements_select_the_bundles_that_satisfy_them() {
    let index = index();
    let satisfying = |bundle: &str| -> Vec<Vec<String>> {
        let bundle = index.bundle("etcd-backup", bundle).unwrap();
        bundle
            .requirements()
            .iter()
            .map(|req| {
                index
                    .catalog()
                    .bundles
                    .iter()
                    .filter(|b| req.matches(b).unwrap())
                    .map(|b| b.name.clone())
                    .collect()
            })
            .collect()
    };
    let v1 = satisfying("etcd-backup.v1.0.0");
    assert_eq!(v1.len(), 2, "one package and one GVK requirement");
    assert_eq!(v1[0], ["etcdoperator.v0.9.0", "etcdoperator.v0.9.2"]);
    assert_eq!(
        v1[1],
        [
            "etcdoperator.v0.9.0",
            "etcdoperator.v0.9.2",
            "etcdoperator.v0.9.4"
        ]
    );

    let v11 = satisfying("etcd-backup.v1.1.0");
    assert_eq!(v11, [["etcdoperator.v0.9.2", "etcdoperator.v0.9.4"]]);
    let requirement = &index
        .bundle("etcd-backup", "etcd-backup.v1.1.0")
        .unwrap()
        .requirements()[0];
    assert!(
        requirement
            .failure_message
            .as_deref()
            .unwrap()
            .contains("0.9.2 or newer")
    );
}

#[test]
fn channel_graphs_of_the_fixture_have_the_expected_heads() {
    let index = index();
    let stable = index.channel_graph("etcd", "stable").unwrap();
    assert_eq!(stable.head().name, "etcdoperator.v0.9.4");
    let chain: Vec<&str> = stable.replaces_chain().map(|e| e.name.as_str()).collect();
    assert_eq!(
        chain,
        [
            "etcdoperator.v0.9.4",
            "etcdoperator.v0.9.2",
            "etcdoperator.v0.9.0",
            "etcdoperator.v0.6.1"
        ]
    );
    let alpha = index.channel_graph("etcd", "alpha").unwrap();
    assert_eq!(alpha.head().name, "etcdoperator.v1.0.0-rc.1");
}

/// A package `name` with one channel and a bundle per version, each bundle listing an
/// `olm.gvk` property per entry of `apis`, in order (so an API may be listed twice).
fn providing_package(name: &str, versions: &[&str], apis: &[&str]) -> String {
    let mut docs = vec![format!(
        r#"{{"schema":"olm.package","name":"{name}","defaultChannel":"stable"}}"#
    )];
    let entries: Vec<String> = versions
        .iter()
        .map(|v| format!(r#"{{"name":"{name}.v{v}"}}"#))
        .collect();
    docs.push(format!(
        r#"{{"schema":"olm.channel","name":"stable","package":"{name}","entries":[{}]}}"#,
        entries.join(",")
    ));
    for version in versions {
        let mut properties = vec![format!(
            r#"{{"type":"olm.package","value":{{"packageName":"{name}","version":"{version}"}}}}"#
        )];
        for kind in apis {
            properties.push(format!(
                r#"{{"type":"olm.gvk","value":{{"group":"x.example.com","version":"v1","kind":"{kind}"}}}}"#
            ));
        }
        docs.push(format!(
            r#"{{"schema":"olm.bundle","name":"{name}.v{version}","package":"{name}","image":"example.com/{name}:{version}","properties":[{}]}}"#,
            properties.join(",")
        ));
    }
    docs.join("\n")
}

#[test]
fn providers_of_an_api_are_listed_by_package_then_newest_first_once_each() {
    // Forty packages, so that they are indexed on more than one thread; the ones providing
    // Shared are written out of name order, and each bundle of `p07` names it twice.
    let mut files = Vec::new();
    for i in (0..40).rev() {
        let name = format!("p{i:02}");
        let apis: &[&str] = match i {
            7 => &["Shared", "Own07", "Shared"],
            3 | 31 => &["Shared"],
            _ => &["Other"],
        };
        files.push((
            format!("{name}/catalog.json"),
            providing_package(&name, &["1.0.0", "1.2.0", "1.1.0"], apis),
        ));
    }
    let index = CatalogIndex::from_files(files).unwrap();
    assert_eq!(
        names(index.providers(&gvk("x.example.com", "v1", "Shared"))),
        [
            "p03.v1.2.0",
            "p03.v1.1.0",
            "p03.v1.0.0",
            "p07.v1.2.0",
            "p07.v1.1.0",
            "p07.v1.0.0",
            "p31.v1.2.0",
            "p31.v1.1.0",
            "p31.v1.0.0",
        ]
    );
    assert_eq!(
        names(index.providers(&gvk("x.example.com", "v1", "Own07"))),
        ["p07.v1.2.0", "p07.v1.1.0", "p07.v1.0.0"]
    );
    assert_eq!(
        index
            .providers(&gvk("x.example.com", "v1", "Other"))
            .count(),
        37 * 3
    );
    // Shared, Own07 and Other, each counted once however many bundles provide it.
    assert_eq!(index.provided_api_count(), 3);
    assert_eq!(index.package_count(), 40);

    // Each API has one number, whichever bundle provides it; a bundle's APIs come in
    // property order, a repeated one repeated.
    let apis = |package: &str| {
        let bundle = index.bundle(package, &format!("{package}.v1.1.0")).unwrap();
        index
            .provided_apis(bundle)
            .map(|(id, gvk)| (id, gvk.kind.clone()))
            .collect::<Vec<_>>()
    };
    let p07 = apis("p07");
    let kinds: Vec<&str> = p07.iter().map(|(_, kind)| kind.as_str()).collect();
    assert_eq!(kinds, ["Shared", "Own07", "Shared"]);
    let (shared, own) = (p07[0].0, p07[1].0);
    assert_eq!(p07[2].0, shared);
    assert_ne!(shared, own);
    assert_eq!(apis("p03"), [(shared, "Shared".to_owned())]);
    let other = apis("p00")[0].0;
    assert!(other != shared && other != own);
    // A copy of a bundle is not one of the catalog's: its APIs are found by value, with the
    // same numbers.
    let copy = index.bundle("p07", "p07.v1.1.0").unwrap().clone();
    let by_value: Vec<_> = index.provided_apis(&copy).map(|(id, _)| id).collect();
    assert_eq!(by_value, [shared, own, shared]);
}

#[test]
fn many_channels_written_out_of_order_are_found_by_name_and_listed_by_name() {
    // Channel `cNN` holds the bundles from version NN on, so bundle 1.N.0 is in channels
    // c00..=cN. Channels are written in a scrambled order; names that are prefixes of others
    // (`c1` beside `c10`..) check that lookups compare whole names.
    let versions = 20;
    let mut docs =
        vec![r#"{"schema":"olm.package","name":"many","defaultChannel":"c1"}"#.to_owned()];
    // The first version a channel holds: `c07` and `c7` alike hold 1.7.0 on.
    let first_version = |name: &str| name[1..].parse::<usize>().unwrap();
    let mut channels: Vec<String> = (0..versions).map(|n| format!("c{n:02}")).collect();
    channels.push("c1".to_owned());
    channels.reverse();
    channels.swap(3, 17);
    for name in &channels {
        let first = first_version(name);
        let entries: Vec<String> = (first..versions)
            .map(|v| match v {
                v if v == first => format!(r#"{{"name":"many.v{v}"}}"#),
                v => format!(r#"{{"name":"many.v{v}","replaces":"many.v{}"}}"#, v - 1),
            })
            .collect();
        docs.push(format!(
            r#"{{"schema":"olm.channel","package":"many","name":"{name}","entries":[{}]}}"#,
            entries.join(",")
        ));
    }
    for v in 0..versions {
        docs.push(format!(
            r#"{{"schema":"olm.bundle","package":"many","name":"many.v{v}","image":"example.com/many:{v}","properties":[{{"type":"olm.package","value":{{"packageName":"many","version":"1.{v}.0"}}}}]}}"#
        ));
    }
    let index = CatalogIndex::from_files([("many/catalog.json", docs.join("\n"))]).unwrap();

    let mut sorted = channels.clone();
    sorted.sort();
    let listed: Vec<&str> = index.channels("many").map(|c| c.name.as_str()).collect();
    assert_eq!(listed, sorted);
    for name in &channels {
        assert_eq!(index.channel("many", name).unwrap().name, *name);
        let first = first_version(name);
        let graph = index.channel_graph("many", name).unwrap();
        assert_eq!(graph.entries().count(), versions - first, "{name}");
        // The graph reads the channel's own entries; it holds no copy of them.
        let channel = index.channel("many", name).unwrap();
        assert!(
            graph
                .entries()
                .zip(channel.entries.iter())
                .all(|(in_graph, in_channel)| std::ptr::eq(in_graph, in_channel))
        );
        assert!(graph.contains(&format!("many.v{first}")));
        assert!(first == 0 || !graph.contains(&format!("many.v{}", first - 1)));
    }
    for missing in ["c", "c0", "c20", "c1 ", "C01", ""] {
        assert!(index.channel("many", missing).is_none(), "{missing:?}");
        assert!(
            index.channel_graph("many", missing).is_none(),
            "{missing:?}"
        );
    }
    assert_eq!(index.default_channel("many").unwrap().name, "c1");

    for v in 0..versions {
        let name = format!("many.v{v}");
        assert_eq!(index.bundle("many", &name).unwrap().name, name);
        let mut expected: Vec<String> = (0..=v).map(|n| format!("c{n:02}")).collect();
        if v >= 1 {
            expected.push("c1".to_owned());
        }
        expected.sort();
        let in_channels: Vec<&str> = index
            .bundle_channels("many", &name)
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(in_channels, expected, "{name}");

        // The same answer with the graphs, for the catalog's own bundle (by position) and for
        // an equal copy from elsewhere (by name).
        let bundle = index.bundle("many", &name).unwrap();
        let copy = bundle.clone();
        for asked in [bundle, &copy] {
            let holding: Vec<&str> = index
                .graphs_holding(asked)
                .map(|(channel, graph)| {
                    assert!(std::ptr::eq(
                        graph,
                        index.channel_graph("many", &channel.name).unwrap()
                    ));
                    channel.name.as_str()
                })
                .collect();
            assert_eq!(holding, expected, "{name}");
        }
    }
    assert!(index.bundle("many", "many.v").is_none());
    assert!(index.bundle("many", "many.v20").is_none());
}

#[test]
fn the_channels_holding_a_bundle_are_its_own_package_channels_whatever_the_file_order() {
    // Three packages whose blobs are interleaved in file order, the catalog's bundles not
    // grouped by package: each bundle's channels come from its own package's graphs.
    let docs = [
        r#"{"schema":"olm.package","name":"b","defaultChannel":"stable"}"#,
        r#"{"schema":"olm.bundle","package":"b","name":"b.v1","image":"example.com/b:1","properties":[{"type":"olm.package","value":{"packageName":"b","version":"1.0.0"}}]}"#,
        r#"{"schema":"olm.package","name":"a","defaultChannel":"stable"}"#,
        r#"{"schema":"olm.bundle","package":"a","name":"a.v1","image":"example.com/a:1","properties":[{"type":"olm.package","value":{"packageName":"a","version":"1.0.0"}}]}"#,
        r#"{"schema":"olm.channel","package":"b","name":"stable","entries":[{"name":"b.v1"},{"name":"b.v2","replaces":"b.v1"}]}"#,
        r#"{"schema":"olm.bundle","package":"b","name":"b.v2","image":"example.com/b:2","properties":[{"type":"olm.package","value":{"packageName":"b","version":"2.0.0"}}]}"#,
        r#"{"schema":"olm.channel","package":"a","name":"stable","entries":[{"name":"a.v1"}]}"#,
        r#"{"schema":"olm.channel","package":"b","name":"fast","entries":[{"name":"b.v2"}]}"#,
        r#"{"schema":"olm.package","name":"c","defaultChannel":"alpha"}"#,
        r#"{"schema":"olm.channel","package":"c","name":"alpha","entries":[{"name":"a.v1"}]}"#,
        r#"{"schema":"olm.bundle","package":"c","name":"a.v1","image":"example.com/c:1","properties":[{"type":"olm.package","value":{"packageName":"c","version":"1.0.0"}}]}"#,
    ];
    let index = CatalogIndex::from_files([("all.json", docs.join("\n"))]).unwrap();
    let holding = |package: &str, name: &str| -> Vec<(String, String)> {
        index
            .graphs_holding(index.bundle(package, name).unwrap())
            .map(|(channel, _)| (channel.package.clone(), channel.name.clone()))
            .collect()
    };
    let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
        list.iter()
            .map(|(p, c)| ((*p).to_owned(), (*c).to_owned()))
            .collect()
    };
    assert_eq!(holding("b", "b.v1"), pairs(&[("b", "stable")]));
    assert_eq!(
        holding("b", "b.v2"),
        pairs(&[("b", "fast"), ("b", "stable")])
    );
    // Two packages each have a bundle named `a.v1`: each is in its own package's channel.
    assert_eq!(holding("a", "a.v1"), pairs(&[("a", "stable")]));
    assert_eq!(holding("c", "a.v1"), pairs(&[("c", "alpha")]));
}
