//! Configuration: built-in defaults < user config < `agentloop.toml` < plan front matter
//! < command-line flags. Every effective value remembers which layer it came from.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::plan::Mode;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub run: RunConfig,
    pub budgets: Budgets,
    pub breakers: Breakers,
    pub verify: VerifyConfig,
    pub gates: Gates,
    pub git: GitConfig,
    pub limits: Limits,
    pub agents: BTreeMap<String, AgentConfig>,
    /// USD per million tokens, by model, for agents that report tokens but no cost.
    pub prices: BTreeMap<String, Price>,
    pub notify: Notify,
}

/// Where to tell a person that a run needs them, hit a limit, tripped a breaker,
/// completed or failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Notify {
    /// `http://` or `https://` URL that gets a JSON POST per notification.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook: Option<String>,
    /// PEM file of the CA certificates to trust for an `https://` webhook instead of
    /// the public roots (a private CA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_ca: Option<std::path::PathBuf>,
    /// A program run per notification with the JSON on stdin.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// A desktop notification through `notify-send`, where it exists.
    pub desktop: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    #[serde(default)]
    pub cached_input: f64,
    pub output: f64,
}

impl Price {
    pub fn cost(&self, u: &crate::event::Usage) -> f64 {
        (u.input_tokens as f64 * self.input
            + (u.cached_input_tokens + u.cache_write_tokens) as f64 * self.cached_input
            + u.output_tokens as f64 * self.output)
            / 1_000_000.0
    }
}

