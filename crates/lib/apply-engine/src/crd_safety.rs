//! CRD upgrade safety: the changes to an existing CustomResourceDefinition that can break the
//! custom resources already stored on the cluster, or the clients that write them.
//!
//! [`check`] compares the on-cluster CRD with the desired one and returns every violation, not
//! just the first, in a deterministic order; the engine refuses the update when the list is not
//! empty. Whether a person may override the verdict is the caller's business.
//!
//! The rules follow operator-controller's CRD upgrade-safety preflight (built on kapp's
//! validator and later `sigs.k8s.io/crdify`):
//!
//! - [`Rule::ScopeChange`]: `spec.scope` must not change;
//! - [`Rule::StoredVersionRemoval`]: every version in the existing CRD's
//!   `status.storedVersions` must stay in `spec.versions`, since objects may still be stored at
//!   it. A version that was only served (never stored) may be removed, as upstream allows;
//! - for each version present in both CRDs, walking `openAPIV3Schema` through `properties`,
//!   `items` and `additionalProperties`:
//!   - [`Rule::FieldRemoval`]: no field may disappear;
//!   - [`Rule::TypeChange`]: a field's `type` must not change;
//!   - [`Rule::NewRequiredField`]: no field may become required;
//!   - [`Rule::EnumNarrowing`]: no enum value may be removed, and no enum may be added to a
//!     field that had none. Adding values to an enum is fine, and so is dropping the enum
//!     altogether (upstream reports that as removing every value, but it allows any value,
//!     which is wider; readers face the same new values as when values are added);
//!   - [`Rule::LimitNarrowing`]: no `maximum`/`maxLength`/`maxItems`/`maxProperties` may
//!     decrease or appear, no `minimum`/`minLength`/`minItems`/`minProperties` may increase or
//!     appear, and `exclusiveMaximum`/`exclusiveMinimum` may not turn on;
//!   - [`Rule::DefaultChange`]: a default may not be added, changed or removed (stored objects
//!     were defaulted with the old value; readers would see them change meaning).
//!
//! A version that exists only in the desired CRD is new and has nothing to break. Descriptions
//! and other documentation fields are ignored. `allOf`/`anyOf`/`oneOf`/`not` are not walked:
//! structural schemas cannot declare fields there, only restate them.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionVersion, JSONSchemaProps,
    JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};

/// How many violations [`summary`] lists before it summarises the rest.
pub const MAX_LISTED: usize = 10;

/// The rule a change breaks. The declaration order is the order violations of the same
/// version and field are reported in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// The CRD's scope (Namespaced or Cluster) changed.
    ScopeChange,
    /// A version listed in `status.storedVersions` is missing from the desired versions.
    StoredVersionRemoval,
    /// A field of an existing version's schema is missing from the desired schema.
    FieldRemoval,
    /// A field's `type` changed.
    TypeChange,
    /// A field became required.
    NewRequiredField,
    /// Enum values were removed, or an enum was added where any value was allowed.
    EnumNarrowing,
    /// A numeric, length, item or property limit became stricter or was added.
    LimitNarrowing,
    /// A default was added, changed or removed.
    DefaultChange,
}

impl Rule {
    /// Why the change is refused, in words a person reads at the end of the message.
    pub fn explanation(self) -> &'static str {
        match self {
            Rule::ScopeChange => "changing the scope is not allowed",
            Rule::StoredVersionRemoval => "removing a stored version is not allowed",
            Rule::FieldRemoval => "removing a field is not allowed",
            Rule::TypeChange => "changing a field's type is not allowed",
            Rule::NewRequiredField => "adding a required field is not allowed",
            Rule::EnumNarrowing => "narrowing an enum is not allowed",
            Rule::LimitNarrowing => "narrowing limits is not allowed",
            Rule::DefaultChange => "changing a default is not allowed",
        }
    }
}

