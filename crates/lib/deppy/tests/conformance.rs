//! Deppy v0.3.0's solver test table (`pkg/deppy/solver/solve_test.go`, plus OLM v0's extra
//! case), with deppy's expected selections. Explanations are compared as sets with deppy's
//! and as lists in input order, which is this crate's documented order (deppy's is gini's
//! assumption order).

// Test helpers outside #[test] functions are not covered by clippy.toml's test allowances.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use deppy::{AppliedConstraint, Constraint, SolveError, Solver, Variable};

fn v(id: &str) -> Variable {
    Variable::new(id)
}

fn selected(variables: Vec<Variable>) -> Vec<String> {
    let solution = Solver::new(variables).unwrap().solve().unwrap();
    solution
        .selected()
        .iter()
        .map(|id| id.as_str().to_owned())
        .collect()
}

fn explanation(variables: Vec<Variable>) -> Vec<String> {
    match Solver::new(variables).unwrap().solve() {
        Err(SolveError::NotSatisfiable(e)) => {
            e.constraints().iter().map(|a| a.to_string()).collect()
        }
        other => panic!("expected NotSatisfiable, got {other:?}"),
    }
}

fn sorted(mut lines: Vec<String>) -> Vec<String> {
    lines.sort();
    lines
}

#[test]
fn no_variables_select_nothing() {
    assert!(selected(vec![]).is_empty());
}

#[test]
fn an_unnecessary_variable_is_not_selected() {
    assert!(selected(vec![v("a")]).is_empty());
}

#[test]
fn a_single_mandatory_variable_is_selected() {
    assert_eq!(selected(vec![v("a").mandatory()]), ["a"]);
}

#[test]
fn mandatory_and_prohibited_together_are_explained_by_both() {
    let lines = explanation(vec![v("a").mandatory().prohibited()]);
    // deppy: [a prohibited, a mandatory]
    assert_eq!(
        sorted(lines.clone()),
        sorted(vec!["a is prohibited".into(), "a is mandatory".into()])
    );
    assert_eq!(lines, ["a is mandatory", "a is prohibited"]);
}

#[test]
fn a_dependency_is_selected() {
    assert_eq!(
        selected(vec![v("a"), v("b").mandatory().depends_on(["a"])]),
        ["a", "b"]
    );
}

#[test]
fn a_transitive_dependency_is_selected() {
    assert_eq!(
        selected(vec![
            v("a"),
            v("b").depends_on(["a"]),
            v("c").mandatory().depends_on(["b"]),
        ]),
        ["a", "b", "c"]
    );
}

#[test]
fn both_dependencies_are_selected() {
    assert_eq!(
        selected(vec![
            v("a"),
            v("b"),
            v("c").mandatory().depends_on(["a"]).depends_on(["b"]),
        ]),
        ["a", "b", "c"]
    );
}

#[test]
fn the_first_dependency_is_selected_when_candidates_conflict() {
    assert_eq!(
        selected(vec![
            v("a"),
            v("b").conflicts_with("a"),
            v("c").mandatory().depends_on(["a", "b"]),
        ]),
        ["a", "c"]
    );
}

#[test]
fn only_the_first_dependency_is_selected() {
    assert_eq!(
        selected(vec![
            v("a"),
            v("b"),
            v("c").mandatory().depends_on(["a", "b"])
        ]),
        ["a", "c"]
    );
}

#[test]
fn the_first_dependency_is_selected_in_reverse_order_too() {
    assert_eq!(
        selected(vec![
            v("a"),
            v("b").conflicts_with("a"),
            v("c").mandatory().depends_on(["b", "a"]),
        ]),
        ["b", "c"]
    );
}

#[test]
fn two_mandatory_but_conflicting_variables_are_explained_by_the_conflict_and_both_mandates() {
    let lines = explanation(vec![
        v("a").mandatory(),
        v("b").mandatory().conflicts_with("a"),
    ]);
    // deppy: [b conflicts with a, b is mandatory, a is mandatory]
    assert_eq!(
        lines,
        ["a is mandatory", "b is mandatory", "b conflicts with a"]
    );
}

