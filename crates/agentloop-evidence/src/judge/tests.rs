use super::*;
use crate::report::TestResult;

fn report(tests: &[(&str, Outcome)]) -> Report {
    Report::from_tests(tests.iter().map(|(id, o)| TestResult {
        id: id.to_string(),
        outcome: *o,
        duration_ms: 0,
        message: (*o != Outcome::Passed).then(|| format!("{id} said no")),
    }))
}

fn base(tests: &[(&str, Outcome)]) -> BTreeMap<String, Outcome> {
    tests.iter().map(|(id, o)| (id.to_string(), *o)).collect()
}

/// What a task's check is judged against: its named tests (the task's own, or not),
/// nothing landed, and the test baseline `baseline`.
fn expect<'a>(
    named: &'a [TestName],
    own: bool,
    baseline: &'a BTreeMap<String, Outcome>,
) -> Expect<'a> {
    Expect {
        named,
        own,
        landed: false,
        known: KnownGood {
            baseline: Some(baseline),
            ..Default::default()
        },
    }
}

use Outcome::*;

#[test]
fn named_tests_must_pass_and_others_failing_do_not_matter() {
    let b = base(&[("t::a", Passed), ("t::b", Failed), ("t::c", Failed)]);
    let names = TestName::parse_list("t::b").unwrap();
    let e = expect(&names, true, &b);
    // t::c belongs to a later task: still failing, and exit 1, is fine.
    let v = judge_command(
        &report(&[("t::a", Passed), ("t::b", Passed), ("t::c", Failed)]),
        Some(1),
        &e,
    );
    assert!(v.passed, "{v:?}");
    assert_eq!(v.named.len(), 1);
    // Named test skipped, xfail, errored or absent: not passed.
    for o in [Skipped, Xfail, Errored, Failed] {
        let v = judge_command(&report(&[("t::a", Passed), ("t::b", o)]), Some(0), &e);
        assert!(!v.passed, "{o:?}");
    }
    let mut all = Judged::default();
    let v = judge_command(&report(&[("t::a", Passed)]), Some(0), &e);
    all.add(&v);
    assert!(all.close(&names).unwrap().contains("t::b"), "absent");
}

#[test]
fn a_test_that_passed_at_the_baseline_must_still_pass_or_be_flaky() {
    let b = base(&[("t::a", Passed), ("t::b", Failed)]);
    let e = expect(&[], false, &b);
    let v = judge_command(&report(&[("t::a", Failed), ("t::b", Failed)]), Some(1), &e);
    assert!(!v.passed);
    assert_eq!(v.regressions[0].id, "t::a");
    assert_eq!(v.regressions[0].before, Some(Passed));
    // Gone is a regression too.
    let v = judge_command(&report(&[("t::b", Failed)]), Some(1), &e);
    assert_eq!(v.regressions[0].now, None);
    // A run-wide check ignores tests failing at the baseline, and its exit code.
    let v = judge_command(&report(&[("t::a", Passed), ("t::b", Failed)]), Some(1), &e);
    assert!(v.passed, "{v:?}");
    // Flaky: forgiven, and said.
    let e = Expect {
        known: KnownGood {
            baseline: Some(&b),
            flaky: vec!["t::a"],
            ..Default::default()
        },
        ..e
    };
    let v = judge_command(&report(&[("t::a", Failed), ("t::b", Failed)]), Some(1), &e);
    assert!(v.passed);
    assert_eq!(v.flaky, ["t::a"]);
}

#[test]
fn a_dropped_test_is_named_and_fails_the_check() {
    let b = base(&[("t::a", Passed), ("t::b", Failed)]);
    let e = expect(&[], false, &b);
    let v = judge_command(&report(&[("t::a", Passed)]), Some(0), &e);
    assert!(!v.passed);
    assert_eq!(v.dropped[0].id, "t::b");
    assert!(v.reason.unwrap().contains("no longer run"));
}

#[test]
fn an_own_check_without_names_needs_every_test_passing_and_exit_zero() {
    let e = Expect {
        named: &[],
        own: true,
        landed: false,
        known: KnownGood::default(),
    };
    assert!(judge_command(&report(&[("a", Passed), ("b", Skipped)]), Some(0), &e).passed);
    assert!(!judge_command(&report(&[("a", Passed), ("b", Failed)]), Some(0), &e).passed);
    let v = judge_command(&report(&[("a", Passed)]), Some(1), &e);
    assert!(
        v.reason.unwrap().contains("exited 1"),
        "exit 0 forced or not, both must agree"
    );
    assert!(
        !judge_command(&report(&[]), Some(0), &e).passed,
        "no tests is no evidence"
    );
}

