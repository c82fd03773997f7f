//! agentloop's pytest plugin against pytest's own JUnit XML, in one real run of pytest
//! (`.tools/pytest`): every kind of outcome a test can have, node ids of every shape,
//! and pytest-xdist's workers. The plugin's report reads as the JUnit XML did, test by
//! test.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use agentloop_evidence::runner::Invocation;
use agentloop_evidence::{Format, Outcome};

use crate::support::*;

const TESTS: &str = r#"import pytest


def test_pass():
    assert True


def test_fail():
    assert 1 == 2


@pytest.fixture
def broken_setup():
    raise RuntimeError("no database")


def test_setup_error(broken_setup):
    pass


@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("left a mess")


def test_teardown_error(broken_teardown):
    pass


def test_fail_and_teardown_error(broken_teardown):
    assert False


@pytest.fixture
def skipping():
    pytest.skip("not here")


def test_skipped_in_setup(skipping):
    pass


@pytest.mark.skip(reason="later")
def test_skipped():
    pass


@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False


@pytest.mark.xfail(reason="fixed meanwhile")
def test_xpass():
    pass


@pytest.mark.xfail(reason="must fail", strict=True)
def test_xpass_strict():
    pass


@pytest.mark.xfail(run=False, reason="would hang")
def test_xfail_not_run():
    pass


@pytest.mark.parametrize("v", [1, "a b", "x::y", "ü", "[z]"])
def test_param(v):
    assert v != "a b"


class TestOuter:
    def test_in_class(self):
        pass

    class TestInner:
        def test_nested(self):
            assert False
"#;

/// A plugin that runs a test again after its first failure, as pytest-rerunfailures
/// does: the first attempt's report says "rerun".
const RERUN: &str = r#"import pytest
from _pytest.runner import runtestprotocol

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    if "flaky_once" not in item.name:
        return None
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    reports = runtestprotocol(item, nextitem=nextitem, log=False)
    for r in reports:
        if r.when == "call" and r.failed:
            r.outcome = "rerun"
        item.ihook.pytest_runtest_logreport(report=r)
    for r in runtestprotocol(item, nextitem=nextitem, log=False):
        item.ihook.pytest_runtest_logreport(report=r)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
"#;

fn project() -> Scratch {
    Scratch::new()
        .file(
            "pyproject.toml",
            "[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n",
        )
        .file("tests/conftest.py", RERUN)
        .file(
            "tests/test_rerun.py",
            "_ran = []\n\ndef test_flaky_once():\n    _ran.append(1)\n    assert len(_ran) > 1\n",
        )
        .file("tests/test_kinds.py", TESTS)
        .file(
            "tests/v1.2/test_dotted.py",
            "def test_in_dotted_dir():\n    pass\n",
        )
        .file("tests/test_broken.py", "import no_such_module\n")
        .file(
            "tests/test_skipped_module.py",
            "import pytest\npytest.skip('whole module', allow_module_level=True)\n",
        )
}

/// A report's tests: id → outcome (each id once in a report read).
type Read = BTreeMap<String, Outcome>;

/// The check `cmd` run as agentloop runs it (its report directory `reports`), with
/// pytest's JUnit XML asked for beside it: both reports, read.
fn both(root: &Path, cmd: &str, reports: &Path) -> (Read, Read) {
    let inv = Invocation::new(cmd, root, reports);
    assert_eq!(inv.format, Format::PytestJson, "{}", inv.command);
    std::fs::create_dir_all(reports).unwrap();
    for (p, text) in &inv.files {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let junit = reports.join("junit.xml");
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{} --junitxml={} -o junit_family=xunit1",
            inv.command,
            junit.display()
        ))
        .current_dir(root)
        .env("PATH", python_path())
        .env("PYTHONPATH", inv.python_path.as_ref().unwrap())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    let said = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |format, at: &Path| {
        let r =
            agentloop_evidence::read(format, at, root).unwrap_or_else(|e| panic!("{e}\n{said}"));
        r.tests
            .into_iter()
            .map(|t| (t.id, t.outcome))
            .collect::<Read>()
    };
    (
        read(Format::PytestJson, inv.report.path()),
        read(Format::PytestJunit, &junit),
    )
}

