//! The state of a run, folded from its journal. Folding is pure and deterministic:
//! the same events give the same state, which is why `state.json` is only a cache.

mod cycles;
mod first;
mod planning;
mod replans;
mod ship;
#[cfg(test)]
mod wall;

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::event::*;
use super::integration::{Integration, MergeState};
use super::person::Gate;
use super::store::Record;
use super::task::{TaskState, TaskStatus};
use agentloop_config::Settings;
use agentloop_ground::values::Usage;
use agentloop_plan::{Mode, Plan};

/// Schema version of `state.json`: a cache of another version is folded again from the
/// journal (6: the run's wall clock, `wall_ms` and `last_ms`, which an older cache lacks;
/// 7: each done task's `admitted` files; 8: the tasks an agent's REPLAN wrote, with the
/// task as a person wrote it, `written`, and `validation_not_the_work`; 9: the diff
/// gates whose labels came off, `ship.released`, and `skills_skipped`).
pub const STATE_VERSION: u32 = 9;

pub use super::open::OpenIteration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopKind {
    AfterIteration,
    Now,
}

/// What people added to the run's budgets.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TopUp {
    pub cost_usd: f64,
    pub tokens: u64,
    pub seconds: u64,
    pub iterations: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunState {
    pub v: u32,
    pub run_id: String,
    pub status: RunStatus,
    pub plan_file: String,
    pub workdir: String,
    /// The work tree's HEAD when the run was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_at_create: Option<String>,
    /// The work tree when the run was created (git's tree id), where the test baseline
    /// is taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree_at_create: Option<String>,
    pub plan: Plan,
    pub plan_version: u32,
    pub settings: Settings,
    pub tasks: Vec<TaskState>,
    pub iterations: u32,
    /// Iterations cut short by a crash or a kill: they do not count against
    /// `max_iterations`.
    #[serde(default)]
    pub aborted: u32,
    pub cost_usd: f64,
    pub usage: Usage,
    /// Milliseconds spent inside iterations (agent and verification), added up over
    /// every lane: with workers, more than the run's own time ([`Self::wall_ms`]).
    pub active_ms: u64,
    /// The run's own wall time, in milliseconds: from each record to the next while
    /// the run is running — not while it waits for a person (a gate, a pause, a
    /// budget spent) and not while no driver drives it (the time before a
    /// `driver_started`). What `max_duration` limits.
    #[serde(default)]
    pub wall_ms: u64,
    /// When the last record was written (milliseconds since the epoch).
    #[serde(default)]
    pub last_ms: u64,
    /// The iterations in progress, oldest first (one unless workers run in parallel).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub running: Vec<OpenIteration>,
    pub paused: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<StopKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<Gate>,
    pub plan_approved: bool,
    /// The plan's review was accepted (Gate 2).
    pub plan_reviewed: bool,
    pub final_approved: bool,
    /// Notes for the next iteration (`steer`, gate notes).
    pub steer: Vec<String>,
    pub learnings: Vec<String>,
    /// When each learning came (the same order as `learnings`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub learned_at: Vec<String>,
    /// Kinds of failure (by fingerprint) and where they came back.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub patterns: std::collections::BTreeMap<String, super::task::Pattern>,
    /// Each task's completion as it happened; kept when a task is later reopened.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub completed_log: Vec<String>,
    /// Risks and alternatives the agents reported (`T1 risk: …`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reported: Vec<String>,
    /// What the run needed from the machine when its last driver started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prerequisites: Option<crate::prerequisites::Prerequisites>,
    /// The gates people passed, and who (`plan approval by ann@laptop`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvals: Vec<String>,
    /// Required skills a person skipped, and why.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub skills_skipped: std::collections::BTreeMap<String, String>,
    /// The last validation: the iterations counted when it ran, and whether it passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<(u32, bool)>,
    /// The failed validation's account, and its first failing command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation_failure: Option<(String, String)>,
    #[serde(default)]
    pub validation_fixes: u32,
    /// Why the last validation failed where no fix task can help, when that is so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation_not_the_work: Option<String>,
    pub replans_used: u32,
    /// Tasks an agent's REPLAN wrote or revised, each with the task as a person wrote
    /// it that it stands for ([`Self::as_written`]).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub written: std::collections::BTreeMap<String, agentloop_plan::Task>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished: Option<FinishReason>,
    /// Waiting for a usage limit to reset until this time (Unix milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_until_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_message: Option<String>,
    /// A run with workers: agents waiting for their usage limit to reset, until when
    /// (Unix milliseconds).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub agent_limits: std::collections::BTreeMap<String, u64>,
    /// A run with workers: how many iterations of an agent may run at once, after its
    /// provider limited it (halved at each limit from what ran then, one more at each
    /// call that went through; gone once it is back at the workers). Absent: the workers.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub agent_caps: std::collections::BTreeMap<String, u32>,
    /// Planners (`[run] planners`): at work, when last asked, what they added.
    #[serde(default, skip_serializing_if = "super::planning::Planning::is_idle")]
    pub planning: super::planning::Planning,
    /// Cycles (`[run] cycle`): how many were judged, when the current one began.
    #[serde(default, skip_serializing_if = "super::cycles::Cycles::is_idle")]
    pub cycles: super::cycles::Cycles,
    /// Limits hit in a row (the backoff doubles with each).
    pub limit_streak: u32,
    pub last_seq: u64,
    pub created: String,
    pub updated: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_pid: Option<u32>,
    /// Hook mode: the Claude Code session the run is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Hook mode: the bound session's Claude Code process (its model may not approve).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_pid: Option<u32>,
    /// The agent CLI's session id of the latest iteration that reported one (what its
    /// CLI resumes: `claude --resume ID`, `codex resume ID`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_session: Option<String>,
    /// Control requests refused because the agent made them.
    #[serde(default)]
    pub refused_requests: u32,
    /// What the sandbox refused the agents (`[sandbox] mode = "workspace"`).
    #[serde(default, skip_serializing_if = "crate::denial::Refusals::is_empty")]
    pub sandbox: crate::denial::Refusals,
    /// Why some of the run's checks ran unconfined (the verdict is MONITOR).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unconfined_checks: Option<String>,
    /// Hook mode: continuations asked for in a row (Claude Code allows 8).
    #[serde(default)]
    pub hook_chain: u32,
    /// The verification surface the run judges against (`None` for a run from before
    /// baselines, or with `on_protected_change = "allow"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<super::baseline::Baseline>,
    /// Every check's tests on the tree before any agent worked (`tests_baseline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests_baseline: Option<agentloop_evidence::TestsBaseline>,
    /// Files of the verification surface whose change a person approved: a test in
    /// one that no longer runs (deleted, renamed) is not held against a task.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub surface_approved: Vec<String>,
    /// A run with workers: its integration branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integration: Option<Integration>,
    /// Shipping: the push, pull request, checks, review, merge.
    #[serde(default)]
    pub ship: super::ship::ShipState,
    /// The budget spent, while the run is paused for it: (budget, used, limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_spent: Option<(String, f64, f64)>,
    /// What people added to the budgets (`resume --budget +10` …), on top of the
    /// settings of whichever driver runs.
    #[serde(default)]
    pub top_up: TopUp,
    /// Journal lines agentloop did not write, found and ignored.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forged: Vec<Forged>,
    /// Bytes of the journal folded into this state (set when it is cached to disk).
    #[serde(default)]
    pub journal_bytes: u64,
    #[serde(skip)]
    pub(super) index: HashMap<String, usize>,
    /// Control request ids already applied (for idempotent requests), one per line:
    /// a run can gather tens of thousands, and one string loads from the cache in a
    /// fraction of the time a set of strings takes.
    #[serde(default, rename = "request_ids")]
    requests: String,
}

