//! Per-test evidence with real runners (pytest in the virtual environment
//! `scripts/test` makes in `.tools/pytest`, Jest, Vitest and Mocha from `.tools/js`,
//! cargo nextest, go test): a task is done when the tests it names pass and every test
//! that passed at the run's baseline still passes; agents that game the exit code get
//! nothing done.

use std::path::PathBuf;

use crate::support::*;

/// The repository's own tools directory (`scripts/test` installs into it).
fn tools() -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools")
}

/// A PATH whose `python3` has pytest (the virtual environment's), in front.
fn python_path() -> String {
    let venv = tools().join("pytest/bin");
    assert!(
        venv.join("pytest").exists(),
        "pytest is not installed in {}: run scripts/test, which installs it",
        venv.display()
    );
    format!(
        "{}:{}",
        venv.canonicalize().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

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
    let r = p.run(&["init"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let config = p.read("agentloop.toml");
    assert!(
        config.contains("commands = [\"python3 -m pytest\"]"),
        "init found pytest: {config}"
    );
    p.write(
        "agentloop.toml",
        config.replace("agent = \"claude\"", "agent = \"scripted\"")
            + "\n[agents.scripted]\ncommand = [\"sh\", \"agent.sh\"]\ntimeout = \"60s\"\n",
    );
    p.write("agent.sh", agent(agent_body));
    p.write("PLAN.md", plan);
    p.commit("init");
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
    for t in status["tasks"].as_array().unwrap() {
        let e = &t["evidence"];
        assert_eq!(e["named_passing"], 2, "{t:#}");
        assert_eq!(e["named"], 2, "{t:#}");
        assert_eq!(e["regressions"].as_array().unwrap().len(), 0, "{t:#}");
    }
    let summary = std::fs::read_to_string(p.run_dir().join("summary.md")).unwrap();
    assert!(summary.contains("FAIL_TO_PASS"), "{summary}");
}
