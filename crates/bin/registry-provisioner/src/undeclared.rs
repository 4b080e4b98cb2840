//! Fields Kubernetes does not declare, found and removed as OLM removes them.
//!
//! OLM v0 decodes a CSV's deployment specs into client-go's typed structs, so a field the
//! Kubernetes API does not have (`readinessProbe.resources`, a typo such as `porst`) is
//! silently lost and the Deployment installs. Server-side apply refuses any such field
//! ("field not declared in schema"), whatever the field-validation mode, so passing the spec
//! through as written makes the install fail. Here the spec is decoded into k8s-openapi's
//! types (the Kubernetes version the workspace is built for), written back, and every field
//! of the input the round trip lost is removed from the input itself and reported; the
//! rest of the input is kept as written (values are not normalised).

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// One step of a path into a JSON document.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// A field the type does not declare: where (`template.spec.containers[0].porst`, relative
/// to the decoded value) and its path for removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undeclared {
    /// The field's path, as kubectl explains fields.
    pub path: String,
    steps: Vec<Step>,
}

/// Keys whose members are resource quantities: Kubernetes reads a number there as a
/// quantity, k8s-openapi reads only strings, so numbers are made strings before decoding.
const QUANTITY_MAPS: &[&str] = &["limits", "requests", "overhead", "hard", "capacity"];
/// Keys whose value is one quantity.
const QUANTITY_KEYS: &[&str] = &["sizeLimit"];

/// The fields of `value` that `T` does not declare, in document order. `Err` when `value`
/// does not decode as `T` at all (a value of the wrong type): then nothing can be said
/// about its fields, and the API server will judge it.
pub fn find<T: DeserializeOwned + Serialize>(value: &Value) -> Result<Vec<Undeclared>, String> {
    let mut decodable = value.clone();
    quantities_as_strings(&mut decodable, false);
    let typed: T = serde_json::from_value(decodable).map_err(|err| err.to_string())?;
    let written = serde_json::to_value(&typed).map_err(|err| err.to_string())?;
    let mut found = Vec::new();
    compare(value, &written, &mut Vec::new(), &mut found);
    Ok(found)
}

/// Removes the fields `T` does not declare from `value`; what was removed, in document order.
/// A value that does not decode as `T` is left as it is.
pub fn remove<T: DeserializeOwned + Serialize>(value: &mut Value) -> Vec<Undeclared> {
    let Ok(found) = find::<T>(value) else {
        return Vec::new();
    };
    for field in &found {
        remove_at(value, &field.steps);
    }
    found
}

/// Records every non-null member of `input` that `written` lacks, descending where both have
/// the same shape. Nulls are skipped: a declared field set to null is also absent from the
/// round trip, and a null sets nothing.
fn compare(input: &Value, written: &Value, steps: &mut Vec<Step>, found: &mut Vec<Undeclared>) {
    match (input, written) {
        (Value::Object(input), Value::Object(written)) => {
            for (key, member) in input {
                if member.is_null() {
                    continue;
                }
                steps.push(Step::Key(key.clone()));
                match written.get(key) {
                    Some(kept) => compare(member, kept, steps, found),
                    None => found.push(Undeclared {
                        path: path_text(steps),
                        steps: steps.clone(),
                    }),
                }
                steps.pop();
            }
        }
        (Value::Array(input), Value::Array(written)) => {
            for (index, (member, kept)) in input.iter().zip(written).enumerate() {
                steps.push(Step::Index(index));
                compare(member, kept, steps, found);
                steps.pop();
            }
        }
        _ => {}
    }
}

fn path_text(steps: &[Step]) -> String {
    let mut text = String::new();
    for step in steps {
        match step {
            Step::Key(key) => {
                if !text.is_empty() {
                    text.push('.');
                }
                text.push_str(key);
            }
            Step::Index(index) => text.push_str(&format!("[{index}]")),
        }
    }
    text
}