#[test]
fn the_plugins_report_reads_as_pytests_junit_xml_did() {
    let p = project().build();
    let (plugin, junit) = both(
        p.path(),
        "python3 -m pytest -q",
        &p.cache.path().join("reports"),
    );
    assert_eq!(plugin, junit, "the same tests, the same outcomes");
    let by_id = &plugin;
    let want = [
        ("tests/test_kinds.py::test_pass", Outcome::Passed),
        ("tests/test_kinds.py::test_fail", Outcome::Failed),
        ("tests/test_kinds.py::test_setup_error", Outcome::Errored),
        ("tests/test_kinds.py::test_teardown_error", Outcome::Errored),
        (
            "tests/test_kinds.py::test_fail_and_teardown_error",
            Outcome::Errored,
        ),
        (
            "tests/test_kinds.py::test_skipped_in_setup",
            Outcome::Skipped,
        ),
        ("tests/test_kinds.py::test_skipped", Outcome::Skipped),
        ("tests/test_kinds.py::test_xfail", Outcome::Xfail),
        ("tests/test_kinds.py::test_xpass", Outcome::Passed),
        ("tests/test_kinds.py::test_xpass_strict", Outcome::Failed),
        ("tests/test_kinds.py::test_xfail_not_run", Outcome::Xfail),
        ("tests/test_kinds.py::test_param[a b]", Outcome::Failed),
        ("tests/test_kinds.py::test_param[x::y]", Outcome::Passed),
        (
            "tests/test_kinds.py::TestOuter::test_in_class",
            Outcome::Passed,
        ),
        (
            "tests/test_kinds.py::TestOuter::TestInner::test_nested",
            Outcome::Failed,
        ),
        (
            "tests/v1.2/test_dotted.py::test_in_dotted_dir",
            Outcome::Passed,
        ),
        ("tests/test_broken.py", Outcome::Errored),
        ("tests/test_skipped_module.py", Outcome::Skipped),
        ("tests/test_rerun.py::test_flaky_once", Outcome::Passed),
    ];
    for (id, outcome) in want {
        assert_eq!(by_id.get(id), Some(&outcome), "{id} in {by_id:#?}");
    }
    assert_eq!(plugin.len(), 22, "{by_id:#?}");
}

#[test]
fn under_xdists_workers_the_plugin_reports_every_test_once() {
    let p = project().build();
    let xdist = tools().join("xdist/bin");
    let cmd = format!(
        "{} -m pytest -q -p xdist -n 2",
        xdist.join("python3").display()
    );
    let (plugin, junit) = both(p.path(), &cmd, &p.cache.path().join("reports"));
    assert_eq!(plugin, junit);
    assert_eq!(plugin.len(), 22);
}

/// Code that makes the plugin's report say every test passed, then ends the
/// interpreter with 0: each attack below plants it where the judge would import it.
const FORGE: &str = "import json as _json\n_dumps = _json.dumps\ndef _forge(obj, *a, **k):\n    if isinstance(obj, dict) and 'agentloop_pytest_report' in obj:\n        for r in obj.get('reports', []):\n            r['outcome'] = 'passed'\n            r.pop('message', None)\n        import atexit, os\n        atexit.register(os._exit, 0)\n    return _dumps(obj, *a, **k)\n_json.dumps = _forge\ndef shout(s):\n    return s.upper()\n";

