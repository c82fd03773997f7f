//! The real `aider` (pinned, from PyPI) driven by agentloop against the testkit's mock
//! Chat Completions API, set up as a new user would: `OPENAI_API_BASE` and
//! `OPENAI_API_KEY` exported, and `agentloop.toml` naming the agent and its model.
//! Aider writes its edits in its reply (whole files) and has no tools; it reports
//! tokens, and the price table prices them.

use agentloop_testkit::Step;

use crate::real_cli::{Cli, aider_edit, journal_events};

#[test]
fn two_tasks_done_by_aiders_edits_with_cost_from_the_price_table() {
    let server = Cli::Aider.mock(vec![
        aider_edit("hello.txt", "hello\n", "All done. TASK_COMPLETE", 800, 60),
        aider_edit("world.txt", "world\n", "Done.\n\nTASK_COMPLETE", 900, 40),
    ]);
    let p = Cli::Aider.project(&server, crate::real_cli::PLAN, "");
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.read("world.txt"), "world\n");
    let s = p.status();
    assert_eq!(
        (s["status"].as_str(), s["iterations"].as_u64()),
        (Some("completed"), Some(2))
    );
    assert_eq!(s["tokens"]["input"], 1700);
    assert_eq!(s["tokens"]["output"], 100);
    let served = server.served();
    assert_eq!(
        served.input + served.cache_read,
        1700,
        "every token it sent counted"
    );
    // (1700 × 2 + 100 × 8) / 1e6
    let cost = s["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.0042).abs() < 1e-9, "cost {cost}");
    let events = journal_events(&p);
    let finished: Vec<_> = events
        .iter()
        .filter(|e| e["kind"] == "agent_finished")
        .collect();
    // Its reply is the final message, not the "Applied edit" lines after it.
    assert!(
        finished[0]["data"]["final_message"]
            .as_str()
            .unwrap()
            .ends_with("All done. TASK_COMPLETE"),
        "{}",
        finished[0]["data"]["final_message"]
    );
    // Its own files are not the agent's changes, and not committed.
    for f in &finished {
        let changed: Vec<&str> = f["data"]["changed_files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert!(
            changed.iter().all(|c| !c.starts_with(".aider")),
            "{changed:?}"
        );
    }
    let tracked = p.git_cmd(&["ls-files"]);
    assert!(!tracked.contains(".aider"), "{tracked}");
    assert!(!p.path().join(".gitignore").exists() || !p.read(".gitignore").contains(".aider"));
    // Its chat history is kept beside the iteration, out of the tree.
    assert!(
        p.run_dir()
            .join("iterations/0001/aider.chat.history.md")
            .exists()
    );
}

/// A task with `Scope:` is not broken by Aider's bookkeeping files.
#[test]
fn aiders_own_files_do_not_break_scope() {
    let plan = "# Scoped\n\n## T1: Hello\nScope: hello.txt\nVerify: test -f hello.txt\n\nCreate hello.txt.\n";
    let server = Cli::Aider.mock(vec![aider_edit(
        "hello.txt",
        "hello\n",
        "TASK_COMPLETE",
        10,
        1,
    )]);
    let p = Cli::Aider.project(&server, plan, "");
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.status()["iterations"], 1);
}

/// Aider retries a 429 itself (it says so and backs off); the iteration goes on and
/// no retry of the task is spent.
#[test]
fn aider_retries_a_rate_limit_itself() {
    let server = Cli::Aider.mock(vec![
        Step::Error {
            status: 429,
            kind: "rate_limit_exceeded".into(),
            message: "Rate limit reached for requests. Please try again in 1s.".into(),
            retry_after: Some(1),
        },
        aider_edit("hello.txt", "hello\n", "TASK_COMPLETE", 10, 1),
    ]);
    let p = Cli::Aider.project(
        &server,
        crate::real_cli::ONE,
        "[budgets]\ntask_retries = 1\n",
    );
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.status()["iterations"], 1);
}

#[test]
fn a_200_kib_prompt_reaches_aider_and_an_auth_error_waits_for_a_person() {
    crate::real_cli::auth_error_blocks(
        Cli::Aider,
        "invalid_api_key",
        "Incorrect API key provided: not-a-real-key.",
    );
}
