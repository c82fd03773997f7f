//! How an agent's REPLAN moves the state, and the tasks as a person wrote them.
//!
//! An accepted REPLAN rewrites tasks in the agent's own words. What its work is
//! trusted with still comes from the plan a person wrote: default-deny lets test files
//! the agent adds reach the checks only when the task *as written* writes tests (its
//! mode, a `(new)` name, a file it names that the tree did not hold), so a REPLAN
//! cannot grant its own tests.

use std::collections::BTreeMap;

use agentloop_plan::{Mode, Plan, Task};

use super::RunState;

impl RunState {
    /// The task `id` as a person wrote it: for one an agent's REPLAN wrote or revised,
    /// the person's task it stands for (the replaced task, for its replacements; its
    /// own earlier version, for a revised one); else the plan's.
    pub fn as_written(&self, id: &str) -> Option<&Task> {
        self.written.get(id).or_else(|| self.plan_task(id))
    }

    /// [`Self::mode_of`] the task as a person wrote it.
    pub fn written_mode_of(&self, id: &str) -> Mode {
        self.as_written(id)
            .and_then(|t| t.mode)
            .unwrap_or(self.settings.mode)
    }

    pub(super) fn replan_accepted(&mut self, task: &str, version: u32, plan: &Plan) {
        let replaced = self.as_written(task).cloned();
        let mut written = BTreeMap::new();
        for t in &plan.tasks {
            let before = self.plan_task(&t.id);
            let origin = if before == Some(t) {
                self.written.get(&t.id).cloned()
            } else if before.is_some() && t.id != task {
                self.as_written(&t.id).cloned()
            } else {
                replaced.clone()
            };
            if let Some(o) = origin {
                written.insert(t.id.clone(), o);
            }
        }
        self.written = written;
        self.plan_version = version;
        self.replans_used += 1;
        self.set_plan(plan.clone());
        if let Some(open) = self.open_of_task_mut(task) {
            open.replan = Some(true);
        }
    }

    pub(super) fn replan_rejected(&mut self, task: &str, reason: &str) {
        if let Some(open) = self.open_of_task_mut(task) {
            open.replan = Some(false);
            open.replan_rejection = Some(reason.to_string());
        }
    }
}
