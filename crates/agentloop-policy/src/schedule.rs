//! The policy for a run with workers: every iteration in progress gets what it needs
//! next (a surface check, its checks, a place in the merge queue, its verdict), and
//! a free worker gets the next ready task no other worker is at. Pure, like the rest.

use std::collections::BTreeSet;

use agentloop_journal::{Event, MergeState, RunState, RunStatus};

use super::judge::finish_open_iteration;
use crate::action::{Action, WaitReason};
use crate::next::{decide, next_action};

/// What a driver does now, given the steps it has under way (`busy`: iterations whose
/// agent, checks or merge run).
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Pick {
    /// Take this action now.
    Take(Action),
    /// Only steps under way matter now: wait for one of them to finish.
    AwaitWork,
    /// Nothing is under way, and the run waits for this (a person, a limit's reset).
    Wait(WaitReason),
    /// The run is over.
    Exit(RunStatus),
}

/// The first action of [`schedule`] that is not a step of an iteration under way, as
/// the driver with workers takes it — and the simulator, which runs the same choice:
/// shipping, validation, the test baseline, the run's end and a wait only once
/// nothing is under way.
pub fn pick(s: &RunState, busy: &BTreeSet<u32>) -> Pick {
    let next = schedule(s)
        .into_iter()
        .find(|a| a.iteration().is_none_or(|i| !busy.contains(&i)));
    let idle = busy.is_empty();
    match next {
        Some(Action::Ship(_) | Action::Validate | Action::TestBaseline) if !idle => Pick::AwaitWork,
        Some(Action::Record(Event::RunFinished { .. })) if !idle => Pick::AwaitWork,
        Some(Action::Exit(status)) if idle => Pick::Exit(status),
        Some(Action::Wait(reason)) if idle && reason != WaitReason::Workers => Pick::Wait(reason),
        Some(Action::Exit(_) | Action::Wait(_)) | None => Pick::AwaitWork,
        Some(a) => Pick::Take(a),
    }
}

/// The actions a run can take now, most urgent first: decisions to record, steps of
/// iterations in progress, at most one merge (a batch from the queue's head), at most one new
/// iteration (its number is the next one), or else what the run waits for. With one
/// worker this is `next_action`.
///
/// The caller records one decision at a time and asks again; steps it already has
/// under way (an agent, checks, a merge) it leaves out.
pub fn schedule(s: &RunState) -> Vec<Action> {
    let workers = s.settings.workers.max(1) as usize;
    if !s.settings.in_worktrees() || (s.is_finished() && s.running.is_empty()) {
        return vec![next_action(s)];
    }
    let mut out = Vec::new();
    // The merge queue: one batch at a time. A batch under way (or one a dead driver
    // began) first, whole; else the iterations in the order they were verified, up to
    // `[merge] batch` of them.
    let mut started = Vec::new();
    let mut queued = Vec::new();
    // Iterations in the merge queue: their agent is done, and their worker free.
    let mut in_queue = 0;
    let mut at = None;
    let mut held = None;
    for open in &s.running {
        match finish_open_iteration(s, open) {
            Action::Merge { batch } => {
                at.get_or_insert(out.len());
                in_queue += 1;
                match open.merge {
                    Some(MergeState::Started { .. }) => started.extend(batch),
                    _ => queued.extend(batch),
                }
            }
            // A task waiting for its person holds up no other.
            w @ Action::Wait(_) => {
                held.get_or_insert(w);
            }
            a => out.push(a),
        }
    }
    if let Some(at) = at {
        let batch = if started.is_empty() {
            queued.truncate(s.settings.merge_batch.max(1) as usize);
            queued
        } else {
            started
        };
        out.insert(at, Action::Merge { batch });
    }
    if s.is_finished() {
        if out.is_empty() {
            out.extend(held);
        }
        return out;
    }
    let busy: Vec<&str> = s.running.iter().map(|o| o.started.task.as_str()).collect();
    match decide(s, &busy) {
        // A worker is taken by an iteration until its task is verified: one waiting
        // in the merge queue does not hold it.
        Action::Iterate(_) if s.running.len() - in_queue >= workers => {}
        // An agent its provider limited runs fewer iterations at once for a while.
        Action::Iterate(p)
            if s.agent_caps
                .get(&p.agent)
                .is_some_and(|&cap| s.agent_at_work(&p.agent) >= cap) => {}
        // The run ends, or waits, only once what is under way is done.
        Action::Record(Event::RunFinished { .. }) | Action::Exit(_) | Action::Wait(_)
            if !s.running.is_empty() => {}
        a => out.push(a),
    }
    if out.is_empty() {
        // Only steps under way remain, and the caller waits for them; or only tasks
        // that wait for a person, and the run waits for that person.
        out.push(held.unwrap_or(Action::Wait(crate::action::WaitReason::Workers)));
    }
    out
}
