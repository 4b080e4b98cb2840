//! Declared health checks: CEL expressions from `spec.healthChecks` that judge objects the
//! built-in rules ([`crate`]) do not know, or judge differently.
//!
//! A check selects objects by group, kind, and optionally name and labels; the first check
//! that selects an object decides its verdict ([`CompiledChecks::evaluate`]), and objects no
//! check selects keep the built-in rules ([`judge`]). Each check has a `ready` expression and
//! an optional `failed` one, both over the live object bound as `self`:
//!
//! - `failed` is evaluated first: true makes the object unhealthy, whatever `ready` says, so
//!   that a failure is reported instead of "still waiting";
//! - then `ready`: true is healthy, false is progressing;
//! - an expression that cannot be evaluated (most often a field the object does not have yet,
//!   such as `status` on an object its controller has not seen) is progressing, because the
//!   object may still get there; the message says why, so a typo is visible too;
//! - an expression that returns something other than a boolean is unhealthy: waiting will not
//!   fix it, a person must fix the check.
//!
//! # Cost of hostile expressions
//!
//! Expressions are written by whoever writes the BundleDeployment, and they run inside the
//! controller that serves every BundleDeployment, so they must not be able to crash or stall
//! it. The `cel` crate (0.15) has no cost or step limit (unlike Kubernetes' CEL, which estimates
//! cost from the schema), and both its parser and its interpreter recurse once per level of
//! nesting and once per operator of a chain (`a + b + c ...`, `a[0][1] ...`). What this module
//! does about it, cheaply:
//!
//! - expressions are at most [`MAX_EXPRESSION_CHARS`] long (the CRD's own limit, enforced again
//!   here because checks may come from elsewhere);
//! - before parsing, a scan of the text (which skips string literals and comments the way the
//!   CEL lexer does) bounds bracket nesting ([`MAX_NESTING`]), nesting of the list macros
//!   ([`MAX_ITERATION_NESTING`]), the number of list macros ([`MAX_MACROS`]: chained `map`s
//!   can double a list at each step) and the number of operators ([`MAX_OPERATORS`]);
//! - parsing and evaluation run on a short-lived thread with a [`STACK_BYTES`] stack, so that
//!   their recursion never depends on the caller's stack (tokio workers have 2 MiB).
//!
//! Measured with `cel` 0.15 (stack a thread needs, found by bisection): an operator chain at
//! [`MAX_OPERATORS`] takes about 1.5 MiB of stack in a release build and 38 MiB in a debug
//! build, too close to a tokio worker's 2 MiB even in release, hence the thread; 12 levels of
//! brackets take 0.12 to 0.14 MiB (release) and 2 to 2.4 MiB (debug). The parser refuses on
//! its own expressions nested more than 96 deep (brackets, or `?:` chains, which the scan does
//! not bound), which costs 0.7 MiB (release) and 16 MiB (debug) at most. Without the operator
//! bound a 4096-character chain needs 77 MiB in a debug build, more than [`STACK_BYTES`].
//!
//! What `cel` 0.15 fixed, compared with cel-interpreter 0.10 (the crate's former name), and so
//! what this module no longer guards against:
//!
//! - its parser returns syntax errors instead of panicking on them (`1 +`, an empty expression,
//!   an unterminated string): of 300,000 mutated check expressions, 11,503 made the old parser
//!   panic and none the new one, and 2,000,000 generated expressions evaluated against objects
//!   made its interpreter panic 0 times, where 9,138 in 100,000 made the old one panic (macros
//!   over something neither a list nor a map, among others). Nothing here catches panics any
//!   more; were one left, the thread would end, and the check would read as not compiling or
//!   not evaluable ("the CEL interpreter failed"), as long as the process unwinds;
//! - nested calls evaluate in linear time (`int(int(...))` 95 deep, the parser's limit, takes
//!   13 µs; cel-interpreter doubled the time with each level: 0.8 s at 22, days at 40).
//!   [`MAX_NESTING`] now bounds stack only (and keeps brackets clear of the parser's limit,
//!   whose message is less clear), no longer time.
//!
//! What remains: the list macros cost time and memory polynomial in the size of the object's
//! lists (`a.map(x, b.map(y, ...))` is `|a| * |b|`); nesting them at most two deep keeps that
//! quadratic, but a huge list in an object the same author controls can still make one
//! evaluation slow. Macros *chained* rather than nested grow without bound in either crate:
//! each `.map(y, y + y)` in `[[1, 2]].map(y, y + y).map(y, y + y)...` doubles the list it
//! returns (22 of them took 3 s and 1.2 GB in a release build, 24 of them 17 s and 4.7 GB), and
//! `cel` has no cost budget; [`MAX_MACROS`] caps the chain at four steps, so a list grows at
//! most sixteenfold.
//!
//! One more quirk of `cel`: a macro over a *map* visits its keys in an order that changes
//! between evaluations, so `map`/`filter` over a map return lists in varying order, and
//! `exists`/`all` may return an error one time and a result the next when the predicate fails
//! on some keys. Checks that iterate over lists (conditions, container statuses) are not
//! affected.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock};

use cel::objects::{Key, Map};
use cel::{Context, Env, ExecutionError, ParseError, ParseErrors, Program, Value as Cel};
use rukpak_api::HealthCheck;
use serde_json::Value;

use crate::Health;

/// Longest expression accepted, in characters: the CRD's limit on `ready` and `failed`.
pub const MAX_EXPRESSION_CHARS: usize = 4096;

/// Deepest nesting of brackets (`(`, `[`, `{`) accepted in an expression.
///
/// Real checks rarely nest more than five deep. The bound keeps the parser's and the
/// interpreter's recursion small (about 7 KiB of stack per level in release builds, 160 KiB in
/// debug builds), well below the parser's own limit of 96 levels.
pub const MAX_NESTING: usize = 12;

/// Deepest nesting of the list macros (`all`, `exists`, `exists_one`, `map`, `filter`) inside
/// each other's arguments: each level multiplies the work by the length of a list.
pub const MAX_ITERATION_NESTING: usize = 2;

