//! Running an agent CLI for one iteration: shared by every adapter, which only says
//! how to build the command line and how to read the output.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::time::Duration;

use agentloop_config::{AgentConfig, Price};
use agentloop_exec::supervise::{self, Spec};
use agentloop_journal::{AgentError, AgentErrorKind};

use crate::parsed::Parsed;
use crate::{Agent, AgentRun, Invocation};

/// Where the prompt goes: never the command line, where a long prompt cannot start
/// the program (the kernel's limit on one argument is 128 KiB).
pub enum PromptIn {
    Stdin,
    /// `prompt.md` of the iteration, named in the command line.
    File,
}

/// What an adapter says about its CLI: how to call it and how to read what it prints.
pub struct CliKind {
    /// The built-in name and the program run when `command` is not set.
    pub kind: &'static str,
    /// How to install it, for the message when it cannot be started.
    pub install: &'static str,
    pub prompt: PromptIn,
    /// The command line for an iteration.
    pub argv: fn(&AgentConfig, &Invocation<'_>) -> Vec<String>,
    /// Variables it needs to run headless in a fresh repository (the user's own `env`
    /// for the agent wins).
    pub env: &'static [(&'static str, &'static str)],
    /// What it needs written before it starts (in the iteration's directory), and the
    /// variables that name it; a variable the agent's `env` or agentloop's own
    /// environment sets is left as it is.
    pub setup: fn(&AgentConfig, &Invocation<'_>) -> Vec<(&'static str, String)>,
    /// Files it keeps in the work tree for itself (gitignore patterns): never the
    /// agent's changes.
    pub own_files: &'static [&'static str],
    pub parse: fn(&str) -> Parsed,
    /// What the CLI wrote to files of the iteration (Copilot's usage), into `Parsed`.
    pub files: fn(&Invocation<'_>, &mut Parsed),
    /// A last look at the run (exit codes that mean something to this CLI).
    pub finish: fn(&mut AgentRun),
    /// What to check when its key is refused, where its own message does not say.
    pub auth_hint: Option<&'static str>,
}

/// The CLI needs nothing written before it starts.
pub fn no_setup(_: &AgentConfig, _: &Invocation<'_>) -> Vec<(&'static str, String)> {
    Vec::new()
}

/// Says what to check after a refused key's message: "… (qwen: check …)".
pub fn with_auth_hint(run: &mut AgentRun, kind: &str, hint: &str) {
    if let Some(e) = run
        .error
        .as_mut()
        .filter(|e| e.kind == AgentErrorKind::Auth)
    {
        e.message = format!("{} ({kind}: {hint})", e.message.trim_end_matches('.'));
    }
}

/// Leaves the run as the output said.
pub fn keep(_: &mut AgentRun) {}

/// The CLI writes nothing else to read.
pub fn no_files(_: &Invocation<'_>, _: &mut Parsed) {}

/// An agent CLI run one fresh process per iteration.
pub struct CliAgent {
    pub name: String,
    pub config: AgentConfig,
    /// `[prices]`, for CLIs that report tokens but no cost.
    pub prices: BTreeMap<String, Price>,
    pub cli: &'static CliKind,
}

impl Agent for CliAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn run(&self, inv: &Invocation<'_>, should_stop: &mut dyn FnMut() -> bool) -> AgentRun {
        let mut run = self.run_cli(inv, should_stop);
        (self.cli.finish)(&mut run);
        if let Some(hint) = self.cli.auth_hint {
            with_auth_hint(&mut run, self.cli.kind, hint);
        }
        run
    }

    fn own_files(&self) -> &'static [&'static str] {
        self.cli.own_files
    }
}

impl CliAgent {
    /// The cost of what the CLI reported without one, from `[prices]`: per model
    /// where it says which models answered (Gemini's routing picks them), else at the
    /// configured model's price.
    fn priced(&self, p: &Parsed) -> f64 {
        let per_model: Vec<f64> = p
            .by_model
            .iter()
            .filter_map(|(model, usage)| Some(self.prices.get(model)?.cost(usage)))
            .collect();
        if !per_model.is_empty() {
            return per_model.iter().sum();
        }
        self.config
            .model
            .as_ref()
            .and_then(|m| self.prices.get(m))
            .map(|price| price.cost(&p.usage))
            .unwrap_or(0.0)
    }

