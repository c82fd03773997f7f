//! One harness for the end-to-end tests of the real agent CLIs (pinned, installed from
//! npm by `scripts/test`): a project configured for a CLI pointed at the testkit's
//! mock model server, and the mock's steps in that CLI's terms.

use std::path::Path;

use agentloop_testkit::{Api, MockServer, Scenario, Step, Tokens};
use serde_json::json;

use crate::support::{Project, Scratch};

/// Two tasks, each checked by a file the agent makes with its shell tool.
pub const PLAN: &str = "# Files\n\n## T1: Hello\nVerify: test -f hello.txt\n\nCreate hello.txt.\n\n## T2: World\nDepends: T1\nVerify: grep -q world world.txt\n\nCreate world.txt containing world.\n";

/// One task: make hello.txt.
pub const ONE: &str = "# One\n\n## T1: Hello\nVerify: test -f hello.txt\n\nCreate hello.txt.\n";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cli {
    Claude,
    Codex,
}

impl Cli {
    /// This CLI's mock model server, playing `steps`.
    pub fn mock(self, steps: Vec<Step>) -> MockServer {
        let api = match self {
            Cli::Claude => Api::Anthropic,
            Cli::Codex => Api::OpenAi,
        };
        MockServer::start(api, Scenario::new(steps))
    }

    /// The mock model asks the CLI to run a shell command with its own tool.
    pub fn shell(self, cmd: &str, input: u64, output: u64) -> Step {
        let (name, input_json) = match self {
            Cli::Claude => ("Bash", json!({"command": cmd, "description": "run"})),
            Cli::Codex => ("exec_command", json!({"cmd": cmd})),
        };
        Step::Tool {
            name: name.into(),
            input: input_json,
            tokens: Tokens {
                input,
                output,
                ..Tokens::default()
            },
        }
    }

    /// The `agentloop.toml` tables that run this CLI against `server`, with its
    /// configuration home in `home`.
    pub fn config(self, server: &MockServer, home: &Path) -> String {
        match self {
            Cli::Claude => format!(
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
            ),
            Cli::Codex => {
                std::fs::write(
                    home.join("config.toml"),
                    format!(
                        "model_provider = \"mock\"\nmodel = \"mock-model\"\n\n[model_providers.mock]\nname = \"mock\"\nbase_url = \"{}/v1\"\nenv_key = \"MOCK_API_KEY\"\nwire_api = \"responses\"\nrequest_max_retries = 0\nstream_max_retries = 0\n",
                        server.url()
                    ),
                )
                .unwrap();
                format!(
                    r#"[run]
agent = "codex"

[agents.codex]
kind = "codex"
model = "mock-model"
sandbox = "danger-full-access"
timeout = "120s"

[agents.codex.env]
CODEX_HOME = "{}"
MOCK_API_KEY = "not-a-real-key"

[prices.mock-model]
input = 2.0
cached_input = 0.5
output = 8.0
"#,
                    home.display()
                )
            }
        }
    }

    /// A committed project whose run drives this CLI against `server`; `extra` is
    /// appended to `agentloop.toml`.
    pub fn project(self, server: &MockServer, plan: &str, extra: &str) -> Project {
        let p = Scratch::new().plan(plan).build();
        let home = p.path().join(match self {
            Cli::Claude => ".git/claude-home",
            Cli::Codex => ".git/codex-home",
        });
        std::fs::create_dir_all(&home).unwrap();
        p.write(
            "agentloop.toml",
            format!("{}\n{extra}", self.config(server, &home)),
        );
        p.commit("agent configuration");
        p
    }
}

/// The model's text reply.
pub fn say(text: &str, input: u64, output: u64, cache_read: u64) -> Step {
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

/// The run's journal events (`log --json`).
pub fn journal_events(p: &Project) -> Vec<serde_json::Value> {
    p.run(&["log", "--json"])
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["event"].clone())
        .collect()
}
