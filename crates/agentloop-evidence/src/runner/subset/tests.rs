use super::*;

#[test]
fn a_pytest_check_with_paths_added_is_a_part_of_the_one_without() {
    let d = tempfile::tempdir().unwrap();
    let w = d.path();
    std::fs::create_dir_all(w.join("tests")).unwrap();
    std::fs::write(w.join("tests/test_x.py"), "").unwrap();
    let part = selected_from(
        "python3 -m pytest -q tests/test_x.py",
        "python3 -m pytest -q",
        w,
    );
    assert_eq!(part, Some(vec!["tests/test_x.py".to_string()]));
    let node = selected_from(
        "python3 -m pytest -q ./tests/test_x.py::test_a",
        "python3 -m pytest -q",
        w,
    );
    assert_eq!(node, Some(vec!["tests/test_x.py::test_a".to_string()]));
    // Under the whole's own paths.
    let under = selected_from(
        "python3 -m pytest tests/test_x.py",
        "python3 -m pytest tests",
        w,
    );
    assert_eq!(under, Some(vec!["tests/test_x.py".to_string()]));
    // An option of its own, another runner's words, a path outside the whole's, a
    // path that is not there, a whole that may stop early: none is a part.
    std::fs::create_dir_all(w.join("other")).unwrap();
    for (part, whole) in [
        (
            "python3 -m pytest -q -k add tests/test_x.py",
            "python3 -m pytest -q",
        ),
        ("python3 -m pytest tests/test_x.py", "python3 -m pytest -q"),
        (
            "python3 -m pytest -q tests/test_x.py",
            "python3 -m pytest -q other/",
        ),
        (
            "python3 -m pytest -q tests/test_gone.py",
            "python3 -m pytest -q",
        ),
        ("python3 -m pytest -q", "python3 -m pytest -q"),
        (
            "python3 -m pytest -x tests/test_x.py",
            "python3 -m pytest -x",
        ),
        ("go test ./tests/", "go test"),
    ] {
        assert_eq!(selected_from(part, whole, w), None, "{part} of {whole}");
    }
}

#[test]
fn what_would_make_the_parts_own_run_differ_keeps_it_apart() {
    let d = tempfile::tempdir().unwrap();
    let w = d.path();
    for f in [
        "tests/unit/test_a.py",
        "tests/integration/test_b.py",
        "pkg/foo/tests/test_c.py",
        "api/test_d.py",
    ] {
        std::fs::create_dir_all(w.join(f).parent().unwrap()).unwrap();
        std::fs::write(w.join(f), "").unwrap();
    }
    let part = |p: &str, whole: &str| selected_from(p, whole, w);
    // A configuration of its own below the root: another rootdir.
    std::fs::write(
        w.join("pkg/foo/pyproject.toml"),
        "[tool.pytest.ini_options]\n",
    )
    .unwrap();
    assert_eq!(part("pytest pkg/foo/tests", "pytest"), None);
    // `testpaths`: the whole collects only there.
    std::fs::write(
        w.join("pytest.ini"),
        "[pytest]\ntestpaths =\n    tests/unit\n",
    )
    .unwrap();
    assert_eq!(part("pytest tests", "pytest"), None);
    assert_eq!(
        part("pytest tests/unit/test_a.py", "pytest"),
        Some(vec!["tests/unit/test_a.py".to_string()])
    );
    // `-x` in `addopts`: the whole may stop before the part's tests.
    std::fs::write(w.join("pytest.ini"), "[pytest]\naddopts = -q -x\n").unwrap();
    assert_eq!(part("pytest tests/unit/test_a.py", "pytest"), None);
    std::fs::remove_file(w.join("pytest.ini")).unwrap();
    // An option's value that happens to name a directory is no path.
    assert_eq!(part("pytest -k api", "pytest -k db"), None);
    // A file that did not import in the whole's run.
    let tests: BTreeMap<String, Outcome> = [
        ("tests/unit/test_a.py", Outcome::Errored),
        ("tests/unit/test_e.py::test_e", Outcome::Passed),
    ]
    .into_iter()
    .map(|(i, o)| (i.to_string(), o))
    .collect();
    assert_eq!(cut(&tests, &["tests/unit".to_string()]), None);
}

