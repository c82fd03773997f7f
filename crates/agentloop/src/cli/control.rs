//! The requests to a run and the views of it, and the smaller commands' arguments.

use std::path::PathBuf;

use clap::Args;

use super::{OutputArgs, RunOpt, RunSel};

#[derive(Debug, Args)]
pub struct GcArgs {
    /// Say what would go, remove nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct LandArgs {
    #[command(flatten)]
    pub run: RunSel,
    /// Say what would happen, change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// When your branch moved since the run started, merge the run's branch into it
    /// (a merge commit) instead of refusing.
    #[arg(long)]
    pub merge: bool,
}

#[derive(Debug, Args)]
pub struct HandoffArgs {
    #[command(flatten)]
    pub run: RunSel,
    /// File the follow-ups as issues on the configured tracker (`[tracker] source`).
    #[arg(long)]
    pub to_issues: bool,
    /// With --to-issues: say what would be filed, file nothing.
    #[arg(long, requires = "to_issues")]
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
    /// The task's id, as in the plan (with `--skill`: the skill's name).
    pub task: String,
    /// Why it is skipped (required for a skill).
    #[arg(long)]
    pub reason: Option<String>,
    /// Skip a required skill by its name, not a task.
    #[arg(long)]
    pub skill: bool,
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
