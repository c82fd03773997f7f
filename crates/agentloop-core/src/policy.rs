//! The policy: a pure function from the run's state to the next action. No I/O.
//!
//! The driver asks `next_action` after every event it records and does what it is told:
//! record a decision, run an iteration, run verification, wait for a person, or exit.

use crate::config::OnLimit;
use crate::event::*;
use crate::plan::{Mode, Plan, Task};
use crate::state::{RunState, StopKind, TaskState, TaskStatus, is_test_path};

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
    /// Nothing to do until a control request arrives.
    Wait(WaitReason),
    /// The run is over.
    Exit(RunStatus),
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
}

/// Applies `event` to a copy of `state` and returns the action that follows. The
/// driver folds in place; this form is for tests and simulations.
pub fn step(state: &RunState, record: &crate::journal::Record) -> (RunState, Action) {
    let mut next = state.clone();
    next.apply(record);
    let action = next_action(&next);
    (next, action)
}

pub fn next_action(s: &RunState) -> Action {
    if s.is_finished() {
        return Action::Exit(s.status);
    }
    if let Some(open) = &s.open {
        return finish_open_iteration(s, open);
    }
    if s.stop.is_some() {
        return Action::Record(Event::RunFinished {
            status: RunStatus::Stopped,
            reason: FinishReason::StopRequested,
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
    if s.settings.gates.plan_approval && !s.plan_approved {
        return Action::Record(Event::GateOpened { gate: Gate::Plan });
    }
    let Some(task) = s.next_task() else {
        if s.tasks.iter().all(|t| t.status.is_settled()) {
            if s.settings.gates.final_review && !s.final_approved {
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
    if let Some(reason) = budget_reached(s) {
        return Action::Record(Event::RunFinished {
            status: RunStatus::Failed,
            reason,
        });
    }
    let plan_task = s.plan_task(&task.id);
    if plan_task.is_some_and(|t| t.gate == Some(crate::plan::GatePoint::Before))
        && !task.gate_before_approved
    {
        return Action::Record(Event::GateOpened {
            gate: Gate::BeforeTask(task.id.clone()),
        });
    }
    let kind = match task.rung {
        Rung::Replan => IterationKind::Replan,
        Rung::Fallback => IterationKind::Fallback,
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

/// The iterations a task may spend on its current rung.
///
/// A failure that differs from every earlier one of the task is progress (slowly
/// fixing ten failing tests, one per iteration), and earns one more try, up to twice
/// the budget: a run that is getting somewhere is not stopped as stuck.
pub fn rung_budget(s: &RunState, task: &TaskState) -> u32 {
    match task.rung {
        Rung::Replan => 1,
        _ => {
            let base = s
                .plan_task(&task.id)
                .and_then(|t| t.max_iterations)
                .unwrap_or(s.settings.budgets.task_retries);
            base + task.progress.min(2 * base)
        }
    }
}

fn escalation(s: &RunState, t: &TaskState) -> Option<Event> {
    let b = &s.settings.breakers;
    // An agent that does nothing is checked first: asking it to replan is no use.
    let trigger = if b.no_output > 0 && t.no_output >= b.no_output {
        Trigger::NoOutput { count: t.no_output }
    } else if b.no_change > 0 && t.no_change >= b.no_change {
        Trigger::NoChange { count: t.no_change }
    } else if b.same_failure > 0 && t.same_failure >= b.same_failure {
        Trigger::SameFailure {
            count: t.same_failure,
            fingerprint: t.last_fingerprint.clone().unwrap_or_default(),
        }
    } else if b.oscillation > 0 && t.revisits >= b.oscillation {
        Trigger::Oscillation { count: t.revisits }
    } else if t.attempts >= rung_budget(s, t) {
        Trigger::RetryBudget {
            attempts: t.attempts,
        }
    } else {
        return None;
    };
    let idle = matches!(trigger, Trigger::NoOutput { .. } | Trigger::NoChange { .. });
    let replan_ok = s.replans_used < s.settings.budgets.max_replans && !idle;
    let fallback_ok = s.settings.fallback_agent.is_some();
    let rung = match t.rung {
        Rung::Retry if replan_ok => Rung::Replan,
        Rung::Retry | Rung::Replan if fallback_ok => Rung::Fallback,
        _ => Rung::Block,
    };
    let mut evidence = format!("task {}: {}", t.id, trigger.describe());
    if let Some(d) = &t.last_digest {
        evidence.push_str("\n\nLast failure:\n");
        evidence.push_str(d);
    }
    Some(Event::Escalated {
        task: t.id.clone(),
        trigger,
        rung,
        evidence,
    })
}

fn budget_reached(s: &RunState) -> Option<FinishReason> {
    let b = &s.settings.budgets;
    let hit = |budget: &str, used: f64, limit: f64| {
        Some(FinishReason::Budget {
            budget: budget.to_string(),
            used,
            limit,
        })
    };
    if s.iterations >= b.max_iterations {
        return hit("iterations", s.iterations as f64, b.max_iterations as f64);
    }
    if let Some(max) = b.max_cost_usd
        && s.cost_usd >= max
    {
        return hit("cost_usd", s.cost_usd, max);
    }
    if let Some(max) = b.max_tokens
        && s.usage.total() >= max
    {
        return hit("tokens", s.usage.total() as f64, max as f64);
    }
    if let Some(max) = b.max_duration
        && s.active_ms >= max.as_millis() as u64
    {
        return hit(
            "duration_s",
            (s.active_ms / 1000) as f64,
            max.as_secs() as f64,
        );
    }
    None
}

fn finish_open_iteration(s: &RunState, open: &crate::state::OpenIteration) -> Action {
    let n = open.started.iteration;
    let task = open.started.task.clone();
    let finished = |outcome, reason: String, digest| {
        Action::Record(Event::IterationFinished(IterationFinished {
            iteration: n,
            outcome,
            reason,
            digest,
            commit: None,
        }))
    };
    let Some(agent) = &open.agent else {
        // The journal has no result for this iteration: its driver died mid-way.
        return finished(
            Outcome::Aborted,
            "the iteration was interrupted before the agent finished".into(),
            None,
        );
    };
    if agent.killed || (s.stop == Some(StopKind::Now) && open.verify.is_none()) {
        return finished(Outcome::Aborted, "stopped on request".into(), None);
    }
    if let Some(err) = &agent.error {
        match err.kind {
            AgentErrorKind::RateLimit | AgentErrorKind::Overloaded => {
                let task = &open.started.task;
                let fallback = s
                    .settings
                    .fallback_agent
                    .as_ref()
                    .filter(|f| **f != open.started.agent);
                if let (OnLimit::Fallback, Some(f)) = (s.settings.limits.on_limit, fallback) {
                    if s.task(task).is_some_and(|t| t.rung != Rung::Fallback) {
                        return Action::Record(Event::Escalated {
                            task: task.clone(),
                            trigger: Trigger::UsageLimit {
                                agent: open.started.agent.clone(),
                            },
                            rung: Rung::Fallback,
                            evidence: format!("{}: {}", open.started.agent, err.message),
                        });
                    }
                    return finished(
                        Outcome::Limited,
                        format!("usage limit: {}; {f} takes over", err.message),
                        None,
                    );
                }
                if !open.limited {
                    return match limit_wait(s, open.agent_ms, agent, err) {
                        Ok(event) => Action::Record(event),
                        Err(why) => finished(Outcome::Blocked, why, None),
                    };
                }
                let what = if err.kind == AgentErrorKind::Overloaded {
                    "overloaded"
                } else {
                    "usage limit"
                };
                return finished(Outcome::Limited, format!("{what}: {}", err.message), None);
            }
            AgentErrorKind::Auth => {
                return finished(
                    Outcome::Blocked,
                    format!(
                        "the agent could not authenticate: {}. Fix the API key or log the CLI in, then `agentloop retry {}`",
                        err.message, open.started.task
                    ),
                    None,
                );
            }
            AgentErrorKind::Billing => {
                return finished(
                    Outcome::Blocked,
                    format!(
                        "the agent's account cannot pay: {}. Fix billing, then `agentloop retry {}`",
                        err.message, open.started.task
                    ),
                    None,
                );
            }
            _ => {}
        }
    }
    if let Some(q) = &agent.signals.blocked {
        return finished(Outcome::Blocked, format!("the agent asks: {q}"), None);
    }
    if let Some(proposal) = &agent.signals.replan {
        match open.replan {
            None => return Action::Record(review_replan(s, &task, proposal)),
            Some(true) => {
                return finished(
                    Outcome::Replanned,
                    "the agent's replan was accepted".into(),
                    None,
                );
            }
            Some(false) => {
                let why = open.replan_rejection.clone().unwrap_or_default();
                return finished(
                    Outcome::Failed,
                    format!("replan rejected: {why}"),
                    Some(format!("Your REPLAN proposal was rejected: {why}")),
                );
            }
        }
    }
    let Some(verify) = &open.verify else {
        return Action::Verify { iteration: n, task };
    };
    let (outcome, reason, digest) = judge(s, &task, agent, verify);
    finished(outcome, reason, digest)
}

/// How long to wait after a limit: the reset time when the agent told it, else a
/// backoff that doubles with each limit in a row (with a little deterministic jitter
/// for overloads). `Err` when the wait is longer than `limits.max_wait`.
fn limit_wait(
    s: &RunState,
    at_ms: u64,
    agent: &AgentFinished,
    err: &AgentError,
) -> Result<Event, String> {
    let l = &s.settings.limits;
    let max = l.max_wait.as_millis() as u64;
    let (wait, known) = match agent.resets_at_ms {
        Some(reset) => (reset.saturating_sub(at_ms).max(1000), true),
        None => {
            let base = if err.kind == AgentErrorKind::Overloaded {
                l.overloaded_wait
            } else {
                l.wait
            };
            let factor = 1u64 << s.limit_streak.min(16);
            let mut wait = (base.as_millis() as u64).saturating_mul(factor);
            if err.kind == AgentErrorKind::Overloaded {
                // Up to 25% more, the same on every replay of this journal.
                wait += wait / 4 * ((s.iterations as u64 * 7919) % 100) / 100;
            }
            (wait.min(max), false)
        }
    };
    if known && wait > max {
        return Err(format!(
            "the usage limit resets in {}s, longer than limits.max_wait ({}s): {}",
            wait / 1000,
            max / 1000,
            err.message
        ));
    }
    Ok(Event::LimitHit {
        kind: err.kind,
        message: err.message.clone(),
        until_ms: at_ms + wait,
        known_reset: known,
    })
}

/// Dual condition: the agent claimed completion and verification passed (and in tdd
/// mode the task's changes touched tests), with no guard broken.
fn judge(
    s: &RunState,
    task: &str,
    agent: &AgentFinished,
    verify: &VerifyFinished,
) -> (Outcome, String, Option<String>) {
    let protected: Vec<&String> = agent
        .changed_files
        .iter()
        .filter(|f| s.settings.protected.iter().any(|p| path_matches(f, p)))
        .collect();
    if !protected.is_empty() {
        let list = protected
            .iter()
            .map(|f| f.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let msg = format!("the agent changed protected paths: {list}");
        return (
            Outcome::Failed,
            msg.clone(),
            Some(format!(
                "{msg}. Restore them; they are not yours to change."
            )),
        );
    }
    let scope = s
        .plan
        .task(task)
        .map(|t| t.scope.clone())
        .unwrap_or_default();
    if !scope.is_empty() {
        let outside: Vec<&String> = agent
            .changed_files
            .iter()
            .filter(|f| !scope.iter().any(|p| path_matches(f, p)))
            .collect();
        if !outside.is_empty() {
            let list = outside
                .iter()
                .map(|f| f.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            let msg = format!(
                "changed files outside the task's scope ({}): {list}",
                scope.join(", ")
            );
            return (
                Outcome::Failed,
                msg.clone(),
                Some(format!("{msg}. Keep changes inside the scope.")),
            );
        }
    }
    if !verify.passed {
        let first = verify.commands.iter().find(|c| c.exit_code != Some(0));
        let reason = match first {
            Some(c) if c.timed_out => format!("verification timed out: `{}`", c.command),
            Some(c) => format!(
                "verification failed: `{}` exited {}",
                c.command,
                c.exit_code
                    .map(|e| e.to_string())
                    .unwrap_or_else(|| "by a signal".into())
            ),
            None => "verification failed".into(),
        };
        let claimed = if agent.signals.complete {
            " (the agent claimed the task was complete)"
        } else {
            ""
        };
        return (
            Outcome::Failed,
            format!("{reason}{claimed}"),
            verify.digest.clone(),
        );
    }
    if !agent.signals.complete {
        let msg = "verification passes, but the agent did not signal completion";
        return (
            Outcome::Failed,
            msg.into(),
            Some(format!(
                "{msg}. If every acceptance criterion is met, end your reply with TASK_COMPLETE on its own line."
            )),
        );
    }
    let tdd = s.mode_of(task) == Mode::Tdd;
    let touched = s.task(task).is_some_and(|t| t.tests_touched)
        || agent
            .changed_files
            .iter()
            .any(|f| is_test_path(f, &s.settings.test_patterns));
    if tdd && !touched {
        let msg = "tdd mode: verification passes but no test file was changed for this task";
        return (
            Outcome::Failed,
            msg.into(),
            Some(format!(
                "{msg}. Write a failing test first, then make it pass."
            )),
        );
    }
    (
        Outcome::Completed,
        format!(
            "verified ({})",
            plural(verify.commands.len(), "command passed", "commands passed")
        ),
        None,
    )
}

fn path_matches(path: &str, pattern: &str) -> bool {
    let p = pattern.trim_start_matches("./");
    if p.ends_with('/') {
        path.starts_with(p)
    } else {
        path == p || path.starts_with(&format!("{p}/"))
    }
}

/// Checks a REPLAN proposal against the current plan. Accepted proposals replace the
/// task being worked on with the proposed tasks; completed tasks never change.
pub fn review_replan(s: &RunState, task: &str, proposal: &str) -> Event {
    let reject = |reason: String| Event::ReplanRejected {
        task: task.to_string(),
        reason,
    };
    if s.replans_used >= s.settings.budgets.max_replans {
        return reject(format!(
            "the replan limit ({}) is reached",
            s.settings.budgets.max_replans
        ));
    }
    match apply_replan(s, task, proposal) {
        Ok(plan) => {
            let old: Vec<&str> = s.plan.ids();
            let new: Vec<&str> = plan.ids();
            let added = new
                .iter()
                .filter(|i| !old.contains(i))
                .map(|i| i.to_string())
                .collect();
            let removed = old
                .iter()
                .filter(|i| !new.contains(i))
                .map(|i| i.to_string())
                .collect();
            Event::ReplanAccepted {
                task: task.to_string(),
                version: s.plan_version + 1,
                plan,
                added,
                removed,
            }
        }
        Err(reason) => reject(reason),
    }
}

fn apply_replan(s: &RunState, task: &str, proposal: &str) -> Result<Plan, String> {
    let text = format!("# replan\n\n{proposal}\n");
    let proposed = Plan::parse("REPLAN", &text).map_err(|e| {
        let mut m = e.located();
        if let Some(h) = e.hint {
            m.push_str(&format!(" ({h})"));
        }
        m
    })?;
    for p in &proposed.tasks {
        if let Some(st) = s.task(&p.id)
            && st.status == TaskStatus::Done
        {
            return Err(format!("task {} is completed and cannot change", p.id));
        }
    }
    let original = s
        .plan
        .task(task)
        .ok_or_else(|| format!("task {task} is not in the plan"))?
        .clone();
    let mentioned: Vec<&str> = proposed.ids();
    let mut new_tasks: Vec<Task> = Vec::new();
    let mut replacement: Vec<Task> = proposed
        .tasks
        .iter()
        .filter(|p| p.id == task || s.plan.task(&p.id).is_none())
        .cloned()
        .collect();
    // The original task's checks still have to pass once its replacement is done.
    if let Some(last) = replacement.last_mut() {
        for v in &original.verify {
            if !last.verify.contains(v) {
                last.verify.push(v.clone());
            }
        }
    }
    let replacement_ids: Vec<String> = replacement.iter().map(|t| t.id.clone()).collect();
    for t in &s.plan.tasks {
        if t.id == task {
            new_tasks.append(&mut replacement);
            continue;
        }
        // Other pending tasks may be revised by the proposal; completed ones were refused above.
        let mut t = proposed
            .task(&t.id)
            .filter(|_| mentioned.contains(&t.id.as_str()))
            .cloned()
            .unwrap_or_else(|| t.clone());
        // Whoever depended on the replaced task now depends on all of its replacements.
        if !replacement_ids.iter().any(|r| r == task) && t.depends.iter().any(|d| d == task) {
            t.depends.retain(|d| d != task);
            t.depends.extend(replacement_ids.iter().cloned());
        }
        new_tasks.push(t);
    }
    if replacement_ids.is_empty() && !mentioned.contains(&task) {
        return Err(format!("the proposal has no task to replace {task}"));
    }
    let plan = Plan {
        title: s.plan.title.clone(),
        goal: s.plan.goal.clone(),
        settings: s.plan.settings.clone(),
        tasks: new_tasks,
    };
    plan.validate("REPLAN").map_err(|e| e.message)?;
    Ok(plan)
}

fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}
