//! The policy: a pure function from the run's state to the next action. No I/O.
//!
//! The driver asks `next_action` after every event it records and does what it is told:
//! record a decision, run an iteration, run verification, wait for a person, or exit.
mod cycles;
mod diffgates;
pub mod evidence;
mod judge;
mod ladder;
pub mod planning;
mod prompt;
mod replan;
pub mod review;
mod schedule;
mod ship;
pub mod told;
mod tripwire;
mod validate;

use agentloop_journal::{
    Event, FinishReason, Gate, IterationKind, Record, RunState, RunStatus, Rung, TaskState,
    TaskStatus,
};

use judge::finish_open_iteration;
use ladder::{budget_reached, escalation};

pub use cycles::{
    done_in_cycle, parse as parse_judgement, prompt as judge_prompt, rule as cycle_rule,
};
pub use diffgates::{
    DiffInput, FileDiff, enabled as diff_gate_enabled, parse_unified, reviewers as gate_reviewers,
    triggered, triggered_interface, unread,
};
pub use ladder::{attempt_of, attempt_words, rung_budget, standing, task_bound};
pub use prompt::{DEBUG_LOG, build as build_prompt, of_iteration as prompt_of_iteration};
pub use replan::review_replan;
pub use schedule::{Pick, pick, schedule};
pub use ship::{ShipStep, next_unit};
pub use tripwire::{commands as tripwire_commands, tripped, wires_for};

// One action exists at a time and is consumed at once; boxing the event buys nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Record a decision in the journal; the fold applies it.
    Record(Event),
    /// Run one agent iteration.
    Iterate(IterationPlan),
    /// Run the verification commands for the open iteration.
    Verify { iteration: u32, task: String },
    /// Check what the open iteration did against its tripwires (`tripwires_checked`).
    CheckTripwires { iteration: u32 },
    /// The VALIDATE phase: every done task's checks and the run's, on the whole
    /// project after the last task (`validated`).
    Validate,
    /// Compare the verification surface with the baseline (`surface_checked`).
    CheckSurface { iteration: u32 },
    /// A run with workers: merge a batch of verified iterations (the queue's head
    /// first, at most `[merge] batch`) onto the integration branch, one after the
    /// other, and check the merged result once (`merge_started` for each, then
    /// `merged`, `merge_failed` or `merge_requeued` for each). One batch at a time: the
    /// merge queue.
    Merge { batch: Vec<u32> },
    /// A step of shipping the completed run (push, pull request, checks, merge, the
    /// base branch's verification after it).
    Ship(ShipStep),
    /// A run without a forge: read what the done task's commit changed for the diff
    /// gates (`task_diff_checked`).
    CheckDiff { task: String },
    /// Put the baseline versions of the checked changes back (`surface_restored`).
    Restore {
        iteration: u32,
        cause: agentloop_journal::RestoreCause,
    },
    /// Run every check of the run once on the tree before any agent works, and
    /// record each test's outcome (`tests_baseline`).
    TestBaseline,
    /// The independent reviewer's turn on the open iteration's verified work
    /// (`review_started`, then `review_finished`).
    Review { iteration: u32, task: String },
    /// Ask planner `planner` for new tasks, the run standing at `basis`
    /// (`planner_started`, then `planner_finished`).
    Plan { planner: u32, basis: String },
    /// Judge the end of cycle `cycle` (`cycle_judged`).
    Judge { cycle: u32 },
    /// Nothing to do until a control request arrives.
    Wait(WaitReason),
    /// The run is over.
    Exit(RunStatus),
}