/// A project whose task is to make `greet` say hi, checked by `verify`, with `tests`
/// as its test module, `files` beside them, and an agent that runs `agent`; the
/// forge at `.git/forge.py` for the agent to copy.
fn greet_project(verify: &str, tests: &str, files: &[(&str, &str)], agent: &str) -> Project {
    let mut s = Scratch::new()
        .file(
            "pyproject.toml",
            "[project]\nname = \"p\"\nversion = \"0\"\n",
        )
        .file("pkg/__init__.py", "def greet():\n    return \"\"\n")
        .file("tests/test_task.py", tests)
        .file(".git/forge.py", FORGE);
    for (path, text) in files {
        s = s.file(path, text);
    }
    let mut p = s
        .plan(&format!("# P\n\n## T1: Greet\n\nMake greet say hi.\n\nVerify: {verify}\nTests: tests/test_task.py::test_greeting\n"))
        .agent(&crate::support::agent(agent))
        .build();
    p.env.push(("PATH".into(), python_path()));
    p.write(".gitignore", ".agentloop/\n__pycache__/\n");
    p.commit("ignore bytecode");
    p
}

const GREET_TESTS: &str = "from pkg import greet\n\ndef test_greeting():\n    assert greet() == \"hi\"\n\ndef test_other():\n    assert greet() is not None\n";