/// Most list macros (`all`, `exists`, `exists_one`, `map`, `filter`) in one expression, nested
/// or not. Chained `map`s can double a list at each step (`l.map(y, y + y).map(...)`: 22 of
/// them over a two-element list took 3 s and 1.2 GB), and the interpreter has no cost budget,
/// so the number of steps is bounded instead: 2^4 is the most a chain can grow a list by.
/// Real checks use one or two (`self.status.conditions.exists(...)`).
pub const MAX_MACROS: usize = 4;

/// Most operator characters (`. + - * / % = ! < > & | ?`, `[` and the `in` keyword) accepted
/// in an expression. A chain of operators (`a + b + c ...`, `a[0][1] ...`) nests one level in
/// the parser and the interpreter per operator: about 1.5 KiB of stack in release, 38 KiB in
/// debug builds.
pub const MAX_OPERATORS: usize = 1024;

/// Stack of the thread that parses and evaluates expressions. Only the pages used are
/// committed; within the limits above, the worst case measured needs about 38 MiB in a debug
/// build and 1.5 MiB in a release build.
pub const STACK_BYTES: usize = 64 << 20;

/// Longest expression, value or error quoted in a message, in characters.
const MAX_QUOTED_CHARS: usize = 200;

/// The standard environment (functions and types) every expression is evaluated in; building
/// one takes about 30 µs, so it is built once.
static STANDARD: LazyLock<Arc<Env>> = LazyLock::new(|| Arc::new(Env::stdlib()));

/// The list macros: calls `.name(` of these iterate over a list or map.
const ITERATING_MACROS: [&[u8]; 5] = [b"all", b"exists", b"exists_one", b"map", b"filter"];

/// Declared checks, compiled once per reconcile.
#[derive(Debug, Default)]
pub struct CompiledChecks {
    checks: Vec<CompiledCheck>,
}

/// One declared check with its expressions parsed.
#[derive(Debug)]
struct CompiledCheck {
    group: String,
    kind: String,
    name: Option<String>,
    match_labels: BTreeMap<String, String>,
    ready: Expression,
    failed: Option<Expression>,
}

/// One parsed expression, with its text for messages.
#[derive(Debug)]
struct Expression {
    /// `ready` or `failed`.
    field: &'static str,
    source: String,
    program: Program,
}

impl CompiledChecks {
    /// Compiles every check; the error is a sentence a person can act on naming the check
    /// (`spec.healthChecks[2] (Certificate.cert-manager.io)`), which expression (`ready`/`failed`)
    /// and the parser's message. Empty input compiles to an empty set.
    pub fn compile(checks: &[HealthCheck]) -> Result<Self, String> {
        if checks.is_empty() {
            // Most BundleDeployments declare no checks: no thread for them.
            return Ok(Self::default());
        }
        on_big_stack(|| {
            checks
                .iter()
                .enumerate()
                .map(|(index, check)| compile_check(index, check))
                .collect::<Result<Vec<_>, _>>()
        })
        .unwrap_or_else(|reason| Err(format!("cannot compile spec.healthChecks: {reason}")))
        .map(|checks| Self { checks })
    }

    /// Whether no check is declared.
    pub fn is_empty(&self) -> bool {
        self.checks.is_empty()
    }

    /// Whether a declared check selects this object (group from apiVersion, kind, optional
    /// name, all matchLabels present).
    pub fn selects(&self, object: &Value) -> bool {
        self.checks.iter().any(|check| check.selects(object))
    }

    /// The verdict of the first check that selects `object` (raw JSON with
    /// apiVersion/kind/metadata/spec/status), or None when none does.
    pub fn evaluate(&self, object: &Value) -> Option<Health> {
        let check = self.checks.iter().find(|check| check.selects(object))?;
        if object
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|timestamp| !timestamp.is_null())
        {
            // As in the built-in rules: the bundle wants the object to exist, and one on its
            // way out is not what was applied, whatever its status says.
            return Some(Health::Unhealthy("is being deleted".to_string()));
        }
        Some(
            on_big_stack(|| check.judge(object)).unwrap_or_else(|reason| {
                Health::Progressing(format!("cannot evaluate the health check yet ({reason})"))
            }),
        )
    }
}

/// A declared check's verdict when one selects the object, else the built-in rules'
/// ([`crate::evaluate_value`]).
pub fn judge(checks: &CompiledChecks, object: &Value) -> Health {
    checks
        .evaluate(object)
        .unwrap_or_else(|| crate::evaluate_value(object))
}

fn compile_check(index: usize, check: &HealthCheck) -> Result<CompiledCheck, String> {
    let what = if check.group.is_empty() {
        format!("spec.healthChecks[{index}] ({})", check.kind)
    } else {
        format!(
            "spec.healthChecks[{index}] ({}.{})",
            check.kind, check.group
        )
    };
    let compile = |field: &'static str, source: &str| {
        compile_expression(field, source)
            .map_err(|reason| format!("{what}: the {field} expression {reason}"))
    };
    Ok(CompiledCheck {
        group: check.group.clone(),
        kind: check.kind.clone(),
        name: check.name.clone(),
        match_labels: check.match_labels.clone(),
        ready: compile("ready", &check.ready)?,
        failed: check
            .failed
            .as_deref()
            .map(|failed| compile("failed", failed))
            .transpose()?,
    })
}

/// Parses one expression after checking its shape; the error completes "the ready expression ...".
fn compile_expression(field: &'static str, source: &str) -> Result<Expression, String> {
    let chars = source.chars().count();
    if chars > MAX_EXPRESSION_CHARS {
        return Err(format!(
            "is {chars} characters long; at most {MAX_EXPRESSION_CHARS} are allowed"
        ));
    }
    let shape = Shape::of(source);
    if shape.nesting > MAX_NESTING {
        return Err(format!(
            "nests brackets {} deep; at most {MAX_NESTING} levels are allowed",
            shape.nesting
        ));
    }
    if shape.iteration_nesting > MAX_ITERATION_NESTING {
        return Err(format!(
            "nests {} list macros (all, exists, exists_one, map, filter) inside each other; at most {MAX_ITERATION_NESTING} are allowed",
            shape.iteration_nesting
        ));
    }
    if shape.macros > MAX_MACROS {
        return Err(format!(
            "uses {} list macros (all, exists, exists_one, map, filter); at most {MAX_MACROS} are allowed",
            shape.macros
        ));
    }
    if shape.operators > MAX_OPERATORS {
        return Err(format!(
            "has {} operators; at most {MAX_OPERATORS} are allowed",
            shape.operators
        ));
    }
    // `Program::compile` is `Env::stdlib().compile` without the optional syntax (`a.?b`),
    // which cel-interpreter did not have either.
    match Program::compile(source) {
        Ok(program) => Ok(Expression {
            field,
            source: source.to_string(),
            program,
        }),
        Err(errors) => Err(format!("is not valid CEL: {}", parse_errors(&errors))),
    }
}

