use super::*;

use deppy_api::{ActiveResolutionSpec, ActiveResolutionStatus};
use platform_api::{PlatformOperatorSpec, PlatformOperatorStatus};
use rukpak_api::{BundleDeploymentSpec, BundleDeploymentStatus};

fn at(second: i64) -> Time {
    Time(k8s_openapi::jiff::Timestamp::from_second(second).unwrap())
}

fn cond(type_: &str, value: &str, reason: &str, message: &str, generation: i64) -> Condition {
    Condition {
        type_: type_.into(),
        status: value.into(),
        reason: reason.into(),
        message: message.into(),
        observed_generation: Some(generation),
        last_transition_time: at(1),
    }
}

fn resolution(generation: i64, conditions: Vec<Condition>) -> ActiveResolution {
    let mut resolution = ActiveResolution::new(
        "po",
        ActiveResolutionSpec {
            sources: vec![],
            constraints: vec![],
        },
    );
    resolution.metadata.generation = Some(generation);
    resolution.status = Some(ActiveResolutionStatus {
        conditions,
        ..Default::default()
    });
    resolution
}

fn resolved(generation: i64) -> Vec<Condition> {
    vec![
        cond(
            "Resolved",
            "True",
            "Succeeded",
            "resolved 2 bundles",
            generation,
        ),
        cond("Activated", "True", "Activated", "activated", generation),
    ]
}

fn deployment(name: &str, generation: i64, conditions: Vec<Condition>) -> BundleDeployment {
    let spec: BundleDeploymentSpec = serde_json::from_value(serde_json::json!({
        "provisionerClassName": "core-rukpak-io-plain",
        "template": {"spec": {"provisionerClassName": "core-rukpak-io-plain", "source": {"type": "upload", "upload": {}}}}
    }))
    .unwrap();
    let mut deployment = BundleDeployment::new(name, spec);
    deployment.metadata.generation = Some(generation);
    deployment.status = Some(BundleDeploymentStatus {
        conditions,
        ..Default::default()
    });
    deployment
}

fn good(generation: i64) -> Vec<Condition> {
    vec![
        cond(
            "HasValidBundle",
            "True",
            "UnpackSuccessful",
            "unpacked",
            generation,
        ),
        cond(
            "Installed",
            "True",
            "InstallationSucceeded",
            "installed",
            generation,
        ),
        cond("Healthy", "True", "Healthy", "healthy", generation),
    ]
}

fn check(observed: Observed<'_>, expected_reason: &str, expected_message: &str) {
    let got = installed(&observed);
    assert_eq!(got.reason, expected_reason, "{got:?}");
    assert!(
        got.message.contains(expected_message),
        "message {:?} does not contain {expected_message:?}",
        got.message
    );
    assert_eq!(
        got.installed,
        expected_reason == reasons::INSTALL_SUCCESSFUL
    );
}

