//! The real GitHub Copilot CLI (`@github/copilot`, pinned, from the npm registry)
//! driven by agentloop against the testkit's mock Chat Completions API through its
//! custom-provider mode (`COPILOT_PROVIDER_BASE_URL`, `COPILOT_OFFLINE=true`: no GitHub
//! account), set up as a new user would: the variables exported, `agentloop.toml`
//! naming the agent and the model's price. Its tokens come from its usage file.

use agentloop_testkit::Step;

use crate::real_cli::Cli;

/// Each iteration's session and final message recorded too.
#[test]
fn two_tasks_done_through_copilots_own_tools_with_cost_from_the_price_table() {
    let p = crate::real_cli::two_tasks_priced(Cli::Copilot);
    let ids = crate::real_cli::sessions_recorded(&p);
    assert!(ids.iter().all(|id| id.len() == 36), "{ids:?}");
}

/// Copilot retries a 429 five times itself (honouring `retry-after`), then gives up;
/// the run waits as the message says and goes on without spending a retry.
#[test]
fn copilot_rate_limit_waits_then_completes() {
    crate::real_cli::rate_limit_after_its_own_retries(Cli::Copilot, 6, |_| {});
}

#[test]
fn a_200_kib_prompt_reaches_copilot_and_an_auth_error_waits_for_a_person() {
    // It retries a 401 twice before it gives up.
    let server = Cli::Copilot.mock(
        (0..3)
            .map(|_| Step::Error {
                status: 401,
                kind: "invalid_api_key".into(),
                message: "Incorrect API key provided: not-a-real-key.".into(),
                retry_after: None,
            })
            .collect(),
    );
    let p = Cli::Copilot.project(&server, &crate::real_cli::long_plan(), "");
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    crate::real_cli::the_whole_prompt_reached(&server);
    let s = p.status();
    assert_eq!(s["status"], "blocked");
    let why = s["tasks"][0]["blocked"].as_str().unwrap();
    assert!(
        why.starts_with("the agent could not authenticate: "),
        "{why}"
    );
    assert!(why.contains("COPILOT_PROVIDER_API_KEY"), "{why}");
    assert_eq!(s["iterations"], 1);
}
