//! The issue tracker a plan came from, kept in step: when a task starts, is blocked,
//! is done or is skipped, its issue gets a comment saying so and moves
//! (`issue_updated`). A tracker that cannot be reached is said on stderr and the run
//! goes on.

use agentloop_config::RUN_ISSUE;
use agentloop_forge::tracker::{IssueState, Source};
use agentloop_journal::Event;
use agentloop_policy::told::{Tell, Told};

use super::Driver;

/// Where the forge's tracker moves an issue the policy says is `t`.
fn issue_state(t: Told) -> IssueState {
    match t {
        Told::Started => IssueState::Started,
        Told::Blocked => IssueState::Blocked,
        Told::Done => IssueState::Done,
        Told::Skipped => IssueState::Skipped,
    }
}

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
        let quiet = self
            .tracker_quiet_until
            .is_some_and(|t| std::time::Instant::now() < t);
        if self.syncing || quiet {
            return;
        }
        let untold = agentloop_policy::told::untold(&self.state, |id| source.issue_key(id));
        if untold.is_empty() {
            return;
        }
        // What the tracker is told is durable first (only then: this runs at every
        // event, and most tell nothing).
        if let Err(e) = self.writer.sync() {
            crate::render::warn(&format!("cannot make the journal durable: {e}"));
        }
        self.syncing = true;
        self.tracker_down = false;
        let api = self.state.settings.tracker.api_url.clone();
        match agentloop_forge::tracker(&source, api.as_deref()) {
            Ok(tracker) => {
                let run = self.run.id.clone();
                for t in untold {
                    let done = match &t.tell {
                        Tell::Shipped { url } => tracker.comment(
                            &t.issue,
                            &format!(
                                "agentloop proposed this in pull request {url} (run `{run}`, task {}).",
                                t.key
                            ),
                        ),
                        Tell::State(told) => {
                            let state = issue_state(*told);
                            let comment = self.issue_comment(&t.key, state);
                            tracker.comment(&t.issue, &comment).and_then(|_| {
                                if t.moves() {
                                    tracker.set_state(&t.issue, state)
                                } else {
                                    Ok(())
                                }
                            })
                        }
                    };
                    let unreachable =
                        matches!(done, Err(agentloop_forge::ForgeError::Unreachable { .. }));
                    let recorded = done.map_err(|e| e.to_string()).and_then(|()| {
                        self.record(Event::IssueUpdated {
                            task: t.key.clone(),
                            issue: t.issue.clone(),
                            state: t.word().into(),
                        })
                        .map_err(|e| e.message)
                    });
                    if let Err(e) = recorded {
                        self.progress.warn(&format!(
                            "tracker: issue {} of task {}: {e}",
                            t.issue, t.key
                        ));
                        self.tracker_failed(unreachable);
                        break;
                    }
                }
            }
            Err(e) => {
                self.progress.warn(&format!("tracker: {e}"));
                self.tracker_failed(true);
            }
        }
        self.syncing = false;
    }

    /// The run is over: what a refusal in its last minute left untold is tried once
    /// more now (no later event, and no next driver, would tell it). Found by the
    /// simulator: an issue left open after its task was done. A tracker that could
    /// not be reached at all is not tried again (its retries would hold the exit).
    pub(crate) fn tell_tracker_last(&mut self) {
        if self.tracker_down {
            return;
        }
        self.tracker_quiet_until = None;
        self.sync_tracker();
    }

    /// Leaves the tracker alone for a minute: what was not told is told at the first
    /// event after that, or by the next driver.
    fn tracker_failed(&mut self, down: bool) {
        self.tracker_quiet_until =
            Some(std::time::Instant::now() + std::time::Duration::from_secs(60));
        self.tracker_down = down;
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
                agentloop_ground::words::plural(s.tasks.len(), "task", "tasks")
            ),
            IssueState::Done => format!(
                "agentloop run `{run}` completed: {standing}, verdict {}, {}.",
                agentloop_journal::verdict(s).as_str(),
                agentloop_ground::words::money(s.cost_usd)
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
