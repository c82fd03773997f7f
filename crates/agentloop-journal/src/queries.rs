//! Reading a folded run: where a task stands in the plan, the iterations in progress,
//! the next task that may run. Only queries: what changes the state is in `state`.

use super::state::{OpenIteration, RunState};
use super::task::{TaskState, TaskStatus};
use crate::event::{FinishReason, RunStatus};
use agentloop_plan::{GatePoint, Mode};

impl RunState {
    /// The skills each phase requires (found when the run started), but those a
    /// person skipped.
    pub fn required_skills(
        &self,
    ) -> std::collections::BTreeMap<String, Vec<agentloop_config::Skill>> {
        let mut skills = self.settings.skills.clone();
        for list in skills.values_mut() {
            list.retain(|s| !self.skills_skipped.contains_key(&s.name));
        }
        skills
    }

    pub(super) fn needs_gate_after(&self, id: &str) -> bool {
        let task = self.plan_task(id);
        task.is_some_and(|t| t.gate == Some(GatePoint::After))
            || (self.settings.gates.after_each && task.is_some())
            // An observation criterion is confirmed by a person after the task.
            || task.is_some_and(|t| {
                t.criteria.iter().any(|c| {
                    agentloop_plan::Requirement::parse(c)
                        .is_ok_and(|r| r.kind == agentloop_plan::Evidence::Observation)
                })
            })
            || match self.mode_of(id) {
                Mode::Pair => true,
                Mode::Checkpoint => task.is_some_and(|t| t.milestone),
                _ => false,
            }
    }

    /// The status a person sees.
    pub(super) fn derive_status(&self) -> RunStatus {
        if let Some(reason) = &self.finished {
            return match reason {
                FinishReason::Completed => RunStatus::Completed,
                FinishReason::StopRequested
                | FinishReason::Rejected { .. }
                | FinishReason::Judged { .. } => RunStatus::Stopped,
                FinishReason::Budget { .. } | FinishReason::Error { .. } => RunStatus::Failed,
            };
        }
        if self.gate.is_some() {
            return RunStatus::Waiting;
        }
        if self.paused || self.budget_spent.is_some() {
            return RunStatus::Paused;
        }
        if self.running.is_empty()
            && self.tasks.iter().any(|t| t.status == TaskStatus::Blocked)
            && self.next_task().is_none()
        {
            return RunStatus::Blocked;
        }
        RunStatus::Running
    }

    /// The position of a task in the plan, from 1 (0 when it is not in it).
    pub fn position(&self, id: &str) -> usize {
        self.index.get(id).map_or(0, |&i| i + 1)
    }

    /// The oldest iteration in progress (the only one with a single worker).
    pub fn current(&self) -> Option<&OpenIteration> {
        self.running.first()
    }

    /// The iteration in progress numbered `iteration`.
    pub fn open_iteration(&self, iteration: u32) -> Option<&OpenIteration> {
        self.running
            .iter()
            .find(|o| o.started.iteration == iteration)
    }

    pub(crate) fn open_mut(&mut self, iteration: u32) -> Option<&mut OpenIteration> {
        self.running
            .iter_mut()
            .find(|o| o.started.iteration == iteration)
    }

    /// The iteration in progress of a task.
    pub fn open_of_task(&self, task: &str) -> Option<&OpenIteration> {
        self.running.iter().find(|o| o.started.task == task)
    }

    pub(crate) fn open_of_task_mut(&mut self, task: &str) -> Option<&mut OpenIteration> {
        self.running.iter_mut().find(|o| o.started.task == task)
    }

    /// The task and agent of the (oldest) iteration in progress, if one is.
    pub fn open_task(&self) -> Option<&str> {
        self.current().map(|o| o.started.task.as_str())
    }
    pub fn open_agent(&self) -> Option<&str> {
        self.current().map(|o| o.started.agent.as_str())
    }

    /// Iterations that count against `max_iterations`: every one but those a crash or
    /// a kill cut short.
    pub fn counted_iterations(&self) -> u32 {
        self.iterations.saturating_sub(self.aborted)
    }

    /// The first task (in plan order) that may run now: not settled, not blocked, and
    /// every dependency done or skipped.
    pub fn next_task(&self) -> Option<&TaskState> {
        self.next_task_except(&[])
    }

    /// [`next_task`](Self::next_task), leaving out the tasks in `busy`.
    pub fn next_task_except(&self, busy: &[&str]) -> Option<&TaskState> {
        // A hundred workers: looked up by hash, not compared one by one per task.
        let busy: std::collections::HashSet<&str> = busy.iter().copied().collect();
        self.plan
            .tasks
            .iter()
            .zip(&self.tasks)
            .find_map(|(pt, st)| {
                let ready = matches!(st.status, TaskStatus::Pending | TaskStatus::Running)
                    && !busy.contains(&st.id.as_str())
                    && pt
                        .depends
                        .iter()
                        .all(|d| self.task(d).is_some_and(|t| t.status.is_settled()));
                ready.then_some(st)
            })
    }

    /// Where the run is in the seeds' loop: `develop` (tasks at work), `debug` (a DEBUG
    /// iteration at work), `validate` (every task settled, the whole project checked
    /// again), `ship` (pushed: the pull request's way), `done` (finished).
    pub fn stage(&self) -> &'static str {
        if self.is_finished() {
            return "done";
        }
        if self.ship.pushed.is_some() || self.ship.unit.is_some() || !self.ship.shipped.is_empty() {
            return "ship";
        }
        if self
            .running
            .iter()
            .any(|o| o.started.kind == super::IterationKind::Debug)
        {
            return "debug";
        }
        if !self.tasks.is_empty() && self.tasks.iter().all(|t| t.status.is_settled()) {
            return "validate";
        }
        "develop"
    }

    pub fn done_count(&self) -> usize {
        self.tasks.iter().filter(|t| t.status.is_settled()).count()
    }

    /// Done tasks that had nothing to check them: no `Verify:` line or criterion
    /// command of their own and no `[verify] commands` for the run. Their "done" is
    /// the agent's word.
    pub fn unchecked_done(&self) -> Vec<&str> {
        if !self.settings.verify_commands.is_empty() {
            return Vec::new();
        }
        self.tasks
            .iter()
            .filter(|t| t.status == crate::task::TaskStatus::Done)
            .filter(|t| self.plan.checks(&t.id).is_empty())
            // A fix task the forge's checks passed after is verified by them.
            .filter(|t| !self.ship.fix_verified.contains_key(&t.id))
            .map(|t| t.id.as_str())
            .collect()
    }

    /// How a completed run ends, in words: "every task is done and verified", or how
    /// many rest on the agent's word alone.
    pub fn completion_words(&self) -> String {
        let unchecked = self.unchecked_done();
        if unchecked.is_empty() {
            return "every task is done and verified".into();
        }
        let done = self
            .tasks
            .iter()
            .filter(|t| t.status == crate::task::TaskStatus::Done)
            .count();
        if unchecked.len() == done {
            return "every task is done, none of them checked: no task has a check (a `Verify:` line or `[verify] commands`)".into();
        }
        format!(
            "every task is done: {} verified by their checks, {} with no check ({})",
            done - unchecked.len(),
            unchecked.len(),
            unchecked.join(", ")
        )
    }
}