/// One unsafe change found by [`check`].
///
/// Violations order by CRD, version (CRD-wide ones first), field path (version-wide ones
/// first), rule and detail, which is the order [`check`] returns them in.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Violation {
    /// Name of the CRD (`widgets.example.com`).
    pub crd: String,
    /// The version the change is in; `None` for CRD-wide changes (scope).
    pub version: Option<String>,
    /// The field, as `.spec.size`, `.spec.ports[*].port` (array items) or `.spec.labels.*`
    /// (map values; property names other than `[A-Za-z0-9_-]+` are quoted as `["a.b"]`);
    /// `.` is the schema root. `None` for changes to the CRD or a whole version.
    pub path: Option<String>,
    /// The rule the change breaks.
    pub rule: Rule,
    /// What changed, such as `maximum decreased from 10 to 5`.
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CRD {}", self.crd)?;
        if let Some(version) = &self.version {
            write!(f, " version {version}")?;
        }
        if let Some(path) = &self.path {
            write!(f, ": field {path}")?;
        }
        write!(f, ": {} ({})", self.detail, self.rule.explanation())
    }
}

/// Every unsafe change from `existing` (on the cluster) to `desired`, sorted (see
/// [`Violation`]); empty when the update is safe.
pub fn check(
    existing: &CustomResourceDefinition,
    desired: &CustomResourceDefinition,
) -> Vec<Violation> {
    let crd = desired
        .metadata
        .name
        .clone()
        .or_else(|| existing.metadata.name.clone())
        .unwrap_or_default();
    let mut found = Findings {
        crd,
        violations: Vec::new(),
    };

    if existing.spec.scope != desired.spec.scope {
        found.push(
            None,
            None,
            Rule::ScopeChange,
            format!(
                "scope changed from {} to {}",
                existing.spec.scope, desired.spec.scope
            ),
        );
    }

    let desired_versions: BTreeMap<&str, &CustomResourceDefinitionVersion> = desired
        .spec
        .versions
        .iter()
        .map(|v| (v.name.as_str(), v))
        .collect();

    for stored in stored_versions(existing) {
        if !desired_versions.contains_key(stored) {
            found.push(
                Some(stored),
                None,
                Rule::StoredVersionRemoval,
                "stored version removed from spec.versions".to_string(),
            );
        }
    }

    for old_version in &existing.spec.versions {
        let Some(new_version) = desired_versions.get(old_version.name.as_str()) else {
            // Removing a version that was never stored is allowed; stored ones are checked
            // above.
            continue;
        };
        let Some(old_schema) = schema_of(old_version) else {
            // No schema before: nothing was declared, so nothing can be broken.
            continue;
        };
        // A desired version without a schema drops every declared field.
        let empty = JSONSchemaProps::default();
        let new_schema = schema_of(new_version).unwrap_or(&empty);
        let mut walk = Walk {
            version: &old_version.name,
            findings: &mut found,
        };
        walk.compare(old_schema, new_schema, "");
    }

    let mut violations = found.violations;
    violations.sort();
    violations.dedup();
    violations
}

/// A readable list of violations for a condition message: each on its own `; `-separated
/// entry, at most [`MAX_LISTED`], then `and N more`.
pub fn summary(violations: &[Violation]) -> String {
    let mut entries: Vec<String> = violations
        .iter()
        .take(MAX_LISTED)
        .map(ToString::to_string)
        .collect();
    if violations.len() > MAX_LISTED {
        entries.push(format!("and {} more", violations.len() - MAX_LISTED));
    }
    entries.join("; ")
}

/// The versions objects may be stored at: `status.storedVersions`, plus the version the
/// existing spec stores new objects at, in case the status was not read or not written yet
/// (the API server always lists it there, so on a live object this adds nothing).
fn stored_versions(existing: &CustomResourceDefinition) -> BTreeSet<&str> {
    let mut stored: BTreeSet<&str> = existing
        .status
        .as_ref()
        .and_then(|status| status.stored_versions.as_ref())
        .into_iter()
        .flatten()
        .map(String::as_str)
        .collect();
    stored.extend(
        existing
            .spec
            .versions
            .iter()
            .filter(|v| v.storage)
            .map(|v| v.name.as_str()),
    );
    stored
}

fn schema_of(version: &CustomResourceDefinitionVersion) -> Option<&JSONSchemaProps> {
    version.schema.as_ref()?.open_api_v3_schema.as_ref()
}

struct Findings {
    crd: String,
    violations: Vec<Violation>,
}

impl Findings {
    fn push(&mut self, version: Option<&str>, path: Option<&str>, rule: Rule, detail: String) {
        self.violations.push(Violation {
            crd: self.crd.clone(),
            version: version.map(str::to_string),
            path: path.map(display_path),
            rule,
            detail,
        });
    }
}

