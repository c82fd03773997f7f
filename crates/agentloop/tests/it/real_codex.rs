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
fn codex_auth_error_waits_for_a_person() {
    crate::real_cli::auth_error_blocks(Cli::Codex, "invalid_api_key", "Incorrect API key provided");
}

#[test]
fn codex_stop_now_during_a_stalled_reply() {
    crate::real_cli::stop_now_during_a_stall(Cli::Codex, "codex");
}

#[test]
fn a_200_kib_prompt_reaches_codex() {
    crate::real_cli::long_prompt(
        Cli::Codex,
        vec![
            Cli::Codex.shell("echo hello > hello.txt", 10, 1),
            crate::real_cli::say("TASK_COMPLETE", 10, 1, 0),
        ],
    );
}
