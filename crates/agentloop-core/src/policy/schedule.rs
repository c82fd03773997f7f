//! The policy for a run with workers: every iteration in progress gets what it needs
//! next (a surface check, its checks, a place in the merge queue, its verdict), and
//! a free worker gets the next ready task no other worker is at. Pure, like the rest.

use crate::journal::{Event, MergeState, RunState};

use super::judge::finish_open_iteration;
use super::{Action, decide, next_action};

/// The actions a run can take now, most urgent first: decisions to record, steps of
/// iterations in progress, at most one merge (the queue's head), at most one new
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
    // The merge queue: one merge at a time, the one under way first, then the
    // iterations in the order they were verified.
    let mut merging = s
        .running
        .iter()
        .any(|o| matches!(o.merge, Some(MergeState::Started { .. })));
    let mut held = None;
    for open in &s.running {
        match finish_open_iteration(s, open) {
            Action::Merge { iteration } => {
                let under_way = matches!(open.merge, Some(MergeState::Started { .. }));
                if under_way || !merging {
                    merging = true;
                    out.push(Action::Merge { iteration });
                }
            }
            // A task waiting for its person holds up no other.
            w @ Action::Wait(_) => {
                held.get_or_insert(w);
            }
            a => out.push(a),
        }
    }
    if s.is_finished() {
        if out.is_empty() {
            out.extend(held);
        }
        return out;
    }
    let busy: Vec<&str> = s.running.iter().map(|o| o.started.task.as_str()).collect();
    match decide(s, &busy) {
        Action::Iterate(_) if s.running.len() >= workers => {}
        // The run ends, or waits, only once what is under way is done.
        Action::Record(Event::RunFinished { .. }) | Action::Exit(_) | Action::Wait(_)
            if !s.running.is_empty() => {}
        a => out.push(a),
    }
    if out.is_empty() {
        // Only steps under way remain, and the caller waits for them; or only tasks
        // that wait for a person, and the run waits for that person.
        out.push(held.unwrap_or(Action::Wait(super::WaitReason::Workers)));
    }
    out
}