    fn run_cli(&self, inv: &Invocation<'_>, should_stop: &mut dyn FnMut() -> bool) -> AgentRun {
        let cli = self.cli;
        let argv = (cli.argv)(&self.config, inv);
        let program = argv.first().cloned().unwrap_or_default();
        let stdin = matches!(cli.prompt, PromptIn::Stdin).then(|| inv.prompt.as_bytes().to_vec());
        let mut spec = agent_spec(&self.config, inv, argv, stdin);
        for (k, v) in cli.env {
            if !self.config.env.contains_key(*k) {
                spec.env.push(((*k).into(), (*v).into()));
            }
        }
        for (k, v) in (cli.setup)(&self.config, inv) {
            if !self.config.env.contains_key(k) && std::env::var_os(k).is_none() {
                spec.env.push((k.into(), v.into()));
            }
        }
        spec.tail_bytes = 4 * 1024 * 1024;
        let f = match supervise::run(spec, should_stop) {
            Ok(f) => f,
            Err(e) => {
                return AgentRun {
                    error: Some(AgentError {
                        kind: AgentErrorKind::Spawn,
                        message: format!(
                            "cannot start `{program}`: {e} (install it: {})",
                            cli.install
                        ),
                    }),
                    ..AgentRun::default()
                };
            }
        };
        let mut p = (cli.parse)(&String::from_utf8_lossy(&f.tail));
        (cli.files)(inv, &mut p);
        // A usage limit that names its reset time ("resets 3:45pm") is waited out exactly.
        if p.resets_at_ms.is_none()
            && let Some(e) = p
                .error
                .as_ref()
                .filter(|e| e.kind == AgentErrorKind::RateLimit)
        {
            let now = jiff::Zoned::now();
            p.resets_at_ms = crate::parsed::reset_from_text(&e.message, &now)
                .or_else(|| crate::parsed::retry_in_from_text(&e.message, &now));
        }
        let cost_usd = p.cost_usd.unwrap_or_else(|| self.priced(&p));
        let error = if f.timed_out {
            Some(AgentError {
                kind: AgentErrorKind::Timeout,
                message: format!("{} ran past its timeout", cli.kind),
            })
        } else if p.error.is_none()
            && f.exit_code != Some(0)
            && !f.killed
            && p.final_message.is_empty()
        {
            Some(AgentError {
                kind: AgentErrorKind::Other,
                message: match (f.exit_code, f.signal) {
                    (Some(code), _) => format!("{} exited {code} without a result", cli.kind),
                    (None, Some(sig)) => {
                        format!("{} was killed by signal {sig} without a result", cli.kind)
                    }
                    _ => format!("{} ended without a result", cli.kind),
                },
            })
        } else {
            p.error
        };
        AgentRun {
            finished: f,
            final_message: p.final_message,
            usage: p.usage,
            cost_usd,
            session_id: p.session_id,
            error,
            resets_at_ms: p.resets_at_ms,
            most_edited: crate::parsed::most_edited(&p.edits),
        }
    }
}

/// How any agent process runs: in the work tree, with the allow-listed environment
/// plus the agent's `env`, its timeout and output cap, logged to `agent.log`; only its
/// stdout is kept for the final message.
pub fn agent_spec(
    config: &AgentConfig,
    inv: &Invocation<'_>,
    argv: Vec<String>,
    stdin: Option<Vec<u8>>,
) -> Spec {
    let mut argv = argv.into_iter();
    let mut spec = Spec::new(argv.next().unwrap_or_default(), inv.workdir);
    spec.args = argv.map(OsString::from).collect();
    spec.env = config
        .env
        .iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
    spec.env.push(("AGENTLOOP_RUN".into(), inv.run_id.into()));
    spec.env.push((
        "AGENTLOOP_RUN_DIR".into(),
        inv.run_dir.as_os_str().to_owned(),
    ));
    spec.env.push((
        "AGENTLOOP_ITERATION".into(),
        inv.iteration.to_string().into(),
    ));
    // What the agent leaves behind is known as this iteration's (workers run at once).
    spec.owner = Some(inv.pid_file.display().to_string());
    spec.wrap = inv.wrap.clone();
    spec.pass_env = Some(config.allowed_env());
    spec.stdin = stdin;
    spec.timeout = config.timeout;
    spec.output_cap = config.output_cap;
    spec.log = Some(inv.log.to_path_buf());
    spec.pid_file = Some(inv.pid_file.to_path_buf());
    spec.grace = Duration::from_secs(5);
    spec.tail_stdout_only = true;
    spec
}

/// The program and fixed arguments: `command` from the config, or the kind's name.
pub fn base_argv(kind: &str, config: &AgentConfig) -> Vec<String> {
    if config.command.is_empty() {
        vec![kind.to_string()]
    } else {
        config.command.clone()
    }
}
