//! A test that passed at the baseline and fails now is run again before it counts:
//! every such failure of a check in one runner process, the check's own options kept
//! (real pytest). A test that passes then is forgiven as flaky (a MONITOR verdict);
//! one the work broke fails again and the task is not done.

use crate::support::*;

const CALC: &str = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return 0\n";

/// A package whose `test_flaky` fails on its second run only (a count kept outside
/// the project, in `count`): it passes at the baseline and fails at the task's
/// verification, then passes when run again.
fn flaky_project(count: &std::path::Path, agent: &str) -> Project {
    let flaky = format!(
        "import os\n\nCOUNT = {:?}\n\n\ndef test_flaky():\n    n = int(open(COUNT).read()) if os.path.exists(COUNT) else 0\n    open(COUNT, 'w').write(str(n + 1))\n    assert n != 1, 'the second run fails'\n",
        count.display().to_string()
    );
    let s = Scratch::new()
        .file(
            "pyproject.toml",
            "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\npythonpath = [\".\"]\n",
        )
        .file("calc/__init__.py", CALC)
        .file(
            "tests/test_calc.py",
            "import calc\n\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n\n\ndef test_mul():\n    assert calc.mul(2, 3) == 6\n",
        )
        .file("tests/test_flaky.py", &flaky);
    let mut p = s.build();
    p.env.push(("PATH".into(), python_path()));
    init_with_scripted(
        &p,
        "# Calc\n\n## T1: Multiplication\n\nMake `mul` in calc/__init__.py multiply.\n\nTests: tests/test_calc.py::test_mul\n",
        agent,
    );
    // The judge's checks run confined: the count lives where they may write.
    let config = p.read("agentloop.toml");
    p.write(
        "agentloop.toml",
        format!(
            "{config}\n[sandbox]\nwritable = [{:?}]\n",
            count.parent().unwrap().display().to_string()
        ),
    );
    p.commit("the flaky test's count is writable to the checks");
    p
}

#[test]
fn a_test_that_fails_once_is_run_again_and_forgiven_and_one_the_work_broke_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("count");
    let p = flaky_project(
        &count,
        "sed -i 's/return 0/return a * b/' calc/__init__.py\necho TASK_COMPLETE\n",
    );
    let r = p.run(&["run", "--yes", "--no-wait", "--max-iterations", "1"]);
    assert!(r.code.is_some(), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["tasks"][0]["status"], "done", "{}\n{s:#}", r.stderr);
    assert_eq!(s["verdict"], "MONITOR", "a forgiven flake: {s:#}");
    let log = std::fs::read_to_string(p.run_dir().join("iterations/0001/verify.log")).unwrap();
    assert!(
        log.contains("[tests/test_flaky.py::test_flaky failed; run again: python3 -m pytest tests/test_flaky.py::test_flaky "),
        "{log}"
    );
    assert!(
        log.contains("[tests/test_flaky.py::test_flaky: passed when run again]"),
        "{log}"
    );
    // The work breaks `add` too: its failure is run again with the flaky one, in one
    // pytest, and fails again.
    std::fs::remove_file(&count).unwrap();
    let p = flaky_project(
        &count,
        "sed -i 's/return 0/return a * b/' calc/__init__.py\nsed -i 's/return a + b/return a - b/' calc/__init__.py\necho TASK_COMPLETE\n",
    );
    let r = p.run(&["run", "--yes", "--no-wait", "--max-iterations", "1"]);
    let s = p.status();
    assert_ne!(s["tasks"][0]["status"], "done", "{}\n{s:#}", r.stderr);
    let log = std::fs::read_to_string(p.run_dir().join("iterations/0001/verify.log")).unwrap();
    assert!(
        log.contains("[tests/test_calc.py::test_add, tests/test_flaky.py::test_flaky failed; run again: python3 -m pytest tests/test_calc.py::test_add tests/test_flaky.py::test_flaky "),
        "one pytest for both: {log}"
    );
    assert!(
        log.contains("[tests/test_calc.py::test_add: not passed when run again]"),
        "{log}"
    );
    assert!(
        log.contains("[tests/test_flaky.py::test_flaky: passed when run again]"),
        "{log}"
    );
}
