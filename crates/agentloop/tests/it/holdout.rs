//! Held-out checks (`[verify] holdout`, `Holdout:`): checks the agent never sees, run
//! on the clean copy after its own checks pass. An implementation that special-cases
//! the visible test is caught, and the agent learns only the held-out check's name.

use crate::support::{Project, Scratch, agent, journal_has};

const VISIBLE: &str = "test \"$(sh src/add.sh 1 2)\" = 3 || { echo \"FAIL: 1+2 gave $(sh src/add.sh 1 2)\"; exit 1; }\n";
const HIDDEN: &str =
    "test \"$(sh src/add.sh 5 7)\" = 12 || { echo \"SECRET-CASE: 5+7 want 12\"; exit 1; }\n";

/// The held-out check `general` in `holdout`: `general.sh` running `tests/hidden.sh`,
/// laid in from the held-out `files/`.
fn general_check(holdout: &std::path::Path) {
    std::fs::create_dir_all(holdout.join("files/tests")).unwrap();
    std::fs::write(holdout.join("files/tests/hidden.sh"), HIDDEN).unwrap();
    std::fs::write(holdout.join("general.sh"), "sh tests/hidden.sh\n").unwrap();
}

/// A project whose task makes `src/add.sh` add, with a held-out check `general`
/// (`general.sh` running `tests/hidden.sh`, laid in from the held-out `files/`); the
/// agent special-cases the visible test on its first attempt.
fn project(holdout: &std::path::Path, plan_extra: &str) -> Project {
    general_check(holdout);
    Scratch::new()
        .plan(&format!(
            "# Add\n\n## T1: Make src/add.sh add its two arguments\nVerify: sh tests/t1.sh\n{plan_extra}"
        ))
        .file("tests/t1.sh", VISIBLE)
        .agent(&agent(
            "mkdir -p src\nif [ \"$n\" = 1 ]; then echo 'echo 3' > src/add.sh; else echo 'echo $(($1 + $2))' > src/add.sh; fi\necho TASK_COMPLETE",
        ))
        .config(&format!("[verify]\nholdout = \"{}\"\n", holdout.display()))
        .build()
}

#[test]
fn a_special_cased_implementation_fails_the_held_out_check_and_the_agent_learns_only_its_name() {
    let holdout = tempfile::tempdir().unwrap();
    let p = project(holdout.path(), "Holdout: general\n");
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["tasks"][0]["status"], "done");
    assert_eq!(s["iterations"], 2, "the special case did not pass");
    let id = s["run_id"].as_str().unwrap().to_string();
    let at = |rel: &str| p.read(&format!(".agentloop/runs/{id}/{rel}"));
    // The first verification failed on the held-out check, named, nothing more.
    let journal = at("journal.jsonl");
    assert!(
        journal.contains(r#""held_out":[{"name":"general","passed":false"#),
        "{journal}"
    );
    assert!(
        journal.contains("held-out check `general` failed"),
        "{journal}"
    );
    let second = at("iterations/0002/prompt.md");
    assert!(
        second.contains("The held-out check `general` failed"),
        "{second}"
    );
    let log = at("iterations/0001/verify.log");
    assert!(log.contains("[held-out check `general`: failed"), "{log}");
    // Its content is nowhere the agent could read: not the prompt, the logs, the
    // journal, the tree.
    for (what, text) in [
        ("prompt", &second),
        ("verify log", &log),
        ("journal", &journal),
    ] {
        assert!(!text.contains("SECRET-CASE"), "{what}: {text}");
        assert!(!text.contains("5 7"), "{what}: {text}");
    }
    assert!(!p.path().join("tests/hidden.sh").exists());
    assert!(!p.git_cmd(&["log", "--all", "--stat"]).contains("hidden.sh"));
    assert!(journal_has(&p, "\"passed\":true"));
}

