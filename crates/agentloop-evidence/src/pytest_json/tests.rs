use super::parse;
use crate::report::Outcome;

fn phase(id: &str, when: &str, outcome: &str, extra: &str) -> String {
    format!(
        r#"{{"id": "{id}", "when": "{when}", "outcome": "{outcome}", "duration": 0.25{extra}}}"#
    )
}

/// Each test's phases as pytest reports them, read to one outcome each, as pytest's
/// JUnit XML told them.
#[test]
fn a_tests_outcome_is_the_worst_of_its_phases() {
    let mut reports = Vec::new();
    let test = |id: &str, phases: &[(&str, &str, &str)]| {
        phases
            .iter()
            .map(|(when, outcome, extra)| phase(id, when, outcome, extra))
            .collect::<Vec<_>>()
    };
    let msg = r#", "message": "E   assert 1 == 2""#;
    reports.extend(test(
        "t.py::test_pass",
        &[
            ("setup", "passed", ""),
            ("call", "passed", ""),
            ("teardown", "passed", ""),
        ],
    ));
    reports.extend(test(
        "t.py::test_fail",
        &[
            ("setup", "passed", ""),
            ("call", "failed", msg),
            ("teardown", "passed", ""),
        ],
    ));
    reports.extend(test(
        "t.py::test_setup_error",
        &[("setup", "failed", msg), ("teardown", "passed", "")],
    ));
    reports.extend(test(
        "t.py::test_teardown_error",
        &[
            ("setup", "passed", ""),
            ("call", "passed", ""),
            ("teardown", "failed", msg),
        ],
    ));
    reports.extend(test(
        "t.py::test_fail_and_teardown",
        &[
            ("setup", "passed", ""),
            ("call", "failed", ""),
            ("teardown", "failed", msg),
        ],
    ));
    reports.extend(test(
        "t.py::test_skip",
        &[
            ("setup", "skipped", r#", "message": "no db""#),
            ("teardown", "passed", ""),
        ],
    ));
    reports.extend(test(
        "t.py::test_xfail",
        &[
            ("setup", "passed", ""),
            ("call", "skipped", r#", "xfail": true"#),
            ("teardown", "passed", ""),
        ],
    ));
    reports.extend(test(
        "t.py::test_xpass",
        &[
            ("setup", "passed", ""),
            ("call", "passed", r#", "xfail": true"#),
            ("teardown", "passed", ""),
        ],
    ));
    reports.push(phase("broken.py", "collect", "failed", msg));
    reports.push(phase("skipped_module.py", "collect", "skipped", ""));
    let doc = format!(
        r#"{{"agentloop_pytest_report": 1, "reports": [{}]}}"#,
        reports.join(", ")
    );
    let r = parse(doc.as_bytes()).unwrap();
    let got: Vec<(&str, Outcome)> = r.tests.iter().map(|t| (t.id.as_str(), t.outcome)).collect();
    assert_eq!(
        got,
        [
            ("t.py::test_pass", Outcome::Passed),
            ("t.py::test_fail", Outcome::Failed),
            ("t.py::test_setup_error", Outcome::Errored),
            ("t.py::test_teardown_error", Outcome::Errored),
            ("t.py::test_fail_and_teardown", Outcome::Errored),
            ("t.py::test_skip", Outcome::Skipped),
            ("t.py::test_xfail", Outcome::Xfail),
            ("t.py::test_xpass", Outcome::Passed),
            ("broken.py", Outcome::Errored),
            ("skipped_module.py", Outcome::Skipped),
        ]
    );
    assert!(
        r.notes.is_empty(),
        "a test's phases are one test: {:?}",
        r.notes
    );
    assert_eq!(
        r.tests[0].duration_ms, 750,
        "its phases' durations together"
    );
    assert_eq!(r.tests[0].message, None);
    assert_eq!(r.tests[1].message.as_deref(), Some("E   assert 1 == 2"));
    assert_eq!(r.tests[5].message.as_deref(), Some("no db"));
}

#[test]
fn a_report_cut_off_or_of_another_kind_is_not_read() {
    let whole = format!(
        r#"{{"agentloop_pytest_report": 1, "reports": [{}]}}"#,
        phase("t.py::a", "call", "passed", "")
    );
    assert_eq!(parse(whole.as_bytes()).unwrap().tests.len(), 1);
    let cut = &whole[..whole.len() - 3];
    assert!(
        parse(cut.as_bytes())
            .unwrap_err()
            .contains("not agentloop's pytest report")
    );
    let other = whole.replace(
        r#""agentloop_pytest_report": 1"#,
        r#""agentloop_pytest_report": 2"#,
    );
    assert!(
        parse(other.as_bytes())
            .unwrap_err()
            .contains("another version")
    );
    let odd = whole.replace(r#""outcome": "passed""#, r#""outcome": "rerun""#);
    assert!(
        parse(odd.as_bytes())
            .unwrap_err()
            .contains("an outcome pytest does not give")
    );
    assert!(parse(b"<testsuite/>").is_err());
}
