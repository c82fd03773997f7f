//! The **record** step: the policy's decision on an iteration written to the journal
//! and carried out — the commit of a verified task, the iteration's `result.json`, a
//! plan version.

use agentloop_exec::git;
use agentloop_ground::fsutil;
use agentloop_journal::*;

use super::Driver;
use crate::error::CliError;

impl Driver {
    /// The redactor of the agent of open iteration `iteration`.
    pub(super) fn iteration_redactor(&self, iteration: u32) -> agentloop_ground::redact::Redactor {
        let agent = self
            .state
            .open_iteration(iteration)
            .map(|o| o.started.agent.clone())
            .unwrap_or_default();
        self.redactor(&agent)
    }

    /// The redactor of the agents of open iterations `iterations`, together (a merge
    /// queue's batch checks all their work at once).
    pub(super) fn iterations_redactor(
        &self,
        iterations: impl IntoIterator<Item = u32>,
    ) -> agentloop_ground::redact::Redactor {
        let envs: Vec<&std::collections::BTreeMap<String, String>> = iterations
            .into_iter()
            .filter_map(|i| self.state.open_iteration(i))
            .filter_map(|o| self.config.agents.get(&o.started.agent))
            .map(|a| &a.env)
            .collect();
        agentloop_ground::redact::Redactor::from_env(envs.into_iter().flatten())
    }

    pub(super) fn redactor(&self, agent: &str) -> agentloop_ground::redact::Redactor {
        let env = self
            .config
            .agents
            .get(agent)
            .map(|a| a.env.clone())
            .unwrap_or_default();
        agentloop_ground::redact::Redactor::from_env(&env)
    }

    /// Records a decision of the policy — the verdict on an iteration among them —
    /// and carries it out: the commit of a verified task, `result.json`, a plan version.
    /// The decision is recorded only if the journal still is what it was made from: a
    /// control request that came in first (a skip, a pause, a note) is folded instead,
    /// and `false` tells the caller to ask the policy again.
    pub(crate) fn record_decision(&mut self, mut event: Event) -> Result<bool, CliError> {
        self.checkpoint(&mut event);
        if let Event::IterationFinished(f) = &event
            && f.outcome == Outcome::Completed
        {
            self.task_began = None;
        }
        if let Event::IterationFinished(f) = &mut event
            && f.outcome == Outcome::Completed
            && self.state.settings.commit
            && !self.state.settings.in_worktrees()
            && let Some(done) = self.committed.as_ref().filter(|c| c.0 == f.iteration)
        {
            // Committed already, before a decision that came too late to be recorded.
            f.commit = Some(done.1.clone());
        } else if let Event::IterationFinished(f) = &mut event
            && f.outcome == Outcome::Completed
            && self.state.settings.commit
            && !self.state.settings.in_worktrees()
            // Outside git there is nothing to commit to; the run said so when it began.
            && git::is_repo(&self.ws.root)
        {
            let task = self.state.open_task().unwrap_or_default().to_string();
            let title = self
                .state
                .task(&task)
                .map(|t| t.title.clone())
                .unwrap_or_default();
            self.seen = None;
            self.writer.sync()?;
            match git::commit_all(
                &self.ws.root,
                &format!("agentloop: {task} {title}\n\nRun {}", self.run.id),
            ) {
                Ok(hash) => {
                    self.committed = Some((f.iteration, hash.clone()));
                    f.commit = Some(hash);
                }
                Err(e) => self
                    .progress
                    .warn(&format!("could not commit task {task}: {e}")),
            }
        }
        let result = match &event {
            Event::IterationFinished(f) => Some(f.clone()),
            _ => None,
        };
        let open = result
            .as_ref()
            .and_then(|f| self.state.open_iteration(f.iteration).cloned());
        match self.writer.append_if_current(&event)? {
            Appended::Written(recs) => self.apply(&recs),
            Appended::Stale(recs) => {
                self.apply(&recs);
                return Ok(false);
            }
        }
        if let (Some(f), Some(open)) = (result, open) {
            self.write_result(&open, &f);
        }
        Ok(true)
    }

    fn write_result(&self, open: &agentloop_journal::OpenIteration, f: &IterationFinished) {
        let dir = self.run.iteration_dir(f.iteration);
        let result = serde_json::json!({
            "v": 1,
            "iteration": f.iteration,
            "task": open.started.task,
            "attempt": open.started.attempt,
            "kind": open.started.kind,
            "agent": open.started.agent,
            "outcome": f.outcome,
            "reason": f.reason,
            "digest": f.digest,
            "commit": f.commit,
            "signals": open.agent.as_ref().map(|a| &a.signals),
            "exit_code": open.agent.as_ref().and_then(|a| a.exit_code),
            "usage": open.agent.as_ref().map(|a| a.usage),
            "cost_usd": open.agent.as_ref().map(|a| a.cost_usd),
            "changed_files": open.agent.as_ref().map(|a| &a.changed_files),
            "fingerprint": open.verify.as_ref().and_then(|v| v.fingerprint.clone()),
            "verify": open.verify.as_ref().map(|v| &v.commands),
        });
        let _ = std::fs::create_dir_all(&dir);
        if let Err(e) = fsutil::write_view(
            &dir.join("result.json"),
            &agentloop_ground::fsutil::pretty_json(&result),
        ) {
            self.progress
                .warn(&format!("cannot write result.json: {e}"));
        }
    }

    /// A class 2B task (under five minutes to roll back) keeps a checkpoint of each
    /// iteration its agent finished, recorded with the iteration's end and listed in the
    /// handoff.
    fn checkpoint(&self, event: &mut Event) {
        let Event::IterationFinished(f) = event else {
            return;
        };
        let Some(open) = self
            .state
            .open_iteration(f.iteration)
            .filter(|o| o.agent.is_some())
        else {
            return;
        };
        let task = open.started.task.clone();
        let two_b = self
            .state
            .plan_task(&task)
            .is_some_and(|t| agentloop_plan::reversibility(t).0 == agentloop_plan::Class::TwoB);
        if f.checkpoint.is_some() || !two_b || !git::is_repo(&self.ws.root) {
            return;
        }
        let dir = self.workdir(f.iteration);
        match agentloop_exec::worktree::checkpoint(&dir, &self.run.id, &task, f.iteration) {
            Ok(commit) => f.checkpoint = Some(commit),
            Err(e) => self.progress.warn(&format!(
                "cannot keep a checkpoint of task {task} (iteration {}): {e}",
                f.iteration
            )),
        }
    }
}
