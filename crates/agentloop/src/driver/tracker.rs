//! The issue tracker a plan came from, kept in step: when a task starts, is blocked,
//! is done or is skipped, its issue gets a comment saying so and moves
//! (`issue_updated`). A tracker that cannot be reached is said on stderr and the run
//! goes on.

use agentloop_core::config::RUN_ISSUE;
use agentloop_core::journal::{Event, RunStatus, TaskStatus};
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
        changes.extend(self.run_issue_changes());
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
                    // A note about a task on the run's issue moves nothing.
                    let moves = !task.starts_with(&format!("{RUN_ISSUE}:"));
                    let done = tracker.comment(&issue, &comment).and_then(|_| {
                        if moves {
                            tracker.set_state(&issue, state)
                        } else {
                            Ok(())
                        }
                    });
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

    /// What the run's own issue (`[tracker] issue`) has not been told: the run started
    /// (once it began), each task done, skipped or blocked (a comment), the run's end
    /// (done when it completed; otherwise a comment with why, the issue left started).
    fn run_issue_changes(&self) -> Vec<(String, String, IssueState)> {
        let Some(issue) = self.state.settings.tracker.issue.clone() else {
            return Vec::new();
        };
        let told = |k: &str| self.state.ship.issues.get(k).map(String::as_str);
        let mut out = Vec::new();
        let run_state = match self.state.status {
            RunStatus::Completed => IssueState::Done,
            _ if self.state.is_finished() => IssueState::Blocked,
            _ => IssueState::Started,
        };
        for t in &self.state.tasks {
            let state = match t.status {
                TaskStatus::Done => IssueState::Done,
                TaskStatus::Skipped => IssueState::Skipped,
                TaskStatus::Blocked => IssueState::Blocked,
                _ => continue,
            };
            let key = format!("{RUN_ISSUE}:{}", t.id);
            if told(&key) != Some(state.as_str()) {
                out.push((key, issue.clone(), state));
            }
        }
        // The run's start first, its end last.
        if told(RUN_ISSUE).is_none() {
            out.insert(
                0,
                (RUN_ISSUE.to_string(), issue.clone(), IssueState::Started),
            );
        }
        if run_state != IssueState::Started && told(RUN_ISSUE) != Some(run_state.as_str()) {
            out.push((RUN_ISSUE.to_string(), issue, run_state));
        }
        out
    }

    /// The comment on the run's own issue.
    fn run_issue_comment(&self, key: &str, state: IssueState) -> String {
        let run = &self.run.id;
        let s = &self.state;
        let standing = format!("{}/{} tasks done", s.done_count(), s.tasks.len());
        if let Some(id) = key.strip_prefix(&format!("{RUN_ISSUE}:")) {
            let title = s.task(id).map(|t| t.title.as_str()).unwrap_or_default();
            return match state {
                IssueState::Done => {
                    format!("{id} {title}: done and verified ({standing}, run `{run}`).")
                }
                IssueState::Skipped => format!("{id} {title}: skipped ({standing}, run `{run}`)."),
                _ => format!(
                    "{id} {title}: blocked, it waits for a person ({standing}, run `{run}`): {}",
                    s.task(id)
                        .and_then(|t| t.question.clone().or_else(|| t.blocked.clone()))
                        .unwrap_or_default()
                ),
            };
        }
        match state {
            IssueState::Started => format!(
                "agentloop run `{run}` started on this: {} ({}).",
                s.plan.title,
                agentloop_core::words::plural(s.tasks.len(), "task", "tasks")
            ),
            IssueState::Done => format!(
                "agentloop run `{run}` completed: {standing}, verdict {}, {}.",
                agentloop_core::journal::verdict(s).as_str(),
                agentloop_core::words::money(s.cost_usd)
            ),
            _ => format!(
                "agentloop run `{run}` ended {} ({standing}): {}",
                s.status.as_str(),
                s.finished
                    .as_ref()
                    .map(|r| r.describe())
                    .unwrap_or_default()
            ),
        }
    }

    fn issue_comment(&self, id: &str, state: IssueState) -> String {
        if id == RUN_ISSUE || id.starts_with(&format!("{RUN_ISSUE}:")) {
            return self.run_issue_comment(id, state);
        }
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
