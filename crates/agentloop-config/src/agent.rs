//! `[agents.NAME]`: an agent a task may name — one of the CLIs agentloop knows, or
//! any program (`kind = "command"`) — and what it inherits from agentloop's
//! environment.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use agentloop_ground::values::duration;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = crate::bounds::agent)]
pub struct AgentConfig {
    /// `command` runs any program; other kinds are real agent CLIs.
    #[serde(default)]
    pub kind: AgentKind,
    /// Program and arguments; `{prompt_file}` is replaced by the prompt's path.
    #[serde(default)]
    pub command: Vec<String>,
    /// How the prompt reaches the program: `stdin`, or `file` (via `{prompt_file}`).
    #[serde(default)]
    pub prompt: PromptVia,
    /// How long one iteration of this agent may run before it is ended as timed out.
    #[serde(default = "default_agent_timeout", with = "duration")]
    #[schemars(schema_with = "duration::nonzero_schema")]
    pub timeout: Duration,
    /// Bytes of agent output kept in `agent.log`.
    #[serde(default = "default_output_cap")]
    pub output_cap: u64,
    /// Variables set for the agent's process (`config show` hides their values).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Model name passed to agent CLIs that take one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Tools granted without asking (Claude Code `--allowedTools`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_tools: Option<Vec<String>>,
    /// Tools refused (Claude Code `--disallowedTools`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disallowed_tools: Option<Vec<String>>,
    /// Claude Code `--permission-mode`; Qwen Code `--approval-mode` (default `yolo`);
    /// Factory Droid's `--auto` level (default `high`; `read-only` runs it without one);
    /// Cline's plan mode when `plan`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<String>,
    /// Claude Code `--max-turns`; Qwen Code `--max-session-turns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    /// Inherited environment variables the agent also gets, on top of the built-in
    /// allow-list (`NAME` or `PREFIX_*`); `["*"]` passes everything.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass_env: Vec<String>,
    /// Codex `--sandbox`: read-only, workspace-write (default) or danger-full-access.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// Extra arguments appended to the agent CLI's command line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
}

/// Agent CLIs that work without any configuration; `[agents.NAME]` for one of these
/// names changes only the keys it sets.
pub const BUILTIN_AGENTS: &[&str] = &[
    "claude", "codex", "gemini", "opencode", "aider", "copilot", "qwen", "droid", "cline",
];

/// What an agent is: a program of the user's (`command`), or one of the agent CLIs
/// agentloop drives with their own flags and reads the reports of.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum AgentKind {
    /// Any program: its command line in `command`, its last output line the answer.
    #[default]
    Command,
    /// Claude Code.
    Claude,
    /// Codex CLI.
    Codex,
    /// Gemini CLI.
    Gemini,
    /// OpenCode.
    Opencode,
    /// Aider.
    Aider,
    /// GitHub Copilot CLI.
    Copilot,
    /// Qwen Code.
    Qwen,
    /// Factory Droid (`droid exec`).
    Droid,
    /// Cline CLI.
    Cline,
}

impl AgentKind {
    /// The agent CLIs, each also an agent of that name that needs no configuration.
    pub const CLIS: [AgentKind; 9] = [
        AgentKind::Claude,
        AgentKind::Codex,
        AgentKind::Gemini,
        AgentKind::Opencode,
        AgentKind::Aider,
        AgentKind::Copilot,
        AgentKind::Qwen,
        AgentKind::Droid,
        AgentKind::Cline,
    ];

    /// The word the configuration writes.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentKind::Command => "command",
            AgentKind::Claude => "claude",
            AgentKind::Codex => "codex",
            AgentKind::Gemini => "gemini",
            AgentKind::Opencode => "opencode",
            AgentKind::Aider => "aider",
            AgentKind::Copilot => "copilot",
            AgentKind::Qwen => "qwen",
            AgentKind::Droid => "droid",
            AgentKind::Cline => "cline",
        }
    }

    /// The agent CLI a built-in agent's name is (`claude`, …), if it is one.
    pub fn builtin(name: &str) -> Option<AgentKind> {
        AgentKind::CLIS.into_iter().find(|k| k.as_str() == name)
    }
}

impl std::fmt::Display for AgentKind {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What every agent inherits from agentloop's environment: enough to run programs,
/// find its home and config, speak the locale and reach a proxy.
pub const BASE_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "TZ",
    "TMPDIR",
    "XDG_*",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSH_AUTH_SOCK",
    "GIT_AUTHOR_*",
    "GIT_COMMITTER_*",
];