/// What to do when the model service says "not now".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Wait after a usage or rate limit whose reset time the agent did not tell;
    /// doubled for each limit in a row.
    #[serde(with = "duration")]
    pub wait: Duration,
    /// Backoff after an overloaded service (529), doubled for each in a row.
    #[serde(with = "duration")]
    pub overloaded_wait: Duration,
    /// The longest single wait; a longer one waits for a person instead.
    #[serde(with = "duration")]
    pub max_wait: Duration,
    /// `wait` for the reset, or hand the task to `run.fallback_agent` (`fallback`).
    pub on_limit: OnLimit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum OnLimit {
    #[default]
    Wait,
    Fallback,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            wait: Duration::from_secs(60),
            overloaded_wait: Duration::from_secs(15),
            max_wait: Duration::from_secs(6 * 3600),
            on_limit: OnLimit::Wait,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunConfig {
    /// Agent used for tasks that name none.
    pub agent: String,
    pub mode: Mode,
    /// Agent tried when a task keeps failing with the main one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback_agent: Option<String>,
    /// The text inside `<promise>…</promise>` that counts as a completion claim.
    pub completion_promise: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Budgets {
    /// Iterations for the whole run.
    pub max_iterations: u32,
    /// Iterations per task before the escalation ladder moves up a rung.
    pub task_retries: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Wall-clock time spent in iterations (agent plus verification), e.g. "4h".
    #[serde(skip_serializing_if = "Option::is_none", with = "opt_duration")]
    pub max_duration: Option<Duration>,
    /// Accepted replans for the whole run.
    pub max_replans: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Breakers {
    /// The same failure fingerprint this many times in a row.
    pub same_failure: u32,
    /// No change in the working tree for this many iterations in a row.
    pub no_change: u32,
    /// The agent exits with no output this many times in a row.
    pub no_output: u32,
    /// The work tree comes back to a state it was already in this many times.
    pub oscillation: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VerifyConfig {
    /// Commands run after every task's own commands.
    pub commands: Vec<String>,
    #[serde(with = "duration")]
    pub timeout: Duration,
    /// Bytes of output kept per command (head and tail).
    pub output_cap: u64,
    /// Path patterns that count as tests for `tdd` mode.
    pub test_patterns: Vec<String>,
    /// Paths the agent must not change (the iteration fails if it does).
    pub protected: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Gates {
    /// Wait for a person to approve the plan before the first iteration.
    pub plan_approval: bool,
    /// Wait for a person to approve before the run is declared complete.
    pub final_review: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct GitConfig {
    /// Commit the working tree after each verified task.
    pub commit: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// `command` runs any program; other kinds are real agent CLIs.
    #[serde(default = "default_kind")]
    pub kind: String,
    /// Program and arguments; `{prompt_file}` is replaced by the prompt's path.
    #[serde(default)]
    pub command: Vec<String>,
    /// How the prompt reaches the program: `stdin`, or `file` (via `{prompt_file}`).
    #[serde(default)]
    pub prompt: PromptVia,
    #[serde(default = "default_agent_timeout", with = "duration")]
    pub timeout: Duration,
    /// Bytes of agent output kept in `agent.log`.
    #[serde(default = "default_output_cap")]
    pub output_cap: u64,
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
    /// Claude Code `--permission-mode`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<String>,
    /// Claude Code `--max-turns`.
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
        let kind: &[&str] = match self.kind.as_str() {
            "claude" => &[
                "ANTHROPIC_*",
                "CLAUDE_*",
                "DISABLE_*",
                "AWS_*",
                "GOOGLE_*",
                "CLOUD_ML_*",
                "VERTEX_*",
                "MCP_*",
            ],
            "codex" => &["OPENAI_*", "CODEX_*", "AZURE_OPENAI_*"],
            _ => &[],
        };
        let mut v: Vec<String> = BASE_ENV.iter().chain(kind).map(|s| s.to_string()).collect();
        v.extend(self.pass_env.iter().cloned());
        v
    }

    /// The built-in configuration of an agent CLI called `kind`.
    pub fn builtin(kind: &str) -> AgentConfig {
        AgentConfig {
            kind: kind.to_string(),
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum PromptVia {
    #[default]
    Stdin,
    File,
}

fn default_kind() -> String {
    "command".into()
}
fn default_agent_timeout() -> Duration {
    Duration::from_secs(30 * 60)
}
fn default_output_cap() -> u64 {
    8 * 1024 * 1024
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            agent: "claude".into(),
            mode: Mode::Quick,
            fallback_agent: None,
            completion_promise: "COMPLETE".into(),
        }
    }
}
impl Default for Budgets {
    fn default() -> Self {
        Budgets {
            max_iterations: 50,
            task_retries: 5,
            max_cost_usd: None,
            max_tokens: None,
            max_duration: None,
            max_replans: 2,
        }
    }
}
impl Default for Breakers {
    fn default() -> Self {
        Breakers {
            same_failure: 3,
            no_change: 3,
            no_output: 2,
            oscillation: 2,
        }
    }
}
impl Default for VerifyConfig {
    fn default() -> Self {
        VerifyConfig {
            commands: Vec::new(),
            timeout: Duration::from_secs(600),
            output_cap: 256 * 1024,
            test_patterns: [
                "tests/",
                "test/",
                "spec/",
                "__tests__/",
                "_test.",
                ".test.",
                "test_",
                ".spec.",
            ]
            .map(String::from)
            .to_vec(),
            protected: vec!["agentloop.toml".into(), ".agentloop/".into()],
        }
    }
}

mod duration {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(*d).to_string())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let s = String::deserialize(d)?;
        humantime::parse_duration(&s).map_err(|e| {
            serde::de::Error::custom(format!(
                "`{s}` is not a duration like \"90s\" or \"4h\": {e}"
            ))
        })
    }
}

mod opt_duration {
    use serde::{Deserializer, Serializer};
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => super::duration::serialize(d, s),
            None => s.serialize_none(),
        }
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        super::duration::deserialize(d).map(Some)
    }
}

/// Where a configuration value came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "path", rename_all = "snake_case")]
pub enum Source {
    Default,
    User(PathBuf),
    Project(PathBuf),
    Plan(PathBuf),
    Flag,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::User(p) => write!(f, "user config {}", p.display()),
            Source::Project(p) => write!(f, "{}", p.display()),
            Source::Plan(p) => write!(f, "plan front matter {}", p.display()),
            Source::Flag => f.write_str("command line"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not valid UTF-8")]
    Utf8 { path: PathBuf },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{origin}: {key}: {message}")]
    Invalid {
        origin: String,
        key: String,
        message: String,
    },
}

/// The effective configuration and the origin of every value.
#[derive(Debug, Clone)]
pub struct Layered {
    pub config: Config,
    /// Dotted key → where its value came from.
    pub sources: BTreeMap<String, Source>,
    merged: Value,
}

/// Builds the effective configuration from the layers that exist.
#[derive(Debug, Default)]
pub struct Loader {
    layers: Vec<(Source, Value)>,
}

impl Loader {
    pub fn new() -> Self {
        Loader::default()
    }

    /// Adds a TOML file if it exists (user or project layer).
    pub fn toml_file(mut self, source: Source, path: &Path) -> Result<Self, ConfigError> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(self),
            Err(e) => {
                return Err(ConfigError::Read {
                    path: path.into(),
                    source: e,
                });
            }
        };
        let text = String::from_utf8(bytes).map_err(|_| ConfigError::Utf8 { path: path.into() })?;
        let value: toml::Table = toml::from_str(&text).map_err(|e| ConfigError::Parse {
            path: path.into(),
            message: e.to_string().trim().replace('\n', "\n  "),
        })?;
        let value = serde_json::to_value(value).map_err(|e| ConfigError::Parse {
            path: path.into(),
            message: e.to_string(),
        })?;
        self.layers.push((source, value));
        Ok(self)
    }

    pub fn layer(mut self, source: Source, value: Map<String, Value>) -> Self {
        if !value.is_empty() {
            self.layers.push((source, Value::Object(value)));
        }
        self
    }

    pub fn build(self) -> Result<Layered, ConfigError> {
        let defaults =
            serde_json::to_value(Config::default()).expect("the default config serializes");
        let mut merged = defaults.clone();
        let mut sources = BTreeMap::new();
        record_sources(&defaults, "", &Source::Default, &mut sources);
        for (source, value) in self.layers {
            // Validate each layer on its own first, so an error names the file it is in.
            let mut alone = defaults.clone();
            merge(&mut alone, &value);
            deserialize(&alone, &source)?;
            merge(&mut merged, &value);
            record_sources(&value, "", &source, &mut sources);
        }
        let config = deserialize(&merged, &Source::Default)?;
        check(&config, &sources)?;
        Ok(Layered {
            config,
            sources,
            merged,
        })
    }
}

fn deserialize(value: &Value, source: &Source) -> Result<Config, ConfigError> {
    serde_path_to_error::deserialize(value).map_err(|e| ConfigError::Invalid {
        origin: source.to_string(),
        key: e.path().to_string(),
        message: e.inner().to_string(),
    })
}

fn check(config: &Config, sources: &BTreeMap<String, Source>) -> Result<(), ConfigError> {
    let bad = |key: &str, message: &str| ConfigError::Invalid {
        origin: origin_of(sources, key),
        key: key.into(),
        message: message.into(),
    };
    if let Some(url) = &config.notify.webhook
        && !(url.starts_with("http://") || url.starts_with("https://"))
    {
        return Err(bad("notify.webhook", "must be an http:// or https:// URL"));
    }
    if let Some(ca) = &config.notify.webhook_ca
        && !ca.is_file()
    {
        return Err(bad(
            "notify.webhook_ca",
            &format!("{} is not a file", ca.display()),
        ));
    }
    if config.budgets.max_iterations == 0 {
        return Err(bad("budgets.max_iterations", "must be at least 1"));
    }
    if config.budgets.task_retries == 0 {
        return Err(bad("budgets.task_retries", "must be at least 1"));
    }
    if config
        .budgets
        .max_cost_usd
        .is_some_and(|c| !(c > 0.0 && c.is_finite()))
    {
        return Err(bad(
            "budgets.max_cost_usd",
            "must be a positive number of dollars",
        ));
    }
    for (name, a) in &config.agents {
        if a.kind == "command" && a.command.is_empty() {
            return Err(bad(
                &format!("agents.{name}.command"),
                "a `command` agent needs a program to run",
            ));
        }
        if a.prompt == PromptVia::File && !a.command.iter().any(|c| c.contains("{prompt_file}")) {
            return Err(bad(
                &format!("agents.{name}.prompt"),
                "`prompt = \"file\"` needs `{prompt_file}` in the command",
            ));
        }
    }
    Ok(())
}

/// The layer a key came from; for a key no layer set, the layer that set its table.
fn origin_of(sources: &BTreeMap<String, Source>, key: &str) -> String {
    let mut prefix = key;
    loop {
        if let Some(s) = sources.get(prefix) {
            return s.to_string();
        }
        let dotted = format!("{prefix}.");
        if let Some((_, s)) = sources.iter().find(|(k, _)| k.starts_with(&dotted)) {
            return s.to_string();
        }
        match prefix.rsplit_once('.') {
            Some((p, _)) => prefix = p,
            None => return "config".into(),
        }
    }
}

fn merge(base: &mut Value, top: &Value) {
    match (base, top) {
        (Value::Object(b), Value::Object(t)) => {
            for (k, v) in t {
                match b.get_mut(k) {
                    Some(slot) if slot.is_object() && v.is_object() => merge(slot, v),
                    _ => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (b, t) => *b = t.clone(),
    }
}

fn record_sources(
    value: &Value,
    prefix: &str,
    source: &Source,
    out: &mut BTreeMap<String, Source>,
) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            // A table that now has entries is no longer a leaf of its own.
            out.remove(prefix);
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                record_sources(v, &key, source, out);
            }
        }
        _ => {
            // A layer that sets a table replaces the origin of everything below it.
            out.retain(|k, _| !(k.starts_with(prefix) && k[prefix.len()..].starts_with('.')));
            out.insert(prefix.to_string(), source.clone());
        }
    }
}