impl Action {
    /// The iteration this action is a step of, when it is one (a driver with workers
    /// leaves out the steps of iterations it has under way).
    pub fn iteration(&self) -> Option<u32> {
        match self {
            Action::Verify { iteration, .. }
            | Action::CheckSurface { iteration }
            | Action::CheckTripwires { iteration }
            | Action::Restore { iteration, .. }
            | Action::Review { iteration, .. } => Some(*iteration),
            Action::Merge { batch } => batch.first().copied(),
            Action::Record(Event::IterationFinished(f)) => Some(f.iteration),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct IterationPlan {
    pub iteration: u32,
    pub task: String,
    pub attempt: u32,
    pub kind: IterationKind,
    pub agent: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum WaitReason {
    Gate(Gate),
    Paused,
    /// No task can run: some are blocked. `breaker` is true when a breaker caused it.
    Blocked {
        tasks: Vec<String>,
        breaker: bool,
    },
    /// The model service's limit resets at this time (Unix milliseconds).
    UsageLimit {
        until_ms: u64,
    },
    /// A run with workers: nothing new to start; what the workers are at goes on.
    Workers,
    /// A budget is spent: the run is paused until a person tops it up.
    Budget {
        budget: String,
        used: f64,
        limit: f64,
    },
}

impl WaitReason {
    /// "budget spent: cost $25.00 of $25.00" and the like.
    pub fn budget_words(budget: &str, used: f64, limit: f64) -> String {
        match budget {
            "cost_usd" => format!(
                "budget spent: cost {} of {}",
                agentloop_ground::words::money(used),
                agentloop_ground::words::money(limit)
            ),
            "duration_s" => format!(
                "budget spent: time {} of {}",
                humantime::format_duration(std::time::Duration::from_secs(used as u64)),
                humantime::format_duration(std::time::Duration::from_secs(limit as u64))
            ),
            other => format!("budget spent: {other} {used} of {limit}"),
        }
    }
}

/// Applies `event` to a copy of `state` and returns the action that follows. The
/// driver folds in place; this form is for tests and simulations.
pub fn step(state: &RunState, record: &Record) -> (RunState, Action) {
    let mut next = state.clone();
    next.apply(record);
    let action = next_action(&next);
    (next, action)
}

/// The same failure came back `debug_after` times from work the agent did (not from
/// its own process failing, nor from an agent that changes nothing: the breakers are
/// for those), and no DEBUG iteration has looked into it yet.
fn debug_due(s: &RunState, t: &TaskState) -> bool {
    // A person asked; or the bug workflow, whose tasks start by finding the cause (an
    // interrupted first iteration is no attempt: the next one is still the DEBUG one).
    if t.debug_requested || (s.settings.debug_first && t.attempts == 0) {
        return true;
    }
    let after = s.settings.breakers.debug_after;
    after > 0
        && t.same_failure >= after
        && !t.agent_failing
        && t.no_change == 0
        && t.last_fingerprint
            .as_ref()
            .is_some_and(|fp| !t.debugged.contains(fp))
}

pub fn next_action(s: &RunState) -> Action {
    if s.is_finished() {
        return Action::Exit(s.status);
    }
    if let Some(open) = s.current() {
        return finish_open_iteration(s, open);
    }
    decide(s, &[])
}

/// What to do when no iteration needs finishing: stop, wait, open a gate, finish the
/// run, or start an iteration of the first ready task that is not in `busy` (tasks
/// other workers are at).
fn decide(s: &RunState, busy: &[&str]) -> Action {
    if s.stop.is_some() {
        return Action::Record(Event::RunFinished {
            status: RunStatus::Stopped,
            reason: FinishReason::StopRequested,
        });
    }
    if let Some((agentloop_journal::CycleVerdict::Stop, reasons)) = &s.cycles.last {
        return Action::Record(Event::RunFinished {
            status: RunStatus::Stopped,
            reason: FinishReason::Judged {
                cycle: s.cycles.judged,
                reasons: reasons.clone(),
            },
        });
    }
    if let Some(until_ms) = s.limit_until_ms {
        return Action::Wait(WaitReason::UsageLimit { until_ms });
    }
    if let Some(g) = &s.gate {
        return Action::Wait(WaitReason::Gate(g.clone()));
    }
    if s.paused {
        return Action::Wait(WaitReason::Paused);
    }
    if let Some(t) = s
        .tasks
        .iter()
        .find(|t| t.gate_after_pending && t.status == TaskStatus::Done)
    {
        return Action::Record(Event::GateOpened {
            gate: Gate::AfterTask(t.id.clone()),
        });
    }
    if let Some(a) = diffgates::hold(s) {
        return a;
    }
    if s.settings.gates.plan_approval && !s.plan_approved {
        return Action::Record(Event::GateOpened { gate: Gate::Plan });
    }
    // The plan's review comes before any work: once an iteration ran there is nothing
    // left for it to hold, and the plan is not read again at every decision after.
    if s.settings.gates.plan_review
        && !s.plan_reviewed
        && s.iterations == 0
        && !agentloop_plan::findings(&s.plan, !s.settings.verify_commands.is_empty()).is_empty()
    {
        return Action::Record(Event::GateOpened {
            gate: Gate::PlanReview,
        });
    }
    if evidence::baseline_due(s) {
        return Action::TestBaseline;
    }
    if let Some(cycle) = cycles::due(s) {
        return Action::Judge { cycle };
    }
    // Planners: new tasks a planner proposed wait for a person; one is asked for more
    // when the run has moved and the plan no longer keeps the workers busy.
    if s.planning.proposal.is_some() {
        return Action::Record(Event::GateOpened {
            gate: Gate::NewTasks,
        });
    }
    if let Some((planner, basis)) = planning::due(s) {
        return Action::Plan { planner, basis };
    }
    // Workers: the tasks of an agent waiting for its usage limit wait with it.
    let limited: Vec<&str> = s
        .tasks
        .iter()
        .filter(|t| {
            let agent = s
                .plan_task(&t.id)
                .and_then(|p| p.agent.as_deref())
                .unwrap_or(&s.settings.agent);
            s.agent_limits.contains_key(agent)
        })
        .map(|t| t.id.as_str())
        .collect();
    let mut skip: Vec<&str> = busy.to_vec();
    skip.extend(&limited);
    let next = s.next_task_except(&skip);
    if next.is_none()
        && let Some(&until_ms) = s.agent_limits.values().min()
        && s.next_task_except(busy).is_some()
    {
        return Action::Wait(WaitReason::UsageLimit { until_ms });
    }
    let Some(task) = next else {
        // A planner at work may still add tasks: the run does not end under it.
        if !s.planning.at_work.is_empty() {
            return Action::Wait(WaitReason::Workers);
        }
        if s.tasks.iter().all(|t| t.status.is_settled()) {
            if let Some(a) = validate::next(s) {
                return a;
            }
            if let Some(a) = ship::next(s) {
                return a;
            }
            // The run's observation criteria are confirmed at the final review; and a
            // run whose work rests on assumptions (seed 002: no exit signal on one)
            // is not declared done until a person accepts them there.
            let of_kind = |c: &String, kind: agentloop_plan::Evidence| {
                agentloop_plan::Requirement::parse(c).is_ok_and(|r| r.kind == kind)
            };
            let observe = s
                .plan
                .criteria
                .iter()
                .any(|c| of_kind(c, agentloop_plan::Evidence::Observation));
            let assumed = s
                .plan
                .criteria
                .iter()
                .chain(s.plan.tasks.iter().flat_map(|t| &t.criteria))
                .any(|c| of_kind(c, agentloop_plan::Evidence::Assumption));
            if (s.settings.gates.final_review || observe || assumed) && !s.final_approved {
                return Action::Record(Event::GateOpened { gate: Gate::Final });
            }
            return Action::Record(Event::RunFinished {
                status: RunStatus::Completed,
                reason: FinishReason::Completed,
            });
        }
        let blocked: Vec<&TaskState> = s
            .tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Blocked)
            .collect();
        return Action::Wait(WaitReason::Blocked {
            tasks: blocked.iter().map(|t| t.id.clone()).collect(),
            breaker: blocked.iter().any(|t| t.blocked_by_breaker),
        });
    };
    if let Some(e) = escalation(s, task) {
        return Action::Record(e);
    }
    if let Some((budget, used, limit)) = &s.budget_spent {
        return Action::Wait(WaitReason::Budget {
            budget: budget.clone(),
            used: *used,
            limit: *limit,
        });
    }
    if let Some((budget, used, limit)) = budget_reached(s) {
        return Action::Record(Event::BudgetSpent {
            budget,
            used,
            limit,
        });
    }
    let plan_task = s.plan_task(&task.id);
    // A gate before the task: the plan's, or one of reversibility class 1.
    let irreversible = |t: &agentloop_plan::Task| {
        s.settings.gates.before_irreversible
            && agentloop_plan::reversibility(t).0 == agentloop_plan::Class::One
    };
    if plan_task
        .is_some_and(|t| t.gate == Some(agentloop_plan::GatePoint::Before) || irreversible(t))
        && !task.gate_before_approved
    {
        return Action::Record(Event::GateOpened {
            gate: Gate::BeforeTask(task.id.clone()),
        });
    }
    let kind = match task.rung {
        Rung::Replan => IterationKind::Replan,
        Rung::Fallback => IterationKind::Fallback,
        _ if debug_due(s, task) => IterationKind::Debug,
        _ if task.last_digest.is_some() => IterationKind::Retry,
        _ => IterationKind::Work,
    };
    let agent = match (kind, &s.settings.fallback_agent) {
        (IterationKind::Fallback, Some(f)) => f.clone(),
        _ => plan_task
            .and_then(|t| t.agent.clone())
            .unwrap_or_else(|| s.settings.agent.clone()),
    };
    Action::Iterate(IterationPlan {
        iteration: s.iterations + 1,
        task: task.id.clone(),
        attempt: task.attempts + 1,
        kind,
        agent,
    })
}
