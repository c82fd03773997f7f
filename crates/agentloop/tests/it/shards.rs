//! `[verify] jobs`: a pytest suite is split among pytest-xdist's workers where the
//! check's Python has it (real pytest and pytest-xdist, from `.tools/xdist`), the one
//! report it writes judged test by test as a single process's would be; `jobs = 1`
//! runs the suite as one process; unset, only a suite the baseline found slow enough
//! is split.

use crate::support::*;

const CALC: &str = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return 0\n";

/// A PATH whose `python3` has pytest and pytest-xdist, in front.
fn xdist_path() -> String {
    let venv = tools().join("xdist/bin");
    assert!(
        venv.join("pytest").exists(),
        "pytest-xdist is not installed in {}: run scripts/test, which installs it",
        venv.display()
    );
    format!(
        "{}:{}",
        venv.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// A package with a broken `mul` and forty more tests (each taking 60 ms with
/// `slow`); the task fixes `mul` (and, with `breaks`, breaks `add`). `jobs`: `[verify]
/// jobs`, unset when none.
fn project(jobs: Option<u32>, breaks: bool, slow: bool) -> Project {
    let work = if slow { "    time.sleep(0.06)\n" } else { "" };
    let more: String = (0..40)
        .map(|i| format!("def test_same_{i}():\n{work}    assert calc.add({i}, 0) == {i}\n\n\n"))
        .collect();
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
        .file("tests/test_more.py", format!("import time\n\nimport calc\n\n\n{more}"));
    let mut p = s.build();
    p.env.push(("PATH".into(), xdist_path()));
    let mut agent = "sed -i 's/return 0/return a * b/' calc/__init__.py\n".to_string();
    if breaks {
        agent.push_str("sed -i 's/return a + b/return a - b/' calc/__init__.py\n");
    }
    agent.push_str("echo TASK_COMPLETE\n");
    init_with_scripted(
        &p,
        "# Calc\n\n## T1: Multiplication\n\nMake `mul` in calc/__init__.py multiply.\n\nTests: tests/test_calc.py::test_mul\n",
        &agent,
    );
    if let Some(jobs) = jobs {
        with_jobs(&p, jobs);
    }
    p
}

#[test]
fn a_pytest_suite_is_split_among_xdists_workers_and_judged_test_by_test() {
    let p = project(Some(2), false, false);
    let r = p.run(&["run", "--yes", "--no-wait", "--max-iterations", "1"]);
    assert!(r.code.is_some(), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["tasks"][0]["status"], "done", "{}\n{s:#}", r.stderr);
    let baseline = read_run(&p, "baseline.log");
    assert!(baseline.contains(" -p xdist -n 2"), "{baseline}");
    let log = read_run(&p, "iterations/0001/verify.log");
    assert!(log.contains(" -p xdist -n 2"), "{log}");
    // Each test is read from the one report the workers' controller wrote.
    assert!(log.contains("[pytest: 42 tests: 42 passed]"), "{log}");

    // A task that breaks `add` is not done, and the test it broke is named.
    let p = project(Some(2), true, false);
    let r = p.run(&["run", "--yes", "--no-wait", "--max-iterations", "1"]);
    let s = p.status();
    assert_ne!(s["tasks"][0]["status"], "done", "{}\n{s:#}", r.stderr);
    let log = read_run(&p, "iterations/0001/verify.log");
    assert!(log.contains(" -p xdist -n 2"), "{log}");
    assert!(
        log.contains("tests/test_calc.py::test_add") && log.contains("failed; run again"),
        "{log}"
    );
    assert!(
        log.contains("[tests/test_calc.py::test_add: not passed when run again]"),
        "{log}"
    );
}

#[test]
fn one_job_runs_the_suite_as_one_process() {
    let p = project(Some(1), false, false);
    let r = p.run(&["run", "--yes", "--no-wait", "--max-iterations", "1"]);
    assert!(r.code.is_some(), "{}", r.stderr);
    assert_eq!(p.status()["tasks"][0]["status"], "done", "{}", r.stderr);
    let log = read_run(&p, "iterations/0001/verify.log");
    assert!(log.contains("[pytest: 42 tests: 42 passed]"), "{log}");
    assert!(!log.contains("-p xdist"), "{log}");
}

/// Unset, `jobs` splits a pytest suite only when its run at the baseline (never
/// split) showed tests slow enough for the split to pay: a suite of quick tests runs
/// as one process.
#[test]
fn unset_a_suite_is_split_only_when_the_baseline_found_it_worth_it() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for slow in [false, true] {
        let p = project(None, false, slow);
        let r = p.run(&["run", "--yes", "--no-wait", "--max-iterations", "1"]);
        assert!(r.code.is_some(), "{}", r.stderr);
        assert_eq!(p.status()["tasks"][0]["status"], "done", "{}", r.stderr);
        let baseline = read_run(&p, "baseline.log");
        assert!(!baseline.contains("-p xdist"), "{baseline}");
        let log = read_run(&p, "iterations/0001/verify.log");
        assert!(log.contains("[pytest: 42 tests: 42 passed]"), "{log}");
        let split = slow && cores > 1;
        assert_eq!(
            log.contains(&format!(" -p xdist -n {cores}")),
            split,
            "slow: {slow}\n{log}"
        );
    }
}

/// A failed test is run again as the check ran, with the same workers: code that
/// behaves one way under xdist's workers (`PYTEST_XDIST_WORKER`) and another in one
/// process cannot pass a named test in the check and then have the test it broke
/// forgiven as flaky when it runs again alone.
#[test]
fn a_test_cannot_tell_its_run_again_from_the_check() {
    let s = Scratch::new()
        .file(
            "pyproject.toml",
            "[project]\nname = \"fmt\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\npythonpath = [\".\"]\n",
        )
        .file("fmt/__init__.py", "def pad(n):\n    return str(n)\n")
        .file(
            "tests/test_fmt.py",
            "import fmt\n\n\ndef test_old():\n    assert fmt.pad(3) == \"3\"\n\n\ndef test_new():\n    assert fmt.pad(3) == \"003\"\n",
        );
    let mut p = s.build();
    p.env.push(("PATH".into(), xdist_path()));
    init_with_scripted(
        &p,
        "# Fmt\n\n## T1: Pad\n\nPad to three digits.\n\nTests: tests/test_fmt.py::test_new\n",
        "printf 'import os\\n\\n\\ndef pad(n):\\n    return str(n).zfill(3) if os.environ.get(\"PYTEST_XDIST_WORKER\") else str(n)\\n' > fmt/__init__.py\necho TASK_COMPLETE\n",
    );
    with_jobs(&p, 2);
    let r = p.run(&["run", "--yes", "--no-wait", "--max-iterations", "1"]);
    let st = p.status();
    assert_ne!(st["tasks"][0]["status"], "done", "{}\n{st:#}", r.stderr);
    let log = read_run(&p, "iterations/0001/verify.log");
    assert!(
        log.contains("[tests/test_fmt.py::test_old: not passed when run again]"),
        "{log}"
    );
}

/// With workers the checks of a task's worktree and of the merged result are told
/// the same: `jobs` where it is set; unset, the cores shared among the lanes (so on
/// two cores and two workers, one process each, however slow the suite).
#[test]
fn with_workers_a_tasks_checks_and_the_merged_results_are_split_as_jobs_says() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for jobs in [Some(2), None] {
        let p = project(jobs, false, jobs.is_none());
        let r = p.run(&["run", "--yes", "--no-wait", "--workers", "2"]);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        assert_eq!(p.status()["tasks"][0]["status"], "done", "{}", r.stderr);
        let n = jobs.map_or(cores / 2, |j| j as usize);
        for log in ["iterations/0001/verify.log", "iterations/0001/merge.log"] {
            let text = read_run(&p, log);
            assert!(
                text.contains("[pytest: 42 tests: 42 passed]"),
                "{log}: {text}"
            );
            assert_eq!(
                text.contains(&format!(" -p xdist -n {n}")),
                n > 1,
                "jobs {jobs:?}, {log}: {text}"
            );
            assert_eq!(text.contains("-p xdist"), n > 1, "{log}: {text}");
        }
    }
}

/// `[verify] jobs = jobs` in the project's configuration, committed.
fn with_jobs(p: &Project, jobs: u32) {
    let config = p.read("agentloop.toml");
    assert!(config.contains("\n[verify]\n"), "{config}");
    p.write(
        "agentloop.toml",
        config.replacen("\n[verify]\n", &format!("\n[verify]\njobs = {jobs}\n"), 1),
    );
    p.commit("the checks' workers");
}

fn read_run(p: &Project, rel: &str) -> String {
    std::fs::read_to_string(p.run_dir().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}
