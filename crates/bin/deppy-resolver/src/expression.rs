//! The function form of constraints: `required("etcd", ">= 1.0.0", "stable")`.
//!
//! Grammar: `name(arg, ...)` where each argument is a double-quoted string without escapes
//! (as the API's validation pattern allows), with optional whitespace around every token.
//! The ActiveResolution API accepts only `required` in this form; the parser also reads the
//! other three kinds so that every [`Constraint`]'s `Display` output parses back.

use std::fmt;
use std::str::FromStr;

use crate::constraint::Constraint;

/// Why a function-form constraint could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("failed to parse constraint expression {expression:?} at column {column}: {problem}")]
pub struct ExpressionError {
    /// The expression as given.
    pub expression: String,
    /// Where the problem is, counting characters from 1.
    pub column: usize,
    /// What is wrong there.
    pub problem: ExpressionProblem,
}

/// The kinds of mistake [`ExpressionError`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpressionProblem {
    /// Nothing but whitespace.
    Empty,
    /// A token other than the one the grammar needs here.
    Expected {
        /// What the grammar needs.
        expected: &'static str,
        /// What was there instead: a quoted character, or `end of input`.
        found: String,
    },
    /// The function name is not one of the four constraint kinds.
    UnknownFunction(String),
    /// A string argument has no closing quote.
    UnterminatedString,
    /// The function got too few or too many arguments.
    Arity {
        /// The function name.
        function: &'static str,
        /// How many it takes, e.g. `1 to 3`.
        takes: &'static str,
        /// How many it got.
        found: usize,
    },
}

impl fmt::Display for ExpressionProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("the expression is empty"),
            Self::Expected { expected, found } => write!(f, "expected {expected}, found {found}"),
            Self::UnknownFunction(name) => write!(
                f,
                "unknown function {name:?} (expected required, gvkRequired, prohibited or installed)"
            ),
            Self::UnterminatedString => f.write_str("the string has no closing quote"),
            Self::Arity {
                function,
                takes,
                found,
            } => write!(f, "{function} takes {takes} arguments, found {found}"),
        }
    }
}

impl FromStr for Constraint {
    type Err = ExpressionError;

    /// Reads the function form; see the module docs for the grammar.
    fn from_str(expression: &str) -> Result<Self, ExpressionError> {
        parse(expression).map_err(|(byte, problem)| ExpressionError {
            expression: expression.to_owned(),
            column: expression[..byte].chars().count() + 1,
            problem,
        })
    }
}

/// A problem at a byte offset; converted to a column only on failure.
type Failure = (usize, ExpressionProblem);

fn parse(text: &str) -> Result<Constraint, Failure> {
    let mut cursor = Cursor { text, pos: 0 };
    cursor.skip_whitespace();
    if cursor.peek().is_none() {
        return Err((cursor.pos, ExpressionProblem::Empty));
    }
    let name_at = cursor.pos;
    let name = cursor.identifier();
    if name.is_empty() {
        return Err(cursor.expected("a function name"));
    }
    let function = Function::named(name)
        .ok_or_else(|| (name_at, ExpressionProblem::UnknownFunction(name.to_owned())))?;
    cursor.skip_whitespace();
    cursor.expect('(', "\"(\"")?;
    cursor.skip_whitespace();
    let mut args = Vec::new();
    if !cursor.eat(')') {
        loop {
            args.push(cursor.string()?);
            cursor.skip_whitespace();
            if cursor.eat(')') {
                break;
            }
            cursor.expect(',', "\",\" or \")\"")?;
            cursor.skip_whitespace();
        }
    }
    cursor.skip_whitespace();
    if cursor.peek().is_some() {
        return Err(cursor.expected("end of input"));
    }
    function
        .build(&args)
        .ok_or((name_at, function.arity_problem(args.len())))
}

/// `""` fills an unused position, as in `required("a", "", "stable")`.
fn optional<'s>(arg: Option<&&'s str>) -> Option<&'s str> {
    arg.copied().filter(|a| !a.is_empty())
}

#[derive(Clone, Copy)]
enum Function {
    Required,
    GvkRequired,
    Prohibited,
    Installed,
}

impl Function {
    fn named(name: &str) -> Option<Self> {
        Some(match name {
            "required" => Self::Required,
            "gvkRequired" => Self::GvkRequired,
            "prohibited" => Self::Prohibited,
            "installed" => Self::Installed,
            _ => return None,
        })
    }

    /// The constraint, or `None` when the argument count is wrong.
    fn build(self, args: &[&str]) -> Option<Constraint> {
        Some(match (self, args) {
            (Self::Required, [package, rest @ ..]) if rest.len() <= 2 => {
                Constraint::required(package, optional(rest.first()), optional(rest.get(1)))
            }
            (Self::GvkRequired, [group, version, kind]) => {
                Constraint::gvk_required(group, version, kind)
            }
            (Self::Prohibited, [package, rest @ ..]) if rest.len() <= 1 => {
                Constraint::prohibited(package, optional(rest.first()))
            }
            (Self::Installed, [package, version]) => Constraint::installed(package, version),
            _ => return None,
        })
    }

    fn arity_problem(self, found: usize) -> ExpressionProblem {
        let (function, takes) = match self {
            Self::Required => ("required", "1 to 3"),
            Self::GvkRequired => ("gvkRequired", "3"),
            Self::Prohibited => ("prohibited", "1 or 2"),
            Self::Installed => ("installed", "2"),
        };
        ExpressionProblem::Arity {
            function,
            takes,
            found,
        }
    }
}

