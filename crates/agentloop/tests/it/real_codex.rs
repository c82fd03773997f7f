//! The real `codex` CLI (pinned, from the npm registry) driven by agentloop against the
//! testkit's mock OpenAI Responses API. Codex reports tokens; cost comes from the
//! price table in the configuration.

use agentloop_testkit::{MockServer, Step};

use crate::real_cli::{Cli, ONE, PLAN, say};
use crate::support::Project;

fn project(server: &MockServer, plan: &str) -> Project {
    Cli::Codex.project(server, plan, "")
}

fn exec(cmd: &str, input: u64, output: u64) -> Step {
    Cli::Codex.shell(cmd, input, output)
}

#[test]
fn two_tasks_done_through_codexs_own_tools_with_cost_from_the_price_table() {
    let server = Cli::Codex.mock(vec![
        exec("echo hello > hello.txt", 1000, 100),
        say("Created hello.txt.\nTASK_COMPLETE", 1200, 50, 800),
        exec("echo world > world.txt", 2000, 100),
        say("Done.\n\nTASK_COMPLETE", 2200, 50, 1600),
    ]);
    let p = project(&server, PLAN);
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.read("world.txt"), "world\n");
    let s = p.status();
    assert_eq!(s["status"], "completed");
    assert_eq!(s["iterations"], 2);
    assert_eq!(s["tokens"]["input"], 6400);
    assert_eq!(s["tokens"]["cached_input"], 2400);
    assert_eq!(s["tokens"]["output"], 300);
    // (6400 × 2 + 2400 × 0.5 + 300 × 8) / 1e6
    let cost = s["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.0164).abs() < 1e-9, "cost {cost}");
    assert_eq!(server.steps_used(), 4);
}

#[test]
fn a_false_completion_from_codex_is_caught() {
    let server = Cli::Codex.mock(vec![
        say("TASK_COMPLETE", 10, 1, 0),
        exec("echo hello > hello.txt", 10, 1),
        say("TASK_COMPLETE", 10, 1, 0),
    ]);
    let p = project(
        &server,
        "# One\n\n## T1: Hello\nVerify: test -f hello.txt\n",
    );
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("(the agent claimed the task was complete)"),
        "{}",
        r.stderr
    );
    assert_eq!(p.status()["iterations"], 2);
}

#[test]
fn codex_rate_limit_waits_then_completes() {
    let server = Cli::Codex.mock(vec![
        Step::Error {
            status: 429,
            kind: "rate_limit_exceeded".into(),
            message: "Rate limit reached for requests".into(),
            retry_after: Some(2),
        },
        exec("echo hello > hello.txt", 10, 1),
        say("TASK_COMPLETE", 10, 1, 0),
    ]);
    let p = project(&server, ONE);
    let toml = p.read("agentloop.toml");
    p.write(
        "agentloop.toml",
        format!("{toml}\n[limits]\nwait = \"2s\"\n\n[budgets]\ntask_retries = 1\n"),
    );
    p.commit("limits");
    let t = std::time::Instant::now();
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(t.elapsed() >= std::time::Duration::from_secs(2));
    let log = p.run(&["log"]).stdout;
    assert!(
        log.contains("limit_hit") && log.contains("RateLimit"),
        "{log}"
    );
}

#[test]
fn codex_auth_error_waits_for_a_person() {
    let server = Cli::Codex.mock(vec![Step::Error {
        status: 401,
        kind: "invalid_api_key".into(),
        message: "Incorrect API key provided".into(),
        retry_after: None,
    }]);
    let p = project(&server, ONE);
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["status"], "blocked");
    assert!(
        s["tasks"][0]["blocked"]
            .as_str()
            .unwrap()
            .starts_with("the agent could not authenticate: "),
        "{s}"
    );
}

#[test]
fn codex_stop_now_during_a_stalled_reply() {
    let server = Cli::Codex.mock(vec![Step::Stall { seconds: 60 }]);
    let p = project(&server, ONE);
    crate::support::stop_now_during_a_model_call(&p, &server, "codex");
}
