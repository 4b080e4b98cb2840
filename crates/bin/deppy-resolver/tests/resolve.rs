//! OLM resolver scenarios (deppy research notes §5.3–5.4) on the fixture catalogs under
//! `tests/fixtures`: dependencies, preferences, upgrades, uniqueness, explanations, errors.

// Test helpers outside #[test] functions are not covered by clippy.toml's test allowances.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::LazyLock;

use deppy_resolver::{
    Constraint, ErrorCategory, KubeVersion, NamedCatalog, Request, ResolveError, Resolver,
    Unsatisfiable, resolve,
};
use fbc::CatalogIndex;

fn load(name: &str) -> CatalogIndex {
    let dir = testkit::package_path(format!("tests/fixtures/{name}"));
    CatalogIndex::from_dir(&dir).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

static COMMUNITY: LazyLock<CatalogIndex> = LazyLock::new(|| load("community"));
static CERTIFIED: LazyLock<CatalogIndex> = LazyLock::new(|| load("certified"));
static UPGRADES: LazyLock<CatalogIndex> = LazyLock::new(|| load("upgrades"));
static GRAPHS: LazyLock<CatalogIndex> = LazyLock::new(|| load("graphs"));

fn upgrades() -> Vec<NamedCatalog<'static>> {
    vec![NamedCatalog::new("upgrades", &UPGRADES)]
}

fn graphs() -> Vec<NamedCatalog<'static>> {
    vec![NamedCatalog::new("graphs", &GRAPHS)]
}

/// The refusal of `expressions` on a cluster at `kube` (no check when `None`).
fn refusal(
    catalogs: &[NamedCatalog<'_>],
    kube: Option<KubeVersion>,
    expressions: &[&str],
) -> Unsatisfiable {
    let resolver = Resolver::new(catalogs.iter().copied())
        .unwrap()
        .with_kube_version(kube);
    match resolver.resolve(&request(expressions)) {
        Err(ResolveError::NotSatisfiable(unsatisfiable)) => *unsatisfiable,
        other => panic!("{expressions:?}: expected unsatisfiable, got {other:?}"),
    }
}

fn selections_on(
    catalogs: &[NamedCatalog<'_>],
    kube: Option<KubeVersion>,
    expressions: &[&str],
) -> Vec<String> {
    let resolver = Resolver::new(catalogs.iter().copied())
        .unwrap()
        .with_kube_version(kube);
    match resolver.resolve(&request(expressions)) {
        Ok(resolution) => resolution.selection_strings(),
        Err(e) => panic!("{expressions:?}: {e}"),
    }
}

const CLUSTER: Option<KubeVersion> = Some(KubeVersion::new(1, 36, 4));

fn community() -> Vec<NamedCatalog<'static>> {
    vec![NamedCatalog::new("community", &COMMUNITY)]
}

fn both(community_priority: i32, certified_priority: i32) -> Vec<NamedCatalog<'static>> {
    vec![
        NamedCatalog::new("community", &COMMUNITY).with_priority(community_priority),
        NamedCatalog::new("certified", &CERTIFIED).with_priority(certified_priority),
    ]
}

fn request(expressions: &[&str]) -> Request {
    Request::new(expressions.iter().map(|e| e.parse::<Constraint>().unwrap()))
}

