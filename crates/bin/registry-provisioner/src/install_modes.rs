//! Install namespace and target namespaces: defaults and validation against the CSV's
//! `spec.installModes`, following operator-controller's registry+v1 rules:
//!
//! - `[""]` (all namespaces) needs AllNamespaces;
//! - one namespace needs SingleNamespace, or OwnNamespace when it is the install namespace;
//! - several namespaces need MultiNamespace, may not include `""`, and need OwnNamespace when
//!   they include the install namespace.
//!
//! Messages follow upstream's, e.g. `supported install modes [AllNamespaces OwnNamespace] do
//! not support target namespaces [a b]`. A bundle with no default target (neither
//! AllNamespaces nor OwnNamespace) given none gets a message saying what to give and where
//! (see [`no_default_target`]).

use std::collections::BTreeSet;

use crate::bundle::Bundle;
use crate::error::ConvertError;

/// Install mode: the operator watches every namespace (target namespaces `[""]`).
pub const ALL_NAMESPACES: &str = "AllNamespaces";
/// Install mode: the operator watches only the namespace it is installed in.
pub const OWN_NAMESPACE: &str = "OwnNamespace";
/// Install mode: the operator watches one namespace other than its own.
pub const SINGLE_NAMESPACE: &str = "SingleNamespace";
/// Install mode: the operator watches several namespaces.
pub const MULTI_NAMESPACE: &str = "MultiNamespace";

/// CSV annotation suggesting an install namespace.
pub const SUGGESTED_NAMESPACE_ANNOTATION: &str = "operatorframework.io/suggested-namespace";

/// The longest namespace name.
const NAMESPACE_NAME_MAX: usize = 63;

/// Whether `name` can name a namespace: a DNS label (lowercase letters, digits and `-`,
/// starting and ending with a letter or digit) of at most 63 characters.
pub fn is_namespace_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= NAMESPACE_NAME_MAX
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
}

/// The install namespace: `explicit` when given, else the CSV's
/// `operatorframework.io/suggested-namespace` annotation, else `<package>-system` made a
/// valid namespace name (lowercased, other characters than letters, digits and `-` turned
/// into `-`, and shortened with a hash past 63 characters, so `redis.opstree` gets
/// `redis-opstree-system`). A suggested namespace that is not a valid name is refused (the
/// message says how to choose another), rather than failing later when it is created.
pub fn install_namespace(bundle: &Bundle, explicit: Option<&str>) -> Result<String, String> {
    if let Some(namespace) = explicit.filter(|ns| !ns.is_empty()) {
        return Ok(namespace.to_owned());
    }
    if let Some(suggested) = bundle
        .csv
        .metadata
        .annotations
        .get(SUGGESTED_NAMESPACE_ANNOTATION)
        .filter(|ns| !ns.is_empty())
    {
        if is_namespace_name(suggested) {
            return Ok(suggested.clone());
        }
        return Err(format!(
            "the install namespace {suggested:?} that the {SUGGESTED_NAMESPACE_ANNOTATION} annotation suggests is not a valid namespace name (at most {NAMESPACE_NAME_MAX} lowercase letters, digits and '-', starting and ending with a letter or digit): set spec.installNamespace on the BundleDeployment, or pass --install-namespace to render"
        ));
    }
    let base: String = format!("{}-system", bundle.package)
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '-'
            }
        })
        .collect();
    let base = base.trim_matches('-');
    Ok(rukpak_api::names::fit(base, NAMESPACE_NAME_MAX))
}

/// The supported install modes of the CSV, sorted.
pub fn supported_modes(bundle: &Bundle) -> BTreeSet<String> {
    bundle
        .csv
        .spec
        .install_modes
        .iter()
        .filter(|mode| mode.supported)
        .map(|mode| mode.mode.clone())
        .collect()
}

