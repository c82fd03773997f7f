//! What each iteration in progress is at — one lane per worker — and the merge queue,
//! as the views show them.

use serde::Serialize;

use super::integration::MergeState;
use super::state::{OpenIteration, RunState};

/// Where an iteration in progress is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Its agent is at work.
    Agent,
    /// Its checks run (the surface check first).
    Checks,
    /// Verified, waiting for its turn in the merge queue.
    Queued,
    /// Being merged and checked on the merged result.
    Merging,
    /// Waiting for a person (the surface gate).
    Waiting,
    /// Its verdict is being recorded.
    Deciding,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Agent => "agent",
            Phase::Checks => "checks",
            Phase::Queued => "queued",
            Phase::Merging => "merging",
            Phase::Waiting => "waiting for a person",
            Phase::Deciding => "deciding",
        }
    }
}

/// One iteration in progress.
#[derive(Debug, Clone, Serialize)]
pub struct Lane {
    pub iteration: u32,
    pub task: String,
    pub attempt: u32,
    pub agent: String,
    pub phase: Phase,
    pub started_ms: u64,
    /// Its agent's job on a cluster, while the agent is at work there:
    /// `Slurm job 12 PENDING (Priority)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
}

impl RunState {
    pub fn phase_of(&self, o: &OpenIteration) -> Phase {
        let at_gate =
            matches!(&self.gate, Some(super::person::Gate::Surface(t)) if *t == o.started.task);
        match (&o.agent, &o.verify, &o.merge) {
            (None, ..) => Phase::Agent,
            _ if at_gate => Phase::Waiting,
            (Some(_), None, _) => Phase::Checks,
            (_, _, Some(MergeState::Started { .. })) => Phase::Merging,
            (_, Some(v), None) if v.passed && self.settings.in_worktrees() => Phase::Queued,
            _ => Phase::Deciding,
        }
    }

    /// The iterations in progress, oldest first.
    pub fn lanes(&self) -> Vec<Lane> {
        self.running
            .iter()
            .map(|o| Lane {
                iteration: o.started.iteration,
                task: o.started.task.clone(),
                // Every attempt at the task, on every rung (as "attempt N of at most
                // M" counts everywhere), not the rung's own count.
                attempt: self
                    .task(&o.started.task)
                    .map_or(o.started.attempt, |t| t.tries.max(1)),
                agent: o.started.agent.clone(),
                phase: self.phase_of(o),
                started_ms: o.started_ms,
                job: o
                    .job
                    .as_ref()
                    .filter(|_| o.agent.is_none())
                    .map(|j| j.describe()),
            })
            .collect()
    }

    /// The lanes grouped by phase, in the order work moves through them (agents,
    /// checks, a person, the merge, the queue, a verdict); empty phases left out. What
    /// the views show once there are too many lanes to list one per line.
    pub fn lanes_by_phase(&self) -> Vec<(Phase, Vec<Lane>)> {
        let order = [
            Phase::Agent,
            Phase::Checks,
            Phase::Waiting,
            Phase::Merging,
            Phase::Queued,
            Phase::Deciding,
        ];
        let lanes = self.lanes();
        order
            .into_iter()
            .map(|p| (p, lanes.iter().filter(|l| l.phase == p).cloned().collect()))
            .filter(|(_, l): &(Phase, Vec<Lane>)| !l.is_empty())
            .collect()
    }

    /// The merge queue: the lane being merged, then the verified ones waiting.
    pub fn merge_queue(&self) -> Vec<Lane> {
        let mut q: Vec<Lane> = self
            .lanes()
            .into_iter()
            .filter(|l| matches!(l.phase, Phase::Merging | Phase::Queued))
            .collect();
        q.sort_by_key(|l| l.phase != Phase::Merging);
        q
    }
}