/// The root schema's path is empty while walking; people read it as `.`.
fn display_path(path: &str) -> String {
    if path.is_empty() {
        ".".to_string()
    } else {
        path.to_string()
    }
}

/// `path` plus one property, quoting names that would be ambiguous in a dotted path.
fn child_path(path: &str, name: &str) -> String {
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        format!("{path}.{name}")
    } else {
        format!("{path}[{}]", serde_json::Value::String(name.to_string()))
    }
}

/// One version's schema comparison.
struct Walk<'a> {
    version: &'a str,
    findings: &'a mut Findings,
}

impl Walk<'_> {
    fn push(&mut self, path: &str, rule: Rule, detail: String) {
        self.findings
            .push(Some(self.version), Some(path), rule, detail);
    }

    fn compare(&mut self, old: &JSONSchemaProps, new: &JSONSchemaProps, path: &str) {
        self.compare_type(old, new, path);
        self.compare_required(old, new, path);
        self.compare_enum(old, new, path);
        self.compare_limits(old, new, path);
        self.compare_default(old, new, path);
        self.compare_properties(old, new, path);
        self.compare_items(old, new, path);
        self.compare_additional_properties(old, new, path);
    }

    fn compare_type(&mut self, old: &JSONSchemaProps, new: &JSONSchemaProps, path: &str) {
        if old.type_ != new.type_ {
            let describe = |t: &Option<String>| match t {
                Some(t) => format!("{t:?}"),
                None => "(none)".to_string(),
            };
            self.push(
                path,
                Rule::TypeChange,
                format!(
                    "type changed from {} to {}",
                    describe(&old.type_),
                    describe(&new.type_)
                ),
            );
        }
    }

    fn compare_required(&mut self, old: &JSONSchemaProps, new: &JSONSchemaProps, path: &str) {
        let before: BTreeSet<&String> = old.required.iter().flatten().collect();
        let after: BTreeSet<&String> = new.required.iter().flatten().collect();
        for name in after.difference(&before) {
            self.push(
                &child_path(path, name),
                Rule::NewRequiredField,
                "field became required".to_string(),
            );
        }
    }

    fn compare_enum(&mut self, old: &JSONSchemaProps, new: &JSONSchemaProps, path: &str) {
        // Values compare as canonical JSON text, so `1` and `1.0` differ as they do upstream
        // but formatting never matters.
        let values = |schema: &JSONSchemaProps| -> BTreeSet<String> {
            schema
                .enum_
                .iter()
                .flatten()
                .map(|value| value.0.to_string())
                .collect()
        };
        let before = values(old);
        let after = values(new);
        if before.is_empty() {
            if !after.is_empty() {
                self.push(
                    path,
                    Rule::EnumNarrowing,
                    format!("enum {} added where any value was allowed", list(&after)),
                );
            }
            return;
        }
        let removed: BTreeSet<String> = before.difference(&after).cloned().collect();
        if !removed.is_empty() && !after.is_empty() {
            self.push(
                path,
                Rule::EnumNarrowing,
                format!("enum values {} removed", list(&removed)),
            );
        }
        // An enum dropped altogether allows every value: wider, not narrower.
    }

    fn compare_limits(&mut self, old: &JSONSchemaProps, new: &JSONSchemaProps, path: &str) {
        let mut narrowed = Vec::new();
        upper_limit("maximum", old.maximum, new.maximum, &mut narrowed);
        upper_limit("maxLength", old.max_length, new.max_length, &mut narrowed);
        upper_limit("maxItems", old.max_items, new.max_items, &mut narrowed);
        upper_limit(
            "maxProperties",
            old.max_properties,
            new.max_properties,
            &mut narrowed,
        );
        lower_limit("minimum", old.minimum, new.minimum, &mut narrowed);
        lower_limit("minLength", old.min_length, new.min_length, &mut narrowed);
        lower_limit("minItems", old.min_items, new.min_items, &mut narrowed);
        lower_limit(
            "minProperties",
            old.min_properties,
            new.min_properties,
            &mut narrowed,
        );
        for (name, before, after) in [
            (
                "exclusiveMaximum",
                old.exclusive_maximum,
                new.exclusive_maximum,
            ),
            (
                "exclusiveMinimum",
                old.exclusive_minimum,
                new.exclusive_minimum,
            ),
        ] {
            if !before.unwrap_or(false) && after.unwrap_or(false) {
                narrowed.push(format!("{name} turned on"));
            }
        }
        for detail in narrowed {
            self.push(path, Rule::LimitNarrowing, detail);
        }
    }

    fn compare_default(&mut self, old: &JSONSchemaProps, new: &JSONSchemaProps, path: &str) {
        let detail = match (&old.default, &new.default) {
            (None, Some(added)) => format!("default {} added", added.0),
            (Some(removed), None) => format!("default {} removed", removed.0),
            (Some(before), Some(after)) if before.0 != after.0 => {
                format!("default changed from {} to {}", before.0, after.0)
            }
            _ => return,
        };
        self.push(path, Rule::DefaultChange, detail);
    }

    fn compare_properties(&mut self, old: &JSONSchemaProps, new: &JSONSchemaProps, path: &str) {
        let Some(old_properties) = &old.properties else {
            return;
        };
        for (name, old_property) in old_properties {
            let field = child_path(path, name);
            match new.properties.as_ref().and_then(|p| p.get(name)) {
                Some(new_property) => self.compare(old_property, new_property, &field),
                None => self.push(&field, Rule::FieldRemoval, "field removed".to_string()),
            }
        }
    }

    fn compare_items(&mut self, old: &JSONSchemaProps, new: &JSONSchemaProps, path: &str) {
        match (&old.items, &new.items) {
            (None, _) => {}
            (
                Some(JSONSchemaPropsOrArray::Schema(old_items)),
                Some(JSONSchemaPropsOrArray::Schema(new_items)),
            ) => {
                self.compare(old_items, new_items, &format!("{path}[*]"));
            }
            // Tuple schemas are not structural, so CRDs cannot use them; compare them by
            // position all the same rather than ignore them.
            (
                Some(JSONSchemaPropsOrArray::Schemas(old_items)),
                Some(JSONSchemaPropsOrArray::Schemas(new_items)),
            ) => {
                for (index, old_item) in old_items.iter().enumerate() {
                    let item_path = format!("{path}[{index}]");
                    match new_items.get(index) {
                        Some(new_item) => self.compare(old_item, new_item, &item_path),
                        None => self.push(
                            &item_path,
                            Rule::FieldRemoval,
                            "item schema removed".to_string(),
                        ),
                    }
                }
            }
            (Some(_), _) => self.push(
                &format!("{path}[*]"),
                Rule::FieldRemoval,
                "item schema removed or replaced".to_string(),
            ),
        }
    }

    fn compare_additional_properties(
        &mut self,
        old: &JSONSchemaProps,
        new: &JSONSchemaProps,
        path: &str,
    ) {
        let Some(JSONSchemaPropsOrBool::Schema(old_values)) = &old.additional_properties else {
            // `true`, `false` or absent declare no fields of their own.
            return;
        };
        let values_path = format!("{path}.*");
        match &new.additional_properties {
            Some(JSONSchemaPropsOrBool::Schema(new_values)) => {
                self.compare(old_values, new_values, &values_path);
            }
            // Any value is allowed now: wider, and no declared field remains to lose data.
            Some(JSONSchemaPropsOrBool::Bool(true)) => {}
            Some(JSONSchemaPropsOrBool::Bool(false)) | None => self.push(
                &values_path,
                Rule::FieldRemoval,
                "map value schema removed".to_string(),
            ),
        }
    }
}

