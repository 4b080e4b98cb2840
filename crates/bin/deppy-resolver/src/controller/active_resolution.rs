//! The ActiveResolution controller: resolve `spec.constraints` against the served catalogs
//! and record `status.selections` and the `Resolved` condition.
//!
//! Only `selections`, `deprecations`, `observedGeneration` and the `Resolved` condition are
//! this controller's; `entities` and `Activated` belong to the activator. Each applies only
//! its own fields (`kit::status`), so neither overwrites the other's.
//! When a resolution fails, the previous selections stay: the condition says they are stale,
//! and the activator must not tear down an installation because a catalog went away.

use kube::runtime::WatchStreamExt;
use std::sync::Arc;

use deppy_api::conditions::{TYPE_RESOLVED, reasons};
use deppy_api::{ActiveResolution, ActiveResolutionStatus};
use futures::{Stream, StreamExt};
use kube::runtime::controller::{Action, Controller};
use kube::{Api, Resource, ResourceExt};
use tokio_util::sync::CancellationToken;

#[cfg(test)]
use kit::conditions::{ConditionUpdate, set_condition};
use kit::conditions::{Desired, status};
use kit::kube_error::KubeCallError;
use kit::retry::{Classify, Retry};

use super::{Context, error_chain};
use crate::{Constraint, NamedCatalog, Request, ResolveError, Resolver};

/// A failed ActiveResolution reconcile; always retried with backoff.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// Writing the status failed.
    #[error(transparent)]
    Kube(#[from] KubeCallError),
    /// The resolver failed on input it accepted: a bug.
    #[error("failed to resolve ActiveResolution {0}")]
    Resolve(String, #[source] ResolveError),
    /// The resolution task panicked or was cancelled.
    #[error("failed to run the resolution of ActiveResolution {0}")]
    Task(String, #[source] tokio::task::JoinError),
}

impl Classify for Error {
    fn retry(&self) -> Retry {
        Retry::Backoff
    }

    fn label(&self) -> &'static str {
        match self {
            Self::Kube(err) => err.label(),
            Self::Resolve(..) => "resolve",
            Self::Task(..) => "task",
        }
    }
}

/// Runs the controller until `shutdown`; every item of `catalogs_changed` resolves all
/// ActiveResolutions again.
pub(super) async fn run(
    ctx: Arc<Context>,
    resolutions: impl Stream<Item = Result<ActiveResolution, kube::runtime::watcher::Error>>
    + Send
    + 'static,
    store: kube::runtime::reflector::Store<ActiveResolution>,
    catalogs_changed: impl Stream<Item = ()> + Send + 'static,
    shutdown: CancellationToken,
) {
    let controller = Controller::for_stream(
        // Not on status writes (its own, and the activator's entities): spec changes and
        // catalog changes re-resolve.
        resolutions.predicate_filter(kit::watch::authored, Default::default()),
        store,
    )
    .trigger_backoff(kit::watch::WatchBackoff::default())
    .reconcile_all_on(catalogs_changed)
    .graceful_shutdown_on(shutdown.cancelled_owned());
    controller
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(err) = result {
                tracing::debug!(error = %error_chain(&err), "activeresolution reconcile request failed");
            }
        })
        .await;
}

fn error_policy(resolution: Arc<ActiveResolution>, error: &Error, ctx: Arc<Context>) -> Action {
    kit::controller::retry_after(
        &ctx.backoff,
        "ActiveResolution",
        &backoff_key(&resolution),
        error,
    )
}

/// The backoff key of an ActiveResolution: the Catalog controller shares the backoff, and
/// the two kinds' names may collide.
fn backoff_key(resolution: &ActiveResolution) -> String {
    format!("ar/{}", resolution.name_any())
}

async fn reconcile(resolution: Arc<ActiveResolution>, ctx: Arc<Context>) -> Result<Action, Error> {
    kit::controller::timed_and_reset(
        &ctx.metrics.reconcile,
        "activeresolution",
        &ctx.backoff,
        &backoff_key(&resolution),
        reconcile_resolution(&resolution, &ctx),
    )
    .await
}

