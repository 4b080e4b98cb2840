//! Behaviour beyond deppy's own test table: errors, messages, every constraint kind, the
//! minimisation phase, search corrections, and determinism.

// Test helpers outside #[test] functions are not covered by clippy.toml's test allowances.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use deppy::{
    AppliedConstraint, Constraint, Identifier, NotSatisfiable, SolveError, Solver, Variable,
    identifiers,
};

fn v(id: &str) -> Variable {
    Variable::new(id)
}

fn selected(variables: Vec<Variable>) -> Vec<String> {
    Solver::new(variables)
        .unwrap()
        .solve()
        .unwrap()
        .selected()
        .iter()
        .map(|id| id.as_str().to_owned())
        .collect()
}

fn explanation(variables: Vec<Variable>) -> Vec<String> {
    match Solver::new(variables).unwrap().solve() {
        Err(SolveError::NotSatisfiable(e)) => {
            e.constraints().iter().map(ToString::to_string).collect()
        }
        other => panic!("expected NotSatisfiable, got {other:?}"),
    }
}

#[test]
fn unknown_references_are_all_reported_in_input_order() {
    let err = Solver::new(vec![
        v("a").depends_on(["x", "b"]),
        v("b").conflicts_with("y"),
    ])
    .err()
    .unwrap();
    let SolveError::UnknownReferences(refs) = &err else {
        panic!("expected UnknownReferences, got {err:?}");
    };
    let pairs: Vec<(&str, &str)> = refs
        .iter()
        .map(|r| (r.subject.as_str(), r.referenced.as_str()))
        .collect();
    assert_eq!(pairs, [("a", "x"), ("b", "y")]);
    assert_eq!(
        err.to_string(),
        r#"variable "x" referenced by "a" but not provided; variable "y" referenced by "b" but not provided"#
    );
}

