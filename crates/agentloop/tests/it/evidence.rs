//! Per-test evidence with real runners (pytest in the virtual environment
//! `scripts/test` makes in `.tools/pytest`, Jest, Vitest and Mocha from `.tools/js`,
//! cargo nextest, go test): a task is done when the tests it names pass and every test
//! that passed at the run's baseline still passes; agents that game the exit code get
//! nothing done.

use crate::support::*;

/// A small Python package whose tests fail until the plan is done: two pass at the
/// baseline, six fail (two per task).
fn calc() -> Scratch {
    Scratch::new()
        .file(
            "pyproject.toml",
            "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\npythonpath = [\".\"]\n",
        )
        .file("calc/__init__.py", "def add(a, b):\n    return a + b\n")
        .file(
            "tests/test_add.py",
            "import calc\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n\ndef test_add_negative():\n    assert calc.add(-2, -3) == -5\n",
        )
        .file(
            "tests/test_div.py",
            "import pytest\nimport calc\n\ndef test_div():\n    assert calc.div(6, 3) == 2\n\ndef test_div_by_zero():\n    with pytest.raises(ZeroDivisionError):\n        calc.div(1, 0)\n",
        )
        .file(
            "tests/test_mul.py",
            "import calc\n\ndef test_mul():\n    assert calc.mul(2, 3) == 6\n\ndef test_mul_zero():\n    assert calc.mul(7, 0) == 0\n",
        )
        .file(
            "tests/test_pow.py",
            "def test_pow():\n    from calc.power import power\n    assert power(2, 10) == 1024\n\ndef test_pow_zero():\n    from calc.power import power\n    assert power(5, 0) == 1\n",
        )
}

const PLAN: &str = "# Calculator\n\nFinish the calculator: division, multiplication, powers.\n\n## T1: Division\n\nAdd `div(a, b)` to `calc/__init__.py`.\n\nVerify: python3 -m pytest tests/test_div.py\nTests: tests/test_div.py::test_div, tests/test_div.py::test_div_by_zero\n\n## T2: Multiplication\nDepends: T1\n\nAdd `mul(a, b)`.\n\nTests: tests/test_mul.py::*\n\n## T3: Powers\nDepends: T2\n\nAdd `calc/power.py` with `power(base, exp)`.\n\nTests: test_pow.py::test_pow, test_pow.py::test_pow_zero\n";

/// The scripted agent that does the work, task by task.
const HONEST: &str = r#"case "$task" in
T1) printf '\ndef div(a, b):\n    return a / b\n' >> calc/__init__.py ;;
T2) printf '\ndef mul(a, b):\n    return a * b\n' >> calc/__init__.py ;;
T3) printf 'def power(base, exp):\n    return base ** exp\n' > calc/power.py ;;
esac
echo TASK_COMPLETE
"#;