impl Layered {
    /// `key = value  # source` lines, sorted by key.
    pub fn describe(&self) -> Vec<(String, String, String)> {
        let mut rows = Vec::new();
        for (key, source) in &self.sources {
            let mut v = &self.merged;
            for part in key.split('.') {
                v = v.get(part).unwrap_or(&Value::Null);
            }
            rows.push((key.clone(), v.to_string(), source.to_string()));
        }
        rows
    }
}

/// The user configuration file: `$XDG_CONFIG_HOME/agentloop/config.toml`.
pub fn user_config_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("agentloop").join("config.toml"))
}

/// The commented `agentloop.toml` written by `agentloop init`.
pub const TEMPLATE: &str = r#"# agentloop configuration. Every key is optional; `agentloop config show` prints the
# effective value of each and where it came from.

[run]
# Agent for tasks that name none: a name from [agents.*] below, or a built-in one.
agent = "claude"
# quick | tdd (the diff must touch tests) | pair (gate after every task) | checkpoint (gate after milestones)
mode = "quick"
# fallback_agent = "codex"

[budgets]
max_iterations = 50     # for the whole run
task_retries = 5        # per task, before the escalation ladder moves up
max_replans = 2
# max_cost_usd = 10.0
# max_tokens = 5000000
# max_duration = "4h"

