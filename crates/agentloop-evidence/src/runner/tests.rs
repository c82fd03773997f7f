use super::*;

fn inv(cmd: &str) -> Invocation {
    plain(Invocation::new(
        cmd,
        Path::new("/nonexistent"),
        Path::new("/r"),
    ))
}

/// The invocation with its pytest plugin's drawn number as `N`.
fn plain(mut i: Invocation) -> Invocation {
    let drawn = regex::Regex::new("agentloop_pytest_report_[0-9a-f]{16}").unwrap();
    i.command = drawn
        .replace_all(&i.command, "agentloop_pytest_report_N")
        .into_owned();
    for (p, _) in &mut i.files {
        *p = drawn
            .replace_all(&p.to_string_lossy(), "agentloop_pytest_report_N")
            .into_owned()
            .into();
    }
    i
}

#[test]
fn runners_are_recognised_and_told_where_to_report() {
    let cases: [(&str, Option<Runner>, &str); 14] = [
        (
            "python3 -m pytest -q",
            Some(Runner::Pytest),
            "python3 -m pytest -q -p agentloop_pytest_report_N --continue-on-collection-errors",
        ),
        (
            "PYTHONPATH=src uv run pytest tests/",
            Some(Runner::Pytest),
            "PYTHONPATH=src:/r/python uv run pytest tests/ -p agentloop_pytest_report_N --continue-on-collection-errors",
        ),
        (
            "cargo nextest run --workspace -- --ignored",
            Some(Runner::Nextest),
            "cargo nextest run --workspace --tool-config-file agentloop:/r/nextest.toml --no-fail-fast -- --ignored",
        ),
        (
            "cargo test",
            Some(Runner::CargoTest),
            "cargo test --no-fail-fast",
        ),
        ("go test ./...", Some(Runner::GoTest), "go test -json ./..."),
        (
            "npx jest t/",
            Some(Runner::Jest),
            "npx jest t/ --json --outputFile=/r/jest.json",
        ),
        (
            "npx vitest run",
            Some(Runner::Vitest),
            "npx vitest run --reporter=default --reporter=json --outputFile.json=/r/vitest.json",
        ),
        (
            "mocha",
            Some(Runner::Mocha),
            "mocha --reporter json --reporter-option output=/r/mocha.json",
        ),
        (
            "mvn -q test",
            Some(Runner::Maven),
            "mvn -q test -Dsurefire.reportsDirectory=/r/surefire",
        ),
        (
            "./gradlew test",
            Some(Runner::Gradle),
            "./gradlew test --init-script /r/agentloop.gradle --continue",
        ),
        (
            "bundle exec rspec",
            Some(Runner::Rspec),
            "bundle exec rspec --format progress --format json --out /r/rspec.json",
        ),
        ("pytest && echo ok", None, "pytest && echo ok"),
        ("sh test.sh", None, "sh test.sh"),
        ("mvn -q compile", None, "mvn -q compile"),
    ];
    for (cmd, runner, want) in cases {
        let i = inv(cmd);
        assert_eq!(i.runner, runner, "{cmd}");
        assert_eq!(i.command, want, "{cmd}");
    }
    assert_eq!(
        inv("sh test.sh").report,
        ReportAt::File("/r/report.xml".into())
    );
    // pytest's report is agentloop's plugin's, imported from the report directory,
    // wherever the command's own words set PYTHONPATH.
    let p = inv("python3 -m pytest -q");
    assert_eq!(p.report, ReportAt::File("/r/pytest.json".into()));
    assert_eq!(p.format, Format::PytestJson);
    assert_eq!(p.python_path, Some(PathBuf::from("/r/python")));
    assert_eq!(
        p.files[0].0,
        PathBuf::from("/r/python/agentloop_pytest_report_N.py")
    );
    assert!(p.files[0].1.contains("def pytest_runtest_logreport"));
    // Drawn anew for each check.
    let names: std::collections::BTreeSet<String> = (0..50)
        .map(|_| Invocation::new("pytest", Path::new("/nonexistent"), Path::new("/r")).command)
        .collect();
    assert_eq!(names.len(), 50, "{names:?}");
    assert_eq!(
        inv("PYTHONPATH= FOO=1 pytest").command,
        "PYTHONPATH=/r/python FOO=1 pytest -p agentloop_pytest_report_N --continue-on-collection-errors"
    );
    let n = inv("cargo nextest run");
    assert_eq!(n.files[0].0, PathBuf::from("/r/nextest.toml"));
    assert!(
        n.files[0].1.contains("dir = \"/r/nextest\""),
        "{}",
        n.files[0].1
    );
}

