//! The verification surface with scripted agents: a rewritten test, an edited plan or
//! configuration, a new file that intercepts the checks, junk in the tree — caught
//! against the run's baseline, gated, restored, approved; checks on a clean copy.

use std::time::Duration;

use crate::support::{Project, Scratch, agent, journal_has, wait_exit, wait_for};

const T1: &str = "# One\n\n## T1: Make the file\nVerify: sh tests/t1.sh\n";
const TEST: &str = "test -f one.txt || { echo 'FAIL: one.txt is missing'; exit 1; }\n";

/// A project whose test checks for one.txt, and an agent that runs `first` on its
/// first attempt and `then` after.
fn project(first: &str, then: &str, config: &str) -> Project {
    Scratch::new()
        .plan(T1)
        .file("tests/t1.sh", TEST)
        .agent(&agent(&format!(
            "if [ \"$n\" = 1 ]; then\n{first}\nelse\n{then}\nfi\n"
        )))
        .config(config)
        .build()
}

fn prompt(p: &Project, iteration: u32) -> String {
    p.read(&format!(
        ".agentloop/runs/{}/iterations/{iteration:04}/prompt.md",
        p.status()["run_id"].as_str().unwrap()
    ))
}

const CHEAT: &str = "echo 'exit 0' > tests/t1.sh\necho TASK_COMPLETE";
const HONEST: &str = "touch one.txt\necho TASK_COMPLETE";

