//! Starting and driving a run: `run`, `resume`, `next`, and what they share.

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args, Clone, Default)]
pub struct OutputArgs {
    /// Stream every journal event as a JSON line on stdout.
    #[arg(long)]
    pub json: bool,
    /// No progress on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// Exit (code 5, or 4 for a breaker) instead of waiting when the run needs a person.
    #[arg(long)]
    pub no_wait: bool,
    /// Carry out one decision of the policy (an iteration, a verification, a ship
    /// step) and stop, saying what was done and what comes next.
    #[arg(long)]
    pub step: bool,
    /// Between iterations, a menu on the terminal: continue, debug, validate, status,
    /// finish, exit (the run is saved).
    #[arg(long)]
    pub interactive: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The plan file.
    #[arg(default_value = "PLAN.md")]
    pub plan: PathBuf,
    #[command(flatten)]
    pub settings: SettingsFlags,
    /// Name the new run (default: a new time-based id).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// Allow a cost budget over $100, the ceiling.
    #[arg(long)]
    pub force: bool,
    /// Proceed without confirmation: none of the gates that only confirm (plan
    /// approval, the plan's review, after each task, the final review); the gates of
    /// risk stay (`[run] confirm = false`).
    #[arg(long, short = 'y')]
    pub yes: bool,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// The flags that set a run's configuration. They are recorded with the run: `resume`
/// keeps them, and one given to `resume` overrides its recorded value.
#[derive(Debug, Args, Clone, Default)]
pub struct SettingsFlags {
    /// Agent for tasks that name none (a name from [agents.*] or a built-in one).
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Agent tried when a task keeps failing with the main one.
    #[arg(long, value_name = "NAME")]
    pub fallback_agent: Option<String>,
    /// quick, tdd, pair, checkpoint or swarm (several workers at once).
    #[arg(long, value_parser = ["quick", "tdd", "pair", "checkpoint", "swarm"])]
    pub mode: Option<String>,
    /// Agents at work at once, each task in its own git worktree, merged onto the
    /// run's integration branch through the verified merge queue (default 1: in this
    /// working tree; 4 in swarm mode).
    #[arg(long, value_name = "N")]
    pub workers: Option<u32>,
    /// Work in a worktree on the run's integration branch even with one worker, so you
    /// can go on working in this tree meanwhile.
    #[arg(long)]
    pub isolate: bool,
    /// Iterations for the whole run.
    #[arg(long, value_name = "N")]
    pub max_iterations: Option<u32>,
    /// Dollars the run may spend on agents.
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// The run's own wall time it may take while running (not waiting for a person), e.g. "90m" or "4h".
    #[arg(long, value_name = "DURATION")]
    pub max_duration: Option<String>,
    /// `off` or `workspace`: each agent process under bubblewrap, confined to its
    /// working directory, secrets hidden, its network only to its model API and
    /// `[sandbox] allow_hosts`; what it refused is journaled and in the next prompt.
    #[arg(long, value_name = "MODE", value_parser = ["off", "workspace"])]
    pub sandbox: Option<String>,
}

/// Which run: by id or unique prefix, as an argument or with `--run`. Without one,
/// the run of this work tree that can take the request (the one waiting at a gate
/// for approve and reject, the unfinished one for the others); when several could,
/// the command lists them and does nothing.
#[derive(Debug, Args)]
pub struct RunSel {
    /// The run (an id or a unique prefix).
    #[arg(value_name = "RUN")]
    pub run: Option<String>,
    /// The run, as an option (the same as the argument).
    #[arg(long = "run", value_name = "RUN", conflicts_with = "run")]
    pub run_opt: Option<String>,
}

impl RunSel {
    pub fn get(&self) -> Option<&str> {
        self.run.as_deref().or(self.run_opt.as_deref())
    }
}

/// Which run, for commands whose argument is something else (a task, a note).
#[derive(Debug, Args)]
pub struct RunOpt {
    /// The run (an id or a unique prefix; default: the run of this work tree that can
    /// take the request).
    #[arg(long, value_name = "RUN")]
    pub run: Option<String>,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    #[command(flatten)]
    pub run: RunSel,
    #[command(flatten)]
    pub settings: SettingsFlags,
    /// Drive a hook-mode run headlessly with the run's agent instead of in its Claude
    /// Code session.
    #[arg(long)]
    pub headless: bool,
    /// Add dollars to the cost budget (`+10`), journaled.
    #[arg(long, value_name = "+USD", allow_hyphen_values = true)]
    pub budget: Option<String>,
    /// Add tokens to the token budget (`+2M`, `+500k`).
    #[arg(long, value_name = "+N")]
    pub tokens: Option<String>,
    /// Add time to the time budget (`+1h`).
    #[arg(long, value_name = "+DURATION")]
    pub time: Option<String>,
    /// Add iterations to the iteration budget (`+20`).
    #[arg(long, value_name = "+N")]
    pub iterations: Option<String>,
    /// Allow a cost budget over $100, the ceiling.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub out: OutputArgs,
}

#[derive(Debug, Args)]
pub struct NextArgs {
    #[command(flatten)]
    pub run: RunSel,
    /// No progress on stderr (what was done and what comes next is still said).
    #[arg(long, short)]
    pub quiet: bool,
}
