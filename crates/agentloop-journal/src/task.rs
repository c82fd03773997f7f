//! The state of one task within a run, as the journal's fold keeps it.

use serde::{Deserialize, Serialize};

use super::event::{IterationKind, Rung};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Pending,
    Running,
    Done,
    Blocked,
    Skipped,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::Running => "running",
            TaskStatus::Done => "done",
            TaskStatus::Blocked => "blocked",
            TaskStatus::Skipped => "skipped",
        }
    }
    /// Done or skipped: dependents may go ahead.
    pub fn is_settled(self) -> bool {
        matches!(self, TaskStatus::Done | TaskStatus::Skipped)
    }
}

/// One task's state. In `state.json` (read at every hook call) a field at its default
/// is left out: a 1,000-task run's cache is mostly zeros otherwise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskState {
    pub id: String,
    pub title: String,
    pub status: TaskStatus,
    /// A cycle's judge restarted the workers: its next iteration starts from the
    /// integration branch's head, its work so far set aside.
    #[serde(default, skip_serializing_if = "is_default")]
    pub fresh_start: bool,
    /// Times an independent reviewer rejected its verified work.
    #[serde(default, skip_serializing_if = "is_default")]
    pub review_rejections: u32,
    /// What its reviews said, in order (`approved by codex`, `rejected by codex: …`,
    /// `not reviewed (low risk)`); the last few.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reviews: Vec<String>,
    /// Every iteration spent on this task.
    #[serde(default, skip_serializing_if = "is_default")]
    pub iterations: u32,
    /// Iterations on the current rung of the ladder (aborted ones do not count).
    #[serde(default, skip_serializing_if = "is_default")]
    pub attempts: u32,
    /// Attempts at the task on every rung (iterations cut short or refused by a limit
    /// do not count).
    #[serde(default, skip_serializing_if = "is_default")]
    pub tries: u32,
    /// Counted attempts by kind (work, retry, replan, fallback): what was tried.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub tried: std::collections::BTreeMap<IterationKind, u32>,
    #[serde(default, skip_serializing_if = "is_default")]
    pub rung: Rung,
    #[serde(default, skip_serializing_if = "is_default")]
    pub cost_usd: f64,
    /// Cost of iterations that did not complete the task.
    #[serde(default, skip_serializing_if = "is_default")]
    pub failed_cost_usd: f64,
    #[serde(default, skip_serializing_if = "is_default")]
    pub tokens: u64,
    #[serde(default, skip_serializing_if = "is_default")]
    pub same_failure: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_fingerprint: Option<String>,
    #[serde(default, skip_serializing_if = "is_default")]
    pub no_change: u32,
    #[serde(default, skip_serializing_if = "is_default")]
    pub no_output: u32,
    /// The last failed iteration's most edited file and how often (thrashing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thrash: Option<(String, u32)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_digest: Option<String>,
    /// Tests changed by some iteration of this task (for `tdd` mode).
    #[serde(default, skip_serializing_if = "is_default")]
    pub tests_touched: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<String>,
    #[serde(default, skip_serializing_if = "is_default")]
    pub blocked_by_breaker: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_iteration: Option<u32>,
    /// Why a person skipped it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(default, skip_serializing_if = "is_default")]
    pub gate_before_approved: bool,
    #[serde(default, skip_serializing_if = "is_default")]
    pub gate_after_pending: bool,
    /// Failure fingerprints this task has produced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fingerprints: Vec<String>,
    /// Failed iterations that failed in a new way: progress, which earns more retries.
    #[serde(default, skip_serializing_if = "is_default")]
    pub progress: u32,
    /// Work-tree states this task's iterations ended in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trees: Vec<String>,
    /// Iterations that brought the tree back to a state it had already been in.
    #[serde(default, skip_serializing_if = "is_default")]
    pub revisits: u32,
    /// The last failure was the agent's own process failing, not its work.
    #[serde(default, skip_serializing_if = "is_default")]
    pub agent_failing: bool,
    /// What moved the task up the ladder, in order (cleared when it completes or a
    /// person retries it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub escalations: Vec<String>,
    /// A breaker (same failure, no change, no output, going in circles) moved it.
    #[serde(default, skip_serializing_if = "is_default")]
    pub breaker_tripped: bool,
    /// HEAD when the task's first iteration began: what its work is measured against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_at_start: Option<String>,
    /// Tripwires a person accepted this task hitting (`approve` at the tripwire gate).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tripwires_accepted: Vec<String>,
    /// The checks that passed in the iteration that completed it (the evidence).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checked: Vec<super::event::CommandResult>,
    /// The per-test evidence of its last verification (of the one that completed it,
    /// once done): its named tests, regressions, tests no longer run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<agentloop_evidence::Judged>,
    /// Files the agent added that reached the checks of its last verification only
    /// because the task writes tests (once done): they stay let in for later tasks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub admitted: Vec<String>,
    /// The iteration whose verification `evidence` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence_at: Option<u32>,
    /// A person approved it at the gate after it (its observation criteria).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub observed: bool,
    /// Failure fingerprints a DEBUG iteration has looked into.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub debugged: Vec<String>,
    /// What the last DEBUG iteration found, for the attempts after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub understanding: Option<String>,
    /// A person asked for a DEBUG iteration next.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub debug_requested: bool,
    /// A class 2B task's checkpoints: (iteration, commit), to roll back to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checkpoints: Vec<(u32, String)>,
    /// The agent's last `NEXT_ACTION_NEEDED` agentloop does not act on, to tell it so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unknown_next: Option<String>,
    /// Time its iterations took, in milliseconds.
    #[serde(default, skip_serializing_if = "is_default")]
    pub active_ms: u64,
    /// Commits the agent made itself (the head each of its iterations left).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent_commits: Vec<String>,
    /// The question the agent asked (`BLOCKED:`) in its last iteration, for the next
    /// prompt to carry together with a person's answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// A run without a forge: the diff gates read what this task's completion changed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub diff_checked: bool,
    /// What of its diff triggered a gate not yet released: the task holds the run
    /// until a person approves (`approve --gate NAME`) or rejects it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<crate::gate_trigger::GateTrigger>,
    /// What the sandbox refused in this task's last iteration, for its next prompt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub denials: Vec<crate::denial::Denial>,
}