#[test]
fn installed_follows_the_chain_from_resolution_to_children() {
    let ok_resolution = resolution(2, resolved(2));
    let ok_wrapper = deployment("po", 3, good(3));
    let ok_child = deployment("memcached-operator", 1, good(1));
    let children_ok = vec![("memcached-operator".to_owned(), Some(&ok_child))];

    // (resolution, wrapper, children, reason, message fragment)
    let unresolved = resolution(2, vec![]);
    let stale = resolution(3, resolved(2));
    let failed = resolution(
        2,
        vec![cond(
            "Resolved",
            "False",
            "ConstraintsNotSatisfiable",
            "no package \"nope\" in any catalog",
            2,
        )],
    );
    let activation_failed = resolution(
        2,
        vec![
            cond("Resolved", "True", "Succeeded", "", 2),
            cond(
                "Activated",
                "False",
                "SelectionNotFound",
                "selection x:y:1:z not found",
                2,
            ),
        ],
    );
    let apply_failed = resolution(
        2,
        vec![
            cond("Resolved", "True", "Succeeded", "", 2),
            cond(
                "Activated",
                "False",
                "ApplyFailed",
                "failed to apply BundleDeployment po",
                2,
            ),
        ],
    );
    let not_activated = resolution(2, vec![cond("Resolved", "True", "Succeeded", "", 2)]);
    let unpacking = deployment("po", 3, vec![]);
    let unpack_failed = deployment(
        "po",
        3,
        vec![cond(
            "HasValidBundle",
            "False",
            "UnpackFailed",
            "configmap missing",
            3,
        )],
    );
    let installing = deployment(
        "po",
        3,
        vec![cond("HasValidBundle", "True", "UnpackSuccessful", "", 3)],
    );
    let collision = deployment(
        "po",
        3,
        vec![
            cond("HasValidBundle", "True", "UnpackSuccessful", "", 3),
            cond(
                "Installed",
                "False",
                "InstallFailed",
                "BundleDeployment metrics-agent exists and is managed by po-a",
                3,
            ),
        ],
    );
    let stale_wrapper = deployment("po", 4, good(3));
    let unhealthy_wrapper = deployment(
        "po",
        3,
        vec![
            cond("HasValidBundle", "True", "UnpackSuccessful", "", 3),
            cond("Installed", "True", "ErrorGettingClient", "", 3),
            cond(
                "Healthy",
                "False",
                "Unhealthy",
                "child memcached-operator is not healthy",
                3,
            ),
        ],
    );
    let unhealthy_child = deployment(
        "memcached-operator",
        1,
        vec![
            cond("HasValidBundle", "True", "UnpackSuccessful", "", 1),
            cond("Installed", "True", "InstallationSucceeded", "", 1),
            cond(
                "Healthy",
                "False",
                "Unhealthy",
                "Deployment memcached-system/m is not Available",
                1,
            ),
        ],
    );
    let failing_child = deployment(
        "memcached-operator",
        1,
        vec![cond(
            "HasValidBundle",
            "False",
            "BundleLoadFailed",
            "AllNamespace install mode must be enabled",
            1,
        )],
    );
    let children_unhealthy = vec![("memcached-operator".to_owned(), Some(&unhealthy_child))];
    let children_failing = vec![("memcached-operator".to_owned(), Some(&failing_child))];
    let children_missing = vec![("memcached-operator".to_owned(), None)];
    let none: Vec<(String, Option<&BundleDeployment>)> = vec![];

    type Case<'a> = (
        &'a str,
        Option<&'a ActiveResolution>,
        Option<&'a BundleDeployment>,
        &'a [(String, Option<&'a BundleDeployment>)],
        &'a str,
        &'a str,
    );
    let cases: Vec<Case<'_>> = vec![
        (
            "no resolution",
            None,
            None,
            &none,
            "UnpackPending",
            "ActiveResolution po to be created",
        ),
        (
            "not resolved yet",
            Some(&unresolved),
            None,
            &none,
            "UnpackPending",
            "to be resolved",
        ),
        (
            "resolved for an older spec",
            Some(&stale),
            Some(&ok_wrapper),
            &children_ok,
            "UnpackPending",
            "to be resolved",
        ),
        (
            "resolution failed",
            Some(&failed),
            Some(&ok_wrapper),
            &children_ok,
            "SourceFailed",
            "no package \"nope\" in any catalog",
        ),
        (
            "activation failed",
            Some(&activation_failed),
            None,
            &none,
            "SourceFailed",
            "selection x:y:1:z not found",
        ),
        (
            "wrapper write failed",
            Some(&apply_failed),
            None,
            &none,
            "InstallFailed",
            "failed to apply BundleDeployment po",
        ),
        (
            "not activated, no wrapper",
            Some(&not_activated),
            None,
            &none,
            "UnpackPending",
            "to be activated",
        ),
        (
            "not activated, old wrapper",
            Some(&not_activated),
            Some(&ok_wrapper),
            &children_ok,
            "UnpackPending",
            "to be activated",
        ),
        (
            "activated, no wrapper",
            Some(&ok_resolution),
            None,
            &none,
            "UnpackPending",
            "BundleDeployment po to be created",
        ),
        (
            "wrapper unpacking",
            Some(&ok_resolution),
            Some(&unpacking),
            &none,
            "UnpackPending",
            "Waiting for the bundle to be unpacked",
        ),
        (
            "wrapper unpack failed",
            Some(&ok_resolution),
            Some(&unpack_failed),
            &none,
            "UnpackFailed",
            "configmap missing",
        ),
        (
            "wrapper installing",
            Some(&ok_resolution),
            Some(&installing),
            &none,
            "InstallPending",
            "Waiting for the bundle to be installed",
        ),
        (
            "wrapper collision",
            Some(&ok_resolution),
            Some(&collision),
            &none,
            "InstallFailed",
            "managed by po-a",
        ),
        (
            "wrapper pivoting",
            Some(&ok_resolution),
            Some(&stale_wrapper),
            &children_ok,
            "UnpackPending",
            "unpacked",
        ),
        (
            "child missing",
            Some(&ok_resolution),
            Some(&ok_wrapper),
            &children_missing,
            "InstallPending",
            "BundleDeployment memcached-operator: Waiting",
        ),
        (
            "child failing",
            Some(&ok_resolution),
            Some(&ok_wrapper),
            &children_failing,
            "BundleLoadFailed",
            "BundleDeployment memcached-operator: AllNamespace install mode",
        ),
        (
            "child unhealthy",
            Some(&ok_resolution),
            Some(&unhealthy_wrapper),
            &children_unhealthy,
            "Unhealthy",
            "BundleDeployment memcached-operator: Deployment memcached-system/m is not Available",
        ),
        (
            "wrapper unhealthy, children fine",
            Some(&ok_resolution),
            Some(&unhealthy_wrapper),
            &children_ok,
            "Unhealthy",
            "child memcached-operator is not healthy",
        ),
        (
            "all good",
            Some(&ok_resolution),
            Some(&ok_wrapper),
            &children_ok,
            "InstallSuccessful",
            "Successfully applied the po BundleDeployment resource",
        ),
    ];
    for (what, resolution, wrapper, children, reason, message) in cases {
        let got = installed(&Observed {
            name: "po",
            resolution,
            wrapper,
            children,
            installed: &[],
        });
        assert_eq!(got.reason, reason, "{what}: {got:?}");
        assert!(
            got.message.contains(message),
            "{what}: {:?} lacks {message:?}",
            got.message
        );
        assert_eq!(got.installed, reason == "InstallSuccessful", "{what}");
    }
    // Upstream: a True condition counts whatever its reason.
    check(
        Observed {
            name: "po",
            resolution: Some(&ok_resolution),
            wrapper: Some(&deployment(
                "po",
                3,
                vec![
                    cond("HasValidBundle", "True", "Whatever", "", 3),
                    cond("Installed", "True", "ErrorGettingClient", "", 3),
                    cond("Healthy", "True", "Healthy", "", 3),
                ],
            )),
            children: &children_ok,
            installed: &[],
        },
        "InstallSuccessful",
        "Successfully applied",
    );
}

