//! `agentloop mcp` used by the real `claude -p --mcp-config` against the mock: the
//! model calls agentloop's tools (the current task, a structured completion), every
//! call is journaled, and verification still decides.

use agentloop_testkit::Step;
use serde_json::json;

use crate::real_cli::{Cli, ONE, journal_events, say};
use crate::support::BIN;

fn mcp_tool(name: &str, input: serde_json::Value) -> Step {
    Step::Tool {
        name: format!("mcp__agentloop__{name}"),
        input,
        tokens: agentloop_testkit::Tokens {
            input: 10,
            output: 1,
            ..Default::default()
        },
    }
}

/// Claude with agentloop's MCP server and its tools allowed.
fn project(server: &agentloop_testkit::MockServer) -> crate::support::Project {
    let p = Cli::Claude.project(server, ONE, "");
    let config = p.path().join(".git/mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"agentloop": {"command": BIN, "args": ["mcp"]}}}).to_string(),
    )
    .unwrap();
    let tools = [
        "Bash",
        "Write",
        "mcp__agentloop__current_task",
        "mcp__agentloop__progress",
        "mcp__agentloop__report_complete",
        "mcp__agentloop__report_blocked",
        "mcp__agentloop__report_learning",
    ];
    let table = format!(
        "allowed_tools = {}\nargs = [\"--mcp-config\", \"{}\", \"--strict-mcp-config\"]\n\n[agents.claude.env]",
        json!(tools),
        config.display()
    );
    p.write(
        "agentloop.toml",
        p.read("agentloop.toml")
            .replace("[agents.claude.env]", &table),
    );
    p.commit("agentloop's MCP server");
    p
}

#[test]
fn a_structured_completion_through_mcp_is_journaled_and_verified() {
    structured_completion(&["run"]);
}

/// In a sandbox the server the agent starts cannot read the journal's key (hidden with
/// agentloop's state directory): it still shows the task and takes the reports.
#[test]
fn the_mcp_server_works_inside_the_sandbox() {
    structured_completion(&["run", "--no-wait", "--sandbox", "workspace"]);
}

fn structured_completion(run: &[&str]) {
    let server = Cli::Claude.mock(vec![
        mcp_tool("current_task", json!({})),
        Cli::Claude.shell("echo hello > hello.txt", 10, 1),
        mcp_tool(
            "report_learning",
            json!({"learning": "files go at the root"}),
        ),
        mcp_tool("report_complete", json!({"summary": "made hello.txt"})),
        // No text marker: the report is the claim.
        say("Done.", 10, 1, 0),
    ]);
    let p = project(&server);
    let r = p.run(run);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let s = p.status();
    // (Once, under CI's load, with the agent sandboxed: two iterations. What the
    // first one said is kept in the message, to tell why next time.)
    assert_eq!(
        (s["status"].as_str(), s["iterations"].as_u64()),
        (Some("completed"), Some(1)),
        "{}\n{s:#}",
        r.stderr
    );
    // The task, with the command that verifies it, reached the model as a tool result.
    let after = server
        .requests()
        .into_iter()
        .find(|r| r.step == Some(1))
        .unwrap();
    let body = after.body.to_string();
    assert!(
        body.contains("test -f hello.txt") && body.contains("\\\"id\\\":\\\"T1\\\""),
        "{body}"
    );
    // On its first attempt it is told attempt 1 (as `status` counts it), with the bound.
    assert!(
        body.contains("\\\"attempt\\\":1,\\\"attempt_at_most\\\":"),
        "{body}"
    );
    let finished = journal_events(&p)
        .into_iter()
        .find(|e| e["kind"] == "agent_finished")
        .unwrap();
    let calls: Vec<&str> = finished["data"]["mcp_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["tool"].as_str().unwrap())
        .collect();
    assert_eq!(
        calls,
        ["current_task", "report_learning", "report_complete"]
    );
    assert_eq!(finished["data"]["signals"]["marker"], "mcp:report_complete");
    assert_eq!(
        finished["data"]["signals"]["learnings"][0],
        "files go at the root"
    );
}

#[test]
fn a_completion_reported_through_mcp_is_still_verified() {
    let server = Cli::Claude.mock(vec![
        // A claim with nothing done: verification fails, the task is retried.
        mcp_tool("report_complete", json!({"summary": "all done"})),
        say("Done.", 10, 1, 0),
        Cli::Claude.shell("echo hello > hello.txt", 10, 1),
        mcp_tool("report_complete", json!({"summary": "now it exists"})),
        say("Done.", 10, 1, 0),
    ]);
    let p = project(&server);
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains("verification failed: `test -f hello.txt` exited 1 (the agent claimed the task was complete)"),
        "{}",
        r.stderr
    );
    assert_eq!(p.status()["iterations"], 2);
}

/// Reports count only for the iteration they were made in: one an agent plants for a
/// later iteration is removed when that iteration begins.
#[test]
fn a_report_planted_for_a_later_iteration_does_not_count() {
    let p = crate::support::scripted(
        "# One\n\n## T1: A\nVerify: test -f a.txt\n",
        r#"if [ "$n" = 1 ]; then
  next="$AGENTLOOP_RUN_DIR/iterations/$(printf %04d $((AGENTLOOP_ITERATION + 1)))"
  mkdir -p "$next"
  echo '{"tool":"report_complete","text":"planted"}' > "$next/reports.jsonl"
  echo "working on it"
else
  touch a.txt
  echo "made a.txt, not claiming yet"
fi
"#,
    );
    let r = p.run(&["run", "--quiet", "--max-iterations", "2"]);
    assert_ne!(r.code, Some(0), "{}", r.stderr);
    let finished: Vec<serde_json::Value> = journal_events(&p)
        .into_iter()
        .filter(|e| e["kind"] == "agent_finished")
        .collect();
    assert_eq!(finished.len(), 2);
    assert!(
        finished[1]["data"].get("mcp_calls").is_none(),
        "{}",
        finished[1]
    );
    assert_eq!(finished[1]["data"]["signals"]["complete"], false);
}