/// A limit that caps values from above: lowering it, or adding one, narrows.
fn upper_limit<T: PartialOrd + fmt::Display>(
    name: &str,
    before: Option<T>,
    after: Option<T>,
    narrowed: &mut Vec<String>,
) {
    match (before, after) {
        (None, Some(after)) => narrowed.push(format!("{name} {after} added where there was none")),
        (Some(before), Some(after)) if after < before => {
            narrowed.push(format!("{name} decreased from {before} to {after}"));
        }
        _ => {}
    }
}

/// A limit that bounds values from below: raising it, or adding one, narrows.
fn lower_limit<T: PartialOrd + fmt::Display>(
    name: &str,
    before: Option<T>,
    after: Option<T>,
    narrowed: &mut Vec<String>,
) {
    match (before, after) {
        (None, Some(after)) => narrowed.push(format!("{name} {after} added where there was none")),
        (Some(before), Some(after)) if after > before => {
            narrowed.push(format!("{name} increased from {before} to {after}"));
        }
        _ => {}
    }
}

fn list(values: &BTreeSet<String>) -> String {
    let joined: Vec<&str> = values.iter().map(String::as_str).collect();
    format!("[{}]", joined.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// A CRD `widgets.example.com` with the given versions (`[(name, served, storage,
    /// openAPIV3Schema)]`) and stored versions.
    fn crd(
        scope: &str,
        versions: &[(&str, bool, bool, Value)],
        stored: &[&str],
    ) -> CustomResourceDefinition {
        let versions: Vec<Value> = versions
            .iter()
            .map(|(name, served, storage, schema)| {
                json!({"name": name, "served": served, "storage": storage,
                       "schema": {"openAPIV3Schema": schema}})
            })
            .collect();
        serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "names": {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"},
                "scope": scope,
                "versions": versions,
            },
            "status": {"storedVersions": stored},
        }))
        .unwrap()
    }

    /// A one-version (`v1`, served and stored) CRD whose `.spec` has the given properties and
    /// `required` list.
    fn with_spec(spec_properties: Value, required: &[&str]) -> CustomResourceDefinition {
        let mut spec = json!({"type": "object", "properties": spec_properties});
        if !required.is_empty() {
            spec["required"] = json!(required);
        }
        let schema = json!({"type": "object", "properties": {"spec": spec}});
        crd("Namespaced", &[("v1", true, true, schema)], &["v1"])
    }

    fn messages(violations: &[Violation]) -> Vec<String> {
        violations.iter().map(ToString::to_string).collect()
    }

    fn spec_with(field: Value) -> CustomResourceDefinition {
        with_spec(json!({"size": field}), &[])
    }

    #[test]
    fn identical_crds_are_safe() {
        let old = with_spec(
            json!({"size": {"type": "integer", "maximum": 10, "default": 3}}),
            &["size"],
        );
        assert!(check(&old, &old.clone()).is_empty());
    }

    #[test]
    fn description_changes_are_safe() {
        let old = spec_with(json!({"type": "integer", "description": "how many"}));
        let new = spec_with(json!({"type": "integer", "description": "how many widgets"}));
        assert!(check(&old, &new).is_empty());
    }

    // --- scope ---

    #[test]
    fn scope_change_is_a_violation() {
        let schema = json!({"type": "object"});
        let old = crd("Namespaced", &[("v1", true, true, schema.clone())], &["v1"]);
        let new = crd("Cluster", &[("v1", true, true, schema)], &["v1"]);
        assert_eq!(
            messages(&check(&old, &new)),
            [
                "CRD widgets.example.com: scope changed from Namespaced to Cluster (changing the scope is not allowed)"
            ]
        );
    }

    // --- versions ---

    #[test]
    fn removing_a_stored_version_is_a_violation() {
        let schema = json!({"type": "object"});
        let old = crd(
            "Namespaced",
            &[
                ("v1alpha1", true, false, schema.clone()),
                ("v1", true, true, schema.clone()),
            ],
            &["v1alpha1", "v1"],
        );
        let new = crd(
            "Namespaced",
            &[("v1", true, true, schema)],
            &["v1alpha1", "v1"],
        );
        assert_eq!(
            messages(&check(&old, &new)),
            [
                "CRD widgets.example.com version v1alpha1: stored version removed from spec.versions (removing a stored version is not allowed)"
            ]
        );
    }

    #[test]
    fn removing_a_served_but_never_stored_version_is_allowed() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}});
        let old = crd(
            "Namespaced",
            &[
                ("v1beta1", true, false, schema.clone()),
                ("v1", true, true, schema.clone()),
            ],
            &["v1"],
        );
        let new = crd("Namespaced", &[("v1", true, true, schema)], &["v1"]);
        assert!(check(&old, &new).is_empty());
    }

    #[test]
    fn the_storage_version_counts_as_stored_when_status_is_missing() {
        let schema = json!({"type": "object"});
        let mut old = crd("Namespaced", &[("v1", true, true, schema.clone())], &[]);
        old.status = None;
        let new = crd("Namespaced", &[("v2", true, true, schema)], &[]);
        let violations = check(&old, &new);
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].rule, Rule::StoredVersionRemoval);
        assert_eq!(violations[0].version.as_deref(), Some("v1"));
    }

    #[test]
    fn a_new_version_is_not_compared_with_anything() {
        let old_schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}});
        // v2 drops `size` and adds a required field, but it did not exist before.
        let new_schema = json!({"type": "object", "properties": {"spec": {"type": "object", "required": ["count"],
                               "properties": {"count": {"type": "integer", "maximum": 3}}}}});
        let old = crd(
            "Namespaced",
            &[("v1", true, true, old_schema.clone())],
            &["v1"],
        );
        let new = crd(
            "Namespaced",
            &[
                ("v1", true, true, old_schema),
                ("v2", true, false, new_schema),
            ],
            &["v1"],
        );
        assert!(check(&old, &new).is_empty());
    }

    // --- fields ---

    #[test]
    fn removing_a_field_is_a_violation() {
        let old = with_spec(
            json!({"size": {"type": "integer"}, "color": {"type": "string"}}),
            &[],
        );
        let new = with_spec(json!({"size": {"type": "integer"}}), &[]);
        assert_eq!(
            messages(&check(&old, &new)),
            [
                "CRD widgets.example.com version v1: field .spec.color: field removed (removing a field is not allowed)"
            ]
        );
    }

    #[test]
    fn adding_an_optional_field_is_safe() {
        let old = with_spec(json!({"size": {"type": "integer"}}), &[]);
        let new = with_spec(
            json!({"size": {"type": "integer"}, "color": {"type": "string", "enum": ["red"]}}),
            &[],
        );
        assert!(check(&old, &new).is_empty());
    }

    #[test]
    fn removing_a_field_inside_array_items_is_a_violation() {
        let old = spec_with(
            json!({"type": "array", "items": {"type": "object", "properties": {
            "port": {"type": "integer"}, "name": {"type": "string"}}}}),
        );
        let new = spec_with(
            json!({"type": "array", "items": {"type": "object", "properties": {
            "port": {"type": "integer"}}}}),
        );
        let violations = check(&old, &new);
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].path.as_deref(), Some(".spec.size[*].name"));
        assert_eq!(violations[0].rule, Rule::FieldRemoval);
    }

    #[test]
    fn removing_a_field_inside_map_values_is_a_violation() {
        let old = spec_with(
            json!({"type": "object", "additionalProperties": {"type": "object", "properties": {
            "weight": {"type": "integer"}}}}),
        );
        let new = spec_with(json!({"type": "object", "additionalProperties": {"type": "object"}}));
        let violations = check(&old, &new);
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].path.as_deref(), Some(".spec.size.*.weight"));
    }

    #[test]
    fn dropping_the_map_value_schema_is_a_violation_but_allowing_any_value_is_not() {
        let old = spec_with(json!({"type": "object", "additionalProperties": {"type": "string"}}));
        let dropped = spec_with(json!({"type": "object"}));
        let violations = check(&old, &dropped);
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].path.as_deref(), Some(".spec.size.*"));
        let widened = spec_with(json!({"type": "object", "additionalProperties": true}));
        assert!(check(&old, &widened).is_empty());
    }

    #[test]
    fn property_names_that_are_not_plain_are_quoted_in_paths() {
        let old = with_spec(json!({"example.com/flag": {"type": "string"}}), &[]);
        let new = with_spec(json!({}), &[]);
        assert_eq!(
            check(&old, &new)[0].path.as_deref(),
            Some(".spec[\"example.com/flag\"]")
        );
    }

    #[test]
    fn changing_a_type_is_a_violation() {
        let old = spec_with(json!({"type": "integer"}));
        let new = spec_with(json!({"type": "string"}));
        assert_eq!(
            messages(&check(&old, &new)),
            [
                "CRD widgets.example.com version v1: field .spec.size: type changed from \"integer\" to \"string\" (changing a field's type is not allowed)"
            ]
        );
    }

    // --- required ---

    #[test]
    fn making_an_existing_field_required_is_a_violation() {
        let old = with_spec(json!({"size": {"type": "integer"}}), &[]);
        let new = with_spec(json!({"size": {"type": "integer"}}), &["size"]);
        assert_eq!(
            messages(&check(&old, &new)),
            [
                "CRD widgets.example.com version v1: field .spec.size: field became required (adding a required field is not allowed)"
            ]
        );
    }

    #[test]
    fn adding_a_new_required_field_is_a_violation() {
        let old = with_spec(json!({"size": {"type": "integer"}}), &[]);
        let new = with_spec(
            json!({"size": {"type": "integer"}, "owner": {"type": "string"}}),
            &["owner"],
        );
        let violations = check(&old, &new);
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].rule, Rule::NewRequiredField);
        assert_eq!(violations[0].path.as_deref(), Some(".spec.owner"));
    }

    #[test]
    fn making_a_required_field_optional_is_safe() {
        let old = with_spec(json!({"size": {"type": "integer"}}), &["size"]);
        let new = with_spec(json!({"size": {"type": "integer"}}), &[]);
        assert!(check(&old, &new).is_empty());
    }

    #[test]
    fn required_fields_inside_a_new_optional_object_are_safe() {
        let old = with_spec(json!({"size": {"type": "integer"}}), &[]);
        let new = with_spec(
            json!({"size": {"type": "integer"},
                   "tls": {"type": "object", "required": ["secretName"], "properties": {"secretName": {"type": "string"}}}}),
            &[],
        );
        assert!(check(&old, &new).is_empty());
    }

    // --- enum ---

    #[test]
    fn removing_enum_values_is_a_violation() {
        let old = spec_with(json!({"type": "string", "enum": ["small", "medium", "large"]}));
        let new = spec_with(json!({"type": "string", "enum": ["medium"]}));
        assert_eq!(
            messages(&check(&old, &new)),
            [
                "CRD widgets.example.com version v1: field .spec.size: enum values [\"large\", \"small\"] removed (narrowing an enum is not allowed)"
            ]
        );
    }

    #[test]
    fn adding_an_enum_where_there_was_none_is_a_violation() {
        let old = spec_with(json!({"type": "string"}));
        let new = spec_with(json!({"type": "string", "enum": ["small", "large"]}));
        assert_eq!(
            messages(&check(&old, &new)),
            [
                "CRD widgets.example.com version v1: field .spec.size: enum [\"large\", \"small\"] added where any value was allowed (narrowing an enum is not allowed)"
            ]
        );
    }

    #[test]
    fn adding_enum_values_or_dropping_the_enum_is_safe() {
        let old = spec_with(json!({"type": "string", "enum": ["small"]}));
        let added = spec_with(json!({"type": "string", "enum": ["small", "large"]}));
        assert!(check(&old, &added).is_empty());
        let dropped = spec_with(json!({"type": "string"}));
        assert!(check(&old, &dropped).is_empty());
    }

    // --- limits ---

    #[test]
    fn decreasing_a_maximum_is_a_violation() {
        let old = spec_with(json!({"type": "integer", "maximum": 10}));
        let new = spec_with(json!({"type": "integer", "maximum": 5}));
        assert_eq!(
            messages(&check(&old, &new)),
            [
                "CRD widgets.example.com version v1: field .spec.size: maximum decreased from 10 to 5 (narrowing limits is not allowed)"
            ]
        );
    }

    #[test]
    fn raising_a_maximum_or_lowering_a_minimum_is_safe() {
        let old = spec_with(
            json!({"type": "integer", "maximum": 10, "minimum": 2, "maxLength": 5, "minItems": 2}),
        );
        let new = spec_with(
            json!({"type": "integer", "maximum": 20, "minimum": 0, "maxLength": 8, "minItems": 1}),
        );
        assert!(check(&old, &new).is_empty());
    }

    #[test]
    fn removing_limits_is_safe() {
        let old = spec_with(
            json!({"type": "integer", "maximum": 10, "minimum": 2, "exclusiveMaximum": true}),
        );
        let new = spec_with(json!({"type": "integer"}));
        assert!(check(&old, &new).is_empty());
    }

    #[test]
    fn every_added_or_tightened_limit_is_reported() {
        let old =
            spec_with(json!({"type": "string", "minimum": 1, "maxItems": 10, "minProperties": 1}));
        let new = spec_with(json!({
            "type": "string",
            "maximum": 100, "minimum": 2.5,
            "maxLength": 63, "minLength": 1,
            "maxItems": 4, "minItems": 1,
            "maxProperties": 8, "minProperties": 2,
            "exclusiveMaximum": true, "exclusiveMinimum": false,
        }));
        let details: Vec<String> = check(&old, &new)
            .into_iter()
            .inspect(|v| assert_eq!(v.rule, Rule::LimitNarrowing))
            .map(|v| v.detail)
            .collect();
        assert_eq!(
            details,
            [
                "exclusiveMaximum turned on",
                "maxItems decreased from 10 to 4",
                "maxLength 63 added where there was none",
                "maxProperties 8 added where there was none",
                "maximum 100 added where there was none",
                "minItems 1 added where there was none",
                "minLength 1 added where there was none",
                "minProperties increased from 1 to 2",
                "minimum increased from 1 to 2.5",
            ]
        );
    }

    // --- defaults ---

    #[test]
    fn changing_adding_or_removing_a_default_is_a_violation() {
        let base = spec_with(json!({"type": "integer", "default": 3}));
        let changed = spec_with(json!({"type": "integer", "default": 5}));
        let removed = spec_with(json!({"type": "integer"}));
        assert_eq!(
            messages(&check(&base, &changed)),
            [
                "CRD widgets.example.com version v1: field .spec.size: default changed from 3 to 5 (changing a default is not allowed)"
            ]
        );
        assert_eq!(check(&base, &removed)[0].detail, "default 3 removed");
        assert_eq!(check(&removed, &base)[0].detail, "default 3 added");
        assert_eq!(check(&removed, &base)[0].rule, Rule::DefaultChange);
    }

    #[test]
    fn an_equal_default_written_differently_is_safe() {
        let old = spec_with(json!({"type": "object", "default": {"a": 1, "b": [1, 2]}}));
        let new = spec_with(json!({"type": "object", "default": {"b": [1, 2], "a": 1}}));
        assert!(check(&old, &new).is_empty());
    }

    // --- several at once ---

    #[test]
    fn all_violations_are_reported_together_in_a_stable_order() {
        let old_schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "size": {"type": "integer", "maximum": 10},
            "color": {"type": "string", "enum": ["red", "blue"]},
            "zone": {"type": "string"},
        }}}});
        let new_schema = json!({"type": "object", "properties": {"spec": {"type": "object", "required": ["color"], "properties": {
            "size": {"type": "integer", "maximum": 5},
            "color": {"type": "string", "enum": ["red"]},
        }}}});
        let old = crd(
            "Namespaced",
            &[
                ("v1alpha1", true, false, old_schema.clone()),
                ("v1", true, true, old_schema.clone()),
            ],
            &["v1alpha1", "v1"],
        );
        let new = crd("Cluster", &[("v1", true, true, new_schema)], &["v1"]);
        let violations = check(&old, &new);
        assert_eq!(
            messages(&violations),
            [
                "CRD widgets.example.com: scope changed from Namespaced to Cluster (changing the scope is not allowed)",
                "CRD widgets.example.com version v1: field .spec.color: field became required (adding a required field is not allowed)",
                "CRD widgets.example.com version v1: field .spec.color: enum values [\"blue\"] removed (narrowing an enum is not allowed)",
                "CRD widgets.example.com version v1: field .spec.size: maximum decreased from 10 to 5 (narrowing limits is not allowed)",
                "CRD widgets.example.com version v1: field .spec.zone: field removed (removing a field is not allowed)",
                "CRD widgets.example.com version v1alpha1: stored version removed from spec.versions (removing a stored version is not allowed)",
            ]
        );
        let mut sorted = violations.clone();
        sorted.sort();
        assert_eq!(sorted, violations);
    }

    #[test]
    fn a_version_whose_schema_is_dropped_loses_its_fields() {
        let old = with_spec(json!({"size": {"type": "integer"}}), &[]);
        let mut new = old.clone();
        new.spec.versions[0].schema = None;
        let violations = check(&old, &new);
        assert!(
            violations
                .iter()
                .any(|v| v.rule == Rule::FieldRemoval && v.path.as_deref() == Some(".spec"))
        );
    }

    #[test]
    fn summary_lists_ten_violations_then_counts_the_rest() {
        let properties: serde_json::Map<String, Value> = (0..12)
            .map(|i| (format!("f{i:02}"), json!({"type": "string"})))
            .collect();
        let old = with_spec(Value::Object(properties), &[]);
        let new = with_spec(json!({}), &[]);
        let violations = check(&old, &new);
        assert_eq!(violations.len(), 12);
        let text = summary(&violations);
        assert_eq!(text.matches("field removed").count(), 10);
        assert!(text.ends_with("; and 2 more"));
        assert!(text.contains(".spec.f09") && !text.contains(".spec.f10"));
    }
}
