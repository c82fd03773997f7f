//! The real `opencode` CLI (pinned, from the npm registry) driven by agentloop against
//! the testkit's mock Chat Completions API, set up as a new user would: an
//! openai-compatible provider in their `opencode.json` (with the model's prices), its
//! key exported, and `agentloop.toml` naming only the agent. OpenCode prices what it
//! spends and waits out rate limits itself.

use agentloop_testkit::Step;

use crate::real_cli::{Cli, journal_events, say, session_ids};

#[test]
fn two_tasks_done_through_opencodes_own_tools_with_its_cost() {
    let s = crate::real_cli::two_tasks(
        Cli::OpenCode,
        [
            (1000, 100, 0),
            (1200, 50, 800),
            (2000, 100, 0),
            (2200, 50, 1600),
        ],
    );
    assert_eq!(s["tokens"]["input"], 6400);
    assert_eq!(s["tokens"]["cached_input"], 2400);
    assert_eq!(s["tokens"]["output"], 300);
    // At the prices in opencode.json: (6400 × 2 + 2400 × 0.5 + 300 × 8) / 1e6
    let cost = s["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.0164).abs() < 1e-9, "cost {cost}");
}

#[test]
fn opencode_session_ids_and_final_message_are_recorded() {
    let server = Cli::OpenCode.mock(vec![
        Cli::OpenCode.shell("echo hello > hello.txt", 10, 1),
        say("Made it.\nTASK_COMPLETE", 10, 1, 0),
    ]);
    let p = Cli::OpenCode.project(&server, crate::real_cli::ONE, "");
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let ids = session_ids(&p);
    assert_eq!(ids.len(), 1);
    assert!(ids[0].starts_with("ses_"), "{ids:?}");
    let said = journal_events(&p)
        .into_iter()
        .find(|e| e["kind"] == "agent_finished")
        .map(|e| e["data"]["final_message"].clone())
        .unwrap();
    assert_eq!(said, "Made it.\nTASK_COMPLETE");
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
fn opencode_auth_error_waits_for_a_person() {
    crate::real_cli::auth_error_blocks(
        Cli::OpenCode,
        "invalid_api_key",
        "Incorrect API key provided: not-a-real-key.",
    );
}

#[test]
fn a_200_kib_prompt_reaches_opencode() {
    crate::real_cli::long_prompt(
        Cli::OpenCode,
        vec![
            Cli::OpenCode.shell("echo hello > hello.txt", 10, 1),
            say("TASK_COMPLETE", 10, 1, 0),
        ],
    );
}