#[test]
fn a_duplicate_identifier_reads_like_deppy() {
    let err = Solver::new(vec![v("a"), v("b"), v("a")]).err().unwrap();
    assert_eq!(err.to_string(), r#"duplicate identifier "a" in input"#);
}

#[test]
fn an_empty_explanation_prints_only_the_header() {
    assert_eq!(
        NotSatisfiable(vec![]).to_string(),
        "constraints not satisfiable"
    );
}

#[test]
fn an_explanation_prints_one_constraint_per_line() {
    let single = NotSatisfiable(vec![AppliedConstraint {
        subject: "a".into(),
        constraint: Constraint::Mandatory,
    }]);
    assert_eq!(
        single.to_string(),
        "constraints not satisfiable:\na is mandatory"
    );
    let multiple = NotSatisfiable(vec![
        AppliedConstraint {
            subject: "a".into(),
            constraint: Constraint::Mandatory,
        },
        AppliedConstraint {
            subject: "b".into(),
            constraint: Constraint::Prohibited,
        },
    ]);
    assert_eq!(
        multiple.to_string(),
        "constraints not satisfiable:\na is mandatory\nb is prohibited"
    );
}

#[test]
fn every_constraint_kind_has_a_message() {
    let subject = Identifier::from("s");
    let cases = [
        (Constraint::Mandatory, "s is mandatory"),
        (Constraint::Prohibited, "s is prohibited"),
        (
            Constraint::dependency(["a", "b"]),
            "s requires at least one of a, b",
        ),
        (
            Constraint::dependency(Vec::<&str>::new()),
            "s has a dependency without any candidates to satisfy it",
        ),
        (Constraint::conflict("a"), "s conflicts with a"),
        (
            Constraint::at_most(1, ["x", "y"]),
            "s permits at most 1 of x, y",
        ),
        (Constraint::or("a", false, false), "s or a"),
        (Constraint::or("a", true, false), "not s or a"),
        (Constraint::or("a", false, true), "s or not a"),
        (
            Constraint::Mandatory.described("subscription s exists"),
            "subscription s exists",
        ),
    ];
    for (constraint, message) in cases {
        assert_eq!(constraint.message(&subject), message);
    }
}

#[test]
fn a_described_constraint_explains_with_its_own_message_and_keeps_its_logic() {
    let lines = explanation(vec![
        v("sub")
            .with(Constraint::Mandatory.described("subscription sub exists"))
            .with(
                Constraint::dependency(["a"])
                    .described("subscription sub requires at least one of a"),
            ),
        v("a").prohibited(),
    ]);
    assert_eq!(
        lines,
        [
            "subscription sub exists",
            "subscription sub requires at least one of a",
            "a is prohibited"
        ]
    );
}

#[test]
fn a_described_dependency_is_still_explored_by_preference() {
    assert_eq!(
        selected(vec![
            v("a")
                .mandatory()
                .with(Constraint::dependency(["x", "y"]).described("a needs x or y")),
            v("x"),
            v("y"),
        ]),
        ["a", "x"]
    );
}

#[test]
fn a_dependency_without_candidates_prohibits_its_variable() {
    let lines = explanation(vec![v("a").mandatory().depends_on(Vec::<&str>::new())]);
    assert_eq!(
        lines,
        [
            "a is mandatory",
            "a has a dependency without any candidates to satisfy it"
        ]
    );
}

#[test]
fn at_most_two_admits_two_and_refuses_three() {
    let base = |mandatory: &[&str]| {
        let mut vars = vec![v("rule").at_most(2, ["x", "y", "z"])];
        for id in ["x", "y", "z"] {
            let var = v(id);
            vars.push(if mandatory.contains(&id) {
                var.mandatory()
            } else {
                var
            });
        }
        vars
    };
    assert_eq!(selected(base(&["x", "z"])), ["x", "z"]);
    assert_eq!(
        explanation(base(&["x", "y", "z"])),
        [
            "rule permits at most 2 of x, y, z",
            "x is mandatory",
            "y is mandatory",
            "z is mandatory"
        ]
    );
}

#[test]
fn at_most_zero_prohibits_every_listed_variable() {
    assert_eq!(
        explanation(vec![v("rule").at_most(0, ["x"]), v("x").mandatory()]),
        ["rule permits at most 0 of x", "x is mandatory"]
    );
}

#[test]
fn at_most_over_many_variables_still_holds_and_is_explained() {
    // Twelve candidates: beyond the pairwise encoding, so this runs the sequential counter.
    let ids: Vec<String> = (0..12).map(|i| format!("p{i}")).collect();
    let problem = |pinned: &[&str]| {
        let mut vars = vec![
            v("rule").at_most(1, ids.iter()),
            v("root")
                .mandatory()
                .depends_on(ids.iter())
                .depends_on(ids.iter().rev()),
        ];
        vars.extend(ids.iter().map(|id| {
            if pinned.contains(&id.as_str()) {
                v(id).mandatory()
            } else {
                v(id)
            }
        }));
        vars
    };
    // The reversed list is satisfied by p0, chosen for the first list.
    assert_eq!(selected(problem(&[])), ["root", "p0"]);
    // A mandatory version is chosen before dependencies are explored, and satisfies both.
    assert_eq!(selected(problem(&["p5"])), ["root", "p5"]);
    assert_eq!(
        explanation(problem(&["p3", "p11"])),
        [
            "rule permits at most 1 of p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11",
            "p3 is mandatory",
            "p11 is mandatory"
        ]
    );
}

#[test]
fn or_forces_one_side_and_the_minimisation_selects_only_one() {
    let solution = Solver::new(vec![v("x").with(Constraint::or("y", false, false)), v("y")])
        .unwrap()
        .solve()
        .unwrap();
    assert_eq!(solution.selected().len(), 1, "{:?}", solution.selected());
}

#[test]
fn or_with_negations_reads_as_an_implication() {
    // "not a or b": a implies b.
    assert_eq!(
        selected(vec![
            v("a").mandatory().with(Constraint::or("b", true, false)),
            v("b")
        ]),
        ["a", "b"]
    );
    assert_eq!(
        explanation(vec![
            v("a").mandatory().with(Constraint::or("b", true, false)),
            v("b").prohibited(),
        ]),
        ["a is mandatory", "not a or b", "b is prohibited"]
    );
}

#[test]
fn forced_variables_beyond_the_guesses_are_kept_to_a_minimum() {
    // Nothing is mandatory, so the search guesses nothing; the Or constraints force one of
    // each pair, and z alone satisfies all three.
    let solution = Solver::new(vec![
        v("x").with(Constraint::or("z", false, false)),
        v("y").with(Constraint::or("z", false, false)),
        v("w").with(Constraint::or("z", false, false)),
        v("z"),
    ])
    .unwrap()
    .solve()
    .unwrap();
    assert_eq!(solution.selected(), ["z"]);
}

#[test]
fn a_guess_that_only_a_full_solve_refutes_is_replaced_by_the_next_candidate() {
    // Whichever of p, q is chosen conflicts with whichever of r, s is chosen, so x1 is
    // impossible, but unit propagation cannot see it when x1 is guessed.
    let vars = vec![
        v("a").mandatory().depends_on(["x1", "x2"]),
        v("x1").depends_on(["p", "q"]).depends_on(["r", "s"]),
        v("x2"),
        v("p").conflicts_with("r").conflicts_with("s"),
        v("q").conflicts_with("r").conflicts_with("s"),
        v("r"),
        v("s"),
    ];
    let solution = Solver::new(vars).unwrap().solve().unwrap();
    assert_eq!(solution.selected(), ["a", "x2"]);
    assert_eq!(solution.stats().corrections, 1);
}

#[test]
fn guesses_that_propagation_completes_need_no_sat_solver() {
    let vars = vec![
        v("a").mandatory().depends_on(["b1", "b2"]),
        v("b1").depends_on(["c"]),
        v("b2"),
        v("c").conflicts_with("b2"),
        v("d").depends_on(["b2"]),
    ];
    let solution = Solver::new(vars).unwrap().solve().unwrap();
    assert_eq!(solution.selected(), ["a", "b1", "c"]);
    assert_eq!(solution.stats().sat_calls, 0);
    assert_eq!(solution.stats().corrections, 0);
}

#[test]
fn a_model_that_needs_more_than_the_guesses_goes_to_the_sat_solver() {
    // "x or y" holds for every selection, and nothing the search guesses satisfies it: one of
    // them must be added, which propagation alone cannot choose.
    let vars = vec![
        v("a").mandatory(),
        v("x").with(Constraint::or("y", false, false)),
        v("y"),
    ];
    let solution = Solver::new(vars).unwrap().solve().unwrap();
    assert_eq!(solution.selected().len(), 2);
    assert_eq!(solution.selected()[0], "a");
    assert!(solution.stats().sat_calls > 0);
}

#[test]
fn a_correction_resumes_the_search_after_the_refuted_guess() {
    // As above, but the refuted guess sits behind an earlier, good one, and later choices
    // must be made again under the replacement.
    let vars = vec![
        v("root")
            .mandatory()
            .depends_on(["b"])
            .depends_on(["x1", "x2"]),
        v("b").depends_on(["b1", "b2"]),
        v("b1"),
        v("b2"),
        v("x1").depends_on(["p", "q"]).depends_on(["r", "s"]),
        v("x2").depends_on(["p", "q"]),
        v("p").conflicts_with("r").conflicts_with("s"),
        v("q").conflicts_with("r").conflicts_with("s"),
        v("r"),
        v("s"),
    ];
    let solution = Solver::new(vars).unwrap().solve().unwrap();
    assert_eq!(solution.selected(), ["root", "b", "b1", "x2", "p"]);
    assert!(solution.stats().corrections >= 1);
}

#[test]
fn solving_twice_gives_the_same_answer() {
    let vars = vec![
        v("a").mandatory().depends_on(["x", "y"]),
        v("x").conflicts_with("z"),
        v("y"),
        v("z").with(Constraint::or("w", false, false)),
        v("w"),
    ];
    let solver = Solver::new(vars).unwrap();
    let first = solver.solve().unwrap();
    let second = solver.solve().unwrap();
    assert_eq!(first.selected(), second.selected());
    assert_eq!(first.indices(), second.indices());
}

#[test]
fn the_solution_reports_identifiers_positions_and_membership() {
    let solution = Solver::new(vec![
        v("unused"),
        v("b").mandatory().depends_on(["a"]),
        v("a"),
    ])
    .unwrap()
    .solve()
    .unwrap();
    assert_eq!(solution.selected(), ["b", "a"]);
    assert_eq!(solution.indices(), [1, 2]);
    assert!(solution.is_selected("a"));
    assert!(!solution.is_selected("unused"));
    assert!(!solution.is_selected("missing"));
}

#[test]
fn a_shared_candidate_list_behaves_like_separate_copies() {
    let shared = identifiers(["v3", "v2", "v1"]);
    let with_shared = vec![
        v("a")
            .mandatory()
            .with(Constraint::Dependency(shared.clone())),
        v("b")
            .mandatory()
            .with(Constraint::Dependency(shared.clone())),
        v("v3").conflicts_with("b"),
        v("v2"),
        v("v1"),
    ];
    let with_copies = vec![
        v("a").mandatory().depends_on(["v3", "v2", "v1"]),
        v("b").mandatory().depends_on(["v3", "v2", "v1"]),
        v("v3").conflicts_with("b"),
        v("v2"),
        v("v1"),
    ];
    assert_eq!(selected(with_shared.clone()), ["a", "b", "v2"]);
    assert_eq!(selected(with_shared), selected(with_copies));
}

#[test]
fn explanations_keep_only_the_constraints_that_matter() {
    // Plenty of satisfiable noise around one conflict.
    let mut vars: Vec<Variable> = (0..50)
        .map(|i| {
            v(&format!("n{i}"))
                .mandatory()
                .depends_on([format!("m{i}")])
        })
        .collect();
    vars.extend((0..50).map(|i| v(&format!("m{i}"))));
    vars.push(v("a").mandatory().conflicts_with("b"));
    vars.push(v("b").mandatory());
    assert_eq!(
        explanation(vars),
        ["a is mandatory", "a conflicts with b", "b is mandatory"]
    );
}
