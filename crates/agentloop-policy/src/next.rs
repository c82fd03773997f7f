//! The next action: what follows the run's state, whole (`next_action`) or with some
//! tasks already at work elsewhere (`decide`, for the scheduler).

use agentloop_journal::{
    Event, FinishReason, Gate, IterationKind, Record, RunState, RunStatus, Rung, TaskState,
    TaskStatus,
};

use crate::action::{Action, IterationPlan, WaitReason};
use crate::judge::finish_open_iteration;
use crate::ladder::{budget_reached, escalation};
use crate::{cycles, diffgates, evidence, planning, ship, validate};

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
pub(crate) fn decide(s: &RunState, busy: &[&str]) -> Action {
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
    // A gate before the task: the plan's, or one of reversibility class 1 — as the
    // plan states it, or guessed from the task's words where the run confirms (a run
    // told to proceed waits for no guess).
    let irreversible = |t: &agentloop_plan::Task| {
        s.settings.gates.before_irreversible
            && agentloop_plan::reversibility(t).0 == agentloop_plan::Class::One
            && (t.reversibility.is_some() || s.settings.confirm)
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