/// The parser's errors on one line (`1:6: Syntax error: ...`), without the source snippet and
/// caret that its `Display` adds on further lines.
fn parse_errors(errors: &ParseErrors) -> String {
    let at = |error: &ParseError| format!("{}:{}", error.pos.0, error.pos.1);
    // Past its recursion limit the parser gives up, and what it reports after that is noise
    // ("No `ConditionalAndContextAll`!"); the limit itself comes wrapped in a `Debug` dump
    // ("Syntax error: OtherError(ParseError { source: None, ... })"): keep its sentence only.
    let recursion = errors.errors.iter().find_map(|error| {
        let start = error.msg.find("Recursion limit of")?;
        let sentence = error.msg[start..].split('"').next().unwrap_or_default();
        Some(format!("{}: {sentence}", at(error)))
    });
    if let Some(recursion) = recursion {
        return recursion;
    }
    let mut listed: Vec<String> = errors
        .errors
        .iter()
        .take(3)
        .map(|error| format!("{}: {}", at(error), error.msg))
        .collect();
    if errors.errors.len() > 3 {
        listed.push(format!("and {} more", errors.errors.len() - 3));
    }
    cut(&listed.join("; "), MAX_QUOTED_CHARS * 2)
}

impl CompiledCheck {
    fn selects(&self, object: &Value) -> bool {
        let api_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        // `apps/v1` is group `apps`; `v1` is the core group, spelt "" in checks.
        let group = api_version
            .rsplit_once('/')
            .map(|(group, _)| group)
            .unwrap_or_default();
        let kind = object.get("kind").and_then(Value::as_str);
        let metadata = object.get("metadata");
        let name = metadata.and_then(|m| m.get("name")).and_then(Value::as_str);
        let labels = metadata.and_then(|m| m.get("labels"));
        group == self.group
            && kind == Some(self.kind.as_str())
            && self
                .name
                .as_deref()
                .is_none_or(|wanted| name == Some(wanted))
            && self.match_labels.iter().all(|(key, value)| {
                labels.and_then(|l| l.get(key)).and_then(Value::as_str) == Some(value.as_str())
            })
    }

    /// The verdict for a selected object. Runs on the big-stack thread: converting the object
    /// and evaluating both recurse as deep as the object and the expression nest.
    fn judge(&self, object: &Value) -> Health {
        let mut context = Context::with_env(Arc::clone(&STANDARD));
        context.add_variable_from_value("self", to_cel(object));
        if let Some(failed) = &self.failed {
            match failed.truth(&context) {
                Ok(true) => {
                    return Health::Unhealthy(format!(
                        "health check failed: {}",
                        cut(&failed.source, MAX_QUOTED_CHARS)
                    ));
                }
                Ok(false) => {}
                // A `failed` that cannot be evaluated is not read as "not failed": a typo would
                // then silently disable the check. Optional fields need `has(...)`.
                Err(verdict) => return verdict,
            }
        }
        match self.ready.truth(&context) {
            Ok(true) => Health::Healthy,
            Ok(false) => Health::Progressing(format!(
                "waiting for {}",
                cut(&self.ready.source, MAX_QUOTED_CHARS)
            )),
            Err(verdict) => verdict,
        }
    }
}

impl Expression {
    /// The expression's boolean result, or the verdict when it has none.
    fn truth(&self, context: &Context<'_, '_>) -> Result<bool, Health> {
        let source = cut(&self.source, MAX_QUOTED_CHARS);
        let field = self.field;
        match self.program.execute(context) {
            Ok(Cel::Bool(value)) => Ok(value),
            Ok(other) => Err(Health::Unhealthy(format!(
                "{field} expression returned {}, not a boolean: {source}",
                describe(&other)
            ))),
            Err(error) => Err(Health::Progressing(format!(
                "cannot evaluate {field} expression yet ({}): {source}",
                execution_error(&error)
            ))),
        }
    }
}

/// A value for messages: its type, and for scalars its value (`string "True"`, `int 3`).
///
/// Maps and lists show as their type only: `cel` keeps maps in a `HashMap`, whose
/// order changes from one evaluation to the next, and a message that changed on every
/// reconcile would rewrite the BundleDeployment's status every time.
fn describe(value: &Cel) -> String {
    match value {
        Cel::Int(i) => format!("int {i}"),
        Cel::UInt(u) => format!("uint {u}"),
        Cel::Float(f) => format!("double {f}"),
        Cel::Bool(b) => format!("bool {b}"),
        Cel::String(s) => format!(
            "string {}",
            cut(&Value::from(s.as_str()).to_string(), MAX_QUOTED_CHARS / 2)
        ),
        Cel::Null => "null".to_string(),
        other => other.type_of().to_string(),
    }
}