struct Cursor<'t> {
    text: &'t str,
    /// Byte offset of the next character.
    pos: usize,
}

impl<'t> Cursor<'t> {
    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn skip_whitespace(&mut self) {
        while let Some(c) = self.peek().filter(|c| c.is_whitespace()) {
            self.pos += c.len_utf8();
        }
    }

    fn eat(&mut self, wanted: char) -> bool {
        let matched = self.peek() == Some(wanted);
        if matched {
            self.pos += wanted.len_utf8();
        }
        matched
    }

    fn expect(&mut self, wanted: char, description: &'static str) -> Result<(), Failure> {
        if self.eat(wanted) {
            Ok(())
        } else {
            Err(self.expected(description))
        }
    }

    fn expected(&self, expected: &'static str) -> Failure {
        let found = match self.peek() {
            Some(c) => format!("{:?}", c.to_string()),
            None => "end of input".to_owned(),
        };
        (self.pos, ExpressionProblem::Expected { expected, found })
    }

    fn identifier(&mut self) -> &'t str {
        let start = self.pos;
        while let Some(c) = self.peek().filter(char::is_ascii_alphabetic) {
            self.pos += c.len_utf8();
        }
        &self.text[start..self.pos]
    }

    fn string(&mut self) -> Result<&'t str, Failure> {
        let open = self.pos;
        self.expect('"', "a double-quoted string")?;
        let start = self.pos;
        match self.text[start..].find('"') {
            Some(len) => {
                self.pos = start + len + 1;
                Ok(&self.text[start..start + len])
            }
            None => Err((open, ExpressionProblem::UnterminatedString)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(text: &str) -> (usize, ExpressionProblem) {
        let err = text.parse::<Constraint>().unwrap_err();
        (err.column, err.problem)
    }

    #[test]
    fn required_takes_an_optional_range_and_channel() {
        assert_eq!(
            r#"required("etcd")"#.parse(),
            Ok(Constraint::required("etcd", None, None))
        );
        assert_eq!(
            r#" required ( "etcd" , ">= 1.0.0" , "stable" ) "#.parse(),
            Ok(Constraint::required(
                "etcd",
                Some(">= 1.0.0"),
                Some("stable")
            ))
        );
        assert_eq!(
            r#"required("etcd", "", "stable")"#.parse(),
            Ok(Constraint::required("etcd", None, Some("stable")))
        );
    }

    #[test]
    fn every_kind_parses_back_from_its_display_form() {
        for constraint in [
            Constraint::required("a", Some(">=1.0.0 <2.0.0"), Some("stable")),
            Constraint::required("a", None, Some("fast")),
            Constraint::gvk_required("", "v1", "ConfigMap"),
            Constraint::prohibited("a", Some("1.2.x")),
            Constraint::prohibited("a", None),
            Constraint::installed("a", "1.0.0"),
        ] {
            assert_eq!(constraint.to_string().parse(), Ok(constraint));
        }
    }

    #[test]
    fn a_missing_closing_parenthesis_is_reported_at_the_end() {
        assert_eq!(
            problem(r#"required("etcd""#),
            (
                16,
                ExpressionProblem::Expected {
                    expected: "\",\" or \")\"",
                    found: "end of input".to_owned()
                }
            )
        );
    }

    #[test]
    fn an_unquoted_argument_is_reported_where_it_starts() {
        assert_eq!(
            problem("required(etcd)"),
            (
                10,
                ExpressionProblem::Expected {
                    expected: "a double-quoted string",
                    found: "\"e\"".to_owned()
                }
            )
        );
    }

    #[test]
    fn an_unterminated_string_is_reported_at_its_opening_quote() {
        assert_eq!(
            problem(r#"required("etcd)"#),
            (10, ExpressionProblem::UnterminatedString)
        );
    }

    #[test]
    fn unknown_functions_and_wrong_argument_counts_are_named() {
        assert_eq!(
            problem(r#"  requires("etcd")"#),
            (3, ExpressionProblem::UnknownFunction("requires".to_owned()))
        );
        assert_eq!(
            problem(r#"required("a", "b", "c", "d")"#),
            (
                1,
                ExpressionProblem::Arity {
                    function: "required",
                    takes: "1 to 3",
                    found: 4
                }
            )
        );
        assert_eq!(
            problem("required()").1,
            ExpressionProblem::Arity {
                function: "required",
                takes: "1 to 3",
                found: 0
            }
        );
    }

    #[test]
    fn trailing_text_and_empty_input_are_rejected() {
        assert_eq!(
            problem(r#"required("a") x"#).1,
            ExpressionProblem::Expected {
                expected: "end of input",
                found: "\"x\"".to_owned()
            }
        );
        assert_eq!(problem("   "), (4, ExpressionProblem::Empty));
        assert_eq!(
            problem(r#"("a")"#).1,
            ExpressionProblem::Expected {
                expected: "a function name",
                found: "\"(\"".to_owned()
            }
        );
    }

    #[test]
    fn the_error_message_quotes_the_expression_and_the_column() {
        let err = r#"required("etcd""#.parse::<Constraint>().unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"failed to parse constraint expression "required(\"etcd\"" at column 16: expected "," or ")", found end of input"#
        );
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        assert_eq!(problem(r#"required("é") ?"#).0, 15);
    }
}