fn bundle(package: &str, version: &str) -> InstalledBundle {
    InstalledBundle {
        package: package.into(),
        version: version.into(),
    }
}

fn unsatisfiable(reason: &str, generation: i64) -> ActiveResolution {
    resolution(
        generation,
        vec![
            cond(
                "Resolved",
                "False",
                reason,
                "package memcached-operator is installed at 0.2.0; nothing reachable is in range <0.2.0",
                generation,
            ),
            cond(
                "Activated",
                "False",
                "NotResolved",
                "not activating",
                generation,
            ),
        ],
    )
}

#[test]
fn an_unresolvable_spec_keeps_what_runs_installed_and_says_why_it_does_not_move() {
    let blocked = unsatisfiable("ConstraintsNotSatisfiable", 3);
    let wrapper = deployment("po", 2, good(2));
    let child = deployment("package-memcached-operator", 1, good(1));
    let children = vec![("package-memcached-operator".to_owned(), Some(&child))];
    let running = [
        bundle("memcached-operator", "0.2.0"),
        bundle("metrics-agent", "1.1.0"),
    ];
    let observed = Observed {
        name: "po",
        resolution: Some(&blocked),
        wrapper: Some(&wrapper),
        children: &children,
        installed: &running,
    };
    let got = installed(&observed);
    assert_eq!(
        (got.installed, got.reason.as_str()),
        (true, "InstallSuccessful"),
        "{got:?}"
    );
    let blocked_status = progressing(&observed, &got);
    assert_eq!(
        (blocked_status.status(), blocked_status.reason),
        ("False", "UpgradeBlocked")
    );
    assert_eq!(
        blocked_status.message,
        "memcached-operator 0.2.0 and metrics-agent 1.1.0 keep running unchanged because the spec cannot be resolved: package memcached-operator is installed at 0.2.0; nothing reachable is in range <0.2.0"
    );

    // What runs is still watched: an unhealthy child shows while the upgrade is blocked.
    let sick = deployment(
        "package-memcached-operator",
        1,
        vec![
            cond("HasValidBundle", "True", "UnpackSuccessful", "", 1),
            cond("Installed", "True", "InstallationSucceeded", "", 1),
            cond(
                "Healthy",
                "False",
                "Unhealthy",
                "Deployment m is not Available",
                1,
            ),
        ],
    );
    let sick_children = vec![("package-memcached-operator".to_owned(), Some(&sick))];
    let observed = Observed {
        children: &sick_children,
        ..observed
    };
    let got = installed(&observed);
    assert_eq!((got.installed, got.reason.as_str()), (false, "Unhealthy"));
    assert_eq!(progressing(&observed, &got).reason, "UpgradeBlocked");

    // A catalog that is gone is not an upgrade graph: ResolutionFailed.
    let unavailable = unsatisfiable("SourceUnavailable", 3);
    let observed = Observed {
        resolution: Some(&unavailable),
        children: &children,
        ..observed
    };
    let got = installed(&observed);
    assert!(got.installed);
    let failed = progressing(&observed, &got);
    assert_eq!(
        (failed.status(), failed.reason),
        ("False", "ResolutionFailed")
    );
    assert!(
        failed
            .message
            .starts_with("memcached-operator 0.2.0 and metrics-agent 1.1.0 keep running unchanged")
    );
}

