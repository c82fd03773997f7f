//! The runner on real commands: what a check imports, where it stops, what its report
//! says.

use super::*;

#[test]
fn a_check_imports_the_python_project_from_the_tree_judged() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(judged_tree_env(dir.path(), None), None, "no Python project");
    std::fs::write(
        dir.path().join("pyproject.toml"),
        "[project]\nname = \"x\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("src/x")).unwrap();
    std::fs::write(dir.path().join("src/x/__init__.py"), "").unwrap();
    let (k, v) = judged_tree_env(dir.path(), None).unwrap();
    assert_eq!(k, "PYTHONPATH");
    let first = std::env::split_paths(&v).next().unwrap();
    assert_eq!(first, dir.path().join("src"));
}

#[test]
fn runs_and_stops_at_first_failure() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("verify.log");
    let r = Runner {
        workdir: dir.path(),
        timeout: Duration::from_secs(10),
        output_cap: 4096,
        log: &log,
        wrap: Vec::new(),
        bytecode: Default::default(),
        tests: None,
        jobs: Default::default(),
    };
    let v = r
        .run(
            1,
            &[
                "echo ok".into(),
                "echo broken >&2; exit 2".into(),
                "echo never".into(),
            ],
            || false,
        )
        .unwrap();
    assert!(!v.passed);
    assert_eq!(v.commands.len(), 2);
    assert_eq!(v.commands[1].exit_code, Some(2));
    assert!(v.digest.unwrap().contains("broken"));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("$ echo ok\nok\n[exit 0 after"), "{text}");
}

fn junit(cases: &[(&str, bool)]) -> String {
    let mut x = String::from("<testsuites><testsuite name=\"s\">");
    for (name, ok) in cases {
        if *ok {
            x.push_str(&format!("<testcase classname=\"t\" name=\"{name}\"/>"));
        } else {
            x.push_str(&format!(
                "<testcase classname=\"t\" name=\"{name}\"><failure message=\"{name} is wrong\"/></testcase>"
            ));
        }
    }
    x.push_str("</testsuite></testsuites>");
    x
}

#[test]
fn a_check_that_writes_a_junit_report_is_judged_by_it_not_its_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("verify.log");
    // The check exits 0, but its own report says the named test failed.
    let script = format!(
        "cat > \"$AGENTLOOP_TEST_REPORT\" <<'EOF'\n{}\nEOF\nexit 0",
        junit(&[("a", true), ("b", false)])
    );
    let expected = Expected {
        named: evidence::TestName::parse_list("t::b").unwrap(),
        own: vec![script.clone()],
        ..Default::default()
    };
    let r = Runner {
        workdir: dir.path(),
        timeout: Duration::from_secs(10),
        output_cap: 4096,
        log: &log,
        wrap: Vec::new(),
        bytecode: Default::default(),
        tests: Some(TestsCheck {
            expected: &expected,
            reports: dir.path().join("reports"),
        }),
        jobs: Default::default(),
    };
    let v = r.run(1, std::slice::from_ref(&script), || false).unwrap();
    assert!(!v.passed, "exit 0 with the named test failed");
    let ct = v.commands[0].tests.as_ref().unwrap();
    assert_eq!(ct.counts.failed, 1);
    assert!(
        v.digest.as_deref().unwrap().contains("t::b: failed"),
        "{:?}",
        v.digest
    );
    let e = v.evidence.unwrap();
    assert_eq!(e.named_passing(), (0, 1));
    // A check that writes no report is judged by its exit code, and says so.
    let v = r.run(2, &["true".to_string()], || false).unwrap();
    assert!(v.commands[0].tests.is_none());
    assert!(!v.passed, "the named test was never reported");
    assert!(v.digest.unwrap().contains("no test by that name ran"));
}
