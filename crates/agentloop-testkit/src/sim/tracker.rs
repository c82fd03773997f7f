//! The issue tracker in the simulation (`[tracker] sync`): after each journal line
//! the driver tells the tracker what it has not been told (`policy::told`, as the
//! real driver), each a comment and a move (two effects the driver may die after)
//! before `issue_updated` is recorded. A refused call leaves the tracker alone for a
//! simulated minute; the run's end tries once more. Telling is at least once: a
//! driver that died between the comment and its record comments again.

use std::collections::BTreeMap;

use agentloop_journal::{Event, Record};
use agentloop_policy::told::{self, Tell};

use super::services::Tracker;
use super::world::{Killed, World};

/// How long a refused tracker is left alone.
const QUIET_MS: u64 = 60_000;

/// The run keeps a tracker in step (`[tracker] sync`, and a source).
fn kept(s: &agentloop_journal::RunState) -> bool {
    s.settings.tracker.sync && s.settings.tracker.source.is_some()
}

/// A task's issue: the plan's own tasks have one, fixes the forge asked for do not.
fn issue_key(id: &str) -> Option<String> {
    id.starts_with('T').then(|| format!("#{id}"))
}

impl World<'_> {
    /// Tells the tracker what it has not been told, as the driver does after each
    /// line it records.
    pub(super) fn tell_tracker(&mut self) -> Result<(), Killed> {
        if !kept(&self.state) || self.telling || self.now < self.tracker_quiet_until {
            return Ok(());
        }
        let untold = told::untold(&self.state, issue_key);
        if untold.is_empty() {
            return Ok(());
        }
        self.telling = true;
        let r = self.tell(untold);
        self.telling = false;
        r
    }

    fn tell(&mut self, untold: Vec<told::Telling>) -> Result<(), Killed> {
        for t in untold {
            let call = format!("tell {} {}", t.issue, t.word());
            // Refusals are passing ones, while the run goes on: one that outlasts the
            // run's last try leaves its end untold (said on stderr), not simulated.
            let refused = !self.state.is_finished() && self.sc.tracker_refuses_first(&call);
            if self.call(&call, refused).is_err() {
                self.tracker_quiet_until = self.now + QUIET_MS;
                return Ok(());
            }
            self.tracker
                .issues
                .entry(t.issue.clone())
                .or_default()
                .comments += 1;
            self.effect(None)?;
            if t.moves()
                && let Tell::State(state) = t.tell
            {
                self.tracker
                    .issues
                    .entry(t.issue.clone())
                    .or_default()
                    .state = Some(state.as_str().into());
                self.effect(None)?;
            }
            self.append(Event::IssueUpdated {
                task: t.key.clone(),
                issue: t.issue.clone(),
                state: t.word().into(),
            })?;
        }
        Ok(())
    }

    /// The run is over: one more try, whatever a refusal said.
    pub(super) fn tell_tracker_last(&mut self) -> Result<(), Killed> {
        self.tracker_quiet_until = 0;
        self.tell_tracker()
    }
}

/// What the tracker holds at a run's end, as the comparison reads it (each issue's
/// state; how often it was commented on is not compared: at least once); an error
/// when something is left untold, or an issue is not where its last record says.
pub(super) fn tracker_ending(
    tracker: &Tracker,
    journal: &[Record],
    folded: &agentloop_journal::RunState,
) -> Result<Vec<String>, String> {
    if !kept(folded) {
        return Ok(Vec::new());
    }
    let left = told::untold(folded, issue_key);
    if !left.is_empty() {
        return Err(format!("the tracker was never told {left:?}"));
    }
    let mut recorded: BTreeMap<&str, (&str, u32)> = BTreeMap::new();
    for rec in journal {
        if let Event::IssueUpdated { task, issue, state } = &rec.event {
            let e = recorded.entry(issue.as_str()).or_insert(("", 0));
            e.1 += 1;
            let note = task.starts_with(&format!("{}:", agentloop_config::RUN_ISSUE));
            if state != "shipped" && !note {
                e.0 = state;
            }
        }
    }
    let mut out = Vec::new();
    for (issue, (state, told)) in recorded {
        let held = tracker.issues.get(issue).cloned().unwrap_or_default();
        if held.comments < told {
            return Err(format!(
                "issue {issue} has {} comments for {told} records",
                held.comments
            ));
        }
        if !state.is_empty() && held.state.as_deref() != Some(state) {
            return Err(format!(
                "issue {issue} is {:?} on the tracker, {state} in the journal",
                held.state
            ));
        }
        out.push(format!("{issue} {:?}", held.state));
    }
    Ok(out)
}
