//! The real `opencode` CLI (pinned, from the npm registry) driven by agentloop against
//! the testkit's mock Chat Completions API, set up as a new user would: an
//! openai-compatible provider in their `opencode.json` (with the model's prices), its
//! key exported, and `agentloop.toml` naming only the agent. OpenCode prices what it
//! spends and waits out rate limits itself.

use agentloop_testkit::Step;

use crate::real_cli::{Cli, say};

/// At the prices in opencode.json, which OpenCode applies itself; each iteration's
/// session and final message recorded.
#[test]
fn two_tasks_done_through_opencodes_own_tools_with_its_cost_and_sessions() {
    let p = crate::real_cli::two_tasks_priced(Cli::OpenCode);
    let ids = crate::real_cli::sessions_recorded(&p);
    assert!(ids.iter().all(|id| id.starts_with("ses_")), "{ids:?}");
}

/// OpenCode honours `retry-after` itself: the iteration waits inside it and goes on;
/// no retry of the task is spent.
#[test]
fn opencode_waits_out_a_rate_limit_itself() {
    let limited = || Step::Error {
        status: 429,
        kind: "rate_limit_exceeded".into(),
        message: "Rate limit reached for requests. Please try again in 2s.".into(),
        retry_after: Some(2),
    };
    let server = Cli::OpenCode.mock(vec![
        limited(),
        Cli::OpenCode.shell("echo hello > hello.txt", 10, 1),
        say("TASK_COMPLETE", 10, 1, 0),
    ]);
    let p = Cli::OpenCode.project(
        &server,
        crate::real_cli::ONE,
        "[budgets]\ntask_retries = 1\n",
    );
    let t = std::time::Instant::now();
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        t.elapsed() >= std::time::Duration::from_secs(2),
        "it waited"
    );
    assert_eq!(p.status()["iterations"], 1);
}

#[test]
fn a_200_kib_prompt_reaches_opencode_and_an_auth_error_waits_for_a_person() {
    crate::real_cli::auth_error_blocks(
        Cli::OpenCode,
        "invalid_api_key",
        "Incorrect API key provided: not-a-real-key.",
    );
}
