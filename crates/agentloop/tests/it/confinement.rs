//! The judge confined by default: every check under bubblewrap wherever it works,
//! whatever the agents' own sandbox; said once, recorded, and MONITOR where it cannot
//! be, or where a person turned it off; a run that demands it refuses to start
//! without it.

use crate::support::Scratch;

/// A confined check gets a home, a cache and a `/tmp` of its own, none of the agent
/// CLIs' directories, and a process namespace of its own: what it plants in its home
/// or cache is gone with it, and a daemon it leaves behind (`setsid`, its output
/// elsewhere) ends when the check does: the next task's agent, started once the
/// first task's check has passed, finds none — with one worker and with two, by
/// default (the agents unconfined) and with the agents' sandbox too.
#[test]
fn a_confined_check_leaves_no_daemon_and_plants_nothing_for_the_next() {
    for (workers, config) in [
        (1, ""),
        (2, ""),
        (1, "[sandbox]\nmode = \"workspace\"\nverify = true\n"),
        (2, "[sandbox]\nmode = \"workspace\"\nverify = true\n"),
    ] {
        let home = crate::sandbox::planted_home();
        let cache = home.path().join(".cache");
        std::fs::create_dir_all(cache.join("agentloop")).unwrap();
        std::fs::create_dir_all(home.path().join(".claude")).unwrap();
        let marker = format!("agentloop-daemon-{}-{workers}", std::process::id());
        std::fs::write(
            home.path().join("check.sh"),
            format!(
                r#"test "$HOME" != '{home}' || {{ echo 'the real home'; exit 1; }}
echo planted > "$XDG_CACHE_HOME/pytest.ini" || exit 1
echo planted > '{cache}/agentloop/pytest.ini' 2>/dev/null
echo planted > '{home}/.claude/CLAUDE.md' 2>/dev/null && {{ echo 'wrote an agent directory'; exit 1; }}
setsid sh -c 'sleep 300 # {marker}' > /dev/null 2>&1 < /dev/null &
test -f "$1.txt"
"#,
                home = home.path().display(),
                cache = cache.display(),
            ),
        )
        .unwrap();
        let check = home.path().join("check.sh");
        let plan = format!(
            "# Two\n\n## T1: One\nVerify: sh {c} one\n\n## T2: Two\nVerify: sh {c} two\nDepends: T1\n",
            c = check.display()
        );
        let body = format!(
            "pgrep -f '{marker}' > /dev/null && echo DAEMON_ALIVE\ncase $task in T1) touch one.txt;; T2) touch two.txt;; esac\necho TASK_COMPLETE"
        );
        let mut p = crate::workers::project(&plan, &body, config);
        p.env
            .push(("HOME".into(), home.path().display().to_string()));
        p.env
            .push(("XDG_CACHE_HOME".into(), cache.display().to_string()));
        let r = p.run(&["run", "--no-wait", "--workers", &workers.to_string()]);
        let logs: String = std::fs::read_dir(p.run_dir().join("iterations"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| std::fs::read_to_string(e.path().join("agent.log")).unwrap_or_default())
            .collect();
        let left = std::process::Command::new("pgrep")
            .args(["-f", &marker])
            .output()
            .unwrap();
        let _ = std::process::Command::new("pkill")
            .args(["-f", &marker])
            .status();
        assert_eq!(
            r.code,
            Some(0),
            "workers {workers} {config:?}: {}\n{}",
            r.stderr,
            p.run(&["log"]).stdout
        );
        assert_eq!(p.status()["status"], "completed");
        let summary = std::fs::read_to_string(p.run_dir().join("summary.md")).unwrap();
        assert!(!summary.contains("unconfined"), "{summary}");
        assert!(
            left.stdout.is_empty() && !logs.contains("DAEMON_ALIVE"),
            "workers {workers}: a daemon a check started lives on: {}",
            String::from_utf8_lossy(&left.stdout)
        );
        assert!(logs.contains("TASK_COMPLETE"), "{logs}");
        for planted in [
            cache.join("pytest.ini"),
            cache.join("agentloop/pytest.ini"),
            home.path().join(".claude/CLAUDE.md"),
        ] {
            assert!(
                !planted.exists(),
                "workers {workers}: {}",
                planted.display()
            );
        }
    }
}

const ONE: &str = "# One\n\n## T1: Make add add\n\nVerify: python3 -m pytest -q tests/\nTests: tests/test_calc.py::test_add\n";

/// A project whose one task is judged per test (so it can end SHIP).
fn one(config: &str) -> crate::support::Project {
    let mut p = Scratch::new()
        .plan(ONE)
        .file("calc.py", "def add(a, b):\n    return a - b\n")
        .file(
            "tests/test_calc.py",
            "from calc import add\n\ndef test_add():\n    assert add(2, 2) == 4\n",
        )
        .agent(&crate::support::agent(
            "printf 'def add(a, b):\\n    return a + b\\n' > calc.py; echo TASK_COMPLETE",
        ))
        .config(config)
        .build();
    p.env.push(("PATH".into(), crate::support::python_path()));
    p
}

fn unconfined_events(p: &crate::support::Project) -> Vec<serde_json::Value> {
    crate::workers::events(p)
        .into_iter()
        .filter(|e| e["kind"] == "checks_unconfined")
        .collect()
}

/// Where bubblewrap does not work, the checks run as they are: the run says so once
/// at its start, records why, and its verdict is MONITOR, with the reason in the
/// summary; a later driver of the run does not say it again.
#[test]
fn where_bubblewrap_fails_the_checks_run_unconfined_said_once_and_the_verdict_is_monitor() {
    let p = one("\n[sandbox]\nbwrap = \"/nonexistent/bwrap\"\n");
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert_eq!(
        r.stderr.matches("the checks run unconfined").count(),
        1,
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("`/nonexistent/bwrap`) is not installed"),
        "{}",
        r.stderr
    );
    let s = p.status();
    assert_eq!(s["status"], "completed", "{s}");
    assert_eq!(s["verdict"], "MONITOR", "{s}");
    let summary = std::fs::read_to_string(p.run_dir().join("summary.md")).unwrap();
    assert!(
        summary.contains("the checks ran confined")
            && summary.contains("they ran unconfined: bubblewrap"),
        "{summary}"
    );
    let said = unconfined_events(&p);
    assert_eq!(said.len(), 1, "{said:?}");
    let shown = p.run(&["status"]).stdout;
    assert!(
        shown.contains("checks: unconfined (bubblewrap (`/nonexistent/bwrap`) is not installed"),
        "{shown}"
    );
    assert_eq!(
        p.status()["unconfined_checks"],
        said[0]["data"]["why"],
        "status --json says why"
    );
    // Another driver of the run (reopened by a person) says nothing new.
    let r = p.run(&["resume", "--no-wait"]);
    assert!(
        !r.stderr.contains("the checks run unconfined"),
        "{}",
        r.stderr
    );
    assert_eq!(unconfined_events(&p).len(), 1);
}

/// `[sandbox] verify = false`: a person's choice, said and recorded, and the verdict
/// is MONITOR.
#[test]
fn checks_a_person_unconfined_make_the_verdict_monitor() {
    let p = one("\n[sandbox]\nverify = false\n");
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("`[sandbox] verify = false`"),
        "{}",
        r.stderr
    );
    assert_eq!(p.status()["verdict"], "MONITOR");
    assert_eq!(unconfined_events(&p).len(), 1);
    // Confined by default, the same run ends SHIP.
    let p = one("");
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(!r.stderr.contains("unconfined"), "{}", r.stderr);
    assert_eq!(p.status()["verdict"], "SHIP");
    assert!(unconfined_events(&p).is_empty());
}