#[test]
fn held_out_checks_are_refused_before_a_run_when_they_cannot_be_kept_apart() {
    // Named with no directory for them.
    let holdout = tempfile::tempdir().unwrap();
    let p = Scratch::new()
        .plan("# Add\n\n## T1: Add\nVerify: true\nHoldout: general\n")
        .build();
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("task T1 names held-out checks (`Holdout:`), and `[verify] holdout` names no directory for them"),
        "{}",
        r.stderr
    );
    assert!(
        !p.path().join(".agentloop/runs").exists() || p.run(&["runs"]).stdout.trim().is_empty()
    );
    // A check that is not there.
    let p = project(holdout.path(), "Holdout: general, edge\n");
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("held-out check `edge`:"), "{}", r.stderr);
    assert!(r.stderr.contains("edge.sh is missing"), "{}", r.stderr);
    // A directory inside the project.
    let p = Scratch::new()
        .plan("# Add\n\n## T1: Add\nVerify: true\nHoldout: general\n")
        .file("holdout/general.sh", "true\n")
        .config("[verify]\nholdout = \"holdout\"\n")
        .build();
    let r = p.cmd(&["run", "--quiet"]).output().unwrap();
    assert_eq!(r.status.code(), Some(2));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("is inside the project"), "{err}");
    // A name that is a path.
    let p = Scratch::new()
        .plan("# Add\n\n## T1: Add\nVerify: true\nHoldout: ../x\n")
        .build();
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("a held-out check's name is letters"),
        "{}",
        r.stderr
    );
}

/// Under `[sandbox] verify` the held-out checks are confined as the project's own
/// checks are: one that would write outside its clean copy cannot.
#[test]
fn under_the_sandbox_held_out_checks_are_confined_too() {
    let holdout = tempfile::tempdir().unwrap();
    let p = project(holdout.path(), "Holdout: general\n");
    let escaped = p.path().join("escaped.txt");
    // The check fails if it could write into the project itself (outside its copy).
    std::fs::write(
        holdout.path().join("general.sh"),
        format!(
            "if echo out > '{}' 2>/dev/null; then echo 'wrote outside its copy'; exit 1; fi\nsh tests/hidden.sh\n",
            escaped.display()
        ),
    )
    .unwrap();
    let config = p.read("agentloop.toml");
    p.write(
        "agentloop.toml",
        format!("{config}\n[sandbox]\nmode = \"workspace\"\nverify = true\n"),
    );
    p.commit("checks under the sandbox");
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.status()["tasks"][0]["status"], "done");
    assert!(
        !escaped.exists(),
        "the held-out check wrote outside its copy"
    );
    let id = p.status()["run_id"].as_str().unwrap().to_string();
    let journal = p.read(&format!(".agentloop/runs/{id}/journal.jsonl"));
    assert!(
        journal.contains(r#""held_out":[{"name":"general","passed":true"#),
        "{journal}"
    );
}