#[test]
fn an_unresolvable_spec_with_nothing_installed_is_a_source_failure() {
    let blocked = unsatisfiable("ConstraintsNotSatisfiable", 1);
    let observed = Observed {
        name: "po",
        resolution: Some(&blocked),
        wrapper: None,
        children: &[],
        installed: &[],
    };
    let got = installed(&observed);
    assert_eq!(
        (got.installed, got.reason.as_str()),
        (false, "SourceFailed")
    );
    let failed = progressing(&observed, &got);
    assert_eq!((failed.status(), failed.reason), ("False", "Failed"));
    assert_eq!(failed.message, got.message);
}

#[test]
fn progressing_follows_installed_otherwise() {
    let ok = resolution(2, resolved(2));
    let wrapper = deployment("po", 3, good(3));
    let child = deployment("package-memcached-operator", 1, good(1));
    let children = vec![("package-memcached-operator".to_owned(), Some(&child))];
    let running = [bundle("memcached-operator", "0.1.0")];
    let observed = Observed {
        name: "po",
        resolution: Some(&ok),
        wrapper: Some(&wrapper),
        children: &children,
        installed: &running,
    };
    let got = installed(&observed);
    let done = progressing(&observed, &got);
    assert_eq!(
        (done.status(), done.reason, done.message.as_str()),
        (
            "False",
            "Succeeded",
            "Installed memcached-operator 0.1.0 as the spec asks"
        )
    );
    let pending = resolution(2, vec![]);
    let observed = Observed {
        resolution: Some(&pending),
        ..observed
    };
    let got = installed(&observed);
    let moving = progressing(&observed, &got);
    assert_eq!((moving.status(), moving.reason), ("True", "Installing"));
    assert_eq!(moving.message, got.message);
}

fn summary(name: &str, installed: Option<(bool, &str)>) -> Summary {
    Summary {
        name: name.into(),
        installed: installed.map(|(ok, reason)| (ok, reason.to_owned())),
        max_openshift_versions: vec![],
        upgrade_blocked: false,
    }
}

#[test]
fn a_blocked_upgrade_shows_on_progressing_not_on_availability() {
    let blocked = Summary {
        upgrade_blocked: true,
        ..summary("memcached", Some((true, "InstallSuccessful")))
    };
    let conditions = cluster_operator_conditions(
        &[
            blocked.clone(),
            summary("other", Some((true, "InstallSuccessful"))),
        ],
        None,
    );
    assert_eq!(find(&conditions, "Available").status, "True");
    assert_eq!(find(&conditions, "Degraded").status, "False");
    let progressing = find(&conditions, "Progressing");
    assert_eq!(
        (progressing.status, progressing.reason.as_str()),
        ("False", "PlatformOperatorUpgradeBlocked")
    );
    assert!(
        progressing.message.ends_with(": memcached"),
        "{}",
        progressing.message
    );
    // An install in flight is what Progressing reports first.
    let conditions = cluster_operator_conditions(
        &[blocked, summary("new", Some((false, "InstallPending")))],
        None,
    );
    let progressing = find(&conditions, "Progressing");
    assert_eq!(
        (progressing.status, progressing.reason.as_str()),
        ("True", "PlatformOperatorsInstalling")
    );
}