fn remove_at(value: &mut Value, steps: &[Step]) {
    let Some((last, parents)) = steps.split_last() else {
        return;
    };
    let mut current = value;
    for step in parents {
        let next = match (step, current) {
            (Step::Key(key), Value::Object(map)) => map.get_mut(key),
            (Step::Index(index), Value::Array(items)) => items.get_mut(*index),
            _ => None,
        };
        let Some(next) = next else {
            return;
        };
        current = next;
    }
    if let (Step::Key(key), Value::Object(map)) = (last, current) {
        map.remove(key);
    }
}

/// Makes numbers strings where Kubernetes expects a quantity (see [`QUANTITY_MAPS`]).
fn quantities_as_strings(value: &mut Value, in_quantity_map: bool) {
    match value {
        Value::Object(map) => {
            for (key, member) in map.iter_mut() {
                if (in_quantity_map || QUANTITY_KEYS.contains(&key.as_str()))
                    && let Value::Number(number) = member
                {
                    *member = Value::String(number.to_string());
                    continue;
                }
                let is_map = QUANTITY_MAPS.contains(&key.as_str()) && member.is_object();
                quantities_as_strings(member, is_map);
            }
        }
        Value::Array(items) => {
            for item in items {
                quantities_as_strings(item, false);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::DeploymentSpec;
    use serde_json::json;

    fn spec() -> Value {
        json!({
            "replicas": 1,
            "selector": {"matchLabels": {"app": "op"}},
            "metadata": {"labels": {"app": "op"}},
            "template": {
                "metadata": {"labels": {"app": "op"}},
                "containers": [{"name": "misplaced"}],
                "spec": {
                    "containers": [{
                        "name": "manager",
                        "image": "example.com/op:v1",
                        "ports": [{"containerPort": 9443, "porst": 1}],
                        "resources": {"limits": {"cpu": 1, "memory": "128Mi"}},
                        "readinessProbe": {
                            "httpGet": {"path": "/readyz", "port": 8081},
                            "resources": {"limits": {"cpu": "10m"}},
                        },
                        "env": null,
                    }],
                    "volumes": [{"name": "certs", "defaultMode": 420, "secret": {"secretName": "s", "defaultMode": 420}}],
                },
            },
        })
    }

    #[test]
    fn undeclared_fields_are_found_in_document_order() {
        let found = find::<DeploymentSpec>(&spec()).unwrap();
        let paths: Vec<&str> = found.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "metadata",
                "template.containers",
                "template.spec.containers[0].ports[0].porst",
                "template.spec.containers[0].readinessProbe.resources",
                "template.spec.volumes[0].defaultMode",
            ]
        );
    }

    #[test]
    fn removing_keeps_everything_declared_as_written() {
        let mut value = spec();
        let removed = remove::<DeploymentSpec>(&mut value);
        assert_eq!(removed.len(), 5);
        assert!(find::<DeploymentSpec>(&value).unwrap().is_empty());
        let container = &value["template"]["spec"]["containers"][0];
        // A numeric quantity stays a number: only undeclared fields are touched.
        assert_eq!(container["resources"]["limits"]["cpu"], json!(1));
        assert_eq!(container["ports"][0], json!({"containerPort": 9443}));
        assert_eq!(container["env"], Value::Null);
        assert_eq!(
            value["template"]["spec"]["volumes"][0]["secret"]["defaultMode"],
            420
        );
        assert_eq!(
            value["template"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["metadata", "spec"]
        );
    }

    #[test]
    fn a_spec_of_the_wrong_type_is_left_for_the_api_server() {
        let mut value =
            json!({"replicas": "two", "template": {"spec": {"containers": [], "porst": 1}}});
        assert!(find::<DeploymentSpec>(&value).is_err());
        let before = value.clone();
        assert!(remove::<DeploymentSpec>(&mut value).is_empty());
        assert_eq!(value, before);
    }
}
