//! The independent reviewer's records in the state: the review under way and each
//! answer on the open iteration, the task's rejections and what its reviews said, and
//! the reviewer's cost.

use super::event::{Finding, ReviewFinished, ReviewStarted, ReviewVerdict};
use super::state::RunState;
use agentloop_ground::words::add_usd;

impl RunState {
    pub(super) fn review_started(&mut self, r: &ReviewStarted) {
        let task = self
            .open_iteration(r.iteration)
            .map(|o| o.started.task.clone());
        if let Some(o) = self.open_mut(r.iteration) {
            o.review_started = Some(r.clone());
        }
        if r.of == 0
            && let Some(t) = task.and_then(|t| self.task_mut(&t))
        {
            t.note_review(format!("not reviewed ({} risk)", r.risk));
        }
    }
    pub(super) fn review_finished(&mut self, r: &ReviewFinished) {
        self.cost_usd = add_usd(self.cost_usd, r.cost_usd);
        let task = self
            .open_iteration(r.iteration)
            .map(|o| o.started.task.clone());
        if let Some(o) = self.open_mut(r.iteration) {
            o.review_started = None;
            o.reviews.push(r.clone());
        }
        if let Some(t) = task.and_then(|t| self.task_mut(&t)) {
            t.cost_usd = add_usd(t.cost_usd, r.cost_usd);
            if r.verdict == ReviewVerdict::Reject {
                t.review_rejections += 1;
            }
            t.note_review(match r.verdict {
                ReviewVerdict::Approve => {
                    format!("approved by {}", r.reviewer)
                }
                ReviewVerdict::Reject => format!(
                    "rejected by {}: {}",
                    r.reviewer,
                    r.findings
                        .iter()
                        .map(Finding::words)
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            });
        }
    }
}
