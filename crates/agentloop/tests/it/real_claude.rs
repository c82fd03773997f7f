//! The real `claude` CLI (pinned, from the npm registry) driven by agentloop against
//! the testkit's mock Anthropic API. `scripts/test` installs it and puts it on PATH.
//! The scenarios are shared with the other CLIs (`real_cli.rs`).

use crate::real_cli::{Cli, ONE, journal_events, say};
use crate::support::Project;
use serde_json::json;

#[test]
fn two_tasks_done_through_claudes_own_tools() {
    let (_, s) = crate::real_cli::two_tasks(
        Cli::Claude,
        [(100, 10, 0), (120, 8, 50), (200, 12, 0), (220, 9, 70)],
    );
    assert_eq!(s["tokens"]["input"], 640);
    assert_eq!(s["tokens"]["output"], 39);
    assert_eq!(s["tokens"]["cached_input"], 120);
}

#[test]
fn a_false_completion_is_caught_and_retried_with_the_digest() {
    crate::real_cli::false_completion(Cli::Claude);
}

#[test]
fn a_rate_limit_waits_for_the_reset_without_spending_retries() {
    crate::real_cli::rate_limit_waits(
        Cli::Claude,
        "rate_limit_error",
        "This request would exceed your account's rate limit.",
    );
}

#[test]
fn an_auth_error_waits_for_a_person_with_a_clear_message() {
    crate::real_cli::auth_error_blocks(Cli::Claude, "authentication_error", "invalid x-api-key");
}

#[test]
fn stop_now_during_a_stalled_reply_ends_claudes_process_group() {
    crate::real_cli::stop_now_during_a_stall(Cli::Claude, "claude");
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
    // Aider is installed (scripts/test puts it on PATH) but has no model here: said so,
    // not "not installed".
    let aider = rows.iter().find(|r| r["name"] == "aider").unwrap();
    assert_eq!(
        (&aider["installed"], &aider["usable"], &aider["state"]),
        (
            &json!(true),
            &json!(false),
            &json!("installed, no model configured")
        ),
        "{aider}"
    );
    let shown = p.run(&["agents"]).stdout;
    assert!(shown.contains("installed, no model configured"), "{shown}");
    // The run records the versions it probed.
    let server = Cli::Claude.mock(vec![
        Cli::Claude.shell("echo hello > hello.txt", 1, 1),
        say("TASK_COMPLETE", 1, 1, 0),
    ]);
    let p = Cli::Claude.project(&server, ONE, "");
    assert_eq!(p.run(&["run", "--quiet"]).code, Some(0));
    let started = journal_events(&p)
        .into_iter()
        .find(|e| e["kind"] == "driver_started")
        .unwrap();
    assert_eq!(started["data"]["agents"]["claude"], "2.1.197 (Claude Code)");
}

#[test]
fn a_200_kib_prompt_reaches_claude() {
    crate::real_cli::long_prompt(
        Cli::Claude,
        vec![
            Cli::Claude.shell("echo hello > hello.txt", 10, 1),
            say("TASK_COMPLETE", 10, 1, 0),
        ],
    );
}

#[test]
fn claude_reviews_the_verified_work_read_only_and_its_findings_reach_the_worker() {
    // The worker and the reviewer are both the real Claude Code; the mock scripts the
    // reviewer's verdicts: a REJECT with a finding, then an APPROVE.
    let cli = crate::real_cli::Cli::Claude;
    let server = cli.mock(vec![
        cli.shell("echo hello > hello.txt", 10, 1),
        say("TASK_COMPLETE", 10, 1, 0),
        say(
            "The file exists but greets nobody.\n- hello.txt:1: the greeting names no one\nVERDICT: REJECT",
            20,
            2,
            0,
        ),
        cli.shell("echo 'hello, Ada' > hello.txt", 10, 1),
        say("TASK_COMPLETE", 10, 1, 0),
        say("It greets Ada.\nVERDICT: APPROVE", 20, 2, 0),
    ]);
    let p = cli.project(
        &server,
        ONE,
        "[review]\nagent = \"claude\"\nwhen = \"always\"\n",
    );
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["tasks"][0]["status"], "done");
    assert_eq!(s["iterations"], 2);
    let verdicts: Vec<String> = journal_events(&p)
        .into_iter()
        .filter(|e| e["kind"] == "review_finished")
        .map(|e| e["data"]["verdict"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(verdicts, ["reject", "approve"]);
    let bodies: Vec<String> = server
        .requests()
        .into_iter()
        .filter(|r| r.step.is_some())
        .map(|r| r.body.to_string())
        .collect();
    // The reviewer was asked with the review's prompt, and could only read.
    let review = bodies
        .iter()
        .find(|b| b.contains("independent reviewer for agentloop"))
        .expect("the reviewer's request");
    assert!(review.contains("+hello"), "the diff: {review}");
    assert!(
        !review.contains("\"name\":\"Bash\""),
        "no Bash tool: {review}"
    );
    // The worker's next turn carries the finding.
    assert!(
        bodies
            .iter()
            .any(|b| b.contains("hello.txt:1: the greeting names no one")
                && !b.contains("independent reviewer for agentloop")),
        "the finding reached the worker: {}",
        p.read(&format!(
            ".agentloop/runs/{}/iterations/0002/prompt.md",
            s["run_id"].as_str().unwrap()
        ))
    );
}
