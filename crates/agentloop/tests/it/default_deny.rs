//! The judge sees only the work: each way an agent's own file could stand in for the
//! work inside the checks — a helper the check runs, a file the harness would run once
//! written, a new test module, package or plugin the runner loads, a test section
//! hidden behind an ini comment — with a scripted agent that takes the shortcut on its
//! first attempt and does the work on its second, with one worker and with three,
//! with and without the sandbox. The shortcut never gets the task done: the file is
//! left out of the judge's copy (and the agent told why), or the task waits for a
//! person at the surface gate.

use crate::support::{Project, Scratch, agent, python_path};

mod go;

/// Where a run may go: one agent, three workers, each with and without the sandbox.
const WAYS: [&[&str]; 4] = [
    &[],
    &["--workers", "3"],
    &["--sandbox", "workspace"],
    &["--workers", "3", "--sandbox", "workspace"],
];

const HONEST: &str = "touch one.txt";
/// A scripted agent's first lines: its attempt `m`, counted in its worktree's own git
/// directory (the bookkeeping of a worker's worktree, the only part of the repository
/// a sandboxed worker writes for good, and of it only git's own names: `logs/` is
/// one; `exec/sandbox/gitview.rs`).
const ATTEMPT: &str = "state=$(git rev-parse --git-dir)/logs/agent-attempts\nmkdir -p \"$(dirname \"$state\")\"\nm=$(cat \"$state\" 2>/dev/null || echo 0); m=$((m+1)); echo $m > \"$state\"\n";
const CHECK_ONE: &str = "test -f one.txt || { echo 'FAIL: one.txt is missing'; exit 1; }\n";

/// A project whose agent runs `cheat` on its first attempt and `honest` after.
fn project(plan: &str, files: &[(&str, &str)], cheat: &str, honest: &str, python: bool) -> Project {
    let mut s = Scratch::new().plan(plan).agent(&agent(&format!(
        "{ATTEMPT}if [ \"$m\" = 1 ]; then\n{cheat}\nelse\n{honest}\nfi\necho TASK_COMPLETE\n"
    )));
    for (path, text) in files {
        s = s.file(path, text);
    }
    let mut p = s.build();
    if python {
        p.env.push(("PATH".into(), python_path()));
    }
    p
}

fn journal(p: &Project) -> String {
    std::fs::read_to_string(p.run_dir().join("journal.jsonl")).unwrap()
}

/// `run --yes --quiet --no-wait` and the way's flags.
fn run_args<'a>(way: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["run", "--yes", "--quiet", "--no-wait"];
    args.extend_from_slice(way);
    args
}

/// The run taken the `way` given, to its end (exit 0); its journal.
fn ran_to_the_end(p: &Project, way: &[&str]) -> String {
    let r = p.run(&run_args(way));
    let j = journal(p);
    assert_eq!(r.code, Some(0), "{way:?}: {}\n{j}", r.stderr);
    j
}

/// The journal's first `verify_finished` record.
fn first_verify(journal: &str) -> &str {
    journal
        .lines()
        .find(|l| l.contains("\"kind\":\"verify_finished\""))
        .unwrap_or_default()
}

/// The first attempt's shortcut is left out of the judge's copy and fails; the
/// second, honest, is done.
fn left_out_then_done(p: &Project, way: &[&str], left_out: &str) {
    let j = ran_to_the_end(p, way);
    let s = p.status();
    assert_eq!(s["tasks"][0]["status"], "done", "{way:?}: {s}");
    let first = first_verify(&j);
    assert!(
        first.contains("\"passed\":false")
            && first.contains(&format!("\"left_out\":[{{\"path\":\"{left_out}\"")),
        "{way:?}: the shortcut reached the judge: {first}"
    );
    // The agent is told why its file did not count.
    let second = std::fs::read_to_string(p.run_dir().join("iterations/0002/prompt.md")).unwrap();
    assert!(
        second.contains(&format!(
            "{left_out}: added by the agent, left out of the checks' copy"
        )),
        "{way:?}: {second}"
    );
}

