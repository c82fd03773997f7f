"""agentloop's per-test report of a pytest run, loaded with `-p agentloop_pytest_report_<drawn>`.

Each test's node id, the outcome of each phase that reported (collection, set-up, call,
tear-down), whether it was an expected failure, its duration and, where it did not
pass, what pytest said. Written once, as one JSON document, when the session ends, to
`pytest.json` in the directory above this file's: the report agentloop reads in place
of pytest's JUnit XML, which costs a fifth of a quick suite's run to build.
Under pytest-xdist only the controlling process writes: every worker's reports reach it.
"""

import json
import os

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
    body = json.dumps({"agentloop_pytest_report": 1, "reports": _reports})
    with open(_REPORT, "w", encoding="utf-8") as f:
        f.write(body)