/// The outcome of one resolution, before it becomes status.
enum Outcome {
    Resolved {
        selections: Vec<String>,
        deprecations: Vec<deppy_api::SelectionDeprecation>,
    },
    Failed {
        reason: &'static str,
        message: String,
    },
}

async fn reconcile_resolution(
    resolution: &ActiveResolution,
    ctx: &Context,
) -> Result<Action, Error> {
    let name = resolution.name_any();
    let outcome = resolve(resolution, ctx).await?;
    let current = resolution.status.clone().unwrap_or_default();
    let generation = resolution.meta().generation;
    let mut next = current.clone();
    next.observed_generation = generation;
    let (value, reason, message) = match outcome {
        Outcome::Resolved {
            selections,
            deprecations,
        } => {
            let message = format!("resolved {} bundles", selections.len());
            next.selections = selections;
            next.deprecations = deprecations;
            (status::TRUE, reasons::SUCCEEDED, message)
        }
        Outcome::Failed { reason, message } => (status::FALSE, reason, message),
    };
    kit::conditions::set_all(
        &mut next.conditions,
        [Desired::new(TYPE_RESOLVED, value, reason, message)],
        generation,
        &kit::conditions::now(),
    );
    if next != current {
        ctx.announce(
            &resolution.object_ref(&()),
            &current.conditions,
            &next.conditions,
        )
        .await;
        kit::status::apply(
            &Api::<ActiveResolution>::all(ctx.client.clone()),
            &name,
            super::FIELD_MANAGER,
            &own_fields(&next),
        )
        .await
        .map_err(|source| {
            KubeCallError::new(
                "update the status of",
                format!("ActiveResolution {name}"),
                source,
            )
        })?;
    }
    Ok(Action::await_change())
}

/// This controller's part of the status: everything but the activator's `entities` and
/// `Activated` condition. Pure.
fn own_fields(next: &ActiveResolutionStatus) -> ActiveResolutionStatus {
    ActiveResolutionStatus {
        entities: Vec::new(),
        conditions: next
            .conditions
            .iter()
            .filter(|c| c.type_ != deppy_api::conditions::TYPE_ACTIVATED)
            .cloned()
            .collect(),
        ..next.clone()
    }
}

/// Resolves the spec against the served catalogs.
async fn resolve(resolution: &ActiveResolution, ctx: &Context) -> Result<Outcome, Error> {
    let name = resolution.name_any();
    let constraints = match to_constraints(&resolution.spec.constraints) {
        Ok(constraints) => constraints,
        Err(message) => {
            return Ok(Outcome::Failed {
                reason: reasons::INVALID_SPEC,
                message,
            });
        }
    };
    let catalogs = ctx.catalogs.snapshot();
    let missing: Vec<&str> = resolution
        .spec
        .sources
        .iter()
        .filter(|source| !catalogs.iter().any(|(name, _)| name == *source))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        return Ok(Outcome::Failed {
            reason: reasons::SOURCE_UNAVAILABLE,
            message: format!(
                "catalog {} does not exist or is not serving",
                missing.join(", ")
            ),
        });
    }
    if catalogs.is_empty() {
        // Say so instead of "no operators found in package ...": the usual cause is a
        // Catalog that is still being unpacked, and the resolution is retried once one serves.
        return Ok(Outcome::Failed {
            reason: reasons::SOURCE_UNAVAILABLE,
            message: "no Catalog is serving yet; resolving once one is".to_owned(),
        });
    }
    let request = Request::new(constraints).with_sources(resolution.spec.sources.clone());
    let kube_version = ctx.kube_version();
    // Solving is CPU-bound and may take long on large catalogs: keep it off the runtime's
    // workers that drive the watches.
    let result = tokio::task::spawn_blocking(move || {
        let named = catalogs.iter().map(|(name, served)| {
            NamedCatalog::new(name, &served.index).with_priority(served.priority)
        });
        let resolver = Resolver::new(named)?.with_kube_version(kube_version);
        let resolved = resolver.resolve(&request)?;
        let deprecations = resolver.deprecations(&resolved);
        Ok((resolved, deprecations))
    })
    .await
    .map_err(|err| Error::Task(name.clone(), err))?;
    match result {
        Ok((resolved, deprecations)) => {
            ctx.metrics.observe("success", &resolved.stats);
            Ok(Outcome::Resolved {
                selections: resolved.selection_strings(),
                deprecations,
            })
        }
        Err(ResolveError::NotSatisfiable(unsatisfiable)) => {
            ctx.metrics.observe("not_satisfiable", &unsatisfiable.stats);
            Ok(Outcome::Failed {
                reason: reasons::CONSTRAINTS_NOT_SATISFIABLE,
                message: unsatisfiable.to_string(),
            })
        }
        Err(err @ ResolveError::UnknownSource { .. }) => Ok(Outcome::Failed {
            reason: reasons::SOURCE_UNAVAILABLE,
            message: error_chain(&err),
        }),
        Err(err) if err.category().is_invalid_input() => Ok(Outcome::Failed {
            reason: reasons::INVALID_SPEC,
            message: error_chain(&err),
        }),
        Err(err) => Err(Error::Resolve(name, err)),
    }
}

