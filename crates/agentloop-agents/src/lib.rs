//! Agent adapters: each turns one agent program's run into agentloop's own event
//! schema (final message, signals, usage, cost, session id, error kind). Nothing above
//! this crate parses an agent's output format.

pub mod aider;
pub mod claude;
pub mod cli;
pub mod cline;
pub mod codex;
pub mod command;
pub mod copilot;
pub mod droid;
pub mod gemini;
pub mod opencode;
pub mod parsed;
pub mod probe;
pub mod qwen;
pub mod transcript;

use std::path::Path;

use agentloop_config::{AgentConfig, Config};
use agentloop_exec::supervise::Finished;
use agentloop_ground::values::Usage;
use agentloop_journal::AgentError;

/// What one iteration's agent process produced.
#[derive(Debug, Clone, Default)]
pub struct AgentRun {
    pub finished: Finished,
    /// The agent's final message, where signals are read from.
    pub final_message: String,
    pub usage: Usage,
    pub cost_usd: f64,
    pub session_id: Option<String>,
    pub error: Option<AgentError>,
    /// When a usage limit resets (Unix milliseconds), if the agent said.
    pub resets_at_ms: Option<u64>,
    /// The file its tool calls edited most, and how often (twice or more).
    pub most_edited: Option<(String, u32)>,
}

/// The files and limits of one iteration.
pub struct Invocation<'a> {
    /// The run the agent works for (in its environment as `AGENTLOOP_RUN`, so its
    /// requests to control that run are known as its own).
    pub run_id: &'a str,
    /// The run's directory and the iteration's number (in its environment as
    /// `AGENTLOOP_RUN_DIR` and `AGENTLOOP_ITERATION`, for `agentloop mcp`).
    pub run_dir: &'a Path,
    pub iteration: u32,
    pub workdir: &'a Path,
    pub prompt: &'a str,
    /// `prompt.md` of the iteration, already written.
    pub prompt_file: &'a Path,
    /// Where the agent's raw output goes (capped).
    pub log: &'a Path,
    /// Where its pid (process group) is written while it runs.
    pub pid_file: &'a Path,
    /// The command it runs under (`[sandbox]`: `bwrap … --`); empty: none.
    pub wrap: Vec<std::ffi::OsString>,
}

pub trait Agent: Send {
    fn name(&self) -> &str;
    /// Runs one iteration; `should_stop` is polled and ends the agent's process group.
    fn run(&self, inv: &Invocation<'_>, should_stop: &mut dyn FnMut() -> bool) -> AgentRun;
    /// Files the program keeps in the work tree for itself (gitignore patterns), kept
    /// out of the agent's changes and commits.
    fn own_files(&self) -> &'static [&'static str] {
        &[]
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("unknown agent \"{name}\"")]
    Unknown { name: String, known: Vec<String> },
}

impl ResolveError {
    pub fn hint(&self) -> String {
        match self {
            ResolveError::Unknown { name, known } if known.is_empty() => format!(
                "define it in agentloop.toml:\n  [agents.{name}]\n  command = [\"my-agent\", \"--prompt-file\", \"{{prompt_file}}\"]\n  prompt = \"file\""
            ),
            ResolveError::Unknown { known, .. } => {
                format!("agents defined in the configuration: {}", known.join(", "))
            }
        }
    }
}

/// The agent called `name` in the configuration.
pub fn resolve(config: &Config, name: &str) -> Result<Box<dyn Agent>, ResolveError> {
    if let Some(ac) = config.agents.get(name) {
        return build(config, name, ac);
    }
    if BUILTIN.contains(&name) {
        return build(config, name, &AgentConfig::builtin(name));
    }
    Err(ResolveError::Unknown {
        name: name.to_string(),
        known: config
            .agents
            .keys()
            .cloned()
            .chain(BUILTIN.iter().map(|s| s.to_string()))
            .collect(),
    })
}

/// The agent called `name`, with only the tools that read: Claude Code without its
/// tools that write or run commands, Codex in its read-only sandbox, Qwen Code in its
/// `plan` and safe modes, Factory Droid with only its reading tools. The second value
/// says whether the CLI itself is held to reading; the others are not, and whoever runs
/// them gives them a copy to work in.
pub fn resolve_read_only(
    config: &Config,
    name: &str,
) -> Result<(Box<dyn Agent>, bool), ResolveError> {
    read_only(config, name, false)
}

