//! How a run with workers moves the state: its integration branch, the merge queue,
//! the usage limits of each agent's account, and tasks an agent team completed.

use super::integration::{Integration, MergeState};
use super::state::RunState;
use super::task::TaskStatus;

impl RunState {
    pub(super) fn integration_started(&mut self, branch: &str, base: &str) {
        self.integration = Some(Integration {
            branch: branch.to_string(),
            base: base.to_string(),
            head: base.to_string(),
            landed: false,
        });
    }

    pub(super) fn merge_started(&mut self, iteration: u32, head: &str) {
        if let Some(open) = self.open_mut(iteration) {
            open.merge = Some(MergeState::Started {
                head: head.to_string(),
            });
        }
    }

    pub(super) fn merged(&mut self, iteration: u32, commit: &str) {
        if let Some(open) = self.open_mut(iteration) {
            open.merge = Some(MergeState::Merged {
                commit: commit.to_string(),
            });
        }
        if let Some(i) = &mut self.integration {
            i.head = commit.to_string();
        }
    }

    pub(super) fn merge_requeued(&mut self, iteration: u32) {
        if let Some(open) = self.open_mut(iteration) {
            open.merge = None;
        }
    }

    pub(super) fn merge_failed(&mut self, iteration: u32, failed: MergeState) {
        if let Some(open) = self.open_mut(iteration) {
            open.merge = Some(failed);
        }
    }

    pub(super) fn landed(&mut self, commit: &str) {
        if let Some(i) = &mut self.integration {
            i.landed = true;
            i.head = commit.to_string();
        }
    }

    pub(super) fn limit_hit(
        &mut self,
        until_ms: u64,
        message: &str,
        iteration: Option<u32>,
        agent: Option<&str>,
    ) {
        match (agent, self.settings.in_worktrees()) {
            // Workers share an agent's account: that agent's tasks wait, others go on;
            // and then fewer of them at once (multiplicative decrease: half of what
            // ran when the limit came; once per wait, however many of them hit it).
            (Some(a), true) => {
                let fresh = self.agent_limits.insert(a.to_string(), until_ms).is_none();
                // Its calls under way then: agents still at work, and those the limit
                // stopped.
                let ran = self
                    .running
                    .iter()
                    .filter(|o| o.started.agent == a)
                    .filter(|o| o.agent.as_ref().is_none_or(|f| f.error.is_some()))
                    .count() as u32;
                let cap = self.agent_caps.get(a).copied().unwrap_or(ran).min(ran);
                if fresh && self.settings.workers > 1 {
                    self.agent_caps.insert(a.to_string(), (cap / 2).max(1));
                }
            }
            _ => self.limit_until_ms = Some(until_ms),
        }
        self.limit_message = Some(message.to_string());
        self.limit_streak += 1;
        let open = match iteration {
            Some(i) => self.open_mut(i),
            None => self.running.first_mut(),
        };
        if let Some(open) = open {
            open.limited = true;
        }
    }

    /// A call of `agent` went through: one more of its iterations may run at once
    /// (additive increase), up to the workers.
    pub(super) fn agent_went_through(&mut self, agent: &str) {
        if let Some(cap) = self.agent_caps.get_mut(agent) {
            *cap += 1;
            if *cap >= self.settings.workers {
                self.agent_caps.remove(agent);
            }
        }
    }

    /// Iterations whose `agent` is at work now (its calls to the provider).
    pub fn agent_at_work(&self, agent: &str) -> u32 {
        self.running
            .iter()
            .filter(|o| o.started.agent == agent && o.agent.is_none())
            .count() as u32
    }

    pub(super) fn agent_limit_over(&mut self, agent: &str) {
        self.agent_limits.remove(agent);
        if self.agent_limits.is_empty() {
            self.limit_message = None;
        }
    }

    pub(super) fn team_task_completed(&mut self, task: &str) {
        let gate_after = self.needs_gate_after(task);
        if let Some(t) = self.task_mut(task)
            && t.status != TaskStatus::Done
        {
            t.status = TaskStatus::Done;
            t.last_digest = None;
            t.reset_ladder();
            t.clear_history();
            // Pair mode: a person reviews it at the gate after the task.
            t.gate_after_pending = gate_after;
            self.remember_completed(task);
        }
    }
}
