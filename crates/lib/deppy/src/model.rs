//! The problem model of deppy v0.3.0: identified variables carrying constraints.

use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;

/// Names one [`Variable`] uniquely within the input of a single solve.
///
/// Backed by a shared string so that the many references to one variable in dependency and
/// cardinality lists (an OLM catalog lists every version of a package again for each dependent)
/// cost a pointer each rather than a copy of the name.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Identifier(Arc<str>);

impl Identifier {
    /// Creates an identifier from any string-like value.
    pub fn new(id: impl AsRef<str>) -> Self {
        Self(Arc::from(id.as_ref()))
    }

    /// Returns the identifier as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Identifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Identifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl From<&str> for Identifier {
    fn from(id: &str) -> Self {
        Self(Arc::from(id))
    }
}

impl From<String> for Identifier {
    fn from(id: String) -> Self {
        Self(Arc::from(id))
    }
}

impl From<&String> for Identifier {
    fn from(id: &String) -> Self {
        Self(Arc::from(id.as_str()))
    }
}

impl From<&Identifier> for Identifier {
    fn from(id: &Identifier) -> Self {
        id.clone()
    }
}

impl AsRef<str> for Identifier {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Identifier {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for Identifier {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for Identifier {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

/// A list of identifiers that several constraints may share.
///
/// Cloning is a reference-count increment, so a caller that builds one candidate list per
/// package and hands it to every dependent keeps a single copy (and the solver resolves it
/// once).
pub type Identifiers = Arc<[Identifier]>;

/// Collects identifiers into a shareable [`Identifiers`] list.
pub fn identifiers<I>(ids: I) -> Identifiers
where
    I: IntoIterator,
    I::Item: Into<Identifier>,
{
    ids.into_iter().map(Into::into).collect()
}

/// Limits the circumstances under which the variable that carries it can be selected.
///
/// These are the constraints of deppy v0.3.0 (`pkg/deppy/constraint`). Each one, applied to its
/// variable, is switched on and off by one solver literal, which is how an unsatisfiable
/// problem is explained in terms of the constraints that caused it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Constraint {
    /// The variable must be selected. Mandatory variables also seed the preference search.
    Mandatory,
    /// The variable must not be selected (deppy's `Prohibited`, alias `Not`).
    Prohibited,
    /// If the variable is selected, at least one of the listed variables must be too.
    ///
    /// Earlier entries are preferred over later ones. An empty list prohibits the variable.
    Dependency(Identifiers),
    /// The variable and the named one are never selected together.
    Conflict(Identifier),
    /// At most `n` of the listed variables are selected, whether or not the carrying variable
    /// is: the carrier only labels the rule.
    AtMost {
        /// The largest number of listed variables that may be selected.
        n: usize,
        /// The variables counted; one listed twice counts twice.
        ids: Identifiers,
    },
    /// `subject ∨ operand`, either side optionally negated (used by deppy's dimacs front end).
    Or {
        /// The other side of the disjunction.
        operand: Identifier,
        /// Whether the carrying variable appears negated.
        subject_negated: bool,
        /// Whether the operand appears negated.
        operand_negated: bool,
    },
    /// Another constraint with a caller-written explanation, like deppy's
    /// `NewUserFriendlyConstraint`: the logic is the inner constraint's, the message replaces
    /// the generated one.
    Described {
        /// The constraint whose logic applies.
        constraint: Box<Constraint>,
        /// What is shown when this constraint explains a failure.
        message: Description,
    },
}

/// The explanation a [`Constraint::Described`] gives.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Description {
    /// A complete message.
    Text(String),
    /// `{lead}{subject}{rest}`, the subject being the carrying variable: one `rest` is shared
    /// by every variable with the same constraint (a bundle dependency reads the same for
    /// every bundle that has it), instead of a message per variable that is only read when
    /// a resolution fails.
    AboutSubject {
        /// What comes before the subject, e.g. `"bundle "`.
        lead: &'static str,
        /// What comes after it, e.g. `" requires an operator in package foo"`.
        rest: Arc<str>,
    },
    /// `{before}{list}{after}`, `list` being the identifiers the constraint refers to, as
    /// [`list`] writes them. A uniqueness rule names every candidate of its package or API;
    /// writing that list out for every rule, when only an explanation reads it, was most of
    /// the cost of the rule's message.
    Listing {
        /// What comes before the list, e.g. `"there can be only one operator from package
        /// foo: "`.
        before: String,
        /// What joins the last two identifiers, e.g. `" and "`.
        conjunction: &'static str,
        /// What comes after the list, e.g. `" originate from package foo"`.
        after: String,
    },
}

impl Description {
    /// The message for the variable `subject`, whose constraint refers to `references`.
    pub fn render(&self, subject: &Identifier, references: &[Identifier]) -> String {
        match self {
            Self::Text(message) => message.clone(),
            Self::AboutSubject { lead, rest } => format!("{lead}{subject}{rest}"),
            Self::Listing {
                before,
                conjunction,
                after,
            } => format!("{before}{}{after}", list(references, conjunction)),
        }
    }
}

/// `a`, `a{conjunction}b`, `a, b{conjunction}c`: the way OLM lists alternatives (`" or "`) and
/// members (`" and "`).
pub fn list<S: AsRef<str>>(items: &[S], conjunction: &str) -> String {
    let mut out = String::new();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(if i + 1 == items.len() {
                conjunction
            } else {
                ", "
            });
        }
        out.push_str(item.as_ref());
    }
    out
}

