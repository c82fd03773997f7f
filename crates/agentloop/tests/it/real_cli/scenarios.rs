//! The scenarios every real CLI goes through, in each CLI's own terms.

use agentloop_testkit::{MockServer, Scenario, Step, Tokens};
use serde_json::json;

use super::{Cli, ONE, PLAN, journal_events, say};
use crate::support::Project;

// The scenarios every real CLI goes through; each CLI's file calls them and adds what
// only that CLI does (its token figures, its price table, its error texts).

/// [`two_tasks`] with the token figures the price table turns into $0.0164 (the main
/// conversation's 6,400 fresh, 2,400 cached and 300 output tokens at $2 / $0.5 / $8 per
/// million), plus what the CLI's side calls were served, priced alike.
pub fn two_tasks_priced(cli: Cli) -> Project {
    let (p, s) = two_tasks(
        cli,
        [
            (1000, 100, 0),
            (1200, 50, 800),
            (2000, 100, 0),
            (2200, 50, 1600),
        ],
    );
    let side = |key: &str| s["tokens"][key].as_u64().unwrap();
    let (input, cached, output) = (side("input"), side("cached_input"), side("output"));
    assert!(
        input >= 6400 && cached >= 2400 && output >= 300,
        "{}",
        s["tokens"]
    );
    let cost = s["cost_usd"].as_f64().unwrap();
    let want = (input as f64 * 2.0 + cached as f64 * 0.5 + output as f64 * 8.0) / 1e6;
    // `status` gives dollars to the millionth.
    assert!((cost - want).abs() < 1e-6, "cost {cost}, want {want}");
    p
}

/// What each side call's reply reports in [`two_tasks`]: a CLI's titles, summaries and
/// routing are spending too.
pub const SIDE: Tokens = Tokens {
    input: 700,
    output: 7,
    cache_read: 0,
    cache_write: 0,
};

/// After `two_tasks`: each agent's session id, the last one where a person looks for
/// it, and the final messages recorded as the model said them. Returns the session
/// ids.
pub fn sessions_recorded(p: &Project) -> Vec<String> {
    let said = journal_events(p)
        .into_iter()
        .filter(|e| e["kind"] == "agent_finished")
        .map(|e| e["data"]["final_message"].clone())
        .collect::<Vec<_>>();
    assert_eq!(
        said,
        [
            "Created hello.txt.\nTASK_COMPLETE",
            "Done.\n\nTASK_COMPLETE"
        ]
    );
    let ids = session_ids(p);
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert_ne!(ids[0], ids[1], "a fresh session per iteration");
    let last = &ids[1];
    assert_eq!(p.status()["agent_session"], last.as_str());
    let shown = p.run(&["status"]).stdout;
    assert!(
        shown.contains(&format!("session: {last} (the last agent's")),
        "{shown}"
    );
    ids
}

/// Two tasks done with the CLI's own shell tool; returns the project and
/// `status --json`.
pub fn two_tasks(cli: Cli, tokens: [(u64, u64, u64); 4]) -> (Project, serde_json::Value) {
    let [a, b, c, d] = tokens;
    let server = cli.mock_scenario(
        Scenario::new(vec![
            cli.shell("echo hello > hello.txt", a.0, a.1),
            say("Created hello.txt.\nTASK_COMPLETE", b.0, b.1, b.2),
            cli.shell("echo world > world.txt", c.0, c.1),
            say("Done.\n\nTASK_COMPLETE", d.0, d.1, d.2),
        ])
        .side_tokens(SIDE),
    );
    let p = cli.project(&server, PLAN, "");
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.read("world.txt"), "world\n");
    assert_eq!(server.steps_used(), 4);
    let s = p.status();
    assert_eq!(
        (s["status"].as_str(), s["iterations"].as_u64()),
        (Some("completed"), Some(2))
    );
    // Every token the server sent is in the run's count: the side calls' too.
    let served = server.served();
    assert_eq!(
        (
            &s["tokens"]["input"],
            &s["tokens"]["cached_input"],
            &s["tokens"]["output"]
        ),
        (
            &json!(served.input),
            &json!(served.cache_read),
            &json!(served.output)
        ),
        "served {served:?} in {} side calls",
        server
            .requests()
            .iter()
            .filter(|r| r.step.is_none())
            .count()
    );
    (p, s)
}

