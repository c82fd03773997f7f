//! The real `codex` CLI (pinned, from the npm registry) driven by agentloop against the
//! testkit's mock OpenAI Responses API. Codex reports tokens; cost comes from the
//! price table in the configuration. The scenarios are shared (`real_cli.rs`).

use crate::real_cli::Cli;

#[test]
fn two_tasks_done_through_codexs_own_tools_with_cost_from_the_price_table() {
    crate::real_cli::two_tasks_priced(Cli::Codex);
}

#[test]
fn a_false_completion_from_codex_is_caught() {
    crate::real_cli::false_completion(Cli::Codex);
}

#[test]
fn codex_rate_limit_waits_then_completes() {
    crate::real_cli::rate_limit_waits(
        Cli::Codex,
        "rate_limit_exceeded",
        "Rate limit reached for requests",
    );
}

#[test]
fn a_200_kib_prompt_reaches_codex_and_an_auth_error_waits_for_a_person() {
    crate::real_cli::auth_error_blocks(
        Cli::Codex,
        "invalid_api_key",
        "Incorrect API key provided.",
    );
}

#[test]
fn codex_stop_now_during_a_stalled_reply() {
    crate::real_cli::stop_now_during_a_stall(Cli::Codex, "codex");
}

#[test]
fn codex_reviews_the_verified_work_in_its_read_only_sandbox_and_an_answer_without_a_verdict_is_a_rejection()
 {
    // The worker and the reviewer are both the real Codex CLI; the mock scripts the
    // reviewer's answers: one with no verdict line (a rejection), then an APPROVE.
    let cli = crate::real_cli::Cli::Codex;
    let server = cli.mock(vec![
        cli.shell("echo hello > hello.txt", 10, 1),
        crate::real_cli::say("TASK_COMPLETE", 10, 1, 0),
        crate::real_cli::say("Looks fine to me.", 20, 2, 0),
        cli.shell("echo 'hello, Ada' > hello.txt", 10, 1),
        crate::real_cli::say("TASK_COMPLETE", 10, 1, 0),
        crate::real_cli::say("Correct.\nVERDICT: APPROVE", 20, 2, 0),
    ]);
    let p = cli.project(
        &server,
        crate::real_cli::ONE,
        "[review]\nagent = \"codex\"\nwhen = \"always\"\n",
    );
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["tasks"][0]["status"], "done");
    assert_eq!(s["iterations"], 2);
    let reviews: Vec<serde_json::Value> = crate::real_cli::journal_events(&p)
        .into_iter()
        .filter(|e| e["kind"] == "review_finished")
        .map(|e| e["data"].clone())
        .collect();
    assert_eq!(reviews.len(), 2, "{reviews:?}");
    assert_eq!(reviews[0]["verdict"], "reject");
    assert_eq!(reviews[0]["unparsable"], true);
    assert_eq!(reviews[1]["verdict"], "approve");
}

/// Codex reports tokens and no cost: with no price for its model the run says, once,
/// that the cost budget cannot guard it.
#[test]
fn codex_without_a_price_is_said_to_escape_the_cost_budget_once() {
    use crate::real_cli::{ONE, say};
    let cli = Cli::Codex;
    let server = cli.mock(vec![
        say("All done.\nTASK_COMPLETE", 50, 5, 0),
        cli.shell("echo hello > hello.txt", 60, 6),
        say("Now it exists.\nTASK_COMPLETE", 70, 7, 0),
    ]);
    let p = cli.project(&server, ONE, "");
    let config = p.read("agentloop.toml");
    let unpriced = config
        .split("[prices.mock-model]")
        .next()
        .unwrap()
        .to_string();
    p.write("agentloop.toml", unpriced);
    p.commit("no price for the model");
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(
        r.stderr.matches("reported no cost").count(),
        1,
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("the $25.00 cost budget cannot guard this run"),
        "{}",
        r.stderr
    );
}
