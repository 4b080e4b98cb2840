//! Review of a new revision before it is applied: what it adds, changes and removes, and
//! which RBAC permissions it grants that are not granted now.
//!
//! An administrator approving a revision reads this instead of diffing manifests, so the
//! permission summary errs on the side of reporting: a rule it cannot read is shown as it
//! is rather than dropped, and wildcards are spelled out in capitals.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use health::display_ref;

use crate::object::ObjectKey;

/// The API group of Roles, ClusterRoles and their bindings.
const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
/// The RBAC wildcard, in verbs, resources, API groups and non-resource URLs.
const ALL: &str = "*";
/// Built-in ClusterRoles broad enough that a binding to them must stand out.
const BROAD_ROLES: [&str; 3] = ["cluster-admin", "admin", "edit"];

/// One object of the new revision, as the engine sees it before writing.
#[derive(Debug, Clone)]
pub struct Proposed<'a> {
    /// Which object.
    pub key: ObjectKey,
    /// The full object as it would be applied.
    pub desired: &'a Value,
    /// The object as it is on the cluster, if it exists.
    pub live: Option<&'a Value>,
    /// The engine's own "needs a write" test: false when applying would leave it as it is.
    pub differs: bool,
}

/// What applying would change.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Changes {
    /// Objects it would create.
    pub added: Vec<String>,
    /// Existing objects it would write.
    pub changed: Vec<String>,
    /// Objects of the running revision it would prune.
    pub removed: Vec<String>,
    /// RBAC permissions it would grant that are not granted now (see [`permissions_added`]).
    pub permissions_added: Vec<String>,
}

impl Changes {
    /// The status field for this revision: `refused` comes from a dry run, not from here.
    pub fn into_pending(
        self,
        revision: i64,
        bundle: &str,
        digest: &str,
        refused: Vec<String>,
    ) -> rukpak_api::PendingRevision {
        rukpak_api::PendingRevision {
            revision,
            bundle: bundle.to_owned(),
            digest: digest.to_owned(),
            added: self.added,
            changed: self.changed,
            removed: self.removed,
            permissions_added: self.permissions_added,
            refused,
        }
    }
}

/// Classifies the new revision's objects.
///
/// `added` holds proposed objects with no live copy, `changed` those with a live copy the
/// engine would write (`differs`), `removed` the keys of `previous` (the running revision's
/// inventory) no longer proposed. A new API version of the same object is a change, not a
/// removal, as in [`crate::prune::stale`]. Each list holds [`display_ref`] strings, sorted,
/// cluster-scoped objects first (namespaces and RBAC before what lives in them), without
/// duplicates. `permissions_added` is [`permissions_added`].
pub fn changes(proposed: &[Proposed<'_>], previous: &[ObjectKey]) -> Changes {
    let added = proposed.iter().filter(|p| p.live.is_none()).map(|p| &p.key);
    let changed = proposed
        .iter()
        .filter(|p| p.live.is_some() && p.differs)
        .map(|p| &p.key);
    let removed = previous
        .iter()
        .filter(|old| !proposed.iter().any(|p| p.key.same_object(old)));
    Changes {
        added: sorted_refs(added),
        changed: sorted_refs(changed),
        removed: sorted_refs(removed),
        permissions_added: permissions_added(proposed),
    }
}

/// Readable references, cluster-scoped first, each part sorted, without duplicates.
fn sorted_refs<'a>(keys: impl Iterator<Item = &'a ObjectKey>) -> Vec<String> {
    let refs: BTreeSet<(bool, String)> = keys
        .map(|k| {
            let namespace = k.namespace.as_deref().filter(|ns| !ns.is_empty());
            (
                namespace.is_some(),
                display_ref(&k.group, &k.kind, namespace, &k.name),
            )
        })
        .collect();
    refs.into_iter().map(|(_, text)| text).collect()
}

/// Every RBAC permission the proposed objects grant that the live ones do not.
///
/// - ClusterRoles and Roles: each rule is expanded into atoms (API group × resource × verb,
///   restricted to its `resourceNames` if any; non-resource URL × verb for ClusterRoles) and
///   the atoms no rule of the live object covers are reported, grouped per role and per
///   (API group, verbs, names) so that a rule reads as one line. Wildcards read `ALL`.
/// - Aggregated ClusterRoles: their rules are filled by the controller from other roles, so
///   the new label selectors are reported instead.
/// - ClusterRoleBindings and RoleBindings: each subject the live binding does not have (all
///   of them when the role changes) is reported as a grant of the role; bindings to
///   `cluster-admin`, `admin`, `edit` or to a proposed role with a `*` rule are marked.
/// - Rules, selectors and subjects of the wrong shape are reported as they are (the API
///   server will most likely refuse them, but a grant must never be hidden); ones missing
///   a required field grant nothing and are skipped.
///
/// Objects the engine would not write (live and not `differs`) grant nothing new. Lines are
/// sorted, cluster-wide ones first, without duplicates.
pub fn permissions_added(proposed: &[Proposed<'_>]) -> Vec<String> {
    let mut lines = BTreeSet::new();
    for p in proposed {
        if p.key.group != RBAC_GROUP || (p.live.is_some() && !p.differs) {
            continue;
        }
        match p.key.kind.as_str() {
            "ClusterRole" => role_lines(p, Scope::Cluster, &mut lines),
            "Role" => role_lines(p, Scope::Namespace(namespace_of(&p.key)), &mut lines),
            "ClusterRoleBinding" => binding_lines(p, Scope::Cluster, proposed, &mut lines),
            "RoleBinding" => binding_lines(
                p,
                Scope::Namespace(namespace_of(&p.key)),
                proposed,
                &mut lines,
            ),
            _ => {}
        }
    }
    lines.into_iter().map(|line| line.text).collect()
}

/// Where a grant applies.
#[derive(Debug, Clone, Copy)]
enum Scope<'a> {
    /// Cluster-wide: a ClusterRole or ClusterRoleBinding.
    Cluster,
    /// One namespace: a Role or RoleBinding.
    Namespace(&'a str),
}

impl Scope<'_> {
    fn is_cluster(self) -> bool {
        matches!(self, Scope::Cluster)
    }

    /// `cluster-wide` or `in namespace ns`.
    fn describe(self) -> String {
        match self {
            Scope::Cluster => "cluster-wide".to_owned(),
            Scope::Namespace(ns) => format!("in namespace {ns}"),
        }
    }
}