/// A held-out check gives per-test evidence like any other check: one whose script
/// is a pytest line is run as pytest, its report read, and judged by it. An agent that
/// special-cases the visible test and makes the interpreter leave with 0 whatever the
/// tests did (`atexit` → `os._exit(0)`) fails it, though its exit code says pass; the
/// hidden test's name and assertion reach nothing the agent reads.
#[test]
fn a_held_out_check_whose_exit_is_forced_to_0_fails_by_its_report() {
    for sandboxed in [false, true] {
        let holdout = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(holdout.path().join("files/tests")).unwrap();
        std::fs::write(
            holdout.path().join("files/tests/test_hidden.py"),
            "from calc import add\n\ndef test_secret_case():\n    assert add(5, 7) == 12\n",
        )
        .unwrap();
        std::fs::write(
            holdout.path().join("general.sh"),
            "# the hidden cases\npython3 -m pytest -q tests/test_hidden.py\n",
        )
        .unwrap();
        let sandbox = if sandboxed {
            "\n[sandbox]\nmode = \"workspace\"\nverify = true\n"
        } else {
            ""
        };
        let mut p = Scratch::new()
            .plan("# Add\n\n## T1: Make calc.add add its two arguments\nVerify: python3 -m pytest -q tests/test_visible.py\nTests: tests/test_visible.py::test_add\nHoldout: general\n")
            .file("calc.py", "def add(a, b):\n    return 0\n")
            .file(
                "tests/test_visible.py",
                "from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n",
            )
            .agent(&agent(
                "if [ \"$n\" = 1 ]; then printf 'import atexit, os\\natexit.register(lambda: os._exit(0))\\n\\ndef add(a, b):\\n    return 3\\n' > calc.py; else printf 'def add(a, b):\\n    return a + b\\n' > calc.py; fi\necho TASK_COMPLETE",
            ))
            .config(&format!(
                "[verify]\nholdout = \"{}\"\n{sandbox}",
                holdout.path().display()
            ))
            .build();
        p.env.push(("PATH".into(), crate::support::python_path()));
        // Without the sandbox, `plan check` says what the agent's processes can read.
        let check = p.run(&["plan", "check", "PLAN.md"]);
        assert_eq!(check.code, Some(0), "{}", check.stderr);
        assert_eq!(
            check
                .stderr
                .contains("kept from the agent only under `[sandbox]"),
            !sandboxed,
            "{}",
            check.stderr
        );
        let r = p.run(&["run", "--quiet"]);
        assert_eq!(r.code, Some(0), "sandboxed {sandboxed}: {}", r.stderr);
        let s = p.status();
        assert_eq!(s["tasks"][0]["status"], "done", "{s}");
        assert_eq!(
            s["iterations"], 2,
            "sandboxed {sandboxed}: the special case passed: {s}"
        );
        let id = s["run_id"].as_str().unwrap().to_string();
        let journal = p.read(&format!(".agentloop/runs/{id}/journal.jsonl"));
        // What the agent can read says only that it failed and what judged it; how
        // (its exit code 0, its counts, its time) is in its own log, out of reach.
        assert!(
            journal.contains(r#""held_out":[{"name":"general","passed":false,"runner":"pytest"}]"#),
            "sandboxed {sandboxed}: {journal}"
        );
        let private = std::fs::read_to_string(
            p.state_home()
                .join(format!("agentloop/held-out/{id}/0001.log")),
        )
        .unwrap();
        assert!(
            private.contains("[held-out check `general`: failed, exit 0 after")
                && private.contains("; pytest: 1 test: 0 passed, 1 failed]"),
            "{private}"
        );
        let log = p.read(&format!(".agentloop/runs/{id}/iterations/0001/verify.log"));
        assert!(
            log.contains("[held-out check `general`: failed")
                && log.contains("judged by its report"),
            "{log}"
        );
        let second = p.read(&format!(".agentloop/runs/{id}/iterations/0002/prompt.md"));
        for (what, text) in [
            ("journal", &journal),
            ("verify log", &log),
            ("prompt", &second),
        ] {
            assert!(!text.contains("secret_case"), "{what}: {text}");
            assert!(!text.contains("5, 7"), "{what}: {text}");
        }
    }
}

/// With workers, a landed task's held-out check runs again on every merged result
/// after it: a later task whose work breaks it (on inputs no visible check tries) goes
/// back to its agent, told only the check's name, and does not land until it stops.
#[test]
fn a_merged_result_that_breaks_a_landed_tasks_held_out_check_does_not_land() {
    let holdout = tempfile::tempdir().unwrap();
    general_check(holdout.path());
    let plan = "# Add\n\n## T1: Make src/add.sh add its two arguments\nVerify: sh tests/t1.sh\nHoldout: general\n\n## T2: An offset for add\nVerify: test -f src/offset.sh\nDepends: T1\n";
    // T2's first offset is 1 for arguments over 4: the visible check (1 + 2) holds,
    // the held-out one (5 + 7) does not.
    let body = r#"mkdir -p src
case "$task" in
  T1) printf '%s\n' 'OFFSET=0; [ -f src/offset.sh ] && . src/offset.sh "$1"' 'echo $(($1 + $2 + OFFSET))' > src/add.sh ;;
  T2) if [ "$n" = 1 ]; then echo '[ "$1" -gt 4 ] && OFFSET=1 || true' > src/offset.sh; else echo 'OFFSET=0' > src/offset.sh; fi ;;
