//! Channel graphs: heads, upgrade edges and the errors upstream reports.

// Test helpers outside #[test] functions unwrap too; a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;

use fbc::{
    Channel, ChannelEntry, ChannelError, ChannelGraph, Location, PrereleasePolicy, Version,
    VersionRange,
};

/// An entry written as `name`, `name<old` (replaces old), `name<old!skip1!skip2`, or with a
/// skipRange after `@`: `name@>=1.0.0 <1.2.0`.
fn entry(spec: &str) -> ChannelEntry {
    let (spec, skip_range) = match spec.split_once('@') {
        Some((head, range)) => (
            head,
            Some(VersionRange::parse(range, PrereleasePolicy::Ordered).unwrap()),
        ),
        None => (spec, None),
    };
    let mut parts = spec.split('!');
    let head = parts.next().unwrap();
    let skips = parts.map(str::to_owned).collect();
    let (name, replaces) = match head.split_once('<') {
        Some((name, old)) => (name, Some(old.to_owned())),
        None => (head, None),
    };
    ChannelEntry {
        name: name.to_owned(),
        replaces,
        skips,
        skip_range,
    }
}

fn channel(specs: &[&str]) -> Channel {
    Channel {
        package: "foo".into(),
        name: "stable".into(),
        entries: specs.iter().map(|s| entry(s)).collect(),
        properties: Vec::new(),
        location: Location::new("foo/channel.yaml", 1),
    }
}

/// Bundles named `a-1.2.0` have version 1.2.0; plain names like `a` get 0.0.<len>.
fn versions(channel: &Channel) -> HashMap<String, Version> {
    channel
        .entries
        .iter()
        .map(|e| {
            let version = match e.name.split_once('-') {
                Some((_, v)) => Version::parse(v).unwrap(),
                None => Version::new(0, 0, e.name.len() as u64),
            };
            (e.name.clone(), version)
        })
        .collect()
}

fn graph(specs: &[&str]) -> Result<ChannelGraph, ChannelError> {
    let channel = channel(specs);
    let versions = versions(&channel);
    ChannelGraph::new(&channel, |name| versions.get(name))
}

fn names<'a>(entries: impl IntoIterator<Item = &'a ChannelEntry>) -> Vec<&'a str> {
    entries.into_iter().map(|e| e.name.as_str()).collect()
}

#[test]
fn a_replaces_chain_has_its_newest_entry_as_head() {
    let graph = graph(&["a", "b<a", "c<b"]).unwrap();
    assert_eq!(graph.head().name, "c");
    assert_eq!(names(graph.replaces_chain()), ["c", "b", "a"]);
    assert_eq!(names(graph.entries()), ["a", "b", "c"]);
}

#[test]
fn a_single_entry_is_its_own_head() {
    let graph = graph(&["only"]).unwrap();
    assert_eq!(graph.head().name, "only");
    assert!(graph.edges().is_empty());
}

#[test]
fn an_empty_channel_is_invalid() {
    assert_eq!(graph(&[]).unwrap_err(), ChannelError::Empty);
}

#[test]
fn an_entry_listed_twice_is_invalid() {
    assert_eq!(
        graph(&["a", "b<a", "a"]).unwrap_err(),
        ChannelError::DuplicateEntry("a".into())
    );
}

#[test]
fn entries_naming_missing_bundles_are_listed() {
    let channel = channel(&["a", "b<a", "c<b"]);
    let versions = versions(&channel);
    let err = ChannelGraph::new(&channel, |name| {
        (name == "a").then(|| versions.get(name)).flatten()
    })
    .unwrap_err();
    assert_eq!(
        err,
        ChannelError::MissingBundles(vec!["b".into(), "c".into()])
    );
}

#[test]
fn two_unrelated_chains_have_several_heads() {
    let err = graph(&["a", "b<a", "x", "y<x"]).unwrap_err();
    assert_eq!(
        err,
        ChannelError::MultipleHeads(vec!["b".into(), "y".into()])
    );
    assert_eq!(err.to_string(), "channel has several heads: b, y");
}

#[test]
fn a_replaces_cycle_is_reported_as_a_path() {
    let err = graph(&["a<c", "b<a", "c<b", "d<c"]).unwrap_err();
    assert_eq!(
        err,
        ChannelError::Cycle(vec!["a".into(), "c".into(), "b".into(), "a".into()])
    );
    assert!(err.to_string().contains("a -> c -> b -> a"));
}

#[test]
fn a_cycle_without_any_head_is_a_cycle_not_a_missing_head() {
    assert!(matches!(
        graph(&["a<b", "b<a"]).unwrap_err(),
        ChannelError::Cycle(_)
    ));
    // Through skips only: each skips the other, so neither can be the head.
    let err = graph(&["a!b", "b!a"]).unwrap_err();
    let ChannelError::Cycle(path) = err else {
        panic!("unexpected {err:?}");
    };
    assert_eq!(path.first(), path.last());
    assert_eq!(path.len(), 3);
}

