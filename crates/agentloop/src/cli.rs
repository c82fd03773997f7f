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
    #[command(
        after_help = "Examples:\n  agentloop demo\n  agentloop demo --dir /tmp/try-agentloop --json"
    )]
    Demo(DemoArgs),
    /// Write a commented agentloop.toml and a PLAN.md template here.
    #[command(
        after_help = "Example:\n  git init && agentloop init && $EDITOR PLAN.md && agentloop plan check"
    )]
    Init,
    /// Drive a plan to verified completion
    ///
    /// A fresh agent process per iteration; every "done" is checked by agentloop's own
    /// verification.
    ///
    /// When the run starts, agentloop records the content of its verification surface:
    /// the tests, the files a `Verify:` runs or names, CI configuration, the plan,
    /// agentloop.toml, [verify] protected, and files that configure the checks
    /// (`agentloop verify-surface` lists it). Before a claimed task is verified, the
    /// tree is compared with that baseline, across all iterations. A change does what
    /// [verify] on_protected_change says: "gate" (default) holds the task and waits
    /// for a person, showing each diff — `approve` moves the baseline, `reject`
    /// restores it and hands the task back; "restore" puts the baseline back before
    /// verifying and tells the agent; "allow" checks only each iteration's own diff
    /// against `protected`. New test files are fine; new files that configure or
    /// intercept the checks are not. The checks run on a clean copy of the agent's
    /// result (a detached git worktree with the baseline's files), so junk in the
    /// tree cannot make them pass.
    #[command(
        after_help = "Examples:\n  agentloop run\n  agentloop run docs/PLAN.md --agent codex --max-iterations 20\n  agentloop run --mode tdd --no-wait --json > events.jsonl"
    )]
    Run(RunArgs),
    /// Continue a run: unpause it, or drive it again if its driver is gone
    ///
    /// It keeps the flags the run was started with; a flag given here overrides one.
    #[command(
        after_help = "Examples:\n  agentloop resume\n  agentloop resume 20261122-104259 --max-iterations 80"
    )]
    Resume(ResumeArgs),
    /// Carry out the next step of a run and stop: one iteration, one verification, or
    /// one ship step, with what comes next (`resume --step`)
    #[command(after_help = "Examples:\n  agentloop next\n  agentloop next --run 20261122-104259")]
    Next(NextArgs),
    /// Show a run's state
    ///
    /// Tasks, attempts, budgets, cost, and what waits for a person.
    #[command(after_help = "Examples:\n  agentloop status\n  agentloop status --json | jq .tasks")]
    Status(StatusArgs),
    /// List the runs of this project.
    #[command(after_help = "Example:\n  agentloop runs --json")]
    Runs(JsonArg),
    /// Print a run's journal events.
    #[command(
        after_help = "Examples:\n  agentloop log\n  agentloop log --follow\n  agentloop log --json | jq 'select(.event.kind == \"iteration_finished\")'"
    )]
    Log(LogArgs),
    /// List the files that decide "done" for a run, and what changed in them
    ///
    /// The verification surface is recorded when a run starts: the tests (by the usual
    /// conventions), the files a `Verify:` runs or names, CI configuration, the plan,
    /// agentloop.toml, [verify] protected, and files that configure or intercept the
    /// checks (conftest.py, pytest.ini, jest/vitest configs, sitecustomize.py, *.pth,
    /// build.rs, the test sections of pyproject.toml, setup.cfg, tox.ini and
    /// package.json…), which count even when new. Before a claimed task is verified, the
    /// tree is compared with it.
    #[command(
        name = "verify-surface",
        after_help = "Examples:\n  agentloop verify-surface\n  agentloop verify-surface --json | jq .changes\n  agentloop verify-surface --accept     take your own edits as the new baseline"
    )]
    VerifySurface(SurfaceArgs),
    /// Pause a run at the next safe point
    ///
    /// The iteration in progress finishes; no new one starts until `resume`.
    #[command(after_help = "Example:\n  agentloop pause && agentloop resume")]
    Pause(RunSel),
    /// Stop a run after the current iteration (`--now`: kill the agent at once).
    #[command(
        after_help = "Examples:\n  agentloop stop\n  agentloop stop --now --run 20261122-104259"
    )]
    Stop(StopArgs),
    /// Approve the gate a run waits at
    ///
    /// The note reaches the next iteration. `--gate` releases a diff gate of a shipped
    /// run by name, whether the run waits at it yet or not.
    #[command(
        after_help = "Examples:\n  agentloop approve\n  agentloop approve --note \"keep the public API as it is\"\n  agentloop approve --gate security"
    )]
    Approve(ApproveArgs),
    /// Reject the gate a run waits at
    ///
    /// The note says why and reaches the next iteration.
    #[command(
        after_help = "Example:\n  agentloop reject --note \"the parser must not allocate per token\""
    )]
    Reject(NoteArgs),
    /// Skip a task (its dependents may go ahead)
    ///
    /// During an iteration of that task, the skip takes effect when the iteration ends.
    /// The reason goes into the handoff and the task's tracker issue.
    #[command(
        after_help = "Example:\n  agentloop skip T3 --reason \"the vendor API is gone; T4 covers it\""
    )]
    Skip(SkipArgs),
    /// Retry a task from scratch (unblocks it).
    #[command(after_help = "Example:\n  agentloop steer \"use SQLite\" && agentloop retry T2")]
    Retry(TaskArgs),
    /// Give the next iteration a note
    ///
    /// The note is in the next iteration's prompt, once.
    #[command(
        after_help = "Example:\n  agentloop steer \"the tests need DATABASE_URL=sqlite::memory:\""
    )]
    Steer(SteerArgs),
    /// List the agents agentloop knows, whether each is installed, and its version.
    #[command(after_help = "Example:\n  agentloop agents --json")]
    Agents(JsonArg),
    /// An MCP server on stdio for the agent: the current task, its checks and last
    /// failure, the plan's progress, and structured reports (complete, blocked,
    /// learning) that are journaled and judged like the text markers.
    #[command(
        after_help = "Example (Claude Code):\n  claude mcp add agentloop -- agentloop mcp\n  or `agentloop hook install --mcp`, which writes the project's .mcp.json"
    )]
    Mcp,
    /// Hook mode (Claude Code, Codex, Gemini CLI): start a run, install the hooks, and
    /// the hook entry points that read each event's JSON on stdin.
    #[command(
        subcommand,
        after_help = "Examples:\n  agentloop hook install && agentloop hook start PLAN.md   then work in Claude Code\n  agentloop hook uninstall"
    )]
    Hook(HookCommand),
    /// A terminal view of a run, with keys for pause, resume, stop and approve.
    #[command(
        after_help = "Keys: p pause · r resume · s stop · a approve · q or Ctrl-C quit\n\nExample:\n  agentloop watch"
    )]
    Watch(WatchArgs),
    /// Serve the web dashboard and the control API on this machine
    ///
    /// Runs, control requests and live events, behind a token; loopback by default.
    #[command(
        after_help = "Examples:\n  agentloop serve                 then open the printed link\n  agentloop serve --port 0        any free port"
    )]
    Serve(ServeArgs),
    /// Draft, check or import plans.
    #[command(subcommand)]
    Plan(PlanCommand),
    /// A queue of plans run one after another, each a run of its own.
    #[command(subcommand)]
    Queue(QueueCommand),
    /// Inspect the configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Check journals.
    #[command(subcommand)]
    Journal(JournalCommand),
    /// Remove what finished runs left: worktrees, their branches, clean copies
    ///
    /// Runs that may still go on keep theirs (`resume` needs them); the integration
    /// branch of a run is its result and stays.
    #[command(after_help = "Examples:\n  agentloop gc --dry-run\n  agentloop gc")]
    Gc(GcArgs),
}