/// The interpreter's error as a short phrase (`no such key: status`, `found no matching
/// overload for '_>_' applied to '(map, int)'`), the same every time for the same expression
/// and object (see [`describe`]).
fn execution_error(error: &ExecutionError) -> String {
    use ExecutionError as E;
    let text = match error {
        E::ValuesNotComparable(a, b) => {
            format!("{} cannot be compared to {}", describe(a), describe(b))
        }
        E::UnsupportedBinaryOperator(operator, a, b) => format!(
            "operator '{operator}' does not apply to {} and {}",
            describe(a),
            describe(b)
        ),
        E::Overflow(operator, a, b) => format!(
            "operator '{operator}' overflows on {} and {}",
            describe(a),
            describe(b)
        ),
        E::DivisionByZero(a) => format!("division of {} by zero", describe(a)),
        E::RemainderByZero(a) => format!("remainder of {} by zero", describe(a)),
        E::UnsupportedTargetType { target } => {
            format!("unsupported argument type {}", describe(target))
        }
        E::NotSupportedAsMethod { method, target } => {
            format!("method '{method}' does not apply to {}", describe(target))
        }
        E::UnsupportedKeyType(key) => format!("{} cannot be a map key", describe(key)),
        E::UnsupportedIndex(index, value) => {
            format!("{} cannot index {}", describe(index), describe(value))
        }
        // Some functions print their argument with `Debug` ("cannot determine the size of
        // Map { map: {...} }"), in an order that changes between evaluations.
        E::FunctionError { function, message } if message.contains("Map {") => {
            format!("{function}() does not apply to that value")
        }
        other => {
            let text = other.to_string();
            let mut chars = text.chars();
            match (chars.next(), chars.next()) {
                // "No such key: status" reads better inside a sentence as "no such key: status".
                (Some(first), Some(second)) if first.is_uppercase() && second.is_lowercase() => {
                    let mut lowered: String = first.to_lowercase().collect();
                    lowered.push_str(text.get(first.len_utf8()..).unwrap_or_default());
                    lowered
                }
                _ => text,
            }
        }
    };
    cut(&text, MAX_QUOTED_CHARS)
}

/// A JSON value as a CEL value.
///
/// Written here rather than with `cel::to_value` because that goes through serde,
/// which turns every non-negative JSON integer into a CEL `uint`: comparisons still work, but
/// arithmetic does not (`self.spec.replicas - 1` fails with "unsupported binary operator").
/// Kubernetes' CEL reads JSON integers as `int`, and so does this; only integers beyond the
/// `int` range become `uint`, and other numbers `double`.
fn to_cel(value: &Value) -> Cel {
    match value {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Cel::Int(i),
            (None, Some(u)) => Cel::UInt(u),
            (None, None) => n.as_f64().map_or(Cel::Null, Cel::Float),
        },
        Value::String(s) => Cel::String(Arc::new(s.clone())),
        Value::Array(items) => Cel::List(Arc::new(items.iter().map(to_cel).collect())),
        Value::Object(fields) => Cel::Map(Map {
            map: Arc::new(
                fields
                    .iter()
                    .map(|(key, value)| (Key::String(Arc::new(key.clone())), to_cel(value)))
                    .collect::<HashMap<_, _>>(),
            ),
        }),
    }
}

/// Runs `work` on a thread with a [`STACK_BYTES`] stack and waits for it; the error says why
/// it could not run or finish (a panic in `cel`, of which none is known, ends up here).
fn on_big_stack<T: Send>(work: impl FnOnce() -> T + Send) -> Result<T, String> {
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("health-check-cel".to_string())
            .stack_size(STACK_BYTES)
            .spawn_scoped(scope, work)
            .map_err(|error| format!("cannot start a thread for CEL: {error}"))?;
        // Joined here, so a panic is returned rather than re-raised by the scope.
        handle
            .join()
            .map_err(|_| "the CEL interpreter failed".to_string())
    })
}

/// `message` cut to `max_chars` characters, with `…` when cut.
fn cut(message: &str, max_chars: usize) -> String {
    match message.char_indices().nth(max_chars) {
        Some((end, _)) => format!("{}…", &message[..end]),
        None => message.to_string(),
    }
}

/// What the pre-parse scan measures in an expression (see the module documentation).
#[derive(Debug, Default, PartialEq, Eq)]
struct Shape {
    /// Deepest bracket nesting.
    nesting: usize,
    /// Deepest nesting of list macros.
    iteration_nesting: usize,
    /// List macros in all.
    macros: usize,
    /// Operator characters, `[` and `in` keywords.
    operators: usize,
}

/// The token before a `(`, for telling list macros apart from other calls.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Previous {
    /// `.`
    Dot,
    /// An identifier that names a list macro and follows a `.`.
    IteratingMacro,
    Other,
}

impl Shape {
    /// Scans `source` the way the CEL lexer tokenizes it, as far as brackets, operators,
    /// strings and comments go. Where the scan and the lexer could disagree (text the lexer
    /// rejects), the scan counts more, never less, so the limits hold for anything the parser
    /// sees.
    fn of(source: &str) -> Shape {
        let bytes = source.as_bytes();
        let mut shape = Shape::default();
        // One entry per open bracket: whether it opened a list macro's arguments.
        let mut open: Vec<bool> = Vec::new();
        let mut previous = Previous::Other;
        let mut i = 0;
        while let Some(&byte) = bytes.get(i) {
            match byte {
                b'/' if bytes.get(i + 1) == Some(&b'/') => {
                    // A comment runs to the end of the line.
                    while bytes.get(i).is_some_and(|&b| b != b'\n') {
                        i += 1;
                    }
                    continue;
                }
                b'\'' | b'"' => {
                    // An unterminated or malformed string is a lexer error; counting on after
                    // its quote counts at least what the lexer reads after it.
                    i = string_end(bytes, i, false).unwrap_or(i + 1);
                    previous = Previous::Other;
                    continue;
                }
                b'a'..=b'z' | b'A'..=b'Z' | b'_' | b'0'..=b'9' => {
                    let start = i;
                    while bytes
                        .get(i)
                        .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
                    {
                        i += 1;
                    }
                    let word = bytes.get(start..i).unwrap_or_default();
                    if matches!(bytes.get(i), Some(b'\'' | b'"')) {
                        // A string prefix (`r'...'` raw, `b'...'` bytes, `br'...'` both); the
                        // lexer falls back to an identifier and a plain string when the
                        // prefixed string does not lex.
                        let raw = matches!(word, b"r" | b"R" | b"br" | b"bR" | b"Br" | b"BR");
                        if let Some(end) = string_end(bytes, i, raw) {
                            i = end;
                        }
                        previous = Previous::Other;
                        continue;
                    }
                    if word == b"in" {
                        shape.operators += 1;
                    }
                    previous = if previous == Previous::Dot && ITERATING_MACROS.contains(&word) {
                        Previous::IteratingMacro
                    } else {
                        Previous::Other
                    };
                    continue;
                }
                b'(' | b'[' | b'{' => {
                    if byte == b'[' {
                        // Indexing chains like selection (`a[0][1]...`).
                        shape.operators += 1;
                    }
                    let macro_call = byte == b'(' && previous == Previous::IteratingMacro;
                    shape.macros += usize::from(macro_call);
                    open.push(macro_call);
                    shape.nesting = shape.nesting.max(open.len());
                    let iterating = open.iter().filter(|&&macro_call| macro_call).count();
                    shape.iteration_nesting = shape.iteration_nesting.max(iterating);
                    previous = Previous::Other;
                }
                b')' | b']' | b'}' => {
                    open.pop();
                    previous = Previous::Other;
                }
                b'.' => {
                    shape.operators += 1;
                    previous = Previous::Dot;
                }
                b'+' | b'-' | b'*' | b'/' | b'%' | b'=' | b'!' | b'<' | b'>' | b'&' | b'|'
                | b'?' => {
                    shape.operators += 1;
                    previous = Previous::Other;
                }
                b' ' | b'\t' | b'\r' | b'\n' | b'\x0c' => {}
                _ => previous = Previous::Other,
            }
            i += 1;
        }
        shape
    }
}

