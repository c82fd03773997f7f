//! The real Factory Droid (`droid`, pinned, from the npm registry) driven by agentloop
//! against the testkit's mock Chat Completions API, set up as a new user with their own
//! model would: a custom model (`generic-chat-completion-api`) in
//! `~/.factory/settings.json`, no Factory login, `FACTORY_AIRGAP_ENABLED` exported, and
//! `agentloop.toml` naming the agent, its model and the model's price.

use agentloop_testkit::Step;

use crate::real_cli::{Cli, say};

/// Each iteration's session and final message recorded too.
#[test]
fn two_tasks_done_through_droids_own_tools_with_cost_from_the_price_table() {
    let p = crate::real_cli::two_tasks_priced(Cli::Droid);
    let ids = crate::real_cli::sessions_recorded(&p);
    assert!(ids.iter().all(|id| id.len() == 36), "{ids:?}");
}

#[test]
fn a_false_claim_to_droid_is_caught_and_the_next_process_told() {
    crate::real_cli::false_completion(Cli::Droid);
}

/// Droid waits out a 429 itself (at least 5 s, whatever `retry-after` says) and goes
/// on: one iteration, no retry of the task spent.
#[test]
fn droid_waits_out_a_rate_limit_itself() {
    let server = Cli::Droid.mock(vec![
        Step::Error {
            status: 429,
            kind: "rate_limit_exceeded".into(),
            message: "Rate limit reached for requests. Please try again in 1s.".into(),
            retry_after: Some(1),
        },
        Cli::Droid.shell("echo hello > hello.txt", 10, 1),
        say("TASK_COMPLETE", 10, 1, 0),
    ]);
    let p = Cli::Droid.project(
        &server,
        crate::real_cli::ONE,
        "[budgets]\ntask_retries = 1\n",
    );
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(server.steps_used(), 3);
    assert_eq!(p.status()["iterations"], 1);
}

#[test]
fn a_200_kib_prompt_reaches_droid_and_an_auth_error_waits_for_a_person() {
    crate::real_cli::auth_error_blocks(
        Cli::Droid,
        "invalid_api_key",
        "Incorrect API key provided: not-a-real-key.",
    );
}

/// The reviewer is offered only Droid's reading tools: with no `--auto` alone it would
/// still run a command its model rates "low" risk.
#[test]
fn droid_reviews_the_verified_work_with_its_reading_tools_only() {
    crate::real_cli::reviewed_read_only(
        Cli::Droid,
        "droid",
        &[
            "\"name\":\"Execute\"",
            "\"name\":\"Create\"",
            "\"name\":\"Edit\"",
        ],
    );
}