/// A claim of completion with the work not done: caught by verification, retried,
/// and the second process is told what failed.
pub fn false_completion(cli: Cli) {
    let server = cli.mock(vec![
        say("All done, tests pass.\nTASK_COMPLETE", 50, 5, 0),
        cli.shell("echo hello > hello.txt", 60, 6),
        say("Now it really exists.\nTASK_COMPLETE", 70, 7, 0),
    ]);
    let p = cli.project(&server, ONE, "");
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains("verification failed: `test -f hello.txt` exited 1 (the agent claimed the task was complete)"),
        "{}",
        r.stderr
    );
    let s = p.status();
    assert_eq!(
        (s["status"].as_str(), s["iterations"].as_u64()),
        (Some("completed"), Some(2))
    );
    let second = server
        .requests()
        .into_iter()
        .find(|r| r.step == Some(1))
        .expect("a second main request");
    assert!(
        second.body.to_string().contains("Last attempt failed"),
        "{}",
        second.body
    );
}

/// A 429 with a retry-after: the run waits for it without spending the task's only
/// retry (attempts 1, 1).
pub fn rate_limit_waits(cli: Cli, kind: &str, message: &str) {
    let server = cli.mock(vec![
        Step::Error {
            status: 429,
            kind: kind.into(),
            message: message.into(),
            retry_after: Some(2),
        },
        cli.shell("echo hello > hello.txt", 60, 6),
        say("TASK_COMPLETE", 70, 7, 0),
    ]);
    let p = cli.project(
        &server,
        ONE,
        "[limits]\nwait = \"2s\"\n\n[budgets]\ntask_retries = 1\n",
    );
    let t = std::time::Instant::now();
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        t.elapsed() >= std::time::Duration::from_secs(2),
        "it waited for the reset"
    );
    assert!(r.stderr.contains("waiting until"), "{}", r.stderr);
    waited_for_a_rate_limit_without_a_retry(&p);
}

/// The run hit a rate limit, waited it out, and ran the task again as the same
/// attempt.
fn waited_for_a_rate_limit_without_a_retry(p: &Project) {
    let events = journal_events(p);
    let limit = events
        .iter()
        .find(|e| e["kind"] == "limit_hit")
        .expect("a limit_hit event");
    assert_eq!(limit["data"]["kind"], "rate_limit");
    assert!(events.iter().any(|e| e["kind"] == "limit_wait_over"));
    let attempts: Vec<u64> = events
        .iter()
        .filter(|e| e["kind"] == "iteration_started")
        .map(|e| e["data"]["attempt"].as_u64().unwrap())
        .collect();
    assert_eq!(attempts, vec![1, 1]);
}

/// A 401 on a prompt of 200 KiB ([`long_plan`]): the whole prompt reached the model
/// ([`the_whole_prompt_reached`]), and the task waits for a person with what to fix;
/// no retry is burnt. One CLI start for both: a start of some of these CLIs costs
/// seconds of CPU.
pub fn auth_error_blocks(cli: Cli, kind: &str, message: &str) {
    let server = cli.mock(vec![Step::Error {
        status: 401,
        kind: kind.into(),
        message: message.into(),
        retry_after: None,
    }]);
    let p = cli.project(&server, &long_plan(), "");
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    the_whole_prompt_reached(&server);
    let s = p.status();
    assert_eq!(s["status"], "blocked");
    let why = s["tasks"][0]["blocked"].as_str().unwrap();
    assert!(
        why.starts_with("the agent could not authenticate: "),
        "{why}"
    );
    assert!(
        why.contains("Fix the API key or log the CLI in, then `agentloop retry T1`"),
        "{why}"
    );
    assert!(!why.contains(".."), "one period at a time: {why}");
    assert_eq!(s["iterations"], 1, "no retries burnt on a bad key");
}

/// A plan of one task (make hello.txt) whose description is 200 KiB long: its prompt
/// must go to the CLI by stdin or file, never as one argument (the kernel refuses
/// those over 128 KiB).
pub fn long_plan() -> String {
    let mut body = String::new();
    let mut n = 0;
    while body.len() < 200 * 1024 {
        n += 1;
        body.push_str(&format!(
            "Context line {n:05}: the file hello.txt must exist when this task is done.\n"
        ));
    }
    body.push_str("END-OF-THE-LONG-PROMPT\n");
    format!("# Long\n\n## T1: Hello\nVerify: test -f hello.txt\n\n{body}")
}