/// The library's constraints for the API's; the error is a message for the user.
fn to_constraints(constraints: &[deppy_api::Constraint]) -> Result<Vec<Constraint>, String> {
    constraints
        .iter()
        .enumerate()
        .map(|(i, constraint)| {
            to_constraint(constraint).map_err(|problem| format!("spec.constraints[{i}]: {problem}"))
        })
        .collect()
}

fn to_constraint(constraint: &deppy_api::Constraint) -> Result<Constraint, String> {
    if let Some(required) = &constraint.required {
        return Ok(Constraint::required(
            &required.name,
            required.version_range.as_deref(),
            required.channel.as_deref(),
        ));
    }
    if let Some(gvk) = &constraint.gvk_required {
        return Ok(Constraint::gvk_required(
            &gvk.group,
            &gvk.version,
            &gvk.kind,
        ));
    }
    if let Some(prohibited) = &constraint.prohibited {
        return Ok(Constraint::prohibited(
            &prohibited.name,
            prohibited.version_range.as_deref(),
        ));
    }
    if let Some(installed) = &constraint.installed {
        return Ok(Constraint::installed(&installed.name, &installed.version));
    }
    if let Some(expression) = &constraint.expression {
        return expression
            .parse::<Constraint>()
            .map_err(|err| error_chain(&err));
    }
    Err("sets none of required, gvkRequired, prohibited, installed or expression".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The status write of `reconcile_resolution`, seen through a mocked API server (no
    /// cluster): an Event for the changed condition, then one forced apply of this
    /// controller's fields of the status subresource.
    mod writes {
        use super::*;
        use serde_json::json;
        use testkit::mock_api::{self, Exchange};

        const STATUS: &str = "/apis/deppy.io/v1alpha1/activeresolutions/r/status?force=true&fieldManager=deppy-resolver";
        const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/default/events";

        fn resolution() -> ActiveResolution {
            serde_json::from_value(json!({
                "apiVersion": "deppy.io/v1alpha1",
                "kind": "ActiveResolution",
                "metadata": {"name": "r", "uid": "r-uid", "generation": 2},
                "spec": {"constraints": [{"required": {"name": "memcached-operator"}}]},
            }))
            .unwrap()
        }

        #[tokio::test]
        async fn a_new_condition_is_announced_then_applied_without_the_activators_fields() {
            let mut before = resolution();
            // The activator's part, which this controller must not write back.
            before.status = Some(
                serde_json::from_value(json!({
                    "entities": [{"package": "memcached-operator", "image": "i"}],
                }))
                .unwrap(),
            );
            let (client, server) = mock_api::serve([
                Exchange::post(EVENTS)
                    .body_includes(json!({
                        "type": "Warning",
                        "reason": "SourceUnavailable",
                        "regarding": {"kind": "ActiveResolution", "name": "r"},
                        "note": "Resolved: no Catalog is serving yet; resolving once one is",
                        "reportingController": "deppy-resolver",
                    }))
                    .reply_echo(),
                Exchange::patch(STATUS)
                    .body_includes(json!({
                        "apiVersion": "deppy.io/v1alpha1",
                        "kind": "ActiveResolution",
                        "status": {
                            "observedGeneration": 2,
                            "conditions": [{"type": "Resolved", "status": "False",
                                            "reason": "SourceUnavailable", "observedGeneration": 2}],
                        },
                    }))
                    .check_body(|body| {
                        assert_eq!(body["status"].get("entities"), None, "the activator's field");
                        assert_eq!(body.get("spec"), None, "only the status is applied");
                    })
                    .reply(&resolution()),
            ]);
            let ctx = Context::for_tests(client);
            let action = server
                .run(reconcile_resolution(&before, &ctx))
                .await
                .unwrap();
            assert_eq!(action, Action::await_change());
        }

        #[tokio::test]
        async fn an_unchanged_status_is_not_written() {
            let mut current = resolution();
            let mut status = ActiveResolutionStatus {
                observed_generation: Some(2),
                ..ActiveResolutionStatus::default()
            };
            set_condition(
                &mut status.conditions,
                ConditionUpdate {
                    type_: TYPE_RESOLVED,
                    status: status::FALSE,
                    reason: reasons::SOURCE_UNAVAILABLE,
                    message: "no Catalog is serving yet; resolving once one is",
                },
                Some(2),
                &kit::conditions::now(),
            );
            current.status = Some(status);
            let (client, server) = mock_api::serve([]);
            let ctx = Context::for_tests(client);
            server
                .run(reconcile_resolution(&current, &ctx))
                .await
                .unwrap();
        }

        #[tokio::test]
        async fn a_failed_write_fails_the_reconcile() {
            let (client, server) = mock_api::serve([
                Exchange::post(EVENTS).reply_echo(),
                Exchange::patch(STATUS).conflict(),
            ]);
            let ctx = Context::for_tests(client);
            let err = server
                .run(reconcile_resolution(&resolution(), &ctx))
                .await
                .unwrap_err();
            assert!(matches!(err, Error::Kube(_)), "{err:?}");
        }
    }

    #[test]
    fn only_this_controllers_fields_and_condition_are_written() {
        let condition = |type_: &str| {
            serde_json::from_value::<deppy_api::Condition>(serde_json::json!({
                "type": type_, "status": "True", "reason": "R", "message": "",
                "lastTransitionTime": "2026-11-25T00:00:00Z",
            }))
            .unwrap()
        };
        let status: ActiveResolutionStatus = serde_json::from_value(serde_json::json!({
            "selections": ["catalog:memcached-operator:0.2.0:stable"],
            "entities": [{"package": "memcached-operator", "image": "i"}],
            "observedGeneration": 3,
        }))
        .unwrap();
        let status = ActiveResolutionStatus {
            conditions: vec![
                condition(TYPE_RESOLVED),
                condition(deppy_api::conditions::TYPE_ACTIVATED),
            ],
            ..status
        };
        let own = own_fields(&status);
        assert_eq!(own.selections, status.selections);
        assert_eq!(own.observed_generation, Some(3));
        assert!(own.entities.is_empty());
        let types: Vec<&str> = own.conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, [TYPE_RESOLVED]);
    }

    #[test]
    fn structured_constraints_and_expressions_map_to_the_same_constraint() {
        let structured = deppy_api::Constraint {
            required: Some(deppy_api::PackageRequirement {
                name: "etcd".to_owned(),
                version_range: Some(">=0.9.0".to_owned()),
                channel: Some("stable".to_owned()),
            }),
            ..Default::default()
        };
        let expression = deppy_api::Constraint {
            expression: Some(r#"required("etcd", ">=0.9.0", "stable")"#.to_owned()),
            ..Default::default()
        };
        assert_eq!(
            to_constraints(&[structured]).unwrap(),
            to_constraints(&[expression]).unwrap()
        );
    }

    #[test]
    fn a_bad_expression_or_an_empty_constraint_is_reported_with_its_position() {
        let bad = deppy_api::Constraint {
            expression: Some("required(etcd".to_owned()),
            ..Default::default()
        };
        let message = to_constraints(&[deppy_api::Constraint::default(), bad]).unwrap_err();
        assert!(
            message.starts_with("spec.constraints[0]: sets none"),
            "{message}"
        );
        let message = to_constraints(&[deppy_api::Constraint {
            expression: Some("required(etcd".to_owned()),
            ..Default::default()
        }])
        .unwrap_err();
        assert!(message.starts_with("spec.constraints[0]: "), "{message}");
    }
}
