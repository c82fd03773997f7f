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

    /// A committed project whose run drives this CLI against `server`; `extra` is
    /// appended to `agentloop.toml`.
    pub fn project(self, server: &MockServer, plan: &str, extra: &str) -> Project {
        let p = Scratch::new().plan(plan).build();
        let mut p = p;
        let home = p.path().join(format!(".git/{self:?}-home").to_lowercase());
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
    let events = journal_events(&p);
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

/// A 401: the task waits for a person with what to fix; no retry is burnt.
pub fn auth_error_blocks(cli: Cli, kind: &str, message: &str) {
    let server = cli.mock(vec![Step::Error {
        status: 401,
        kind: kind.into(),
        message: message.into(),
        retry_after: None,
    }]);
    let p = cli.project(&server, ONE, "");
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
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

/// `stop --now` while the CLI waits on a stalled model call.
pub fn stop_now_during_a_stall(cli: Cli, name: &str) {
    let server = cli.mock(vec![Step::Stall { seconds: 60 }]);
    let p = cli.project(&server, ONE, "");
    crate::support::stop_now_during_a_model_call(&p, &server, name);
}

/// A prompt of 200 KiB (a task with a long description) reaches the model whole: it
/// goes by stdin or file, never as one argument (the kernel refuses those over
/// 128 KiB).
pub fn long_prompt(cli: Cli, steps: Vec<Step>) {
    let mut body = String::new();
    let mut n = 0;
    while body.len() < 200 * 1024 {
        n += 1;
        body.push_str(&format!(
            "Context line {n:05}: the file hello.txt must exist when this task is done.\n"
        ));
    }
    body.push_str("END-OF-THE-LONG-PROMPT\n");
    let plan = format!("# Long\n\n## T1: Hello\nVerify: test -f hello.txt\n\n{body}");
    let server = cli.mock(steps);
    let p = cli.project(&server, &plan, "");
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
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