fn find<'a>(conditions: &'a [DesiredCondition], type_: &str) -> &'a DesiredCondition {
    conditions.iter().find(|c| c.type_ == type_).unwrap()
}

#[test]
fn no_platform_operators_is_available_and_not_progressing() {
    let conditions = cluster_operator_conditions(&[], None);
    let available = find(&conditions, "Available");
    assert_eq!(
        (
            available.status,
            available.reason.as_str(),
            available.message.as_str()
        ),
        (
            "True",
            "AsExpected",
            "No platform operators are present in the cluster"
        )
    );
    let progressing = find(&conditions, "Progressing");
    assert_eq!(
        (progressing.status, progressing.reason.as_str()),
        ("False", "AsExpected")
    );
    assert_eq!(find(&conditions, "Degraded").status, "False");
    assert_eq!(find(&conditions, "Upgradeable").status, "True");
    let types: Vec<&str> = conditions.iter().map(|c| c.type_).collect();
    assert_eq!(
        types,
        ["Available", "Progressing", "Degraded", "Upgradeable"]
    );
}

#[test]
fn cluster_operator_availability_table() {
    // (operators, Available, reason, message, Progressing)
    let cases = vec![
        (
            vec![summary("a", Some((true, "InstallSuccessful")))],
            "True",
            "AsExpected",
            "All platform operators are in a successful state".to_owned(),
            "False",
        ),
        (
            vec![summary("a", Some((true, "InstallSuccessful"))), summary("b", Some((false, "SourceFailed")))],
            "False",
            "PlatformOperatorError",
            r#"encountered the failing b platform operator with reason "SourceFailed""#.to_owned(),
            "False",
        ),
        (
            vec![summary("a", None)],
            "False",
            "PlatformOperatorError",
            r#"encountered the failing a platform operator with reason "InstallPending""#.to_owned(),
            "True",
        ),
        (
            vec![summary("a", Some((false, "UnpackPending"))), summary("b", Some((false, "Unhealthy")))],
            "False",
            "PlatformOperatorError",
            r#"[encountered the failing a platform operator with reason "UnpackPending", encountered the failing b platform operator with reason "Unhealthy"]"#.to_owned(),
            "True",
        ),
    ];
    for (operators, available, reason, message, progressing) in cases {
        let conditions = cluster_operator_conditions(&operators, None);
        let got = find(&conditions, "Available");
        assert_eq!(got.status, available, "{operators:?}");
        assert_eq!(got.reason, reason, "{operators:?}");
        assert_eq!(got.message, message, "{operators:?}");
        assert_eq!(
            find(&conditions, "Progressing").status,
            progressing,
            "{operators:?}"
        );
        assert_eq!(find(&conditions, "Degraded").status, "False");
    }
}

#[test]
fn upgradeable_compares_max_openshift_version_with_the_next_minor() {
    let with_max = |max: &str| Summary {
        name: "memcached".into(),
        installed: Some((true, "InstallSuccessful".into())),
        max_openshift_versions: vec![("memcached-operator".into(), max.into())],
        upgrade_blocked: false,
    };
    // (max, cluster version, Upgradeable, reason)
    let cases = [
        (
            "4.16",
            Some("4.16.3"),
            "False",
            "IncompatibleOperatorsInstalled",
        ),
        (
            "\"4.16\"",
            Some("4.16.0"),
            "False",
            "IncompatibleOperatorsInstalled",
        ),
        (
            "4.15",
            Some("4.16.0"),
            "False",
            "IncompatibleOperatorsInstalled",
        ),
        (
            "4.16.9",
            Some("4.16.0-0.nightly-2024-01-01"),
            "False",
            "IncompatibleOperatorsInstalled",
        ),
        ("4.17", Some("4.16.3"), "True", "AsExpected"),
        ("5.0", Some("4.16.3"), "True", "AsExpected"),
        ("4.16", Some("4.15.2"), "True", "AsExpected"),
        ("4.16", None, "True", "AsExpected"),
        (
            "four",
            Some("4.16.3"),
            "False",
            "FailureGettingExtensionMetadata",
        ),
    ];
    for (max, cluster, status_, reason) in cases {
        let conditions = cluster_operator_conditions(&[with_max(max)], cluster);
        let got = find(&conditions, "Upgradeable");
        assert_eq!(
            (got.status, got.reason.as_str()),
            (status_, reason),
            "{max} on {cluster:?}"
        );
        if status_ == "False" {
            assert!(
                got.message.contains("memcached"),
                "names the PlatformOperator: {}",
                got.message
            );
        }
    }
    let conditions = cluster_operator_conditions(&[with_max("4.16")], Some("4.16.3"));
    assert_eq!(
        find(&conditions, "Upgradeable").message,
        "Found PlatformOperators that require upgrades prior to upgrading cluster to version 4.17: memcached (memcached-operator has olm.maxOpenShiftVersion 4.16)"
    );
}