impl From<String> for Description {
    fn from(message: String) -> Self {
        Self::Text(message)
    }
}

impl From<&str> for Description {
    fn from(message: &str) -> Self {
        Self::Text(message.to_owned())
    }
}

impl Constraint {
    /// A [`Constraint::Dependency`] on the given candidates, most preferred first.
    pub fn dependency<I>(ids: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<Identifier>,
    {
        Self::Dependency(identifiers(ids))
    }

    /// A [`Constraint::Conflict`] with the given variable.
    pub fn conflict(id: impl Into<Identifier>) -> Self {
        Self::Conflict(id.into())
    }

    /// A [`Constraint::AtMost`] over the given variables.
    pub fn at_most<I>(n: usize, ids: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<Identifier>,
    {
        Self::AtMost {
            n,
            ids: identifiers(ids),
        }
    }

    /// A [`Constraint::Or`] between the carrying variable and `operand`.
    pub fn or(
        operand: impl Into<Identifier>,
        subject_negated: bool,
        operand_negated: bool,
    ) -> Self {
        Self::Or {
            operand: operand.into(),
            subject_negated,
            operand_negated,
        }
    }

    /// Wraps this constraint so that it explains a failure with `message` instead.
    pub fn described(self, message: impl Into<Description>) -> Self {
        Self::Described {
            constraint: Box::new(self),
            message: message.into(),
        }
    }

    /// The constraint whose logic applies, looking through [`Constraint::Described`].
    pub fn logic(&self) -> &Constraint {
        let mut constraint = self;
        while let Self::Described {
            constraint: inner, ..
        } = constraint
        {
            constraint = inner;
        }
        constraint
    }

    /// Whether this constraint seeds the preference search (deppy's `Anchor()`).
    pub fn is_anchor(&self) -> bool {
        matches!(self.logic(), Self::Mandatory)
    }

    /// The preference-ordered candidates that the search explores when the carrying variable
    /// is chosen (deppy's `Order()`); empty for everything but a dependency.
    pub fn order(&self) -> &[Identifier] {
        match self.logic() {
            Self::Dependency(ids) => ids,
            _ => &[],
        }
    }

    /// Every identifier this constraint refers to, in the order it lists them.
    pub fn references(&self) -> &[Identifier] {
        match self.logic() {
            Self::Dependency(ids) | Self::AtMost { ids, .. } => ids,
            Self::Conflict(id) | Self::Or { operand: id, .. } => std::slice::from_ref(id),
            Self::Mandatory | Self::Prohibited | Self::Described { .. } => &[],
        }
    }

    /// The human-readable form of this constraint applied to `subject`.
    ///
    /// The wording is deppy's, except where deppy's is a known slip: a prohibited variable
    /// reads "is prohibited" (deppy prints "is ProhibitedConstraint", OLM v0 "is prohibited"),
    /// an empty dependency reads like OLM v0, and `Or` spells out its clause instead of
    /// reusing the prohibited message.
    pub fn message(&self, subject: &Identifier) -> String {
        match self {
            Self::Mandatory => format!("{subject} is mandatory"),
            Self::Prohibited => format!("{subject} is prohibited"),
            Self::Dependency(ids) if ids.is_empty() => {
                format!("{subject} has a dependency without any candidates to satisfy it")
            }
            Self::Dependency(ids) => {
                format!("{subject} requires at least one of {}", join(ids))
            }
            Self::Conflict(id) => format!("{subject} conflicts with {id}"),
            Self::AtMost { n, ids } => format!("{subject} permits at most {n} of {}", join(ids)),
            Self::Or {
                operand,
                subject_negated,
                operand_negated,
            } => format!(
                "{}{subject} or {}{operand}",
                negation(*subject_negated),
                negation(*operand_negated)
            ),
            Self::Described {
                constraint,
                message,
            } => message.render(subject, constraint.references()),
        }
    }
}

fn join(ids: &[Identifier]) -> String {
    let mut out = String::new();
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(id.as_str());
    }
    out
}

fn negation(negated: bool) -> &'static str {
    if negated { "not " } else { "" }
}