fn selections(catalogs: &[NamedCatalog<'_>], expressions: &[&str]) -> Vec<String> {
    match resolve(catalogs, &request(expressions)) {
        Ok(resolution) => resolution.selection_strings(),
        Err(e) => panic!("{expressions:?}: {e}"),
    }
}

fn explanation(catalogs: &[NamedCatalog<'_>], expressions: &[&str]) -> String {
    match resolve(catalogs, &request(expressions)) {
        Err(ResolveError::NotSatisfiable(unsatisfiable)) => unsatisfiable.to_string(),
        other => panic!("{expressions:?}: expected unsatisfiable, got {other:?}"),
    }
}

#[test]
fn a_package_dependency_selects_the_newest_version_in_its_range() {
    assert_eq!(
        selections(&community(), &[r#"required("app")"#]),
        ["community:app:1.0.0:stable", "community:lib:1.1.0:stable"]
    );
}

#[test]
fn a_gvk_dependency_selects_a_provider_of_the_api() {
    assert_eq!(
        selections(&community(), &[r#"required("frontend")"#]),
        [
            "community:backend:1.0.0:stable",
            "community:frontend:1.0.0:stable"
        ]
    );
}

#[test]
fn nested_dependencies_are_resolved_transitively() {
    assert_eq!(
        selections(&community(), &[r#"required("portal")"#]),
        [
            "community:app:1.0.0:stable",
            "community:lib:1.1.0:stable",
            "community:portal:1.0.0:stable"
        ]
    );
}

#[test]
fn the_default_channel_is_preferred_over_a_channel_with_a_newer_version() {
    assert_eq!(
        selections(&community(), &[r#"required("etcd")"#]),
        ["community:etcd:0.9.4:stable"]
    );
    assert_eq!(
        selections(&community(), &[r#"required("etcd", "", "fast")"#]),
        ["community:etcd:1.0.0:fast"]
    );
}

#[test]
fn the_newest_version_in_range_is_preferred() {
    assert_eq!(
        selections(&community(), &[r#"required("lib")"#]),
        ["community:lib:2.0.0:stable"]
    );
    assert_eq!(
        selections(&community(), &[r#"required("lib", "<2.0.0")"#]),
        ["community:lib:1.1.0:stable"]
    );
}

#[test]
fn gvk_required_selects_the_preferred_provider() {
    assert_eq!(
        selections(
            &community(),
            &[r#"gvkRequired("etcd.database.coreos.com", "v1beta2", "EtcdCluster")"#]
        ),
        ["community:etcd:0.9.4:stable"]
    );
}

#[test]
fn an_installed_version_upgrades_by_skip_range_to_a_direct_successor_only() {
    // 0.9.2's skipRange covers 0.6.1 and 0.9.0 replaces it; 0.9.4 is newer but no direct
    // upgrade from 0.6.1.
    assert_eq!(
        selections(&community(), &[r#"installed("etcd", "0.6.1")"#]),
        ["community:etcd:0.9.2:stable"]
    );
}

#[test]
fn an_installed_version_upgrades_along_skips() {
    assert_eq!(
        selections(&community(), &[r#"installed("cache", "1.0.0")"#]),
        ["community:cache:1.2.0:stable"]
    );
}

#[test]
fn an_installed_version_missing_from_the_catalogs_upgrades_by_skip_range() {
    assert_eq!(
        selections(&community(), &[r#"installed("etcd", "0.7.0")"#]),
        ["community:etcd:0.9.2:stable"]
    );
}

#[test]
fn an_installed_head_without_upgrades_stays_installed() {
    assert_eq!(
        selections(&community(), &[r#"installed("etcd", "1.0.0")"#]),
        ["community:etcd:1.0.0:fast"]
    );
    // 0.9.4 is the head of stable; its only upgrade is in fast, which the requirement excludes.
    assert_eq!(
        selections(
            &community(),
            &[
                r#"installed("etcd", "0.9.4")"#,
                r#"required("etcd", "", "stable")"#
            ]
        ),
        ["community:etcd:0.9.4:stable"]
    );
}

#[test]
fn installed_and_required_together_select_a_successor_in_range() {
    assert_eq!(
        selections(
            &community(),
            &[
                r#"required("etcd", "<0.9.4")"#,
                r#"installed("etcd", "0.9.0")"#
            ]
        ),
        ["community:etcd:0.9.2:stable"]
    );
}

#[test]
fn a_prohibited_upgrade_leaves_the_installed_version_in_place() {
    assert_eq!(
        selections(
            &community(),
            &[
                r#"installed("cache", "1.1.0")"#,
                r#"prohibited("cache", ">=1.2.0")"#
            ]
        ),
        ["community:cache:1.1.0:stable"]
    );
}

#[test]
fn an_installed_version_cannot_jump_past_its_successors() {
    let text = explanation(
        &community(),
        &[
            r#"installed("etcd", "0.6.1")"#,
            r#"required("etcd", ">=0.9.4")"#,
        ],
    );
    for line in [
        r#"installed("etcd", "0.6.1") requires at least one of community:etcd:0.9.2:stable, community:etcd:0.9.0:stable or community:etcd:0.6.1:stable"#,
        r#"required("etcd", ">=0.9.4") requires at least one of community:etcd:0.9.4:stable, community:etcd:1.0.0:fast or community:etcd:0.9.4:fast"#,
        "there can be only one operator from package etcd: ",
    ] {
        assert!(text.contains(line), "{line:?} not in:\n{text}");
    }
}

#[test]
fn two_providers_of_one_api_prefer_the_first_package_by_name() {
    assert_eq!(
        selections(&community(), &[r#"required("shop")"#]),
        [
            "community:mysql:1.0.0:stable",
            "community:shop:1.0.0:stable"
        ]
    );
}

#[test]
fn a_required_provider_of_an_api_displaces_the_preferred_one() {
    assert_eq!(
        selections(
            &community(),
            &[r#"required("shop")"#, r#"required("postgres")"#]
        ),
        [
            "community:postgres:1.0.0:stable",
            "community:shop:1.0.0:stable"
        ]
    );
}

#[test]
fn two_required_providers_of_one_api_are_unsatisfiable() {
    assert_eq!(
        explanation(
            &community(),
            &[r#"required("mysql")"#, r#"required("postgres")"#]
        ),
        "constraints not satisfiable:\n\
         required(\"mysql\") is mandatory\n\
         required(\"mysql\") requires community:mysql:1.0.0:stable\n\
         required(\"postgres\") is mandatory\n\
         required(\"postgres\") requires community:postgres:1.0.0:stable\n\
         there can be only one provider of Database (db.example.com/v1): \
         community:mysql:1.0.0:stable and community:postgres:1.0.0:stable provide Database (db.example.com/v1)"
    );
}

/// A resolver for a one-shot process leaves its working memory to the process's exit; what
/// it answers must not change, whether it selects or refuses.
#[test]
fn a_one_shot_resolver_answers_as_any_other() {
    let catalogs = community();
    let one_shot = Resolver::new(catalogs.iter().copied())
        .unwrap()
        .for_one_shot_process();
    let selected = one_shot.resolve(&request(&[r#"required("app")"#])).unwrap();
    assert_eq!(
        selected.selection_strings(),
        selections(&catalogs, &[r#"required("app")"#])
    );
    let both = [r#"required("mysql")"#, r#"required("postgres")"#];
    match one_shot.resolve(&request(&both)) {
        Err(ResolveError::NotSatisfiable(unsatisfiable)) => {
            assert_eq!(unsatisfiable.to_string(), explanation(&catalogs, &both));
        }
        other => panic!("expected unsatisfiable, got {other:?}"),
    }
}

/// A catalog with one package at 1.0.0 that provides `Widget` (widgets.example.com/v1).
fn widget_provider(package: &str) -> CatalogIndex {
    let docs = [
        format!(r#"{{"schema":"olm.package","name":"{package}","defaultChannel":"stable"}}"#),
        format!(
            r#"{{"schema":"olm.channel","package":"{package}","name":"stable","entries":[{{"name":"{package}.v1.0.0"}}]}}"#
        ),
        format!(
            r#"{{"schema":"olm.bundle","package":"{package}","name":"{package}.v1.0.0","image":"example.com/{package}:1.0.0","properties":[{{"type":"olm.package","value":{{"packageName":"{package}","version":"1.0.0"}}}},{{"type":"olm.gvk","value":{{"group":"widgets.example.com","version":"v1","kind":"Widget"}}}}]}}"#
        ),
    ];
    CatalogIndex::from_files([(format!("{package}/catalog.json"), docs.join("\n"))]).unwrap()
}

/// The resolver numbers each catalog's APIs apart; the same API from two catalogs must still
/// be one API, provided at most once.
#[test]
fn one_api_provided_from_two_catalogs_is_provided_at_most_once() {
    let (red, blue) = (widget_provider("red"), widget_provider("blue"));
    let catalogs = [NamedCatalog::new("a", &red), NamedCatalog::new("b", &blue)];
    assert_eq!(
        explanation(&catalogs, &[r#"required("red")"#, r#"required("blue")"#]),
        "constraints not satisfiable:\n\
         required(\"red\") is mandatory\n\
         required(\"red\") requires a:red:1.0.0:stable\n\
         required(\"blue\") is mandatory\n\
         required(\"blue\") requires b:blue:1.0.0:stable\n\
         there can be only one provider of Widget (widgets.example.com/v1): \
         a:red:1.0.0:stable and b:blue:1.0.0:stable provide Widget (widgets.example.com/v1)"
    );
    assert_eq!(
        selections(&catalogs, &[r#"required("red")"#]),
        ["a:red:1.0.0:stable"]
    );
}

#[test]
fn a_deprecated_bundle_is_passed_over_for_an_older_one() {
    assert_eq!(
        selections(&community(), &[r#"required("logging")"#]),
        ["community:logging:1.5.0:stable"]
    );
}

#[test]
fn a_deprecated_bundle_is_still_selected_when_nothing_else_fits() {
    assert_eq!(
        selections(&community(), &[r#"required("logging", ">=2.0.0")"#]),
        ["community:logging:2.0.0:stable"]
    );
}

#[test]
fn catalog_priority_decides_between_otherwise_equal_bundles() {
    let resolution = resolve(&both(0, 10), &request(&[r#"required("lib", "<2.0.0")"#])).unwrap();
    assert_eq!(
        resolution.selection_strings(),
        ["certified:lib:1.1.0:stable"]
    );
    assert!(
        resolution.selections[0]
            .image
            .starts_with("registry.example.com/certified/")
    );
    assert_eq!(
        selections(&both(10, 0), &[r#"required("lib", "<2.0.0")"#]),
        ["community:lib:1.1.0:stable"]
    );
}

#[test]
fn equal_priorities_fall_back_to_the_catalog_name() {
    assert_eq!(
        selections(&both(0, 0), &[r#"required("lib", "<2.0.0")"#]),
        ["certified:lib:1.1.0:stable"]
    );
}

#[test]
fn a_newer_version_beats_a_higher_catalog_priority() {
    assert_eq!(
        selections(&both(0, 10), &[r#"required("lib")"#]),
        ["community:lib:2.0.0:stable"]
    );
}

#[test]
fn sources_restrict_the_catalogs_used() {
    let resolver = Resolver::new(both(0, 10)).unwrap();
    let only_community = request(&[r#"required("lib", "<2.0.0")"#]).with_sources(["community"]);
    assert_eq!(
        resolver
            .resolve(&only_community)
            .unwrap()
            .selection_strings(),
        ["community:lib:1.1.0:stable"]
    );
}

#[test]
fn results_do_not_depend_on_the_order_catalogs_are_given_in() {
    let mut reversed = both(0, 0);
    reversed.reverse();
    for expressions in [
        &[r#"required("lib", "<2.0.0")"#][..],
        &[r#"required("portal")"#],
    ] {
        assert_eq!(
            selections(&both(0, 0), expressions),
            selections(&reversed, expressions)
        );
    }
}

#[test]
fn a_missing_api_is_explained_in_olm_words() {
    assert_eq!(
        explanation(&community(), &[r#"required("broken")"#]),
        "constraints not satisfiable:\n\
         required(\"broken\") is mandatory\n\
         required(\"broken\") requires community:broken:1.0.0:stable\n\
         bundle community:broken:1.0.0:stable requires an operator providing an API with \
         group: x.example.com, version: v1, kind: Missing"
    );
}

#[test]
fn a_package_dependency_with_every_candidate_prohibited_is_explained() {
    assert_eq!(
        explanation(
            &community(),
            &[r#"required("app")"#, r#"prohibited("lib", "<2.0.0")"#]
        ),
        "constraints not satisfiable:\n\
         required(\"app\") is mandatory\n\
         required(\"app\") requires community:app:1.0.0:stable\n\
         bundle community:app:1.0.0:stable requires an operator with package: lib and with \
         version in range: >=1.0.0 <2.0.0\n\
         bundle community:lib:1.1.0:stable is prohibited by prohibited(\"lib\", \"<2.0.0\")\n\
         bundle community:lib:1.0.0:stable is prohibited by prohibited(\"lib\", \"<2.0.0\")"
    );
}

#[test]
fn prohibited_versions_are_passed_over_for_others() {
    assert_eq!(
        selections(
            &community(),
            &[r#"required("lib")"#, r#"prohibited("lib", ">=2.0.0")"#]
        ),
        ["community:lib:1.1.0:stable"]
    );
}

#[test]
fn requests_that_match_nothing_say_what_was_not_found() {
    let only_line = |expression: &str| {
        let text = explanation(&community(), &[expression]);
        text.lines().last().unwrap().to_owned()
    };
    assert_eq!(
        only_line(r#"required("nope")"#),
        r#"no operators found in package nope for required("nope")"#
    );
    assert_eq!(
        only_line(r#"required("etcd", "", "beta")"#),
        r#"no operators found in channel beta of package etcd for required("etcd", "", "beta")"#
    );
    assert_eq!(
        only_line(r#"required("etcd", ">=5.0.0", "stable")"#),
        r#"no operators found in channel stable of package etcd with version in range >=5.0.0 for required("etcd", ">=5.0.0", "stable")"#
    );
    assert_eq!(
        only_line(r#"gvkRequired("x.example.com", "v1", "Missing")"#),
        r#"no operators found providing an API with group: x.example.com, version: v1, kind: Missing for gvkRequired("x.example.com", "v1", "Missing")"#
    );
    assert_eq!(
        only_line(r#"installed("nope", "1.0.0")"#),
        r#"no operators found in package nope at version 1.0.0 or upgrading from it for installed("nope", "1.0.0")"#
    );
}

#[test]
fn an_olm_constraint_selects_from_the_union_of_its_alternatives() {
    assert_eq!(
        selections(&community(), &[r#"required("analytics")"#]),
        [
            "community:analytics:1.0.0:stable",
            "community:backend:1.0.0:stable"
        ]
    );
    assert_eq!(
        selections(
            &community(),
            &[r#"required("analytics")"#, r#"prohibited("backend")"#]
        ),
        [
            "community:analytics:1.0.0:stable",
            "community:lib:2.0.0:stable"
        ]
    );
}

#[test]
fn an_olm_constraint_failure_message_appears_in_the_explanation() {
    let text = explanation(
        &community(),
        &[
            r#"required("analytics")"#,
            r#"prohibited("backend")"#,
            r#"prohibited("lib")"#,
        ],
    );
    let line = "bundle community:analytics:1.0.0:stable requires an operator with package: lib \
                and with version in range: >=2.0.0 or providing an API with group: \
                api.example.com, version: v1, kind: Backend (analytics stores its data in lib 2 \
                or a backend)";
    assert!(text.contains(line), "{text}");
}

#[test]
fn a_bundle_whose_constraint_cannot_be_evaluated_is_passed_over() {
    assert_eq!(
        selections(&community(), &[r#"required("reporting")"#]),
        ["community:reporting:0.9.0:stable"]
    );
    let text = explanation(&community(), &[r#"required("reporting", ">=1.0.0")"#]);
    assert!(
        text.ends_with(
            "bundle community:reporting:1.0.0:stable requires an operator with cel rule: \
             properties.exists(p, p.type == \"certified\"), which cannot be evaluated: cel \
             constraints are not supported (rule \"properties.exists(p, p.type == \\\"certified\\\")\")"
        ),
        "{text}"
    );
}

#[test]
fn repeated_constraints_count_once() {
    assert_eq!(
        selections(
            &community(),
            &[r#"required("lib")"#, r#"required( "lib" )"#]
        ),
        ["community:lib:2.0.0:stable"]
    );
}

#[test]
fn an_empty_request_selects_nothing() {
    assert!(selections(&community(), &[]).is_empty());
}

#[test]
fn an_invalid_range_is_invalid_input_not_unsatisfiable() {
    let err = resolve(&community(), &request(&[r#"required("lib", ">=one")"#])).unwrap_err();
    assert!(matches!(err, ResolveError::InvalidVersionRange { .. }));
    assert_eq!(err.category(), ErrorCategory::InvalidInput);
    let err = resolve(&community(), &request(&[r#"installed("lib", "1.0")"#])).unwrap_err();
    assert!(matches!(err, ResolveError::InvalidInstalledVersion { .. }));
}

#[test]
fn an_unknown_source_is_invalid_input() {
    let err = resolve(
        &community(),
        &request(&[r#"required("lib")"#]).with_sources(["redhat-operators"]),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "failed to find catalog \"redhat-operators\" named in the request's sources"
    );
    assert!(err.category().is_invalid_input());
}

#[test]
fn a_malformed_function_form_is_a_clear_error() {
    let err = r#"required("lib", ">=1.0.0""#.parse::<Constraint>().unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"failed to parse constraint expression "required(\"lib\", \">=1.0.0\"" at column 26: expected "," or ")", found end of input"#
    );
    let err = "require(lib)".parse::<Constraint>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "failed to parse constraint expression \"require(lib)\" at column 1: unknown function \
         \"require\" (expected required, gvkRequired, prohibited or installed)"
    );
}

#[test]
fn selections_carry_the_bundle_name_and_image() {
    let resolution = resolve(&community(), &request(&[r#"required("etcd")"#])).unwrap();
    let selection = &resolution.selections[0];
    assert_eq!(selection.bundle, "etcd.v0.9.4");
    assert_eq!(selection.image, "quay.io/community/etcd-bundle:v0.9.4");
    assert_eq!(selection.channel, "stable");
}

#[test]
fn stats_report_the_problem_size() {
    let resolution = resolve(&community(), &request(&[r#"required("portal")"#])).unwrap();
    let stats = resolution.stats;
    // portal, app, lib 1.1.0 and lib 1.0.0 (lib 2.0.0 is outside app's range).
    assert_eq!(stats.bundles, 4);
    // The request, the four offers, and lib's uniqueness rule.
    assert_eq!(stats.variables, 6);
    // Mandatory + dependency, portal's and app's dependencies, lib's at-most-one.
    assert_eq!(stats.constraints, 5);
    assert!(stats.clauses.is_some_and(|c| c >= stats.constraints));
    assert!(stats.duration >= stats.solve_duration);

    let unsatisfiable = resolve(&community(), &request(&[r#"required("broken")"#]))
        .unwrap_err()
        .unsatisfiable()
        .cloned()
        .unwrap();
    assert_eq!(unsatisfiable.stats.bundles, 1);
    assert_eq!(unsatisfiable.stats.clauses, None);
}

#[test]
fn an_installed_version_upgrades_to_the_bundle_that_replaces_it() {
    // 0.2.0 replaces 0.1.0; the head, 0.3.0, replaces 0.2.0 and is one step too far.
    assert_eq!(
        selections(
            &upgrades(),
            &[
                r#"installed("memcached-operator", "0.1.0")"#,
                r#"required("memcached-operator")"#
            ]
        ),
        ["upgrades:memcached-operator:0.2.0:stable"]
    );
}

#[test]
fn a_range_below_the_installed_version_is_refused_naming_the_versions_the_graph_allows() {
    let refused = refusal(
        &upgrades(),
        None,
        &[
            r#"installed("memcached-operator", "0.2.0")"#,
            r#"required("memcached-operator", "<0.2.0", "stable")"#,
        ],
    );
    assert_eq!(
        refused.summary,
        [
            "package memcached-operator is installed at 0.2.0; the upgrade graph allows 0.2.0 \
          (stay) or 0.3.0 from it, and none of these is in range <0.2.0 of channel stable"
        ]
    );
    // The solver's explanation follows, in OLM's words.
    let text = refused.to_string();
    assert!(
        text.starts_with(&format!(
            "{}\nconstraints not satisfiable:\n",
            refused.summary[0]
        )),
        "{text}"
    );
    assert!(
        text.contains(
            r#"required("memcached-operator", "<0.2.0", "stable") requires upgrades:memcached-operator:0.1.0:stable"#
        ),
        "{text}"
    );
}

#[test]
fn a_range_that_matches_no_bundle_still_names_where_the_installed_version_can_go() {
    let refused = refusal(
        &upgrades(),
        None,
        &[
            r#"installed("memcached-operator", "0.2.0")"#,
            r#"required("memcached-operator", ">=0.5.0")"#,
        ],
    );
    assert_eq!(
        refused.summary,
        [
            "package memcached-operator is installed at 0.2.0; the upgrade graph allows 0.2.0 \
          (stay) or 0.3.0 from it, and none of these is in range >=0.5.0"
        ]
    );
}

#[test]
fn a_new_head_that_does_not_replace_the_installed_version_is_not_taken() {
    // The default channel v2 starts afresh at 2.0.0, which replaces nothing.
    assert_eq!(
        selections(&upgrades(), &[r#"required("redis-operator")"#]),
        ["upgrades:redis-operator:2.0.0:v2"]
    );
    assert_eq!(
        selections(
            &upgrades(),
            &[
                r#"installed("redis-operator", "1.0.0")"#,
                r#"required("redis-operator")"#
            ]
        ),
        ["upgrades:redis-operator:1.0.0:stable"]
    );
    let refused = refusal(
        &upgrades(),
        None,
        &[
            r#"installed("redis-operator", "1.0.0")"#,
            r#"required("redis-operator", "", "v2")"#,
        ],
    );
    assert_eq!(
        refused.summary,
        [
            "package redis-operator is installed at 1.0.0; the upgrade graph allows only 1.0.0 \
          (stay) from it, and it is not in channel v2"
        ]
    );
}

#[test]
fn a_dependency_package_moves_only_along_its_own_graph() {
    // Fresh, the dependency comes at its newest version.
    assert_eq!(
        selections(
            &upgrades(),
            &[r#"required("memcached-operator", ">=0.3.0", "stable")"#]
        ),
        [
            "upgrades:cache-lib:1.2.0:stable",
            "upgrades:memcached-operator:0.3.0:stable"
        ]
    );
    // Installed at 1.0.0, it takes the one step its channel allows.
    assert_eq!(
        selections(
            &upgrades(),
            &[
                r#"installed("memcached-operator", "0.2.0")"#,
                r#"installed("cache-lib", "1.0.0")"#,
                r#"required("memcached-operator")"#
            ]
        ),
        [
            "upgrades:cache-lib:1.1.0:stable",
            "upgrades:memcached-operator:0.3.0:stable"
        ]
    );
    // And a dependency that would have to jump is refused with its own graph named.
    let refused = refusal(
        &upgrades(),
        None,
        &[
            r#"installed("memcached-operator", "0.2.0")"#,
            r#"installed("cache-lib", "1.0.0")"#,
            r#"required("memcached-operator")"#,
            r#"required("cache-lib", ">=1.2.0")"#,
        ],
    );
    assert_eq!(
        refused.summary,
        [
            "package cache-lib is installed at 1.0.0; the upgrade graph allows 1.0.0 (stay) or \
          1.1.0 from it, and none of these is in range >=1.2.0"
        ]
    );
}

#[test]
fn an_installed_bundle_no_catalog_offers_is_refused_and_left_running() {
    let refused = refusal(
        &upgrades(),
        None,
        &[
            r#"installed("legacy-operator", "1.0.0")"#,
            r#"required("legacy-operator")"#,
        ],
    );
    assert_eq!(
        refused.summary,
        [
            "package legacy-operator is installed at 1.0.0, which no catalog offers any more, and \
          no bundle in any catalog upgrades from it; nothing can be resolved for it, and what \
          runs stays as it is"
        ]
    );
}

#[test]
fn no_summary_is_given_when_no_installed_package_is_involved() {
    let refused = refusal(
        &upgrades(),
        None,
        &[
            r#"installed("redis-operator", "1.0.0")"#,
            r#"required("memcached-operator", ">=0.5.0")"#,
        ],
    );
    assert!(refused.summary.is_empty(), "{refused}");
}

#[test]
fn a_bundle_that_needs_a_newer_kubernetes_is_passed_over() {
    let expressions = [
        r#"installed("memcached-operator", "0.3.0")"#,
        r#"required("memcached-operator", "", "candidate")"#,
    ];
    assert_eq!(
        selections_on(&upgrades(), None, &expressions),
        [
            "upgrades:cache-lib:1.2.0:stable",
            "upgrades:memcached-operator:0.4.0:candidate"
        ]
    );
    assert_eq!(
        selections_on(&upgrades(), CLUSTER, &expressions),
        [
            "upgrades:cache-lib:1.2.0:stable",
            "upgrades:memcached-operator:0.3.0:candidate"
        ]
    );
    // 1.25 (no patch) reads as 1.25.0, which a 1.36 cluster satisfies.
    assert_eq!(
        selections_on(&upgrades(), CLUSTER, &[r#"required("cache-lib")"#]),
        ["upgrades:cache-lib:1.2.0:stable"]
    );
}

#[test]
fn when_only_a_newer_kubernetes_would_do_the_explanation_says_so() {
    let refused = refusal(
        &upgrades(),
        CLUSTER,
        &[r#"required("memcached-operator", ">=0.4.0")"#],
    );
    assert_eq!(
        refused.explanation.last().map(String::as_str),
        Some(
            "bundle upgrades:memcached-operator:0.4.0:candidate requires Kubernetes >= 1.40.0 \
             (minKubeVersion) and this cluster runs 1.36.4"
        )
    );
    let refused = refusal(
        &upgrades(),
        CLUSTER,
        &[
            r#"installed("memcached-operator", "0.3.0")"#,
            r#"required("memcached-operator", ">=0.4.0")"#,
        ],
    );
    assert_eq!(
        refused.summary,
        [
            "package memcached-operator is installed at 0.3.0; the upgrade graph allows 0.3.0 \
          (stay) or 0.4.0 from it, and none of these can be chosen: 0.3.0 is not in range \
          >=0.4.0; 0.4.0 requires Kubernetes >= 1.40.0 (minKubeVersion) and this cluster runs \
          1.36.4"
        ]
    );
}

#[test]
fn a_package_whose_channel_graph_is_broken_is_refused_and_the_rest_of_its_catalog_resolves() {
    assert_eq!(
        selections(&graphs(), &[r#"required("sound")"#]),
        ["graphs:sound:1.1.0:stable"]
    );
    let refused = refusal(&graphs(), None, &[r#"required("looped")"#]);
    assert_eq!(
        refused.explanation.last().map(String::as_str),
        Some(
            "no operators found in package looped for required(\"looped\"); catalog graphs \
             cannot offer package looped until it is fixed: the upgrade graph of channel stable \
             is invalid (upgrade edges form a cycle: looped.v1.0.0 -> looped.v1.1.0 -> \
             looped.v1.0.0)"
        )
    );
    // Not even the bundles of its head-looking entries are picked by surprise.
    let refused = refusal(&graphs(), None, &[r#"required("forked", ">=2.0.0")"#]);
    assert!(
        refused.to_string().contains(
            "the upgrade graph of channel stable is invalid (channel has several heads: \
             forked.v1.1.0, forked.v2.0.0)"
        ),
        "{refused}"
    );
}

#[test]
fn a_broken_graph_is_named_for_an_installed_package_and_for_a_dependency() {
    let refused = refusal(&graphs(), None, &[r#"installed("forked", "1.1.0")"#]);
    assert_eq!(
        refused.summary,
        [
            "package forked is installed at 1.1.0, but catalog graphs cannot offer package forked \
          until it is fixed: the upgrade graph of channel stable is invalid (channel has several \
          heads: forked.v1.1.0, forked.v2.0.0); nothing can be resolved for it, and what runs \
          stays as it is"
        ]
    );
    let refused = refusal(&graphs(), None, &[r#"required("needs-forked")"#]);
    assert_eq!(
        refused.explanation.last().map(String::as_str),
        Some(
            "bundle graphs:needs-forked:1.0.0:stable requires an operator with package: forked \
             and with version in range: >=1.0.0; catalog graphs cannot offer package forked until \
             it is fixed: the upgrade graph of channel stable is invalid (channel has several \
             heads: forked.v1.1.0, forked.v2.0.0)"
        )
    );
}