impl AgentConfig {
    /// The inherited variables this agent gets: the base list, its kind's own
    /// variables, and `pass_env`.
    pub fn allowed_env(&self) -> Vec<String> {
        let kind: &[&str] = match self.kind {
            AgentKind::Claude => &[
                "ANTHROPIC_*",
                "CLAUDE_*",
                "DISABLE_*",
                "AWS_*",
                "GOOGLE_*",
                "CLOUD_ML_*",
                "VERTEX_*",
                "MCP_*",
            ],
            AgentKind::Codex => &["OPENAI_*", "CODEX_*", "AZURE_OPENAI_*"],
            AgentKind::Gemini => &[
                "GEMINI_*",
                "GOOGLE_*",
                "CLOUD_ML_*",
                "VERTEX_*",
                "CLOUDSDK_*",
            ],
            // Not GITHUB_TOKEN nor GH_TOKEN: with them the agent could merge the run's own
            // pull request past its checks and review (Copilot logs in with
            // COPILOT_GITHUB_TOKEN).
            AgentKind::Copilot => &["COPILOT_*", "GH_HOST", "OTEL_*"],
            // Its own variables and those of the providers its auth types reach
            // (`openai` for any compatible endpoint, DashScope, Anthropic, Gemini).
            AgentKind::Qwen => &[
                "QWEN_*",
                "OPENAI_*",
                "DASHSCOPE_*",
                "BAILIAN_*",
                "ANTHROPIC_*",
                "GEMINI_*",
                "GOOGLE_*",
                "VERTEX_*",
            ],
            // Its login key; a custom model's endpoint and key are in its settings.
            AgentKind::Droid => &["FACTORY_*", "DROID_*"],
            // Its own; its providers' keys (a provider set by `cline auth` keeps its
            // key in Cline's settings).
            AgentKind::Cline => &[
                "CLINE_*",
                "OPENAI_*",
                "ANTHROPIC_*",
                "OPENROUTER_*",
                "GEMINI_*",
                "GOOGLE_*",
                "AWS_*",
                "DEEPSEEK_*",
            ],
            // Both reach many providers; each provider's documented variables.
            AgentKind::Opencode | AgentKind::Aider => &[
                "OPENCODE_*",
                "AIDER_*",
                "LITELLM_*",
                "OPENAI_*",
                "AZURE_*",
                "ANTHROPIC_*",
                "OPENROUTER_*",
                "GEMINI_*",
                "GOOGLE_*",
                "VERTEX*",
                "AWS_*",
                "DEEPSEEK_*",
                "GROQ_*",
                "MISTRAL_*",
                "XAI_*",
                "TOGETHER*",
                "FIREWORKS_*",
                "CEREBRAS_*",
                "COHERE_*",
                "OLLAMA_*",
                "LM_STUDIO_*",
                "HF_*",
                "HUGGINGFACE_*",
                "COPILOT_*",
            ],
            AgentKind::Command => &[],
        };
        let mut v: Vec<String> = BASE_ENV.iter().chain(kind).map(|s| s.to_string()).collect();
        v.extend(self.pass_env.iter().cloned());
        v
    }

    /// The configuration of the agent called `name` when none is written: the agent
    /// CLI of that name, or (a name no CLI has) a command agent with no command.
    pub fn builtin(name: &str) -> AgentConfig {
        AgentConfig {
            kind: AgentKind::builtin(name).unwrap_or_default(),
            command: Vec::new(),
            prompt: PromptVia::Stdin,
            timeout: default_agent_timeout(),
            output_cap: default_output_cap(),
            env: BTreeMap::new(),
            model: None,
            allowed_tools: None,
            disallowed_tools: None,
            permission_mode: None,
            max_turns: None,
            pass_env: Vec::new(),
            sandbox: None,
            args: Vec::new(),
        }
    }
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum PromptVia {
    #[default]
    Stdin,
    File,
}

fn default_agent_timeout() -> Duration {
    Duration::from_secs(30 * 60)
}
fn default_output_cap() -> u64 {
    8 * 1024 * 1024
}

/// `NAME` matches itself; `PREFIX_*` matches every name that starts with `PREFIX_`.
pub fn env_allowed(name: &str, patterns: &[String]) -> bool {
    patterns.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == p,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_agents_are_the_clis() {
        let names: Vec<&str> = AgentKind::CLIS.iter().map(|k| k.as_str()).collect();
        assert_eq!(names, BUILTIN_AGENTS);
        assert_eq!(AgentConfig::builtin("mine").kind, AgentKind::Command);
    }

    #[test]
    fn no_agent_gets_the_forge_or_tracker_tokens() {
        for kind in [
            "claude", "codex", "gemini", "opencode", "aider", "copilot", "qwen", "droid", "cline",
            "command",
        ] {
            let allowed = AgentConfig::builtin(kind).allowed_env();
            for token in ["GITHUB_TOKEN", "GH_TOKEN", "GITLAB_TOKEN", "LINEAR_API_KEY"] {
                assert!(!env_allowed(token, &allowed), "{kind} would get {token}");
            }
        }
    }
}
