//! `olm.constraint` and the dependency predicates a resolver evaluates over catalog bundles:
//! their types and how they are read. Evaluating them against a bundle is in `evaluate`.

use serde::Deserialize;
use serde_json::Value;

use crate::gvk::Gvk;
use crate::range::{PrereleasePolicy, RangeError, VersionRange};

/// A dependency predicate with its optional author-supplied failure message.
///
/// OLM evaluates dependencies as predicates over catalog bundles *before* solving and turns
/// the matching bundles into one solver dependency; [`Constraint::matches`] is that predicate.
/// Compound semantics follow OLM: `all` holds when every child holds (true when empty), `any`
/// when at least one does (false when empty), and `not` when *none* does.
#[derive(Debug, Clone, PartialEq)]
pub struct Constraint {
    /// `failureMessage`: what to tell the user when nothing satisfies the constraint.
    pub failure_message: Option<String>,
    /// The predicate.
    pub expr: ConstraintExpr,
}

/// The predicate of a [`Constraint`].
#[derive(Debug, Clone, PartialEq)]
pub enum ConstraintExpr {
    /// A bundle providing this API.
    Gvk(Gvk),
    /// A bundle of this package whose version is in the range.
    Package {
        /// The package.
        package_name: String,
        /// The acceptable versions (blang semantics).
        version_range: VersionRange,
    },
    /// Every child holds.
    All(Vec<Constraint>),
    /// At least one child holds.
    Any(Vec<Constraint>),
    /// No child holds.
    Not(Vec<Constraint>),
    /// A CEL rule. Kept so catalogs load, but not evaluated: [`Constraint::matches`] fails.
    Cel {
        /// The rule text.
        rule: String,
    },
    /// A constraint of a kind this crate does not know, kept verbatim. Like OLM, evaluating it
    /// is an error rather than a silent match or miss.
    Unknown(Value),
}

/// Why an `olm.constraint` value could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ConstraintParseError {
    /// The value (or a nested constraint) is not a JSON object.
    #[error("olm.constraint must be an object")]
    NotAnObject,
    /// More than one predicate key is set in one constraint.
    #[error("olm.constraint sets more than one of {keys:?}")]
    Ambiguous {
        /// The predicate keys found.
        keys: Vec<String>,
    },
    /// A predicate's body does not have the expected shape.
    #[error("olm.constraint {key} has an invalid value")]
    Shape {
        /// The predicate key.
        key: &'static str,
        /// The decoding failure.
        #[source]
        source: serde_json::Error,
    },
    /// A package predicate's version range is invalid.
    #[error("olm.constraint package range is invalid")]
    Range(#[source] RangeError),
    /// `failureMessage` is not a string.
    #[error("olm.constraint failureMessage must be a string")]
    FailureMessage,
}

const KEYS: [&str; 6] = ["gvk", "package", "all", "any", "not", "cel"];

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawPackage {
    package_name: String,
    version_range: String,
}

#[derive(Deserialize)]
struct RawCel {
    rule: String,
}

impl Constraint {
    /// Reads an `olm.constraint` value.
    pub fn from_value(value: &Value) -> Result<Self, ConstraintParseError> {
        let object = value.as_object().ok_or(ConstraintParseError::NotAnObject)?;
        let failure_message = match object.get("failureMessage") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(ConstraintParseError::FailureMessage),
        };
        let present: Vec<(&str, &Value)> = KEYS
            .into_iter()
            .filter_map(|k| object.get(k).filter(|v| !v.is_null()).map(|v| (k, v)))
            .collect();
        let expr = match present.as_slice() {
            [] => ConstraintExpr::Unknown(value.clone()),
            [(key, body)] => parse_expr(key, body)?,
            _ => {
                return Err(ConstraintParseError::Ambiguous {
                    keys: present.iter().map(|(k, _)| (*k).to_owned()).collect(),
                });
            }
        };
        Ok(Self {
            failure_message,
            expr,
        })
    }

    /// A constraint requiring a package in a range, as `olm.package.required` expresses it.
    pub fn package(package_name: impl Into<String>, version_range: VersionRange) -> Self {
        Self {
            failure_message: None,
            expr: ConstraintExpr::Package {
                package_name: package_name.into(),
                version_range,
            },
        }
    }

    /// A constraint requiring an API, as `olm.gvk.required` expresses it.
    pub fn gvk(gvk: Gvk) -> Self {
        Self {
            failure_message: None,
            expr: ConstraintExpr::Gvk(gvk),
        }
    }
}

fn parse_expr(key: &str, body: &Value) -> Result<ConstraintExpr, ConstraintParseError> {
    let shape = |key: &'static str| move |source| ConstraintParseError::Shape { key, source };
    Ok(match key {
        "gvk" => ConstraintExpr::Gvk(Gvk::deserialize(body).map_err(shape("gvk"))?),
        "package" => {
            let raw = RawPackage::deserialize(body).map_err(shape("package"))?;
            ConstraintExpr::Package {
                package_name: raw.package_name,
                version_range: VersionRange::parse(&raw.version_range, PrereleasePolicy::Ordered)
                    .map_err(ConstraintParseError::Range)?,
            }
        }
        "cel" => {
            let raw = RawCel::deserialize(body).map_err(shape("cel"))?;
            ConstraintExpr::Cel { rule: raw.rule }
        }
        compound => {
            let children = parse_children(compound, body)?;
            match compound {
                "all" => ConstraintExpr::All(children),
                "any" => ConstraintExpr::Any(children),
                _ => ConstraintExpr::Not(children),
            }
        }
    })
}

fn parse_children(key: &str, body: &Value) -> Result<Vec<Constraint>, ConstraintParseError> {
    let key: &'static str = match key {
        "all" => "all",
        "any" => "any",
        _ => "not",
    };
    #[derive(Deserialize)]
    struct Compound {
        #[serde(default)]
        constraints: Vec<Value>,
    }
    let compound = Compound::deserialize(body)
        .map_err(|source| ConstraintParseError::Shape { key, source })?;
    compound
        .constraints
        .iter()
        .map(Constraint::from_value)
        .collect()
}
