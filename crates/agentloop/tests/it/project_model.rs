//! The project learned from its checks, not from names (`agentloop_project::learned`):
//! a pytest plugin the configuration loads by name is the checks' own, whatever it is
//! named and wherever it lies; a file named like a test that no check collected or
//! opened is no test, and changing it is the work.

use crate::support::*;

const CALC: &str = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return 0\n";

/// A flat package whose tests take the expected product from a fixture of
/// `support/fakes.py`, a plugin `conftest.py` loads by name.
fn with_a_plugin() -> Project {
    let s = Scratch::new()
        .file(
            "pyproject.toml",
            "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\npythonpath = [\".\"]\n",
        )
        .file("calc/__init__.py", CALC)
        .file("conftest.py", "pytest_plugins = [\"support.fakes\"]\n")
        .file("support/__init__.py", "")
        .file(
            "support/fakes.py",
            "import pytest\n\n\n@pytest.fixture\ndef product():\n    return 6\n",
        )
        .file(
            "tests/test_calc.py",
            "import calc\n\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n\n\ndef test_mul(product):\n    assert calc.mul(2, 3) == product\n",
        );
    let mut p = s.build();
    p.env.push(("PATH".into(), python_path()));
    p
}

#[test]
fn a_plugin_the_configuration_loads_by_name_is_the_checks_own() {
    let p = with_a_plugin();
    // First attempt: the fixture is made to expect what `mul` gives; then the work.
    init_with_scripted(
        &p,
        "# Calc\n\n## T1: Multiplication\n\nMake `mul` in calc/__init__.py multiply.\n\nTests: tests/test_calc.py::test_mul\n",
        "if [ \"$n\" = 1 ]; then\n  sed -i 's/return 6/return 0/' support/fakes.py\nelse\n  sed -i 's/return 0/return a * b/' calc/__init__.py\nfi\necho TASK_COMPLETE\n",
    );
    let r = p.run(&["plan", "check", "--baseline"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains(
            "plugin support/fakes.py — loaded by name (`support.fakes`) from conftest.py"
        ),
        "{}",
        r.stdout
    );
    let r = p.run(&["run", "--yes", "--no-wait"]);
    assert_eq!(r.code, Some(5), "waits for a person: {}", r.stderr);
    let s = p.status();
    assert_eq!(s["gate"]["point"], "surface", "{s:#}");
    assert_eq!(s["surface_changes"][0]["path"], "support/fakes.py", "{s:#}");
    let files = s["tests_baseline"]["model"]["files"].as_array().unwrap();
    let role = |path: &str| {
        files
            .iter()
            .find(|f| f["path"] == path)
            .map(|f| f["role"].as_str().unwrap().to_string())
    };
    assert_eq!(role("support/fakes.py").as_deref(), Some("plugin"), "{s:#}");
    assert_eq!(role("tests/test_calc.py").as_deref(), Some("test"), "{s:#}");
    assert_eq!(role("calc/__init__.py").as_deref(), Some("work"), "{s:#}");
    assert_eq!(role("conftest.py").as_deref(), Some("config"), "{s:#}");
    // Rejected, the plugin is back and the honest attempt ships.
    let r = p.run(&["reject", "--note", "the fixture stays"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let r = p.run(&["resume", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(p.read("support/fakes.py").contains("return 6"));
    assert_eq!(p.status()["verdict"], "SHIP");
}

#[test]
fn a_file_named_like_a_test_that_no_check_runs_is_the_work() {
    // `scripts/test_release.py` is a release script; pytest collects `tests/` only.
    let s = Scratch::new()
        .file(
            "pyproject.toml",
            "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\npythonpath = [\".\"]\n",
        )
        .file("calc/__init__.py", CALC)
        .file("scripts/test_release.py", "VERSION = \"0.1.0\"\nprint(VERSION)\n")
        .file(
            "tests/test_calc.py",
            "import calc\n\n\ndef test_mul():\n    assert calc.mul(2, 3) == 6\n",
        );
    let mut p = s.build();
    p.env.push(("PATH".into(), python_path()));
    init_with_scripted(
        &p,
        "# Calc\n\n## T1: Multiplication, released\n\nMake `mul` in calc/__init__.py multiply, and say 0.2.0 in the release script.\n\nTests: tests/test_calc.py::test_mul\n",
        "sed -i 's/return 0/return a * b/' calc/__init__.py\nsed -i 's/0.1.0/0.2.0/' scripts/test_release.py\necho TASK_COMPLETE\n",
    );
    let r = p.run(&["plan", "check", "--baseline"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("not a test: scripts/test_release.py — named like a test, but no check collected or opened it"),
        "{}",
        r.stdout
    );
    let r = p.run(&["run", "--yes", "--no-wait"]);
    let s = p.status();
    assert_eq!(r.code, Some(0), "{}\n{s:#}", r.stderr);
    assert_eq!(s["verdict"], "SHIP", "{s:#}");
    assert_eq!(
        s["tests_baseline"]["model"]["not_tests"][0]["path"], "scripts/test_release.py",
        "{s:#}"
    );
    assert!(p.read("scripts/test_release.py").contains("0.2.0"));
}

/// A calc package whose tests are in two files: `tests/test_calc.py` (`test_add`, and
/// `test_mul`, which fails until `mul` multiplies) and `tests/test_more.py`.
fn calc_in_two_files() -> Scratch {
    Scratch::new()
        .file(
            "pyproject.toml",
            "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\npythonpath = [\".\"]\n",
        )
        .file("calc/__init__.py", CALC)
        .file(
            "tests/test_calc.py",
            "import calc\n\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n\n\ndef test_mul():\n    assert calc.mul(2, 3) == 6\n",
        )
        .file(
            "tests/test_more.py",
            "import calc\n\n\ndef test_zero():\n    assert calc.add(0, 0) == 0\n",
        )
}

/// A task's check that runs a part of the run's own check (`python3 -m pytest
/// tests/test_calc.py` beside `python3 -m pytest`) is read from that check's run at
/// the baseline, not run a second time; judged as itself after.
#[test]
fn a_check_that_runs_a_part_of_another_is_read_from_its_run_at_the_baseline() {
    let mut p = calc_in_two_files().build();
    p.env.push(("PATH".into(), python_path()));
    init_with_scripted(
        &p,
        "# Calc\n\n## T1: Multiplication\n\nMake `mul` in calc/__init__.py multiply.\n\nVerify: python3 -m pytest tests/test_calc.py\nTests: tests/test_calc.py::test_mul\n",
        "sed -i 's/return 0/return a * b/' calc/__init__.py\necho TASK_COMPLETE\n",
    );
    let r = p.run(&["run", "--yes", "--no-wait"]);
    let s = p.status();
    assert_eq!(r.code, Some(0), "{}\n{s:#}", r.stderr);
    let log = std::fs::read_to_string(p.run_dir().join("baseline.log")).unwrap();
    assert!(
        log.contains("$ python3 -m pytest tests/test_calc.py\n[baseline: read from `python3 -m pytest`'s run, 2 of its tests]"),
        "{log}"
    );
    assert_eq!(
        log.matches("-p agentloop_pytest_report_").count(),
        1,
        "one pytest run: {log}"
    );
    let checks = s["tests_baseline"]["checks"].as_array().unwrap();
    let part = checks
        .iter()
        .find(|c| c["command"] == "python3 -m pytest tests/test_calc.py")
        .unwrap();
    assert_eq!(part["tests"], 2, "{s:#}");
    assert_eq!(part["runner"], "pytest", "{s:#}");
}

/// On every tree after the baseline too (a task's iteration, VALIDATE), the part is
/// read from the whole's run, which goes first, and judged as itself: a task check
/// with no names of its own wants every test it selects passing, though the run's own
/// check forgives a test that already failed at the baseline.
#[test]
fn a_check_that_runs_a_part_of_another_is_read_from_its_run_on_every_tree() {
    let plan = "# Calc\n\n## T1: Multiplication\n\nMake `mul` in calc/__init__.py multiply.\n\nVerify: python3 -m pytest tests/test_calc.py\nTests: tests/test_calc.py::test_mul\n";
    // A task's iteration; the merge queue's check of the merged result.
    for (workers, log) in [
        (&[][..], "iterations/0001/verify.log"),
        (&["--workers", "2"][..], "iterations/0001/merge.log"),
    ] {
        let mut p = calc_in_two_files().build();
        p.env.push(("PATH".into(), python_path()));
        init_with_scripted(
            &p,
            plan,
            "sed -i 's/return 0/return a * b/' calc/__init__.py\necho TASK_COMPLETE\n",
        );
        let r = p.run(&[&["run", "--yes", "--no-wait"][..], workers].concat());
        let st = p.status();
        assert_eq!(r.code, Some(0), "{}\n{st:#}", r.stderr);
        assert_eq!(st["verdict"], "SHIP", "{st:#}");
        let text = std::fs::read_to_string(p.run_dir().join(log)).expect(log);
        let whole = text.find("$ python3 -m pytest\n").expect(&text);
        let part = text
            .find("$ python3 -m pytest tests/test_calc.py\n[read from `python3 -m pytest`'s run: 2 of its tests]")
            .expect(&text);
        assert!(whole < part, "the whole runs first: {text}");
        assert_eq!(
            text.matches("-p agentloop_pytest_report_").count(),
            1,
            "one pytest run: {text}"
        );
        // What the records say of it: read, not run.
        let summary = std::fs::read_to_string(p.run_dir().join("summary.md")).unwrap();
        assert!(
            summary.contains("read from `python3 -m pytest`'s run (not run itself)"),
            "{summary}"
        );
    }
    // The part's own verdict: no names, so every test it selects must pass; the
    // run's check forgives test_mul (it failed at the baseline), the part does not.
    let mut p = calc_in_two_files().build();
    p.env.push(("PATH".into(), python_path()));
    init_with_scripted(
        &p,
        &plan.replace("Tests: tests/test_calc.py::test_mul\n", ""),
        "echo '# nothing' >> calc/__init__.py\necho TASK_COMPLETE\n",
    );
    let r = p.run(&["run", "--yes", "--no-wait"]);
    assert_ne!(r.code, Some(0), "{}", r.stderr);
    assert_ne!(p.status()["verdict"], "SHIP");
    let text = std::fs::read_to_string(p.run_dir().join("iterations/0001/verify.log")).unwrap();
    assert!(
        text.contains("[read from `python3 -m pytest`'s run: 2 of its tests]"),
        "{text}"
    );
    assert!(
        r.stderr.contains("tests/test_calc.py::test_mul: failed"),
        "{}",
        r.stderr
    );
}

/// A test class that inherits its tests from a class of another module (a contract
/// every store must meet) is the test module's: the part `tests/test_memory.py`
/// holds all three of its tests, read from the whole's run. A task whose check is that
/// part, with no names, wants all three passing; the run's check forgives the two that
/// failed at the baseline. (pytest's JUnit report names the file that defines a test
/// function, `tests/contract.py`, not its module: the part held one test, which
/// passed, and a task that did nothing was done.)
#[test]
fn tests_inherited_from_another_module_belong_to_the_module_that_runs_them() {
    let project = || {
        Scratch::new()
            .file(
                "pyproject.toml",
                "[project]\nname = \"store\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\npythonpath = [\".\"]\n",
            )
            .file(
                "store.py",
                "class MemoryStore:\n    def __init__(self):\n        self.d = {}\n\n    def put(self, k, v):\n        self.d[k] = v\n\n    def get(self, k):\n        return 0\n",
            )
            .file("tests/__init__.py", "")
            .file(
                "tests/contract.py",
                "class StoreContract:\n    def make(self):\n        raise NotImplementedError\n\n    def test_put_then_get(self):\n        s = self.make()\n        s.put(\"a\", 1)\n        assert s.get(\"a\") == 1\n\n    def test_missing_is_none(self):\n        assert self.make().get(\"x\") is None\n",
            )
            .file(
                "tests/test_memory.py",
                "from store import MemoryStore\nfrom tests.contract import StoreContract\n\n\nclass TestMemoryStore(StoreContract):\n    def make(self):\n        return MemoryStore()\n\n    def test_starts_empty(self):\n        assert MemoryStore().d == {}\n",
            )
    };
    let plan = "# Store\n\n## T1: Make get work\n\nMake `get` in store.py return what `put` stored.\n\nVerify: python3 -m pytest tests/test_memory.py\n";
    for (agent, done) in [
        ("echo '# later' >> store.py\necho TASK_COMPLETE\n", false),
        (
            "sed -i 's/return 0/return self.d.get(k)/' store.py\necho TASK_COMPLETE\n",
            true,
        ),
    ] {
        let mut p = project().build();
        p.env.push(("PATH".into(), python_path()));
        init_with_scripted(&p, plan, agent);
        let r = p.run(&["run", "--yes", "--no-wait", "--max-iterations", "1"]);
        let st = p.status();
        assert_eq!(
            st["tasks"][0]["status"] == "done",
            done,
            "{}\n{st:#}",
            r.stderr
        );
        let text = std::fs::read_to_string(p.run_dir().join("iterations/0001/verify.log")).unwrap();
        assert!(
            text.contains("[read from `python3 -m pytest`'s run: 3 of its tests]"),
            "{text}"
        );
    }
}
