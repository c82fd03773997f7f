//! One harness for the end-to-end tests of the real agent CLIs (pinned, installed by
//! `scripts/test`): a project configured for a CLI pointed at the testkit's mock model
//! server, and the mock's steps in that CLI's terms. Gemini CLI, OpenCode and Aider are
//! set up as a new user would: their key and endpoint in the environment, their own
//! configuration files in their home, and `agentloop.toml` naming only the agent (and,
//! for Aider, its model).

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
    Gemini,
    OpenCode,
    Aider,
    Copilot,
    Qwen,
    Droid,
    Cline,
}

impl Cli {
    fn api(self) -> Api {
        match self {
            Cli::Claude => Api::Anthropic,
            Cli::Codex => Api::OpenAi,
            Cli::Gemini => Api::Gemini,
            Cli::OpenCode | Cli::Aider | Cli::Copilot | Cli::Qwen | Cli::Droid | Cli::Cline => {
                Api::Chat
            }
        }
    }

    /// This CLI's mock model server, playing `steps`.
    pub fn mock(self, steps: Vec<Step>) -> MockServer {
        self.mock_scenario(Scenario::new(steps))
    }

    /// This CLI's mock model server, playing `scenario`.
    pub fn mock_scenario(self, scenario: Scenario) -> MockServer {
        let scenario = match self {
            // Aider offers no tools: every call of its is the conversation.
            Cli::Aider => scenario.untooled(),
            _ => scenario,
        };
        MockServer::start(self.api(), scenario)
    }

    /// This CLI's mock model server, answering each conversation from its own lane (the
    /// one whose key its prompt contains), for agents that run at once.
    pub fn mock_lanes(self, lanes: Vec<(String, Vec<Step>)>) -> MockServer {
        MockServer::start(self.api(), Scenario::lanes(lanes))
    }

