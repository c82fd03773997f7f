//! The real `claude` CLI (pinned, from the npm registry) driven by agentloop against
//! the testkit's mock Anthropic API. `scripts/test` installs it and puts it on PATH.

use agentloop_testkit::{MockServer, Step};

use crate::real_cli::{Cli, ONE, PLAN, journal_events, say};
use crate::support::Project;

fn bash(cmd: &str, input: u64, output: u64) -> Step {
    Cli::Claude.shell(cmd, input, output)
}

#[test]
fn two_tasks_done_through_claudes_own_tools() {
    let server = Cli::Claude.mock(vec![
        bash("echo hello > hello.txt", 100, 10),
        say("Created hello.txt.\nTASK_COMPLETE", 120, 8, 50),
        bash("echo world > world.txt", 200, 12),
        say("Done.\n\nTASK_COMPLETE", 220, 9, 70),
    ]);
    let p = project(&server, PLAN, "");
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.read("world.txt"), "world\n");
    let s = p.status();
    assert_eq!(s["status"], "completed");
    assert_eq!(s["iterations"], 2);
    assert_eq!(s["tokens"]["input"], 640);
    assert_eq!(s["tokens"]["output"], 39);
    assert_eq!(s["tokens"]["cached_input"], 120);
    assert_eq!(server.steps_used(), 4);
}

fn project(server: &MockServer, plan: &str, extra: &str) -> Project {
    Cli::Claude.project(server, plan, extra)
}

#[test]
fn a_false_completion_is_caught_and_retried_with_the_digest() {
    let server = Cli::Claude.mock(vec![
        say("All done, tests pass.\nTASK_COMPLETE", 50, 5, 0),
        bash("echo hello > hello.txt", 60, 6),
        say("Now it really exists.\nTASK_COMPLETE", 70, 7, 0),
    ]);
    let p = project(&server, ONE, "");
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("verification failed: `test -f hello.txt` exited 1 (the agent claimed the task was complete)"), "{}", r.stderr);
    let s = p.status();
    assert_eq!(
        (s["status"].as_str(), s["iterations"].as_u64()),
        (Some("completed"), Some(2))
    );
    // The second claude process was told what failed.
    let second = server
        .requests()
        .into_iter()
        .find(|r| r.step == Some(1))
        .expect("a second main request");
    assert!(
        second.body.to_string().contains("Last attempt failed"),
        "{}",
        second.body
    );
}

#[test]
fn a_rate_limit_waits_for_the_reset_without_spending_retries() {
    let server = Cli::Claude.mock(vec![
        Step::Error {
            status: 429,
            kind: "rate_limit_error".into(),
            message: "This request would exceed your account's rate limit.".into(),
            retry_after: Some(2),
        },
        bash("echo hello > hello.txt", 60, 6),
        say("TASK_COMPLETE", 70, 7, 0),
    ]);
    let p = project(
        &server,
        ONE,
        "[limits]\nwait = \"2s\"\n\n[budgets]\ntask_retries = 1\n",
    );
    let t = std::time::Instant::now();
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        t.elapsed() >= std::time::Duration::from_secs(2),
        "it waited for the reset"
    );
    assert!(r.stderr.contains("waiting until"), "{}", r.stderr);
    let events = journal_events(&p);
    let limit = events
        .iter()
        .find(|e| e["kind"] == "limit_hit")
        .expect("a limit_hit event");
    assert_eq!(limit["data"]["kind"], "rate_limit");
    assert!(events.iter().any(|e| e["kind"] == "limit_wait_over"));
    // With a retry budget of 1, the run could only finish if the limited try did not count.
    let attempts: Vec<u64> = events
        .iter()
        .filter(|e| e["kind"] == "iteration_started")
        .map(|e| e["data"]["attempt"].as_u64().unwrap())
        .collect();
    assert_eq!(attempts, vec![1, 1]);
}

#[test]
fn an_auth_error_waits_for_a_person_with_a_clear_message() {
    let server = Cli::Claude.mock(vec![Step::Error {
        status: 401,
        kind: "authentication_error".into(),
        message: "invalid x-api-key".into(),
        retry_after: None,
    }]);
    let p = project(&server, ONE, "");
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["status"], "blocked");
    let why = s["tasks"][0]["blocked"].as_str().unwrap();
    assert!(
        why.starts_with("the agent could not authenticate: "),
        "{why}"
    );
    assert!(
        why.contains("Fix the API key or log the CLI in, then `agentloop retry T1`"),
        "{why}"
    );
    assert_eq!(s["iterations"], 1, "no retries burnt on a bad key");
}

#[test]
fn stop_now_during_a_stalled_reply_ends_claudes_process_group() {
    let server = Cli::Claude.mock(vec![Step::Stall { seconds: 60 }]);
    let p = project(&server, ONE, "");
    crate::support::stop_now_during_a_model_call(&p, &server, "claude");
}

#[test]
fn agents_lists_the_installed_clis_and_their_versions() {
    let p = Project::git();
    let r = p.run(&["agents", "--json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&r.stdout).unwrap();
    let claude = rows.iter().find(|r| r["name"] == "claude").unwrap();
    assert_eq!(
        claude["installed"], true,
        "scripts/test puts the pinned claude on PATH"
    );
    assert_eq!(claude["version"], "2.1.197 (Claude Code)");
    let codex = rows.iter().find(|r| r["name"] == "codex").unwrap();
    assert_eq!(codex["version"], "codex-cli 0.169.0");
    // The run records the versions it probed.
    let server = Cli::Claude.mock(vec![
        bash("echo hello > hello.txt", 1, 1),
        say("TASK_COMPLETE", 1, 1, 0),
    ]);
    let p = project(&server, ONE, "");
    assert_eq!(p.run(&["run", "--quiet"]).code, Some(0));
    let started = journal_events(&p)
        .into_iter()
        .find(|e| e["kind"] == "driver_started")
        .unwrap();
    assert_eq!(started["data"]["agents"]["claude"], "2.1.197 (Claude Code)");
}
