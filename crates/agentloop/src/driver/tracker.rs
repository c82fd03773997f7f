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

    /// Tells each task's issue what it has not been told yet: started (a task at work,
    /// or tried and waiting), blocked, done or skipped. Called as events are folded and
    /// when a driver starts, so what a person did between drivers is told too; what
    /// cannot be told is said on stderr and tried again at the first event a minute later.
    pub(crate) fn sync_tracker(&mut self) {
        let Some(source) = self.tracker_source() else {
            return;
        };
        // What the tracker is told is durable first.
        if let Err(e) = self.writer.sync() {
            crate::render::warn(&format!("cannot make the journal durable: {e}"));
        }
        let mut changes = Vec::new();
        for t in &self.state.tasks {
            let state = match t.status {
                TaskStatus::Done => IssueState::Done,
                TaskStatus::Skipped => IssueState::Skipped,
                TaskStatus::Blocked => IssueState::Blocked,
                _ if t.tries > 0 => IssueState::Started,
                _ => continue,
            };
            let told = self.state.ship.issues.get(&t.id).map(String::as_str);
            // "shipped" (its pull request said) comes after "done".
            if told == Some(state.as_str())
                || (told == Some("shipped") && state == IssueState::Done)
            {
                continue;
            }
            if let Some(key) = source.issue_key(&t.id) {
                changes.push((t.id.clone(), key, state));
            }
        }
        // One pull request per task: each task's issue is told its pull request.
        let mut shipped: Vec<(String, String, String)> = Vec::new();
        for u in &self.state.ship.shipped {
            let Some((_, url)) = &u.pr else {
                continue;
            };
            for id in &u.tasks {
                if self.state.ship.issues.get(id).map(String::as_str) != Some("shipped")
                    && let Some(key) = source.issue_key(id)
                {
                    shipped.push((id.clone(), key, url.clone()));
                }
            }
        }
        let quiet = self
            .tracker_quiet_until
            .is_some_and(|t| std::time::Instant::now() < t);
        if (changes.is_empty() && shipped.is_empty()) || self.syncing || quiet {
            return;
        }
        self.syncing = true;
        let api = self.state.settings.tracker.api_url.clone();
        match agentloop_forge::tracker(&source, api.as_deref()) {
            Ok(tracker) => {
                let run = self.run.id.clone();
                for (task, issue, url) in shipped {
                    let said = tracker
                        .comment(
                            &issue,
                            &format!("agentloop proposed this in pull request {url} (run `{run}`, task {task})."),
                        )
                        .map_err(|e| e.to_string())
                        .and_then(|()| {
                            self.record(Event::IssueUpdated {
                                task: task.clone(),
                                issue: issue.clone(),
                                state: "shipped".into(),
                            })
                            .map_err(|e| e.message)
                        });
                    if let Err(e) = said {
                        self.progress
                            .warn(&format!("tracker: issue {issue} of task {task}: {e}"));
                        self.tracker_failed();
                        self.syncing = false;
                        return;
                    }
                }
                for (task, issue, state) in changes {
                    let comment = self.issue_comment(&task, state);
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
                        self.tracker_failed();
                        break;
                    }
                }
            }
            Err(e) => {
                self.progress.warn(&format!("tracker: {e}"));
                self.tracker_failed();
            }
        }
        self.syncing = false;
    }

    /// Leaves the tracker alone for a minute: what was not told is told at the first
    /// event after that, or by the next driver.
    fn tracker_failed(&mut self) {
        self.tracker_quiet_until =
            Some(std::time::Instant::now() + std::time::Duration::from_secs(60));
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
            IssueState::Skipped => format!(
                "agentloop skipped this task in run `{run}`{}.",
                t.and_then(|t| t.skip_reason.as_deref())
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            ),
        }
    }
}