#[test]
fn a_test_gone_with_a_file_a_person_approved_removing_is_not_held_against_the_task() {
    let b = base(&[
        ("tests/a.py::t1", Passed),
        ("tests/a.py::t2", Failed),
        ("tests/b.py::t", Passed),
    ]);
    let e = Expect {
        named: &[],
        own: false,
        landed: false,
        known: KnownGood {
            baseline: Some(&b),
            excused: vec!["tests/a.py"],
            ..Default::default()
        },
    };
    assert!(judge_command(&report(&[("tests/b.py::t", Passed)]), Some(0), &e).passed);
    // Still there and failing: that is a regression all the same.
    let v = judge_command(
        &report(&[("tests/a.py::t1", Failed), ("tests/b.py::t", Passed)]),
        Some(1),
        &e,
    );
    assert!(!v.passed);
}

#[test]
fn a_regression_check_with_no_baseline_wants_every_test_passing() {
    let e = Expect {
        named: &[],
        own: false,
        landed: false,
        known: KnownGood::default(),
    };
    assert!(!judge_command(&report(&[("a", Passed), ("b", Failed)]), Some(1), &e).passed);
    assert!(judge_command(&report(&[("a", Passed)]), Some(0), &e).passed);
}

#[test]
fn a_module_skipped_whole_at_the_baseline_is_not_gone_once_its_tests_run() {
    let b = base(&[("tests/a.py::t1", Passed), ("tests/test_fast.py", Skipped)]);
    let e = expect(&[], false, &b);
    let v = judge_command(
        &report(&[
            ("tests/a.py::t1", Passed),
            ("tests/test_fast.py::test_fast", Passed),
        ]),
        Some(0),
        &e,
    );
    assert!(v.passed, "{v:?}");
    // Still skipped whole, or gone.
    let v = judge_command(&report(&[("tests/a.py::t1", Passed)]), Some(0), &e);
    assert_eq!(v.dropped[0].id, "tests/test_fast.py");
}

#[test]
fn a_module_that_did_not_import_at_the_baseline_is_not_gone_once_its_tests_run() {
    let b = base(&[("tests/a.py::t1", Passed), ("tests/b.py", Errored)]);
    let names = TestName::parse_list("tests/b.py::*").unwrap();
    let e = expect(&names, false, &b);
    let v = judge_command(
        &report(&[("tests/a.py::t1", Passed), ("tests/b.py::t", Passed)]),
        Some(0),
        &e,
    );
    assert!(v.passed, "{v:?}");
    // The module deleted instead: gone.
    let v = judge_command(&report(&[("tests/a.py::t1", Passed)]), Some(0), &e);
    assert_eq!(v.dropped[0].id, "tests/b.py");
}

#[test]
fn a_landed_tasks_check_keeps_what_passed_and_asks_no_more() {
    // A check with no baseline (a planner's), of a task already landed: the test it
    // made pass must still pass; the test that never passed is not held against
    // the batch, as it would be against a check of its own.
    let e = Expect {
        named: &[],
        own: false,
        landed: true,
        known: KnownGood {
            baseline: None,
            made_passing: ["t::new"].into_iter().collect(),
            ..Default::default()
        },
    };
    let v = judge_command(
        &report(&[("t::new", Passed), ("t::old", Failed)]),
        Some(1),
        &e,
    );
    assert!(v.passed, "{v:?}");
    let v = judge_command(
        &report(&[("t::new", Failed), ("t::old", Failed)]),
        Some(1),
        &e,
    );
    assert!(!v.passed);
    assert_eq!(v.regressions.len(), 1, "{v:?}");
    assert_eq!(v.regressions[0].id, "t::new");
}

#[test]
fn a_task_done_since_keeps_its_tests_passing() {
    let b = base(&[("t::a", Passed), ("t::b", Failed)]);
    let e = Expect {
        named: &[],
        own: false,
        landed: false,
        known: KnownGood {
            baseline: Some(&b),
            made_passing: ["t::b"].into_iter().collect(),
            ..Default::default()
        },
    };
    let v = judge_command(&report(&[("t::a", Passed), ("t::b", Failed)]), Some(1), &e);
    assert_eq!(v.regressions[0].id, "t::b");
}

#[test]
fn the_digest_quotes_each_test_and_its_own_message() {
    let mut j = Judged::default();
    j.add(&CommandVerdict {
        named: vec![
            Seen {
                id: "t::b".into(),
                before: Some(Failed),
                now: Some(Failed),
                message: Some("assert 2 == 3".into()),
            },
            Seen {
                id: "t::c".into(),
                before: Some(Failed),
                now: Some(Passed),
                message: None,
            },
        ],
        regressions: vec![Seen {
            id: "t::a".into(),
            before: Some(Passed),
            now: None,
            message: None,
        }],
        ..Default::default()
    });
    let names = TestName::parse_list("t::b, t::c, t::d").unwrap();
    assert!(j.close(&names).is_some());
    assert_eq!(j.named_passing(), (1, 3));
    let d = j.digest().unwrap();
    assert!(d.contains("1 of 3 pass"), "{d}");
    assert!(
        d.contains("- t::b: failed (at the baseline: failed)\n  ```\n  assert 2 == 3"),
        "{d}"
    );
    assert!(d.contains("- t::d: no test by that name ran"), "{d}");
    assert!(
        d.contains("- t::a: absent (at the baseline: passed)"),
        "{d}"
    );
}
