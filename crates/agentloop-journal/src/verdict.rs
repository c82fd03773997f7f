//! How an iteration's verdict moves the state: the task done, failed with its digest
//! and the counters the breakers read, blocked, replanned, or given back.

use super::event::{IterationFinished, Outcome};
use super::state::RunState;
use super::task::TaskStatus;
use agentloop_ground::words::add_usd;

impl RunState {
    pub(super) fn finish_iteration(&mut self, f: &IterationFinished, time_ms: u64) {
        let Some(at) = self
            .running
            .iter()
            .position(|o| o.started.iteration == f.iteration)
        else {
            return;
        };
        let open = self.running.remove(at);
        let took = time_ms.saturating_sub(open.started_ms);
        self.active_ms += took;
        if f.outcome != Outcome::Limited && f.outcome != Outcome::Aborted {
            self.limit_streak = 0;
        }
        if f.outcome == Outcome::Aborted {
            self.aborted += 1;
        }
        let task_id = open.started.task.clone();
        let gate_after = self.needs_gate_after(&task_id);
        let iteration_cost = open.agent.as_ref().map(|a| a.cost_usd).unwrap_or(0.0);
        let Some(t) = self.task_mut(&task_id) else {
            return;
        };
        t.active_ms += took;
        if let Some(c) = &f.checkpoint {
            t.checkpoints.push((f.iteration, c.clone()));
        }
        // Skipped while the iteration ran: the skip stands unless the work got done.
        let skipped = t.status == TaskStatus::Skipped;
        match f.outcome {
            Outcome::Completed => {
                t.status = TaskStatus::Done;
                t.completed_iteration = Some(f.iteration);
                t.checked = open
                    .verify
                    .as_ref()
                    .map(|v| v.commands.clone())
                    .unwrap_or_default();
                t.evidence = open.verify.as_ref().and_then(|v| v.evidence.clone());
                t.admitted = open
                    .verify
                    .as_ref()
                    .map(|v| v.admitted.clone())
                    .unwrap_or_default();
                t.evidence_at = t.evidence.as_ref().map(|_| f.iteration);
                t.commit = f.commit.clone();
                t.last_digest = None;
                t.reset_ladder();
                t.clear_history();
                t.gate_after_pending = gate_after;
            }
            // A DEBUG iteration leaves the failure as it was, and what it found.
            Outcome::Failed if open.started.kind == super::IterationKind::Debug => {
                t.status = TaskStatus::Pending;
                t.debug_requested = false;
                t.failed_cost_usd = add_usd(t.failed_cost_usd, iteration_cost);
                if let Some(fp) = &t.last_fingerprint
                    && !t.debugged.contains(fp)
                {
                    t.debugged.push(fp.clone());
                }
                t.understanding = open
                    .agent
                    .as_ref()
                    .and_then(|a| a.final_message.clone())
                    .filter(|m| !m.trim().is_empty());
            }
            Outcome::Failed => {
                t.status = TaskStatus::Pending;
                t.failed_cost_usd = add_usd(t.failed_cost_usd, iteration_cost);
                if let Some(e) = open.verify.as_ref().and_then(|v| v.evidence.clone()) {
                    t.evidence = Some(e);
                    t.evidence_at = Some(f.iteration);
                }
                t.last_digest = f.digest.clone().or_else(|| Some(f.reason.clone()));
                let fp = f
                    .fingerprint
                    .clone()
                    .or_else(|| open.verify.as_ref().and_then(|v| v.fingerprint.clone()));
                t.agent_failing = f.agent_failed;
                match (&fp, &t.last_fingerprint) {
                    (Some(a), Some(b)) if a == b => t.same_failure += 1,
                    (Some(_), _) => t.same_failure = 1,
                    (None, _) => t.same_failure = 0,
                }
                if let Some(fp) = &fp
                    && !t.fingerprints.contains(fp)
                {
                    if !t.fingerprints.is_empty() {
                        t.progress += 1;
                    }
                    t.fingerprints.push(fp.clone());
                }
                t.last_fingerprint = fp;
                if let Some(a) = &open.agent {
                    // Back to a tree this task had already produced: going in circles.
                    if let Some(tree) = a
                        .tree_after
                        .as_ref()
                        .filter(|_| !a.changed_files.is_empty())
                    {
                        if t.trees.contains(tree) {
                            t.revisits += 1;
                        } else {
                            t.trees.push(tree.clone());
                        }
                    }
                    let unchanged = a.changed_files.is_empty() && !f.agent_failed;
                    t.no_change = if unchanged { t.no_change + 1 } else { 0 };
                    t.thrash = a.most_edited.clone();
                    // A process that failed (a timeout, a crash) is a failure, not silence.
                    t.no_output = if a.output_bytes == 0 && !f.agent_failed {
                        t.no_output + 1
                    } else {
                        0
                    };
                }
            }
            Outcome::Blocked => {
                t.status = TaskStatus::Blocked;
                t.question = open.agent.as_ref().and_then(|a| a.signals.blocked.clone());
                t.failed_cost_usd = add_usd(t.failed_cost_usd, iteration_cost);
                t.blocked = Some(f.reason.clone());
            }
            Outcome::Replanned => {
                // The task may have been replaced by the replan; if it is still there it starts over.
                t.status = TaskStatus::Pending;
                t.failed_cost_usd = add_usd(t.failed_cost_usd, iteration_cost);
                t.reset_ladder();
            }
            Outcome::Aborted | Outcome::Limited => {
                t.status = TaskStatus::Pending;
                t.attempts = t.attempts.saturating_sub(1);
                t.tries = t.tries.saturating_sub(1);
                if let Some(n) = t.tried.get_mut(&open.started.kind) {
                    *n = n.saturating_sub(1);
                }
                t.failed_cost_usd = add_usd(t.failed_cost_usd, iteration_cost);
            }
        }
        if skipped && f.outcome != Outcome::Completed {
            t.status = TaskStatus::Skipped;
            t.gate_after_pending = false;
        }
        if f.outcome == Outcome::Completed {
            self.remember_completed(&task_id);
        }
        // The same kind of failure across tasks: a pattern worth a learning.
        let failed_with = self.task(&task_id).and_then(|t| {
            (f.outcome == Outcome::Failed
                && !f.agent_failed
                && open.started.kind != super::IterationKind::Debug
                && t.status != TaskStatus::Done)
                .then(|| t.last_fingerprint.clone().zip(t.last_digest.clone()))
                .flatten()
        });
        if let Some((fp, digest)) = failed_with {
            self.remember_failure(&fp, &task_id, &digest);
        }
        // Steer notes given to an aborted iteration are not lost.
        if f.outcome == Outcome::Aborted {
            let mut notes = open.started.steer.clone();
            notes.append(&mut self.steer);
            self.steer = notes;
        }
    }
}