/// The namespace of a namespaced object; the engine defaults it before review, so the
/// placeholder only shows if a caller did not.
fn namespace_of(key: &ObjectKey) -> &str {
    key.namespace
        .as_deref()
        .filter(|ns| !ns.is_empty())
        .unwrap_or("(unset)")
}

/// One line of the permission summary; the derived order puts cluster-wide lines first.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Line {
    /// False for cluster-wide lines, so that they sort first.
    namespaced: bool,
    text: String,
}

impl Line {
    fn new(scope: Scope<'_>, text: String) -> Self {
        Self {
            namespaced: !scope.is_cluster(),
            text,
        }
    }
}

/// The compact JSON of a value that could not be read, for reporting as-is.
fn as_is(value: &Value) -> String {
    value.to_string()
}

// ---------------------------------------------------------------------------------------
// Roles
// ---------------------------------------------------------------------------------------

/// A readable policy rule. Absent fields are empty lists.
#[derive(Debug, Default)]
struct Rule {
    api_groups: Vec<String>,
    resources: Vec<String>,
    verbs: Vec<String>,
    resource_names: Vec<String>,
    non_resource_urls: Vec<String>,
}

/// A rule as found in an object: readable, or kept as it is.
#[derive(Debug)]
enum ParsedRule<'a> {
    Rule(Rule),
    Malformed(&'a Value),
}

/// A list of strings; `None` when the field holds anything else. Absent or null is empty,
/// as the API server reads it.
fn string_list(object: &Map<String, Value>, field: &str) -> Option<Vec<String>> {
    match object.get(field) {
        None | Some(Value::Null) => Some(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().map(str::to_owned))
            .collect(),
        Some(_) => None,
    }
}

fn parse_rule(value: &Value) -> ParsedRule<'_> {
    let Some(object) = value.as_object() else {
        return ParsedRule::Malformed(value);
    };
    let rule = (|| {
        Some(Rule {
            api_groups: string_list(object, "apiGroups")?,
            resources: string_list(object, "resources")?,
            verbs: string_list(object, "verbs")?,
            resource_names: string_list(object, "resourceNames")?,
            non_resource_urls: string_list(object, "nonResourceURLs")?,
        })
    })();
    match rule {
        Some(rule) => ParsedRule::Rule(rule),
        None => ParsedRule::Malformed(value),
    }
}

/// The rules of a role. `rules` of the wrong type is one malformed rule.
fn parse_rules(object: &Value) -> Vec<ParsedRule<'_>> {
    match object.get("rules") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(rules)) => rules.iter().map(parse_rule).collect(),
        Some(other) => vec![ParsedRule::Malformed(other)],
    }
}

/// The smallest grant a rule is made of.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Atom {
    /// A verb on a resource of an API group, on one named object or (None) on all.
    Resource {
        group: String,
        resource: String,
        name: Option<String>,
        verb: String,
    },
    /// A verb on a non-resource URL (ClusterRoles only).
    Url { url: String, verb: String },
}

/// The atoms a rule grants. Namespaced roles cannot grant non-resource URLs (the API server
/// ignores them there), so they yield none.
fn atoms(rule: &Rule, scope: Scope<'_>) -> Vec<Atom> {
    let mut atoms = Vec::new();
    let names: Vec<Option<&String>> = if rule.resource_names.is_empty() {
        vec![None]
    } else {
        rule.resource_names.iter().map(Some).collect()
    };
    for verb in &rule.verbs {
        for group in &rule.api_groups {
            for resource in &rule.resources {
                for name in &names {
                    atoms.push(Atom::Resource {
                        group: group.clone(),
                        resource: resource.clone(),
                        name: name.cloned(),
                        verb: verb.clone(),
                    });
                }
            }
        }
        if scope.is_cluster() {
            for url in &rule.non_resource_urls {
                atoms.push(Atom::Url {
                    url: url.clone(),
                    verb: verb.clone(),
                });
            }
        }
    }
    atoms
}

fn matches_or_all(values: &[String], wanted: &str) -> bool {
    values.iter().any(|v| v == ALL || v == wanted)
}

/// Whether a live rule grants an atom, as the Kubernetes RBAC authorizer decides: `*`
/// matches anything in its dimension, `*/sub` any resource's subresource `sub`, a URL
/// ending in `*` any URL with that prefix, and a rule without `resourceNames` any name.
fn covers(rule: &Rule, atom: &Atom) -> bool {
    match atom {
        Atom::Resource {
            group,
            resource,
            name,
            verb,
        } => {
            matches_or_all(&rule.verbs, verb)
                && matches_or_all(&rule.api_groups, group)
                && resource_matches(&rule.resources, resource)
                && (rule.resource_names.is_empty()
                    || name
                        .as_ref()
                        .is_some_and(|n| rule.resource_names.contains(n)))
        }
        Atom::Url { url, verb } => {
            matches_or_all(&rule.verbs, verb)
                && rule.non_resource_urls.iter().any(|granted| {
                    granted == url
                        || granted
                            .strip_suffix('*')
                            .is_some_and(|prefix| url.starts_with(prefix))
                })
        }
    }
}

fn resource_matches(granted: &[String], resource: &str) -> bool {
    let subresource = resource.split_once('/').map(|(_, sub)| sub);
    granted.iter().any(|g| {
        g == ALL
            || g == resource
            || subresource.is_some_and(|sub| g.strip_prefix("*/") == Some(sub))
    })
}

