//! `[ship]`: how a completed run leaves the machine — its branch pushed, a pull request
//! opened (or updated) on the forge, the forge's checks waited for (a red one goes back
//! to the agent), a review waited for, the merge, and a verification of the base
//! branch after it. `forge = "none"` (the default) keeps the run's commits where they
//! are.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use agentloop_ground::values::duration;

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Forge {
    #[default]
    None,
    Github,
    Gitlab,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum MergeWhen {
    /// A person merges; the run ends once the review approves.
    #[default]
    Manual,
    /// agentloop merges once the checks pass and the review approves.
    Auto,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum MergeMethod {
    #[default]
    Squash,
    Merge,
    Rebase,
}

/// What a pull request carries.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum PrScope {
    /// One pull request with the whole run's work.
    #[default]
    Run,
    /// One pull request per task, shipped in the plan's order once every task is
    /// settled: each on its own branch, stacked on the one before while it is not
    /// merged (`merge = "manual"`), else on the base branch.
    Task,
}

/// What a failed verification of the base branch after the merge does.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum AfterMergeFailure {
    /// The run waits for a person (`approve` verifies again, `reject` ends the run).
    #[default]
    Block,
    /// A fix task for the agent, shipped as a new pull request.
    Fix,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Ship {
    /// Where pull requests go: `none`, `github` or `gitlab`.
    pub forge: Forge,
    /// The git remote pushed to.
    pub remote: String,
    /// `OWNER/NAME` (GitLab: the project's path); by default read from the remote's URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
    /// The branch the pull request goes into; by default the branch the run started on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// The forge's API (GitHub Enterprise: `https://HOST/api/v3`; self-hosted GitLab:
    /// `https://HOST/api/v4`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_url: Option<String>,
    /// The branch pushed and proposed (`{run}`: the run id).
    pub branch: String,
    /// One pull request for the run, or one per task (`"task"`).
    pub pr: PrScope,
    /// Open the pull request as a draft.
    pub draft: bool,
    /// Labels put on the pull request.
    pub labels: Vec<String>,
    /// Asked to review; an approving review from one of them releases the review gate
    /// (any approval when none is listed).
    pub reviewers: Vec<String>,
    /// `manual` (a person merges) or `auto` (merged once checked and approved).
    pub merge: MergeWhen,
    /// How it is merged: `squash`, `merge` or `rebase`.
    pub method: MergeMethod,
    /// How long the forge's checks may take before the run stops waiting.
    #[serde(with = "duration")]
    #[schemars(schema_with = "duration::schema")]
    pub checks_timeout: Duration,
    /// How often the forge is asked about checks and reviews.
    #[serde(with = "duration")]
    #[schemars(schema_with = "duration::schema")]
    pub poll: Duration,
    /// Red checks handed back to the agent before the run gives up.
    pub fix_attempts: u32,
    /// Delete the pushed branch after the merge.
    pub delete_branch: bool,
    /// When the run's checks fail on the base branch after the merge.
    pub after_merge_failure: AfterMergeFailure,
}

impl Default for Ship {
    fn default() -> Ship {
        Ship {
            forge: Forge::None,
            remote: "origin".into(),
            repo: None,
            base: None,
            api_url: None,
            branch: "agentloop/{run}".into(),
            pr: PrScope::Run,
            draft: false,
            labels: vec!["agentloop".into()],
            reviewers: Vec::new(),
            merge: MergeWhen::Manual,
            method: MergeMethod::Squash,
            checks_timeout: Duration::from_secs(30 * 60),
            poll: Duration::from_secs(15),
            fix_attempts: 3,
            delete_branch: false,
            after_merge_failure: AfterMergeFailure::Block,
        }
    }
}

impl Ship {
    pub fn enabled(&self) -> bool {
        self.forge != Forge::None
    }

    /// The pushed branch of run `run`.
    pub fn branch_of(&self, run: &str) -> String {
        self.branch.replace("{run}", run)
    }
}

/// `[tracker]`: the issue tracker a plan was imported from (`plan import github:…`
/// writes it into the plan's front matter), whose issues' status a run keeps in step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Tracker {
    /// `github:OWNER/REPO`, `gitlab:GROUP/PROJECT` or `linear:TEAM`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The tracker's API (GitHub Enterprise, self-hosted GitLab).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_url: Option<String>,
    /// Comment on each issue and move it as its task starts, blocks, is done or skipped.
    pub sync: bool,
    /// The run's own issue (`ENG-12` on Linear, `12` on GitHub or GitLab; the plan's
    /// front matter `linear: ENG-12` sets it and the Linear team): moved to started when
    /// the run starts and to done when it completes, with a comment as each task is
    /// done, skipped or blocked and when the run ends.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issue: Option<String>,
}

/// The key of the run's own issue among the issues told (`ship.issues`): no task id
/// can be it.
pub const RUN_ISSUE: &str = "(run)";

impl Default for Tracker {
    fn default() -> Tracker {
        Tracker {
            source: None,
            api_url: None,
            sync: true,
            issue: None,
        }
    }
}

/// `[prompt]`: what every iteration's prompt names besides the task.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PromptConfig {
    /// Files the agent reads before it changes anything, besides the project's own
    /// instructions found at the top of the work tree (`AGENTS.md`, `CLAUDE.md`,
    /// `CONVENTIONS.md`, `.github/copilot-instructions.md`).
    pub context: Vec<String>,
    /// Skills each phase requires (`develop`, `debug`, `validate`, `review`: lists of
    /// names under `.claude/skills/`, the project's or the user's): each must be
    /// installed when the run starts, and each iteration of the phase is told to use
    /// it (a CLI without skills reads its SKILL.md).
    pub require_skills: super::skills::RequireSkills,
}

/// The project's instructions for agents, where tools look for them.
pub const CONTEXT_FILES: [&str; 4] = [
    "AGENTS.md",
    "CLAUDE.md",
    "CONVENTIONS.md",
    ".github/copilot-instructions.md",
];
