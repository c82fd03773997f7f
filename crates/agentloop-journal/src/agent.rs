//! How an iteration's start and its agent's end move the state: the task at work,
//! the open iteration, the spending, and what the agent's answer asks for next.

use super::event::{AgentFinished, IterationStarted};
use super::state::{OpenIteration, RunState};
use super::task::TaskStatus;
use agentloop_ground::words::add_usd;
use agentloop_project::is_test_path;

impl RunState {
    pub(super) fn iteration_started(&mut self, st: &IterationStarted, time_ms: u64) {
        self.iterations += 1;
        self.steer.clear();
        if let Some(t) = self.task_mut(&st.task) {
            t.status = TaskStatus::Running;
            t.fresh_start = false;
            t.iterations += 1;
            t.attempts += 1;
            t.tries += 1;
            *t.tried.entry(st.kind).or_default() += 1;
            t.question = None;
            t.denials.clear();
            if t.head_at_start.is_none() {
                t.head_at_start = st.head_before.clone();
            }
        }
        self.running.push(OpenIteration {
            started: st.clone(),
            started_ms: time_ms,
            agent: None,
            verify: None,
            replan: None,
            replan_rejection: None,
            agent_ms: 0,
            limited: false,
            surface: None,
            tripwires: None,
            merge: None,
            job: None,
            review_started: None,
            reviews: Vec::new(),
        });
    }

    pub(super) fn agent_finished(&mut self, a: &AgentFinished, time: &str, time_ms: u64) {
        if a.session_id.is_some() {
            self.agent_session.clone_from(&a.session_id);
        }
        self.cost_usd = add_usd(self.cost_usd, a.cost_usd);
        self.usage.add(&a.usage);
        self.remember_agent(a, time);
        let touched = a
            .changed_files
            .iter()
            .any(|f| is_test_path(f, &self.settings.test_patterns));
        if a.error.is_none()
            && let Some(agent) = self
                .running
                .iter()
                .find(|o| o.started.iteration == a.iteration)
                .map(|o| o.started.agent.clone())
        {
            self.agent_went_through(&agent);
        }
        if let Some(open) = self.open_mut(a.iteration) {
            let task = open.started.task.clone();
            open.agent = Some(a.clone());
            open.agent_ms = time_ms;
            if let Some(t) = self.task_mut(&task) {
                t.cost_usd = add_usd(t.cost_usd, a.cost_usd);
                t.tokens += a.usage.total();
                t.tests_touched |= touched;
                // NEXT_ACTION_NEEDED: DEBUG — the task's next iteration is one.
                if a.signals.wants_debug() {
                    t.debug_requested = true;
                }
                t.unknown_next.clone_from(&a.signals.unknown_next);
            }
        }
    }
}