fn events(p: &Project) -> Vec<serde_json::Value> {
    std::fs::read_to_string(p.run_dir().join("journal.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `agentloop init` on the project, then the plan, and the scripted agent in the
/// configuration init wrote.
fn initialised(s: Scratch, plan: &str, agent_body: &str) -> Project {
    let mut p = s.build();
    p.env.push(("PATH".into(), python_path()));
    let config = init_with_scripted(&p, plan, agent_body);
    assert!(
        config.contains(
            "commands = [\n    \"python3 -m pytest\",  # from pytest: read test by test (pytest)\n]"
        ),
        "init found pytest: {config}"
    );
    p
}

#[test]
fn a_python_project_with_six_tests_failing_at_baseline_reaches_ship_with_inits_defaults() {
    let p = initialised(calc(), PLAN, HONEST);
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let ev = events(&p);
    let base = ev
        .iter()
        .find(|e| e["kind"] == "tests_baseline")
        .expect("a test baseline");
    let cmds = base["data"]["commands"].as_array().unwrap();
    let whole = cmds
        .iter()
        .find(|c| c["command"] == "python3 -m pytest")
        .unwrap();
    let tests = whole["tests"].as_object().unwrap();
    assert_eq!(tests.len(), 8, "{tests:?}");
    let failing = tests.values().filter(|o| *o != "passed").count();
    assert_eq!(failing, 6, "{tests:?}");
    assert_eq!(tests["tests/test_add.py::test_add"], "passed");
    // The baseline came before any agent worked.
    let at = |kind: &str| ev.iter().position(|e| e["kind"] == kind).unwrap();
    assert!(at("tests_baseline") < at("iteration_started"));
    // Each task went from failing to passing on its named tests, with no regression.
    let status = p.status();
    assert_eq!(status["verdict"], "SHIP", "{status:#}");
    // VALIDATE keeps every test's result, as pytest reported it.
    let results: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(p.run_dir().join("test-results.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(results["passed"], true, "{results:#}");
    assert_eq!(results["tests"], 8, "{results:#}");
    assert_eq!(results["totals"]["passed"], 8, "{results:#}");
    assert_eq!(results["totals"]["failed"], 0, "{results:#}");
    let all: Vec<&serde_json::Value> = results["commands"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["tests"].as_array().unwrap())
        .collect();
    assert!(
        all.iter()
            .any(|t| t["id"] == "tests/test_add.py::test_add" && t["outcome"] == "passed"),
        "{results:#}"
    );
    for t in status["tasks"].as_array().unwrap() {
        let e = &t["evidence"];
        assert_eq!(e["named_passing"], 2, "{t:#}");
        assert_eq!(e["named"], 2, "{t:#}");
        assert_eq!(e["regressions"].as_array().unwrap().len(), 0, "{t:#}");
    }
    let summary = std::fs::read_to_string(p.run_dir().join("summary.md")).unwrap();
    assert!(
        summary.contains("| T1 | tests | its named tests pass, and every test that passed at the baseline still does | verified | FAIL_TO_PASS 2/2; PASS_TO_PASS: 2 tests still pass in iteration 1 |"),
        "{summary}"
    );
    // The handoff (and a pull request's body) name each task's tests.
    let handoff = std::fs::read_to_string(p.run_dir().join("handoff.md")).unwrap();
    assert!(
        handoff.contains("  - tests: FAIL_TO_PASS 2/2 (`tests/test_div.py::test_div`, `tests/test_div.py::test_div_by_zero`); PASS_TO_PASS: no regressions"),
        "{handoff}"
    );
    // Each check's tests, one by one, beside its log; the raw reports are gone.
    let kept =
        std::fs::read_to_string(p.run_dir().join("iterations/0001/verify.tests.json")).unwrap();
    assert!(kept.contains("\"tests/test_div.py::test_div\""), "{kept}");
    let run_id = p.run_dir().file_name().unwrap().to_owned();
    let reports = p.cache.path().join("agentloop/reports").join(run_id);
    let left: Vec<_> = std::fs::read_dir(&reports)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
    // The status a person reads.
    let text = p.run(&["status"]).stdout;
    assert!(
        text.contains("tests: 2/2 named tests pass · regressions none"),
        "{text}"
    );
    assert!(
        text.contains("baseline: 8 tests, 6 failing at baseline"),
        "{text}"
    );
}

#[test]
fn plan_check_with_the_baseline_names_what_each_test_name_matches() {
    let p = initialised(calc(), PLAN, HONEST);
    let r = p.run(&["plan", "check", "--baseline"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .contains("baseline: 8 tests, 6 failing at baseline"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("T2 tests/test_mul.py::* — 2 tests failing at baseline"),
        "{}",
        r.stdout
    );
    // A name that matches nothing is an error; one that already passes is flagged.
    p.write(
        "PLAN.md",
        PLAN.replace(
            "Tests: tests/test_mul.py::*",
            "Tests: tests/test_mul.py::test_mull, test_add",
        )
        .as_str(),
    );
    let r = p.run(&["plan", "check", "--baseline"]);
    assert_eq!(r.code, Some(2), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains(
            "a name matches no test the checks collect: T2: `tests/test_mul.py::test_mull`"
        ),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("task T2: `test_add` names 1 test that already passes at baseline"),
        "{}",
        r.stderr
    );
    // A name in a file the tree does not hold is a test the task creates.
    p.write(
        "PLAN.md",
        PLAN.replace(
            "Tests: tests/test_mul.py::*",
            "Tests: tests/test_mod.py::test_mod",
        )
        .as_str(),
    );
    let r = p.run(&["plan", "check", "--baseline"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains(
            "T2 tests/test_mod.py::test_mod — a test in a file the task creates (not there yet)"
        ),
        "{}",
        r.stdout
    );
}

/// One task (division) whose agent games its check instead of doing the work, with
/// the verification surface not judged (`on_protected_change = "allow"`): only the
/// per-test evidence stands between the agent and a task marked done.
fn gamed(verify: &str, attack: &str, extra: &[(&str, &str)]) -> Project {
    let plan = format!(
        "# Division\n\nAdd division.\n\n## T1: Division\nMax-iterations: 2\n\nAdd `div(a, b)` to `calc/__init__.py`.\n\nVerify: {verify}\nTests: tests/test_div.py::test_div, tests/test_div.py::test_div_by_zero\n"
    );
    let mut s = calc()
        .plan(&plan)
        .agent(&agent(&format!("{attack}\necho TASK_COMPLETE\n")))
        .config("[verify]\non_protected_change = \"allow\"\n\n[breakers]\ndebug_after = 0\n");
    for (rel, text) in extra {
        s = s.file(rel, text);
    }
    let mut p = s.build();
    p.env.push(("PATH".into(), python_path()));
    let r = p.run(&["run", "--no-wait"]);
    assert_ne!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let status = p.status();
    assert_ne!(status["tasks"][0]["status"], "done", "{status:#}");
    assert_ne!(status["verdict"], "SHIP");
    p
}

/// Every iteration failed, each for a reason that says `what`.
fn all_failed_with(p: &Project, what: &str) {
    let why = failures(p);
    assert!(why.iter().all(|w| w.contains(what)), "{why:?}");
}

/// The reasons the iterations failed, as journaled.
fn failures(p: &Project) -> Vec<String> {
    events(p)
        .iter()
        .filter(|e| e["kind"] == "iteration_finished")
        .map(|e| e["data"]["reason"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn deleting_or_skipping_the_tests_a_task_names_gets_nothing_done() {
    // (a) The failing tests deleted.
    let p = gamed("python3 -m pytest", "rm tests/test_div.py", &[]);
    all_failed_with(
        &p,
        "2 tests collected at the baseline are no longer run (tests/test_div.py::test_div: absent",
    );
    // (b) Marked skipped.
    let p = gamed(
        "python3 -m pytest",
        r#"sed -i 's/^def test_div/@pytest.mark.skip(reason="later")\ndef test_div/' tests/test_div.py"#,
        &[],
    );
    all_failed_with(&p, "tests/test_div.py::test_div: skipped");
}

#[test]
fn forcing_exit_zero_or_collecting_nothing_gets_nothing_done() {
    // (c) A new test module that makes the interpreter exit 0 whatever pytest found.
    let p = gamed(
        "python3 -m pytest",
        "printf 'import atexit, os\\natexit.register(lambda: os._exit(0))\\n' > tests/test_zz_exit.py",
        &[],
    );
    let ev = events(&p);
    let verified: Vec<_> = ev
        .iter()
        .filter(|e| e["kind"] == "verify_finished")
        .collect();
    assert!(!verified.is_empty());
    for v in &verified {
        // The trick worked on the exit code, and on nothing else.
        assert_eq!(v["data"]["commands"][0]["exit_code"], 0, "{v:#}");
        assert_eq!(v["data"]["passed"], false, "{v:#}");
    }
    all_failed_with(&p, "tests/test_div.py::test_div: failed");
    // (d) The runner made to collect nothing.
    let p = gamed(
        "python3 -m pytest",
        "printf '[pytest]\\naddopts = -k no_such_test\\n' > pytest.ini",
        &[],
    );
    all_failed_with(
        &p,
        "2 tests that passed before fail now (tests/test_add.py::test_add: absent",
    );
}

#[test]
fn a_report_forged_where_the_runners_goes_or_a_rewritten_helper_gets_nothing_done() {
    // (e) The agent writes a report saying every test passed where the next
    // verification's report will go (the path is in the last verify.log).
    // pytest's report is agentloop's plugin's JSON; a check run as written is read
    // for JUnit XML.
    let forged = r#"{"agentloop_pytest_report": 1, "reports": [{"id": "tests/test_div.py::test_div", "when": "call", "outcome": "passed"}, {"id": "tests/test_div.py::test_div_by_zero", "when": "call", "outcome": "passed"}]}"#;
    let forged_xml = r#"<testsuites><testsuite name="pytest"><testcase classname="tests.test_div" name="test_div" file="tests/test_div.py"/><testcase classname="tests.test_div" name="test_div_by_zero" file="tests/test_div.py"/></testsuite></testsuites>"#;
    let attack = format!(
        r#"run=$(ls .agentloop/runs | tail -n 1)
for i in 1 2 3 4; do
  d="$XDG_CACHE_HOME/agentloop/reports/$run/$i/0"
  mkdir -p "$d"
  printf '%s' '{forged}' > "$d/pytest.json"
  printf '%s' '{forged_xml}' > "$d/report.xml"
done"#
    );
    let p = gamed("python3 -m pytest", &attack, &[]);
    all_failed_with(&p, "tests/test_div.py::test_div: failed");
    // (e) again, from inside: a test module that, at the interpreter's exit (after
    // pytest wrote its report), writes the forged one over it, where the plugin it
    // finds loaded says the report goes.
    let module = format!(
        "import atexit, sys\nFORGED = '{forged}'\ndef forge():\n    m = next((v for k, v in sys.modules.items() if k.startswith('agentloop_pytest_report_')), None)\n    if m:\n        open(m._REPORT, 'w').write(FORGED)\natexit.register(forge)\n"
    );
    let p = gamed(
        "python3 -m pytest",
        "cp .git/forge.py tests/test_zz_forge.py",
        &[(".git/forge.py", &module)],
    );
    let ev = events(&p);
    let verified: Vec<_> = ev
        .iter()
        .filter(|e| e["kind"] == "verify_finished")
        .collect();
    assert!(!verified.is_empty());
    for v in &verified {
        let problem = v["data"]["commands"][0]["tests"]["problem"]
            .as_str()
            .unwrap_or("");
        assert!(problem.contains("written 2 times"), "{v:#}");
    }
    // (e) again, through a hard link made elsewhere (outside the watched directory).
    let linked = format!(
        "import atexit, os, sys\nFORGED = '{forged}'\ndef forge():\n    m = next((v for k, v in sys.modules.items() if k.startswith('agentloop_pytest_report_')), None)\n    if m:\n        p = m._REPORT\n        link = os.path.dirname(os.path.dirname(p)) + '/link.json'\n        os.link(p, link)\n        open(link, 'w').write(FORGED)\n        os.unlink(link)\natexit.register(forge)\n"
    );
    let p = gamed(
        "python3 -m pytest",
        "cp .git/forge.py tests/test_zz_forge.py",
        &[(".git/forge.py", &linked)],
    );
    for v in verify_records(&p) {
        let problem = v["data"]["commands"][0]["tests"]["problem"]
            .as_str()
            .unwrap_or("");
        assert!(problem.contains("written 2 times"), "{v:#}");
    }
    // (e) once more, through `$AGENTLOOP_TEST_REPORT`: a check that reports nothing
    // (and passed at the baseline) gets a report the code under test writes there.
    let env_forge = format!(
        "import os\nopen(os.environ['AGENTLOOP_TEST_REPORT'], 'w').write('{forged_xml}')\n"
    );
    let p = gamed(
        "sh check.sh",
        "cp .git/forge.py tests/test_zz_forge.py",
        &[
            ("check.sh", "python3 -m pytest -q\nexit 0\n"),
            (".git/forge.py", &env_forge),
        ],
    );
    all_failed_with(&p, "no report has the tests");
    let log = std::fs::read_to_string(p.run_dir().join("iterations/0001/verify.log")).unwrap();
    assert!(
        log.contains("that this check did not write when it passed at the baseline"),
        "{log}"
    );
    // (f) The check's script calls a helper that runs the tests and writes their
    // report to $AGENTLOOP_TEST_REPORT; the agent rewrites the helper to exit 0.
    let p = gamed(
        "sh run-tests.sh",
        "printf 'exit 0\\n' > scripts/helper.sh",
        &[
            ("run-tests.sh", "sh scripts/helper.sh\n"),
            (
                "scripts/helper.sh",
                "python3 -m pytest -q --junitxml=\"$AGENTLOOP_TEST_REPORT\" -o junit_family=xunit1 tests/test_div.py\n",
            ),
        ],
    );
    // At the baseline the helper did report the tests, per test.
    let ev = events(&p);
    let base = ev.iter().find(|e| e["kind"] == "tests_baseline").unwrap();
    let tests = &base["data"]["commands"][0]["tests"];
    assert_eq!(tests["tests/test_div.py::test_div"], "failed", "{base:#}");
    all_failed_with(&p, "no report has the tests");
}

/// A one-task plan whose check is `sh check.sh`, a script that writes the report
/// (`$AGENTLOOP_TEST_REPORT`) the test gives it; the agent claims the task done.
fn reported(report_script: &str) -> Project {
    let p = Scratch::new()
        .plan("# One\n\n## T1: Make it pass\nMax-iterations: 1\n\nVerify: sh check.sh\nTests: suite::the_test\n")
        .agent(&agent("touch done.txt\necho TASK_COMPLETE\n"))
        .file("check.sh", report_script)
        .config("[breakers]\ndebug_after = 0\n")
        .build();
    let r = p.run(&["run", "--no-wait"]);
    assert!(r.code.is_some(), "{}", r.stderr);
    p
}

fn verify_records(p: &Project) -> Vec<serde_json::Value> {
    events(p)
        .into_iter()
        .filter(|e| e["kind"] == "verify_finished")
        .collect()
}

#[test]
fn broken_reports_are_a_journaled_reason_and_never_a_pass() {
    // A runner that crashes mid-report (the report cut off, the process killed),
    // after the named test had passed.
    let p = reported(
        "[ -f done.txt ] || exit 1\nprintf '<testsuites><testsuite name=\"s\"><testcase classname=\"suite\" name=\"the_test\"/>' > \"$AGENTLOOP_TEST_REPORT\"\nkill -9 $$\n",
    );
    let v = verify_records(&p);
    assert!(!v.is_empty());
    for r in &v {
        assert_eq!(r["data"]["passed"], false, "{r:#}");
        let problem = r["data"]["commands"][0]["tests"]["problem"]
            .as_str()
            .unwrap();
        assert!(
            problem.contains("cannot be read") && problem.contains("end of XML"),
            "{problem}"
        );
    }
    assert_ne!(p.status()["tasks"][0]["status"], "done");
    // Not XML at all, and a name that is not UTF-8.
    for garbage in [
        "printf 'all tests passed' > \"$AGENTLOOP_TEST_REPORT\"",
        "printf '<testsuites><testsuite name=\"s\"><testcase classname=\"suite\" name=\"the_\\377test\"/></testsuite></testsuites>' > \"$AGENTLOOP_TEST_REPORT\"",
    ] {
        let p = reported(&format!("[ -f done.txt ] || exit 1\n{garbage}\n"));
        for r in verify_records(&p) {
            assert_eq!(r["data"]["passed"], false, "{r:#}");
            assert!(
                r["data"]["commands"][0]["tests"]["problem"]
                    .as_str()
                    .unwrap()
                    .contains("cannot be read"),
                "{r:#}"
            );
        }
    }
    // The same id twice, passed and failed: the failure stands, and is said.
    let p = reported(
        "[ -f done.txt ] || exit 1\nprintf '<testsuites><testsuite name=\"s\"><testcase classname=\"suite\" name=\"the_test\"/><testcase classname=\"suite\" name=\"the_test\"><failure message=\"second run failed\"/></testcase></testsuite></testsuites>' > \"$AGENTLOOP_TEST_REPORT\"\n",
    );
    for r in verify_records(&p) {
        assert_eq!(r["data"]["passed"], false, "{r:#}");
        let notes = &r["data"]["commands"][0]["tests"]["notes"];
        assert!(
            notes[0]
                .as_str()
                .unwrap()
                .contains("`suite::the_test` was reported 2 times"),
            "{r:#}"
        );
        assert!(
            r["data"]["digest"]
                .as_str()
                .unwrap()
                .contains("second run failed"),
            "{r:#}"
        );
    }
}

#[test]
fn fifty_thousand_tests_are_read_and_judged() {
    // 50,000 tests, the named one among them; it passes once the agent did the work.
    let p = reported(
        "awk -v done=\"$( [ -f done.txt ] && echo 1 || echo 0 )\" 'BEGIN {\n  printf \"<testsuites><testsuite name=\\\"big\\\">\"\n  for (i = 0; i < 50000; i++) printf \"<testcase classname=\\\"big\\\" name=\\\"t%d\\\"/>\", i\n  if (done) printf \"<testcase classname=\\\"suite\\\" name=\\\"the_test\\\"/>\"\n  else printf \"<testcase classname=\\\"suite\\\" name=\\\"the_test\\\"><failure message=\\\"not yet\\\"/></testcase>\"\n  printf \"</testsuite></testsuites>\"\n}' > \"$AGENTLOOP_TEST_REPORT\"\n",
    );
    let s = p.status();
    assert_eq!(s["tasks"][0]["status"], "done", "{s:#}");
    assert_eq!(s["tests_baseline"]["tests"], 50_001, "{s:#}");
    assert_eq!(s["tests_baseline"]["failing"], 1, "{s:#}");
    assert_eq!(s["tasks"][0]["evidence"]["named_passing"], 1, "{s:#}");
}

#[test]
fn under_the_sandbox_a_check_still_reports_test_by_test() {
    // `[sandbox] verify`: the checks run confined (agentloop's cache hidden, no
    // network), with their report's directory laid back in, writable.
    let p = Scratch::new()
        .plan("# One\n\n## T1: Make it pass\n\nVerify: sh check.sh\nTests: suite::the_test\n")
        .agent(&agent("touch done.txt\necho TASK_COMPLETE\n"))
        .file(
            "check.sh",
            "if [ -f done.txt ]; then c='<testcase classname=\"suite\" name=\"the_test\"/>'; else c='<testcase classname=\"suite\" name=\"the_test\"><failure message=\"no\"/></testcase>'; fi\nprintf '<testsuites><testsuite name=\"s\">%s</testsuite></testsuites>' \"$c\" > \"$AGENTLOOP_TEST_REPORT\"\n",
        )
        .config("[sandbox]\nmode = \"workspace\"\nverify = true\n")
        .build();
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["verdict"], "SHIP", "{s:#}");
    assert_eq!(s["tests_baseline"]["failing"], 1, "{s:#}");
}

#[test]
fn with_workers_each_task_is_judged_in_its_worktree_and_again_on_the_merged_result() {
    // Two independent tasks on two workers: each verified on its named tests in its
    // worktree, then on the merged result, where the other's named tests must keep
    // passing too.
    let plan = "# Calculator\n\nDivision and multiplication.\n\n## T1: Division\n\nAdd `div`.\n\nTests: tests/test_div.py::*\n\n## T2: Multiplication\n\nAdd `mul` in calc/mul.py and import it in calc/__init__.py.\n\nTests: tests/test_mul.py::*\n";
    let body = r#"case "$task" in
T1) printf '\ndef div(a, b):\n    return a / b\n' >> calc/__init__.py ;;
T2) printf 'def mul(a, b):\n    return a * b\n' > calc/mul.py; printf 'from calc.mul import mul\n' > calc/__init__.py.new; cat calc/__init__.py >> calc/__init__.py.new; mv calc/__init__.py.new calc/__init__.py ;;
esac
echo TASK_COMPLETE
"#;
    let mut p = calc()
        .plan(plan)
        .agent(&agent(body))
        .config("[verify]\ncommands = [\"python3 -m pytest\"]\n")
        .build();
    p.env.push(("PATH".into(), python_path()));
    let r = p.run(&["run", "--no-wait", "--workers", "2"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let s = p.status();
    assert_eq!(s["verdict"], "SHIP", "{s:#}");
    for t in s["tasks"].as_array().unwrap() {
        assert_eq!(t["evidence"]["named_passing"], 2, "{t:#}");
    }
    // Each merge's checks ran per test too. Two tasks verified at the same moment are
    // merged in one batch, checked once: the other's log points to that one.
    let dir = p.run_dir().join("iterations");
    let merged: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("merge.log")).ok())
        .collect();
    assert_eq!(merged.len(), 2, "{merged:?}");
    let checked = merged
        .iter()
        .filter(|log| log.contains("[pytest: 8 tests:"))
        .count();
    let batched = merged
        .iter()
        .filter(|log| log.contains("merged in a batch with T1, T2; checked together"))
        .count();
    assert!(
        (checked, batched) == (2, 0) || (checked, batched) == (1, 1),
        "{merged:?}"
    );
}

#[test]
fn a_test_file_deleted_waits_for_a_person_and_once_approved_is_not_held_against_the_task() {
    // The agent does the work and deletes a test module no task names: the surface gate
    // asks a person; once they approve, its tests are gone for good, not "no longer run".
    let plan = "# Division\n\n## T1: Division\n\nAdd `div`.\n\nTests: tests/test_div.py::*\n";
    let body = "printf '\\ndef div(a, b):\\n    return a / b\\n' >> calc/__init__.py\nrm tests/test_pow.py\necho TASK_COMPLETE\n";
    let mut p = calc()
        .plan(plan)
        .agent(&agent(body))
        .config("[verify]\ncommands = [\"python3 -m pytest\"]\n")
        .build();
    p.env.push(("PATH".into(), python_path()));
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "waits at the surface gate: {}", r.stderr);
    assert!(journal_has(&p, "\"point\":\"surface\""));
    let r = p.run(&["approve", "--note", "the power tests go"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let r = p.run(&["resume", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["tasks"][0]["status"], "done", "{s:#}");
    assert_eq!(s["iterations"], 1, "{s:#}");
}

#[test]
fn a_test_module_that_does_not_import_at_the_baseline_is_judged_once_it_does() {
    // pytest reports a module that fails to import as one errored entry (its file);
    // the task that makes it import gets its named tests judged, and the entry is not
    // "no longer run".
    let plan = "# Roots\n\n## T1: Square roots\n\nAdd `calc/root.py` with `sqrt`.\n\nTests: tests/test_root.py::*\n";
    let mut p = calc()
        .file(
            "tests/test_root.py",
            "from calc.root import sqrt\n\ndef test_sqrt():\n    assert sqrt(9) == 3\n",
        )
        .plan(plan)
        .agent(&agent(
            "printf 'def sqrt(x):\\n    return x ** 0.5\\n' > calc/root.py\necho TASK_COMPLETE\n",
        ))
        .config("[verify]\ncommands = [\"python3 -m pytest\"]\n")
        .build();
    p.env.push(("PATH".into(), python_path()));
    let r = p.run(&["plan", "check", "--baseline"]);
    assert!(
        r.stdout
            .contains("not collected at baseline: tests/test_root.py does not import yet"),
        "{}\n{}",
        r.stdout,
        r.stderr
    );
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["tasks"][0]["evidence"]["named_passing"], 1, "{s:#}");
    assert_eq!(s["iterations"], 1, "{s:#}");
}

#[test]
fn a_second_run_on_the_same_tree_takes_the_cached_baseline_unless_the_cache_was_edited() {
    let p = reported(
        "if [ -f done.txt ]; then c='<testcase classname=\"suite\" name=\"the_test\"/>'; else c='<testcase classname=\"suite\" name=\"the_test\"><failure message=\"no\"/></testcase>'; fi\nprintf '<testsuites><testsuite name=\"s\">%s<testcase classname=\"suite\" name=\"keeps\"/></testsuite></testsuites>' \"$c\" > \"$AGENTLOOP_TEST_REPORT\"\n",
    );
    let baseline_of = |p: &Project| {
        events(p)
            .into_iter()
            .find(|e| e["kind"] == "tests_baseline")
            .unwrap()["data"]
            .clone()
    };
    assert_eq!(baseline_of(&p)["cached"], serde_json::Value::Null);
    // The same tree again (the first run's work undone): the cache answers.
    std::fs::remove_file(p.path().join("done.txt")).unwrap();
    let r = p.run(&["run", "--no-wait"]);
    assert!(r.code.is_some(), "{}", r.stderr);
    assert_eq!(baseline_of(&p)["cached"], true, "{}", r.stderr);
    // An edited cache (a test that passed made to look failing, so that breaking it
    // later would not count) breaks its seal: the baseline is taken again.
    let cache = p.cache.path().join("agentloop/baselines");
    for e in std::fs::read_dir(&cache).unwrap().flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap();
        assert!(text.contains(r#"\"suite::keeps\":\"passed\""#), "{text}");
        std::fs::write(
            e.path(),
            text.replace(
                r#"\"suite::keeps\":\"passed\""#,
                r#"\"suite::keeps\":\"failed\""#,
            ),
        )
        .unwrap();
    }
    std::fs::remove_file(p.path().join("done.txt")).unwrap();
    let r = p.run(&["run", "--no-wait"]);
    assert!(r.code.is_some(), "{}", r.stderr);
    let b = baseline_of(&p);
    assert_eq!(b["cached"], serde_json::Value::Null, "{b:#}");
    assert_eq!(b["commands"][0]["tests"]["suite::keeps"], "passed", "{b:#}");
}