fn role_lines(p: &Proposed<'_>, scope: Scope<'_>, lines: &mut BTreeSet<Line>) {
    let prefix = format!("{} ({} {})", scope.describe(), p.key.kind, p.key.name);

    // An aggregated ClusterRole's rules are overwritten by the controller with those of the
    // roles it selects, so what it grants is decided by its selectors.
    if scope.is_cluster()
        && let Some(aggregation) = p.desired.get("aggregationRule").filter(|v| !v.is_null())
    {
        aggregation_lines(&prefix, aggregation, p.live, lines);
        return;
    }

    let live_rules = p.live.map(parse_rules).unwrap_or_default();
    let live_readable: Vec<&Rule> = live_rules
        .iter()
        .filter_map(|r| match r {
            ParsedRule::Rule(rule) => Some(rule),
            ParsedRule::Malformed(_) => None,
        })
        .collect();
    let live_malformed: Vec<&Value> = live_rules
        .iter()
        .filter_map(|r| match r {
            ParsedRule::Malformed(value) => Some(*value),
            ParsedRule::Rule(_) => None,
        })
        .collect();

    let mut new_atoms = BTreeSet::new();
    for rule in parse_rules(p.desired) {
        match rule {
            ParsedRule::Rule(rule) => new_atoms.extend(
                atoms(&rule, scope)
                    .into_iter()
                    .filter(|atom| !live_readable.iter().any(|live| covers(live, atom))),
            ),
            // The same unreadable rule is already there: nothing new to read into it.
            ParsedRule::Malformed(value) if !live_malformed.contains(&value) => {
                lines.insert(Line::new(
                    scope,
                    format!("{prefix}: unreadable rule {}", as_is(value)),
                ));
            }
            ParsedRule::Malformed(_) => {}
        }
    }
    for text in describe_atoms(&new_atoms) {
        lines.insert(Line::new(scope, format!("{prefix}: {text}")));
    }
}

/// Atoms folded into readable phrases: one per (API group, verbs, names) with the resources
/// that share them, and one per verb set with the URLs that share it.
fn describe_atoms(atoms: &BTreeSet<Atom>) -> Vec<String> {
    // (group, resource, name) -> verbs
    let mut verbs_of: BTreeMap<(&str, &str, Option<&str>), BTreeSet<&str>> = BTreeMap::new();
    // url -> verbs
    let mut url_verbs: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for atom in atoms {
        match atom {
            Atom::Resource {
                group,
                resource,
                name,
                verb,
            } => {
                verbs_of
                    .entry((group, resource, name.as_deref()))
                    .or_default()
                    .insert(verb);
            }
            Atom::Url { url, verb } => {
                url_verbs.entry(url).or_default().insert(verb);
            }
        }
    }

    // (group, resource, verbs) -> names; None stands for every name.
    type Names<'a> = BTreeSet<Option<&'a str>>;
    let mut names_of: BTreeMap<(&str, &str, BTreeSet<&str>), Names<'_>> = BTreeMap::new();
    for ((group, resource, name), verbs) in verbs_of {
        names_of
            .entry((group, resource, verbs))
            .or_default()
            .insert(name);
    }

    // (group, verbs, names or None for all) -> resources
    type Key<'a> = (&'a str, BTreeSet<&'a str>, Option<BTreeSet<&'a str>>);
    let mut resources_of: BTreeMap<Key<'_>, BTreeSet<&str>> = BTreeMap::new();
    for ((group, resource, verbs), names) in names_of {
        let named: BTreeSet<&str> = names.iter().flatten().copied().collect();
        if names.contains(&None) {
            resources_of
                .entry((group, verbs.clone(), None))
                .or_default()
                .insert(resource);
        }
        if !named.is_empty() {
            resources_of
                .entry((group, verbs, Some(named)))
                .or_default()
                .insert(resource);
        }
    }

    let mut phrases = Vec::new();
    for ((group, verbs, names), resources) in resources_of {
        let mut phrase = format!(
            "{} on {}",
            describe_verbs(&verbs),
            describe_resources(group, &resources)
        );
        if let Some(names) = names {
            phrase.push_str(" named ");
            phrase.push_str(&join(names.iter().copied()));
        }
        phrases.push(phrase);
    }

    let mut urls_of: BTreeMap<BTreeSet<&str>, BTreeSet<&str>> = BTreeMap::new();
    for (url, verbs) in url_verbs {
        urls_of.entry(verbs).or_default().insert(url);
    }
    for (verbs, urls) in urls_of {
        let target = if urls.contains(ALL) {
            "ALL non-resource URLs".to_owned()
        } else if urls.len() == 1 {
            format!("non-resource URL {}", join(urls.iter().copied()))
        } else {
            format!("non-resource URLs {}", join(urls.iter().copied()))
        };
        phrases.push(format!("{} on {target}", describe_verbs(&verbs)));
    }
    phrases
}

fn join<'a>(items: impl Iterator<Item = &'a str>) -> String {
    items.collect::<Vec<_>>().join(", ")
}

fn describe_verbs(verbs: &BTreeSet<&str>) -> String {
    if verbs.contains(ALL) {
        "ALL verbs".to_owned()
    } else {
        join(verbs.iter().copied())
    }
}

