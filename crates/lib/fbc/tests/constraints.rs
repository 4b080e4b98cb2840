//! `olm.constraint` and legacy dependency properties as predicates over bundles.

// Test helpers outside #[test] functions unwrap too; a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use fbc::{Bundle, Constraint, ConstraintError, ConstraintExpr, ConstraintParseError, parse_files};
use serde_json::{Value, json};

/// Two bundles: etcd 0.9.4 providing EtcdCluster v1beta2, and etcd 1.0.0 providing v1.
fn bundles() -> Vec<Bundle> {
    let text = r#"
schema: olm.bundle
package: etcd
name: etcd.v0.9.4
image: example.com/etcd:0.9.4
properties:
- {type: olm.package, value: {packageName: etcd, version: 0.9.4}}
- {type: olm.gvk, value: {group: etcd.database.coreos.com, version: v1beta2, kind: EtcdCluster}}
---
schema: olm.bundle
package: etcd
name: etcd.v1.0.0
image: example.com/etcd:1.0.0
properties:
- {type: olm.package, value: {packageName: etcd, version: 1.0.0}}
- {type: olm.gvk, value: {group: etcd.database.coreos.com, version: v1, kind: EtcdCluster}}
"#;
    parse_files([("etcd.yaml", text)]).unwrap().bundles
}

/// Names of the bundles satisfying the constraint written as JSON.
fn satisfied_by(value: Value) -> Vec<String> {
    let constraint = Constraint::from_value(&value).unwrap();
    bundles()
        .iter()
        .filter(|b| constraint.matches(b).unwrap())
        .map(|b| b.name.clone())
        .collect()
}

fn gvk(version: &str) -> Value {
    json!({"gvk": {"group": "etcd.database.coreos.com", "version": version, "kind": "EtcdCluster"}})
}

fn package(range: &str) -> Value {
    json!({"package": {"packageName": "etcd", "versionRange": range}})
}

#[test]
fn a_gvk_constraint_matches_providers_of_that_api() {
    assert_eq!(satisfied_by(gvk("v1")), ["etcd.v1.0.0"]);
    assert_eq!(satisfied_by(gvk("v1beta2")), ["etcd.v0.9.4"]);
    assert!(satisfied_by(gvk("v2")).is_empty());
}

#[test]
fn a_package_constraint_matches_name_and_version_range() {
    assert_eq!(satisfied_by(package(">=1.0.0")), ["etcd.v1.0.0"]);
    assert_eq!(
        satisfied_by(package(">=0.9.0")),
        ["etcd.v0.9.4", "etcd.v1.0.0"]
    );
    let other = json!({"package": {"packageName": "prometheus", "versionRange": "*"}});
    assert!(satisfied_by(other).is_empty());
}

#[test]
fn all_requires_every_child_and_holds_when_empty() {
    let both = json!({"all": {"constraints": [package(">=0.9.0"), gvk("v1beta2")]}});
    assert_eq!(satisfied_by(both), ["etcd.v0.9.4"]);
    let empty = json!({"all": {"constraints": []}});
    assert_eq!(satisfied_by(empty).len(), 2);
}

#[test]
fn any_requires_one_child_and_fails_when_empty() {
    let either = json!({"any": {"constraints": [package(">=1.0.0"), gvk("v1beta2")]}});
    assert_eq!(satisfied_by(either), ["etcd.v0.9.4", "etcd.v1.0.0"]);
    assert!(satisfied_by(json!({"any": {"constraints": []}})).is_empty());
}

#[test]
fn not_holds_when_no_child_does() {
    let neither = json!({"not": {"constraints": [gvk("v1"), package("<0.9.0")]}});
    assert_eq!(satisfied_by(neither), ["etcd.v0.9.4"]);
    let nested = json!({"all": {"constraints": [
        package(">=0.9.0"),
        {"not": {"constraints": [gvk("v1beta2")]}}
    ]}});
    assert_eq!(satisfied_by(nested), ["etcd.v1.0.0"]);
}

