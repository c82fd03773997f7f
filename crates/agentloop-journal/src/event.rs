//! The events of a run, as written to its journal. Every field a decision depends on is
//! in an event, so folding the journal gives back the same state on any machine.

use serde::{Deserialize, Serialize};

pub use super::iteration::*;
use super::person::{Gate, Request};
use agentloop_config::Settings;
use agentloop_plan::Plan;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "data", rename_all = "snake_case")]
pub enum Event {
    RunCreated {
        run_id: String,
        plan_file: String,
        workdir: String,
        plan: Plan,
        settings: Settings,
        /// The work tree's HEAD when the run was created.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        head: Option<String>,
        /// The work tree itself when the run was created (git's tree id, its new files
        /// included), when the run takes a test baseline: the tree it is taken on,
        /// whatever an agent does before it is taken.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tree: Option<String>,
    },
    DriverStarted {
        pid: u32,
        version: String,
        settings: Settings,
        /// Agent name → the version its CLI reported when this driver started.
        #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
        agents: std::collections::BTreeMap<String, String>,
        /// What the run needs from the machine, as this driver found it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prerequisites: Option<crate::prerequisites::Prerequisites>,
    },
    IterationStarted(IterationStarted),
    AgentFinished(AgentFinished),
    VerifyFinished(VerifyFinished),
    IterationFinished(IterationFinished),
    Escalated {
        task: String,
        trigger: Trigger,
        rung: Rung,
        evidence: String,
    },
    ReplanAccepted {
        task: String,
        version: u32,
        plan: Plan,
        added: Vec<String>,
        removed: Vec<String>,
    },
    ReplanRejected {
        task: String,
        reason: String,
    },
    /// A planner (`[run] planners`) was asked for new tasks, the run standing at
    /// `basis`.
    PlannerStarted {
        planner: u32,
        basis: String,
    },
    PlannerFinished(super::planning::PlannerFinished),
    /// The end of a cycle (`[run] cycle`), judged.
    CycleJudged(super::cycles::CycleJudged),
    GateOpened {
        gate: Gate,
    },
    Control {
        id: String,
        source: String,
        request: Request,
        /// Who asked: `user@host` for the CLI and the terminal UI, the API's token for
        /// the API.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    /// The model service refused for now (usage/rate limit, overloaded). The run
    /// waits until `until_ms` (Unix milliseconds); the task's retries are untouched.
    LimitHit {
        kind: AgentErrorKind,
        message: String,
        until_ms: u64,
        known_reset: bool,
        /// The iteration that hit it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        iteration: Option<u32>,
        /// The agent whose account it is: with workers, only that agent's tasks wait.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
    },
    /// Agent teams (hook mode): a teammate completed a plan task and agentloop verified
    /// it (its checks on a clean copy, the surface as the baseline, tests in tdd mode).
    TeamTaskCompleted {
        task: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        teammate: Option<String>,
    },
    /// A run with workers: the wait for an agent's usage limit is over.
    AgentLimitOver {
        agent: String,
    },
    /// The driver waited until the limit's reset.
    LimitWaitOver,
    /// Hook mode: a Claude Code session stopped (its `stop_hook_active` flag tells
    /// whether this stop follows a continuation we asked for). The first one binds
    /// the run to the session.
    HookStop {
        session_id: String,
        active: bool,
        /// The session's Claude Code process, when the hook runs under it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pid: Option<u32>,
    },
    /// Hook mode: the Claude Code session that drives the run ended (`reason` as
    /// Claude Code gives it: `clear`, `logout`, `prompt_input_exit`, `other`, …), with
    /// the commit of the changes it left pending when `[git] commit` is on (not
    /// verified: the commit says so).
    SessionEnded {
        session_id: String,
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        commit: Option<String>,
    },
    /// Shipping: the run's work pushed to `branch` of the forge's remote.
    ShipPushed {
        branch: String,
        commit: String,
    },
    /// The pull request opened (`created`) or updated with the run's account.
    PrOpened {
        number: u64,
        url: String,
        created: bool,
    },
    /// The forge's checks on the pushed commit are done.
    ChecksFinished {
        commit: String,
        passed: bool,
        checks: Vec<crate::check_outcome::CheckOutcome>,
    },
    /// A red check, or a failed verification after the merge (`after_merge`), goes back
    /// to the agent: a new task in the plan's next version.
    ShipFixAdded {
        version: u32,
        plan: Plan,
        task: String,
        /// The fix is shipped as a new pull request (the last one was merged).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        after_merge: bool,
    },
    /// The pull request's review approves (`by`: the reviewer).
    ReviewApproved {
        by: String,
    },
    /// What the shipped diff touches, gate by gate (`policy::diffgates`).
    DiffGatesChecked {
        commit: String,
        triggered: Vec<crate::gate_trigger::GateTrigger>,
    },
    /// A run without a forge: what the commit of a done task touches, gate by gate
    /// (no commit: every gate that is on). A triggered gate holds the task until a
    /// person releases it.
    TaskDiffChecked {
        task: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        commit: Option<String>,
        triggered: Vec<crate::gate_trigger::GateTrigger>,
    },
    /// A diff gate's reviewer approved the pull request.
    DiffGateApproved {
        gate: String,
        by: String,
    },
    /// The pull request's `needs:GATE-review` labels taken off for the diff gates
    /// released, and its account written again (its gates passed name them).
    PrReleased {
        gates: Vec<String>,
    },
    /// `pr = "task"`: task `task` is shipped next, on `branch` from `onto` (the base
    /// branch's head, or the branch of the unmerged pull request before it), proposed
    /// into `base`.
    ShipUnitStarted {
        task: String,
        branch: String,
        base: String,
        onto: String,
    },
    /// `pr = "task"`: the task's pull request is through (merged and verified, or
    /// approved when a person merges); `empty`: its change was already on the base
    /// branch, so there was nothing to propose.
    TaskShipped {
        task: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        empty: bool,
    },
    /// The VALIDATE phase: every done task's checks and `[verify] commands`, run again
    /// on the whole project after the last task.
    Validated {
        passed: bool,
        commands: Vec<CommandResult>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        digest: Option<String>,
        /// Why it failed where no fix task can help, when that is so (a coverage step
        /// that wrote no report agentloop could read: the configuration's to mend).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        not_the_work: Option<String>,
    },
    /// A failed validation reopens work: a new task in the plan's next version.
    ValidationFixAdded {
        version: u32,
        plan: Plan,
        task: String,
    },
    /// agentloop merged the pull request; `commit` is the base branch's new head.
    PrMerged {
        commit: String,
    },
    /// The run's checks on the base branch after the merge.
    PostMergeVerified {
        commit: String,
        passed: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        digest: Option<String>,
    },
    /// A budget is spent: the run pauses until a person tops it up (`resume --budget
    /// +10`, `--tokens`, `--time`, `--iterations`) or raises it.
    BudgetSpent {
        budget: String,
        used: f64,
        limit: f64,
    },
    /// The tracker issue of a task was told (a comment) and moved (`state`: started,
    /// blocked, done, skipped).
    IssueUpdated {
        task: String,
        issue: String,
        state: String,
    },
    /// A step of the ship flow failed (the forge refused, the push was rejected…);
    /// the run waits for a person at the ship gate.
    ShipFailed {
        step: String,
        message: String,
    },
    /// A line of the journal that agentloop did not write as it stands (a record
    /// appended or edited by something else): ignored, and recorded once.
    ForgeryIgnored(Forged),
    /// Hook mode: the run belongs to this Claude Code session from now on (started from
    /// it, or claimed by it when it began).
    SessionBound {
        session_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pid: Option<u32>,
    },
    /// A run with workers integrates on its own branch, made from `base`.
    IntegrationStarted {
        branch: String,
        base: String,
    },
    /// A verified task's branch goes onto the integration branch at `head`.
    MergeStarted {
        iteration: u32,
        head: String,
    },
    /// Merged and checked on the merged result: the integration branch is `commit`.
    Merged {
        iteration: u32,
        commit: String,
    },
    /// The merge conflicted, or the checks failed on the merged result: the
    /// integration branch did not move; the task goes back to its agent.
    MergeFailed {
        iteration: u32,
        conflict: bool,
        reason: String,
        digest: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fingerprint: Option<String>,
    },
    /// A verified task merged in a batch with others that did not land: it waits in the
    /// merge queue for the next batch (still verified; nothing goes back to its agent).
    MergeRequeued {
        iteration: u32,
        reason: String,
    },
    /// The checked-out branch was fast-forwarded to the integration branch.
    Landed {
        branch: String,
        commit: String,
    },
    /// The verification surface when the run started: every file that decides "done",
    /// by content.
    BaselineRecorded {
        files: super::baseline::Baseline,
    },
    /// Every check of the run, run once on the tree before any agent worked: each
    /// test's outcome there, what PASS_TO_PASS is judged against.
    TestsBaseline(agentloop_evidence::TestsBaseline),
    /// An independent reviewer begins on a verified task (`[review]`).
    ReviewStarted(ReviewStarted),
    /// Its verdict: APPROVE, or REJECT with findings the worker must address.
    ReviewFinished(ReviewFinished),
    /// Before a claimed task is verified: the surface compared with the baseline.
    /// What the open iteration did that its tripwires (`Must-not:`) forbid; a hit
    /// stops the run at the tripwire gate.
    TripwiresChecked {
        iteration: u32,
        hits: Vec<super::tripwire::TripHit>,
    },
    SurfaceChecked {
        iteration: u32,
        changes: Vec<super::baseline::SurfaceChange>,
    },
    /// Files of the verification surface a person changed while no agent was at work
    /// (the run paused, or waiting for them): taken into the baseline at their new
    /// versions (`None`: deleted), never charged to the next agent.
    PersonChangedSurface {
        files: std::collections::BTreeMap<String, Option<super::baseline::SurfaceFile>>,
    },
    /// agentloop put the baseline versions of the checked changes back.
    SurfaceRestored {
        iteration: u32,
        cause: super::baseline::RestoreCause,
    },
    /// A control request made from inside the agent's own process tree (the agent
    /// approving itself): refused, and recorded as an attempt.
    ControlRefused {
        source: String,
        request: Request,
        why: String,
    },
    /// Something the sandbox refused the agent of an iteration: a host, a write
    /// outside its writable paths, a hidden path.
    SandboxDenied {
        iteration: u32,
        #[serde(flatten)]
        denial: crate::denial::Denial,
    },
    /// The run's checks run unconfined from here on (bubblewrap does not work here, or
    /// `[sandbox] verify = false`): said once per reason; the verdict is MONITOR.
    ChecksUnconfined {
        why: String,
    },
    /// Where an iteration's job stands on the cluster that runs it (a remote
    /// executor): recorded when it is submitted and whenever its state or the reason
    /// the engine gives changes.
    JobState(JobState),
    RunFinished {
        status: RunStatus,
        reason: FinishReason,
    },
}

impl Event {
    pub fn kind(&self) -> &'static str {
        match self {
            Event::RunCreated { .. } => "run_created",
            Event::DriverStarted { .. } => "driver_started",
            Event::IterationStarted(_) => "iteration_started",
            Event::AgentFinished(_) => "agent_finished",
            Event::VerifyFinished(_) => "verify_finished",
            Event::IterationFinished(_) => "iteration_finished",
            Event::Escalated { .. } => "escalated",
            Event::ReplanAccepted { .. } => "replan_accepted",
            Event::ReplanRejected { .. } => "replan_rejected",
            Event::PlannerStarted { .. } => "planner_started",
            Event::PlannerFinished(_) => "planner_finished",
            Event::CycleJudged(_) => "cycle_judged",
            Event::GateOpened { .. } => "gate_opened",
            Event::Control { .. } => "control",
            Event::LimitHit { .. } => "limit_hit",
            Event::LimitWaitOver => "limit_wait_over",
            Event::AgentLimitOver { .. } => "agent_limit_over",
            Event::TeamTaskCompleted { .. } => "team_task_completed",
            Event::HookStop { .. } => "hook_stop",
            Event::SessionEnded { .. } => "session_ended",
            Event::SessionBound { .. } => "session_bound",
            Event::ControlRefused { .. } => "control_refused",
            Event::SandboxDenied { .. } => "sandbox_denied",
            Event::ChecksUnconfined { .. } => "checks_unconfined",
            Event::JobState(_) => "job_state",
            Event::BaselineRecorded { .. } => "baseline_recorded",
            Event::TestsBaseline(_) => "tests_baseline",
            Event::IntegrationStarted { .. } => "integration_started",
            Event::MergeStarted { .. } => "merge_started",
            Event::Merged { .. } => "merged",
            Event::MergeFailed { .. } => "merge_failed",
            Event::MergeRequeued { .. } => "merge_requeued",
            Event::Landed { .. } => "landed",
            Event::SurfaceChecked { .. } => "surface_checked",
            Event::TripwiresChecked { .. } => "tripwires_checked",
            Event::ReviewStarted(_) => "review_started",
            Event::ReviewFinished(_) => "review_finished",
            Event::SurfaceRestored { .. } => "surface_restored",
            Event::PersonChangedSurface { .. } => "person_changed_surface",
            Event::ShipPushed { .. } => "ship_pushed",
            Event::PrOpened { .. } => "pr_opened",
            Event::ChecksFinished { .. } => "checks_finished",
            Event::ShipFixAdded { .. } => "ship_fix_added",
            Event::ReviewApproved { .. } => "review_approved",
            Event::DiffGatesChecked { .. } => "diff_gates_checked",
            Event::TaskDiffChecked { .. } => "task_diff_checked",
            Event::DiffGateApproved { .. } => "diff_gate_approved",
            Event::PrReleased { .. } => "pr_released",
            Event::PrMerged { .. } => "pr_merged",
            Event::ShipUnitStarted { .. } => "ship_unit_started",
            Event::Validated { .. } => "validated",
            Event::ValidationFixAdded { .. } => "validation_fix_added",
            Event::TaskShipped { .. } => "task_shipped",
            Event::PostMergeVerified { .. } => "post_merge_verified",
            Event::ShipFailed { .. } => "ship_failed",
            Event::IssueUpdated { .. } => "issue_updated",
            Event::BudgetSpent { .. } => "budget_spent",
            Event::ForgeryIgnored(_) => "forgery_ignored",
            Event::RunFinished { .. } => "run_finished",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Trigger {
    SameFailure {
        count: u32,
        fingerprint: String,
    },
    NoChange {
        count: u32,
    },
    NoOutput {
        count: u32,
    },
    Oscillation {
        count: u32,
    },
    /// One file edited `times` times in an iteration that did not pass.
    Thrashing {
        file: String,
        times: u32,
    },
    RetryBudget {
        attempts: u32,
        /// What the rung allowed (0 in journals written before it was recorded).
        #[serde(default)]
        budget: u32,
    },
    /// The agent hit a usage limit and `limits.on_limit = "fallback"`.
    UsageLimit {
        agent: String,
    },
}

impl Trigger {
    pub fn is_breaker(&self) -> bool {
        !matches!(
            self,
            Trigger::RetryBudget { .. } | Trigger::UsageLimit { .. }
        )
    }
    pub fn describe(&self) -> String {
        match self {
            Trigger::SameFailure { count, .. } => {
                format!("the same failure {count} times in a row")
            }
            Trigger::Thrashing { file, times } => {
                format!(
                    "{file} edited {times} times in one iteration that did not pass (thrashing)"
                )
            }
            Trigger::NoChange { count } => {
                format!("no change in the working tree for {count} iterations")
            }
            Trigger::NoOutput { count } => {
                format!("the agent exited with no output {count} times in a row")
            }
            Trigger::RetryBudget { attempts, budget } if *budget > 0 => format!(
                "{attempts} of {} without a verified result",
                agentloop_ground::words::plural(*budget as usize, "attempt", "attempts")
            ),
            Trigger::RetryBudget { attempts, .. } => format!(
                "{} without a verified result",
                agentloop_ground::words::plural(*attempts as usize, "attempt", "attempts")
            ),
            Trigger::UsageLimit { agent } => format!("{agent} hit a usage limit"),
            Trigger::Oscillation { count } => {
                format!("the work tree went back to an earlier state {count} times")
            }
        }
    }
}

/// The escalation ladder: retry with digest → replan → fallback agent → block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Rung {
    #[default]
    Retry,
    Replan,
    Fallback,
    Block,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Running,
    Paused,
    Waiting,
    Blocked,
    Completed,
    Stopped,
    Failed,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Paused => "paused",
            RunStatus::Waiting => "waiting",
            RunStatus::Blocked => "blocked",
            RunStatus::Completed => "completed",
            RunStatus::Stopped => "stopped",
            RunStatus::Failed => "failed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum FinishReason {
    Completed,
    StopRequested,
    Budget {
        budget: String,
        used: f64,
        limit: f64,
    },
    Rejected {
        gate: Gate,
        note: Option<String>,
    },
    Error {
        message: String,
    },
    /// A cycle's judge (`[run] cycle`) stopped the run.
    Judged {
        cycle: u32,
        reasons: Vec<String>,
    },
}

impl FinishReason {
    pub fn describe(&self) -> String {
        match self {
            FinishReason::Completed => "every task is done and verified".into(),
            FinishReason::StopRequested => "stopped on request".into(),
            FinishReason::Judged { cycle, reasons } => format!(
                "stopped by the judge of cycle {cycle}: {}",
                reasons.join("; ")
            ),
            FinishReason::Budget {
                budget,
                used,
                limit,
            } => format!("budget reached: {budget} {used}/{limit}"),
            FinishReason::Rejected { gate, note } => {
                let note = note
                    .as_deref()
                    .map(|n| format!(": {n}"))
                    .unwrap_or_default();
                format!(
                    "a person rejected the {}{note}",
                    match gate {
                        Gate::Plan => "plan".to_string(),
                        Gate::PlanReview => "plan's review".to_string(),
                        Gate::Final => "final review".to_string(),
                        Gate::Review => "pull request's review".to_string(),
                        Gate::Ship(_) => "retry of the failed ship step".to_string(),
                        Gate::Diff(g) => format!("{g} review"),
                        Gate::NewTasks => "planners' new tasks".to_string(),
                        Gate::BeforeTask(t)
                        | Gate::AfterTask(t)
                        | Gate::Surface(t)
                        | Gate::Tripwire(t) => {
                            format!("gate of task {t}")
                        }
                    }
                )
            }
            FinishReason::Error { message } => message.clone(),
        }
    }
}

/// A line of the journal that agentloop did not write as it stands (appended by
/// something else, or edited): never folded, always reported.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Forged {
    pub line: usize,
    /// What the line claims to be.
    pub seq: u64,
    pub kind: String,
}
