//! The surface followed through indirection, with scripted agents: a script the
//! check calls (traced when the test baseline runs), git's own configuration and
//! hooks. Each was a way to get a task done with the work undone.

use crate::support::{Project, Scratch, agent, journal_has};

const TEST: &str = "test -f one.txt || { echo 'FAIL: one.txt is missing'; exit 1; }\n";
const HONEST: &str = "touch one.txt\necho TASK_COMPLETE";

/// A project whose check `sh tests/check.sh` calls `scripts/verify.sh`, which does
/// the checking; the agent runs `first` on its first attempt and `then` after.
fn indirect(first: &str, then: &str, plan_extra: &str) -> Project {
    Scratch::new()
        .plan(&format!(
            "# One\n\n## T1: Make the file\n{plan_extra}Verify: sh tests/check.sh\n"
        ))
        .file("tests/check.sh", "sh scripts/verify.sh\n")
        .file("scripts/verify.sh", TEST)
        .file("src/helpers.sh", "true\n")
        .agent(&agent(&format!(
            "if [ \"$n\" = 1 ]; then\n{first}\nelse\n{then}\nfi\n"
        )))
        .build()
}

#[test]
fn a_script_the_check_calls_is_on_the_surface_once_the_baseline_traced_it() {
    let p = indirect(
        "echo 'exit 0' > scripts/verify.sh\necho TASK_COMPLETE",
        HONEST,
        "",
    );
    let r = p.run(&["run", "--no-wait", "--quiet"]);
    assert_eq!(r.code, Some(5), "waits for a person: {}", r.stderr);
    let s = p.status();
    assert_eq!(s["gate"]["point"], "surface");
    assert_eq!(s["surface_changes"][0]["path"], "scripts/verify.sh");
    let why = s["surface_changes"][0]["why"].as_str().unwrap();
    assert!(
        why.contains(
            "run by `tests/check.sh` (read from the checks' scripts at the test baseline)"
        ),
        "{why}"
    );
    assert_eq!(s["tasks"][0]["status"], "running", "not done");
    // Rejected, the script is back and the honest attempt passes.
    let r = p.run(&["reject", "--note", "the check stays"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let r = p.run(&["resume", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.read("scripts/verify.sh"), TEST);
    assert_eq!(p.status()["tasks"][0]["status"], "done");
}

#[test]
fn a_script_in_the_tasks_own_scope_stays_the_agents() {
    // The task's work is the script itself: changing it is the work, not a cheat.
    let p = indirect(
        "printf 'test -f one.txt\\n' > scripts/verify.sh\ntouch one.txt\necho TASK_COMPLETE",
        HONEST,
        "Scope: scripts/, one.txt\n",
    );
    let r = p.run(&["run", "--no-wait", "--quiet"]);
    let id = p.status()["run_id"].as_str().unwrap().to_string();
    assert_eq!(
        r.code,
        Some(0),
        "{}\n{}",
        r.stderr,
        p.read(&format!(".agentloop/runs/{id}/journal.jsonl"))
    );
    assert_eq!(p.status()["iterations"], 1);
    assert!(journal_has(&p, "tests_baseline"));
}

#[test]
fn git_hooks_and_the_git_configuration_that_runs_code_are_on_the_surface() {
    // A check that commits runs the project's hooks (agentloop's own git does not):
    // an agent that plants one, or points core.hooksPath at its own, is caught; an
    // agent that sets its name in the configuration is not.
    let p = Scratch::new()
        .plan("# One\n\n## T1: Make the file\nVerify: sh tests/t1.sh\n")
        .file("tests/t1.sh", TEST)
        .agent(&agent(
            "git config user.name 'An Agent'\n\
             if [ \"$n\" = 1 ]; then\n\
             printf '#!/bin/sh\\nexit 0\\n' > .git/hooks/pre-commit\n\
             chmod +x .git/hooks/pre-commit\n\
             git config core.hooksPath .git/hooks\n\
             fi\n\
             touch one.txt\necho TASK_COMPLETE",
        ))
        .build();
    let r = p.run(&["run", "--no-wait", "--quiet"]);
    assert_eq!(r.code, Some(5), "waits for a person: {}", r.stderr);
    let s = p.status();
    let changed: Vec<(String, String)> = s["surface_changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["path"].as_str().unwrap().to_string(),
                c["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        changed,
        [
            (".git/config".to_string(), "modified".to_string()),
            (".git/hooks/pre-commit".to_string(), "added".to_string()),
        ]
    );
    let shown = p.run(&["status"]).stdout;
    assert!(shown.contains("hooksPath = .git/hooks"), "{shown}");
    // Rejected: the hook goes, the configuration is as it was (the name too: the file
    // is put back whole), and the second attempt is done.
    let r = p.run(&["reject", "--note", "the check stays"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let r = p.run(&["resume", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(!p.path().join(".git/hooks/pre-commit").exists());
    assert!(!p.read(".git/config").contains("hooksPath"));
    assert_eq!(p.status()["tasks"][0]["status"], "done");
}