#[test]
fn transition_times_move_only_when_a_status_flips() {
    let first = merge_conditions(&[], &cluster_operator_conditions(&[], None), &at(100));
    assert!(first.iter().all(|c| c.last_transition_time == at(100)));

    // Same statuses, different message: times kept.
    let operators = [summary("a", Some((true, "InstallSuccessful")))];
    let second = merge_conditions(
        &first,
        &cluster_operator_conditions(&operators, None),
        &at(200),
    );
    assert!(
        second.iter().all(|c| c.last_transition_time == at(100)),
        "{second:?}"
    );
    assert_eq!(
        second[0].message.as_deref(),
        Some("All platform operators are in a successful state")
    );

    // Available flips: only its time moves.
    let failing = [summary("a", Some((false, "SourceFailed")))];
    let third = merge_conditions(
        &second,
        &cluster_operator_conditions(&failing, None),
        &at(300),
    );
    let available = third.iter().find(|c| c.type_ == "Available").unwrap();
    assert_eq!(available.last_transition_time, at(300));
    let degraded = third.iter().find(|c| c.type_ == "Degraded").unwrap();
    assert_eq!(degraded.last_transition_time, at(100));

    // Recomputing the same thing changes nothing at all.
    let again = merge_conditions(
        &third,
        &cluster_operator_conditions(&failing, None),
        &at(400),
    );
    assert_eq!(again, third);
}

#[test]
fn foreign_conditions_are_kept() {
    let foreign = ClusterOperatorStatusCondition {
        type_: "EvaluationConditionsDetected".into(),
        status: "False".into(),
        last_transition_time: at(5),
        reason: Some("AsExpected".into()),
        message: None,
    };
    let merged = merge_conditions(
        std::slice::from_ref(&foreign),
        &cluster_operator_conditions(&[], None),
        &at(10),
    );
    assert_eq!(merged.len(), 5);
    assert_eq!(merged[4], foreign);
}

#[test]
fn the_status_carries_versions_and_related_objects() {
    let related = related_objects(
        "platform-operators-system",
        ["b".to_owned(), "a".to_owned(), "b".to_owned()],
    );
    let names: Vec<(&str, &str)> = related
        .iter()
        .map(|r| (r.resource.as_str(), r.name.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("namespaces", "platform-operators-system"),
            ("platformoperators", ""),
            ("bundledeployments", "a"),
            ("bundledeployments", "b"),
        ]
    );
    let status = cluster_operator_status(
        None,
        &cluster_operator_conditions(&[], None),
        "4.16.0",
        related,
        &at(1),
    );
    assert_eq!(status.versions.len(), 1);
    assert_eq!(status.versions[0].name, "operator");
    assert_eq!(status.versions[0].version, "4.16.0");
}

#[test]
fn summaries_read_the_installed_condition() {
    let mut operator = PlatformOperator::new(
        "a",
        PlatformOperatorSpec {
            package: platform_api::Package {
                name: "p".into(),
                ..Default::default()
            },
            config: None,
            upgrade_approval: None,
            approved_revision: None,
        },
    );
    assert_eq!(Summary::of(&operator, vec![]).installed, None);
    operator.status = Some(PlatformOperatorStatus {
        conditions: vec![cond("Installed", "False", "SourceFailed", "m", 1)],
        ..Default::default()
    });
    assert_eq!(
        Summary::of(&operator, vec![]).installed,
        Some((false, "SourceFailed".to_owned()))
    );
}

