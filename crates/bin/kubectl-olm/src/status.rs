//! `status [<name>]`: what a PlatformOperator made, as a tree with the health of each
//! part: PlatformOperator → ActiveResolution → wrapper BundleDeployment → one
//! BundleDeployment per package (from the wrapper's inventory) → its workloads (from its
//! inventory, read live).

use std::fmt::Write as _;

use deppy_api::ActiveResolution;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams};
use kube::{Api, Client, ResourceExt};
use platform_api::PlatformOperator;
use rukpak_api::{BundleDeployment, InventoryEntry};
use serde::Serialize;

use crate::cluster::{Failure, NOT_FOUND, failure};

/// One part of what a PlatformOperator made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Node {
    /// Its kind.
    pub kind: String,
    /// `NAME` or `NAMESPACE/NAME`.
    pub name: String,
    /// Its state in a few words: the conditions that matter, or a workload's readiness;
    /// `not created yet` for a part that does not exist (yet).
    pub state: String,
    /// The message of the first condition that is not as it should be, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// What it made.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<Node>,
}

/// The trees of `name`, or of every PlatformOperator the user may list.
pub async fn status(client: Client, name: Option<&str>) -> Result<Vec<Node>, Failure> {
    let operators: Api<PlatformOperator> = Api::all(client.clone());
    let list = match name {
        Some(name) => vec![
            operators
                .get(name)
                .await
                .map_err(|err| failure(&format!("read PlatformOperator {name}"), err))?,
        ],
        None => {
            operators
                .list(&ListParams::default())
                .await
                .map_err(|err| failure("list PlatformOperators", err))?
                .items
        }
    };
    if list.is_empty() {
        return Err((NOT_FOUND, "the cluster has no PlatformOperator".to_owned()));
    }
    let mut trees = Vec::with_capacity(list.len());
    for operator in &list {
        trees.push(operator_tree(&client, operator).await?);
    }
    Ok(trees)
}

async fn operator_tree(client: &Client, operator: &PlatformOperator) -> Result<Node, Failure> {
    let name = operator.name_any();
    let conditions = operator
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    let resolution = Api::<ActiveResolution>::all(client.clone())
        .get_opt(&name)
        .await
        .map_err(|err| failure(&format!("read ActiveResolution {name}"), err))?;
    let resolution = match resolution {
        None => missing("ActiveResolution", &name),
        Some(resolution) => {
            let conditions = resolution
                .status
                .as_ref()
                .map(|s| s.conditions.clone())
                .unwrap_or_default();
            let wrapper_name = rukpak_api::names::bundle_deployment_name(&name);
            let wrapper = deployment_tree(client, &wrapper_name, true).await?;
            node(
                "ActiveResolution",
                &name,
                &conditions,
                &["Resolved", "Activated"],
                vec![wrapper],
            )
        }
    };
    Ok(node(
        "PlatformOperator",
        &name,
        &conditions,
        &["Installed", "Progressing"],
        vec![resolution],
    ))
}

/// A BundleDeployment with what its inventory holds: for the wrapper, its child
/// BundleDeployments; for a child, its workloads.
async fn deployment_tree(client: &Client, name: &str, wrapper: bool) -> Result<Node, Failure> {
    let deployment = Api::<BundleDeployment>::all(client.clone())
        .get_opt(name)
        .await
        .map_err(|err| failure(&format!("read BundleDeployment {name}"), err))?;
    let Some(deployment) = deployment else {
        return Ok(missing("BundleDeployment", name));
    };
    let status = deployment.status.clone().unwrap_or_default();
    let mut children = Vec::new();
    for entry in &status.inventory {
        if wrapper && entry.kind == "BundleDeployment" {
            children.push(Box::pin(deployment_tree(client, &entry.name, false)).await?);
        } else if !wrapper && is_workload(entry) {
            children.push(workload(client, entry).await?);
        }
    }
    let mut node = node(
        "BundleDeployment",
        name,
        &status.conditions,
        &["Installed", "Healthy"],
        children,
    );
    if let Some(bundle) = &status.active_bundle {
        let _ = write!(node.state, ", Bundle {bundle}");
    }
    Ok(node)
}

/// The kinds whose readiness `status` shows.
fn is_workload(entry: &InventoryEntry) -> bool {
    entry.group == "apps"
        && matches!(
            entry.kind.as_str(),
            "Deployment" | "StatefulSet" | "DaemonSet"
        )
}

