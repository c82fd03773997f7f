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
fn a_200_kib_prompt_reaches_claude_and_an_auth_error_waits_for_a_person_with_a_clear_message() {
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
    for (name, version) in [
        ("qwen", "0.24.4"),
        ("droid", "0.215.0"),
        ("cline", "3.0.65"),
    ] {
        let row = rows.iter().find(|r| r["name"] == name).unwrap();
        assert_eq!(
            (&row["installed"], &row["version"]),
            (&json!(true), &json!(version))
        );
    }
    // The table says the same. `agents` asks every CLI on the PATH again, so this one
    // sees only Aider's (a start of some of the others costs a second or more of CPU).
    let only = p.path().join(".git/only-aider");
    std::fs::create_dir_all(&only).unwrap();
    let aider = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join("aider"))
        .find(|f| f.is_file())
        .expect("aider on the PATH");
    std::os::unix::fs::symlink(aider, only.join("aider")).unwrap();
    let shown = p
        .cmd(&["agents"])
        .env("PATH", format!("{}:/usr/bin:/bin", only.display()))
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
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
fn claude_reviews_the_verified_work_read_only_and_its_findings_reach_the_worker() {
    // The worker and the reviewer are both the real Claude Code.
    crate::real_cli::reviewed_read_only(Cli::Claude, "claude", &["\"name\":\"Bash\""]);
}