#[derive(Debug, thiserror::Error)]
pub enum FoldError {
    #[error("the journal does not start with run_created (it starts with {0})")]
    NoRunCreated(&'static str),
}

impl RunState {
    /// Folds a whole journal.
    pub fn fold<'a>(records: impl IntoIterator<Item = &'a Record>) -> Result<RunState, FoldError> {
        let mut iter = records.into_iter();
        let first = iter.next().ok_or(FoldError::NoRunCreated("nothing"))?;
        let mut state = RunState::from_first(first)?;
        for r in iter {
            state.apply(r);
        }
        Ok(state)
    }

    pub(super) fn set_plan(&mut self, plan: Plan) {
        let mut old: HashMap<String, TaskState> =
            self.tasks.drain(..).map(|t| (t.id.clone(), t)).collect();
        self.tasks = plan
            .tasks
            .iter()
            .map(|t| {
                let mut st = old
                    .remove(&t.id)
                    .unwrap_or_else(|| TaskState::new(&t.id, &t.title));
                st.title = t.title.clone();
                st
            })
            .collect();
        self.index = self
            .tasks
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id.clone(), i))
            .collect();
        self.plan = plan;
    }

    /// Rebuilds what is not stored in `state.json` (the task index).
    pub fn reindex(&mut self) {
        self.index = self
            .tasks
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id.clone(), i))
            .collect();
    }

    pub fn task(&self, id: &str) -> Option<&TaskState> {
        self.index.get(id).map(|&i| &self.tasks[i])
    }

    pub(crate) fn task_mut(&mut self, id: &str) -> Option<&mut TaskState> {
        self.index.get(id).map(|&i| &mut self.tasks[i])
    }

    /// The plan's entry for a task (tasks and plan entries share positions).
    pub fn plan_task(&self, id: &str) -> Option<&agentloop_plan::Task> {
        self.index.get(id).map(|&i| &self.plan.tasks[i])
    }

    /// The mode that applies to a task.
    pub fn mode_of(&self, id: &str) -> Mode {
        self.plan_task(id)
            .and_then(|t| t.mode)
            .unwrap_or(self.settings.mode)
    }

    /// Binds the run to its first session; the bound session's process is the latest
    /// one seen (a resumed session runs in a new process).
    fn bind_session(&mut self, session_id: &str, pid: Option<u32>) {
        let bound = self.session.get_or_insert_with(|| session_id.to_string());
        if bound == session_id && pid.is_some() {
            self.session_pid = pid;
        }
    }

    /// True if a control request with this id was already recorded.
    pub fn has_request(&self, id: &str) -> bool {
        let id = one_line(id);
        self.requests.lines().any(|l| l == id)
    }

    pub fn is_finished(&self) -> bool {
        self.finished.is_some()
    }

    /// Applies one journal record.
    pub fn apply(&mut self, rec: &Record) {
        let at = rec.time_ms();
        if self.status == RunStatus::Running && !matches!(rec.event, Event::DriverStarted { .. }) {
            self.wall_ms += at.saturating_sub(self.last_ms);
        }
        self.last_ms = self.last_ms.max(at);
        self.last_seq = rec.seq;
        self.updated = rec.time.clone();
        match &rec.event {
            Event::RunCreated { .. } => {}
            Event::DriverStarted {
                pid,
                settings,
                prerequisites,
                ..
            } => {
                self.driver_pid = Some(*pid);
                self.prerequisites = prerequisites.clone();
                self.settings = settings.clone();
                // Its budgets may be higher: the policy looks again.
                self.budget_spent = None;
                self.planners_lost();
            }
            Event::BudgetSpent {
                budget,
                used,
                limit,
            } => self.budget_spent = Some((budget.clone(), *used, *limit)),
            Event::IterationStarted(st) => self.iteration_started(st, at),
            Event::AgentFinished(a) => self.agent_finished(a, &rec.time, at),
            Event::VerifyFinished(v) => {
                if let Some(open) = self.open_mut(v.iteration) {
                    open.verify = Some(v.clone());
                }
            }
            Event::IterationFinished(f) => self.finish_iteration(f, at),
            Event::Escalated {
                task,
                rung,
                evidence,
                trigger,
            } => {
                if let Some(t) = self.task_mut(task) {
                    let keep_digest = t.last_digest.clone();
                    t.reset_ladder();
                    t.last_digest = keep_digest;
                    t.rung = *rung;
                    t.escalations.push(trigger.describe());
                    t.breaker_tripped |= trigger.is_breaker();
                    if *rung == Rung::Block {
                        t.status = TaskStatus::Blocked;
                        t.blocked = Some(evidence.clone());
                        // A breaker that moved the task up the ladder is why it ends
                        // blocked, whatever the last rung's trigger was.
                        t.blocked_by_breaker = t.breaker_tripped;
                    }
                }
            }
            Event::ReplanAccepted {
                version,
                plan,
                task,
                ..
            } => self.replan_accepted(task, *version, plan),
            Event::ReplanRejected { reason, task } => self.replan_rejected(task, reason),
            Event::GateOpened { gate } => self.gate = Some(gate.clone()),
            Event::PlannerStarted { planner, basis } => self.planner_started(*planner, basis),
            Event::PlannerFinished(f) => self.planner_finished(f),
            Event::CycleJudged(j) => self.cycle_judged(j, at),
            Event::Control {
                id, request, by, ..
            } => {
                self.requests.push_str(&one_line(id));
                self.requests.push('\n');
                let open = self.gate.clone();
                self.control(request);
                self.approved(request, open.as_ref(), by.as_deref());
            }
            Event::LimitHit {
                until_ms,
                message,
                iteration,
                agent,
                ..
            } => self.limit_hit(*until_ms, message, *iteration, agent.as_deref()),
            Event::TeamTaskCompleted { task, .. } => self.team_task_completed(task),
            e @ (Event::ShipPushed { .. }
            | Event::PrOpened { .. }
            | Event::ChecksFinished { .. }
            | Event::ShipFixAdded { .. }
            | Event::ReviewApproved { .. }
            | Event::DiffGatesChecked { .. }
            | Event::TaskDiffChecked { .. }
            | Event::DiffGateApproved { .. }
            | Event::PrReleased { .. }
            | Event::PrMerged { .. }
            | Event::ShipUnitStarted { .. }
            | Event::TaskShipped { .. }
            | Event::IssueUpdated { .. }
            | Event::PostMergeVerified { .. }
            | Event::ShipFailed { .. }) => {
                self.apply_ship(e);
            }
            Event::AgentLimitOver { agent } => self.agent_limit_over(agent),
            Event::ForgeryIgnored(f) => {
                if !self.forged.contains(f) {
                    self.forged.push(f.clone());
                }
            }
            Event::SessionBound { session_id, pid } => {
                self.bind_session(session_id, *pid);
            }
            Event::HookStop {
                session_id,
                active,
                pid,
            } => {
                self.bind_session(session_id, *pid);
                self.hook_chain = if *active { self.hook_chain + 1 } else { 0 };
            }
            // What the session left is in the commit and the handoff; the run goes on
            // with the next session (or `resume --headless`).
            Event::SessionEnded { .. } => {}
            Event::ControlRefused { .. } => self.refused_requests += 1,
            Event::SandboxDenied { iteration, denial } => self.sandbox_denied(*iteration, denial),
            Event::ChecksUnconfined { why } => self.unconfined_checks = Some(why.clone()),
            Event::JobState(j) => {
                if let Some(o) = self.open_mut(j.iteration) {
                    o.job = Some(j.clone());
                }
            }
            Event::BaselineRecorded { files } => self.baseline_recorded(files),
            Event::TestsBaseline(b) => {
                // What the checks read that decides them joins the surface; a file
                // held for its test-like name alone that no check collected or
                // opened leaves it (the project model, `agentloop_project::learned`).
                if let Some(base) = &mut self.baseline {
                    base.retain(|path, f| {
                        !(f.why == agentloop_project::TEST_BY_NAME
                            && b.model.not_tests.contains(path))
                    });
                    for (path, f) in &b.traced {
                        base.entry(path.clone())
                            .or_insert_with(|| super::baseline::SurfaceFile {
                                blob: f.blob.clone(),
                                mode: f.mode,
                                why: f.why.clone(),
                            });
                    }
                }
                self.tests_baseline = Some(b.clone());
            }
            Event::IntegrationStarted { branch, base } => self.integration_started(branch, base),
            Event::MergeStarted { iteration, head } => self.merge_started(*iteration, head),
            Event::Merged { iteration, commit } => self.merged(*iteration, commit),
            Event::MergeRequeued { iteration, .. } => self.merge_requeued(*iteration),
            Event::MergeFailed {
                iteration,
                conflict,
                reason,
                digest,
                fingerprint,
            } => self.merge_failed(
                *iteration,
                MergeState::Failed {
                    conflict: *conflict,
                    reason: reason.clone(),
                    digest: digest.clone(),
                    fingerprint: fingerprint.clone(),
                },
            ),
            Event::Landed { commit, .. } => self.landed(commit),
            e @ (Event::Validated { .. } | Event::ValidationFixAdded { .. }) => self.apply_phase(e),
            Event::ReviewStarted(r) => self.review_started(r),
            Event::ReviewFinished(r) => self.review_finished(r),
            Event::TripwiresChecked { iteration, hits } => {
                self.tripwires_checked(*iteration, hits);
            }
            Event::SurfaceChecked { iteration, changes } => {
                self.surface_checked(*iteration, changes)
            }
            Event::SurfaceRestored { iteration, cause } => self.surface_restored(*iteration, cause),
            Event::PersonChangedSurface { files } => self.accept_surface(files),
            Event::LimitWaitOver => {
                self.limit_until_ms = None;
                self.limit_message = None;
            }
            Event::RunFinished { reason, .. } => {
                self.finished = Some(reason.clone());
                self.stop = None;
                self.driver_pid = None;
            }
        }
        // Inside an iteration the status cannot change; skip the scan.
        if !matches!(
            rec.event,
            Event::IterationStarted(_) | Event::AgentFinished(_) | Event::VerifyFinished(_)
        ) {
            self.status = self.derive_status();
        }
    }
}

/// A request id as kept in [`RunState`]'s list (line breaks would split it).
fn one_line(id: &str) -> std::borrow::Cow<'_, str> {
    if id.contains(['\n', '\r']) {
        id.replace(['\n', '\r'], " ").into()
    } else {
        id.into()
    }
}
