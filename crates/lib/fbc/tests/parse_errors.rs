//! Bad input gives typed errors that name the file and document; nothing panics.

// Test helpers outside #[test] functions unwrap too; a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use fbc::{
    CatalogIndex, ChannelError, DeprecationReference, IndexError, LoadError, ParseError,
    PropertyError, parse_files,
};

fn parse(files: &[(&str, &str)]) -> Result<fbc::Catalog, ParseError> {
    parse_files(files.iter().map(|(p, c)| (*p, c.as_bytes())))
}

fn problems(files: &[(&str, &str)]) -> Vec<IndexError> {
    match CatalogIndex::from_files(files.iter().map(|(p, c)| (*p, c.as_bytes()))) {
        Err(LoadError::Invalid(e)) => e.problems,
        Err(LoadError::Parse(e)) => panic!("expected a valid parse, got {e}"),
        Ok(_) => panic!("expected an invalid catalog"),
    }
}

const PACKAGE: &str = "schema: olm.package\nname: foo\ndefaultChannel: stable\n";

fn bundle(name: &str, version: &str) -> String {
    format!(
        "schema: olm.bundle\npackage: foo\nname: {name}\nimage: example.com/foo:{version}\n\
         properties:\n- type: olm.package\n  value: {{packageName: foo, version: {version}}}\n"
    )
}

fn channel(name: &str, entries: &[&str]) -> String {
    let mut out = format!("schema: olm.channel\npackage: foo\nname: {name}\nentries:\n");
    for entry in entries {
        out.push_str(&format!("- {entry}\n"));
    }
    out
}