#[test]
fn a_chain_that_replaces_nothing_in_the_channel_is_a_second_head() {
    let err = graph(&["a", "b<a", "c<b!x", "y<gone"]).unwrap_err();
    assert_eq!(
        err,
        ChannelError::MultipleHeads(vec!["c".into(), "y".into()])
    );
    let err = graph(&["a", "b<a", "c<b!b", "z<b"]).unwrap_err();
    assert_eq!(
        err,
        ChannelError::MultipleHeads(vec!["c".into(), "z".into()])
    );
}

#[test]
fn an_entry_off_the_replaces_chain_and_not_skipped_is_stranded() {
    // The head's chain stops at "a" because "b" skips it, so nothing leads on to "old".
    let err = graph(&["old", "a<old", "b<a!a"]).unwrap_err();
    assert_eq!(err, ChannelError::Stranded(vec!["old".into()]));
    assert!(err.to_string().contains("not reachable from the head: old"));
}

#[test]
fn replaces_may_name_a_missing_bundle_at_the_tail() {
    let graph = graph(&["b<gone", "c<b"]).unwrap();
    assert_eq!(names(graph.replaces_chain()), ["c", "b"]);
    assert_eq!(names(graph.successors("gone", None)), ["b"]);
}

#[test]
fn skipped_entries_need_not_be_on_the_chain() {
    let graph = graph(&["a", "b<a", "c", "d<b!c"]).unwrap();
    assert_eq!(graph.head().name, "d");
    assert_eq!(names(graph.replaces_chain()), ["d", "b", "a"]);
    // c is not on the chain but d skips it, so c can upgrade straight to d.
    assert_eq!(names(graph.successors("c", None)), ["d"]);
}

#[test]
fn successors_come_from_replaces_skips_and_skip_range() {
    let graph = graph(&[
        "a-1.0.0",
        "b-1.1.0<a-1.0.0",
        "c-1.2.0<b-1.1.0!a-1.0.0",
        "d-1.3.0<c-1.2.0@>=1.0.0 <1.3.0",
    ])
    .unwrap();
    let v = |s: &str| Version::parse(s).unwrap();
    assert_eq!(
        names(graph.successors("a-1.0.0", Some(&v("1.0.0")))),
        ["b-1.1.0", "c-1.2.0", "d-1.3.0"]
    );
    assert_eq!(
        names(graph.successors("c-1.2.0", Some(&v("1.2.0")))),
        ["d-1.3.0"]
    );
    assert!(graph.successors("d-1.3.0", Some(&v("1.3.0"))).is_empty());
    // Without a version, the skipRange edge is unknown and so not taken.
    assert_eq!(
        names(graph.successors("a-1.0.0", None)),
        ["b-1.1.0", "c-1.2.0"]
    );
    // A bundle from elsewhere (never in this channel) upgrades through skipRange alone.
    assert_eq!(
        names(graph.successors("other-1.0.5", Some(&v("1.0.5")))),
        ["d-1.3.0"]
    );
}

#[test]
fn a_skip_range_does_not_make_an_entry_its_own_successor() {
    let graph = graph(&["a-1.0.0", "b-1.1.0<a-1.0.0@>=1.0.0 <=1.1.0"]).unwrap();
    let v = Version::parse("1.1.0").unwrap();
    assert!(graph.successors("b-1.1.0", Some(&v)).is_empty());
    assert_eq!(names(graph.predecessors("b-1.1.0")), ["a-1.0.0"]);
}

#[test]
fn a_skip_range_alone_does_not_link_entries_into_one_chain() {
    // b's skipRange covers a, but only replaces and skips count when finding the head.
    let err = graph(&["a-1.0.0", "b-2.0.0@>=1.0.0 <2.0.0"]).unwrap_err();
    assert_eq!(
        err,
        ChannelError::MultipleHeads(vec!["a-1.0.0".into(), "b-2.0.0".into()])
    );
}

#[test]
fn predecessors_and_edges_list_every_upgrade_within_the_channel() {
    let graph = graph(&[
        "a-1.0.0",
        "b-1.1.0<a-1.0.0",
        "c-1.2.0<b-1.1.0@>=1.0.0 <1.2.0",
    ])
    .unwrap();
    assert_eq!(names(graph.predecessors("c-1.2.0")), ["a-1.0.0", "b-1.1.0"]);
    assert!(graph.predecessors("a-1.0.0").is_empty());
    assert!(graph.predecessors("missing").is_empty());
    assert_eq!(
        graph.edges(),
        [
            ("a-1.0.0", "b-1.1.0"),
            ("a-1.0.0", "c-1.2.0"),
            ("b-1.1.0", "c-1.2.0")
        ]
    );
}

#[test]
fn lookups_by_name_find_entries() {
    let graph = graph(&["a", "b<a"]).unwrap();
    assert!(graph.contains("a"));
    assert!(!graph.contains("z"));
    assert_eq!(graph.entry("b").unwrap().replaces.as_deref(), Some("a"));
    assert!(graph.entry("z").is_none());
}