/// Resources of one API group: `apps/deployments, apps/replicasets`, `pods` for the core
/// group, with wildcards spelled out (`ALL resources in ALL API groups`).
fn describe_resources(group: &str, resources: &BTreeSet<&str>) -> String {
    let all = resources.contains(ALL);
    match (group, all) {
        (ALL, true) => "ALL resources in ALL API groups".to_owned(),
        (ALL, false) => format!("{} in ALL API groups", join(resources.iter().copied())),
        ("", true) => "ALL resources in the core API group".to_owned(),
        ("", false) => join(resources.iter().copied()),
        (group, true) => format!("ALL resources in API group {group}"),
        (group, false) => resources
            .iter()
            .map(|r| format!("{group}/{r}"))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

// ---------------------------------------------------------------------------------------
// Aggregated ClusterRoles
// ---------------------------------------------------------------------------------------

fn aggregation_lines(
    prefix: &str,
    aggregation: &Value,
    live: Option<&Value>,
    lines: &mut BTreeSet<Line>,
) {
    let live_selectors: Vec<&Value> = live
        .and_then(|l| l.get("aggregationRule"))
        .and_then(|a| a.get("clusterRoleSelectors"))
        .and_then(Value::as_array)
        .map(|s| s.iter().collect())
        .unwrap_or_default();
    let selectors = match aggregation.get("clusterRoleSelectors") {
        // No selectors select no roles: the aggregated role grants nothing.
        None | Some(Value::Null) if aggregation.is_object() => return,
        Some(Value::Array(selectors)) => selectors,
        // Not readable: show it rather than guess what it selects.
        _ => {
            let unchanged = live
                .and_then(|l| l.get("aggregationRule"))
                .is_some_and(|l| l == aggregation);
            if !unchanged {
                lines.insert(Line::new(
                    Scope::Cluster,
                    format!(
                        "{prefix}: unreadable aggregationRule {}",
                        as_is(aggregation)
                    ),
                ));
            }
            return;
        }
    };
    for selector in selectors {
        if live_selectors.contains(&selector) {
            continue;
        }
        let text = match describe_selector(selector) {
            Some(labels) if labels.is_empty() => "aggregates ALL ClusterRoles".to_owned(),
            Some(labels) => format!("aggregates ClusterRoles labelled {labels}"),
            None => format!("aggregates ClusterRoles matching {}", as_is(selector)),
        };
        lines.insert(Line::new(Scope::Cluster, format!("{prefix}: {text}")));
    }
}

/// A label selector as `kubectl` writes one (`k=v, env in (a, b), !legacy`); empty for the
/// empty selector, which selects everything; `None` when it cannot be read.
fn describe_selector(selector: &Value) -> Option<String> {
    let selector = selector.as_object()?;
    let mut parts = Vec::new();
    match selector.get("matchLabels") {
        None | Some(Value::Null) => {}
        Some(Value::Object(labels)) => {
            for (key, value) in labels {
                parts.push(format!("{key}={}", value.as_str()?));
            }
        }
        Some(_) => return None,
    }
    match selector.get("matchExpressions") {
        None | Some(Value::Null) => {}
        Some(Value::Array(expressions)) => {
            for expression in expressions {
                let key = expression.get("key")?.as_str()?;
                let operator = expression.get("operator")?.as_str()?;
                let values = match expression.get("values") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(values) => values
                        .as_array()?
                        .iter()
                        .map(Value::as_str)
                        .collect::<Option<Vec<_>>>()?,
                };
                parts.push(match operator {
                    "In" => format!("{key} in ({})", values.join(", ")),
                    "NotIn" => format!("{key} notin ({})", values.join(", ")),
                    "Exists" => key.to_owned(),
                    "DoesNotExist" => format!("!{key}"),
                    _ => return None,
                });
            }
        }
        Some(_) => return None,
    }
    Some(parts.join(", "))
}

// ---------------------------------------------------------------------------------------
// Bindings
// ---------------------------------------------------------------------------------------

/// The role a binding grants.
#[derive(Debug, PartialEq, Eq)]
struct RoleRef<'a> {
    kind: &'a str,
    name: &'a str,
}

fn role_ref(binding: &Value) -> Option<RoleRef<'_>> {
    let role_ref = binding.get("roleRef")?;
    Some(RoleRef {
        kind: role_ref.get("kind")?.as_str()?,
        name: role_ref.get("name")?.as_str()?,
    })
}

/// A subject as the authorizer matches it: kind, namespace (ServiceAccounts) and name.
#[derive(Debug, PartialEq, Eq)]
struct Subject<'a> {
    kind: &'a str,
    namespace: Option<&'a str>,
    name: &'a str,
}

/// A binding's subjects, readable or kept as they are. A ServiceAccount without a namespace
/// in a RoleBinding is the binding's own namespace's, as the API server defaults it.
fn subjects<'a>(binding: &'a Value, scope: Scope<'a>) -> Vec<Result<Subject<'a>, &'a Value>> {
    let read = |subject: &'a Value| -> Result<Subject<'a>, &'a Value> {
        let kind = subject.get("kind").and_then(Value::as_str);
        let name = subject.get("name").and_then(Value::as_str);
        let namespace = match subject.get("namespace") {
            None | Some(Value::Null) => None,
            Some(ns) => Some(ns.as_str().ok_or(subject)?),
        }
        .filter(|ns| !ns.is_empty());
        match (kind, name) {
            (Some(kind), Some(name)) => Ok(Subject {
                kind,
                namespace: match (kind, namespace, scope) {
                    ("ServiceAccount", None, Scope::Namespace(ns)) => Some(ns),
                    ("ServiceAccount", namespace, _) => namespace,
                    _ => None,
                },
                name,
            }),
            _ => Err(subject),
        }
    };
    match binding.get("subjects") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(subjects)) => subjects.iter().map(read).collect(),
        Some(other) => vec![Err(other)],
    }
}

fn describe_subject(subject: &Subject<'_>) -> String {
    match subject.namespace {
        Some(ns) => format!("{} {ns}/{}", subject.kind, subject.name),
        None => format!("{} {}", subject.kind, subject.name),
    }
}