/// The target namespaces, sorted and deduplicated, after defaulting and validation against
/// the modes of `bundle`'s CSV.
///
/// With none requested the default is `[""]` (all namespaces) when AllNamespaces is
/// supported, else `[install_namespace]` when OwnNamespace is. `[""]` means all namespaces.
pub fn target_namespaces(
    bundle: &Bundle,
    install_namespace: &str,
    requested: &[String],
) -> Result<Vec<String>, ConvertError> {
    let supported = supported_modes(bundle);
    let mut targets: Vec<String> = requested.to_vec();
    if targets.is_empty() {
        if supported.contains(ALL_NAMESPACES) {
            targets.push(String::new());
        } else if supported.contains(OWN_NAMESPACE) {
            targets.push(install_namespace.to_owned());
        }
    }
    targets.sort();
    targets.dedup();
    validate(&supported, install_namespace, &targets).map_err(|message| {
        ConvertError::InstallMode {
            file: bundle.csv_file.clone(),
            name: bundle.csv.metadata.name.clone(),
            message,
        }
    })?;
    Ok(targets)
}

fn validate(
    supported: &BTreeSet<String>,
    install_namespace: &str,
    targets: &[String],
) -> Result<(), String> {
    let modes: Vec<&str> = supported.iter().map(String::as_str).collect();
    let modes = format!("[{}]", modes.join(" "));
    let fail = |message: String| Err(message);
    match targets {
        [] => {
            if supported.contains(ALL_NAMESPACES) {
                return Ok(());
            }
            return fail(no_default_target(supported, &modes, install_namespace));
        }
        [only] if only.is_empty() => {
            if supported.contains(ALL_NAMESPACES) {
                return Ok(());
            }
            return fail(format!(
                "supported install modes {modes} do not support targeting all namespaces"
            ));
        }
        [only] => {
            // As upstream: SingleNamespace accepts any one namespace, the install namespace
            // included; OwnNamespace accepts only the install namespace.
            if supported.contains(SINGLE_NAMESPACE)
                || (supported.contains(OWN_NAMESPACE) && only == install_namespace)
            {
                return Ok(());
            }
        }
        several => {
            let has_all = several.iter().any(String::is_empty);
            let has_own = several.iter().any(|ns| ns == install_namespace);
            if has_own && !supported.contains(OWN_NAMESPACE) {
                return fail(format!(
                    "supported install modes {modes} do not support targeting own namespace"
                ));
            }
            if supported.contains(MULTI_NAMESPACE) && !has_all {
                return Ok(());
            }
        }
    }
    fail(format!(
        "supported install modes {modes} do not support target namespaces [{}]",
        targets.join(" ")
    ))
}

/// The message for a bundle given no target namespaces whose modes offer no default (neither
/// AllNamespaces nor OwnNamespace): what it needs, and where to give it.
fn no_default_target(supported: &BTreeSet<String>, modes: &str, install_namespace: &str) -> String {
    let single = supported.contains(SINGLE_NAMESPACE);
    let multi = supported.contains(MULTI_NAMESPACE);
    let (needs, example_list, example_flag) = match (single, multi) {
        (true, false) => ("exactly one namespace to watch", "[\"team-a\"]", "team-a"),
        (true, true) => (
            "one or more namespaces to watch",
            "[\"team-a\", \"team-b\"]",
            "team-a,team-b",
        ),
        (false, true) => (
            "two or more namespaces to watch",
            "[\"team-a\", \"team-b\"]",
            "team-a,team-b",
        ),
        (false, false) => {
            return format!(
                "supported install modes {modes}: the ClusterServiceVersion marks no install mode \
                 as supported in spec.installModes, so it cannot be installed for any target \
                 namespaces"
            );
        }
    };
    let own = if multi {
        format!(", not including its install namespace {install_namespace:?}")
    } else {
        String::new()
    };
    let them = if single && !multi { "it" } else { "them" };
    format!(
        "supported install modes {modes} have no default target namespace: this operator needs \
         {needs}{own}; set {them} in the BundleDeployment's spec.config.targetNamespaces \
         (for example {example_list}), or pass --target-namespaces {example_flag} to render"
    )
}
