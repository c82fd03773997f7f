//! The real `gemini` CLI (pinned, from the npm registry) driven by agentloop against the
//! testkit's mock Gemini API, set up as a new user would: `GEMINI_API_KEY` and
//! `GOOGLE_GEMINI_BASE_URL` exported, the auth type in `~/.gemini/settings.json`, and
//! `agentloop.toml` naming only the agent. Its default "auto" routing picks the models;
//! the cost is priced per model from `[prices]`.

use agentloop_testkit::Step;

use crate::real_cli::{Cli, GEMINI_PRICES, journal_events, say, session_ids};

/// Dollars for `tokens` of `model` at the test's price table.
fn price(model: &str, input: u64, cached: u64, output: u64) -> f64 {
    #[derive(serde::Deserialize)]
    struct Table {
        prices: std::collections::BTreeMap<String, agentloop_config::Price>,
    }
    let table: Table = toml::from_str(GEMINI_PRICES).unwrap();
    let Some(p) = table.prices.get(model) else {
        panic!("Gemini routed to {model}, which the test's price table does not name");
    };
    p.cost(&agentloop_ground::values::Usage {
        input_tokens: input,
        cached_input_tokens: cached,
        cache_write_tokens: 0,
        output_tokens: output,
    })
}

#[test]
fn two_tasks_done_through_geminis_own_tools_priced_per_routed_model() {
    let tokens = [
        (1000, 100, 0),
        (1200, 50, 800),
        (2000, 100, 0),
        (2200, 50, 1600),
    ];
    let server = Cli::Gemini.mock_scenario(
        agentloop_testkit::Scenario::new(vec![
            Cli::Gemini.shell("echo hello > hello.txt", 1000, 100),
            Step::Text {
                text: "Created hello.txt.\nTASK_COMPLETE".into(),
                tokens: agentloop_testkit::Tokens {
                    input: 1200,
                    output: 50,
                    cache_read: 800,
                    cache_write: 0,
                },
            },
            Cli::Gemini.shell("echo world > world.txt", 2000, 100),
            say("Done.\n\nTASK_COMPLETE", 2200, 50, 1600),
        ])
        .side_tokens(crate::real_cli::SIDE),
    );
    let mut p = Cli::Gemini.project(&server, crate::real_cli::PLAN, "");
    // As a user runs it: Gemini CLI starting itself again with a larger heap (the
    // other tests save that second start: `Cli::user_env`).
    p.env.retain(|(k, _)| k != "GEMINI_CLI_NO_RELAUNCH");
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.read("world.txt"), "world\n");
    let s = p.status();
    assert_eq!(
        (s["status"].as_str(), s["iterations"].as_u64()),
        (Some("completed"), Some(2))
    );
    // Every token served, its router's calls too.
    let served = server.served();
    assert_eq!(s["tokens"]["input"], served.input);
    assert_eq!(s["tokens"]["cached_input"], served.cache_read);
    assert_eq!(s["tokens"]["output"], served.output);
    assert!(served.input > 6400, "the router's calls were served tokens");
    // Each answer priced at the model the router sent it to, and each of the router's
    // own calls at its model.
    let mut expected = 0.0;
    for r in server.requests() {
        let Some(model) = r
            .path
            .split("/models/")
            .nth(1)
            .filter(|_| r.method == "POST")
            .and_then(|m| m.split(':').next())
        else {
            continue;
        };
        expected += match r.step {
            Some(i) => {
                let (input, output, cached) = tokens[i];
                price(model, input, cached, output)
            }
            None => price(
                model,
                crate::real_cli::SIDE.input,
                0,
                crate::real_cli::SIDE.output,
            ),
        };
    }
    let cost = s["cost_usd"].as_f64().unwrap();
    assert!(
        // `status` gives dollars to the millionth.
        cost > 0.0 && (cost - expected).abs() < 1e-6,
        "cost {cost}, expected {expected}"
    );
    // The session ids are Gemini's own, one per fresh process.
    let ids = session_ids(&p);
    assert_eq!(ids.len(), 2);
    assert!(
        ids.iter().all(|i| i.len() >= 32) && ids[0] != ids[1],
        "{ids:?}"
    );
    let log = std::fs::read_to_string(p.run_dir().join("iterations/0001/agent.log")).unwrap();
    assert!(log.contains(&ids[0]));
    // What it said is in the journal and `log`.
    let events = journal_events(&p);
    let said = events
        .iter()
        .find(|e| e["kind"] == "agent_finished")
        .map(|e| e["data"]["final_message"].clone())
        .unwrap();
    assert_eq!(said, "Created hello.txt.\nTASK_COMPLETE");
    assert!(p.run(&["log"]).stdout.contains("said “TASK_COMPLETE”"));
}

#[test]
fn gemini_rate_limit_waits_then_completes() {
    crate::real_cli::rate_limit_waits(
        Cli::Gemini,
        "RESOURCE_EXHAUSTED",
        "Resource has been exhausted (e.g. check quota).",
    );
}

#[test]
fn a_200_kib_prompt_reaches_gemini_and_an_auth_error_waits_for_a_person() {
    crate::real_cli::auth_error_blocks(
        Cli::Gemini,
        "UNAUTHENTICATED",
        "API key not valid. Please pass a valid API key.",
    );
}
