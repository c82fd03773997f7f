//! Configuration layers: built-in defaults < user config < `agentloop.toml` < plan
//! front matter < command-line flags. Every effective value remembers which layer it
//! came from.

use agentloop_ground::words::dotted;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

use super::agent::{AgentKind, BUILTIN_AGENTS, PromptVia};
use super::schema::Config;

/// Where a configuration value came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "path", rename_all = "snake_case")]
pub enum Source {
    Default,
    User(PathBuf),
    Project(PathBuf),
    /// A shaping step's `.loop/shape/SHAPE.md`, under the plan's front matter.
    Shape(PathBuf),
    Plan(PathBuf),
    Flag,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::User(p) => write!(f, "user config {}", p.display()),
            Source::Project(p) => write!(f, "{}", p.display()),
            Source::Shape(p) => write!(f, "shape {}", p.display()),
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
    pub fn toml_file(self, source: Source, path: &Path) -> Result<Self, ConfigError> {
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
        self.toml_bytes(source, path, bytes)
    }

    /// Adds TOML content that stands for the file at `path` (a version of it recorded
    /// earlier, like the run's baseline).
    pub fn toml_bytes(
        mut self,
        source: Source,
        path: &Path,
        bytes: Vec<u8>,
    ) -> Result<Self, ConfigError> {
        let text = String::from_utf8(bytes).map_err(|_| ConfigError::Utf8 { path: path.into() })?;
        let value: toml::Table = toml::from_str(&text).map_err(|e| ConfigError::Parse {
            path: path.into(),
            message: e.to_string().trim().replace('\n', "\n  "),
        })?;
        if let Some(key) = non_finite(&value, "") {
            return Err(ConfigError::Parse {
                path: path.into(),
                message: format!("{key}: nan and inf are not numbers agentloop can use"),
            });
        }
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

/// The dotted key of the first `nan` or `inf` in a TOML table (JSON, which the layers
/// are merged as, has no such numbers: they would silently become "unset").
fn non_finite(t: &toml::Table, prefix: &str) -> Option<String> {
    t.iter().find_map(|(k, v)| {
        let key = dotted(prefix, k);
        match v {
            toml::Value::Float(f) if !f.is_finite() => Some(key),
            toml::Value::Table(t) => non_finite(t, &key),
            toml::Value::Array(a) => a.iter().find_map(|v| match v {
                toml::Value::Float(f) if !f.is_finite() => Some(key.clone()),
                toml::Value::Table(t) => non_finite(t, &key),
                _ => None,
            }),
            _ => None,
        }
    })
}

/// A table for a built-in agent name (`[agents.claude]`) is that CLI's, with only the
/// keys it sets changed: its kind is its name unless it says otherwise.
fn builtin_kinds(value: &Value) -> Value {
    let mut v = value.clone();
    if let Some(agents) = v.get_mut("agents").and_then(Value::as_object_mut) {
        for (name, table) in agents.iter_mut() {
            if let Some(t) = table.as_object_mut()
                && BUILTIN_AGENTS.contains(&name.as_str())
                && !t.contains_key("kind")
            {
                t.insert("kind".into(), Value::String(name.clone()));
            }
        }
    }
    v
}

fn deserialize(value: &Value, source: &Source) -> Result<Config, ConfigError> {
    let value = &builtin_kinds(value);
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
    if config.verify.timeout.is_zero() {
        return Err(bad("verify.timeout", "must be longer than 0s"));
    }
    if config.merge.batch.is_some_and(|b| !(1..=1024).contains(&b)) {
        return Err(bad("merge.batch", "must be from 1 (one at a time) to 1024"));
    }
    if config.merge.bisect.is_some_and(|b| !(1..=64).contains(&b)) {
        return Err(bad(
            "merge.bisect",
            "must be from 1 (halves, one at a time) to 64",
        ));
    }
    if config.store.timeout.is_some_and(|t| {
        t < std::time::Duration::from_secs(1) || t > std::time::Duration::from_secs(3600)
    }) {
        return Err(bad("store.timeout", "must be between 1s and 1h"));
    }
    if let Err(e) = crate::sandbox::AllowList::parse(&config.sandbox.allow_hosts) {
        return Err(bad("sandbox.allow_hosts", &e));
    }
    if let Err(e) = config.executor.slurm.options() {
        return Err(bad("executor.slurm", &e));
    }
    if config.executor.kind == crate::executor::ExecutorKind::Kubernetes
        && let Err(e) = config.executor.kubernetes.check()
    {
        return Err(bad("executor.kubernetes", &e));
    }
    if let Some(Err(e)) = config.run.cycle.as_deref().map(crate::cycle::Cycle::parse) {
        return Err(bad("run.cycle", &e));
    }
    if config.run.planners > 16 {
        return Err(bad(
            "run.planners",
            "at most 16 (each is an agent asked whenever the run moves)",
        ));
    }
    if config.executor.poll.is_zero() || config.executor.remote.trim().is_empty() {
        return Err(bad(
            "executor",
            "`poll` must be longer than 0s and `remote` must name a git remote",
        ));
    }
    let v = &config.validate;
    for (key, step) in [
        ("validate.security", &v.security),
        ("validate.performance", &v.performance),
        ("validate.coverage", &v.coverage),
    ] {
        if step.as_deref().is_some_and(|c| c.trim().is_empty()) {
            return Err(bad(
                key,
                "is an empty command: name the command, or leave the key out",
            ));
        }
    }
    if let Some(m) = v.coverage_min {
        if !(0.0..=100.0).contains(&m) {
            return Err(bad(
                "validate.coverage_min",
                "must be a percent, from 0 to 100",
            ));
        }
        if v.coverage.is_none() {
            return Err(bad(
                "validate.coverage_min",
                "asks for a minimum of a coverage step there is not: set `[validate] coverage` too",
            ));
        }
    }
    if config.run.workers.is_some_and(|w| !(1..=64).contains(&w)) {
        return Err(bad("run.workers", "must be from 1 to 64"));
    }
    if !config.run.branch.contains("{run}") || config.run.branch.trim().is_empty() {
        return Err(bad(
            "run.branch",
            "must contain `{run}` (each run integrates on its own branch)",
        ));
    }
    for (name, a) in &config.agents {
        if a.timeout.is_zero() {
            return Err(bad(
                &format!("agents.{name}.timeout"),
                "must be longer than 0s",
            ));
        }
        if a.kind == AgentKind::Command && a.command.is_empty() {
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

/// Merges the layer `top` into `base`: tables key by key, anything else replaced.
pub fn merge(base: &mut Value, top: &Value) {
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
                let key = dotted(prefix, k);
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
    /// The values of agents' `env` entries named like secrets are shown as
    /// `"[REDACTED]"`: the output is for screens and bug reports.
    pub fn describe(&self) -> Vec<(String, String, String)> {
        let mut rows = Vec::new();
        for (key, source) in &self.sources {
            let mut v = &self.merged;
            for part in key.split('.') {
                v = v.get(part).unwrap_or(&Value::Null);
            }
            let parts: Vec<&str> = key.split('.').collect();
            let secret = matches!(parts.as_slice(), ["agents", _, "env", name] if agentloop_ground::redact::is_secret_name(name));
            let shown = if secret {
                "\"[REDACTED]\"".to_string()
            } else {
                v.to_string()
            };
            rows.push((key.clone(), shown, source.to_string()));
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

#[cfg(test)]
mod tests {
    use super::*;
    use agentloop_plan::Mode;

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
}