/// A workload and how many of its replicas are ready, read live.
async fn workload(client: &Client, entry: &InventoryEntry) -> Result<Node, Failure> {
    let gvk = GroupVersionKind::gvk(&entry.group, &entry.version, &entry.kind);
    let resource = ApiResource::from_gvk(&gvk);
    let namespace = entry.namespace.clone().unwrap_or_default();
    let shown = format!("{namespace}/{}", entry.name);
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace, &resource);
    let live = api
        .get_opt(&entry.name)
        .await
        .map_err(|err| failure(&format!("read {} {shown}", entry.kind), err))?;
    let state = match live {
        None => "missing".to_owned(),
        Some(object) => readiness(&entry.kind, &object.data["status"]),
    };
    Ok(Node {
        kind: entry.kind.clone(),
        name: shown,
        state,
        problem: None,
        children: Vec::new(),
    })
}

/// `N/M ready` from a workload's status. Pure.
fn readiness(kind: &str, status: &serde_json::Value) -> String {
    let number = |key: &str| status[key].as_i64().unwrap_or(0);
    let (ready, wanted) = match kind {
        "DaemonSet" => (number("numberReady"), number("desiredNumberScheduled")),
        _ => (number("readyReplicas"), number("replicas")),
    };
    format!("{ready}/{wanted} ready")
}

/// A part that does not exist (yet).
fn missing(kind: &str, name: &str) -> Node {
    Node {
        kind: kind.to_owned(),
        name: name.to_owned(),
        state: "not created yet".to_owned(),
        problem: None,
        children: Vec::new(),
    }
}

/// A part with the conditions `shown` as `Type=Status` and the message of the first one
/// that is not True. Pure.
fn node(
    kind: &str,
    name: &str,
    conditions: &[Condition],
    shown: &[&str],
    children: Vec<Node>,
) -> Node {
    let mut parts = Vec::new();
    let mut problem = None;
    for type_ in shown {
        let condition = conditions.iter().find(|c| c.type_ == *type_);
        let status = condition.map_or("Unknown", |c| c.status.as_str());
        parts.push(format!("{type_}={status}"));
        // Progressing=True is a rollout under way, not a problem.
        let fine = status == "True" || (*type_ == "Progressing" && status == "False");
        if problem.is_none() && !fine {
            problem = condition
                .filter(|c| !c.message.is_empty())
                .map(|c| format!("{}: {}", c.reason, c.message));
        }
    }
    Node {
        kind: kind.to_owned(),
        name: name.to_owned(),
        state: parts.join(", "),
        problem,
        children,
    }
}

/// The trees as text, one line a part, indented under what made it. Pure.
pub fn tree_text(trees: &[Node]) -> String {
    let mut out = String::new();
    for tree in trees {
        write_node(&mut out, tree, "", "");
    }
    out
}

fn write_node(out: &mut String, node: &Node, first: &str, rest: &str) {
    let _ = writeln!(out, "{first}{} {}: {}", node.kind, node.name, node.state);
    if let Some(problem) = &node.problem {
        let _ = writeln!(out, "{rest}    {problem}");
    }
    for (i, child) in node.children.iter().enumerate() {
        let last = i + 1 == node.children.len();
        let (branch, indent) = if last {
            ("└─ ", "   ")
        } else {
            ("├─ ", "│  ")
        };
        write_node(
            out,
            child,
            &format!("{rest}{branch}"),
            &format!("{rest}{indent}"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readiness_reads_each_kind_its_own_way() {
        let deployment = serde_json::json!({"replicas": 2, "readyReplicas": 1});
        assert_eq!(readiness("Deployment", &deployment), "1/2 ready");
        let daemons = serde_json::json!({"desiredNumberScheduled": 3, "numberReady": 3});
        assert_eq!(readiness("DaemonSet", &daemons), "3/3 ready");
        assert_eq!(
            readiness("StatefulSet", &serde_json::Value::Null),
            "0/0 ready"
        );
    }

    #[test]
    fn the_tree_is_drawn_with_branches_and_the_first_problem_under_its_part() {
        let leaf = |name: &str| Node {
            kind: "Deployment".into(),
            name: name.into(),
            state: "1/1 ready".into(),
            problem: None,
            children: Vec::new(),
        };
        let tree = Node {
            kind: "BundleDeployment".into(),
            name: "package-a".into(),
            state: "Installed=True, Healthy=False".into(),
            problem: Some("Unhealthy: Deployment ns/b: 0 of 1 replicas available".into()),
            children: vec![leaf("ns/a"), leaf("ns/b")],
        };
        assert_eq!(
            tree_text(&[tree]),
            "BundleDeployment package-a: Installed=True, Healthy=False\n    \
             Unhealthy: Deployment ns/b: 0 of 1 replicas available\n\
             ├─ Deployment ns/a: 1/1 ready\n\
             └─ Deployment ns/b: 1/1 ready\n"
        );
    }
}