/// The unit of problems and solutions: an identifier plus the constraints that apply to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variable {
    /// Unique within one solve.
    pub id: Identifier,
    /// Applied in order; the order decides which dependency is explored first and the order
    /// of explanations.
    pub constraints: Vec<Constraint>,
}

impl Variable {
    /// A variable without constraints.
    pub fn new(id: impl Into<Identifier>) -> Self {
        Self {
            id: id.into(),
            constraints: Vec::new(),
        }
    }

    /// Adds a constraint after the existing ones.
    #[must_use]
    pub fn with(mut self, constraint: Constraint) -> Self {
        self.constraints.push(constraint);
        self
    }

    /// Adds [`Constraint::Mandatory`].
    #[must_use]
    pub fn mandatory(self) -> Self {
        self.with(Constraint::Mandatory)
    }

    /// Adds [`Constraint::Prohibited`].
    #[must_use]
    pub fn prohibited(self) -> Self {
        self.with(Constraint::Prohibited)
    }

    /// Adds a [`Constraint::Dependency`] on `ids`, most preferred first.
    #[must_use]
    pub fn depends_on<I>(self, ids: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<Identifier>,
    {
        self.with(Constraint::dependency(ids))
    }

    /// Adds a [`Constraint::Conflict`] with `id`.
    #[must_use]
    pub fn conflicts_with(self, id: impl Into<Identifier>) -> Self {
        self.with(Constraint::conflict(id))
    }

    /// Adds a [`Constraint::AtMost`] over `ids`.
    #[must_use]
    pub fn at_most<I>(self, n: usize, ids: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<Identifier>,
    {
        self.with(Constraint::at_most(n, ids))
    }
}

/// One constraint together with the variable it is applied to: the unit in which an
/// unsatisfiable problem is explained.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AppliedConstraint {
    /// The variable carrying the constraint.
    pub subject: Identifier,
    /// The constraint as given in the input.
    pub constraint: Constraint,
}

impl fmt::Display for AppliedConstraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.constraint.message(&self.subject))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_description_names_each_subject() {
        let rest: Arc<str> = " requires an operator in package lib".into();
        let about = |rest: &Arc<str>| {
            Constraint::dependency(["lib:1.0.0"]).described(Description::AboutSubject {
                lead: "bundle ",
                rest: rest.clone(),
            })
        };
        let (a, b) = (about(&rest), about(&rest));
        assert_eq!(
            a.message(&Identifier::new("app:1.0.0")),
            "bundle app:1.0.0 requires an operator in package lib"
        );
        assert_eq!(
            b.message(&Identifier::new("app:2.0.0")),
            "bundle app:2.0.0 requires an operator in package lib"
        );
        // The logic is the wrapped constraint's, whatever the wording.
        assert_eq!(a.order(), [Identifier::new("lib:1.0.0")]);
        assert_eq!(
            Constraint::Prohibited
                .described("plain text")
                .message(&Identifier::new("x")),
            "plain text"
        );
    }

    #[test]
    fn a_listing_description_lists_the_constraints_own_identifiers() {
        let listing = || Description::Listing {
            before: "only one of ".to_owned(),
            conjunction: " and ",
            after: " may be chosen".to_owned(),
        };
        let unique = |ids: &[&str]| {
            Constraint::AtMost {
                n: 1,
                ids: identifiers(ids.iter().copied()),
            }
            .described(listing())
        };
        let subject = Identifier::new("unique package p");
        assert_eq!(
            unique(&["p:1", "p:2", "p:3"]).message(&subject),
            "only one of p:1, p:2 and p:3 may be chosen"
        );
        assert_eq!(
            unique(&["p:1", "p:2"]).message(&subject),
            "only one of p:1 and p:2 may be chosen"
        );
        assert_eq!(list::<&str>(&[], " or "), "");
        assert_eq!(list(&["a"], " or "), "a");
    }
}