/// The first model call of a [`long_plan`] run carried its prompt whole.
pub fn the_whole_prompt_reached(server: &MockServer) {
    let first = server
        .requests()
        .into_iter()
        .find(|r| r.step == Some(0))
        .expect("the first model call");
    let text = first.body.to_string();
    assert!(
        text.contains("Context line 00001") && text.contains("END-OF-THE-LONG-PROMPT"),
        "the whole prompt reached the model"
    );
}

/// `stop --now` while the CLI waits on a stalled model call.
pub fn stop_now_during_a_stall(cli: Cli, name: &str) {
    let server = cli.mock(vec![Step::Stall { seconds: 60 }]);
    let p = cli.project(&server, ONE, "");
    crate::support::stop_now_during_a_model_call(&p, &server, name);
}

/// The iteration's session id in the journal is the one the CLI printed.
pub fn session_ids(p: &Project) -> Vec<String> {
    journal_events(p)
        .into_iter()
        .filter(|e| e["kind"] == "agent_finished")
        .map(|e| {
            e["data"]["session_id"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

/// The worker and the reviewer both `cli` (named `name`); the mock scripts the
/// reviewer's verdicts: a REJECT with a finding, then an APPROVE. The reviewer's
/// requests offer none of the tools in `forbidden` (as they appear in a request).
pub fn reviewed_read_only(cli: Cli, name: &str, forbidden: &[&str]) {
    let server = cli.mock(vec![
        cli.shell("echo hello > hello.txt", 10, 1),
        say("TASK_COMPLETE", 10, 1, 0),
        say(
            "The file exists but greets nobody.\n- hello.txt:1: the greeting names no one\nVERDICT: REJECT",
            20,
            2,
            0,
        ),
        cli.shell("echo 'hello, Ada' > hello.txt", 10, 1),
        say("TASK_COMPLETE", 10, 1, 0),
        say("It greets Ada.\nVERDICT: APPROVE", 20, 2, 0),
    ]);
    let p = cli.project(
        &server,
        ONE,
        &format!("[review]\nagent = \"{name}\"\nwhen = \"always\"\n"),
    );
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["tasks"][0]["status"], "done");
    assert_eq!(s["iterations"], 2);
    let verdicts: Vec<String> = journal_events(&p)
        .into_iter()
        .filter(|e| e["kind"] == "review_finished")
        .map(|e| e["data"]["verdict"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(verdicts, ["reject", "approve"]);
    let bodies: Vec<String> = server
        .requests()
        .into_iter()
        .filter(|r| r.step.is_some())
        .map(|r| r.body.to_string())
        .collect();
    // The reviewer was asked with the review's prompt, and could only read.
    let review = bodies
        .iter()
        .find(|b| b.contains("independent reviewer for agentloop"))
        .expect("the reviewer's request");
    assert!(review.contains("+hello"), "the diff: {review}");
    for tool in forbidden {
        assert!(!review.contains(tool), "no {tool}: {review}");
    }
    // The worker's next turn carries the finding.
    assert!(
        bodies
            .iter()
            .any(|b| b.contains("hello.txt:1: the greeting names no one")
                && !b.contains("independent reviewer for agentloop")),
        "the finding reached the worker: {}",
        p.read(&format!(
            ".agentloop/runs/{}/iterations/0002/prompt.md",
            s["run_id"].as_str().unwrap()
        ))
    );
}

/// A 429 the CLI retries `tries` times itself (honouring `retry-after`) before it gives
/// up: the run waits as the message says ("try again in 1s") and goes on without
/// spending the task's retry (attempts 1, 1). `adjust` changes the project first.
pub fn rate_limit_after_its_own_retries(cli: Cli, tries: usize, adjust: impl FnOnce(&mut Project)) {
    let limited = || Step::Error {
        status: 429,
        kind: "rate_limit_exceeded".into(),
        message: "Rate limit reached for requests. Please try again in 1s.".into(),
        retry_after: Some(1),
    };
    let mut steps: Vec<Step> = (0..tries).map(|_| limited()).collect();
    steps.push(cli.shell("echo hello > hello.txt", 10, 1));
    steps.push(say("TASK_COMPLETE", 10, 1, 0));
    let server = cli.mock(steps);
    let mut p = cli.project(
        &server,
        ONE,
        "[limits]\nwait = \"1s\"\n\n[budgets]\ntask_retries = 1\n",
    );
    adjust(&mut p);
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(server.steps_used(), tries + 2);
    waited_for_a_rate_limit_without_a_retry(&p);
}