esac
echo TASK_COMPLETE"#;
    let p = crate::workers::project(
        plan,
        body,
        &format!("[verify]\nholdout = \"{}\"\n", holdout.path().display()),
    );
    p.write("tests/t1.sh", VISIBLE);
    p.commit("the visible check");
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["tasks"][0]["status"], "done", "{s:#}");
    assert_eq!(s["tasks"][1]["status"], "done", "{s:#}");
    let id = s["run_id"].as_str().unwrap().to_string();
    let journal = p.read(&format!(".agentloop/runs/{id}/journal.jsonl"));
    let failed: Vec<&str> = journal
        .lines()
        .filter(|l| l.contains(r#""kind":"merge_failed""#))
        .collect();
    assert_eq!(failed.len(), 1, "{journal}");
    assert!(
        failed[0].contains("held-out check `general` failed"),
        "{}",
        failed[0]
    );
    for line in journal.lines() {
        assert!(!line.contains("SECRET-CASE"), "{line}");
    }
    // What landed holds the held-out case.
    let branch = format!("agentloop/{id}");
    let add = p.git_cmd(&["show", &format!("{branch}:src/offset.sh")]);
    assert_eq!(add.trim(), "OFFSET=0");
}

/// The agent's code, run by a held-out check, copies the hidden test into an ignored
/// directory of the clean copy, and prints what that directory holds whenever it runs:
/// at the next check, into the verify log the agent reads. What the held-out run left
/// in the copy goes with its files, so nothing of the hidden test is ever printed.
#[test]
fn what_the_agents_code_copied_during_a_held_out_check_does_not_outlive_it() {
    let holdout = tempfile::tempdir().unwrap();
    general_check(holdout.path());
    let leak = "mkdir -p .leak; [ -f tests/hidden.sh ] && cp tests/hidden.sh .leak/h; cat .leak/h >&2 2>/dev/null;";
    let p = Scratch::new()
        .plan("# Add\n\n## T1: Make src/add.sh add its two arguments\nVerify: sh tests/t1.sh\nHoldout: general\n")
        .file("tests/t1.sh", VISIBLE)
        .agent(&agent(&format!(
            "mkdir -p src\necho '.leak/' >> .gitignore\nif [ \"$n\" = 1 ]; then echo '{leak} echo 3' > src/add.sh; else echo '{leak} echo $(($1 + $2))' > src/add.sh; fi\necho TASK_COMPLETE",
        )))
        .config(&format!("[verify]\nholdout = \"{}\"\n", holdout.path().display()))
        .build();
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["tasks"][0]["status"], "done");
    assert_eq!(
        s["iterations"], 2,
        "the first attempt failed the held-out check"
    );
    let leaked: Vec<String> = p
        .tree()
        .into_iter()
        .filter(|(_, bytes)| String::from_utf8_lossy(bytes).contains("SECRET-CASE"))
        .map(|(path, _)| path)
        .collect();
    assert!(leaked.is_empty(), "the hidden test is in {leaked:?}");
}

/// A path `[sandbox] writable` opens (a fixture directory the suite shares) is
/// writable to the project's checks, but read-only to the held-out checks: the
/// agent's code, run by one, cannot carry the hidden test there, where it would
/// outlive the run.
#[test]
fn a_held_out_check_cannot_write_where_sandbox_writable_lets_the_projects_checks() {
    let holdout = tempfile::tempdir().unwrap();
    general_check(holdout.path());
    let shared = tempfile::tempdir().unwrap();
    let at = shared.path().display().to_string();
    let code = format!(
        "if [ -f tests/hidden.sh ]; then cp tests/hidden.sh {at}/h 2>/dev/null; else echo seen > {at}/visible; fi; echo $(($1 + $2))"
    );
    let p = Scratch::new()
        .plan("# Add\n\n## T1: Make src/add.sh add its two arguments\nVerify: sh tests/t1.sh\nHoldout: general\n")
        .file("tests/t1.sh", VISIBLE)
        .agent(&agent(&format!(
            "mkdir -p src\necho '{code}' > src/add.sh\necho TASK_COMPLETE"
        )))
        .config(&format!(
            "[verify]\nholdout = \"{}\"\n\n[sandbox]\nwritable = [\"{at}\"]\n",
            holdout.path().display()
        ))
        .build();
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.status()["tasks"][0]["status"], "done");
    assert!(
        shared.path().join("visible").exists(),
        "the project's check writes there"
    );
    assert!(
        !shared.path().join("h").exists(),
        "the hidden test was carried out of the held-out check"
    );
}
