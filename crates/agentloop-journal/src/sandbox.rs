//! What the sandbox refused the agents, as the journal tells it: a count for the
//! run, the latest few for the views, and each task's last iteration's for its next
//! prompt.

use super::state::RunState;
use crate::denial::{Denial, RECENT_REFUSALS};

impl RunState {
    pub(super) fn sandbox_denied(&mut self, iteration: u32, denial: &Denial) {
        self.sandbox.count += 1;
        self.sandbox.recent.push((iteration, denial.clone()));
        if self.sandbox.recent.len() > RECENT_REFUSALS {
            self.sandbox.recent.remove(0);
        }
        let task = self
            .open_iteration(iteration)
            .map(|o| o.started.task.clone());
        if let Some(t) = task.and_then(|t| self.task_mut(&t)) {
            t.denials.push(denial.clone());
        }
    }
}