#[test]
fn irrelevant_dependencies_do_not_influence_search_order() {
    assert_eq!(
        selected(vec![
            v("a").depends_on(["x", "y"]),
            v("b").mandatory().depends_on(["y", "x"]),
            v("x"),
            v("y"),
        ]),
        ["b", "y"]
    );
}

#[test]
fn a_cardinality_constraint_prevents_resolution() {
    let lines = explanation(vec![
        v("a")
            .mandatory()
            .depends_on(["x", "y"])
            .at_most(1, ["x", "y"]),
        v("x").mandatory(),
        v("y").mandatory(),
    ]);
    // deppy: [y is mandatory, x is mandatory, a permits at most 1 of x, y]
    assert_eq!(
        lines,
        [
            "a permits at most 1 of x, y",
            "x is mandatory",
            "y is mandatory"
        ]
    );
}

#[test]
fn a_cardinality_constraint_forces_the_alternative() {
    assert_eq!(
        selected(vec![
            v("a")
                .mandatory()
                .depends_on(["x", "y"])
                .at_most(1, ["x", "y"]),
            v("b").mandatory().depends_on(["y"]),
            v("x"),
            v("y"),
        ]),
        ["a", "b", "y"]
    );
}

#[test]
fn two_dependencies_are_satisfied_by_one_variable() {
    // OLM v0's variant of the next case.
    assert_eq!(
        selected(vec![
            v("a").mandatory().depends_on(["y"]),
            v("b").mandatory().depends_on(["x", "y"]),
            v("x"),
            v("y"),
        ]),
        ["a", "b", "y"]
    );
}

#[test]
fn two_dependencies_are_satisfied_by_one_variable_chosen_first() {
    assert_eq!(
        selected(vec![
            v("a").mandatory().depends_on(["y", "z", "m"]),
            v("b").mandatory().depends_on(["x", "y"]),
            v("x"),
            v("y"),
            v("z"),
            v("m"),
        ]),
        ["a", "b", "y"]
    );
}

#[test]
fn preference_makes_the_result_larger_than_the_minimum() {
    assert_eq!(
        selected(vec![
            v("a").mandatory().depends_on(["x", "y"]),
            v("b").mandatory().depends_on(["y"]),
            v("x"),
            v("y"),
        ]),
        ["a", "b", "x", "y"]
    );
}

#[test]
fn only_the_least_preferable_choice_is_acceptable() {
    assert_eq!(
        selected(vec![
            v("a").mandatory().depends_on(["a1", "a2"]),
            v("a1").conflicts_with("c1").conflicts_with("c2"),
            v("a2").conflicts_with("c1"),
            v("b").mandatory().depends_on(["b1", "b2"]),
            v("b1").conflicts_with("c1").conflicts_with("c2"),
            v("b2").conflicts_with("c1"),
            v("c").mandatory().depends_on(["c1", "c2"]),
            v("c1"),
            v("c2"),
        ]),
        ["a", "a2", "b", "b2", "c", "c2"]
    );
}

#[test]
fn preferences_are_respected_with_multiple_dependencies_per_variable() {
    assert_eq!(
        selected(vec![
            v("a")
                .mandatory()
                .depends_on(["x1", "x2"])
                .depends_on(["y1", "y2"]),
            v("x1"),
            v("x2"),
            v("y1"),
            v("y2"),
        ]),
        ["a", "x1", "y1"]
    );
}

#[test]
fn a_duplicate_identifier_is_rejected() {
    match Solver::new(vec![v("a"), v("a")]) {
        Err(SolveError::DuplicateIdentifier(id)) => assert_eq!(id, "a"),
        other => panic!("expected DuplicateIdentifier, got {:?}", other.err()),
    }
}

#[test]
fn explanations_carry_the_applied_constraints() {
    let err = Solver::new(vec![v("a").mandatory().prohibited()])
        .unwrap()
        .solve()
        .unwrap_err();
    let SolveError::NotSatisfiable(e) = err else {
        panic!("expected NotSatisfiable");
    };
    assert_eq!(
        e.constraints(),
        [
            AppliedConstraint {
                subject: "a".into(),
                constraint: Constraint::Mandatory
            },
            AppliedConstraint {
                subject: "a".into(),
                constraint: Constraint::Prohibited
            },
        ]
    );
}