    /// The mock model asks the CLI to run a shell command with its own tool.
    pub fn shell(self, cmd: &str, input: u64, output: u64) -> Step {
        let (name, input_json) = match self {
            Cli::Claude => ("Bash", json!({"command": cmd, "description": "run"})),
            Cli::Codex => ("exec_command", json!({"cmd": cmd})),
            Cli::Gemini => ("run_shell_command", json!({"command": cmd})),
            Cli::OpenCode | Cli::Copilot => ("bash", json!({"command": cmd, "description": "run"})),
            Cli::Qwen => ("run_shell_command", json!({"command": cmd})),
            Cli::Cline => ("run_commands", json!({"commands": [cmd]})),
            Cli::Droid => (
                "Execute",
                json!({"summary": "Run the task's command", "command": cmd,
                       "riskLevelReason": "It writes one file in the work tree.", "riskLevel": "medium"}),
            ),
            Cli::Aider => panic!("Aider has no shell tool: its edits are in its reply"),
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
    /// configuration home in `home`, which is also its `HOME`: the login shells its
    /// shell tool starts then read no profile of this machine's (a slow one, like a
    /// pyenv rehash waiting a minute on a stale lock, would be every test's problem).
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
HOME = "{1}"
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
CODEX_HOME = "{0}"
HOME = "{0}"
MOCK_API_KEY = "not-a-real-key"

[prices.mock-model]
input = 2.0
cached_input = 0.5
output = 8.0
"#,
                    home.display()
                )
            }
            Cli::Gemini => {
                std::fs::create_dir_all(home.join(".gemini")).unwrap();
                // The API key's auth type (a base URL alone would make it pick
                // "gateway"), and a 429 handed to agentloop at once rather than after
                // ten tries of its own.
                std::fs::write(
                    home.join(".gemini/settings.json"),
                    r#"{"security": {"auth": {"selectedType": "gemini-api-key"}}, "general": {"maxAttempts": 1}}"#,
                )
                .unwrap();
                format!("[run]\nagent = \"gemini\"\n\n{GEMINI_PRICES}")
            }
            Cli::OpenCode => {
                std::fs::write(
                    home.join("opencode.json"),
                    json!({
                        "$schema": "https://opencode.ai/config.json",
                        "provider": {"mock": {
                            "npm": "@ai-sdk/openai-compatible",
                            "name": "Mock",
                            "options": {"baseURL": format!("{}/v1", server.url()), "apiKey": "{env:MOCK_API_KEY}"},
                            // Dollars per million tokens: OpenCode prices what it spends.
                            "models": {"mock-model": {"name": "Mock", "cost": {"input": 2.0, "output": 8.0, "cache_read": 0.5}}},
                        }},
                        "model": "mock/mock-model",
                    })
                    .to_string(),
                )
                .unwrap();
                // Nor the plugin package OpenCode installs into each config directory
                // from npm's registry (a fresh home is a first run each time; 60 MB):
                // npm's offline mode refuses it at once.
                "[run]\nagent = \"opencode\"\n\n[agents.opencode]\nkind = \"opencode\"\n\n[agents.opencode.env]\nNPM_CONFIG_OFFLINE = \"true\"\n".into()
            }
            Cli::Copilot => "[run]\nagent = \"copilot\"\n\n[prices.mock-model]\ninput = 2.0\ncached_input = 0.5\noutput = 8.0\n".into(),
            Cli::Qwen => {
                std::fs::create_dir_all(home.join(".qwen")).unwrap();
                // Its OpenAI-compatible auth type (key, endpoint and model from the
                // variables), and a 429 handed on after its client's own retries
                // rather than after ten more of its own, a minute apart.
                std::fs::write(
                    home.join(".qwen/settings.json"),
                    r#"{"security": {"auth": {"selectedType": "openai"}}, "model": {"generationConfig": {"maxRetries": 0}}}"#,
                )
                .unwrap();
                format!("[run]\nagent = \"qwen\"\n\n{MOCK_PRICES}")
            }
            Cli::Droid => {
                std::fs::create_dir_all(home.join(".factory")).unwrap();
                // A custom model (bring your own key): no Factory login.
                std::fs::write(
                    home.join(".factory/settings.json"),
                    json!({"customModels": [{
                        "model": "mock-model",
                        "displayName": "Mock",
                        "baseUrl": format!("{}/v1", server.url()),
                        "apiKey": "not-a-real-key",
                        "provider": "generic-chat-completion-api",
                        "maxOutputTokens": 4096,
                    }]})
                    .to_string(),
                )
                .unwrap();
                // Priced by the model agentloop passes (`-m`), as the user names it.
                "[run]\nagent = \"droid\"\n\n[agents.droid]\nmodel = \"custom:mock-model\"\n\n[prices.\"custom:mock-model\"]\ninput = 2.0\ncached_input = 0.5\noutput = 8.0\n".into()
            }
            Cli::Cline => {
                // What `cline auth -p openai -k KEY -m MODEL -b URL` writes.
                let settings = home.join(".cline/data/settings");
                std::fs::create_dir_all(&settings).unwrap();
                std::fs::write(
                    settings.join("providers.json"),
                    json!({"version": 1, "lastUsedProvider": "openai-compatible", "modes": {},
                        "providers": {"openai-compatible": {"settings": {
                            "provider": "openai-compatible", "apiKey": "not-a-real-key",
                            "model": "mock-model", "baseUrl": format!("{}/v1", server.url())},
                        "updatedAt": "2026-12-06T00:00:00.000Z", "tokenSource": "manual"}}})
                    .to_string(),
                )
                .unwrap();
                format!("[run]\nagent = \"cline\"\n\n{MOCK_PRICES}")
            }
            Cli::Aider => "[run]\nagent = \"aider\"\n\n[agents.aider]\nmodel = \"openai/mock-model\"\n\n[prices.\"openai/mock-model\"]\ninput = 2.0\ncached_input = 0.5\noutput = 8.0\n".into(),
        }
    }

    /// What the user exported in their shell for this CLI: its home, key and endpoint.
    pub fn user_env(self, server: &MockServer, home: &Path) -> Vec<(String, String)> {
        let home_s = home.display().to_string();
        let mut env = vec![
            ("HOME".to_string(), home_s.clone()),
            ("XDG_CONFIG_HOME".into(), format!("{home_s}/.config")),
            ("XDG_DATA_HOME".into(), format!("{home_s}/.local/share")),
        ];
        let more: Vec<(&str, String)> = match self {
            Cli::Claude | Cli::Codex => return Vec::new(),
            Cli::Gemini => vec![
                ("GEMINI_API_KEY", "not-a-real-key".into()),
                ("GOOGLE_GEMINI_BASE_URL", server.url()),
                // Not started twice: Gemini CLI starts itself again with a larger
                // heap unless told not to (1.7 s of CPU each time here). One test
                // keeps the second start, as a user has it.
                ("GEMINI_CLI_NO_RELAUNCH", "true".into()),
            ],
            Cli::OpenCode => vec![
                ("OPENCODE_CONFIG", format!("{home_s}/opencode.json")),
                ("MOCK_API_KEY", "not-a-real-key".into()),
                // Not the model list from models.dev: the network is not the tests'
                // (an unreachable host held each run 7 s here).
                ("OPENCODE_DISABLE_MODELS_FETCH", "true".into()),
            ],
            // Its custom-provider mode ("bring your own key"), offline: no GitHub
            // account.
            Cli::Copilot => vec![
                ("COPILOT_HOME", format!("{home_s}/.copilot")),
                ("COPILOT_OFFLINE", "true".into()),
                ("COPILOT_PROVIDER_BASE_URL", format!("{}/v1", server.url())),
                ("COPILOT_PROVIDER_API_KEY", "not-a-real-key".into()),
                ("COPILOT_MODEL", "mock-model".into()),
            ],
            Cli::Qwen => vec![
                ("OPENAI_API_KEY", "not-a-real-key".into()),
                ("OPENAI_BASE_URL", format!("{}/v1", server.url())),
                ("OPENAI_MODEL", "mock-model".into()),
                // Not started twice: Qwen Code starts itself again with a larger heap
                // unless told not to (1.1 s of each run here). Its rate-limit test
                // keeps the second start, as a user has it.
                ("QWEN_CODE_NO_RELAUNCH", "true".into()),
            ],
            // A custom model only: none of Factory's services (telemetry, its
            // configuration), which a closed network holds each run 6 s.
            Cli::Droid => vec![("FACTORY_AIRGAP_ENABLED", "1".into())],
            Cli::Cline => Vec::new(),
            Cli::Aider => vec![
                ("OPENAI_API_BASE", format!("{}/v1", server.url())),
                ("OPENAI_API_KEY", "not-a-real-key".into()),
                // litellm's price list from its package, not from the network.
                ("LITELLM_LOCAL_MODEL_COST_MAP", "True".into()),
            ],
        };
        env.extend(more.into_iter().map(|(k, v)| (k.to_string(), v)));
        env
    }

    /// The home directory the CLI runs with for project `p` (its `cli_home`: outside
    /// the repository, of whose `.git` a sandboxed agent writes only its own
    /// worktree's bookkeeping).
    pub fn home(self, p: &Project) -> std::path::PathBuf {
        p.cli_home
            .as_ref()
            .expect("a CLI's project")
            .path()
            .to_path_buf()
    }

    /// A committed project whose run drives this CLI against `server`; `extra` is
    /// appended to `agentloop.toml`.
    pub fn project(self, server: &MockServer, plan: &str, extra: &str) -> Project {
        let mut p = Scratch::new().plan(plan).build();
        p.cli_home = Some(
            tempfile::Builder::new()
                .prefix(&format!("agentloop-it-{self:?}-home-").to_lowercase())
                .tempdir_in("/var/tmp")
                .unwrap(),
        );
        let home = self.home(&p);
        std::fs::create_dir_all(&home).unwrap();
        p.write(
            "agentloop.toml",
            format!("{}\n{extra}", self.config(server, &home)),
        );
        p.commit("agent configuration");
        p.write_user_config_in(&home.join(".config"));
        p.env = self.user_env(server, &home);
        p
    }
}

/// Dollars per million tokens for the mock's model, for CLIs that report tokens only.
pub const MOCK_PRICES: &str =
    "[prices.mock-model]\ninput = 2.0\ncached_input = 0.5\noutput = 8.0\n";

/// Dollars per million tokens for the models Gemini CLI 0.61.0 routes to.
pub const GEMINI_PRICES: &str = r#"[prices."gemini-3.8-flash"]
input = 0.3
cached_input = 0.03
output = 2.5

[prices."gemini-3.1-pro-preview"]
input = 2.0
cached_input = 0.2
output = 12.0

[prices."gemini-3.5-flash-lite"]
input = 0.1
output = 0.4
"#;

/// Aider writes `path` whole (its "whole" edit format) and says `after`.
pub fn aider_edit(path: &str, content: &str, after: &str, input: u64, output: u64) -> Step {
    Step::Text {
        text: format!("I will write {path}.\n\n{path}\n```\n{content}```\n\n{after}"),
        tokens: Tokens {
            input,
            output,
            ..Tokens::default()
        },
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

mod scenarios;
pub use scenarios::*;
