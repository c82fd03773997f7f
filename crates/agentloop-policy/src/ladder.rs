//! The escalation ladder and the run's budgets: how many tries a task gets on each
//! rung, when it moves up, when the run has spent what it may, and how long a limit
//! makes it wait.

use agentloop_journal::{
    AgentError, AgentErrorKind, AgentFinished, Event, RunState, Rung, TaskState, TaskStatus,
    Trigger,
};

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

/// "attempt N of at most M": the one definition every surface shows (the console,
/// `status`, `log`, `watch`, the API, the dashboard, hook mode, the MCP server). N
/// counts every attempt at the task on every rung, the one at work included; M is
/// [`task_bound`].
/// A task that is done, skipped or blocked gets no more attempts (until a person
/// retries it): M is N.
pub fn attempt_of(s: &RunState, task: &TaskState) -> (u32, u32) {
    let n = task.tries.max(1);
    if at_rest(task) {
        return (n, n);
    }
    (n, task_bound(s, task))
}

fn at_rest(task: &TaskState) -> bool {
    matches!(
        task.status,
        TaskStatus::Done | TaskStatus::Skipped | TaskStatus::Blocked
    )
}

/// [`attempt_of`] in words; a task at rest's in the past: "6 attempts, blocked".
pub fn attempt_words(s: &RunState, task: &TaskState) -> String {
    let (n, m) = attempt_of(s, task);
    if at_rest(task) {
        return format!(
            "{}, {}",
            agentloop_ground::words::plural(n as usize, "attempt", "attempts"),
            task.status.as_str()
        );
    }
    format!("attempt {n} of at most {m}")
}

/// The most attempts the task can come to, as things stand: what it spent on earlier
/// rungs, the most its current rung can give (the budget, and up to twice as many
/// more when each failure is new: progress), and the rungs above it (one replan, the
/// fallback agent by the same rule). Shown as "attempt 7 of at most 16".
pub fn task_bound(s: &RunState, task: &TaskState) -> u32 {
    let base = s
        .plan_task(&task.id)
        .and_then(|t| t.max_iterations)
        .unwrap_or(s.settings.budgets.task_retries);
    let earlier = task.tries.saturating_sub(task.attempts);
    let this = if task.rung == Rung::Replan {
        1
    } else {
        3 * base
    };
    let replan =
        u32::from(task.rung == Rung::Retry && s.replans_used < s.settings.budgets.max_replans);
    let fallback = if task.rung < Rung::Fallback && s.settings.fallback_agent.is_some() {
        3 * base
    } else {
        0
    };
    earlier + this + replan + fallback
}

pub(super) fn escalation(s: &RunState, t: &TaskState) -> Option<Event> {
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
    } else if let Some((file, times)) = t
        .thrash
        .as_ref()
        .filter(|(_, n)| b.thrashing > 0 && *n >= b.thrashing)
    {
        Trigger::Thrashing {
            file: file.clone(),
            times: *times,
        }
    } else if t.attempts >= rung_budget(s, t) {
        Trigger::RetryBudget {
            attempts: t.attempts,
            budget: rung_budget(s, t),
        }
    } else {
        return None;
    };
    // An agent that does nothing, or whose process keeps failing the same way, is not
    // helped by being asked to replan.
    let idle = matches!(trigger, Trigger::NoOutput { .. } | Trigger::NoChange { .. })
        || (matches!(trigger, Trigger::SameFailure { .. }) && t.agent_failing);
    let replan_ok = s.replans_used < s.settings.budgets.max_replans && !idle;
    let fallback_ok = s.settings.fallback_agent.is_some();
    let rung = match t.rung {
        Rung::Retry if replan_ok => Rung::Replan,
        Rung::Retry | Rung::Replan if fallback_ok => Rung::Fallback,
        _ => Rung::Block,
    };
    let history: Vec<String> = t
        .escalations
        .iter()
        .cloned()
        .chain(std::iter::once(trigger.describe()))
        .collect();
    let mut evidence = format!(
        "task {}: {}\nTried: {}",
        t.id,
        history.join(", then "),
        t.tried_text()
    );
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

/// Where the run stands against its budgets, in words: `iteration 3/50 · 1/3 tasks
/// done · $0.40/$25.00` (the cost's limit only when there is one; limits with what
/// people added).
pub fn standing(s: &RunState) -> String {
    let b = &s.settings.budgets;
    let more = &s.top_up;
    let done = s
        .tasks
        .iter()
        .filter(|t| t.status == agentloop_journal::TaskStatus::Done)
        .count();
    let cost = match b.max_cost_usd.map(|m| m + more.cost_usd) {
        Some(max) => format!(
            "{}/{}",
            agentloop_ground::words::money(s.cost_usd),
            agentloop_ground::words::money(max)
        ),
        None => agentloop_ground::words::money(s.cost_usd),
    };
    format!(
        "iteration {}/{} · {done}/{} tasks done · {cost}",
        s.counted_iterations(),
        b.max_iterations + more.iterations,
        s.tasks.len()
    )
}

/// The budget spent, if one is: (budget, used, limit), each limit with what people
/// added to it (`resume --budget +10` …).
pub(super) fn budget_reached(s: &RunState) -> Option<(String, f64, f64)> {
    let b = &s.settings.budgets;
    let more = &s.top_up;
    let hit = |budget: &str, used: f64, limit: f64| Some((budget.to_string(), used, limit));
    let max_iterations = b.max_iterations + more.iterations;
    if s.counted_iterations() >= max_iterations {
        return hit(
            "iterations",
            s.counted_iterations() as f64,
            max_iterations as f64,
        );
    }
    if let Some(max) = b.max_cost_usd.map(|m| m + more.cost_usd)
        && s.cost_usd >= max
    {
        return hit("cost_usd", s.cost_usd, max);
    }
    if let Some(max) = b.max_tokens.map(|m| m + more.tokens)
        && s.usage.total() >= max
    {
        return hit("tokens", s.usage.total() as f64, max as f64);
    }
    // The run's own wall time, not the lanes' time added up (8 workers for an hour
    // are an hour of the run).
    if let Some(max) = b.max_duration.map(|m| m.as_secs() + more.seconds)
        && s.wall_ms >= max * 1000
    {
        return hit("duration_s", (s.wall_ms / 1000) as f64, max as f64);
    }
    None
}

/// How long to wait after a limit: the reset time when the agent told it, else a
/// backoff that doubles with each limit in a row (with a little deterministic jitter
/// for overloads). `Err` when the wait is longer than `limits.max_wait`.
pub(super) fn limit_wait(
    s: &RunState,
    open: &agentloop_journal::OpenIteration,
    agent: &AgentFinished,
    err: &AgentError,
) -> Result<Event, String> {
    let at_ms = open.agent_ms;
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
        iteration: Some(open.started.iteration),
        agent: Some(open.started.agent.clone()),
    })
}