/// `[sandbox] verify = true` where bubblewrap does not work: the run refuses to
/// start, says why and how to go on, and creates nothing.
#[test]
fn a_run_that_demands_confined_checks_refuses_to_start_without_them() {
    let p = one("\n[sandbox]\nverify = true\nbwrap = \"/nonexistent/bwrap\"\n");
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(2), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains(
            "[sandbox] verify = true: bubblewrap (`/nonexistent/bwrap`) is not installed"
        ),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("verify = \"auto\""), "{}", r.stderr);
    assert!(
        !p.path().join(".agentloop/runs").exists()
            || std::fs::read_dir(p.path().join(".agentloop/runs"))
                .unwrap()
                .next()
                .is_none()
    );
}

/// Ignored files the checks make stay in the judge's copy between checks (a build's
/// cache), so a check's code could leave bytecode for the next check to run instead
/// of the source beside it: T1's check runs the agent's `work.py`, which writes a
/// `__pycache__` entry for `m.py` whose `ok()` says yes; T2's check imports `m`. The
/// copy's bytecode is gone before each check, so T2's check runs `m.py` as it is,
/// fails, and T2 is not done.
#[test]
fn bytecode_a_check_leaves_is_not_what_the_next_check_runs() {
    let work = r#"def main():
    import importlib.util, marshal, os
    src = "m.py"
    st = os.stat(src)
    code = compile("def ok():\n    return True \n", src, "exec")
    cached = importlib.util.cache_from_source(src)
    os.makedirs(os.path.dirname(cached), exist_ok=True)
    head = importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little")
    head += (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
    head += (st.st_size & 0xFFFFFFFF).to_bytes(4, "little")
    open(cached, "wb").write(head + marshal.dumps(code))
    print("planted", os.path.abspath(cached))
"#;
    let plan = "# Two\n\n## T1: Do the work\nVerify: python3 check1.py\n\n## T2: Make m.ok() true\nDepends: T1\nVerify: python3 -c \"import m, sys; sys.exit(0 if m.ok() else 1)\"\n";
    let p = Scratch::new()
        .plan(plan)
        .file("m.py", "def ok():\n    return False\n")
        .file("check1.py", "import work\nwork.main()\n")
        .file("work.py", "def main():\n    pass\n")
        .agent(&crate::support::agent(&format!(
            "case \"$task\" in T1) cat > work.py <<'PY'\n{work}PY\n;; esac\necho TASK_COMPLETE"
        )))
        .config("\n[budgets]\ntask_retries = 1\n")
        .build();
    // Bytecode is ignored, as in most projects: what the checks make of it stays.
    p.write(".gitignore", ".agentloop/\n__pycache__/\n");
    p.commit("ignore bytecode");
    // The forged entry has the source's size, so Python takes it where it looks.
    assert_eq!(
        "def ok():\n    return True \n".len(),
        "def ok():\n    return False\n".len()
    );
    let r = p.run(&["run", "--no-wait", "--quiet"]);
    let s = p.status();
    assert_eq!(s["tasks"][0]["status"], "done", "{s:#}\n{}", r.stderr);
    assert_ne!(
        s["tasks"][1]["status"], "done",
        "T2's check ran the bytecode T1's check left: {s:#}"
    );
}

/// What the baseline's confined checks compiled is what a later check runs for each
/// source the judged tree still holds byte for byte; a source the agent changed is
/// compiled from what it says now. (Python says which: `-v`.)
#[test]
fn later_checks_run_the_baseline_s_bytecode_only_for_sources_left_as_they_were() {
    let check = "python3 -v -c \"import m, u, sys; sys.exit(0 if m.ok() else 1)\"";
    let p = Scratch::new()
        .plan(&format!(
            "# One\n\n## T1: Make m.ok() true\nVerify: {check}\n"
        ))
        .file("m.py", "def ok():\n    return False\n")
        .file("u.py", "X = 1\n")
        .agent(&crate::support::agent(
            "printf 'def ok():\\n    return True\\n' > m.py\necho TASK_COMPLETE",
        ))
        .build();
    p.write(".gitignore", ".agentloop/\n__pycache__/\n");
    p.commit("ignore bytecode");
    let r = p.run(&["run", "--no-wait", "--quiet"]);
    let s = p.status();
    assert_eq!(s["tasks"][0]["status"], "done", "{s:#}\n{}", r.stderr);
    let log = std::fs::read_to_string(p.run_dir().join("iterations/0001/verify.log")).unwrap();
    let from_bytecode = |module: &str| {
        log.lines().any(|l| {
            l.starts_with("# code object from '")
                && l.contains(&format!("/__pycache__/{module}.cpython-"))
        })
    };
    assert!(from_bytecode("u"), "u.py is unchanged:\n{log}");
    assert!(!from_bytecode("m"), "m.py was changed:\n{log}");
    assert!(
        log.lines()
            .any(|l| l.starts_with("# code object from ") && l.ends_with("/m.py")),
        "{log}"
    );
}

/// The stop-76 attack: bytecode kept for `m.v2.py` named as if it could be `m.py`'s
/// too (`m.v2.cpython-311.pyc`) was staged when `m.py` was unchanged, its time and size
/// set to `m.py`'s; the agent's `m.v2.py`, padded to `m.py`'s size, sets both files'
/// times when imported, so at the next refresh both are written in the same second
/// and Python took the baseline's bytecode for the agent's source. A name that fits
/// two sources is the bytecode of neither now: the check runs what `m.v2.py` says.
#[test]
fn bytecode_whose_name_fits_two_sources_is_not_what_a_check_runs() {
    let load = "import importlib.util as u, sys\ns = u.spec_from_file_location('v2', 'm.v2.py')\nm = u.module_from_spec(s)\ns.loader.exec_module(m)\nsys.exit(0 if m.ok() else 1)\n";
    let m_py = format!("# {}\n", "x".repeat(200));
    let head = "import os\nfor f in ('m.py', 'm.v2.py'):\n    os.utime(f, (1000000000, 1000000000))\ndef ok():\n    return False\n#";
    let broken = format!("{head}{}\n", "p".repeat(m_py.len() - head.len() - 1));
    assert_eq!(broken.len(), m_py.len());
    let p = Scratch::new()
        .plan("# One\n\n## T1: Make a.txt\nVerify: python3 load.py && test -f a.txt\n")
        .file("load.py", load)
        .file("m.py", &m_py)
        .file("m.v2.py", "def ok():\n    return True\n")
        .agent(&crate::support::agent(&format!(
            "sleep 1.2; touch a.txt; cat > m.v2.py <<'PYEOF'\n{broken}PYEOF\necho TASK_COMPLETE"
        )))
        .config("\n[budgets]\ntask_retries = 1\n")
        .build();
    p.write(".gitignore", ".agentloop/\n__pycache__/\n");
    p.commit("ignore bytecode");
    let r = p.run(&["run", "--no-wait", "--quiet"]);
    let s = p.status();
    assert!(
        std::fs::read_to_string(p.path().join("m.v2.py"))
            .unwrap()
            .contains("return False")
    );
    assert_ne!(s["tasks"][0]["status"], "done", "{s:#}\n{}", r.stderr);
}

/// A clean copy that cannot be made (here: where the judges' copies go is a file) is
/// made again once, then the checks run in the working tree and pass nothing there:
/// the task is not done on what the agent left lying in its tree.
#[test]
fn checks_that_cannot_have_their_clean_copy_pass_nothing() {
    let p = makes_a_txt("test -f a.txt");
    let judge = p.state_home().join("agentloop/judge");
    std::fs::create_dir_all(&judge).unwrap();
    std::fs::write(judge.join("checkouts"), "not a directory\n").unwrap();
    let r = p.run(&["run", "--no-wait"]);
    let verify_log =
        std::fs::read_to_string(p.run_dir().join("iterations/0001/verify.log")).unwrap_or_default();
    assert!(
        r.stderr.contains("the clean copy could not be made"),
        "{}\n{verify_log}",
        r.stderr
    );
    let s = p.status();
    assert_ne!(s["tasks"][0]["status"], "done", "{s:#}");
    let log = p.run(&["log"]).stdout;
    assert!(log.contains("could not run on a clean copy"), "{log}");
}

/// A confined check gets a `/tmp` of its own; a program the environment names by its
/// path under `/tmp` (a linker in `CARGO_TARGET_…_LINKER`, a wrapper) stays there to
/// run, read-only.
#[test]
fn a_program_the_environment_names_under_tmp_still_runs_in_a_confined_check() {
    let tools = tempfile::Builder::new()
        .prefix("agentloop-tool-")
        .tempdir_in("/tmp")
        .unwrap();
    let tool = tools.path().join("tool.sh");
    std::fs::write(&tool, "#!/bin/sh\necho tool ran\n").unwrap();
    std::fs::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut p = makes_a_txt("\"$CHECK_TOOL\" && test -f a.txt");
    p.env
        .push(("CHECK_TOOL".into(), tool.display().to_string()));
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let log = std::fs::read_to_string(p.run_dir().join("iterations/0001/verify.log")).unwrap();
    assert!(log.contains("tool ran"), "{log}");
}

/// One task, T1, whose agent makes `a.txt`, checked by `verify`; one retry.
fn makes_a_txt(verify: &str) -> crate::support::Project {
    Scratch::new()
        .plan(&format!("# One\n\n## T1: Make a.txt\nVerify: {verify}\n"))
        .agent(&crate::support::agent("touch a.txt; echo TASK_COMPLETE"))
        .config("\n[budgets]\ntask_retries = 1\n")
        .build()
}

/// A Go test that passed at the baseline runs again at each check, not replayed from
/// the build cache the baseline warmed (each check starts from a copy of it): here its
/// input is read through a program, which Go's test cache does not track (found by
/// the stop-67 attack: the regression passed as cached).
#[test]
fn a_go_test_result_the_baseline_cached_is_not_replayed() {
    let p = Scratch::new()
        .file("go.mod", "module example.com/m\n\ngo 1.19\n")
        .file("calc/calc.go", "package calc\n\nfunc Add(a, b int) int { return 0 }\n")
        .file(
            "calc/calc_test.go",
            "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"add\")\n\t}\n}\n",
        )
        .file("cfg/cfg.go", "package cfg\n")
        .file(
            "cfg/cfg_test.go",
            "package cfg\n\nimport (\n\t\"os/exec\"\n\t\"strings\"\n\t\"testing\"\n)\n\nfunc TestSettings(t *testing.T) {\n\tout, err := exec.Command(\"cat\", \"../settings.txt\").Output()\n\tif err != nil || strings.TrimSpace(string(out)) != \"mode=safe\" {\n\t\tt.Fatalf(\"settings: %q %v\", out, err)\n\t}\n}\n",
        )
        .file("settings.txt", "mode=safe\n")
        .plan("# Add\n\n## T1: Make calc.Add add\n\nVerify: go test ./...\nTests: example.com/m/calc::TestAdd\n")
        .agent(&crate::support::agent(
            "printf 'package calc\\n\\nfunc Add(a, b int) int { return a + b }\\n' > calc/calc.go\nif [ -f broke ]; then echo mode=safe > settings.txt; else touch broke; echo mode=unsafe > settings.txt; fi\necho TASK_COMPLETE\n",
        ))
        .build();
    let r = p.run(&["run", "--yes", "--quiet", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let j = std::fs::read_to_string(p.run_dir().join("journal.jsonl")).unwrap();
    let first = j
        .lines()
        .find(|l| l.contains("\"kind\":\"verify_finished\""))
        .unwrap_or_default();
    assert!(
        first.contains("\"passed\":false") && first.contains("TestSettings"),
        "the broken settings passed as cached: {first}"
    );
    assert_eq!(p.status()["iterations"], 2);
}

/// Jest's transform cache, as the baseline's confined check warmed it, is where each
/// later check starts: a file left as it was is not transformed again; the one the
/// agent changed is. (The project's transformer says which files it transforms.)
#[test]
fn later_checks_take_jests_transforms_from_the_baseline_for_files_left_as_they_were() {
    let transform = "module.exports = {\n  process(src, file) {\n    process.stderr.write('transformed ' + file + '\\n');\n    return { code: src };\n  },\n};\n";
    let p = Scratch::new()
        .plan("# One\n\n## T1: Make a() true\nVerify: node_modules/.bin/jest -i\nTests: test/a.test.js::a is true\n")
        .file(
            "package.json",
            "{\"name\": \"t\", \"private\": true, \"jest\": {\"transform\": {\"\\\\.js$\": \"<rootDir>/transform.cjs\"}}}\n",
        )
        .file("transform.cjs", transform)
        .file("src/a.js", "exports.a = () => false;\n")
        .file("src/b.js", "exports.b = () => true;\n")
        .file(
            "test/a.test.js",
            "const { a } = require('../src/a');\ntest('a is true', () => expect(a()).toBe(true));\n",
        )
        .file(
            "test/b.test.js",
            "const { b } = require('../src/b');\ntest('b is true', () => expect(b()).toBe(true));\n",
        )
        .agent(&crate::support::agent(
            "printf 'exports.a = () => true;\\n' > src/a.js\necho TASK_COMPLETE",
        ))
        .config("\n[verify]\ncarry = [\"node_modules\"]\n")
        .build();
    p.write(".gitignore", ".agentloop/\nnode_modules\n");
    p.commit("ignore node_modules");
    std::os::unix::fs::symlink(
        crate::support::tools().join("js/node_modules"),
        p.path().join("node_modules"),
    )
    .unwrap();
    let r = p.run(&["run", "--no-wait", "--quiet"]);
    let s = p.status();
    assert_eq!(s["tasks"][0]["status"], "done", "{s:#}\n{}", r.stderr);
    let transformed = |log: &str, file: &str| {
        log.lines()
            .any(|l| l.starts_with("transformed ") && l.ends_with(file))
    };
    let baseline = std::fs::read_to_string(p.run_dir().join("baseline.log")).unwrap();
    for f in [
        "/src/a.js",
        "/src/b.js",
        "/test/a.test.js",
        "/test/b.test.js",
    ] {
        assert!(
            transformed(&baseline, f),
            "{f} at the baseline:\n{baseline}"
        );
    }
    let log = std::fs::read_to_string(p.run_dir().join("iterations/0001/verify.log")).unwrap();
    assert!(
        transformed(&log, "/src/a.js"),
        "src/a.js was changed:\n{log}"
    );
    for f in ["/src/b.js", "/test/a.test.js", "/test/b.test.js"] {
        assert!(!transformed(&log, f), "{f} is unchanged:\n{log}");
    }
}