#[test]
fn a_rewritten_test_waits_for_a_person_and_reject_restores_it() {
    let p = project(CHEAT, HONEST, "");
    let r = p.run(&["run", "--no-wait", "--quiet"]);
    assert_eq!(r.code, Some(5), "waits for a person: {}", r.stderr);
    let s = p.status();
    assert_eq!(s["gate"]["point"], "surface");
    assert_eq!(s["tasks"][0]["status"], "running");
    assert_eq!(s["surface_changes"][0]["path"], "tests/t1.sh");
    assert_eq!(s["surface_changes"][0]["kind"], "modified");
    // The person sees the exact diff.
    let shown = p.run(&["status"]).stdout;
    for want in [
        "needs you: task T1 changed files that verify it",
        "tests/t1.sh (modified, named by a Verify command (tests/t1.sh))",
        "-test -f one.txt ||",
        "+exit 0",
    ] {
        assert!(shown.contains(want), "{want} in:\n{shown}");
    }
    // The agent's version is still in the tree until a person decides.
    assert_eq!(p.read("tests/t1.sh"), "exit 0\n");
    let r = p.run(&["reject", "--note", "the test stays as written"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let r = p.run(&["resume", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.read("tests/t1.sh"), TEST, "the baseline is back");
    let s = p.status();
    assert_eq!(s["tasks"][0]["status"], "done");
    assert_eq!(s["iterations"], 2);
    let second = prompt(&p, 2);
    assert!(
        second.contains("A person rejected your change to files that verify your work (\"the test stays as written\")")
            && second.contains("tests/t1.sh (modified"),
        "{second}"
    );
    assert!(journal_has(&p, "surface_restored"));
}

#[test]
fn approve_moves_the_baseline_and_the_task_completes_in_the_same_iteration() {
    // The agent tightens the test and does the work: a person agrees.
    let stricter = "printf 'test -s one.txt || exit 1\\n' > tests/t1.sh\necho hi > one.txt\necho TASK_COMPLETE";
    let p = project(stricter, "echo TASK_COMPLETE", "");
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    wait_for(&p, "the surface gate", |p| {
        journal_has(p, "\"point\":\"surface\"")
    });
    let r = p.run(&["approve", "--note", "stricter is fine"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let st = wait_exit(&mut driver, Duration::from_secs(20));
    assert_eq!(st.code(), Some(0));
    let s = p.status();
    assert_eq!(s["tasks"][0]["status"], "done");
    assert_eq!(
        s["iterations"], 1,
        "approved and verified without another turn"
    );
    // The new version is the baseline now.
    let v: serde_json::Value =
        serde_json::from_str(&p.run(&["verify-surface", "--json"]).stdout).unwrap_or_default();
    assert_eq!(v["changes"], serde_json::json!([]), "{v}");
    let log = p.run(&["log"]).stdout;
    assert!(log.contains("approve"), "{log}");
}

#[test]
fn restore_mode_puts_the_test_back_before_verifying_and_tells_the_agent() {
    let p = project(
        CHEAT,
        HONEST,
        "[verify]\non_protected_change = \"restore\"\n",
    );
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.read("tests/t1.sh"), TEST);
    let s = p.status();
    assert_eq!(s["iterations"], 2);
    assert!(journal_has(&p, "surface_restored"));
    let second = prompt(&p, 2);
    assert!(
        second.contains("agentloop put back the run's baseline versions of files that verify your work: tests/t1.sh (modified"),
        "{second}"
    );
    // The first verification ran the real test and failed.
    let log = p.run(&["log"]).stdout;
    assert!(
        log.contains("FAIL: one.txt is missing") || log.contains("verification failed"),
        "{log}"
    );
}

#[test]
fn edits_to_the_plan_and_the_configuration_are_caught_and_not_used() {
    let first = "sed -i 's/^Verify: .*/Verify: true/' PLAN.md\n\
                 printf '[run]\\nagent = \"scripted\"\\n[agents.scripted]\\ncommand = [\"sh\", \"agent.sh\"]\\n[verify]\\non_protected_change = \"allow\"\\n' > agentloop.toml\n\
                 echo TASK_COMPLETE";
    let p = project(first, HONEST, "");
    let r = p.run(&["run", "--no-wait", "--quiet"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    let s = p.status();
    assert_eq!(
        crate::support::surface_paths(&s),
        ["PLAN.md", "agentloop.toml"]
    );
    // A resumed driver keeps the run's own configuration, not the agent's.
    let r = p.run(&["resume", "--no-wait", "--quiet"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("agentloop.toml changed since the run started"),
        "{}",
        r.stderr
    );
    let log = p.run(&["log", "--json"]).stdout;
    let last_settings = log
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .rfind(|r| r["event"]["kind"] == "driver_started")
        .unwrap();
    assert_eq!(
        last_settings["event"]["data"]["settings"]["on_protected_change"],
        "gate"
    );
    assert_eq!(p.status()["gate"]["point"], "surface");
}

#[test]
fn a_new_conftest_is_caught_a_new_test_is_not() {
    let first = "mkdir -p tests && echo 'def test_x(): pass' > tests/test_new.py\n\
                 echo 'import sys' > conftest.py\n\
                 touch one.txt\necho TASK_COMPLETE";
    let p = project(first, "echo TASK_COMPLETE", "");
    let r = p.run(&["run", "--no-wait", "--quiet"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    let s = p.status();
    let changes = s["surface_changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0]["path"], "conftest.py");
    assert_eq!(changes[0]["kind"], "added");
    // The person rejects: the new file goes, the new test stays.
    assert_eq!(p.run(&["reject", "--note", "no conftest"]).code, Some(0));
    assert_eq!(p.run(&["resume", "--quiet"]).code, Some(0));
    assert!(!p.path().join("conftest.py").exists());
    assert!(p.path().join("tests/test_new.py").exists());
}

#[test]
fn checks_run_on_a_clean_copy_not_among_the_agents_junk() {
    // The check passes if build/ok exists: an ignored artefact the agent leaves in its
    // tree must not count; only what it really commits to the tree does.
    let p = Scratch::new()
        .plan("# One\n\n## T1: Build\nVerify: test -f build/ok || test -f src/ok\n")
        .file(".git/info/exclude", "build/\n")
        .agent(&agent(
            "if [ \"$n\" = 1 ]; then mkdir -p build && touch build/ok; else mkdir -p src && touch src/ok; fi\necho TASK_COMPLETE",
        ))
        .build();
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let s = p.status();
    assert_eq!(
        s["iterations"], 2,
        "the ignored artefact did not pass the check"
    );
    // The user's tree is as the agent left it.
    assert!(p.path().join("build/ok").exists());
    // The clean copy went with the run.
    no_clean_copy_left(&p);
}

#[test]
fn what_the_agent_writes_into_the_clean_copy_between_verifications_never_reaches_a_check() {
    // The driver keeps its clean copy in step between verifications without git
    // (exec::clean_copy::kept): a write into the copy itself, outside the project,
    // must be put right as the full refresh puts it right.
    let p = Scratch::new()
        .plan("# One\n\n## T1: Make it\nVerify: sh tests/check.sh\n")
        .file("tests/check.sh", "test -f src/ok\n")
        .agent(&agent(
            "copy=\"$XDG_STATE_HOME/agentloop/judge/checkouts/$AGENTLOOP_RUN\"\n             case \"$n\" in\n             1) echo 'def x(): pass' > one.py ;;\n             2|3) echo 'exit 0' > \"$copy/tests/check.sh\"; mkdir -p \"$copy/src\"; touch \"$copy/src/ok\"; echo x >> one.py ;;\n             *) mkdir -p src && touch src/ok ;;\n             esac\necho TASK_COMPLETE",
        ))
        .build();
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(
        p.status()["iterations"],
        4,
        "a check passed on what the agent wrote into the clean copy"
    );
    no_clean_copy_left(&p);
}

/// No clean copy (the run's, or a task's) is left on disk or registered with git.
fn no_clean_copy_left(p: &Project) {
    let cache = p.state_home().join("agentloop/judge/checkouts");
    let left: Vec<_> = std::fs::read_dir(&cache)
        .map(|d| d.flatten().collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
    assert!(!p.git_cmd(&["worktree", "list"]).contains("checkouts"));
}

#[test]
fn with_workers_checks_run_on_a_clean_copy_of_the_worktree_too() {
    // A worker's checks ran in its worktree, where an ignored file the agent left (a
    // planted build artefact, a `.pth` in an in-project virtualenv) decided them.
    let p = Scratch::new()
        .plan("# One\n\n## T1: Build\nVerify: test -f build/ok || test -f src/ok\n")
        .file(".git/info/exclude", "build/\n")
        // Its attempts counted in an ignored file of its worktree (`.git` is a file
        // there).
        .agent(
            "cat > /dev/null\nmkdir -p build\nc=$(cat build/n 2>/dev/null || echo 0); c=$((c+1)); echo $c > build/n\nif [ $c = 1 ]; then touch build/ok; else mkdir -p src && touch src/ok; fi\necho TASK_COMPLETE\n",
        )
        .build();
    let r = p.run(&["run", "--workers", "2", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["tasks"][0]["status"], "done");
    assert_eq!(
        s["iterations"], 2,
        "the ignored artefact in the worktree did not pass the check"
    );
    let log = p.read(&format!(
        ".agentloop/runs/{}/iterations/0001/verify.log",
        s["run_id"].as_str().unwrap()
    ));
    assert!(!log.contains("could not make the clean copy"), "{log}");
    // The task's clean copy went with the run.
    no_clean_copy_left(&p);
}

/// A test the person edits while the run is paused (no agent at work) is theirs: the
/// baseline takes it, recorded, and the next agent is neither charged with it nor is
/// it put back.
#[test]
fn a_test_the_person_edits_while_the_run_is_paused_is_not_charged_to_the_agent() {
    let p = project(
        "while [ ! -e .git/agent-state/noted ]; do sleep 0.05; done",
        HONEST,
        "[verify]\non_protected_change = \"restore\"\n",
    );
    let out = std::fs::File::create(p.path().join("run1.err")).unwrap();
    let mut run = p
        .cmd(&["run"])
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .unwrap();
    wait_for(&p, "the first attempt", |p| {
        p.path().join(".git/agent-state/T1").exists()
    });
    assert_eq!(p.run(&["pause"]).code, Some(0));
    std::fs::write(p.path().join(".git/agent-state/noted"), "").unwrap();
    // Paused, and the first attempt over: no agent at work. The status says paused as
    // soon as the request is in the journal; the driver says so once it has begun to
    // wait (and has seen the tree as the wait began): an edit before that is in the
    // tree the wait began with (found at stop 80: CI failed once on that race).
    wait_for(&p, "the pause", |p| {
        p.status()["status"] == "paused"
            && journal_has(p, "\"kind\":\"iteration_finished\"")
            && p.read("run1.err").contains("agentloop: paused")
    });
    let mine = "test -f one.txt || { echo 'FAIL: no one.txt (a stricter message)'; exit 1; }\n";
    p.write("tests/t1.sh", mine);
    assert_eq!(p.run(&["resume"]).code, Some(0));
    let status = wait_exit(&mut run, Duration::from_secs(30));
    assert_eq!(status.code(), Some(0), "{}", p.read("run1.err"));
    assert_eq!(p.read("tests/t1.sh"), mine, "not put back");
    assert!(journal_has(&p, "person_changed_surface"));
    assert!(
        !journal_has(&p, "surface_restored"),
        "{}",
        p.read("run1.err")
    );
    assert_eq!(p.status()["tasks"][0]["status"], "done");
}

/// What agentloop's own steps change in the tree is not a person's: a tripwire's
/// command (the agent's code, run in the tree after its iteration) that rewrites the
/// test is charged to the agent at the surface gate, never taken into the baseline as
/// a change made while no agent was at work.
#[test]
fn a_test_a_tripwires_command_rewrites_is_still_the_agents() {
    let p = Scratch::new()
        .plan("# One\n\n## T1: Make the file\nVerify: sh tests/t1.sh\nMust-not: break sh wreck.sh\n")
        .file("tests/t1.sh", TEST)
        .agent(&agent(
            "if [ \"$n\" = 1 ]; then\nprintf 'echo exit 0 > tests/t1.sh\\n' > wreck.sh\nelse\ntouch one.txt\necho TASK_COMPLETE\nfi\n",
        ))
        .build();
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert_eq!(
        p.read("tests/t1.sh"),
        "exit 0\n",
        "the tripwire's command ran"
    );
    assert_eq!(p.status()["gate"]["point"], "surface", "{}", r.stderr);
    assert!(!journal_has(&p, "person_changed_surface"));
}

#[test]
fn verify_surface_lists_the_baseline_and_accepts_a_persons_own_edit() {
    // A run waiting for its plan's approval: no agent has run yet.
    let p = project(CHEAT, HONEST, "[gates]\nplan_approval = true\n");
    assert_eq!(p.run(&["run", "--no-wait", "--quiet"]).code, Some(5));
    let out = p.run(&["verify-surface"]).stdout;
    for want in [
        "verification surface: 4 files · on_protected_change = gate · checks run on a clean copy",
        ".git/config",
        "git configuration (filters, drivers, hooks, includes)",
        "PLAN.md",
        "the plan",
        "tests/t1.sh",
        "named by a Verify command (tests/t1.sh)",
        "agentloop.toml",
        "the tree matches the baseline",
    ] {
        assert!(out.contains(want), "{want} in:\n{out}");
    }
    // The person edits the test themselves, and takes it.
    p.write("tests/t1.sh", "test -f one.txt\n");
    let out = p.run(&["verify-surface"]).stdout;
    assert!(out.contains("+test -f one.txt"), "{out}");
    let r = p.run(&["verify-surface", "--accept"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("the new baseline takes tests/t1.sh (modified"),
        "{}",
        r.stderr
    );
    assert!(
        p.run(&["verify-surface"])
            .stdout
            .contains("the tree matches the baseline")
    );
}

#[test]
fn only_the_test_section_of_pyproject_counts_and_the_rest_reaches_the_checks() {
    let pyproject =
        "[project]\nname = \"x\"\nversion = \"1\"\n\n[tool.pytest.ini_options]\naddopts = \"-q\"\n";
    let p = Scratch::new()
        .plan("# One\n\n## T1: Bump\nVerify: grep -q 'version = \"2\"' pyproject.toml\n")
        .file("pyproject.toml", pyproject)
        .agent(&agent(
            "if [ \"$n\" = 1 ]; then sed -i 's/version = \"1\"/version = \"2\"/' pyproject.toml\n\
             else sed -i 's/addopts = \"-q\"/addopts = \"-p no_fail\"/' pyproject.toml; fi\n\
             echo TASK_COMPLETE",
        ))
        .build();
    // The version bump is the agent's to make, and the clean copy has it.
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.status()["iterations"], 1);
    // Its pytest section is not: a second run whose agent changes it is held.
    let r = p.run(&["run", "--no-wait", "--quiet"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["surface_changes"][0]["path"], "pyproject.toml");
    assert!(
        s["surface_changes"][0]["why"]
            .as_str()
            .unwrap()
            .contains("test section"),
        "{s}"
    );
}

#[test]
fn the_notification_of_a_surface_gate_carries_the_diff() {
    let p = project(
        CHEAT,
        HONEST,
        "[notify]\ncommand = [\"sh\", \"-c\", \"cat >> .git/notified.jsonl; echo >> .git/notified.jsonl\"]\n",
    );
    let r = p.run(&["run", "--no-wait", "--quiet"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    let sent = p.read(".git/notified.jsonl");
    let waiting = sent
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["event"] == "waiting")
        .expect("a waiting notification");
    let message = waiting["message"].as_str().unwrap();
    assert!(
        message.contains("task T1 changed files that verify it")
            && message.contains("tests/t1.sh (modified")
            && message.contains("+exit 0"),
        "{message}"
    );
}

/// Three tasks verified by tests/t1.sh; the agent runs `t1` on T1 (after waiting long
/// enough for the project's files to be stamped: a file written in the last two
/// seconds never is), `t2` on T2, and completes T3.
fn stamped(t1: &str, t2: &str) -> Project {
    Scratch::new()
        .plan(
            "# Three\n\n## T1: One\nVerify: sh tests/t1.sh\n\n## T2: Two\nVerify: sh tests/t1.sh\n\n## T3: Three\nVerify: sh tests/t1.sh\n",
        )
        .file("tests/t1.sh", TEST)
        .agent(&agent(&format!(
            "case $task in\nT1) sleep 2.2\n{t1} ;;\nT2) cp .agentloop/runs/*/surface-stamp .git/agent-state/stamp\n{t2} ;;\nesac\ntouch one.txt\necho TASK_COMPLETE\n"
        )))
        .build()
}

#[test]
fn a_stamped_surface_is_read_without_git_and_still_catches_a_test_rewritten_behind_its_back() {
    // The same size, the same inode, its modification time put back, and hidden from
    // `git status` (skip-worktree): only the change time tells.
    let sneaky = "touch -r tests/t1.sh .git/agent-state/ref\n\
                  printf \"test -f one.txt || { echo 'FAIL: one.txt is MISSING'; exit 0; }\\n\" > tests/t1.sh\n\
                  touch -r .git/agent-state/ref tests/t1.sh\n\
                  git update-index --skip-worktree tests/t1.sh";
    let p = stamped("", sneaky);
    let r = p.run(&["run", "--no-wait", "--quiet"]);
    assert_eq!(r.code, Some(5), "waits for a person: {}", r.stderr);
    // T1's clean check left a stamp, which T2's check had.
    assert!(p.path().join(".git/agent-state/stamp").exists());
    let s = p.status();
    assert_eq!(s["gate"]["point"], "surface");
    assert_eq!(s["tasks"][1]["status"], "running");
    assert_eq!(s["surface_changes"][0]["path"], "tests/t1.sh");
    assert_eq!(s["surface_changes"][0]["kind"], "modified");
    assert_eq!(p.read("tests/t1.sh").len(), TEST.len());
}

#[test]
fn a_stamped_surface_still_catches_a_new_conftest() {
    let p = stamped("", "echo 'import sys' > conftest.py");
    let r = p.run(&["run", "--no-wait", "--quiet"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert!(p.path().join(".git/agent-state/stamp").exists());
    let s = p.status();
    assert_eq!(s["surface_changes"][0]["path"], "conftest.py");
    assert_eq!(s["surface_changes"][0]["kind"], "added");
}

#[test]
fn a_test_written_through_a_link_from_outside_the_project_is_caught_by_the_watched_stamp() {
    // The driver trusts its stamp while each surface file's own watch reports nothing.
    // A hard link made from outside the project, then written through, reaches no
    // directory's watch: only the file's own (or its change time) tells.
    let p = Scratch::new()
        .plan(
            "# Three\n\n## T1: One\nVerify: sh tests/t1.sh\n\n## T2: Two\nVerify: sh tests/t1.sh\n\n## T3: Three\nVerify: sh tests/t1.sh\n",
        )
        .file("tests/t1.sh", TEST)
        .agent(&agent(
            "case $task in\n             T1) ln tests/t1.sh \"$PWD.t1-link\"; sleep 2.2 ;;\n             T3) printf 'exit 0\\n' > \"$PWD.t1-link\" ;;\n             esac\n             [ \"$task\" = T3 ] || touch one-$task.txt\ntouch one.txt\necho TASK_COMPLETE\n",
        ))
        .build();
    let r = p.run(&["run", "--no-wait", "--quiet"]);
    let _ = std::fs::remove_file(format!("{}.t1-link", p.path().display()));
    assert_eq!(r.code, Some(5), "waits for a person: {}", r.stderr);
    let s = p.status();
    assert_eq!(s["gate"]["point"], "surface");
    assert_eq!(s["tasks"][1]["status"], "done");
    assert_eq!(s["tasks"][2]["status"], "running");
    assert_eq!(s["surface_changes"][0]["path"], "tests/t1.sh");
}

#[test]
fn with_a_stamp_a_check_of_an_unchanged_surface_runs_no_git() {
    // Every git command the driver runs, logged by a stand-in that runs the real one.
    let p = stamped("", "");
    let real = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let shim = p.path().join(".git/shim");
    std::fs::create_dir_all(&shim).unwrap();
    let log = p.path().join(".git/git.log");
    p.write(
        ".git/shim/git",
        format!(
            "#!/bin/sh\necho \"$*\" >> {}\nexec {} \"$@\"\n",
            log.display(),
            real.trim()
        ),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(shim.join("git"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut p = p;
    let path = format!("{}:{}", shim.display(), std::env::var("PATH").unwrap());
    p.env.push(("PATH".into(), path));
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.status()["tasks"][2]["status"], "done");
    let log = std::fs::read_to_string(log).unwrap();
    let listed = log.lines().filter(|l| l.contains("ls-files -z -c")).count();
    // The baseline and T1's check list the files; T2's and T3's trust the stamp (the
    // watch of the tree lists what git ignores once, with other flags).
    assert_eq!(listed, 2, "{log}");
}

#[test]
fn with_workers_a_rewritten_test_waits_for_a_person_and_no_wait_returns() {
    // A run with workers whose only task waits for a person used to wait for its
    // workers, silently and for ever.
    let p = Scratch::new()
        .plan(T1)
        .file("tests/t1.sh", TEST)
        .agent("cat > /dev/null\necho 'exit 0' > tests/t1.sh\necho TASK_COMPLETE\n")
        .build();
    let r = p.run(&["run", "--workers", "2", "--no-wait"]);
    assert_eq!(r.code, Some(5), "waits for a person: {}", r.stderr);
    assert!(
        r.stderr
            .contains("waiting for a person: task T1 changed files that verify it"),
        "{}",
        r.stderr
    );
    let s = p.status();
    assert_eq!(s["gate"]["point"], "surface");
    assert_eq!(s["workers"]["lanes"][0]["phase"], "waiting");
    assert_eq!(p.read("tests/t1.sh"), TEST, "the user's tree is untouched");
}

#[test]
fn a_script_a_check_runs_that_the_agent_writes_waits_for_a_person() {
    // `Verify: sh checks/t1.sh` before the script exists: the agent that writes it
    // writes its own judge (`exit 0`). A new file a check runs as its script is on
    // the surface: the run waits at the surface gate with it.
    let p = Scratch::new()
        .plan("# Report\n\n## T1: Make the report\nVerify: sh checks/t1.sh\n")
        .agent(&agent(
            "mkdir -p checks\necho 'exit 0' > checks/t1.sh\necho TASK_COMPLETE",
        ))
        .build();
    let r = p.run(&["run", "--quiet", "--no-wait"]);
    let s = p.status();
    assert_eq!(r.code, Some(5), "{}\n{s}", r.stderr);
    assert_eq!(s["gate"]["point"], "surface", "{s}");
    assert!(
        s["surface_changes"]
            .to_string()
            .contains("the script a Verify command runs (checks/t1.sh)"),
        "{s}"
    );
}
