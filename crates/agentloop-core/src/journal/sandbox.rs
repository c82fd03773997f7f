//! What the sandbox refused the agents, as the journal tells it: a count for the
//! run, the latest few for the views, and each task's last iteration's for its next
//! prompt.

use serde::{Deserialize, Serialize};

use super::state::RunState;
use crate::exec::sandbox::Denial;

/// How many of the latest refusals the views show.
const RECENT: usize = 10;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusals {
    /// Every refusal recorded in the run.
    pub count: u32,
    /// The latest, with their iteration, oldest first.
    pub recent: Vec<(u32, Denial)>,
}

impl Refusals {
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

impl RunState {
    pub(super) fn sandbox_denied(&mut self, iteration: u32, denial: &Denial) {
        self.sandbox.count += 1;
        self.sandbox.recent.push((iteration, denial.clone()));
        if self.sandbox.recent.len() > RECENT {
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