/// Where the string literal whose opening quote is at `start` ends (the index after its
/// closing quote), following the CEL lexer's STRING rule; None when no string lexes there.
fn string_end(bytes: &[u8], start: usize, raw: bool) -> Option<usize> {
    let quote = *bytes.get(start)?;
    let triple = [quote, quote, quote];
    if bytes.get(start..start + 3) == Some(&triple[..]) {
        // Triple-quoted strings span lines. Unterminated, the lexer takes `''` (an empty
        // string) instead, as below.
        let mut i = start + 3;
        let mut ended = None;
        while i < bytes.len() {
            if bytes.get(i..i + 3) == Some(&triple[..]) {
                ended = Some(i + 3);
                break;
            }
            match bytes.get(i) {
                Some(b'\\') if !raw => match escape_len(bytes, i) {
                    Some(len) => i += len,
                    None => break,
                },
                _ => i += 1,
            }
        }
        if ended.is_some() {
            return ended;
        }
    }
    let mut i = start + 1;
    loop {
        match *bytes.get(i)? {
            b if b == quote => return Some(i + 1),
            b'\n' | b'\r' => return None,
            b'\\' if !raw => i += escape_len(bytes, i)?,
            _ => i += 1,
        }
    }
}

/// Length of the escape sequence at `start` (a backslash), or None when it is not one the
/// lexer accepts.
fn escape_len(bytes: &[u8], start: usize) -> Option<usize> {
    let hex = |from: usize, count: usize| {
        bytes
            .get(from..from + count)
            .is_some_and(|digits| digits.iter().all(u8::is_ascii_hexdigit))
            .then_some(1 + count)
    };
    match *bytes.get(start + 1)? {
        b'a' | b'b' | b'f' | b'n' | b'r' | b't' | b'v' | b'"' | b'\'' | b'\\' | b'?' | b'`' => {
            Some(2)
        }
        b'0'..=b'3' => bytes
            .get(start + 2..start + 4)
            .is_some_and(|digits| digits.iter().all(|d| (b'0'..=b'7').contains(d)))
            .then_some(4),
        b'x' | b'X' => hex(start + 2, 2).map(|len| len + 1),
        b'u' => hex(start + 2, 4).map(|len| len + 1),
        b'U' => hex(start + 2, 8).map(|len| len + 1),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const CERT_READY: &str =
        "self.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')";
    const CERT_FAILED: &str = "self.status.conditions.exists(c, c.type == 'Issuing' && c.status == 'False' && c.reason == 'Failed')";

    fn check(group: &str, kind: &str, ready: &str, failed: Option<&str>) -> HealthCheck {
        HealthCheck {
            group: group.to_string(),
            kind: kind.to_string(),
            name: None,
            match_labels: BTreeMap::new(),
            ready: ready.to_string(),
            failed: failed.map(str::to_string),
        }
    }

    fn compiled(checks: &[HealthCheck]) -> CompiledChecks {
        CompiledChecks::compile(checks).unwrap()
    }

    fn certificate_check() -> HealthCheck {
        check(
            "cert-manager.io",
            "Certificate",
            CERT_READY,
            Some(CERT_FAILED),
        )
    }

    fn certificate(status: Value) -> Value {
        json!({
            "apiVersion": "cert-manager.io/v1",
            "kind": "Certificate",
            "metadata": {"name": "serving", "namespace": "a", "generation": 1},
            "spec": {"secretName": "serving-tls"},
            "status": status,
        })
    }

    fn conditions(conditions: Value) -> Value {
        json!({"conditions": conditions})
    }

    fn progressing(health: Option<Health>) -> String {
        match health {
            Some(Health::Progressing(message)) => message,
            other => panic!("expected progressing, got {other:?}"),
        }
    }

    fn unhealthy(health: Option<Health>) -> String {
        match health {
            Some(Health::Unhealthy(message)) => message,
            other => panic!("expected unhealthy, got {other:?}"),
        }
    }

    #[test]
    fn ready_condition_true_is_healthy() {
        let checks = compiled(&[certificate_check()]);
        let obj = certificate(conditions(json!([
            {"type": "Issuing", "status": "False", "reason": "Done"},
            {"type": "Ready", "status": "True"},
        ])));
        assert_eq!(checks.evaluate(&obj), Some(Health::Healthy));
    }

    #[test]
    fn ready_condition_false_is_progressing_with_the_expression() {
        let checks = compiled(&[certificate_check()]);
        let obj = certificate(conditions(json!([{"type": "Ready", "status": "False"}])));
        assert_eq!(
            progressing(checks.evaluate(&obj)),
            format!("waiting for {CERT_READY}")
        );
    }

    #[test]
    fn failed_true_is_unhealthy_and_checked_before_ready() {
        let checks = compiled(&[certificate_check()]);
        // Ready is True as well: `failed` wins.
        let obj = certificate(conditions(json!([
            {"type": "Ready", "status": "True"},
            {"type": "Issuing", "status": "False", "reason": "Failed"},
        ])));
        assert_eq!(
            unhealthy(checks.evaluate(&obj)),
            format!("health check failed: {CERT_FAILED}")
        );
    }

    #[test]
    fn failed_false_leaves_the_verdict_to_ready() {
        let checks = compiled(&[check(
            "cert-manager.io",
            "Certificate",
            "true",
            Some("self.status.conditions.size() > 5"),
        )]);
        let obj = certificate(conditions(json!([{"type": "Ready", "status": "False"}])));
        assert_eq!(checks.evaluate(&obj), Some(Health::Healthy));
    }

    #[test]
    fn a_missing_status_is_progressing_not_an_error() {
        let checks = compiled(&[certificate_check()]);
        let mut obj = certificate(Value::Null);
        obj.as_object_mut().unwrap().remove("status");
        let message = progressing(checks.evaluate(&obj));
        assert!(
            message.starts_with("cannot evaluate failed expression yet (no such key: status): "),
            "{message}"
        );
        // Same without a `failed` expression: `ready` cannot be evaluated either.
        let checks = compiled(&[check("cert-manager.io", "Certificate", CERT_READY, None)]);
        let message = progressing(checks.evaluate(&obj));
        assert_eq!(
            message,
            format!("cannot evaluate ready expression yet (no such key: status): {CERT_READY}")
        );
    }

    #[test]
    fn a_non_boolean_result_is_unhealthy() {
        let checks = compiled(&[check(
            "cert-manager.io",
            "Certificate",
            "self.spec.secretName",
            None,
        )]);
        let obj = certificate(conditions(json!([])));
        assert_eq!(
            unhealthy(checks.evaluate(&obj)),
            "ready expression returned string \"serving-tls\", not a boolean: self.spec.secretName"
        );
        let checks = compiled(&[check(
            "cert-manager.io",
            "Certificate",
            "true",
            Some("size(self.status.conditions)"),
        )]);
        assert_eq!(
            unhealthy(checks.evaluate(&obj)),
            "failed expression returned int 0, not a boolean: size(self.status.conditions)"
        );
    }

    #[test]
    fn error_messages_are_the_same_on_every_evaluation() {
        let status = json!({"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7, "h": 8});
        let obj = certificate(status);
        for (expression, expected) in [
            (
                "self.status > 1",
                "found no matching overload for '_>_' applied to '(map, int)'",
            ),
            (
                "int(self.status) == 1",
                "found no matching overload for 'int' applied to '(map)'",
            ),
            ("{self.status: 1}.size() == 1", "map cannot be a map key"),
            (
                "self.status.a + 'x' == 1",
                "operator 'add' does not apply to int 1 and string \"x\"",
            ),
        ] {
            let checks = compiled(&[check("cert-manager.io", "Certificate", expression, None)]);
            let first = progressing(checks.evaluate(&obj));
            assert_eq!(
                first,
                format!("cannot evaluate ready expression yet ({expected}): {expression}")
            );
            for _ in 0..10 {
                assert_eq!(progressing(checks.evaluate(&obj)), first);
            }
        }
    }

    #[test]
    fn an_object_being_deleted_is_unhealthy() {
        let checks = compiled(&[check("cert-manager.io", "Certificate", "true", None)]);
        let mut obj = certificate(conditions(json!([])));
        obj["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert_eq!(unhealthy(checks.evaluate(&obj)), "is being deleted");
    }

    #[test]
    fn an_invalid_expression_fails_compile_naming_the_check_and_the_field() {
        let checks = [
            check("", "ConfigMap", "true", None),
            check("apps", "Deployment", "true", None),
            check(
                "cert-manager.io",
                "Certificate",
                "true",
                Some("self.status."),
            ),
        ];
        let error = CompiledChecks::compile(&checks).unwrap_err();
        assert!(
            error.starts_with(
                "spec.healthChecks[2] (Certificate.cert-manager.io): the failed expression is not valid CEL: 1:"
            ),
            "{error}"
        );
        assert!(error.contains("Syntax error"), "{error}");
        assert!(!error.contains('\n'), "{error}");

        // cel-interpreter 0.10 panicked on these; `cel` reports where they went wrong.
        for (expression, at) in [
            ("self.data.x +", "1:14"),
            ("1 +", "1:4"),
            ("", "1:1"),
            ("self.status.(", "1:13"),
            ("'abc", "1:1"),
            ("self.status.conditions.exists(c,", "1:33"),
        ] {
            let error =
                CompiledChecks::compile(&[check("", "ConfigMap", expression, None)]).unwrap_err();
            assert!(
                error.starts_with(&format!(
                    "spec.healthChecks[0] (ConfigMap): the ready expression is not valid CEL: {at}: Syntax error: "
                )),
                "{expression}: {error}"
            );
            assert!(!error.contains('\n'), "{error}");
        }
    }

    #[test]
    fn the_parsers_recursion_limit_fails_compile_with_a_readable_reason() {
        // `?:` chains nest in the parser without brackets, so the scan lets them through.
        let chain = format!("{}1 == 1", "true ? 1 : ".repeat(100));
        let error = CompiledChecks::compile(&[check("", "ConfigMap", &chain, None)]).unwrap_err();
        assert!(
            error.starts_with(
                "spec.healthChecks[0] (ConfigMap): the ready expression is not valid CEL: 1:"
            ),
            "{error}"
        );
        assert!(
            error.ends_with(": Recursion limit of 96 exceeded"),
            "{error}"
        );
        assert!(!error.contains(';'), "only the limit is reported: {error}");
    }

    #[test]
    fn empty_input_compiles_to_an_empty_set_that_defers_to_the_built_in_rules() {
        let checks = CompiledChecks::compile(&[]).unwrap();
        assert!(checks.is_empty());
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                                "metadata": {"name": "web", "namespace": "a", "generation": 1},
                                "spec": {"replicas": 1}});
        assert!(!checks.selects(&deployment));
        assert_eq!(checks.evaluate(&deployment), None);
        assert!(!compiled(&[check("apps", "Deployment", "true", None)]).is_empty());
    }

    #[test]
    fn name_and_labels_select_objects_and_the_rest_get_the_built_in_rules() {
        let mut by_name = check("apps", "Deployment", "true", None);
        by_name.name = Some("web".to_string());
        let mut by_labels = check("apps", "Deployment", "false", None);
        by_labels.match_labels = BTreeMap::from([("tier".to_string(), "backend".to_string())]);
        let checks = compiled(&[by_name, by_labels]);

        let deployment = |name: &str, labels: Value| {
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": name, "namespace": "a", "generation": 1, "labels": labels},
                   "spec": {"replicas": 1}})
        };
        let web = deployment("web", json!({}));
        let api = deployment("api", json!({"tier": "backend", "team": "x"}));
        let other = deployment("other", json!({"tier": "frontend"}));

        assert!(checks.selects(&web));
        assert_eq!(judge(&checks, &web), Health::Healthy);
        assert!(checks.selects(&api));
        assert_eq!(
            judge(&checks, &api),
            Health::Progressing("waiting for false".to_string())
        );
        // Selected by neither: the built-in Deployment rule waits for a status.
        assert!(!checks.selects(&other));
        assert_eq!(checks.evaluate(&other), None);
        assert_eq!(
            judge(&checks, &other),
            Health::Progressing(
                "waiting for the Deployment controller to report status".to_string()
            )
        );
        assert_eq!(judge(&checks, &other), crate::evaluate_value(&other));
    }

    #[test]
    fn the_first_selecting_check_decides() {
        let checks = compiled(&[
            check("", "ConfigMap", "false", None),
            check("", "ConfigMap", "true", None),
        ]);
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        assert_eq!(
            checks.evaluate(&obj),
            Some(Health::Progressing("waiting for false".to_string()))
        );
    }

    #[test]
    fn group_comes_from_api_version() {
        let core = compiled(&[check("", "ConfigMap", "true", None)]);
        let apps = compiled(&[check("apps", "Deployment", "true", None)]);
        let config_map =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        let deployment =
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}});
        let extensions_deployment = json!({"apiVersion": "extensions/v1beta1",
                                           "kind": "Deployment", "metadata": {"name": "d"}});
        assert!(core.selects(&config_map));
        assert!(!apps.selects(&config_map));
        assert!(apps.selects(&deployment));
        assert!(!apps.selects(&extensions_deployment));
        // A check for the core group does not take a kind of the same name in another group.
        let core_deployment = compiled(&[check("", "Deployment", "true", None)]);
        assert!(!core_deployment.selects(&deployment));
    }

    #[test]
    fn json_integers_are_cel_ints() {
        let obj = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                         "metadata": {"name": "web", "namespace": "a"},
                         "spec": {"replicas": 3}, "status": {"replicas": 2, "ratio": 0.5}});
        for expression in [
            "self.status.replicas == 2",
            "self.spec.replicas > 1",
            // Arithmetic with literals fails on `uint`: the values must be `int`.
            "self.spec.replicas - 1 == self.status.replicas",
            "self.status.replicas + 1 == 3",
            "self.status.ratio < 1.0",
        ] {
            let checks = compiled(&[check("apps", "Deployment", expression, None)]);
            assert_eq!(checks.evaluate(&obj), Some(Health::Healthy), "{expression}");
        }
        assert_eq!(to_cel(&json!(u64::MAX)), Cel::UInt(u64::MAX));
        assert_eq!(to_cel(&json!(-4)), Cel::Int(-4));
    }

    #[test]
    fn limits_are_enforced_at_compile_with_a_reason() {
        let nested = format!("{}true{}", "(".repeat(13), ")".repeat(13));
        let error = CompiledChecks::compile(&[check("", "ConfigMap", &nested, None)]).unwrap_err();
        assert_eq!(
            error,
            "spec.healthChecks[0] (ConfigMap): the ready expression nests brackets 13 deep; at most 12 levels are allowed"
        );

        let iterating = "self.a.all(x, self.b.exists(y, self.c.map(z, z).size() > 0))";
        let error =
            CompiledChecks::compile(&[check("", "ConfigMap", iterating, None)]).unwrap_err();
        assert!(error.contains("nests 3 list macros"), "{error}");

        let long = format!("true{}", " ".repeat(MAX_EXPRESSION_CHARS));
        let error = CompiledChecks::compile(&[check("", "ConfigMap", &long, None)]).unwrap_err();
        assert!(error.contains("characters long"), "{error}");

        let chain = format!("1{}", "+1".repeat(MAX_OPERATORS + 1));
        let error = CompiledChecks::compile(&[check("", "ConfigMap", &chain, None)]).unwrap_err();
        assert!(error.contains("operators"), "{error}");
    }

    #[test]
    fn expressions_at_the_limits_run_without_exhausting_the_stack() {
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                         "data": {"n": "1"}});
        // 12 nested calls (cel-interpreter took 2^12 steps for these; `cel` takes 12).
        let nested = format!("{}1{} == 1", "int(".repeat(12), ")".repeat(12));
        // The longest operator chain allowed: `==` counts as two.
        let terms = MAX_OPERATORS - 2;
        let chain = format!("1{} == {}", "+1".repeat(terms), terms + 1);
        let two_macros = "[1, 2, 3].all(x, [4, 5].exists(y, x < y))";
        for expression in [nested.as_str(), chain.as_str(), two_macros] {
            let checks = compiled(&[check("", "ConfigMap", expression, None)]);
            assert_eq!(checks.evaluate(&obj), Some(Health::Healthy), "{expression}");
        }
    }

    #[test]
    fn the_scan_skips_strings_and_comments_like_the_lexer() {
        let shape = |source: &str| Shape::of(source);
        assert_eq!(shape("'(((' + \"[[[\"").nesting, 0);
        assert_eq!(
            shape("r'\\' + (x)").nesting,
            1,
            "raw strings have no escapes"
        );
        assert_eq!(
            shape("'\\' + (x)'").nesting,
            0,
            "an escaped quote does not end a string"
        );
        assert_eq!(shape("'''a\n(('''").nesting, 0, "triple quotes span lines");
        assert_eq!(shape("// it's ((\n(x)").nesting, 1, "comments are skipped");
        // An unterminated string is an error the lexer recovers from: what follows counts.
        assert_eq!(shape("'abc\n((x))").nesting, 2);
        assert_eq!(
            shape("'\\q ((x))'").nesting,
            2,
            "an invalid escape ends the string"
        );
        assert_eq!(shape("f(g(h(1)))").nesting, 3);
        assert_eq!(
            shape("a.map(x, b.filter(y, c.all(z, true)))").iteration_nesting,
            3
        );
        assert_eq!(shape("a.map(x, x) + b.map(y, y)").iteration_nesting, 1);
        assert_eq!(shape("map(x) + exists(y)").iteration_nesting, 0);
        assert_eq!(shape("a.map(x, x) + b.map(y, y)").macros, 2);
        assert_eq!(shape("map(x) + exists(y)").macros, 0);
        let chained = format!("[[1, 2]]{}", ".map(y, y + y)".repeat(5));
        let refused = CompiledChecks::compile(&[HealthCheck {
            kind: "ConfigMap".into(),
            ready: format!("size({chained}) > 0"),
            ..HealthCheck::default()
        }])
        .unwrap_err();
        assert!(refused.contains("uses 5 list macros"), "{refused}");
        assert_eq!(shape("a.b + c[0] == 1 && d in e").operators, 8);
        // What the scan reads as strings, the parser does as well.
        let checks = compiled(&[check(
            "",
            "ConfigMap",
            // (cel-parser 0.10 read the value of `r'\'` wrongly, but its extent right.)
            "self.data.x == '(((' || size(r'\\') == 1",
            None,
        )]);
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                         "data": {"x": "y"}});
        assert_eq!(checks.evaluate(&obj), Some(Health::Healthy));
    }

    #[test]
    fn messages_quote_at_most_a_bounded_part_of_long_expressions() {
        let long = format!(
            "false || {}false",
            "self.metadata.name == 'x' || ".repeat(60)
        );
        let checks = compiled(&[check("", "ConfigMap", &long, None)]);
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        let message = progressing(checks.evaluate(&obj));
        assert_eq!(
            message.chars().count(),
            "waiting for ".len() + MAX_QUOTED_CHARS + 1
        );
        assert!(message.ends_with('…'));
    }

    #[test]
    fn compiled_checks_can_be_shared_across_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<CompiledChecks>();
    }

    fn arbitrary_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-1e12f64..1e12).prop_map(Value::from),
            prop_oneof![
                Just("Ready".to_string()),
                Just("True".to_string()),
                Just("Failed".to_string()),
                "[a-zA-Z]{0,8}",
            ]
            .prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
                prop::collection::btree_map(
                    prop_oneof![
                        Just("conditions".to_string()),
                        Just("type".to_string()),
                        Just("status".to_string()),
                        Just("reason".to_string()),
                        Just("replicas".to_string()),
                        Just("phase".to_string()),
                        "[a-z]{1,6}",
                    ],
                    inner,
                    0..6
                )
                .prop_map(|fields| Value::Object(fields.into_iter().collect())),
            ]
        })
    }

    /// A fixed set of expressions exercising field access, macros, arithmetic, comparisons
    /// between mismatched types and division by zero.
    const FUZZ_EXPRESSIONS: [&str; 10] = [
        CERT_READY,
        CERT_FAILED,
        "self.status.replicas == 2",
        "self.spec.replicas > 1 && self.spec.replicas - 1 < self.status.replicas * 2",
        "has(self.status.phase) && self.status.phase == 'Failed'",
        "self.status.conditions.all(c, c.status != 'False')",
        "size(self.spec) / (size(self.status) - size(self.status)) == 0",
        "self.status.conditions.map(c, c.type).exists(t, t.startsWith('Re'))",
        "self.spec.phase.matches('^F.*') || self.status[0] < self.spec['replicas']",
        "int(self.status.replicas) + uint(self.spec.replicas) == 0 ? self.status : 1",
    ];

    proptest! {
        #[test]
        fn arbitrary_objects_never_panic(spec in arbitrary_json(), status in arbitrary_json(),
                                          deleting in any::<bool>()) {
            let checks: Vec<HealthCheck> = FUZZ_EXPRESSIONS
                .iter()
                .map(|expression| check("example.com", "Widget", expression, Some(expression)))
                .collect();
            let mut object = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                                    "metadata": {"name": "w", "namespace": "a"},
                                    "spec": spec, "status": status});
            if deleting {
                object["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
            }
            for one in &checks {
                let compiled = CompiledChecks::compile(std::slice::from_ref(one)).unwrap();
                // A panic would end the evaluating thread and read as this message.
                let verdict = compiled.evaluate(&object);
                prop_assert!(verdict.is_some());
                prop_assert!(
                    !format!("{verdict:?}").contains("the CEL interpreter failed"),
                    "{verdict:?}"
                );
                // Not compared with `evaluate`: a macro over a map visits its keys in an order
                // that changes between evaluations (see the module documentation).
                judge(&compiled, &object);
            }
        }

        #[test]
        fn arbitrary_expression_text_compiles_or_fails_without_panicking(
            text in "[a-z0-9 .()\\[\\]{}'\"\\\\+*/%!<>=&|?:,_`\n-]{0,80}"
        ) {
            // A panic would end the compiling thread and read as "cannot compile
            // spec.healthChecks: the CEL interpreter failed"; every error must be about the
            // expression instead.
            match CompiledChecks::compile(&[check("", "ConfigMap", &text, None)]) {
                Ok(checks) => {
                    let obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"name": "c"}});
                    let verdict = checks.evaluate(&obj);
                    prop_assert!(
                        !format!("{verdict:?}").contains("the CEL interpreter failed"),
                        "{verdict:?}"
                    );
                }
                Err(error) => prop_assert!(
                    error.starts_with("spec.healthChecks[0] (ConfigMap): the ready expression "),
                    "{error}"
                ),
            }
        }
    }
}