#[derive(Debug, Args)]
pub struct GcArgs {
    /// Say what would go, remove nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct SurfaceArgs {
    #[command(flatten)]
    pub run: RunSel,
    /// JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Take every change listed (your own edits, made between iterations) as the new
    /// baseline; journaled. Refused from inside the agent's process tree.
    #[arg(long, conflicts_with = "json")]
    pub accept: bool,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Directory to create the example repository in (default: a new temp directory).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    #[command(flatten)]
    pub out: OutputArgs,
}

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
    #[arg(long)]
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
    /// Time the run may spend in iterations, e.g. "90m" or "4h".
    #[arg(long, value_name = "DURATION")]
    pub max_duration: Option<String>,
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

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub run: RunSel,
    /// The state as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct JsonArg {
    /// JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    #[command(flatten)]
    pub run: RunSel,
    /// Keep printing events as they are appended, until the run ends.
    #[arg(long, short)]
    pub follow: bool,
    /// One JSON object per event.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct StopArgs {
    /// Kill the agent's whole process group now instead of waiting for the iteration.
    #[arg(long)]
    pub now: bool,
    #[command(flatten)]
    pub run: RunSel,
}

#[derive(Debug, Args)]
pub struct NoteArgs {
    /// A note recorded with the decision and given to the next iteration.
    #[arg(long)]
    pub note: Option<String>,
    #[command(flatten)]
    pub run: RunSel,
}

