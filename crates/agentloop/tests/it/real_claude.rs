//! The real `claude` CLI (pinned, from the npm registry) driven by agentloop against
//! the testkit's mock Anthropic API. `scripts/test` installs it and puts it on PATH.

use agentloop_testkit::{Api, MockServer, Scenario, Step, Tokens};
use serde_json::json;

use crate::support::Project;

pub fn claude_config(server: &MockServer, home: &std::path::Path) -> String {
    format!(
        r#"[run]
agent = "claude"

[agents.claude]
kind = "claude"
model = "claude-sonnet-4-5"
timeout = "120s"

[agents.claude.env]
ANTHROPIC_BASE_URL = "{}"
ANTHROPIC_API_KEY = "sk-test-not-a-real-key"
CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1"
CLAUDE_CODE_MAX_RETRIES = "0"
CLAUDE_CONFIG_DIR = "{}"
DISABLE_AUTOUPDATER = "1"
"#,
        server.url(),
        home.display()
    )
}

fn bash(cmd: &str, input: u64, output: u64) -> Step {
    Step::Tool {
        name: "Bash".into(),
        input: json!({"command": cmd, "description": "run"}),
        tokens: Tokens {
            input,
            output,
            ..Tokens::default()
        },
    }
}

fn say(text: &str, input: u64, output: u64, cache_read: u64) -> Step {
    Step::Text {
        text: text.into(),
        tokens: Tokens {
            input,
            output,
            cache_read,
            cache_write: 0,
        },
    }
}

const PLAN: &str = "# Files\n\n## T1: Hello\nVerify: test -f hello.txt\n\nCreate hello.txt.\n\n## T2: World\nDepends: T1\nVerify: grep -q world world.txt\n\nCreate world.txt containing world.\n";

#[test]
fn two_tasks_done_through_claudes_own_tools() {
    let server = MockServer::start(
        Api::Anthropic,
        Scenario::new(vec![
            bash("echo hello > hello.txt", 100, 10),
            say("Created hello.txt.\nTASK_COMPLETE", 120, 8, 50),
            bash("echo world > world.txt", 200, 12),
            say("Done.\n\nTASK_COMPLETE", 220, 9, 70),
        ]),
    );
    let p = Project::git();
    let home = p.path().join(".git/claude-home");
    std::fs::create_dir_all(&home).unwrap();
    p.write("PLAN.md", PLAN);
    p.write("agentloop.toml", claude_config(&server, &home));
    p.write(".gitignore", ".agentloop/\n");
    p.commit("setup");
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.read("world.txt"), "world\n");
    let s = p.status();
    assert_eq!(s["status"], "completed");
    assert_eq!(s["iterations"], 2);
    assert_eq!(s["tokens"]["input"], 640);
    assert_eq!(s["tokens"]["output"], 39);
    assert_eq!(s["tokens"]["cached_input"], 120);
    assert_eq!(server.steps_used(), 4);
}