#[test]
fn package_scripts_that_end_in_a_runner_get_its_arguments_through_the_manager() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("package.json"),
        r#"{"scripts": {"test": "npm run build && jest --ci", "unit": "vitest run", "lint": "eslint ."}}"#,
    )
    .unwrap();
    let r = Path::new("/r");
    let i = Invocation::new("npm test", dir.path(), r);
    assert_eq!(i.runner, Some(Runner::Jest));
    assert_eq!(i.command, "npm test -- --json --outputFile=/r/jest.json");
    let i = Invocation::new("yarn unit", dir.path(), r);
    assert_eq!(i.runner, Some(Runner::Vitest));
    assert!(
        i.command.starts_with("yarn unit --reporter=default"),
        "{}",
        i.command
    );
    // pnpm's `test` shorthand takes the runner's arguments after a `--` (its
    // own options otherwise); `pnpm run X` and `pnpm X` without one.
    let i = Invocation::new("pnpm test", dir.path(), r);
    assert_eq!(i.command, "pnpm test -- --json --outputFile=/r/jest.json");
    let i = Invocation::new("pnpm run test", dir.path(), r);
    assert_eq!(i.command, "pnpm run test --json --outputFile=/r/jest.json");
    let i = Invocation::new("pnpm test -- --ci", dir.path(), r);
    assert_eq!(
        i.command,
        "pnpm test -- --ci --json --outputFile=/r/jest.json"
    );
    assert_eq!(Invocation::new("npm run lint", dir.path(), r).runner, None);
    assert_eq!(
        Invocation::new("npm run nothing", dir.path(), r).runner,
        None
    );
}

#[test]
fn package_scripts_that_run_other_scripts_are_followed_to_the_runner() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("package.json"),
        r#"{"scripts": {
            "test": "npm run lint && npm run mocha",
            "mocha": "mocha --recursive test/",
            "unit": "npm run spec -- --bail",
            "spec": "mocha",
            "y": "yarn mocha",
            "loop": "npm run loop",
            "lint": "eslint ."}}"#,
    )
    .unwrap();
    let r = Path::new("/r");
    let i = Invocation::new("npm test", dir.path(), r);
    assert_eq!(i.runner, Some(Runner::Mocha));
    // One `--` for each npm the arguments go through.
    assert!(
        i.command.starts_with("npm test -- -- --reporter"),
        "{}",
        i.command
    );
    let i = Invocation::new("npm test -- --timeout 5000", dir.path(), r);
    assert!(
        i.command
            .starts_with("npm test -- --timeout 5000 -- --reporter"),
        "{}",
        i.command
    );
    // A script whose inner call passes its own `--` needs none more for it.
    let i = Invocation::new("npm run unit", dir.path(), r);
    assert_eq!(i.runner, Some(Runner::Mocha));
    assert!(
        i.command.starts_with("npm run unit -- --reporter"),
        "{}",
        i.command
    );
    let i = Invocation::new("npm run y", dir.path(), r);
    assert!(
        i.command.starts_with("npm run y -- --reporter"),
        "{}",
        i.command
    );
    // A script that calls itself is not followed for ever.
    assert_eq!(Invocation::new("npm run loop", dir.path(), r).runner, None);
}

#[test]
fn failed_tests_again_in_one_process_where_the_runner_can_select_them() {
    let (w, r) = (Path::new("/nonexistent"), Path::new("/r"));
    let a = Invocation::again(
        "python3 -m pytest -q tests/",
        &["tests/a.py::test_x", "tests/b.py::test_y[1]"],
        w,
        r,
    );
    assert!(
        a.command
            .starts_with("python3 -m pytest -q tests/a.py::test_x 'tests/b.py::test_y[1]' "),
        "{}",
        a.command
    );
    let a = Invocation::again(
        "go test ./...",
        &[
            "example.com/m/ops::TestSub/one",
            "example.com/m/io::TestRead",
            "example.com/m/ops::TestAdd",
        ],
        w,
        r,
    );
    assert!(
        a.command.starts_with(
            "go test -json -count=1 -run '^(TestAdd|TestRead|TestSub)$' example.com/m/io example.com/m/ops"
        ),
        "{}",
        a.command
    );
    // The check's own flags stay; its selection and count give way.
    let a = Invocation::again(
        "go test -race -count 3 -tags integration -run TestX ./...",
        &["example.com/m/io::TestRead"],
        w,
        r,
    );
    assert!(
        a.command.starts_with(
            "go test -json -race -tags integration -count=1 -run '^TestRead$' example.com/m/io"
        ),
        "{}",
        a.command
    );
    // A runner that cannot select: the check again, once for them all.
    let a = Invocation::again("npx jest", &["t/a.test.js::x", "t/b.test.js::y"], w, r);
    assert!(a.command.starts_with("npx jest --json"), "{}", a.command);
}

#[test]
fn one_test_alone_where_the_runner_can_select_it() {
    let w = Path::new("/nonexistent");
    let r = Path::new("/r");
    let a = plain(Invocation::alone(
        "python3 -m pytest -q tests/",
        "tests/t.py::test_a[1]",
        w,
        r,
    ));
    assert_eq!(
        a.command,
        "python3 -m pytest -q 'tests/t.py::test_a[1]' -p agentloop_pytest_report_N --continue-on-collection-errors"
    );
    let a = Invocation::alone("go test ./...", "example.com/m/ops::TestSub/one", w, r);
    assert_eq!(
        a.command,
        "go test -json -count=1 -run '^TestSub$/^one$' example.com/m/ops"
    );
    let a = Invocation::alone("npx jest", "t/a.test.js::x", w, r);
    assert_eq!(a.command, "npx jest --json --outputFile=/r/jest.json");
}