#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// A note recorded with the decision and given to the next iteration.
    #[arg(long)]
    pub note: Option<String>,
    /// A diff gate: security, database, external, architecture or deploy.
    #[arg(long, value_parser = ["security", "database", "external", "architecture", "deploy"])]
    pub gate: Option<String>,
    #[command(flatten)]
    pub run: RunSel,
}

#[derive(Debug, Args)]
pub struct SkipArgs {
    /// The task's id, as in the plan.
    pub task: String,
    /// Why it is skipped.
    #[arg(long)]
    pub reason: Option<String>,
    #[command(flatten)]
    pub run: RunOpt,
}

#[derive(Debug, Args)]
pub struct TaskArgs {
    /// The task's id, as in the plan.
    pub task: String,
    #[command(flatten)]
    pub run: RunOpt,
}

#[derive(Debug, Args)]
pub struct SteerArgs {
    /// What the next iteration's agent should know.
    pub note: String,
    #[command(flatten)]
    pub run: RunOpt,
}

#[derive(Debug, Subcommand)]
pub enum PlanCommand {
    /// Validate a plan and print its task graph
    ///
    /// Ids, dependencies, cycles, agents, placeholders and front-matter settings.
    #[command(
        after_help = "Examples:\n  agentloop plan check\n  agentloop plan check docs/PLAN.md --json"
    )]
    Check {
        /// The plan file.
        #[arg(default_value = "PLAN.md")]
        plan: PathBuf,
        /// The parsed plan as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Convert a snarktank/ralph prd.json or a Task Master tasks.json into PLAN.md.
    #[command(
        after_help = "Examples:\n  agentloop plan import prd.json\n  agentloop plan import .taskmaster/tasks/tasks.json -o - | less"
    )]
    Import {
        /// The file to convert (prd.json, Task Master's tasks.json), or an issue
        /// tracker: `github:OWNER/REPO?label=L`, `gitlab:GROUP/PROJECT?label=L`,
        /// `linear:TEAM?state=S` (tokens from GITHUB_TOKEN/GH_TOKEN, GITLAB_TOKEN,
        /// LINEAR_API_KEY).
        file: PathBuf,
        /// The tracker's API (GitHub Enterprise, self-hosted GitLab).
        #[arg(long)]
        api_url: Option<String>,
        /// Where to write the plan (`-` for stdout).
        #[arg(long, short, default_value = "PLAN.md")]
        output: PathBuf,
        /// Overwrite the output file if it exists.
        #[arg(long)]
        force: bool,
    },
    /// Draft PLAN.md from a goal (or a spec) with the configured agent, check it, and
    /// write it once you approve
    ///
    /// The agent reads the repository in a throwaway copy (Claude Code and Codex with
    /// their read-only tools too) and answers with the plan. agentloop parses it and
    /// runs every check it names once on the current tree: a check that cannot run
    /// is refused, one that passes already is flagged. Then it asks before writing.
    #[command(
        after_help = "Examples:\n  agentloop plan new \"add a --json flag to the status command\"\n  agentloop plan new --from docs/SPEC.md --yes\n  agentloop plan new \"port the parser to nom\" --agent codex -o PORT.md"
    )]
    New {
        /// What the plan is for.
        goal: Option<String>,
        /// A spec to plan from (Markdown or text).
        #[arg(long, value_name = "SPEC")]
        from: Option<PathBuf>,
        /// The agent that drafts it (default: `[run] agent`).
        #[arg(long)]
        agent: Option<String>,
        /// Where to write the plan.
        #[arg(long, short, default_value = "PLAN.md")]
        output: PathBuf,
        /// Accept the draft without asking (Gate 1 passed by you, now).
        #[arg(long, short)]
        yes: bool,
        /// Replace the output file if it exists.
        #[arg(long)]
        force: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum QueueCommand {
    /// Add a plan to the queue
    #[command(
        after_help = "Examples:\n  agentloop queue add plans/auth.md\n  agentloop queue add plans/billing.md --after q1"
    )]
    Add {
        /// The plan file (checked now: a plan that does not read is not queued).
        plan: PathBuf,
        /// An entry that must be done first (repeatable).
        #[arg(long, value_name = "ID")]
        after: Vec<String>,
    },
    /// List the queue: each entry's state, run and what holds it
    List {
        /// The entries as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run the queue: resume the runs a person has answered, then start each plan
    /// whose entries to wait for are done, until none is left that can start
    ///
    /// A plan that waits for a person (a gate, a blocked task, a spent budget) is left
    /// blocked and the queue goes on with the plans that do not wait for it. Exits 0
    /// when every entry is done, 5 when some wait for a person, 1 when a run failed.
    Run,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the effective configuration and where each value came from.
    #[command(
        after_help = "Examples:\n  agentloop config show\n  agentloop config show --json | jq '.[] | select(.source != \"default\")'"
    )]
    Show {
        /// Include this plan's front matter.
        #[arg(long, default_value = "PLAN.md")]
        plan: PathBuf,
        /// Every key with its value and source as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum JournalCommand {
    /// Check every line's checksum, sequence and schema.
    #[command(after_help = "Example:\n  agentloop journal verify")]
    Verify {
        #[command(flatten)]
        run: RunSel,
    },
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
    /// Add agentloop's hooks to the agent CLI's settings, next to what is there: for
    /// Claude Code Stop, SessionStart, StopFailure, TaskCompleted in
    /// `.claude/settings.json`; for Codex Stop in `.codex/hooks.json` (and its `hooks`
    /// feature on in `.codex/config.toml`); for Gemini CLI AfterAgent in
    /// `.gemini/settings.json`.
    Install {
        /// The user's settings instead of the project's.
        #[arg(long)]
        user: bool,
        /// The CLI whose sessions drive the run.
        #[arg(long, value_enum, default_value_t = HookAgent::Claude)]
        agent: HookAgent,
        /// Also PreToolUse: deny edits to protected paths and outside the current
        /// task's scope.
        #[arg(long)]
        guard: bool,
        /// Also TeammateIdle (agent teams): keep a teammate working while a task is
        /// ready for it.
        #[arg(long)]
        team: bool,
        /// Also register `agentloop mcp` as the CLI's MCP server (the current task and
        /// structured reports as tools).
        #[arg(long)]
        mcp: bool,
    },
    /// Remove exactly the hooks `install` added.
    Uninstall {
        /// The user's settings instead of the project's.
        #[arg(long)]
        user: bool,
        /// The CLI whose settings to clean.
        #[arg(long, value_enum, default_value_t = HookAgent::Claude)]
        agent: HookAgent,
    },
    /// Hook entry (JSON on stdin): the session's turn ended; verify it and answer with
    /// the next task, or let the session stop (Claude Code's and Codex's Stop).
    Stop,
    /// Hook entry: Gemini CLI's AfterAgent, handled as a Stop.
    AfterAgent,
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
    /// Hook entry: a person typed one of the plugin's `/agentloop:…` commands; it is
    /// done from the exact arguments, with no shell in between.
    PromptExpansion,
    /// Any other event: answered with a message and no effect, never a block.
    #[command(external_subcommand, hide = true)]
    Other(Vec<String>),
}

/// An agent CLI with hooks that can drive a run from inside its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HookAgent {
    Claude,
    Codex,
    Gemini,
}

impl HookCommand {
    /// The subcommand name of a hook entry point (`None` for start/install/uninstall).
    pub fn event(&self) -> Option<&'static str> {
        Some(match self {
            HookCommand::Stop => "stop",
            HookCommand::AfterAgent => "after-agent",
            HookCommand::SubagentStop => "subagent-stop",
            HookCommand::SessionStart => "session-start",
            HookCommand::StopFailure => "stop-failure",
            HookCommand::TaskCompleted => "task-completed",
            HookCommand::TeammateIdle => "teammate-idle",
            HookCommand::PreToolUse => "pre-tool-use",
            HookCommand::PromptExpansion => "prompt-expansion",
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
    #[command(flatten)]
    pub run: RunSel,
}