impl TaskState {
    /// Keeps what a review said (the last eight).
    pub(crate) fn note_review(&mut self, words: String) {
        self.reviews.push(words);
        if self.reviews.len() > 8 {
            self.reviews.remove(0);
        }
    }
}

impl TaskState {
    pub(crate) fn new(id: &str, title: &str) -> TaskState {
        TaskState {
            admitted: Vec::new(),
            fresh_start: false,
            id: id.to_string(),
            title: title.to_string(),
            status: TaskStatus::Pending,
            review_rejections: 0,
            reviews: Vec::new(),
            iterations: 0,
            attempts: 0,
            tries: 0,
            tried: Default::default(),
            rung: Rung::Retry,
            cost_usd: 0.0,
            failed_cost_usd: 0.0,
            tokens: 0,
            same_failure: 0,
            last_fingerprint: None,
            no_change: 0,
            no_output: 0,
            thrash: None,
            last_digest: None,
            tests_touched: false,
            blocked: None,
            blocked_by_breaker: false,
            completed_iteration: None,
            skip_reason: None,
            commit: None,
            gate_before_approved: false,
            gate_after_pending: false,
            fingerprints: Vec::new(),
            progress: 0,
            trees: Vec::new(),
            revisits: 0,
            agent_failing: false,
            question: None,
            diff_checked: false,
            evidence: None,
            evidence_at: None,
            held: Vec::new(),
            denials: Vec::new(),
            head_at_start: None,
            tripwires_accepted: Vec::new(),
            checked: Vec::new(),
            observed: false,
            debugged: Vec::new(),
            understanding: None,
            debug_requested: false,
            unknown_next: None,
            checkpoints: Vec::new(),
            active_ms: 0,
            agent_commits: Vec::new(),
            escalations: Vec::new(),
            breaker_tripped: false,
        }
    }

    /// What was tried, in words: `6 attempts: 5 work and retry, 1 replan`.
    pub fn tried_text(&self) -> String {
        let parts: Vec<String> = self
            .tried
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| format!("{n} {}", k.as_str()))
            .collect();
        format!(
            "{}: {}",
            agentloop_ground::words::plural(self.tries as usize, "attempt", "attempts"),
            parts.join(", ")
        )
    }

    /// Starts the task's history over: completed, or retried by a person.
    pub(crate) fn clear_history(&mut self) {
        self.escalations.clear();
        self.breaker_tripped = false;
    }

    /// The first line of why the task is blocked, if it is.
    pub fn blocked_headline(&self) -> Option<&str> {
        self.blocked
            .as_deref()
            .map(|b| b.lines().next().unwrap_or(""))
    }

    pub(crate) fn reset_ladder(&mut self) {
        self.attempts = 0;
        self.rung = Rung::Retry;
        self.same_failure = 0;
        self.no_change = 0;
        self.no_output = 0;
        self.thrash = None;
        self.last_fingerprint = None;
        self.blocked = None;
        self.blocked_by_breaker = false;
        self.progress = 0;
        self.revisits = 0;
        self.agent_failing = false;
    }
}

/// A kind of failure (one fingerprint) and where it came back.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Pattern {
    pub count: u32,
    pub tasks: Vec<String>,
    /// The first line of its account.
    pub sample: String,
}

impl Pattern {
    /// Three times or more, in more than one task: worth a `LEARNING:` or an earlier
    /// check.
    pub fn learnable(&self) -> bool {
        self.count >= 3 && self.tasks.len() >= 2
    }

    pub fn hint(&self) -> String {
        format!(
            "the same failure came back {} times across {} ({}): a `LEARNING:` line saying what causes it, or a check that catches it earlier, would prevent it",
            self.count,
            self.tasks.join(", "),
            self.sample
        )
    }
}

/// A field at its default value, left out of `state.json`.
fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}