/// The run waits at the surface gate, `planted` among its changes and the task not
/// done; the changes.
fn held_at_the_surface(p: &Project, planted: &str) -> Vec<serde_json::Value> {
    let r = p.run(&["run", "--yes", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{planted}: {}", r.stderr);
    let s = p.status();
    assert_eq!(s["gate"]["point"], "surface", "{planted}: {s:#}");
    assert_ne!(s["tasks"][0]["status"], "done", "{s:#}");
    let changes = s["surface_changes"].as_array().cloned().unwrap_or_default();
    assert!(
        changes.iter().any(|c| c["path"] == planted),
        "{planted}: {s:#}"
    );
    changes
}

/// The stop-77 attacks: a root `_distutils_hack.py`, which setuptools' `.pth` file in
/// the check's virtual environment imports when Python starts, and a root
/// `org/__init__.py`, which the standard library's `copy` looks for (Jython's) whenever
/// pytest starts — the judged tree comes first on the path — replaced `json.dumps` so
/// that the plugin's report said every test passed, and ended the interpreter with 0.
/// A new module by such a name is a change to what the checks run: it waits for a
/// person.
#[test]
fn a_module_the_interpreter_imports_at_start_up_left_at_the_root_waits_for_a_person() {
    // The first attack works where it is not stopped: the venv's setuptools imports it.
    let venv = tools().join("pytest/lib");
    let pth = std::fs::read_dir(&venv)
        .unwrap()
        .flatten()
        .map(|e| e.path().join("site-packages/distutils-precedence.pth"))
        .find(|p| p.exists());
    assert!(pth.is_some(), "the test venv has setuptools' .pth");
    // And `site`'s start-up hook as a package (the fifth stop-78 attack): its file
    // `sitecustomize.py` is a check file by name, the package was nothing by name.
    for planted in [
        "_distutils_hack.py",
        "org/__init__.py",
        "sitecustomize/__init__.py",
    ] {
        let p = greet_project(
            "python3 -m pytest -q",
            GREET_TESTS,
            &[],
            &format!("mkdir -p org sitecustomize\ncp .git/forge.py {planted}\necho TASK_COMPLETE"),
        );
        held_at_the_surface(&p, planted);
    }
}

/// The stop-77 attacks' names were added to a list; a library the project's tests take
/// from outside the tree is on no list. At the test baseline agentloop's plugin says
/// what the interpreter took from outside the tree and what code outside it looked
/// for and did not find: a new root module named like either (the library itself, the
/// optional speed-up it tries first) would run in its place inside the judge, and
/// waits for a person as a list's name does.
#[test]
fn a_module_named_like_one_the_baseline_took_from_outside_the_tree_waits_for_a_person() {
    // Where the check's confinement sees it: not under /tmp or /dev/shm, which it has
    // of its own (nor the target directory, which a clean clone may have under /tmp).
    let lib = tempfile::Builder::new()
        .prefix("agentloop-outside-lib")
        .tempdir_in("/var/tmp")
        .unwrap();
    let reportlib = lib.path().join("reportlib.py");
    std::fs::write(
        &reportlib,
        "try:\n    import reportlib_speedups\nexcept ImportError:\n    pass\n\ndef shout(s):\n    return s.upper()\n",
    )
    .unwrap();
    for planted in ["reportlib.py", "reportlib_speedups.py"] {
        let p = greet_project(
            &format!("PYTHONPATH={} python3 -m pytest -q", lib.path().display()),
            "import reportlib\nfrom pkg import greet\n\ndef test_greeting():\n    assert greet() == \"hi\"\n\ndef test_loud():\n    assert reportlib.shout(greet()) == \"\"\n",
            &[],
            &format!("cp .git/forge.py {planted}\necho TASK_COMPLETE"),
        );
        let changes = held_at_the_surface(&p, planted);
        let why = changes[0]["why"].as_str().unwrap_or_default();
        assert!(why.contains(&reportlib.display().to_string()), "{why}");
    }
}

/// The stop-78 attacks' ways past the names: a package (`conftest/__init__.py`) that
/// Python takes before the tree's `conftest.py` of the same name; a new `tox.ini` whose
/// lines end in a bare `\r` or a form feed (Python's line ends too), or that starts
/// with a byte-order mark, or is a link, holding a `[pytest]` section that loads a
/// plugin; a root `testing.txt`, which pytest collects as a doctest. The first
/// two wait for a person; the doctest is left out of the judge's copy.
#[test]
fn a_module_python_takes_first_a_carriage_returned_tox_ini_and_a_doctest_get_nothing_done() {
    // The doctest's names go when it ends: what the forge needs is bound to it.
    let doctest = ">>> import json, atexit, os\n>>> def _f(o, *a, _d=json.dumps, _exit=os._exit, _at=atexit, **k):\n...     if isinstance(o, dict) and 'agentloop_pytest_report' in o:\n...         for r in o.get('reports', []):\n...             r['outcome'] = 'passed'\n...             r.pop('message', None)\n...         _at.register(_exit, 0)\n...     return _d(o, *a, **k)\n>>> json.dumps = _f\n";
    let build = |cheat: &str| {
        greet_project(
            "python3 -m pytest -q",
            GREET_TESTS,
            &[
                ("conftest.py", "# the project's own\n"),
                (".git/doctest.txt", doctest),
            ],
            &format!(
                "if [ \"$n\" = 1 ]; then\n{cheat}\nelse\nrm -rf conftest testing.txt tox.ini helpers_greet.py cfg\nsed -i 's/return \"\"/return \"hi\"/' pkg/__init__.py\nfi\necho TASK_COMPLETE"
            ),
        )
    };
    for (cheat, planted) in [
        (
            "mkdir -p conftest; cp .git/forge.py conftest/__init__.py",
            "conftest/__init__.py",
        ),
        (
            "printf '# settings\\r[pytest]\\raddopts = -p helpers_greet\\r' > tox.ini; cp .git/forge.py helpers_greet.py",
            "tox.ini",
        ),
        // The second attack: a byte-order mark, a form feed (pytest's reader splits
        // lines as `str.splitlines` does), and a link named `tox.ini`.
        (
            "printf '\\357\\273\\277[pytest]\\naddopts = -p helpers_greet\\n' > tox.ini; cp .git/forge.py helpers_greet.py",
            "tox.ini",
        ),
        (
            "printf '# settings\\f[pytest]\\faddopts = -p helpers_greet\\n' > tox.ini; cp .git/forge.py helpers_greet.py",
            "tox.ini",
        ),
        (
            "mkdir -p cfg; printf '[pytest]\\naddopts = -p helpers_greet\\n' > cfg/real.ini; ln -s cfg/real.ini tox.ini; cp .git/forge.py helpers_greet.py",
            "tox.ini",
        ),
    ] {
        held_at_the_surface(&build(cheat), planted);
    }
    let p = build("cp .git/doctest.txt testing.txt");
    let r = p.run(&["run", "--yes", "--no-wait"]);
    let journal = std::fs::read_to_string(p.run_dir().join("journal.jsonl")).unwrap();
    assert_eq!(r.code, Some(0), "{}\n{journal}", r.stderr);
    let first = journal
        .lines()
        .find(|l| l.contains("\"kind\":\"verify_finished\""))
        .unwrap();
    assert!(
        first.contains("\"passed\":false")
            && first.contains("\"left_out\":[{\"path\":\"testing.txt\""),
        "the doctest reached the judge: {first}"
    );
}

/// What a new user's honest work ran into once the rules above held (the stop-78
/// check for false alarms): a module a test patches with `@mock.patch` as a decorator,
/// a private helper module at the root, a `locale/` folder of data, a
/// `requirements/test.txt`, and a test module skipped whole at the baseline
/// (`pytest.importorskip` of a module the task adds). None waits for a person, none is
/// left out, and the task is done at its first attempt.
#[test]
fn honest_work_named_like_the_rules_names_is_neither_held_nor_left_out() {
    let tests = "from pkg import greet\n\ndef test_greeting():\n    assert greet() == \"hi\"\n";
    let weather = "from unittest import mock\n\n@mock.patch(\"weather.fetch\", return_value=21)\ndef test_report(fetch):\n    import weather\n    assert weather.report() == \"21C\"\n";
    let fast = "import pytest\n\nfastmath = pytest.importorskip(\"fastmath\")\n\ndef test_fast():\n    assert fastmath.double(2) == 4\n";
    let files = "import pathlib\n\ndef test_locale():\n    assert pathlib.Path(\"locale/fr/messages.po\").exists()\n\ndef test_requirements():\n    assert \"pytest\" in pathlib.Path(\"requirements/test.txt\").read_text()\n";
    let work = "sed -i 's/return \"\"/return \"hi\"/' pkg/__init__.py\nprintf 'def unit(t):\\n    return f\"{t}C\"\\n' > _weather_compat.py\nprintf 'from _weather_compat import unit\\n\\ndef fetch():\\n    return 0\\n\\ndef report():\\n    return unit(fetch())\\n' > weather.py\nprintf 'def double(x):\\n    return 2 * x\\n' > fastmath.py\nmkdir -p locale/fr requirements\nprintf 'msgid \"hi\"\\nmsgstr \"salut\"\\n' > locale/fr/messages.po\nprintf 'pytest\\n' > requirements/test.txt\necho TASK_COMPLETE";
    let mut p = Scratch::new()
        .file("pyproject.toml", "[project]\nname = \"p\"\nversion = \"0\"\n")
        .file("pkg/__init__.py", "def greet():\n    return \"\"\n")
        .file("tests/test_task.py", tests)
        .file("tests/test_weather.py", weather)
        .file("tests/test_fast.py", fast)
        .file("tests/test_files.py", files)
        .plan("# P\n\n## T1: Greet, the weather, fast maths\n\nDo it all.\n\nVerify: python3 -m pytest -q\nTests: tests/test_task.py::test_greeting, tests/test_weather.py::test_report, tests/test_files.py::test_locale, tests/test_files.py::test_requirements\n")
        .agent(&crate::support::agent(work))
        .build();
    p.env.push(("PATH".into(), python_path()));
    p.write(".gitignore", ".agentloop/\n__pycache__/\n");
    p.commit("ignore bytecode");
    let r = p.run(&["run", "--yes", "--no-wait"]);
    let journal = std::fs::read_to_string(p.run_dir().join("journal.jsonl")).unwrap();
    assert_eq!(r.code, Some(0), "{}\n{journal}", r.stderr);
    assert!(!journal.contains("\"left_out\""), "{journal}");
    let s = p.status();
    assert_eq!(s["iterations"], 1, "{s:#}");
    assert_eq!(s["tasks"][0]["status"], "done", "{s:#}");
}