#[test]
fn failure_messages_are_kept_at_every_level() {
    let value = json!({
        "failureMessage": "needs etcd",
        "any": {"constraints": [{"failureMessage": "inner", "gvk": {"version": "v1", "kind": "K"}}]}
    });
    let constraint = Constraint::from_value(&value).unwrap();
    assert_eq!(constraint.failure_message.as_deref(), Some("needs etcd"));
    let ConstraintExpr::Any(children) = &constraint.expr else {
        panic!("unexpected {:?}", constraint.expr);
    };
    assert_eq!(children[0].failure_message.as_deref(), Some("inner"));
    assert!(matches!(&children[0].expr, ConstraintExpr::Gvk(g) if g.group.is_empty()));
}

#[test]
fn cel_and_unknown_constraints_load_but_cannot_be_evaluated() {
    let bundle = &bundles()[0];
    let cel =
        Constraint::from_value(&json!({"cel": {"rule": "properties.exists(p, true)"}})).unwrap();
    assert!(matches!(
        cel.matches(bundle),
        Err(ConstraintError::CelUnsupported { rule }) if rule.contains("exists")
    ));
    let unknown =
        Constraint::from_value(&json!({"failureMessage": "x", "label": {"k": "v"}})).unwrap();
    assert!(matches!(unknown.expr, ConstraintExpr::Unknown(_)));
    assert!(matches!(
        unknown.matches(bundle),
        Err(ConstraintError::Unknown { value }) if value.contains("label")
    ));
    // An error deep inside a compound surfaces instead of being read as a miss.
    let nested =
        Constraint::from_value(&json!({"not": {"constraints": [{"cel": {"rule": "r"}}]}})).unwrap();
    assert!(nested.matches(bundle).is_err());
}

#[test]
fn malformed_constraints_are_rejected() {
    assert!(matches!(
        Constraint::from_value(&json!("gvk")),
        Err(ConstraintParseError::NotAnObject)
    ));
    assert!(matches!(
        Constraint::from_value(
            &json!({"failureMessage": 3, "gvk": {"version": "v1", "kind": "K"}})
        ),
        Err(ConstraintParseError::FailureMessage)
    ));
    assert!(matches!(
        Constraint::from_value(&json!({"gvk": {"group": "g"}})),
        Err(ConstraintParseError::Shape { key: "gvk", .. })
    ));
    assert!(matches!(
        Constraint::from_value(&package("not a range")),
        Err(ConstraintParseError::Range(_))
    ));
    assert!(matches!(
        Constraint::from_value(&json!({"all": {"constraints": [7]}})),
        Err(ConstraintParseError::NotAnObject)
    ));
    let err =
        Constraint::from_value(&json!({"all": {"constraints": []}, "any": {"constraints": []}}))
            .unwrap_err();
    assert!(
        matches!(&err, ConstraintParseError::Ambiguous { keys } if keys == &["all", "any"]),
        "{err:?}"
    );
}

#[test]
fn legacy_required_properties_become_constraints() {
    let text = r#"
schema: olm.bundle
package: backup
name: backup.v1
image: example.com/backup:1
properties:
- {type: olm.package, value: {packageName: backup, version: 1.0.0}}
- {type: olm.package.required, value: {packageName: etcd, versionRange: "<1.0.0"}}
- {type: olm.gvk.required, value: {group: etcd.database.coreos.com, version: v1, kind: EtcdCluster}}
"#;
    let backup = parse_files([("b.yaml", text)]).unwrap().bundles.remove(0);
    let requirements = backup.requirements();
    assert_eq!(requirements.len(), 2);
    let etcd = bundles();
    let matching = |i: usize| -> Vec<&str> {
        etcd.iter()
            .filter(|b| requirements[i].matches(b).unwrap())
            .map(|b| b.name.as_str())
            .collect()
    };
    assert_eq!(matching(0), ["etcd.v0.9.4"]);
    assert_eq!(matching(1), ["etcd.v1.0.0"]);
}
