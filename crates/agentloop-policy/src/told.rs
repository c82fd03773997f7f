//! What the run's issue tracker has not been told yet (`[tracker] sync`): each task's
//! issue as its task starts, is blocked, is done or is skipped, and the pull request
//! that proposed it (one per task); the run's own issue (`[tracker] issue`) as the run
//! starts, each task ends, and the run ends. The driver tells each (a comment, and a
//! move) and then records `issue_updated`; pure, so the simulator tells its tracker
//! the same things in the same order.

use agentloop_config::RUN_ISSUE;
use agentloop_journal::{RunState, RunStatus, TaskStatus};

/// Where an issue goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Told {
    Started,
    Blocked,
    Done,
    Skipped,
}

impl Told {
    /// The word `issue_updated` records.
    pub fn as_str(self) -> &'static str {
        match self {
            Told::Started => "started",
            Told::Blocked => "blocked",
            Told::Done => "done",
            Told::Skipped => "skipped",
        }
    }
}

/// What one issue is to be told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tell {
    /// A comment, and the issue moved (a note about a task on the run's issue moves
    /// nothing: see [`Telling::moves`]).
    State(Told),
    /// A comment naming the pull request that proposed its task (`shipped`).
    Shipped { url: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Telling {
    /// What `issue_updated` records it under: the task's id, [`RUN_ISSUE`], or
    /// `RUN_ISSUE:ID` for a task's note on the run's issue.
    pub key: String,
    /// The issue, as the tracker names it.
    pub issue: String,
    pub tell: Tell,
}

impl Telling {
    /// The issue moves (not a task's note on the run's own issue).
    pub fn moves(&self) -> bool {
        matches!(self.tell, Tell::State(_)) && !self.key.starts_with(&format!("{RUN_ISSUE}:"))
    }

    /// The word `issue_updated` records.
    pub fn word(&self) -> &'static str {
        match &self.tell {
            Tell::State(t) => t.as_str(),
            Tell::Shipped { .. } => "shipped",
        }
    }
}

/// Everything the tracker has not been told, in the order it is told: the pull
/// requests first, then each task's move, then the run's own issue (its start first,
/// its end last). `issue_key` names a task's issue (`None`: the task has none).
pub fn untold(s: &RunState, issue_key: impl Fn(&str) -> Option<String>) -> Vec<Telling> {
    let told = |k: &str| s.ship.issues.get(k).map(String::as_str);
    let mut out = Vec::new();
    // One pull request per task: each task's issue is told its pull request.
    for u in &s.ship.shipped {
        let Some((_, url)) = &u.pr else {
            continue;
        };
        for id in &u.tasks {
            if told(id) != Some("shipped")
                && let Some(issue) = issue_key(id)
            {
                out.push(Telling {
                    key: id.clone(),
                    issue,
                    tell: Tell::Shipped { url: url.clone() },
                });
            }
        }
    }
    for t in &s.tasks {
        let state = match t.status {
            TaskStatus::Done => Told::Done,
            TaskStatus::Skipped => Told::Skipped,
            TaskStatus::Blocked => Told::Blocked,
            _ if t.tries > 0 => Told::Started,
            _ => continue,
        };
        // "shipped" (its pull request said) comes after "done".
        let was = told(&t.id);
        if was == Some(state.as_str()) || (was == Some("shipped") && state == Told::Done) {
            continue;
        }
        if let Some(issue) = issue_key(&t.id) {
            out.push(Telling {
                key: t.id.clone(),
                issue,
                tell: Tell::State(state),
            });
        }
    }
    out.extend(run_issue(s));
    out
}

/// What the run's own issue has not been told: the run started (once), each task
/// done, skipped or blocked (a note), the run's end (done when it completed;
/// otherwise blocked, with why).
fn run_issue(s: &RunState) -> Vec<Telling> {
    let Some(issue) = s.settings.tracker.issue.clone() else {
        return Vec::new();
    };
    let told = |k: &str| s.ship.issues.get(k).map(String::as_str);
    let at = |key: String, state: Told| Telling {
        key,
        issue: issue.clone(),
        tell: Tell::State(state),
    };
    let mut out = Vec::new();
    if told(RUN_ISSUE).is_none() {
        out.push(at(RUN_ISSUE.into(), Told::Started));
    }
    for t in &s.tasks {
        let state = match t.status {
            TaskStatus::Done => Told::Done,
            TaskStatus::Skipped => Told::Skipped,
            TaskStatus::Blocked => Told::Blocked,
            _ => continue,
        };
        let key = format!("{RUN_ISSUE}:{}", t.id);
        if told(&key) != Some(state.as_str()) {
            out.push(at(key, state));
        }
    }
    let end = match s.status {
        RunStatus::Completed => Told::Done,
        _ if s.is_finished() => Told::Blocked,
        _ => Told::Started,
    };
    if end != Told::Started && told(RUN_ISSUE) != Some(end.as_str()) {
        out.push(at(RUN_ISSUE.into(), end));
    }
    out
}