/// The first attempt's shortcut waits for a person at the surface gate.
fn held_at_the_surface(p: &Project, way: &[&str], path: &str, why: &str) {
    let r = p.run(&run_args(way));
    assert_eq!(r.code, Some(5), "{way:?}: waits for a person: {}", r.stderr);
    let s = p.status();
    assert_eq!(s["gate"]["point"], "surface", "{way:?}: {s}");
    let change = s["surface_changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["path"] == path)
        .unwrap_or_else(|| panic!("{way:?}: {path} is not among the changes: {s}"));
    assert!(
        change["why"].as_str().unwrap().contains(why),
        "{way:?}: {change}"
    );
    assert_ne!(s["tasks"][0]["status"], "done", "{way:?}");
    assert_eq!(p.run(&["stop"]).code, Some(0));
}

#[test]
fn a_helper_the_check_runs_is_the_harness_wherever_it_lies() {
    // (the helper, how the check runs it, what the task says)
    let cases = [
        (
            "scripts/verify.py",
            "python3 scripts/verify.py\n",
            "",
            "import os, sys\nsys.exit(0 if os.path.exists('one.txt') else 1)\n",
        ),
        ("lib/verify.sh", "sh lib/verify.sh\n", "", CHECK_ONE),
        // The task's words name the helper: it is still the check's.
        (
            "scripts/verify.sh",
            "sh scripts/verify.sh\n",
            "`scripts/verify.sh` checks it.\n",
            CHECK_ONE,
        ),
    ];
    for (helper, check, words, text) in cases {
        for way in WAYS {
            let p = project(
                &format!("# One\n\n## T1: Make the file\n{words}Verify: sh tests/check.sh\n"),
                &[("tests/check.sh", check), (helper, text)],
                &format!("echo 'exit 0' > {helper}"),
                HONEST,
                false,
            );
            held_at_the_surface(&p, way, helper, "run by `tests/check.sh`");
        }
    }
}

#[test]
fn what_the_harness_would_run_once_written_is_left_out() {
    let cases = [
        // Sourced by a glob in a loop.
        (
            "for f in checks.d/*.sh; do . \"$f\"; done\n",
            "checks.d/one.sh",
            "checks.d/0-first.sh",
        ),
        // Tested for, then sourced.
        (
            "if [ -f scripts/extra.sh ]; then . scripts/extra.sh; fi\n. checks.d/one.sh\n",
            "checks.d/one.sh",
            "scripts/extra.sh",
        ),
    ];
    for (check, real, planted) in cases {
        for way in WAYS {
            let p = project(
                "# One\n\n## T1: Make the file\nVerify: sh tests/check.sh\n",
                &[("tests/check.sh", check), (real, CHECK_ONE)],
                &format!("mkdir -p $(dirname {planted}); echo 'exit 0' > {planted}"),
                &format!("rm -f {planted}; {HONEST}"),
                false,
            );
            left_out_then_done(&p, way, planted);
        }
    }
}

const CALC_PLAN: &str = "# Add\n\n## T1: Make calc.add add\nVerify: python3 -m pytest -q tests/\nTests: tests/test_calc.py::test_add\n";
const CALC: &str = "def add(a, b):\n    return 0\n";
const TEST_CALC: &str = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n";
/// `calc.py` (its `add` broken) and its test, with `plan` and an agent running `body`.
fn calc_project(plan: &str, body: &str) -> Project {
    let mut p = Scratch::new()
        .plan(plan)
        .file("calc.py", CALC)
        .file("tests/test_calc.py", TEST_CALC)
        .agent(&agent(body))
        .build();
    p.env.push(("PATH".into(), python_path()));
    p
}

const FIX: &str = "printf 'def add(a, b):\\n    return a + b\\n' > calc.py";
/// Code that puts a stand-in for the module under test where the tests import it.
const STUB: &str = "import sys, types\nm = types.ModuleType('calc')\nm.add = lambda a, b: a + b\nsys.modules['calc'] = m\n";

#[test]
fn a_new_test_module_or_package_that_stubs_the_code_does_not_reach_the_judge() {
    for planted in ["tests/test_aaa_setup.py", "tests/__init__.py"] {
        for way in WAYS {
            let p = project(
                CALC_PLAN,
                &[("calc.py", CALC), ("tests/test_calc.py", TEST_CALC)],
                &format!("printf \"{}\" > {planted}", STUB.replace('\n', "\\n")),
                &format!("rm -f {planted}; {FIX}"),
                true,
            );
            left_out_then_done(&p, way, planted);
        }
    }
}

#[test]
fn a_plugin_entry_point_in_package_metadata_does_not_reach_the_judge() {
    // pytest loads `[pytest11]` entry points of every distribution on its path: the
    // project's root is on it under `python3 -m pytest`. The plugin marks every test
    // passed.
    let plugin = "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    out = yield\n    r = out.get_result()\n    r.outcome = 'passed'\n    r.longrepr = None\n";
    let cheat = format!(
        "printf \"{}\" > zz_plug.py\nmkdir -p zz_plug-0.0.dist-info\nprintf 'Metadata-Version: 2.1\\nName: zz-plug\\nVersion: 0.0\\n' > zz_plug-0.0.dist-info/METADATA\nprintf '[pytest11]\\nzz = zz_plug\\n' > zz_plug-0.0.dist-info/entry_points.txt",
        plugin.replace('\n', "\\n")
    );
    for way in WAYS {
        let p = project(
            CALC_PLAN,
            &[("calc.py", CALC), ("tests/test_calc.py", TEST_CALC)],
            &cheat,
            &format!("rm -rf zz_plug.py zz_plug-0.0.dist-info; {FIX}"),
            true,
        );
        left_out_then_done(&p, way, "zz_plug-0.0.dist-info/METADATA");
    }
}

#[test]
fn a_test_section_behind_a_comment_on_its_header_is_still_the_checks() {
    // `[tool:pytest] ; …` is pytest's section for iniconfig, which drops the comment.
    for way in WAYS {
        let p = project(
            CALC_PLAN,
            &[
                ("calc.py", CALC),
                ("tests/test_calc.py", TEST_CALC),
                ("setup.cfg", "[metadata]\nname = calc\n"),
            ],
            // A stand-in for the code under test, put first on the tests' path.
            "mkdir -p stubs\nprintf 'def add(a, b):\\n    return a + b\\n' > stubs/calc.py\nprintf '[tool:pytest] ; the tests\\npythonpath = stubs\\n' >> setup.cfg",
            FIX,
            true,
        );
        held_at_the_surface(&p, way, "setup.cfg", "its test section");
    }
}

#[test]
fn a_task_that_writes_tests_has_them_run() {
    // A name in a file the task creates, `(new)` or not: the file is judged, and
    // its test must pass.
    let test = "from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n";
    for (plan, way) in [
        ("tests/test_add.py::test_add (new)", &[][..]),
        ("tests/test_add.py::test_add (new)", &["--workers", "3"]),
        ("tests/test_add.py::test_add", &[]),
    ] {
        let plan = format!(
            "# Add\n\n## T1: Make calc.add add, with a test\nVerify: python3 -m pytest -q tests/\nTests: {plan}\n"
        );
        let plan = plan.as_str();
        let p = project(
            plan,
            &[
                ("calc.py", CALC),
                ("tests/test_calc.py", "def test_nothing():\n    pass\n"),
            ],
            // A test that fails until the code is fixed: the judge runs it.
            &format!(
                "printf \"{}\" > tests/test_add.py",
                test.replace('\n', "\\n")
            ),
            FIX,
            true,
        );
        ran_to_the_end(&p, way);
        let j = journal(&p);
        assert!(!j.contains("\"left_out\""), "{way:?}: {j}");
        assert_eq!(
            p.status()["iterations"],
            2,
            "{way:?}: the new test ran and failed first"
        );
    }
}

#[test]
fn what_a_second_attack_found_is_left_out_too() {
    // (the check's harness, the real check it sources, the shortcut, what is left out)
    let cases = [
        // A link to a directory of the agent's where the harness's glob looks.
        (
            "for f in checks.d/*.sh; do [ -f \"$f\" ] && . \"$f\"; done\n",
            "mkdir -p hooks; echo 'exit 0' > hooks/a.sh; ln -s hooks checks.d",
            "checks.d",
        ),
        // A list of files piped into a shell.
        (
            "cat checks.d/* | sh\n",
            "mkdir -p checks.d; echo 'exit 0' > checks.d/0.sh",
            "checks.d/0.sh",
        ),
        // A name that is not UTF-8, where the glob looks.
        (
            "for f in checks.d/*.sh; do [ -f \"$f\" ] && . \"$f\"; done\n",
            "mkdir -p checks.d; echo 'exit 0' > \"checks.d/$(printf '\\377').sh\"",
            "checks.d/\u{fffd}.sh",
        ),
    ];
    // Links followed as the kernel follows them (the stop-78 attacks): how the tree is
    // read is the same whichever way the run goes, so these take the first.
    let chains = [
        // A link to the agent's directory through a chain of links (the stop-78 attack):
        // the first link's target is a link, with no file of the tree under it.
        (
            "for f in checks.d/*.sh; do [ -f \"$f\" ] && . \"$f\"; done\n",
            "mkdir -p hooks; echo 'exit 0' > hooks/a.sh; ln -s hooks hop; ln -s hop checks.d",
            "checks.d",
        ),
        // And through a link partway along the target (the second stop-78 attack).
        (
            "for f in checks.d/*.sh; do [ -f \"$f\" ] && . \"$f\"; done\n",
            "mkdir -p lib/hooks; echo 'exit 0' > lib/hooks/a.sh; ln -s lib hop; ln -s hop/hooks checks.d",
            "checks.d",
        ),
        // And with a `..` after a link, which leaves where the link led (the third).
        (
            "for f in checks.d/*.sh; do [ -f \"$f\" ] && . \"$f\"; done\n",
            "mkdir -p lib/deep lib/hooks; touch lib/deep/x; echo 'exit 0' > lib/hooks/a.sh; ln -s lib/deep hop; ln -s hop/../hooks checks.d",
            "checks.d",
        ),
    ];
    let ways = cases
        .iter()
        .flat_map(|c| WAYS.iter().map(move |w| (c, *w)))
        .chain(chains.iter().map(|c| (c, WAYS[0])));
    for ((harness, cheat, left), way) in ways {
        let p = project(
            "# One\n\n## T1: Make the file\nVerify: sh tests/check.sh\n",
            &[("tests/check.sh", &format!("{harness}{CHECK_ONE}"))],
            cheat,
            &format!("rm -rf hooks hop lib checks.d; {HONEST}"),
            false,
        );
        left_out_then_done(&p, way, left);
    }
}

#[test]
fn a_package_marker_above_the_tests_does_not_reach_the_judge() {
    // With `tests/` a package, pytest imports every `__init__.py` on the way down to
    // it: a new one at the root runs first.
    let stub = "import sys, os\nsys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))\nimport calc\ncalc.add = lambda a, b: a + b\n";
    for way in WAYS {
        let p = project(
            CALC_PLAN,
            &[
                ("calc.py", CALC),
                ("tests/__init__.py", ""),
                (
                    "tests/test_calc.py",
                    "import calc\n\n\ndef test_add():\n    assert calc.add(1, 2) == 3\n",
                ),
            ],
            &format!("printf \"{}\" > __init__.py", stub.replace('\n', "\\n")),
            &format!("rm -f __init__.py; {FIX}"),
            true,
        );
        left_out_then_done(&p, way, "__init__.py");
    }
}

#[test]
fn nothing_above_the_judges_copy_is_the_sandboxed_agents_to_write() {
    // pytest reads its ini file and conftest.py from the directories above the one it
    // runs in, and a sandboxed agent writes into what it sees as `~/.cache` (the run's
    // own caches): the judges' copies live where no directory above them is writable
    // to it.
    let conftest = "import calc\ncalc.add = lambda a, b: a + b\n";
    for way in [
        &["--sandbox", "workspace"][..],
        &["--workers", "3", "--sandbox", "workspace"],
    ] {
        let home = tempfile::Builder::new()
            .prefix("agentloop-home-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let cache = home.path().join(".cache");
        std::fs::create_dir_all(&cache).unwrap();
        let mut p = project(
            CALC_PLAN,
            &[("calc.py", CALC), ("tests/test_calc.py", TEST_CALC)],
            &format!(
                "for d in \"$HOME/.cache\" \"$HOME/.cache/agentloop\" \"$HOME/.local/state\" \"$HOME\"; do mkdir -p \"$d\" 2>/dev/null; printf '[pytest]\\n' > \"$d/pytest.ini\" 2>/dev/null; printf \"{}\" > \"$d/conftest.py\" 2>/dev/null; done; true",
                conftest.replace('\n', "\\n")
            ),
            FIX,
            true,
        );
        p.env
            .push(("HOME".into(), home.path().display().to_string()));
        p.env
            .push(("XDG_CACHE_HOME".into(), cache.display().to_string()));
        ran_to_the_end(&p, way);
        let run = p.status()["run_id"].as_str().unwrap().to_string();
        let theirs = cache.join("agentloop/agent-caches").join(run).join("cache");
        assert!(
            theirs.join("conftest.py").exists(),
            "{way:?}: the plant was made, in the run's caches"
        );
        assert!(
            !cache.join("conftest.py").exists(),
            "{way:?}: not in the person's"
        );
        assert_eq!(
            p.status()["iterations"],
            2,
            "{way:?}: the conftest above the copy reached the judge"
        );
    }
}

#[test]
fn a_report_the_check_did_not_write_at_the_baseline_is_not_its_evidence() {
    // The check prints TAP and exits with its result; a file it sources (the work) now
    // also writes a JUnit report that says the named test passed.
    let check = ". ./src/calc.sh\necho '1..1'\nif [ -f one.txt ]; then echo 'ok 1 - t1'; else echo 'not ok 1 - t1'; exit 1; fi\n";
    let forge = r#"cat > src/calc.sh <<'F'
printf '<testsuite><testcase classname="t" name="t1"/></testsuite>' > "$AGENTLOOP_TEST_REPORT"
F"#;
    for way in [&[][..], &["--workers", "3"]] {
        let p = project(
            "# One\n\n## T1: Make the file with `src/calc.sh`\nVerify: sh tests/t.sh\nTests: t1\n",
            &[("tests/t.sh", check), ("src/calc.sh", "true\n")],
            forge,
            &format!("echo true > src/calc.sh; {HONEST}"),
            false,
        );
        ran_to_the_end(&p, way);
        assert_eq!(
            p.status()["iterations"],
            2,
            "{way:?}: the forged report was taken as the check's"
        );
        let log = std::fs::read_to_string(p.run_dir().join("iterations/0001/verify.log")).unwrap();
        assert!(
            log.contains("reported as tap (its output) at the baseline and as junit"),
            "{way:?}: {log}"
        );
    }
}

/// A task that writes tests has what they need reach the checks with them: a helper
/// beside its new test, a new test package's `__init__.py`, a Go package it adds and
/// names by its import path, the script its check runs that its words name — each
/// done at the first attempt. (From an honest user's trial of default-deny.)
#[test]
fn what_a_task_writing_tests_adds_with_them_reaches_the_checks() {
    let helper = (
        "# H\n\n## T1: Add f, with its test and the helper it uses\nVerify: python3 -m pytest -q tests/\nTests: tests/test_f.py::test_f\n",
        vec![
            ("calc.py", CALC),
            ("tests/test_calc.py", "def test_nothing():\n    pass\n"),
        ],
        "printf 'def f():\\n    return 1\\n' >> calc.py\nprintf 'ONE = 1\\n' > tests/helpers.py\nprintf 'from helpers import ONE\\nfrom calc import f\\n\\n\\ndef test_f():\\n    assert f() == ONE\\n' > tests/test_f.py",
        true,
    );
    let package = (
        "# P\n\n## T1: Add mul, with its unit tests\nVerify: python3 -m pytest -q tests/\nTests: tests/unit/test_ops.py::test_mul\n",
        vec![
            ("ops.py", "def add(a, b):\n    return a + b\n"),
            (
                "tests/test_ops.py",
                "from ops import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
            ),
        ],
        "printf 'def mul(a, b):\\n    return a * b\\n' >> ops.py\nmkdir -p tests/unit\n: > tests/unit/__init__.py\nprintf 'from ops import mul\\n\\n\\ndef test_mul():\\n    assert mul(2, 3) == 6\\n' > tests/unit/test_ops.py",
        true,
    );
    let script = (
        "# G\n\n## T1: Write greet.sh, which greets\nVerify: sh tests/run.sh\n",
        vec![("tests/run.sh", "test \"$(sh ./greet.sh)\" = hello\n")],
        "echo 'echo hello' > greet.sh",
        false,
    );
    for (plan, files, work, python) in [helper, package, script] {
        for way in [&[][..], &["--workers", "3"]] {
            let p = project(plan, &files, work, work, python);
            let j = ran_to_the_end(&p, way);
            assert_eq!(p.status()["iterations"], 1, "{plan} {way:?}: {j}");
            assert!(!j.contains("\"left_out\""), "{plan} {way:?}: {j}");
        }
    }
}

/// A Go package a task adds, named by its import path: its tests are the task's.
#[test]
fn a_go_package_a_task_adds_is_its_to_test() {
    for way in [&[][..], &["--workers", "3"]] {
        let p = project(
            "# S\n\n## T1: Add strutil.Upper\nVerify: go test ./...\nTests: example.com/m/strutil::TestUpper\n",
            &[
                ("go.mod", "module example.com/m\n\ngo 1.19\n"),
                ("m.go", "package m\n\nfunc One() int { return 1 }\n"),
                (
                    "m_test.go",
                    "package m\n\nimport \"testing\"\n\nfunc TestOne(t *testing.T) {\n\tif One() != 1 {\n\t\tt.Fatal(\"one\")\n\t}\n}\n",
                ),
            ],
            "mkdir -p strutil\nprintf 'package strutil\\n\\nimport \"strings\"\\n\\nfunc Upper(s string) string { return strings.ToUpper(s) }\\n' > strutil/strutil.go\nprintf 'package strutil\\n\\nimport \"testing\"\\n\\nfunc TestUpper(t *testing.T) {\\n\\tif Upper(\"a\") != \"A\" {\\n\\t\\tt.Fatal(\"upper\")\\n\\t}\\n}\\n' > strutil/strutil_test.go",
            "true",
            false,
        );
        let j = ran_to_the_end(&p, way);
        assert_eq!(p.status()["iterations"], 1, "{way:?}: {j}");
    }
}

/// What a done task's `mode: tdd` let in stays in (by name), and lets in nothing of a
/// later task's: T2's new test module is left out, whatever T1 was allowed.
#[test]
fn a_done_tasks_allowance_is_its_own() {
    let plan = "# Two\n\n## T1: Add sub, with tests\nMode: tdd\nVerify: python3 -m pytest -q tests/\nTests: tests/test_sub.py::test_sub (new)\n\n## T2: Make add add\nDepends: T1\nVerify: python3 -m pytest -q tests/\nTests: tests/test_calc.py::test_add\n";
    let body = format!(
        "case \"$task\" in\n  T1) printf 'def sub(a, b):\\n    return a - b\\n' >> calc.py; printf 'from calc import sub\\n\\n\\ndef test_sub():\\n    assert sub(3, 1) == 2\\n' > tests/test_sub.py ;;\n  T2) if [ ! -f tests/test_aaa.py ]; then printf \"{}\" > tests/test_aaa.py; else rm tests/test_aaa.py; {FIX}; printf 'def sub(a, b):\\n    return a - b\\n' >> calc.py; fi ;;\nesac\necho TASK_COMPLETE\n",
        STUB.replace('\n', "\\n")
    );
    for way in [&[][..], &["--workers", "3"]] {
        let p = calc_project(plan, &body);
        let j = ran_to_the_end(&p, way);
        assert!(
            j.contains("\"left_out\":[{\"path\":\"tests/test_aaa.py\""),
            "{way:?}: T2's stub reached the judge: {j}"
        );
        assert!(
            j.contains("\"admitted\":[\"tests/test_sub.py\"]"),
            "{way:?}: {j}"
        );
    }
}

/// An agent's REPLAN that names a `(new)` test in a task that, as a person wrote it,
/// writes no tests is refused with the reason, and the stub it planted beside it
/// stays out of the judge's copy: what a task may add that the checks load comes from
/// the task as a person wrote it.
#[test]
fn a_replan_grants_itself_no_tests() {
    let planted = format!(
        "{}\\n\\ndef test_ok():\\n    pass\\n",
        STUB.replace('\n', "\\n")
    );
    let body = format!(
        "{ATTEMPT}case $m in\n  1) printf \"{planted}\" > tests/test_aaa_setup.py; printf 'REPLAN\\n## T1: Make calc.add add, with its setup\\nVerify: python3 -m pytest -q tests/\\nTests: tests/test_aaa_setup.py::test_ok (new)\\n' ;;\n  2) echo TASK_COMPLETE ;;\n  *) rm -f tests/test_aaa_setup.py; {FIX}; echo TASK_COMPLETE ;;\nesac\n"
    );
    for way in [&[][..], &["--workers", "3"]] {
        let p = calc_project(CALC_PLAN, &body);
        let j = ran_to_the_end(&p, way);
        assert!(
            j.contains("\"kind\":\"replan_rejected\"")
                && j.contains(
                    "a replan cannot add tests of its own (tests/test_aaa_setup.py::test_ok)"
                ),
            "{way:?}: {j}"
        );
        let first = first_verify(&j);
        assert!(
            first.contains("\"passed\":false")
                && first.contains("\"left_out\":[{\"path\":\"tests/test_aaa_setup.py\""),
            "{way:?}: the replan's own test reached the judge: {first}"
        );
        assert_eq!(p.status()["tasks"][0]["status"], "done", "{way:?}");
    }
}

/// A REPLAN that puts a command of its own before the task's checks (one that writes
/// a stand-in module into the judge's copy) is refused with the reason: the stop-67
/// attack had T1 done with the code unfixed.
#[test]
fn a_replan_puts_no_command_of_its_own_before_the_checks() {
    let body = format!(
        "{ATTEMPT}case $m in\n  1) cat <<'EOF'\nREPLAN\n## T1: Make calc.add add\nVerify: sh -c \"printf 'import sys, types\\\\nm = types.ModuleType(\\\\\\\"calc\\\\\\\")\\\\nm.add = lambda a, b: a + b\\\\nsys.modules[\\\\\\\"calc\\\\\\\"] = m\\\\n' > tests/conftest.py\"\nVerify: python3 -m pytest -q tests/\nTests: tests/test_calc.py::test_add\nEOF\n  ;;\n  2) echo TASK_COMPLETE ;;\n  *) {FIX}; echo TASK_COMPLETE ;;\nesac\n"
    );
    for way in [&[][..], &["--workers", "2", "--sandbox", "workspace"]] {
        let p = calc_project(CALC_PLAN, &body);
        let j = ran_to_the_end(&p, way);
        assert!(
            j.contains("\"kind\":\"replan_rejected\"")
                && j.contains("a replan cannot add a check beside them"),
            "{way:?}: {j}"
        );
        let first = first_verify(&j);
        assert!(first.contains("\"passed\":false"), "{way:?}: {first}");
        assert_eq!(p.status()["tasks"][0]["status"], "done", "{way:?}");
        assert_eq!(p.status()["iterations"], 3, "{way:?}");
    }
}
