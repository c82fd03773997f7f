//! `Must-not:` tripwires in the journal: what a check of an iteration found, and how a
//! person's answer at the tripwire gate moves the state (approve: the hits are
//! accepted for the task; reject: the iteration fails and the task goes back to its
//! agent with the evidence).

use serde::{Deserialize, Serialize};

use super::person::Gate;
use super::state::RunState;

/// A tripwire the agent hit, with what shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TripHit {
    /// The `Must-not:` line.
    pub wire: String,
    /// The file and line, the command's failure, or the command seen.
    pub evidence: String,
}

/// The open iteration's tripwire check.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TripCheck {
    pub hits: Vec<TripHit>,
    /// Nothing hit, or a person accepted the hits.
    pub settled: bool,
    /// A person rejected the hits (the note).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected: Option<String>,
}

/// The hits as one line each, for messages and digests.
pub fn hits_words(hits: &[TripHit]) -> String {
    hits.iter()
        .map(|h| format!("`{}` ({})", h.wire, h.evidence))
        .collect::<Vec<_>>()
        .join("; ")
}

impl RunState {
    pub(super) fn tripwires_checked(&mut self, iteration: u32, hits: &[TripHit]) {
        if let Some(open) = self.open_mut(iteration) {
            open.tripwires = Some(TripCheck {
                hits: hits.to_vec(),
                settled: hits.is_empty(),
                rejected: None,
            });
        }
    }

    /// The hits a person is asked about at the tripwire gate, while it is open.
    pub fn tripwire_gate_hits(&self) -> Option<&[TripHit]> {
        let Some(Gate::Tripwire(task)) = &self.gate else {
            return None;
        };
        Some(&self.open_of_task(task)?.tripwires.as_ref()?.hits)
    }

    /// A person accepted what the task's iteration did: these tripwires no longer stop
    /// this task.
    pub(super) fn tripwires_approved(&mut self, task: &str) {
        let mut wires = Vec::new();
        if let Some(check) = self
            .open_of_task_mut(task)
            .and_then(|o| o.tripwires.as_mut())
        {
            check.settled = true;
            wires = check.hits.iter().map(|h| h.wire.clone()).collect();
        }
        if let Some(t) = self.task_mut(task) {
            for w in wires {
                if !t.tripwires_accepted.contains(&w) {
                    t.tripwires_accepted.push(w);
                }
            }
        }
    }

    pub(super) fn tripwires_rejected(&mut self, task: &str, note: Option<String>) {
        if let Some(check) = self
            .open_of_task_mut(task)
            .and_then(|o| o.tripwires.as_mut())
        {
            check.rejected = Some(note.unwrap_or_else(|| "no reason given".into()));
        }
    }
}
