//! Arguments: the commands (here), how a run is started and driven (`run`), the
//! requests and views of a run (`control`), plans, the queue, configuration and the
//! journal (`plans`), and hook mode (`hook`).

mod control;
mod hook;
mod plans;
mod run;

pub use control::*;
pub use hook::*;
pub use plans::*;
pub use run::*;

use clap::{Args, Parser, Subcommand};

const EXIT_CODES: &str = "Examples:
  agentloop demo                        the bundled example, no account or network
  agentloop init && agentloop run       a plan for this project, then run it
  agentloop status                      where the run is

Exit codes:
  0    the plan completed and every task was verified
  1    internal failure
  2    bad input (usage, configuration, plan)
  3    a budget or cap was reached
  4    a breaker tripped (the run is blocked on it)
  5    waiting for a person (a gate or a blocked task)
  6    stopped on request
  7    a service the run needs failed (the journal's store did not answer, or is gone)
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
    /// Write a short agentloop.toml (the agent, the checks, the budgets) and a PLAN.md
    /// template here.
    ///
    /// The checks are the project's own test, build and lint commands when it has them
    /// (Cargo, npm/pnpm/yarn, pytest/tox/nox, go, gradle, maven, make). `--full` writes
    /// every section, commented. The file names the configuration's JSON Schema, which
    /// is written into .agentloop/ for editors that complete and check keys.
    #[command(
        after_help = "Examples:\n  git init && agentloop init && $EDITOR PLAN.md && agentloop plan check\n  agentloop init --full"
    )]
    Init(InitArgs),
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
    /// Skip a task (its dependents may go ahead), or a required skill
    ///
    /// During an iteration of that task, the skip takes effect when the iteration ends.
    /// The reason goes into the handoff and the task's tracker issue. With `--skill`, a
    /// skill `[prompt.require_skills]` names is no longer asked of the run's
    /// iterations, from the next one on; its reason is required, and the handoff keeps
    /// it.
    #[command(
        after_help = "Examples:\n  agentloop skip T3 --reason \"the vendor API is gone; T4 covers it\"\n  agentloop skip --skill root-cause --reason \"no instrumentation in this repo\""
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
    #[command(
        subcommand,
        after_help = "Examples:\n  agentloop plan new \"add a --json flag to the CLI\"\n  agentloop plan check --baseline\n  agentloop plan import \"github:OWNER/REPO?label=agentloop\""
    )]
    Plan(PlanCommand),
    /// A queue of plans run one after another, each a run of its own.
    #[command(
        subcommand,
        after_help = "Examples:\n  agentloop queue add plans/auth.md && agentloop queue add plans/billing.md --after q1\n  agentloop queue run\n  agentloop queue list"
    )]
    Queue(QueueCommand),
    /// Inspect the configuration.
    #[command(
        subcommand,
        after_help = "Examples:\n  agentloop config show\n  agentloop config schema > agentloop.schema.json"
    )]
    Config(ConfigCommand),
    /// Check journals.
    #[command(
        subcommand,
        after_help = "Examples:\n  agentloop journal verify\n  agentloop journal verify --file j.jsonl"
    )]
    Journal(JournalCommand),
    /// The journal in PostgreSQL (`[store] url`): tables, runs, export.
    #[command(
        subcommand,
        after_help = "Examples:\n  agentloop store migrate\n  agentloop store runs\n  agentloop store export RUN > journal.jsonl"
    )]
    Store(StoreCommand),
    /// Remove what finished runs left: worktrees, their branches, clean copies
    ///
    /// Runs that may still go on keep theirs (`resume` needs them); the integration
    /// branch of a run is its result and stays.
    #[command(after_help = "Examples:\n  agentloop gc --dry-run\n  agentloop gc")]
    Gc(GcArgs),
    /// Take a run's verified work onto your branch
    ///
    /// A run with workers (or `--isolate`) leaves its work on its integration branch
    /// (`agentloop/RUN`), every commit of it verified. `land` fast-forwards the branch
    /// checked out here to it; when your branch moved since the run started it refuses,
    /// unless `--merge` (a merge commit; one that conflicts is undone).
    #[command(
        after_help = "Examples:\n  agentloop land --dry-run\n  agentloop land\n  agentloop land 20261122-104259 --merge"
    )]
    Land(LandArgs),
    /// Print a run's handoff; `--to-issues` files its follow-ups on the tracker
    ///
    /// The follow-ups are the tasks not done (with why) and the open questions, one
    /// issue each on `[tracker] source` (GitHub, GitLab or Linear), once: an open issue
    /// with the same title is not filed again.
    #[command(
        after_help = "Examples:\n  agentloop handoff\n  agentloop handoff --to-issues --dry-run\n  agentloop handoff 20261122-104259 --to-issues"
    )]
    Handoff(HandoffArgs),
    /// Print the shell completion script for SHELL
    ///
    /// Load it in the shell's startup file, or install it where the shell looks (the
    /// Debian package installs bash, zsh and fish completions).
    #[command(
        after_help = "Examples:\n  source <(agentloop completions bash)\n  agentloop completions zsh > ~/.zfunc/_agentloop\n  agentloop completions fish > ~/.config/fish/completions/agentloop.fish"
    )]
    Completions(CompletionsArgs),
    /// Write a man page for agentloop and each of its commands into DIR.
    #[command(
        after_help = "Example:\n  agentloop man ~/.local/share/man/man1 && man agentloop-run"
    )]
    Man(ManArgs),
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Write every section of agentloop.toml, each key commented, instead of the short file.
    #[arg(long)]
    pub full: bool,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Where the pages go (made if missing), e.g. /usr/local/share/man/man1.
    pub dir: std::path::PathBuf,
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

/// `agentloop sandbox-net …`: inside a sandbox, carry the network to agentloop's
/// proxy and run COMMAND (started by agentloop itself in `[sandbox] mode =
/// "workspace"`). Not a command a person types: parsed apart from [`Cli`], so it is in
/// no help and no completion.
#[derive(Debug, clap::Parser)]
#[command(name = "agentloop sandbox-net")]
pub struct SandboxNetArgs {
    /// The proxy's Unix socket.
    #[arg(long)]
    pub socket: std::path::PathBuf,
    /// The port the proxy variables name, on the sandbox's loopback.
    #[arg(long)]
    pub proxy_port: u16,
    /// An allowed loopback port of the host, reachable at the same port inside.
    #[arg(long)]
    pub forward: Vec<u16>,
    /// The command to run.
    #[arg(last = true, required = true)]
    pub command: Vec<std::ffi::OsString>,
}