#[test]
fn a_go_test_of_some_packages_is_a_part_of_one_of_all() {
    let d = tempfile::tempdir().unwrap();
    let w = d.path();
    std::fs::write(w.join("go.mod"), "module example.com/m\n\ngo 1.21\n").unwrap();
    for p in ["reverse", "util/inner"] {
        std::fs::create_dir_all(w.join(p)).unwrap();
    }
    let part = |p: &str, whole: &str| selected_from(p, whole, w);
    assert_eq!(
        part("go test ./reverse/", "go test ./..."),
        Some(vec!["example.com/m/reverse::".to_string()])
    );
    assert_eq!(
        part("go test -race ./util/...", "go test -race ./..."),
        Some(vec!["example.com/m/util/...".to_string()])
    );
    assert_eq!(
        part("go test ./util/inner", "go test ./util/..."),
        Some(vec!["example.com/m/util/inner::".to_string()])
    );
    for (p, whole) in [
        ("go test -race ./reverse/", "go test ./..."),
        ("go test ./util/...", "go test ./util"),
        ("go test -failfast ./reverse/", "go test -failfast ./..."),
        ("go test ./gone/", "go test ./..."),
        ("go test ./reverse/", "go test ./util/..."),
    ] {
        assert_eq!(part(p, whole), None, "{p} of {whole}");
    }
    let tests: BTreeMap<String, Outcome> = [
        ("example.com/m/reverse::TestA", Outcome::Passed),
        ("example.com/m/reverse/deep::TestB", Outcome::Passed),
        ("example.com/m/util::TestC", Outcome::Failed),
        ("example.com/m/util/inner::TestD", Outcome::Passed),
    ]
    .into_iter()
    .map(|(i, o)| (i.to_string(), o))
    .collect();
    let ids =
        |sel: &str| cut(&tests, &[sel.to_string()]).map(|m| m.into_keys().collect::<Vec<_>>());
    assert_eq!(
        ids("example.com/m/reverse::").unwrap(),
        ["example.com/m/reverse::TestA"]
    );
    assert_eq!(
        ids("example.com/m/util/...").unwrap(),
        [
            "example.com/m/util/inner::TestD",
            "example.com/m/util::TestC"
        ]
    );
    // A package that did not build in the whole's run.
    let mut broken = tests.clone();
    broken.insert("example.com/m/reverse".into(), Outcome::Errored);
    assert_eq!(cut(&broken, &["example.com/m/reverse::".to_string()]), None);
}

#[test]
fn the_whole_report_is_cut_to_the_paths() {
    let tests: BTreeMap<String, Outcome> = [
        ("tests/test_x.py::test_a", Outcome::Passed),
        ("tests/test_x.py::test_a[1]", Outcome::Failed),
        ("tests/test_x.py::TestC::test_b", Outcome::Passed),
        ("tests/test_xy.py::test_c", Outcome::Passed),
        ("tests/sub/test_y.py::test_d", Outcome::Passed),
    ]
    .into_iter()
    .map(|(i, o)| (i.to_string(), o))
    .collect();
    let ids = |paths: &[&str]| {
        cut(
            &tests,
            &paths.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
        )
        .map(|m| m.into_keys().collect::<Vec<_>>())
    };
    assert_eq!(
        ids(&["tests/test_x.py"]).unwrap(),
        [
            "tests/test_x.py::TestC::test_b",
            "tests/test_x.py::test_a",
            "tests/test_x.py::test_a[1]"
        ]
    );
    assert_eq!(
        ids(&["tests/test_x.py::test_a"]).unwrap(),
        ["tests/test_x.py::test_a", "tests/test_x.py::test_a[1]"]
    );
    assert_eq!(
        ids(&["tests/sub/"]).unwrap(),
        ["tests/sub/test_y.py::test_d"]
    );
    assert_eq!(ids(&["tests/test_none.py"]), None);
}

/// pytest 9's native `[tool.pytest]` table is read as `[tool.pytest.ini_options]` is,
/// `pytest.toml` comes first, and `pytest.ini` is the configuration even without a
/// `[pytest]` section.
#[test]
fn every_configuration_pytest_9_reads_is_the_wholes() {
    let d = tempfile::tempdir().unwrap();
    let w = d.path();
    std::fs::create_dir_all(w.join("tests/unit")).unwrap();
    std::fs::create_dir_all(w.join("tests/integration")).unwrap();
    std::fs::write(w.join("tests/unit/test_a.py"), "").unwrap();
    std::fs::write(w.join("tests/integration/test_b.py"), "").unwrap();
    std::fs::write(
        w.join("pyproject.toml"),
        "[tool.pytest]\ntestpaths = [\"tests/unit\"]\naddopts = [\"-q\"]\n",
    )
    .unwrap();
    assert_eq!(
        pytest_settings(w),
        (vec!["tests/unit".to_string()], "-q".to_string())
    );
    // `python3 -m pytest` runs tests/unit only: `tests` is not a part of it.
    assert_eq!(
        selected_from("python3 -m pytest tests", "python3 -m pytest", w),
        None
    );
    std::fs::write(
        w.join("pyproject.toml"),
        "[tool.pytest]\ntestpaths = [\"tests\"]\naddopts = [\"-xq\"]\n",
    )
    .unwrap();
    assert_eq!(
        selected_from("python3 -m pytest tests/unit", "python3 -m pytest", w),
        None,
        "-xq stops at the first failure"
    );
    std::fs::write(w.join("pytest.ini"), "# nothing\n").unwrap();
    assert_eq!(pytest_settings(w), (Vec::new(), String::new()));
    std::fs::write(
        w.join("pytest.toml"),
        "[pytest]\ntestpaths = [\"tests/integration\"]\n",
    )
    .unwrap();
    assert_eq!(pytest_settings(w).0, vec!["tests/integration".to_string()]);
}

#[test]
fn short_options_run_together_that_hold_x_stop_early() {
    assert!(exits_first_among("-xq"));
    assert!(exits_first_among("-vx"));
    assert!(!exits_first_among("-rx"), "-r takes `x` as its value");
    assert!(!exits_first_among("-q"));
    assert!(!exits_first_among("--exitfirst"));
    assert!(!exits_first_among("-n4"));
}
