//! Arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

const EXIT_CODES: &str = "Exit codes:
  0    the plan completed and every task was verified
  1    internal failure
  2    bad input (usage, configuration, plan)
  3    a budget or cap was reached
  4    a breaker tripped (the run is blocked on it)
  5    waiting for a person (a gate or a blocked task)
  6    stopped on request
  130  interrupted";

#[derive(Debug, Parser)]
#[command(name = "agentloop", version, about = "Run AI coding agents through a plan until it is verifiably done", after_help = EXIT_CODES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a real loop over the bundled example project in a temporary git repository.
    Demo(DemoArgs),
    /// Write a commented agentloop.toml and a PLAN.md template here.
    Init,
    /// Drive a plan to verified completion.
    Run(RunArgs),
    /// Continue a run: unpause it, or drive it again if its driver is gone.
    Resume(ResumeArgs),
    /// Show a run's state.
    Status(StatusArgs),
    /// List the runs of this project.
    Runs(JsonArg),
    /// Print a run's journal events.
    Log(LogArgs),
    /// Pause a run at the next safe point.
    Pause(RunRef),
    /// Stop a run after the current iteration (`--now`: kill the agent at once).
    Stop(StopArgs),
    /// Approve the gate a run waits at.
    Approve(NoteArgs),
    /// Reject the gate a run waits at.
    Reject(NoteArgs),
    /// Skip a task (its dependents may go ahead).
    Skip(TaskArgs),
    /// Retry a task from scratch (unblocks it).
    Retry(TaskArgs),
    /// Give the next iteration a note.
    Steer(SteerArgs),
    /// List the agents agentloop knows, whether each is installed, and its version.
    Agents(JsonArg),
    /// Claude Code hook mode: start a run, install the hooks, and the hook entry points
    /// that read each event's JSON on stdin.
    #[command(
        subcommand,
        after_help = "Examples:\n  agentloop hook install && agentloop hook start PLAN.md   then work in Claude Code\n  agentloop hook uninstall"
    )]
    Hook(HookCommand),
    /// A terminal view of a run, with keys for pause, resume, stop and approve.
    Watch(WatchArgs),
    /// Serve the control API (runs, control requests, live events) on this machine.
    Serve(ServeArgs),
    /// Check or import plans.
    #[command(subcommand)]
    Plan(PlanCommand),
    /// Inspect the configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Check journals.
    #[command(subcommand)]
    Journal(JournalCommand),
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Directory to create the example repository in (default: a new temp directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    #[command(flatten)]
    pub out: OutputArgs,
}

