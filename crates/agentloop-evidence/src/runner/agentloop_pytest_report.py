"""agentloop's per-test report of a pytest run, loaded with `-p agentloop_pytest_report_<drawn>`.

Each test's node id, the outcome of each phase that reported (collection, set-up, call,
tear-down), whether it was an expected failure, its duration and, where it did not
pass, what pytest said. Written once, as one JSON document, when the session ends, to
`pytest.json` in the directory above this file's: the report agentloop reads in place
of pytest's JUnit XML, which costs a fifth of a quick suite's run to build.
Under pytest-xdist only the controlling process writes: every worker's reports reach it.

Beside the tests, what the interpreter resolved by a top-level name: each module it
imported and the file it came from, each name something looked for that no finder
found and the file of the code that looked, and `sys.path`. At the test baseline this
says which new module of the tree would stand in for one the runner, its plugins or
the standard library load (agentloop_project's `shadow`).
"""

import json
import os
import sys

_REPORT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "pytest.json")
_reports = []
_active = False


def _text(value):
    # Node ids and messages may hold what UTF-8 cannot (a surrogate from a file name):
    # kept readable, never an encoding error at the end of the run.
    return str(value).encode("utf-8", "backslashreplace").decode("utf-8")


def _said(report):
    # As pytest's JUnit XML says it: the line the failure ended on, then the whole text.
    if report.passed:
        return None
    if report.skipped and isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        return _text(report.longrepr[2])
    try:
        text = report.longreprtext
    except Exception:
        text = str(report.longrepr)
    crash = getattr(getattr(report.longrepr, "reprcrash", None), "message", None)
    if crash and crash.strip() != text.strip():
        return _text(crash + "\n" + text)
    return _text(text)


# Code that imports a name it was given, for its caller: the standard library (importlib,
# pkgutil, pydoc, ...), pytest's `importorskip` and `monkeypatch`, and pytest-mock. The
# name's asker is the first frame past them: `monkeypatch.setattr("fastpath.X", ...)` in
# a project's test is the project's lookup, not pytest's. (A patch's target is not
# recorded at all: `_PATCH` below.)
_STDLIB = os.path.dirname(os.path.abspath(os.__file__))
_ON_BEHALF = (
    os.path.join("_pytest", "outcomes.py"),
    os.path.join("_pytest", "monkeypatch.py"),
    os.sep + "pytest_mock" + os.sep,
)
_missing = {}


def _for_caller(name):
    if name.startswith("<"):
        return True
    if any(part in name for part in _ON_BEHALF):
        return True
    return (
        name.startswith(_STDLIB + os.sep)
        and "site-packages" not in name
        and "dist-packages" not in name
    )


# `mock.patch("weather.fetch")` as a decorator resolves its target when pytest calls
# the test, before the test's own frame is there: a name a patch was given is the
# test's (its own code wrote it), not a lookup of the caller's.
_PATCH = os.path.join("unittest", "mock.py")


def _asker():
    """The file of the code that asked for a name; None for a patch's target."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith("<"):
            name = os.path.abspath(name)
        if name.endswith(_PATCH):
            return None
        if not _for_caller(name):
            return name
        frame = frame.f_back
    return ""


class _NotFound:
    """Last on `sys.meta_path`: asked only for a name every other finder missed."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if path is None and name not in _missing:
            try:
                asker = _asker()
            except Exception:
                asker = ""
            if asker is not None:
                _missing[name] = asker
        return None


sys.meta_path.append(_NotFound)


def _origin(module):
    # The file a module came from; a package without one (a namespace package) by its
    # first directory, ending in a separator; "" for one built in or frozen.
    try:
        where = getattr(module, "__file__", None)
        if where:
            return os.path.abspath(where)
        where = next(iter(getattr(module, "__path__", None) or []), None)
        return os.path.join(os.path.abspath(where), "") if isinstance(where, str) else ""
    except Exception:
        return ""


def _names():
    imported = {}
    for name, module in list(sys.modules.items()):
        if "." in name or module is None or name == __name__ or name.startswith("__"):
            continue
        imported[_text(name)] = _text(_origin(module))
    missing = {_text(n): _text(by) for n, by in _missing.items() if n not in sys.modules}
    path = [_text(os.path.abspath(p or os.curdir)) for p in sys.path if isinstance(p, str)]
    return {"imported": imported, "missing": missing, "path": path}


def pytest_configure(config):
    global _active
    # A worker of pytest-xdist (`slaveinput` before xdist 2.0) reports to the controller.
    _active = not hasattr(config, "workerinput") and not hasattr(config, "slaveinput")


def _keep(report, when):
    entry = {
        "id": _text(report.nodeid),
        "when": when,
        "outcome": report.outcome,
        "duration": getattr(report, "duration", 0.0) or 0.0,
    }
    if hasattr(report, "wasxfail"):
        entry["xfail"] = True
    said = _said(report)
    if said:
        entry["message"] = said
    _reports.append(entry)


def pytest_runtest_logreport(report):
    # Only what pytest's JUnit XML counted: passed, failed, skipped. A plugin's own
    # outcome (pytest-rerunfailures' "rerun" of an attempt it runs again) is not the
    # test's; its last attempt reports as one of the three.
    if _active and report.outcome in ("passed", "failed", "skipped"):
        _keep(report, report.when)


def pytest_collectreport(report):
    if _active and not report.passed:
        _keep(report, "collect")


def pytest_sessionfinish(session, exitstatus):
    if not _active:
        return
    body = json.dumps({"agentloop_pytest_report": 1, "reports": _reports, "python": _names()})
    with open(_REPORT, "w", encoding="utf-8") as f:
        f.write(body)