fn binding_lines(
    p: &Proposed<'_>,
    scope: Scope<'_>,
    proposed: &[Proposed<'_>],
    lines: &mut BTreeSet<Line>,
) {
    let prefix = scope.describe();
    let live = p.live;
    let Some(role) = role_ref(p.desired) else {
        // Without a readable role the binding grants nothing the authorizer could use, but
        // an administrator should still see what was written.
        let desired = p.desired.get("roleRef");
        if let Some(desired) = desired
            && live.and_then(|l| l.get("roleRef")) != Some(desired)
        {
            lines.insert(Line::new(
                scope,
                format!(
                    "{prefix}: {} {} has unreadable roleRef {}",
                    p.key.kind,
                    p.key.name,
                    as_is(desired)
                ),
            ));
        }
        return;
    };
    // A new role (a replaced binding) grants it to every subject afresh.
    let same_role = live.and_then(role_ref).as_ref() == Some(&role);
    let live_subjects = match live {
        Some(live) if same_role => subjects(live, scope),
        _ => Vec::new(),
    };
    let marker = broad_marker(&role, scope, proposed);
    for subject in subjects(p.desired, scope) {
        if live_subjects.contains(&subject) {
            continue;
        }
        let whom = match &subject {
            Ok(subject) => describe_subject(subject),
            Err(value) => format!("unreadable subject {}", as_is(value)),
        };
        lines.insert(Line::new(
            scope,
            format!(
                "{prefix}: binds {} {} to {whom}{marker}",
                role.kind, role.name
            ),
        ));
    }
}

/// A note after bindings an administrator must not miss: the built-in broad roles, and
/// proposed roles with a `*` in any rule. Roles not in the revision are not looked up.
fn broad_marker(role: &RoleRef<'_>, scope: Scope<'_>, proposed: &[Proposed<'_>]) -> &'static str {
    if role.kind == "ClusterRole" && BROAD_ROLES.contains(&role.name) {
        return " (broad built-in role)";
    }
    let namespace = match scope {
        Scope::Namespace(ns) if role.kind == "Role" => Some(ns),
        _ => None,
    };
    let has_wildcard = proposed.iter().any(|p| {
        p.key.group == RBAC_GROUP
            && p.key.kind == role.kind
            && p.key.name == role.name
            && (role.kind != "Role" || Some(namespace_of(&p.key)) == namespace)
            && parse_rules(p.desired).iter().any(|rule| match rule {
                ParsedRule::Rule(rule) => [
                    &rule.verbs,
                    &rule.resources,
                    &rule.api_groups,
                    &rule.non_resource_urls,
                ]
                .iter()
                .any(|list| list.iter().any(|v| v == ALL)),
                ParsedRule::Malformed(_) => false,
            })
    });
    if has_wildcard {
        " (role with wildcard rules)"
    } else {
        ""
    }
}

// ---------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------

/// Text for a terminal (the `rukpak-core plan` command): the revision, bundle and digest,
/// the command that approves it, then [`render_changes`].
pub fn render(deployment: &str, pending: &rukpak_api::PendingRevision) -> String {
    let mut out = format!(
        "BundleDeployment {deployment}: revision {} is waiting for approval\n  \
         bundle: {}\n  digest: {}\n\nTo approve it:\n  {}\n",
        pending.revision,
        pending.bundle,
        pending.digest,
        approve_command(deployment, &pending.digest),
    );
    out.push_str(&render_changes(pending));
    out
}

/// What a pending revision changes, for a terminal: the sections Added, Changed, Removed,
/// Permissions added and Refused, each after a blank line, leaving out empty ones ("No
/// changes" when all are empty).
pub fn render_changes(pending: &rukpak_api::PendingRevision) -> String {
    let sections: [(&str, &[String]); 5] = [
        ("Added", &pending.added),
        ("Changed", &pending.changed),
        ("Removed", &pending.removed),
        ("Permissions added", &pending.permissions_added),
        (
            "Refused by the API server (applying would fail)",
            &pending.refused,
        ),
    ];
    if sections.iter().all(|(_, items)| items.is_empty()) {
        return "\nNo changes\n".to_owned();
    }
    let mut out = String::new();
    for (title, items) in sections {
        if items.is_empty() {
            continue;
        }
        out.push_str(&format!("\n{title} ({}):\n", items.len()));
        for item in items {
            out.push_str(&format!("  - {item}\n"));
        }
    }
    out
}

/// The `kubectl patch` that approves a digest. The patch is built as JSON and quoted for a
/// POSIX shell, so that it stays a working command whatever the digest holds.
fn approve_command(deployment: &str, digest: &str) -> String {
    let patch = serde_json::json!({ "spec": { "approvedRevision": digest } }).to_string();
    format!(
        "kubectl patch bundledeployment {} --type merge -p {}",
        shell_quote(deployment),
        shell_quote(&patch)
    )
}

/// Single-quotes a word for a POSIX shell when it needs it.
fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:/@".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn key(group: &str, kind: &str, namespace: Option<&str>, name: &str) -> ObjectKey {
        ObjectKey {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            namespace: namespace.map(Into::into),
            name: name.into(),
        }
    }

    fn cluster_role(name: &str) -> ObjectKey {
        key(RBAC_GROUP, "ClusterRole", None, name)
    }

    fn role(namespace: &str, name: &str) -> ObjectKey {
        key(RBAC_GROUP, "Role", Some(namespace), name)
    }

    fn with_rules(rules: Value) -> Value {
        json!({ "rules": rules })
    }

    fn grants(key: &ObjectKey, desired: &Value, live: Option<&Value>) -> Vec<String> {
        permissions_added(&[Proposed {
            key: key.clone(),
            desired,
            live,
            differs: true,
        }])
    }

    #[test]
    fn objects_are_classified_and_sorted_cluster_scoped_first() {
        let deployment = key("apps", "Deployment", Some("ns"), "web");
        let config = key("", "ConfigMap", Some("a"), "settings");
        let namespace = key("", "Namespace", None, "ns");
        let steady = key("", "Service", Some("ns"), "web");
        let crd = key(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            None,
            "widgets.example.com",
        );
        let widget = key("example.com", "Widget", Some("ns"), "w");
        let object = json!({});
        let proposed = [
            Proposed {
                key: deployment.clone(),
                desired: &object,
                live: None,
                differs: true,
            },
            Proposed {
                key: config.clone(),
                desired: &object,
                live: None,
                differs: true,
            },
            Proposed {
                key: namespace.clone(),
                desired: &object,
                live: None,
                differs: true,
            },
            Proposed {
                key: steady.clone(),
                desired: &object,
                live: Some(&object),
                differs: false,
            },
            Proposed {
                key: crd.clone(),
                desired: &object,
                live: Some(&object),
                differs: true,
            },
            Proposed {
                key: widget.clone(),
                desired: &object,
                live: Some(&object),
                differs: true,
            },
        ];
        let mut old_widget = widget.clone();
        old_widget.version = "v1beta1".into();
        let previous = [
            old_widget,
            steady.clone(),
            key("", "Secret", Some("ns"), "old"),
            cluster_role("old"),
        ];
        let changes = changes(&proposed, &previous);
        assert_eq!(
            changes,
            Changes {
                added: vec![
                    "Namespace ns".into(),
                    "ConfigMap a/settings".into(),
                    "Deployment ns/web".into(),
                ],
                changed: vec![
                    "CustomResourceDefinition widgets.example.com".into(),
                    "Widget.example.com ns/w".into(),
                ],
                // A new version of the widget is not a removal.
                removed: vec!["ClusterRole old".into(), "Secret ns/old".into()],
                permissions_added: vec![],
            }
        );
    }

    #[test]
    fn a_new_cluster_role_with_wildcards_spells_them_out() {
        let key = cluster_role("god");
        let desired = with_rules(json!([
            { "apiGroups": ["*"], "resources": ["*"], "verbs": ["*"] },
            { "apiGroups": ["apps"], "resources": ["deployments", "replicasets"],
              "verbs": ["get", "delete", "create"] },
            { "apiGroups": [""], "resources": ["*"], "verbs": ["list"] },
        ]));
        assert_eq!(
            grants(&key, &desired, None),
            [
                "cluster-wide (ClusterRole god): ALL verbs on ALL resources in ALL API groups",
                "cluster-wide (ClusterRole god): create, delete, get on apps/deployments, \
                 apps/replicasets",
                "cluster-wide (ClusterRole god): list on ALL resources in the core API group",
            ]
        );
    }

    #[test]
    fn a_role_whose_verbs_grew_reports_only_the_new_verbs() {
        let key = role("etcd", "etcd-operator");
        let live = with_rules(json!([
            { "apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list"] },
        ]));
        let desired = with_rules(json!([
            { "apiGroups": ["apps"], "resources": ["deployments"],
              "verbs": ["get", "list", "create", "delete"] },
        ]));
        assert_eq!(
            grants(&key, &desired, Some(&live)),
            ["in namespace etcd (Role etcd-operator): create, delete on apps/deployments"]
        );
    }

    #[test]
    fn a_live_wildcard_rule_covers_a_desired_rule() {
        let key = cluster_role("x");
        let live = with_rules(json!([
            { "apiGroups": ["*"], "resources": ["*"], "verbs": ["*"] },
        ]));
        let desired = with_rules(json!([
            { "apiGroups": ["apps"], "resources": ["deployments", "deployments/scale"],
              "verbs": ["get", "patch"], "resourceNames": ["a"] },
            { "apiGroups": [""], "resources": ["secrets"], "verbs": ["*"] },
        ]));
        assert!(grants(&key, &desired, Some(&live)).is_empty());
        // Each dimension on its own: a `*/scale` live rule covers any scale subresource.
        let live = with_rules(json!([
            { "apiGroups": ["apps"], "resources": ["*/scale"], "verbs": ["update"] },
        ]));
        let desired = with_rules(json!([
            { "apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["update"] },
        ]));
        assert!(grants(&key, &desired, Some(&live)).is_empty());
    }

    #[test]
    fn resource_names_restrict_the_grant_and_unrestricted_live_rules_cover_them() {
        let key = role("etcd", "etcd-operator");
        let desired = with_rules(json!([
            { "apiGroups": [""], "resources": ["secrets"], "verbs": ["get"],
              "resourceNames": ["etcd-tls"] },
        ]));
        assert_eq!(
            grants(&key, &desired, None),
            ["in namespace etcd (Role etcd-operator): get on secrets named etcd-tls"]
        );
        let unrestricted = with_rules(json!([
            { "apiGroups": [""], "resources": ["secrets"], "verbs": ["get"] },
        ]));
        assert!(grants(&key, &desired, Some(&unrestricted)).is_empty());
        // Widening a named grant to every secret is a new permission.
        let other_name = with_rules(json!([
            { "apiGroups": [""], "resources": ["secrets"], "verbs": ["get"],
              "resourceNames": ["other"] },
        ]));
        assert_eq!(
            grants(&key, &unrestricted, Some(&desired)),
            ["in namespace etcd (Role etcd-operator): get on secrets"]
        );
        assert_eq!(
            grants(&key, &desired, Some(&other_name)),
            ["in namespace etcd (Role etcd-operator): get on secrets named etcd-tls"]
        );
    }

    #[test]
    fn non_resource_urls_are_granted_by_cluster_roles_only() {
        let desired = with_rules(json!([
            { "nonResourceURLs": ["/metrics"], "verbs": ["get"] },
        ]));
        assert_eq!(
            grants(&cluster_role("x"), &desired, None),
            ["cluster-wide (ClusterRole x): get on non-resource URL /metrics"]
        );
        let prefix = with_rules(json!([
            { "nonResourceURLs": ["/met*"], "verbs": ["get"] },
        ]));
        assert!(grants(&cluster_role("x"), &desired, Some(&prefix)).is_empty());
        // The API server ignores non-resource URLs in a Role.
        assert!(grants(&role("ns", "x"), &desired, None).is_empty());
        let all = with_rules(json!([
            { "nonResourceURLs": ["*"], "verbs": ["*"] },
        ]));
        assert_eq!(
            grants(&cluster_role("x"), &all, Some(&desired)),
            ["cluster-wide (ClusterRole x): ALL verbs on ALL non-resource URLs"]
        );
    }

    #[test]
    fn a_new_binding_to_cluster_admin_is_reported_and_marked() {
        let key = key(RBAC_GROUP, "ClusterRoleBinding", None, "op");
        let desired = json!({
            "roleRef": { "apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "cluster-admin" },
            "subjects": [ { "kind": "ServiceAccount", "namespace": "ns", "name": "op" } ],
        });
        assert_eq!(
            grants(&key, &desired, None),
            [
                "cluster-wide: binds ClusterRole cluster-admin to ServiceAccount ns/op \
                 (broad built-in role)"
            ]
        );
    }

    #[test]
    fn a_role_binding_reports_only_new_subjects_in_its_namespace() {
        let key = key(RBAC_GROUP, "RoleBinding", Some("x"), "viewers");
        let live = json!({
            "roleRef": { "kind": "ClusterRole", "name": "view" },
            "subjects": [ { "kind": "Group", "name": "old" } ],
        });
        let desired = json!({
            "roleRef": { "kind": "ClusterRole", "name": "view" },
            "subjects": [
                { "kind": "Group", "name": "old" },
                { "kind": "Group", "name": "y" },
                { "kind": "ServiceAccount", "name": "sa" },
            ],
        });
        assert_eq!(
            grants(&key, &desired, Some(&live)),
            [
                "in namespace x: binds ClusterRole view to Group y",
                "in namespace x: binds ClusterRole view to ServiceAccount x/sa",
            ]
        );
        // A different role is granted to every subject, old ones included.
        let replaced = json!({
            "roleRef": { "kind": "ClusterRole", "name": "edit" },
            "subjects": [ { "kind": "Group", "name": "old" } ],
        });
        assert_eq!(
            grants(&key, &replaced, Some(&live)),
            ["in namespace x: binds ClusterRole edit to Group old (broad built-in role)"]
        );
    }

    #[test]
    fn an_unchanged_binding_grants_nothing() {
        let key = key(RBAC_GROUP, "ClusterRoleBinding", None, "op");
        let binding = json!({
            "roleRef": { "kind": "ClusterRole", "name": "cluster-admin" },
            "subjects": [ { "kind": "ServiceAccount", "namespace": "ns", "name": "op" } ],
        });
        // differs is true on purpose: only the content decides.
        assert!(grants(&key, &binding, Some(&binding)).is_empty());
    }

    #[test]
    fn a_binding_to_a_proposed_wildcard_role_is_marked_and_cluster_wide_lines_come_first() {
        let role_key = role("ns", "all");
        let role_obj = with_rules(json!([
            { "apiGroups": ["apps"], "resources": ["*"], "verbs": ["get"] },
        ]));
        let binding_key = key(RBAC_GROUP, "RoleBinding", Some("ns"), "all");
        let binding = json!({
            "roleRef": { "kind": "Role", "name": "all" },
            "subjects": [ { "kind": "User", "name": "alice" } ],
        });
        let crb_key = key(RBAC_GROUP, "ClusterRoleBinding", None, "z");
        let crb = json!({
            "roleRef": { "kind": "ClusterRole", "name": "view" },
            "subjects": [ { "kind": "User", "name": "bob" } ],
        });
        let proposed = [
            Proposed {
                key: role_key.clone(),
                desired: &role_obj,
                live: None,
                differs: true,
            },
            Proposed {
                key: binding_key.clone(),
                desired: &binding,
                live: None,
                differs: true,
            },
            Proposed {
                key: crb_key.clone(),
                desired: &crb,
                live: None,
                differs: true,
            },
        ];
        assert_eq!(
            permissions_added(&proposed),
            [
                "cluster-wide: binds ClusterRole view to User bob",
                "in namespace ns (Role all): get on ALL resources in API group apps",
                "in namespace ns: binds Role all to User alice (role with wildcard rules)",
            ]
        );
    }

    #[test]
    fn objects_the_engine_would_not_write_grant_nothing() {
        let key = cluster_role("x");
        let desired = with_rules(json!([
            { "apiGroups": [""], "resources": ["pods"], "verbs": ["get"] },
        ]));
        let live = with_rules(json!([]));
        let proposed = [Proposed {
            key: key.clone(),
            desired: &desired,
            live: Some(&live),
            differs: false,
        }];
        assert!(permissions_added(&proposed).is_empty());
    }

    #[test]
    fn aggregated_cluster_roles_report_their_selectors() {
        let key = cluster_role("monitoring");
        let desired = json!({
            "aggregationRule": { "clusterRoleSelectors": [
                { "matchLabels": { "rbac.example.com/aggregate-to-monitoring": "true" } },
                { "matchExpressions": [ { "key": "tier", "operator": "In",
                                          "values": ["a", "b"] } ] },
            ]},
            // Filled by the controller: not what the role grants.
            "rules": [ { "apiGroups": ["*"], "resources": ["*"], "verbs": ["*"] } ],
        });
        assert_eq!(
            grants(&key, &desired, None),
            [
                "cluster-wide (ClusterRole monitoring): aggregates ClusterRoles labelled \
                 rbac.example.com/aggregate-to-monitoring=true",
                "cluster-wide (ClusterRole monitoring): aggregates ClusterRoles labelled \
                 tier in (a, b)",
            ]
        );
        assert!(grants(&key, &desired, Some(&desired)).is_empty());
        let everything = json!({ "aggregationRule": { "clusterRoleSelectors": [ {} ] } });
        assert_eq!(
            grants(&key, &everything, Some(&desired)),
            ["cluster-wide (ClusterRole monitoring): aggregates ALL ClusterRoles"]
        );
    }

    #[test]
    fn malformed_rules_do_not_panic_and_wrong_types_are_reported_as_they_are() {
        let key = cluster_role("odd");
        let desired = with_rules(json!([
            "not a rule",
            { "apiGroups": [""], "resources": "pods", "verbs": ["get"] },
            { "apiGroups": [""], "resources": ["pods"], "verbs": ["get", 7] },
            // Missing fields: the API server would refuse it and it grants nothing.
            { "resources": ["pods"] },
            { "apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"] },
        ]));
        assert_eq!(
            grants(&key, &desired, None),
            [
                r#"cluster-wide (ClusterRole odd): list on configmaps"#,
                r#"cluster-wide (ClusterRole odd): unreadable rule "not a rule""#,
                r#"cluster-wide (ClusterRole odd): unreadable rule {"apiGroups":[""],"resources":"pods","verbs":["get"]}"#,
                r#"cluster-wide (ClusterRole odd): unreadable rule {"apiGroups":[""],"resources":["pods"],"verbs":["get",7]}"#,
            ]
        );
        let rules_not_a_list = with_rules(json!({ "verbs": ["*"] }));
        assert_eq!(
            grants(&key, &rules_not_a_list, None),
            [r#"cluster-wide (ClusterRole odd): unreadable rule {"verbs":["*"]}"#]
        );
        // A malformed live object covers nothing and does not panic either.
        let good = with_rules(json!([
            { "apiGroups": [""], "resources": ["pods"], "verbs": ["get"] },
        ]));
        let bad_live = json!({ "rules": 5 });
        assert_eq!(
            grants(&key, &good, Some(&bad_live)),
            ["cluster-wide (ClusterRole odd): get on pods"]
        );
        let binding_key = key_binding();
        let odd_binding = json!({
            "roleRef": { "kind": "ClusterRole", "name": "view" },
            "subjects": [ { "kind": "User" }, 3 ],
        });
        assert_eq!(
            grants(&binding_key, &odd_binding, None),
            [
                "cluster-wide: binds ClusterRole view to unreadable subject 3",
                r#"cluster-wide: binds ClusterRole view to unreadable subject {"kind":"User"}"#,
            ]
        );
        let no_role = json!({ "roleRef": "view", "subjects": [] });
        assert_eq!(
            grants(&binding_key, &no_role, None),
            [r#"cluster-wide: ClusterRoleBinding b has unreadable roleRef "view""#]
        );
        let not_a_rule = json!({ "aggregationRule": "all", "rules": [] });
        assert_eq!(
            grants(&key, &not_a_rule, None),
            [r#"cluster-wide (ClusterRole odd): unreadable aggregationRule "all""#]
        );
        assert!(grants(&key, &not_a_rule, Some(&not_a_rule)).is_empty());
        let odd_aggregation = json!({ "aggregationRule": { "clusterRoleSelectors": [
            { "matchLabels": { "a": 1 } },
        ]}});
        assert_eq!(
            grants(&key, &odd_aggregation, None),
            [
                r#"cluster-wide (ClusterRole odd): aggregates ClusterRoles matching {"matchLabels":{"a":1}}"#
            ]
        );
    }

    fn key_binding() -> ObjectKey {
        key(RBAC_GROUP, "ClusterRoleBinding", None, "b")
    }

    fn pending() -> rukpak_api::PendingRevision {
        rukpak_api::PendingRevision {
            revision: 3,
            bundle: "etcd-v2".into(),
            digest: "sha256:abc123".into(),
            added: vec!["ClusterRole etcd-operator".into()],
            changed: vec![],
            removed: vec!["Secret ns/old".into()],
            permissions_added: vec!["cluster-wide (ClusterRole etcd-operator): get on pods".into()],
            refused: vec![],
        }
    }

    #[test]
    fn render_shows_the_approve_command_and_only_non_empty_sections() {
        let text = render("etcd", &pending());
        assert!(text.contains("revision 3"), "{text}");
        assert!(text.contains("etcd-v2"), "{text}");
        assert!(
            text.contains(
                r#"kubectl patch bundledeployment etcd --type merge -p '{"spec":{"approvedRevision":"sha256:abc123"}}'"#
            ),
            "{text}"
        );
        assert!(
            text.contains("Added (1):\n  - ClusterRole etcd-operator\n"),
            "{text}"
        );
        assert!(text.contains("Removed (1):\n  - Secret ns/old\n"), "{text}");
        assert!(
            text.contains("Permissions added (1):\n  - cluster-wide (ClusterRole etcd-operator)"),
            "{text}"
        );
        assert!(!text.contains("Changed"), "{text}");
        assert!(!text.contains("Refused"), "{text}");
        assert!(!text.contains("No changes"), "{text}");
        // Sections come in a fixed order.
        let added = text.find("Added").unwrap();
        let removed = text.find("Removed").unwrap();
        let permissions = text.find("Permissions added").unwrap();
        assert!(added < removed && removed < permissions, "{text}");
    }

    #[test]
    fn render_says_no_changes_when_everything_is_empty() {
        let empty = rukpak_api::PendingRevision {
            added: vec![],
            removed: vec![],
            permissions_added: vec![],
            ..pending()
        };
        let text = render("etcd", &empty);
        assert!(text.contains("No changes"), "{text}");
        assert!(!text.contains("Added"), "{text}");
        assert!(text.contains("sha256:abc123"), "{text}");
        let refused = rukpak_api::PendingRevision {
            refused: vec!["Deployment ns/web: forbidden".into()],
            ..empty
        };
        let text = render("etcd", &refused);
        assert!(!text.contains("No changes"), "{text}");
        assert!(text.contains("Refused"), "{text}");
    }

    #[test]
    fn the_approve_command_survives_quotes_in_the_digest() {
        let command = approve_command("bd", "it's");
        assert_eq!(
            command,
            r#"kubectl patch bundledeployment bd --type merge -p '{"spec":{"approvedRevision":"it'\''s"}}'"#
        );
    }

    fn word() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(json!("*")),
            Just(json!("")),
            Just(json!("get")),
            Just(json!("list")),
            Just(json!("apps")),
            Just(json!("pods")),
            Just(json!("pods/log")),
            Just(json!("*/scale")),
            Just(json!("/metrics")),
            Just(json!("/api*")),
            Just(json!(7)),
        ]
    }

    fn field() -> impl Strategy<Value = Option<Value>> {
        prop_oneof![
            4 => prop::collection::vec(word(), 0..4).prop_map(|w| Some(Value::Array(w))),
            1 => Just(None),
            1 => Just(Some(Value::Null)),
            1 => Just(Some(json!("get"))),
        ]
    }

    fn rule() -> impl Strategy<Value = Value> {
        let fields = [
            "apiGroups",
            "resources",
            "verbs",
            "resourceNames",
            "nonResourceURLs",
        ];
        prop_oneof![
            9 => prop::collection::vec(field(), 5).prop_map(move |values| {
                let mut rule = Map::new();
                for (name, value) in fields.iter().zip(values) {
                    if let Some(value) = value {
                        rule.insert((*name).to_owned(), value);
                    }
                }
                Value::Object(rule)
            }),
            1 => Just(json!("not a rule")),
        ]
    }

    fn object() -> impl Strategy<Value = (ObjectKey, Value)> {
        let rules = || prop::collection::vec(rule(), 0..6);
        let subject = prop_oneof![
            Just(json!({ "kind": "User", "name": "a" })),
            Just(json!({ "kind": "ServiceAccount", "name": "sa" })),
            Just(json!({ "kind": "ServiceAccount", "namespace": "o", "name": "sa" })),
            Just(json!({ "kind": "Group" })),
        ];
        prop_oneof![
            rules().prop_map(|r| (cluster_role("r"), json!({ "rules": r }))),
            rules().prop_map(|r| (role("ns", "r"), json!({ "rules": r }))),
            prop::collection::vec(subject, 0..4).prop_map(|s| (
                key(RBAC_GROUP, "RoleBinding", Some("ns"), "b"),
                json!({ "roleRef": { "kind": "ClusterRole", "name": "admin" }, "subjects": s })
            )),
        ]
    }

    proptest! {
        #[test]
        fn nothing_is_added_when_live_equals_desired((key, object) in object()) {
            // differs: true so that only the content comparison can make this empty.
            let proposed = [Proposed { key, desired: &object, live: Some(&object),
                                       differs: true }];
            prop_assert!(permissions_added(&proposed).is_empty(), "{object}");
        }
    }
}
