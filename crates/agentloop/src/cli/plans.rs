//! Plans (`plan check | import | new`), the queue, the configuration and the journal.

use std::path::PathBuf;

use clap::Subcommand;

use super::RunSel;

#[derive(Debug, Subcommand)]
pub enum PlanCommand {
    /// Validate a plan and print its task graph
    ///
    /// Ids, dependencies, cycles, agents, placeholders and front-matter settings.
    #[command(
        after_help = "Examples:\n  agentloop plan check\n  agentloop plan check --baseline\n  agentloop plan check docs/PLAN.md --json"
    )]
    Check {
        /// The plan file.
        #[arg(default_value = "PLAN.md")]
        plan: PathBuf,
        /// The parsed plan as JSON on stdout.
        #[arg(long)]
        json: bool,
        /// Run the checks once on a clean copy of the tree as it is, and check each
        /// task's `Tests:` against the tests they report: a name that matches no test
        /// is an error, one that already passes is flagged.
        #[arg(long)]
        baseline: bool,
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
        /// The most tasks of the first decomposition (3 to 7 unless you ask for more:
        /// a task too big for one session is split later, by a replan).
        #[arg(long, value_name = "N", default_value_t = 7, value_parser = clap::value_parser!(u32).range(1..=500))]
        tasks: u32,
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
    #[command(
        after_help = "Examples:\n  agentloop queue list\n  agentloop queue list --json | jq '.[] | select(.state == \"blocked\")'"
    )]
    List {
        /// The entries as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run the queue: resume the runs a person has answered, then start each plan
    /// whose entries to wait for are done, until none is left that can start
    ///
    /// A plan that waits for a person (a gate, a blocked task, a spent budget) is left
    /// blocked, and the plans after it wait their turn (deferred): its run still holds
    /// the work tree, which one run drives at a time. Exits 0 when every entry is
    /// done, 5 when some wait for a person, 1 when a run failed.
    #[command(
        after_help = "Examples:\n  agentloop queue run\n  agentloop approve && agentloop queue run     answer the run that waits, and go on"
    )]
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
    /// Print the JSON Schema of agentloop.toml
    ///
    /// Editors that read JSON Schema for TOML (taplo, Even Better TOML) complete and
    /// check keys with it; the files `agentloop init` writes name it with a
    /// `#:schema` line.
    #[command(
        after_help = "Example:\n  agentloop config schema > .agentloop/agentloop.schema.json"
    )]
    Schema,
}

#[derive(Debug, Subcommand)]
pub enum JournalCommand {
    /// Check every line's checksum, sequence and schema, and that agentloop sealed it.
    #[command(
        after_help = "Examples:\n  agentloop journal verify\n  agentloop store export 20261126-101500-042-3fa2 > j.jsonl && agentloop journal verify --file j.jsonl"
    )]
    Verify {
        #[command(flatten)]
        run: RunSel,
        /// A journal file instead of a run's: an exported one (`agentloop store
        /// export`), a copy.
        #[arg(long, value_name = "FILE", conflicts_with_all = ["run", "run_opt"])]
        file: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Create agentloop's tables in the database `[store] url` names, or bring them
    /// to this agentloop's schema.
    #[command(
        after_help = "Example:\n  AGENTLOOP_STORE_URL=postgres://agentloop@db/runs agentloop store migrate"
    )]
    Migrate,
    /// List the runs in the store.
    #[command(
        after_help = "Example:\n  AGENTLOOP_STORE_URL=postgres://agentloop@db/runs agentloop store runs"
    )]
    Runs,
    /// Print a run's journal from the store in the file format (one sealed line per
    /// record, as `journal.jsonl` has it).
    #[command(
        after_help = "Example:\n  agentloop store export 20261126-101500-042-3fa2 > journal.jsonl"
    )]
    Export {
        /// The run's id.
        run: String,
    },
}
