//! Hook mode's commands: one per Claude Code hook event, and install/uninstall.

use std::path::PathBuf;

use clap::Subcommand;

/// The examples of a hook entry point: the CLI runs it, not a person.
const ENTRY: &str = "Example (run by the agent CLI, as `agentloop hook install` wrote it into its settings):\n  echo '{\"session_id\":\"s1\",\"cwd\":\".\"}' | agentloop hook ";

#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// Create a hook-mode run for a plan; the next Stop of a Claude Code session in
    /// this project starts its first task and binds the run to that session.
    #[command(
        after_help = "Examples:\n  agentloop hook start                 PLAN.md, then start `claude` in this project\n  agentloop hook start plans/auth.md --mode tdd"
    )]
    Start {
        /// The plan file.
        #[arg(default_value = "PLAN.md")]
        plan: PathBuf,
        /// quick, tdd, pair or checkpoint.
        #[arg(long, value_parser = ["quick", "tdd", "pair", "checkpoint"])]
        mode: Option<String>,
        /// Allow budgets over the ceilings: a cost budget over $100, an iteration
        /// budget over 10 per task (and over 500).
        #[arg(long)]
        force: bool,
        /// Proceed without confirmation: none of the gates that only confirm (plan
        /// approval, the plan's review, after each task, the final review); the gates
        /// of risk stay (`[run] confirm = false`).
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Add agentloop's hooks to the agent CLI's settings, next to what is there: for
    /// Claude Code Stop, SessionStart, StopFailure, SessionEnd, TaskCompleted in
    /// `.claude/settings.json`; for Codex Stop in `.codex/hooks.json` (and its `hooks`
    /// feature on in `.codex/config.toml`); for Gemini CLI AfterAgent in
    /// `.gemini/settings.json`.
    #[command(
        after_help = "Examples:\n  agentloop hook install\n  agentloop hook install --agent codex\n  agentloop hook install --guard --mcp     also deny edits outside the task, and the MCP server"
    )]
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
    #[command(
        after_help = "Examples:\n  agentloop hook uninstall\n  agentloop hook uninstall --agent gemini --user"
    )]
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
    #[command(after_help = format!("{ENTRY}stop"))]
    Stop,
    /// Hook entry: Gemini CLI's AfterAgent, handled as a Stop.
    #[command(after_help = format!("{ENTRY}after-agent"))]
    AfterAgent,
    /// Hook entry: a subagent finished; the session's turn goes on (nothing to do).
    #[command(after_help = format!("{ENTRY}subagent-stop"))]
    SubagentStop,
    /// Hook entry: a session started; gives it the run's current task as context.
    #[command(after_help = format!("{ENTRY}session-start"))]
    SessionStart,
    /// Hook entry: the turn ended on an API error; a rate limit makes the run wait.
    #[command(after_help = format!("{ENTRY}stop-failure"))]
    StopFailure,
    /// Hook entry: the session ended; commits what it left pending (`[git] commit`)
    /// and writes the handoff.
    #[command(after_help = format!("{ENTRY}session-end"))]
    SessionEnd,
    /// Hook entry (agent teams): refuses a task completion that verification fails.
    #[command(after_help = format!("{ENTRY}task-completed"))]
    TaskCompleted,
    /// Hook entry (agent teams): keeps an idle teammate on a ready task.
    #[command(after_help = format!("{ENTRY}teammate-idle"))]
    TeammateIdle,
    /// Hook entry: denies edits to protected paths and outside the task's scope.
    #[command(after_help = format!("{ENTRY}pre-tool-use"))]
    PreToolUse,
    /// Hook entry: a person typed one of the plugin's `/agentloop:…` commands; it is
    /// done from the exact arguments, with no shell in between.
    #[command(after_help = format!("{ENTRY}prompt-expansion"))]
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
            HookCommand::SessionEnd => "session-end",
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