/// [`resolve_read_only`] for a reviewer, which must not be steered by the tree it
/// reads: Claude Code also loads only the user's settings (no project or local
/// `.claude/settings*.json`, so no hook a worker wrote) and no tool server but those
/// it is given (`--strict-mcp-config`: no `.mcp.json`); Qwen Code runs in its safe
/// mode in an untrusted folder, as every read-only Qwen does. The other CLIs have no
/// such flags; the reviewer's copy without the worker's agent files is their defence.
pub fn resolve_reviewer(
    config: &Config,
    name: &str,
) -> Result<(Box<dyn Agent>, bool), ResolveError> {
    read_only(config, name, true)
}

fn read_only(
    config: &Config,
    name: &str,
    hermetic: bool,
) -> Result<(Box<dyn Agent>, bool), ResolveError> {
    let mut ac = match config.agents.get(name) {
        Some(ac) => ac.clone(),
        None if BUILTIN.contains(&name) => AgentConfig::builtin(name),
        None => return resolve(config, name).map(|a| (a, false)),
    };
    let held = match ac.kind.as_str() {
        "claude" => {
            ac.allowed_tools = Some(["Read", "Glob", "Grep", "LS"].map(String::from).to_vec());
            ac.disallowed_tools = Some(
                [
                    "Bash",
                    "Edit",
                    "MultiEdit",
                    "Write",
                    "NotebookEdit",
                    "WebFetch",
                    "WebSearch",
                ]
                .map(String::from)
                .to_vec(),
            );
            if hermetic {
                ac.args
                    .extend(["--setting-sources", "user", "--strict-mcp-config"].map(String::from));
            }
            true
        }
        "codex" => {
            ac.sandbox = Some("read-only".into());
            true
        }
        // Its `plan` mode refuses commands and edits; its safe mode loads no context
        // files, hooks (which plan mode would run), extensions, skills, tool servers or
        // memories; `qwen::setup` makes the folder untrusted (no project `.env`).
        "qwen" => {
            ac.permission_mode = Some(qwen::PLAN.into());
            ac.args.push("--safe-mode".into());
            true
        }
        // `droid exec` without `--auto` refuses its edit tools but runs a command its
        // model rates "low" risk, whatever it does (0.215.0 wrote a file so): only
        // the reading tools are offered.
        "droid" => {
            ac.permission_mode = Some(droid::READ_ONLY.into());
            true
        }
        // Its plan mode refuses its editor and the commands it knows to write, but a
        // script it runs still writes: not held.
        "cline" => {
            ac.permission_mode = Some(cline::PLAN.into());
            false
        }
        _ => false,
    };
    build(config, name, &ac).map(|a| (a, held))
}

/// An iteration's files for a unit test: all in `dir` but its log.
#[cfg(test)]
pub(crate) fn invocation_in<'a>(dir: &'a Path, log: &'a Path) -> Invocation<'a> {
    Invocation {
        run_id: "r",
        run_dir: dir,
        iteration: 1,
        workdir: dir,
        prompt: "p",
        prompt_file: dir,
        log,
        pid_file: dir,
        wrap: Vec::new(),
    }
}

/// The message of `error` as a run shows it: with `cli`'s hint when it is an auth
/// error; for a unit test.
#[cfg(test)]
pub(crate) fn hinted(error: Option<AgentError>, cli: &cli::CliKind) -> String {
    let mut run = AgentRun {
        error,
        ..AgentRun::default()
    };
    cli::with_auth_hint(&mut run, cli.kind, cli.auth_hint.expect("an auth hint"));
    run.error.map(|e| e.message).unwrap_or_default()
}

/// A CLI's recorded output under `fixtures/`, for a unit test.
#[cfg(test)]
pub(crate) fn recorded(dir: &str, name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(dir)
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Agent CLIs that work without any configuration.
pub use agentloop_config::BUILTIN_AGENTS as BUILTIN;

fn build(config: &Config, name: &str, ac: &AgentConfig) -> Result<Box<dyn Agent>, ResolveError> {
    use agentloop_config::AgentKind;
    let cli = match ac.kind {
        AgentKind::Command => return Ok(Box::new(command::CommandAgent::new(name, ac.clone()))),
        AgentKind::Claude => &claude::CLI,
        AgentKind::Codex => &codex::CLI,
        AgentKind::Gemini => &gemini::CLI,
        AgentKind::Opencode => &opencode::CLI,
        AgentKind::Aider => &aider::CLI,
        AgentKind::Copilot => &copilot::CLI,
        AgentKind::Qwen => &qwen::CLI,
        AgentKind::Droid => &droid::CLI,
        AgentKind::Cline => &cline::CLI,
    };
    Ok(Box::new(cli::CliAgent {
        name: name.to_string(),
        config: ac.clone(),
        prices: config.prices.clone(),
        cli,
    }))
}