[breakers]
same_failure = 3        # the same failure fingerprint this many times in a row
no_change = 3           # no change in the working tree this many iterations in a row
no_output = 2           # the agent exits with no output this many times in a row
oscillation = 2         # the tree returns to a state it was already in this many times

[verify]
# Run after every task's own `Verify:` commands.
commands = []
timeout = "10m"

[gates]
plan_approval = false
final_review = false

[git]
commit = false          # commit after each verified task

[limits]
wait = "60s"            # after a usage/rate limit with no reset time; doubles each time in a row
overloaded_wait = "15s" # after an overloaded service; doubles each time in a row
max_wait = "6h"         # a longer wait waits for a person instead
on_limit = "wait"       # or "fallback": hand the task to run.fallback_agent

[notify]
# webhook = "https://hooks.example.com/agentloop" # a JSON POST per notification
# webhook_ca = "ca.pem"                         # trust this CA instead of the public roots
# command = ["my-notifier"]                     # the JSON on stdin
desktop = false                                 # notify-send, where it exists

# Any program can be an agent: it gets the prompt on stdin, or in a file.
# [agents.mine]
# kind = "command"
# command = ["./my-agent", "--prompt", "{prompt_file}"]
# prompt = "file"
# timeout = "30m"
"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn later_layers_win_and_are_named() {
        let l = Loader::new()
            .layer(
                Source::Plan("PLAN.md".into()),
                obj(serde_json::json!({"budgets": {"max_iterations": 7}})),
            )
            .layer(
                Source::Flag,
                obj(serde_json::json!({"run": {"mode": "tdd"}})),
            )
            .build()
            .unwrap();
        assert_eq!(l.config.budgets.max_iterations, 7);
        assert_eq!(l.config.run.mode, Mode::Tdd);
        assert_eq!(
            l.sources["budgets.max_iterations"],
            Source::Plan("PLAN.md".into())
        );
        assert_eq!(l.sources["budgets.task_retries"], Source::Default);
    }

    #[test]
    fn unknown_keys_name_the_layer_and_key() {
        let e = Loader::new()
            .layer(
                Source::Plan("PLAN.md".into()),
                obj(serde_json::json!({"budgets": {"max_iteration": 7}})),
            )
            .build()
            .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with(
                "plan front matter PLAN.md: budgets.max_iteration: unknown field `max_iteration`"
            ),
            "{msg}"
        );
    }

    #[test]
    fn template_is_valid() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("agentloop.toml");
        std::fs::write(&p, TEMPLATE).unwrap();
        let l = Loader::new()
            .toml_file(Source::Project(p.clone()), &p)
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(l.config, Config::default());
    }
}