#[test]
fn malformed_json_names_the_file_and_the_failing_document() {
    let err = parse(&[(
        "foo/catalog.json",
        "{\"schema\": \"olm.package\", \"name\": \"foo\"}\n{\"schema\": \"olm.bundle\",",
    )])
    .unwrap_err();
    match &err {
        ParseError::Json { file, document, .. } => {
            assert_eq!(file, "foo/catalog.json");
            assert_eq!(*document, 2);
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(err.to_string().contains("foo/catalog.json document 2"));
}

#[test]
fn malformed_yaml_names_the_file_and_the_failing_document() {
    let err = parse(&[(
        "foo.yaml",
        "schema: olm.package\nname: foo\n---\nname: [unclosed\n",
    )])
    .unwrap_err();
    assert!(
        matches!(&err, ParseError::Yaml { file, document: 2, .. } if file == "foo.yaml"),
        "{err:?}"
    );
}

#[test]
fn a_blob_without_schema_is_rejected_with_its_position_and_name() {
    let err = parse(&[(
        "a/b.yaml",
        "schema: olm.package\nname: foo\n---\nname: orphan\n",
    )])
    .unwrap_err();
    let ParseError::MissingSchema { location } = &err else {
        panic!("unexpected {err:?}");
    };
    assert_eq!(&*location.file, "a/b.yaml");
    assert_eq!(location.document, 2);
    assert_eq!(location.name.as_deref(), Some("orphan"));
    assert!(err.to_string().contains("a/b.yaml document 2"), "{err}");
}

#[test]
fn a_document_that_is_not_an_object_is_rejected() {
    let err = parse(&[("notes.yaml", "just some prose\n")]).unwrap_err();
    assert!(matches!(err, ParseError::NotAnObject { .. }), "{err:?}");
}

#[test]
fn a_bundle_without_package_is_rejected() {
    let err = parse(&[(
        "b.yaml",
        "schema: olm.bundle\nname: foo.v1\nimage: x\nproperties: []\n",
    )])
    .unwrap_err();
    let ParseError::MissingField { location, field } = &err else {
        panic!("unexpected {err:?}");
    };
    assert_eq!(*field, "package");
    assert_eq!(location.schema.as_deref(), Some("olm.bundle"));
    assert_eq!(location.name.as_deref(), Some("foo.v1"));
    assert!(err.to_string().contains("olm.bundle \"foo.v1\""), "{err}");
}

#[test]
fn a_bundle_needs_exactly_one_matching_package_property() {
    let none = parse(&[(
        "b.yaml",
        "schema: olm.bundle\npackage: foo\nname: foo.v1\nimage: x\n",
    )])
    .unwrap_err();
    assert!(
        matches!(none, ParseError::PackagePropertyCount { count: 0, .. }),
        "{none:?}"
    );

    let two = format!(
        "{}- type: olm.package\n  value: {{packageName: foo, version: 2.0.0}}\n",
        bundle("foo.v1", "1.0.0")
    );
    let err = parse(&[("b.yaml", &two)]).unwrap_err();
    assert!(
        matches!(err, ParseError::PackagePropertyCount { count: 2, .. }),
        "{err:?}"
    );

    let other = bundle("foo.v1", "1.0.0").replace("packageName: foo", "packageName: bar");
    let err = parse(&[("b.yaml", &other)]).unwrap_err();
    assert!(
        matches!(&err, ParseError::PackagePropertyMismatch { property, .. } if property == "bar"),
        "{err:?}"
    );
}

#[test]
fn an_invalid_bundle_version_names_the_property() {
    let err = parse(&[("b.yaml", &bundle("foo.v1", "v1.0"))]).unwrap_err();
    let ParseError::Property {
        index,
        type_name,
        source,
        ..
    } = &err
    else {
        panic!("unexpected {err:?}");
    };
    assert_eq!(*index, 0);
    assert_eq!(type_name, "olm.package");
    assert!(matches!(source, PropertyError::Version { version, .. } if version == "v1.0"));
}

#[test]
fn known_properties_with_the_wrong_shape_are_rejected() {
    let text = format!(
        "{}- type: olm.gvk\n  value: {{group: example.com}}\n",
        bundle("foo.v1", "1.0.0")
    );
    let err = parse(&[("b.yaml", &text)]).unwrap_err();
    assert!(
        matches!(
            &err,
            ParseError::Property {
                index: 1,
                source: PropertyError::Shape { .. },
                ..
            }
        ),
        "{err:?}"
    );

    let text = format!(
        "{}- type: olm.package.required\n  value: {{packageName: bar, versionRange: '>=1.0.0 ||'}}\n",
        bundle("foo.v1", "1.0.0")
    );
    let err = parse(&[("b.yaml", &text)]).unwrap_err();
    assert!(
        matches!(
            &err,
            ParseError::Property {
                source: PropertyError::Range(_),
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn an_ambiguous_olm_constraint_is_rejected() {
    let text = format!(
        "{}- type: olm.constraint\n  value:\n    gvk: {{group: g, version: v1, kind: K}}\n    package: {{packageName: bar, versionRange: '>=1.0.0'}}\n",
        bundle("foo.v1", "1.0.0")
    );
    let err = parse(&[("b.yaml", &text)]).unwrap_err();
    assert!(
        matches!(
            &err,
            ParseError::Property {
                source: PropertyError::Constraint(_),
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn a_field_of_the_wrong_type_is_a_shape_error() {
    let err = parse(&[(
        "c.json",
        r#"{"schema": "olm.channel", "package": "foo", "name": "stable", "entries": "x"}"#,
    )])
    .unwrap_err();
    assert!(
        matches!(
            &err,
            ParseError::Shape {
                schema: "olm.channel",
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn an_invalid_skip_range_names_the_entry() {
    let text = channel(
        "stable",
        &["name: foo.v1", "name: foo.v2\n  skipRange: '>=1.0.0 <'"],
    );
    let err = parse(&[("c.yaml", &text)]).unwrap_err();
    assert!(
        matches!(&err, ParseError::SkipRange { entry, .. } if entry == "foo.v2"),
        "{err:?}"
    );
}

#[test]
fn a_deprecation_of_an_unsupported_schema_is_rejected() {
    let text = "schema: olm.deprecations\npackage: foo\nentries:\n- reference: {schema: olm.widget, name: w}\n  message: gone\n";
    let err = parse(&[("d.yaml", text)]).unwrap_err();
    assert!(
        matches!(&err, ParseError::DeprecationSchema { schema, .. } if schema == "olm.widget"),
        "{err:?}"
    );
    let text = "schema: olm.deprecations\npackage: foo\nentries:\n- reference: {schema: olm.bundle}\n  message: gone\n";
    let err = parse(&[("d.yaml", text)]).unwrap_err();
    assert!(matches!(err, ParseError::DeprecationName { .. }), "{err:?}");
}

#[test]
fn an_invalid_indexignore_pattern_is_reported() {
    let err = parse(&[
        ("pkg/.indexignore", "[z-a].yaml\n"),
        ("pkg/a.yaml", PACKAGE),
    ])
    .unwrap_err();
    assert!(
        matches!(&err, ParseError::IndexIgnore { file, .. } if file == "pkg/.indexignore"),
        "{err:?}"
    );
}

#[test]
fn files_an_indexignore_would_hide_fail_without_it() {
    let files = [("README.md", "# Title\n\nprose\n"), ("foo.yaml", PACKAGE)];
    assert!(parse(&files).is_err());
    let mut with_ignore = files.to_vec();
    with_ignore.push((".indexignore", "*.md\n"));
    assert_eq!(parse(&with_ignore).unwrap().packages.len(), 1);
}

#[test]
fn a_missing_directory_is_a_read_error() {
    let err = fbc::parse_dir("/definitely/not/here").unwrap_err();
    assert!(matches!(err, ParseError::Read { .. }), "{err:?}");
}

#[test]
fn arbitrary_bytes_never_panic() {
    let inputs: [&[u8]; 8] = [
        b"\xff\xfe\x00garbage",
        b"{{{{",
        b"- - - [",
        b"schema: [1, 2]",
        b"{\"schema\": 5}",
        b"&a [*a, *a]",
        b"\xEF\xBB\xBF{\"schema\": \"x\"}",
        b"schema: olm.bundle\nproperties: 7\n",
    ];
    for input in inputs {
        // Any outcome is fine as long as it is a value, not a panic.
        let _ = parse_files([("f", input)]);
    }
    let ok = parse_files([("f", b"\xEF\xBB\xBF{\"schema\": \"x\"}".as_slice())]).unwrap();
    assert_eq!(ok.others.len(), 1, "a UTF-8 byte order mark is skipped");
}

#[test]
fn duplicate_packages_and_bundles_name_both_definitions() {
    let b = bundle("foo.v1", "1.0.0");
    let problems = problems(&[
        ("a.yaml", PACKAGE),
        ("b.yaml", PACKAGE),
        ("c.yaml", &channel("stable", &["name: foo.v1"])),
        ("d.yaml", &b),
        ("e.yaml", &b),
    ]);
    assert!(problems.iter().any(|p| matches!(p,
        IndexError::DuplicatePackage { name, location, first }
            if name == "foo" && &*location.file == "b.yaml" && &*first.file == "a.yaml")));
    assert!(problems.iter().any(|p| matches!(p,
        IndexError::DuplicateBundle { name, location, first, .. }
            if name == "foo.v1" && &*location.file == "e.yaml" && &*first.file == "d.yaml")));
}

#[test]
fn duplicate_channels_and_versions_are_reported() {
    let problems = problems(&[
        ("p.yaml", PACKAGE),
        (
            "c1.yaml",
            &channel(
                "stable",
                &["name: foo.v1", "name: foo.v1b\n  replaces: foo.v1"],
            ),
        ),
        ("c2.yaml", &channel("stable", &["name: foo.v1"])),
        ("b1.yaml", &bundle("foo.v1", "1.0.0")),
        ("b2.yaml", &bundle("foo.v1b", "1.0.0")),
    ]);
    assert!(problems.iter().any(|p| matches!(p,
        IndexError::DuplicateChannel { name, first, .. } if name == "stable" && &*first.file == "c1.yaml")));
    assert!(problems.iter().any(|p| matches!(p,
        IndexError::DuplicateVersion { bundles, .. } if bundles == &["foo.v1", "foo.v1b"])));
}

#[test]
fn references_to_missing_packages_channels_and_bundles_are_reported() {
    let stray = bundle("bar.v1", "1.0.0").replace("package: foo", "package: bar");
    let stray = stray.replace("packageName: foo", "packageName: bar");
    let problems = problems(&[
        ("p.yaml", &PACKAGE.replace("stable", "fast")),
        (
            "c.yaml",
            &channel(
                "stable",
                &["name: foo.v1", "name: foo.v2\n  replaces: foo.v1"],
            ),
        ),
        ("b.yaml", &bundle("foo.v1", "1.0.0")),
        ("o.yaml", &bundle("foo.v3", "3.0.0")),
        ("s.yaml", &stray),
        (
            "d.yaml",
            "schema: olm.deprecations\npackage: foo\nentries:\n- reference: {schema: olm.channel, name: beta}\n  message: gone\n",
        ),
    ]);
    let has = |f: &dyn Fn(&IndexError) -> bool| problems.iter().any(f);
    assert!(has(
        &|p| matches!(p, IndexError::UnknownDefaultChannel { channel, .. } if channel == "fast")
    ));
    assert!(has(
        &|p| matches!(p, IndexError::UnknownPackage { package, .. } if package == "bar")
    ));
    assert!(has(
        &|p| matches!(p, IndexError::BundleNotInChannel { name, .. } if name == "foo.v3")
    ));
    assert!(has(&|p| matches!(p,
        IndexError::Channel { source: ChannelError::MissingBundles(names), .. } if names == &["foo.v2"])));
    assert!(has(&|p| matches!(p,
        IndexError::UnknownDeprecationTarget { reference: DeprecationReference::Channel(c), .. } if c == "beta")));
}

#[test]
fn a_bundle_without_image_is_invalid_unless_it_inlines_objects() {
    let no_image = bundle("foo.v1", "1.0.0").replace("image: example.com/foo:1.0.0\n", "");
    let problems = problems(&[
        ("p.yaml", PACKAGE),
        ("c.yaml", &channel("stable", &["name: foo.v1"])),
        ("b.yaml", &no_image),
    ]);
    assert!(
        matches!(problems.as_slice(), [IndexError::BundleWithoutImage { name, .. }] if name == "foo.v1")
    );

    let inline = format!("{no_image}- type: olm.bundle.object\n  value: {{data: e30=}}\n");
    let index = CatalogIndex::from_files([
        ("p.yaml", PACKAGE),
        ("c.yaml", channel("stable", &["name: foo.v1"]).as_str()),
        ("b.yaml", inline.as_str()),
    ])
    .unwrap();
    assert!(index.bundle("foo", "foo.v1").unwrap().has_inline_objects());
}

#[test]
fn a_catalog_error_lists_every_problem_with_its_cause() {
    let err = match CatalogIndex::from_files([
        ("p.yaml", PACKAGE),
        (
            "c.yaml",
            channel("stable", &["name: foo.v1", "name: foo.v1"]).as_str(),
        ),
        ("b1.yaml", bundle("foo.v1", "1.0.0").as_str()),
        (
            "x.yaml",
            "schema: olm.channel\npackage: ghost\nname: stable\nentries: [{name: g}]\n",
        ),
    ]) {
        Err(LoadError::Invalid(err)) => err,
        other => panic!("unexpected {other:?}"),
    };
    assert_eq!(err.problems.len(), 2, "{err}");
    let text = err.to_string();
    assert!(text.contains("2 problems"), "{text}");
    assert!(
        text.contains("entry \"foo.v1\" appears more than once"),
        "{text}"
    );
    assert!(text.contains("unknown package \"ghost\""), "{text}");
}

/// A package called `name` with channel `stable` made of `entries`, one bundle per entry
/// (`<name>.v<version>`), as one file.
fn package_file(name: &str, entries: &[(&str, &str)]) -> String {
    let mut out = format!(
        "---\nschema: olm.package\nname: {name}\ndefaultChannel: stable\n\
         ---\nschema: olm.channel\npackage: {name}\nname: stable\nentries:\n"
    );
    for (version, edges) in entries {
        out.push_str(&format!("- name: {name}.v{version}\n"));
        if !edges.is_empty() {
            out.push_str(&format!("  {edges}\n"));
        }
    }
    for (version, _) in entries {
        out.push_str(&format!(
            "---\nschema: olm.bundle\npackage: {name}\nname: {name}.v{version}\n\
             image: example.com/{name}:{version}\nproperties:\n\
             - {{type: olm.package, value: {{packageName: {name}, version: {version}}}}}\n"
        ));
    }
    out
}

#[test]
fn a_channel_with_a_cycle_or_two_heads_sets_its_package_aside_and_keeps_the_rest() {
    let looped = package_file(
        "looped",
        &[
            ("1.0.0", "replaces: looped.v1.1.0"),
            ("1.1.0", "replaces: looped.v1.0.0"),
        ],
    );
    let forked = package_file(
        "forked",
        &[
            ("1.0.0", ""),
            ("1.1.0", "replaces: forked.v1.0.0"),
            ("2.0.0", ""),
        ],
    );
    let sound = package_file(
        "sound",
        &[("1.0.0", ""), ("1.1.0", "replaces: sound.v1.0.0")],
    );
    let index = CatalogIndex::from_files([
        ("looped.yaml", looped.as_str()),
        ("forked.yaml", forked.as_str()),
        ("sound.yaml", sound.as_str()),
    ])
    .unwrap();

    assert!(index.package_problems("sound").is_empty());
    assert!(index.channel_graph("sound", "stable").is_some());
    let unusable: Vec<&str> = index.unusable_packages().map(|(name, _)| name).collect();
    assert_eq!(unusable, ["forked", "looped"]);

    let [problem] = index.package_problems("looped") else {
        panic!("{:?}", index.package_problems("looped"));
    };
    assert!(matches!(problem,
        IndexError::Channel { channel, source: ChannelError::Cycle(path), .. }
            if channel == "stable" && path == &["looped.v1.0.0", "looped.v1.1.0", "looped.v1.0.0"]));
    assert_eq!(
        problem.to_string(),
        "looped.yaml document 2 (olm.channel \"stable\"): invalid channel \"stable\" of \
         package \"looped\""
    );
    let [problem] = index.package_problems("forked") else {
        panic!("{:?}", index.package_problems("forked"));
    };
    assert!(matches!(problem,
        IndexError::Channel { source: ChannelError::MultipleHeads(heads), .. }
            if heads == &["forked.v1.1.0", "forked.v2.0.0"]));
    // The broken channel is not offered, but the bundles can still be looked up.
    assert!(index.channel_graph("forked", "stable").is_none());
    assert!(index.bundle("forked", "forked.v2.0.0").is_some());
}

#[test]
fn a_package_without_channels_is_invalid() {
    let problems = problems(&[("p.yaml", "schema: olm.package\nname: foo\n")]);
    assert!(
        matches!(problems.as_slice(), [IndexError::PackageWithoutChannels { package, .. }] if package == "foo"),
        "{problems:?}"
    );
}

#[test]
fn deprecation_blobs_and_entries_must_be_unique_per_package() {
    let deprecations = "schema: olm.deprecations\npackage: foo\nentries:\n\
        - reference: {schema: olm.bundle, name: foo.v1}\n  message: old\n\
        - reference: {schema: olm.bundle, name: foo.v1}\n  message: older\n";
    let problems = problems(&[
        ("p.yaml", PACKAGE),
        ("c.yaml", &channel("stable", &["name: foo.v1"])),
        ("b.yaml", &bundle("foo.v1", "1.0.0")),
        ("d1.yaml", deprecations),
        ("d2.yaml", deprecations),
    ]);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems.iter().any(|p| matches!(p,
        IndexError::DuplicateDeprecationEntry { reference: DeprecationReference::Bundle(b), .. } if b == "foo.v1")));
    assert!(problems.iter().any(|p| matches!(p,
        IndexError::DuplicateDeprecations { location, first, .. }
            if &*location.file == "d2.yaml" && &*first.file == "d1.yaml")));
}

/// Files are parsed on several threads: the catalog keeps file order, and of two broken files
/// the first in path order is the one reported, whichever thread reached it first.
#[test]
fn a_directory_keeps_file_order_and_reports_its_first_broken_file() {
    let dir = std::env::temp_dir().join(format!("fbc-parse-dir-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for index in 0..40 {
        let path = dir.join(format!("p{index:02}"));
        std::fs::create_dir_all(&path).unwrap();
        let contents = format!(
            r#"{{"schema":"olm.package","name":"p{index:02}"}}
{{"schema":"olm.bundle","package":"p{index:02}","name":"p{index:02}.v1","properties":[{{"type":"olm.package","value":{{"packageName":"p{index:02}","version":"1.0.0"}}}}]}}"#
        );
        std::fs::write(path.join("catalog.json"), contents).unwrap();
    }
    let catalog = fbc::parse_dir(&dir).unwrap();
    let names: Vec<&str> = catalog.packages.iter().map(|p| p.name.as_str()).collect();
    let expected: Vec<String> = (0..40).map(|i| format!("p{i:02}")).collect();
    assert_eq!(names, expected);
    assert_eq!(catalog.bundles.len(), 40);

    std::fs::write(dir.join("p31/catalog.json"), "{\"schema\":\"olm.package\"").unwrap();
    std::fs::write(
        dir.join("p07/catalog.json"),
        "{\"schema\":\"olm.package\",]",
    )
    .unwrap();
    let err = fbc::parse_dir(&dir).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("malformed JSON in p07/catalog.json"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Each top-level folder is listed and read by one worker, but blobs still come in the order
/// of their files' whole paths: a folder's files sort where its name and a `/` sort among the
/// top-level files (`a-b.json` < `a.json` < `a/…` < `a0.json`), and a root `.indexignore`
/// reaches into every folder while a folder's own applies inside it only.
#[test]
fn a_directory_is_read_in_whole_path_order_with_every_indexignore_applied() {
    let dir = std::env::temp_dir().join(format!("fbc-path-order-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let package = |name: &str| format!("{{\"schema\":\"olm.package\",\"name\":\"{name}\"}}\n");
    let broken = "{\"schema\":";
    let files: [(&str, String); 13] = [
        ("a0.json", package("fifth")),
        ("a/z.json", package("fourth")),
        ("a/x.json", package("third")),
        ("a/sub/y.json", package("second-and-a-half")),
        ("a.json", package("second")),
        ("a-b.json", package("first")),
        ("b/keep.json", package("last")),
        ("b/skip.json", broken.to_owned()),
        ("b/.indexignore", "skip.json\n".to_owned()),
        ("c/broken.json", broken.to_owned()),
        ("d/notes.md", "# not a catalog\n".to_owned()),
        ("notes.md", "# not a catalog\n".to_owned()),
        (".indexignore", "*.md\nc/\n".to_owned()),
    ];
    for (path, contents) in &files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }
    let catalog = fbc::parse_dir(&dir).unwrap();
    let names: Vec<&str> = catalog.packages.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "first",
            "second",
            "second-and-a-half",
            "third",
            "fourth",
            "fifth",
            "last"
        ]
    );
    let files: Vec<&str> = catalog.packages.iter().map(|p| &*p.location.file).collect();
    assert_eq!(
        files,
        [
            "a-b.json",
            "a.json",
            "a/sub/y.json",
            "a/x.json",
            "a/z.json",
            "a0.json",
            "b/keep.json"
        ]
    );

    // A folder's `.indexignore` does not reach its neighbours.
    std::fs::write(dir.join("e.json"), broken).unwrap();
    std::fs::write(dir.join("a/skip.json"), broken).unwrap();
    let err = fbc::parse_dir(&dir).unwrap_err();
    assert!(
        err.to_string().starts_with("malformed JSON in a/skip.json"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Problems come in a fixed order whatever the order work is done in: duplicate packages,
/// then bundles in file order, channels in file order, each package's own checks in package
/// name order, and deprecations in file order.
#[test]
fn problems_of_many_packages_are_listed_in_a_stable_order() {
    let package =
        |name: &str| format!("schema: olm.package\nname: {name}\ndefaultChannel: stable\n");
    let bundle = |package: &str, name: &str, version: &str, image: &str| {
        format!(
            "schema: olm.bundle\npackage: {package}\nname: {name}\nimage: \"{image}\"\n\
             properties:\n- type: olm.package\n  value: {{packageName: {package}, version: {version}}}\n"
        )
    };
    let channel = |package: &str, name: &str, entries: &[&str]| {
        let mut out = format!("schema: olm.channel\npackage: {package}\nname: {name}\nentries:\n");
        for entry in entries {
            out.push_str(&format!("- name: {entry}\n"));
        }
        out
    };
    let deprecations = |package: &str, bundle: &str| {
        format!(
            "schema: olm.deprecations\npackage: {package}\nentries:\n\
             - reference: {{schema: olm.bundle, name: {bundle}}}\n  message: gone\n"
        )
    };
    // Packages are declared in reverse name order, and every kind of problem appears in
    // each of enough packages to be indexed on several threads, so an order taken from a
    // map or from whichever thread finished first would show.
    let names: Vec<String> = (0..40).map(|n| format!("pkg{n:02}")).collect();
    let mut files = vec![(
        "all-packages.yaml".to_owned(),
        names
            .iter()
            .rev()
            .map(|name| package(name))
            .collect::<Vec<_>>()
            .join("---\n"),
    )];
    for name in &names {
        files.push((
            format!("{name}/bundles.yaml"),
            [
                bundle(name, &format!("{name}.v1"), "1.0.0", "example.com/x:1"),
                bundle(name, &format!("{name}.v1"), "1.0.1", "example.com/x:2"),
                bundle(name, &format!("{name}.v2"), "1.0.0", ""),
                bundle(name, &format!("{name}.v3"), "3.0.0", "example.com/x:3"),
            ]
            .join("---\n"),
        ));
        files.push((
            format!("{name}/channels.yaml"),
            [
                channel(name, "stable", &[&format!("{name}.v1")]),
                channel(name, "stable", &[&format!("{name}.v1")]),
            ]
            .join("---\n"),
        ));
        files.push((
            format!("{name}/deprecations.yaml"),
            [deprecations(name, "missing"), deprecations(name, "other")].join("---\n"),
        ));
    }
    files.push(("dup.yaml".to_owned(), package("pkg17")));
    files.push((
        "ghost.yaml".to_owned(),
        bundle("ghost", "ghost.v1", "1.0.0", "x"),
    ));
    let problems = problems(
        &files
            .iter()
            .map(|(p, c)| (p.as_str(), c.as_str()))
            .collect::<Vec<_>>(),
    );
    let found: Vec<String> = problems
        .iter()
        .map(|p| match p {
            IndexError::DuplicatePackage { name, .. } => format!("duplicate package {name}"),
            IndexError::BundleWithoutImage { name, .. } => format!("no image {name}"),
            IndexError::UnknownPackage { package, .. } => format!("unknown package {package}"),
            IndexError::DuplicateBundle { name, .. } => format!("duplicate bundle {name}"),
            IndexError::DuplicateChannel { package, name, .. } => {
                format!("duplicate channel {package}/{name}")
            }
            IndexError::BundleNotInChannel { name, .. } => format!("not in channel {name}"),
            IndexError::DuplicateDeprecations { package, .. } => {
                format!("duplicate deprecations {package}")
            }
            IndexError::UnknownDeprecationTarget { package, .. } => {
                format!("unknown deprecation target {package}")
            }
            IndexError::DuplicateVersion { package, .. } => format!("versions {package}"),
            other => format!("other {other}"),
        })
        .collect();
    // Files are read in path order: all-packages.yaml, dup.yaml, ghost.yaml, pkg00/, ...
    let mut expected = vec![
        "duplicate package pkg17".to_owned(),
        "unknown package ghost".to_owned(),
    ];
    for name in &names {
        expected.push(format!("duplicate bundle {name}.v1"));
        expected.push(format!("no image {name}.v2"));
    }
    for name in &names {
        expected.push(format!("duplicate channel {name}/stable"));
    }
    for name in &names {
        expected.push(format!("not in channel {name}.v3"));
        expected.push(format!("not in channel {name}.v2"));
        expected.push(format!("versions {name}"));
    }
    for name in &names {
        expected.push(format!("unknown deprecation target {name}"));
        expected.push(format!("duplicate deprecations {name}"));
    }
    assert_eq!(found, expected);
}

/// What the walk of a catalog directory reads: files at any depth, symbolic links to files
/// but not to directories, nothing dangling; files of very different sizes one after the
/// other, read into one reused buffer, each whole and nothing more.
#[test]
fn a_directory_walk_reads_every_file_whole_and_follows_links_to_files_only() {
    let dir = std::env::temp_dir().join(format!("fbc-walk-{}", std::process::id()));
    let outside = std::env::temp_dir().join(format!("fbc-walk-outside-{}", std::process::id()));
    for d in [&dir, &outside] {
        let _ = std::fs::remove_dir_all(d);
    }
    let package = |name: &str, description_bytes: usize| {
        format!(
            r#"{{"schema":"olm.package","name":"{name}","description":"{}"}}"#,
            "d".repeat(description_bytes)
        )
    };
    // Larger than a first read, then smaller, then larger than the buffer has grown to.
    std::fs::create_dir_all(dir.join("a/nested/deeper")).unwrap();
    std::fs::write(dir.join("a/big.json"), package("big", 200_000)).unwrap();
    std::fs::write(dir.join("a/nested/small.json"), package("small", 3)).unwrap();
    std::fs::write(
        dir.join("a/nested/deeper/bigger.json"),
        package("bigger", 700_000),
    )
    .unwrap();
    std::fs::write(dir.join("top.json"), package("top", 0)).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("linked.json"), package("linked", 10)).unwrap();
    std::fs::write(
        outside.join("behind-a-directory-link.json"),
        package("hidden", 1),
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.join("linked.json"), dir.join("link.json")).unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("linked-dir")).unwrap();
    std::os::unix::fs::symlink(dir.join("missing.json"), dir.join("dangling.json")).unwrap();

    let catalog = fbc::parse_dir(&dir).unwrap();
    let mut found: Vec<(&str, usize, &str)> = catalog
        .packages
        .iter()
        .map(|p| {
            let description = p.description.as_deref().unwrap_or_default();
            (p.name.as_str(), description.len(), &*p.location.file)
        })
        .collect();
    found.sort_unstable();
    assert_eq!(
        found,
        [
            ("big", 200_000, "a/big.json"),
            ("bigger", 700_000, "a/nested/deeper/bigger.json"),
            ("linked", 10, "link.json"),
            ("small", 3, "a/nested/small.json"),
            ("top", 0, "top.json"),
        ]
    );

    // A file that cannot be read is named in the error, under the catalog's path.
    std::fs::create_dir_all(dir.join("b")).unwrap();
    std::os::unix::fs::symlink("/proc/self/mem", dir.join("b/unreadable.json")).unwrap();
    let err = fbc::parse_dir(&dir).unwrap_err();
    assert!(
        matches!(&err, fbc::ParseError::Read { path, .. } if *path == dir.join("b/unreadable.json")),
        "{err:?}"
    );
    for d in [&dir, &outside] {
        let _ = std::fs::remove_dir_all(d);
    }
}