#[test]
fn versions_parse_tolerantly() {
    let v = |major, minor| Some(MinorVersion { major, minor });
    assert_eq!(MinorVersion::parse("4.16"), v(4, 16));
    assert_eq!(MinorVersion::parse(" \"v4.16.2\" "), v(4, 16));
    assert_eq!(MinorVersion::parse("4.16.0-rc.1"), v(4, 16));
    assert_eq!(MinorVersion::parse("4"), None);
    assert_eq!(MinorVersion::parse(""), None);
    assert_eq!(MinorVersion::parse("4.x"), None);
    assert_eq!(
        MinorVersion::parse("4.16").unwrap().next().to_string(),
        "4.17"
    );
}

#[test]
fn packages_of_a_resolution_come_from_entities_else_selections() {
    let mut r = resolution(1, vec![]);
    r.status = Some(ActiveResolutionStatus {
        selections: vec![
            "cat:memcached-operator:0.1.0:stable".into(),
            "cat:metrics-agent:1.1.0:stable".into(),
        ],
        ..Default::default()
    });
    assert_eq!(
        resolved_packages(&r).into_iter().collect::<Vec<_>>(),
        ["memcached-operator", "metrics-agent"]
    );
    assert_eq!(selection_package("bad"), None);
}

#[test]
fn deprecation_conditions_follow_the_notices_of_the_operators_own_selection() {
    fn summary(conditions: &[Desired; 4]) -> Vec<(&str, &str, &str)> {
        conditions
            .iter()
            .map(|c| (c.type_, c.status, c.reason.as_str()))
            .collect()
    }
    // No resolution, or no notice: all four False.
    for conditions in [
        deprecation_conditions(None, "memcached-operator"),
        deprecation_conditions(Some(&resolution(1, resolved(1))), "memcached-operator"),
    ] {
        assert_eq!(
            summary(&conditions),
            [
                ("Deprecated", "False", "NotDeprecated"),
                ("PackageDeprecated", "False", "NotDeprecated"),
                ("ChannelDeprecated", "False", "NotDeprecated"),
                ("BundleDeprecated", "False", "NotDeprecated"),
            ]
        );
    }
    let mut noticed = resolution(1, resolved(1));
    noticed.status.as_mut().unwrap().deprecations = vec![
        deppy_api::SelectionDeprecation {
            package: "metrics-agent".into(),
            channel: "stable".into(),
            bundle: "metrics-agent.v1.1.0".into(),
            package_message: Some("a dependency's notice is not ours".into()),
            ..Default::default()
        },
        deppy_api::SelectionDeprecation {
            package: "memcached-operator".into(),
            channel: "alpha".into(),
            bundle: "memcached-operator.v0.2.0".into(),
            package_message: None,
            channel_message: Some("alpha is retired: use stable".into()),
            bundle_message: Some("0.2.0 loses data: upgrade to 0.2.1".into()),
        },
    ];
    let conditions = deprecation_conditions(Some(&noticed), "memcached-operator");
    assert_eq!(
        summary(&conditions),
        [
            ("Deprecated", "True", "Deprecated"),
            ("PackageDeprecated", "False", "NotDeprecated"),
            ("ChannelDeprecated", "True", "Deprecated"),
            ("BundleDeprecated", "True", "Deprecated"),
        ]
    );
    assert_eq!(
        conditions[0].message,
        "alpha is retired: use stable; 0.2.0 loses data: upgrade to 0.2.1"
    );
    assert_eq!(
        conditions[1].message,
        "The catalog does not deprecate package memcached-operator"
    );

    // Without notices, the messages name what was selected.
    let mut plain = resolution(1, resolved(1));
    plain.status.as_mut().unwrap().selections =
        vec!["examples:memcached-operator:0.2.0:stable".into()];
    let conditions = deprecation_conditions(Some(&plain), "memcached-operator");
    assert_eq!(
        conditions[2].message,
        "The catalog does not deprecate channel stable"
    );
    assert_eq!(
        conditions[3].message,
        "The catalog does not deprecate memcached-operator 0.2.0"
    );
}
