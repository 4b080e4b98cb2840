//! Rule 2 of [`super`]: the spec's required fields and values (names, scope, versions,
//! printer columns, scale paths, conversion), checked on the typed v1 CRD.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as api;

use super::{Checked, V1_NAME, refuse};
use crate::crd::{API_APPROVED_ANNOTATION, is_protected_group};

/// An RFC 1035 label, as the API server checks names and versions.
fn is_dns_label(value: &str) -> bool {
    value.len() <= 63
        && value.starts_with(|c: char| c.is_ascii_lowercase())
        && value.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// An RFC 1123 subdomain, as the API server checks groups.
fn is_dns_subdomain(value: &str) -> bool {
    value.len() <= 253
        && value.split('.').all(|label| {
            label.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                && label.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
}

const LABEL_RULE: &str =
    "lowercase letters, digits and '-', starting with a letter, at most 63 characters";

pub(super) fn check_spec(
    name: &str,
    approval: Option<&str>,
    spec: &api::CustomResourceDefinitionSpec,
) -> Checked {
    let group = spec.group.as_str();
    if group.is_empty() {
        return refuse(
            "spec.group",
            "is required (the API group of the resources, such as example.com)",
        );
    }
    if !is_dns_subdomain(group) {
        return refuse(
            "spec.group",
            format!("{group:?} is not a lowercase DNS subdomain (such as example.com)"),
        );
    }
    if !group.contains('.') {
        return refuse(
            "spec.group",
            format!("{group:?} must be a domain with at least one dot (such as example.com)"),
        );
    }
    check_names(&spec.names)?;
    match spec.scope.as_str() {
        "Namespaced" | "Cluster" => {}
        "" => return refuse("spec.scope", "is required (Namespaced or Cluster)"),
        other => {
            return refuse(
                "spec.scope",
                format!("{other:?} is not one of Namespaced and Cluster"),
            );
        }
    }
    let expected = format!("{}.{group}", spec.names.plural);
    if name != expected {
        return refuse(
            "metadata.name",
            format!("{name:?} must be spec.names.plural + \".\" + spec.group, here {expected:?}"),
        );
    }
    if is_protected_group(group) && approval.is_none_or(str::is_empty) {
        return refuse(
            format!("metadata.annotations[{API_APPROVED_ANNOTATION}]"),
            "is required for a CRD of a group the Kubernetes project owns (*.k8s.io, *.kubernetes.io): the URL of the pull request approving the API, or a value starting with \"unapproved\"",
        );
    }
    if spec.preserve_unknown_fields == Some(true) {
        return refuse(
            "spec.preserveUnknownFields",
            format!(
                "cannot be true in {V1_NAME} (set x-kubernetes-preserve-unknown-fields: true in the schemas that keep unknown fields instead)"
            ),
        );
    }
    check_versions(&spec.versions)?;
    check_conversion(spec.conversion.as_ref())
}

fn check_names(names: &api::CustomResourceDefinitionNames) -> Checked {
    if names.plural.is_empty() {
        return refuse(
            "spec.names.plural",
            "is required (the resource name in URLs, such as widgets)",
        );
    }
    if !is_dns_label(&names.plural) {
        return refuse(
            "spec.names.plural",
            format!("{:?} must be a DNS label ({LABEL_RULE})", names.plural),
        );
    }
    if let Some(singular) = names.singular.as_deref()
        && !singular.is_empty()
        && !is_dns_label(singular)
    {
        return refuse(
            "spec.names.singular",
            format!("{singular:?} must be a DNS label ({LABEL_RULE})"),
        );
    }
    if names.kind.is_empty() {
        return refuse(
            "spec.names.kind",
            "is required (the kind of the resources, such as Widget)",
        );
    }
    if !is_dns_label(&names.kind.to_lowercase()) {
        return refuse(
            "spec.names.kind",
            format!(
                "{:?} may have mixed case but must otherwise be a DNS label ({LABEL_RULE})",
                names.kind
            ),
        );
    }
    if let Some(list_kind) = names.list_kind.as_deref()
        && !list_kind.is_empty()
    {
        if !is_dns_label(&list_kind.to_lowercase()) {
            return refuse(
                "spec.names.listKind",
                format!(
                    "{list_kind:?} may have mixed case but must otherwise be a DNS label ({LABEL_RULE})"
                ),
            );
        }
        if list_kind == names.kind {
            return refuse("spec.names.listKind", "must differ from spec.names.kind");
        }
    }
    for (field, values) in [
        ("shortNames", names.short_names.as_deref()),
        ("categories", names.categories.as_deref()),
    ] {
        for (index, value) in values.unwrap_or_default().iter().enumerate() {
            if !is_dns_label(value) {
                return refuse(
                    format!("spec.names.{field}[{index}]"),
                    format!("{value:?} must be a DNS label ({LABEL_RULE})"),
                );
            }
        }
    }
    Ok(())
}

fn check_versions(versions: &[api::CustomResourceDefinitionVersion]) -> Checked {
    if versions.is_empty() {
        return refuse("spec.versions", "must list at least one version");
    }
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (index, version) in versions.iter().enumerate() {
        let path = format!("spec.versions[{index}]");
        let name = version.name.as_str();
        if name.is_empty() {
            return refuse(format!("{path}.name"), "is required (such as v1)");
        }
        if !is_dns_label(name) {
            return refuse(
                format!("{path}.name"),
                format!("{name:?} must be a DNS label such as v1 or v1beta1 ({LABEL_RULE})"),
            );
        }
        if let Some(first) = seen.insert(name, index) {
            return refuse(
                format!("{path}.name"),
                format!(
                    "{name:?} is also the name of spec.versions[{first}]; version names must be unique"
                ),
            );
        }
        if version.deprecation_warning.is_some() && version.deprecated != Some(true) {
            return refuse(
                format!("{path}.deprecationWarning"),
                "can only be set on a version with deprecated: true",
            );
        }
        let has_schema = version
            .schema
            .as_ref()
            .is_some_and(|schema| schema.open_api_v3_schema.is_some());
        if !has_schema {
            return refuse(
                format!("{path}.schema.openAPIV3Schema"),
                format!(
                    "is required: {V1_NAME} needs a schema for every version (one accepting anything is {{type: object, x-kubernetes-preserve-unknown-fields: true}})"
                ),
            );
        }
        check_columns(version, &path)?;
        check_scale(version, &path)?;
        if let Some(fields) = &version.selectable_fields {
            for (field, selectable) in fields.iter().enumerate() {
                if selectable.json_path.is_empty() {
                    return refuse(
                        format!("{path}.selectableFields[{field}].jsonPath"),
                        "is required",
                    );
                }
            }
            let unique: BTreeSet<&str> = fields.iter().map(|f| f.json_path.as_str()).collect();
            if unique.len() > 8 {
                return refuse(
                    format!("{path}.selectableFields"),
                    format!("may list at most 8 fields, not {}", unique.len()),
                );
            }
        }
    }
    let storage = versions.iter().filter(|version| version.storage).count();
    if storage != 1 {
        return refuse(
            "spec.versions",
            format!("must have exactly one version with storage: true, not {storage}"),
        );
    }
    Ok(())
}

fn check_columns(version: &api::CustomResourceDefinitionVersion, path: &str) -> Checked {
    const TYPES: [&str; 5] = ["integer", "number", "string", "boolean", "date"];
    const FORMATS: [&str; 8] = [
        "int32",
        "int64",
        "float",
        "double",
        "byte",
        "date",
        "date-time",
        "password",
    ];
    for (index, column) in version
        .additional_printer_columns
        .iter()
        .flatten()
        .enumerate()
    {
        let path = format!("{path}.additionalPrinterColumns[{index}]");
        if column.name.is_empty() {
            return refuse(format!("{path}.name"), "is required");
        }
        if !TYPES.contains(&column.type_.as_str()) {
            let found = if column.type_.is_empty() {
                "is required".to_owned()
            } else {
                format!("{:?} is not allowed", column.type_)
            };
            return refuse(
                format!("{path}.type"),
                format!("{found}: it must be one of {}", TYPES.join(", ")),
            );
        }
        if let Some(format) = column.format.as_deref()
            && !format.is_empty()
            && !FORMATS.contains(&format)
        {
            return refuse(
                format!("{path}.format"),
                format!(
                    "{format:?} is not allowed: it must be one of {}",
                    FORMATS.join(", ")
                ),
            );
        }
        if column.json_path.is_empty() {
            return refuse(
                format!("{path}.jsonPath"),
                "is required (such as .status.phase)",
            );
        }
        if !column.json_path.starts_with('.') {
            return refuse(
                format!("{path}.jsonPath"),
                format!(
                    "{:?} must be a simple JSON path starting with .",
                    column.json_path
                ),
            );
        }
    }
    Ok(())
}

fn check_scale(version: &api::CustomResourceDefinitionVersion, path: &str) -> Checked {
    let Some(scale) = version
        .subresources
        .as_ref()
        .and_then(|subresources| subresources.scale.as_ref())
    else {
        return Ok(());
    };
    let path = format!("{path}.subresources.scale");
    for (field, value, under) in [
        ("specReplicasPath", &scale.spec_replicas_path, ".spec."),
        (
            "statusReplicasPath",
            &scale.status_replicas_path,
            ".status.",
        ),
    ] {
        if value.is_empty() {
            return refuse(format!("{path}.{field}"), "is required");
        }
        if !value.starts_with(under) {
            return refuse(
                format!("{path}.{field}"),
                format!("{value:?} must be a JSON path under {under}"),
            );
        }
    }
    if let Some(selector) = scale.label_selector_path.as_deref()
        && !selector.is_empty()
        && !selector.starts_with(".spec.")
        && !selector.starts_with(".status.")
    {
        return refuse(
            format!("{path}.labelSelectorPath"),
            format!("{selector:?} must be a JSON path under .spec. or .status."),
        );
    }
    Ok(())
}

fn check_conversion(conversion: Option<&api::CustomResourceConversion>) -> Checked {
    let Some(conversion) = conversion else {
        return Ok(());
    };
    let webhook = conversion.webhook.as_ref();
    match conversion.strategy.as_str() {
        "None" => {
            if webhook.is_some_and(|webhook| webhook.client_config.is_some()) {
                return refuse(
                    "spec.conversion.webhook.clientConfig",
                    "must not be set when the strategy is None",
                );
            }
            if webhook.is_some_and(|webhook| !webhook.conversion_review_versions.is_empty()) {
                return refuse(
                    "spec.conversion.webhook.conversionReviewVersions",
                    "must not be set when the strategy is None",
                );
            }
            Ok(())
        }
        "Webhook" => {
            let Some(webhook) = webhook else {
                return refuse(
                    "spec.conversion.webhook",
                    "is required when the strategy is Webhook (clientConfig and conversionReviewVersions)",
                );
            };
            let Some(client) = &webhook.client_config else {
                return refuse(
                    "spec.conversion.webhook.clientConfig",
                    "is required when the strategy is Webhook",
                );
            };
            check_client_config(client)?;
            check_review_versions(&webhook.conversion_review_versions)
        }
        "" => refuse("spec.conversion.strategy", "is required (None or Webhook)"),
        other => refuse(
            "spec.conversion.strategy",
            format!("{other:?} is not one of None and Webhook"),
        ),
    }
}

fn check_client_config(client: &api::WebhookClientConfig) -> Checked {
    const PATH: &str = "spec.conversion.webhook.clientConfig";
    match (&client.url, &client.service) {
        (Some(_), Some(_)) | (None, None) => {
            refuse(PATH, "must set exactly one of url and service")
        }
        (Some(url), None) => {
            let https = url
                .get(..8)
                .is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://"));
            if https {
                Ok(())
            } else {
                refuse(
                    format!("{PATH}.url"),
                    format!("{url:?} must be an https:// URL"),
                )
            }
        }
        (None, Some(service)) => {
            if service.name.is_empty() {
                return refuse(format!("{PATH}.service.name"), "is required");
            }
            if service.namespace.is_empty() {
                return refuse(format!("{PATH}.service.namespace"), "is required");
            }
            if let Some(path) = service.path.as_deref()
                && !path.is_empty()
                && !path.starts_with('/')
            {
                return refuse(
                    format!("{PATH}.service.path"),
                    format!("{path:?} must start with /"),
                );
            }
            if let Some(port) = service.port
                && !(1..=65535).contains(&port)
            {
                return refuse(
                    format!("{PATH}.service.port"),
                    format!("{port} is not a port number (1 to 65535)"),
                );
            }
            Ok(())
        }
    }
}

fn check_review_versions(versions: &[String]) -> Checked {
    const PATH: &str = "spec.conversion.webhook.conversionReviewVersions";
    if versions.is_empty() {
        return refuse(
            PATH,
            "is required when the strategy is Webhook (such as [v1])",
        );
    }
    let mut seen = BTreeSet::new();
    for (index, version) in versions.iter().enumerate() {
        if !seen.insert(version.as_str()) {
            return refuse(
                format!("{PATH}[{index}]"),
                format!("{version:?} is listed twice"),
            );
        }
        if !is_dns_label(version) {
            return refuse(
                format!("{PATH}[{index}]"),
                format!("{version:?} must be a DNS label such as v1"),
            );
        }
    }
    if !versions.iter().any(|v| v == "v1" || v == "v1beta1") {
        return refuse(
            PATH,
            "must include v1 or v1beta1 (the ConversionReview versions the API server sends)",
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::crd::validation::testing::*;

    #[test]
    fn required_fields_and_values_of_the_spec_are_checked() {
        type Edit = Box<dyn Fn(&mut Value)>;
        let cases: Vec<(&str, Edit, &str, &str)> = vec![
            (
                "group",
                Box::new(|c| remove(c, "/spec/group")),
                "spec.group",
                "is required (the API group of the resources, such as example.com)",
            ),
            (
                "group without a dot",
                Box::new(|c| c["spec"]["group"] = json!("example")),
                "spec.group",
                "\"example\" must be a domain with at least one dot (such as example.com)",
            ),
            (
                "plural",
                Box::new(|c| remove(c, "/spec/names/plural")),
                "spec.names.plural",
                "is required (the resource name in URLs, such as widgets)",
            ),
            (
                "kind",
                Box::new(|c| remove(c, "/spec/names/kind")),
                "spec.names.kind",
                "is required (the kind of the resources, such as Widget)",
            ),
            (
                "scope",
                Box::new(|c| remove(c, "/spec/scope")),
                "spec.scope",
                "is required (Namespaced or Cluster)",
            ),
            (
                "scope value",
                Box::new(|c| c["spec"]["scope"] = json!("Global")),
                "spec.scope",
                "\"Global\" is not one of Namespaced and Cluster",
            ),
            (
                "name",
                Box::new(|c| c["metadata"]["name"] = json!("widget.example.com")),
                "metadata.name",
                "\"widget.example.com\" must be spec.names.plural + \".\" + spec.group, here \"widgets.example.com\"",
            ),
            (
                "no versions",
                Box::new(|c| c["spec"]["versions"] = json!([])),
                "spec.versions",
                "must list at least one version",
            ),
            (
                "version name",
                Box::new(|c| remove(c, "/spec/versions/0/name")),
                "spec.versions[0].name",
                "is required (such as v1)",
            ),
            (
                "no storage",
                Box::new(|c| c["spec"]["versions"][0]["storage"] = json!(false)),
                "spec.versions",
                "must have exactly one version with storage: true, not 0",
            ),
            (
                "two storage",
                Box::new(|c| {
                    let mut second = c["spec"]["versions"][0].clone();
                    second["name"] = json!("v2");
                    c["spec"]["versions"].as_array_mut().unwrap().push(second);
                }),
                "spec.versions",
                "must have exactly one version with storage: true, not 2",
            ),
            (
                "unique names",
                Box::new(|c| {
                    let mut second = c["spec"]["versions"][0].clone();
                    second["storage"] = json!(false);
                    c["spec"]["versions"].as_array_mut().unwrap().push(second);
                }),
                "spec.versions[1].name",
                "\"v1\" is also the name of spec.versions[0]; version names must be unique",
            ),
            (
                "schema",
                Box::new(|c| remove(c, "/spec/versions/0/schema")),
                "spec.versions[0].schema.openAPIV3Schema",
                "is required: apiextensions.k8s.io/v1 needs a schema for every version (one accepting anything is {type: object, x-kubernetes-preserve-unknown-fields: true})",
            ),
            (
                "preserveUnknownFields",
                Box::new(|c| c["spec"]["preserveUnknownFields"] = json!(true)),
                "spec.preserveUnknownFields",
                "cannot be true in apiextensions.k8s.io/v1 (set x-kubernetes-preserve-unknown-fields: true in the schemas that keep unknown fields instead)",
            ),
            (
                "strategy",
                Box::new(|c| c["spec"]["conversion"] = json!({"strategy": "Auto"})),
                "spec.conversion.strategy",
                "\"Auto\" is not one of None and Webhook",
            ),
            (
                "webhook",
                Box::new(|c| c["spec"]["conversion"] = json!({"strategy": "Webhook"})),
                "spec.conversion.webhook",
                "is required when the strategy is Webhook (clientConfig and conversionReviewVersions)",
            ),
            (
                "client config",
                Box::new(
                    |c| c["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"]}}),
                ),
                "spec.conversion.webhook.clientConfig",
                "is required when the strategy is Webhook",
            ),
            (
                "review versions",
                Box::new(
                    |c| c["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://convert.example.com"}}}),
                ),
                "spec.conversion.webhook.conversionReviewVersions",
                "is required when the strategy is Webhook (such as [v1])",
            ),
            (
                "webhook with None",
                Box::new(
                    |c| c["spec"]["conversion"] = json!({"strategy": "None", "webhook": {"clientConfig": {"url": "https://convert.example.com"}}}),
                ),
                "spec.conversion.webhook.clientConfig",
                "must not be set when the strategy is None",
            ),
            (
                "column type",
                Box::new(|c| {
                    c["spec"]["versions"][0]["additionalPrinterColumns"][0]["type"] = json!("text")
                }),
                "spec.versions[0].additionalPrinterColumns[0].type",
                "\"text\" is not allowed: it must be one of integer, number, string, boolean, date",
            ),
            (
                "api approval",
                Box::new(|c| {
                    c["spec"]["group"] = json!("widgets.x.k8s.io");
                    c["metadata"]["name"] = json!("widgets.widgets.x.k8s.io");
                }),
                "metadata.annotations[api-approved.kubernetes.io]",
                "is required for a CRD of a group the Kubernetes project owns (*.k8s.io, *.kubernetes.io): the URL of the pull request approving the API, or a value starting with \"unapproved\"",
            ),
        ];
        for (case, edit, field, message) in cases {
            let mut crd = widget();
            edit(&mut crd);
            assert_eq!(
                refusal(&crd),
                (field.to_owned(), message.to_owned()),
                "{case}"
            );
        }
        let mut converted_webhook = widget();
        converted_webhook["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
            "conversionReviewVersions": ["v1beta1"],
            "clientConfig": {"service": {"namespace": "etcd", "name": "etcd-conversion", "path": "/convert"}},
        }});
        run(&converted_webhook).unwrap();
    }
}