#[derive(Debug, Args, Clone, Default)]
pub struct OutputArgs {
    /// Stream journal events as JSON lines on stdout.
    #[arg(long)]
    pub json: bool,
    /// No progress on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// Exit (code 5, or 4 for a breaker) instead of waiting when the run needs a person.
    #[arg(long)]
    pub no_wait: bool,
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
    /// quick, tdd, pair or checkpoint.
    #[arg(long)]
    pub mode: Option<String>,
    /// Iterations for the whole run.
    #[arg(long, value_name = "N")]
    pub max_iterations: Option<u32>,
    /// Dollars the run may spend on agents.
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// Time the run may spend in iterations, e.g. "90m" or "4h".
    #[arg(long, value_name = "DURATION")]
    pub max_duration: Option<String>,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The run (an id or a unique prefix; default: the one in this work tree).
    pub run: Option<String>,
    #[command(flatten)]
    pub settings: SettingsFlags,
    /// Drive a hook-mode run headlessly with the run's agent instead of in its Claude
    /// Code session.
    #[arg(long)]
    pub headless: bool,
    #[command(flatten)]
    pub out: OutputArgs,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    pub run: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct JsonArg {
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    pub run: Option<String>,
    /// Keep printing events as they are appended.
    #[arg(long, short)]
    pub follow: bool,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RunRef {
    /// The run (id or unique prefix; default: the newest).
    #[arg(long)]
    pub run: Option<String>,
}

#[derive(Debug, Args)]
pub struct StopArgs {
    /// Kill the agent's whole process group now instead of waiting for the iteration.
    #[arg(long)]
    pub now: bool,
    #[command(flatten)]
    pub run: RunRef,
}

#[derive(Debug, Args)]
pub struct NoteArgs {
    /// A note recorded with the decision (and given to the next iteration).
    #[arg(long)]
    pub note: Option<String>,
    #[command(flatten)]
    pub run: RunRef,
}

#[derive(Debug, Args)]
pub struct TaskArgs {
    pub task: String,
    #[command(flatten)]
    pub run: RunRef,
}

#[derive(Debug, Args)]
pub struct SteerArgs {
    pub note: String,
    #[command(flatten)]
    pub run: RunRef,
}

#[derive(Debug, Subcommand)]
pub enum PlanCommand {
    /// Validate a plan and print its task graph.
    Check {
        #[arg(default_value = "PLAN.md")]
        plan: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Convert a snarktank/ralph prd.json or a Task Master tasks.json into PLAN.md.
    Import {
        file: PathBuf,
        /// Where to write the plan (`-` for stdout).
        #[arg(long, short, default_value = "PLAN.md")]
        output: PathBuf,
        /// Overwrite the output file if it exists.
        #[arg(long)]
        force: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the effective configuration and where each value came from.
    Show {
        /// Include this plan's front matter.
        #[arg(long, default_value = "PLAN.md")]
        plan: PathBuf,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum JournalCommand {
    /// Check every line's checksum, sequence and schema.
    Verify { run: Option<String> },
}

#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// Create a hook-mode run for a plan; the next Stop of a Claude Code session in
    /// this project starts its first task and binds the run to that session.
    Start {
        /// The plan file.
        #[arg(default_value = "PLAN.md")]
        plan: PathBuf,
        /// quick, tdd, pair or checkpoint.
        #[arg(long)]
        mode: Option<String>,
    },
    /// Add agentloop's hooks (Stop, SessionStart, StopFailure, TaskCompleted) to the
    /// project's `.claude/settings.json`, next to what is there.
    Install {
        /// The user's Claude Code settings instead of the project's.
        #[arg(long)]
        user: bool,
        /// Also PreToolUse: deny edits to protected paths and outside the current
        /// task's scope.
        #[arg(long)]
        guard: bool,
        /// Also TeammateIdle (agent teams): keep a teammate working while a task is
        /// ready for it.
        #[arg(long)]
        team: bool,
    },
    /// Remove exactly the hooks `install` added.
    Uninstall {
        /// The user's Claude Code settings instead of the project's.
        #[arg(long)]
        user: bool,
    },
    /// Hook entry (JSON on stdin): the session's turn ended; verify it and answer with
    /// the next task, or let the session stop.
    Stop,
    /// Hook entry: a subagent finished; the session's turn goes on (nothing to do).
    SubagentStop,
    /// Hook entry: a session started; gives it the run's current task as context.
    SessionStart,
    /// Hook entry: the turn ended on an API error; a rate limit makes the run wait.
    StopFailure,
    /// Hook entry (agent teams): refuses a task completion that verification fails.
    TaskCompleted,
    /// Hook entry (agent teams): keeps an idle teammate on a ready task.
    TeammateIdle,
    /// Hook entry: denies edits to protected paths and outside the task's scope.
    PreToolUse,
    /// Any other event: answered with a message and no effect, never a block.
    #[command(external_subcommand, hide = true)]
    Other(Vec<String>),
}

impl HookCommand {
    /// The subcommand name of a hook entry point (`None` for start/install/uninstall).
    pub fn event(&self) -> Option<&'static str> {
        Some(match self {
            HookCommand::Stop => "stop",
            HookCommand::SubagentStop => "subagent-stop",
            HookCommand::SessionStart => "session-start",
            HookCommand::StopFailure => "stop-failure",
            HookCommand::TaskCompleted => "task-completed",
            HookCommand::TeammateIdle => "teammate-idle",
            HookCommand::PreToolUse => "pre-tool-use",
            HookCommand::Other(_)
            | HookCommand::Start { .. }
            | HookCommand::Install { .. }
            | HookCommand::Uninstall { .. } => {
                return None;
            }
        })
    }
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on; anything but loopback should sit behind TLS.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: String,
    /// Port (0: any free port).
    #[arg(long, default_value_t = 7171)]
    pub port: u16,
}

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The run (id or unique prefix; default: the newest).
    pub run: Option<String>,
}
