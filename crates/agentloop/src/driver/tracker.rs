//! The issue tracker a plan came from, kept in step: when a task starts, is blocked,
//! is done or is skipped, its issue gets a comment saying so and moves
//! (`issue_updated`). A tracker that cannot be reached is said on stderr and the run
//! goes on.

use agentloop_core::journal::{Event, TaskStatus};
use agentloop_forge::tracker::{IssueState, Source};

use super::Driver;

impl Driver {
    fn tracker_source(&self) -> Option<Source> {
        let t = &self.state.settings.tracker;
        if !t.sync {
            return None;
        }
        Source::parse(t.source.as_deref()?)
    }

    /// The tasks' statuses and tries now, when a tracker is kept in step.
    pub(crate) fn task_statuses(&self) -> Vec<(String, TaskStatus, u32)> {
        if self.tracker_source().is_none() {
            return Vec::new();
        }
        self.state
            .tasks
            .iter()
            .map(|t| (t.id.clone(), t.status, t.tries))
            .collect()
    }

    /// Tells the issues of the tasks whose status changed since `before`; what cannot
    /// be told is said on stderr.
    pub(crate) fn sync_tracker(&mut self, before: &[(String, TaskStatus, u32)]) {
        if before.is_empty() {
            return;
        }
        let Some(source) = self.tracker_source() else {
            return;
        };
        let mut changes = Vec::new();
        for (id, was, tries) in before {
            let Some(t) = self.state.task(id) else {
                continue;
            };
            let state = match t.status {
                TaskStatus::Running if *was != TaskStatus::Running && *tries == 0 => {
                    IssueState::Started
                }
                TaskStatus::Blocked if *was != TaskStatus::Blocked => IssueState::Blocked,
                TaskStatus::Done if *was != TaskStatus::Done => IssueState::Done,
                TaskStatus::Skipped if *was != TaskStatus::Skipped => IssueState::Skipped,
                _ => continue,
            };
            if let Some(key) = source.issue_key(id) {
                changes.push((id.clone(), key, state, self.issue_comment(id, state)));
            }
        }
        if changes.is_empty() {
            return;
        }
        let api = self.state.settings.tracker.api_url.clone();
        let tracker = match agentloop_forge::tracker::open(&source, api.as_deref()) {
            Ok(t) => t,
            Err(e) => {
                self.progress.warn(&format!("tracker: {e}"));
                return;
            }
        };
        for (task, issue, state, comment) in changes {
            let done = tracker
                .comment(&issue, &comment)
                .and_then(|_| tracker.set_state(&issue, state));
            let recorded = done.map_err(|e| e.to_string()).and_then(|()| {
                self.record(Event::IssueUpdated {
                    task: task.clone(),
                    issue: issue.clone(),
                    state: state.as_str().into(),
                })
                .map_err(|e| e.message)
            });
            if let Err(e) = recorded {
                self.progress
                    .warn(&format!("tracker: issue {issue} of task {task}: {e}"));
            }
        }
    }

    fn issue_comment(&self, id: &str, state: IssueState) -> String {
        let run = &self.run.id;
        let t = self.state.task(id);
        match state {
            IssueState::Started => {
                format!("agentloop started work on this in run `{run}` (task {id}).")
            }
            IssueState::Blocked => format!(
                "agentloop is blocked on this in run `{run}`: {}",
                t.and_then(|t| t.question.clone().or_else(|| t.blocked.clone()))
                    .unwrap_or_else(|| "it waits for a person".into())
            ),
            IssueState::Done => {
                let commit = t
                    .and_then(|t| t.commit.as_deref())
                    .map(|c| format!(", commit {}", &c[..c.len().min(12)]))
                    .unwrap_or_default();
                let pr = self
                    .state
                    .ship
                    .pr
                    .as_ref()
                    .map(|(_, url)| format!(", pull request {url}"))
                    .unwrap_or_default();
                format!("Done, and verified by agentloop in run `{run}`{commit}{pr}.")
            }
            IssueState::Skipped => format!("agentloop skipped this task in run `{run}`."),
        }
    }
}
