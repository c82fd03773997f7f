//! What the policy tells the driver to do next, and why it waits.

use agentloop_journal::{Event, Gate, IterationKind, RunStatus};

// One action exists at a time and is consumed at once; boxing the event buys nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Record a decision in the journal; the fold applies it.
    Record(Event),
    /// Run one agent iteration.
    Iterate(IterationPlan),
    /// Run the verification commands for the open iteration.
    Verify { iteration: u32, task: String },
    /// Check what the open iteration did against its tripwires (`tripwires_checked`).
    CheckTripwires { iteration: u32 },
    /// The VALIDATE phase: every done task's checks and the run's, on the whole
    /// project after the last task (`validated`).
    Validate,
    /// Compare the verification surface with the baseline (`surface_checked`).
    CheckSurface { iteration: u32 },
    /// A run with workers: merge a batch of verified iterations (the queue's head
    /// first, at most `[merge] batch`) onto the integration branch, one after the
    /// other, and check the merged result once (`merge_started` for each, then
    /// `merged`, `merge_failed` or `merge_requeued` for each). One batch at a time: the
    /// merge queue.
    Merge { batch: Vec<u32> },
    /// A step of shipping the completed run (push, pull request, checks, merge, the
    /// base branch's verification after it).
    Ship(ShipStep),
    /// A run without a forge: read what the done task's commit changed for the diff
    /// gates (`task_diff_checked`).
    CheckDiff { task: String },
    /// Put the baseline versions of the checked changes back (`surface_restored`).
    Restore {
        iteration: u32,
        cause: agentloop_journal::RestoreCause,
    },
    /// Run every check of the run once on the tree before any agent works, and
    /// record each test's outcome (`tests_baseline`).
    TestBaseline,
    /// The independent reviewer's turn on the open iteration's verified work
    /// (`review_started`, then `review_finished`).
    Review { iteration: u32, task: String },
    /// Ask planner `planner` for new tasks, the run standing at `basis`
    /// (`planner_started`, then `planner_finished`).
    Plan { planner: u32, basis: String },
    /// Judge the end of cycle `cycle` (`cycle_judged`).
    Judge { cycle: u32 },
    /// Nothing to do until a control request arrives.
    Wait(WaitReason),
    /// The run is over.
    Exit(RunStatus),
}

impl Action {
    /// The iteration this action is a step of, when it is one (a driver with workers
    /// leaves out the steps of iterations it has under way).
    pub fn iteration(&self) -> Option<u32> {
        match self {
            Action::Verify { iteration, .. }
            | Action::CheckSurface { iteration }
            | Action::CheckTripwires { iteration }
            | Action::Restore { iteration, .. }
            | Action::Review { iteration, .. } => Some(*iteration),
            Action::Merge { batch } => batch.first().copied(),
            Action::Record(Event::IterationFinished(f)) => Some(f.iteration),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct IterationPlan {
    pub iteration: u32,
    pub task: String,
    pub attempt: u32,
    pub kind: IterationKind,
    pub agent: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum WaitReason {
    Gate(Gate),
    Paused,
    /// No task can run: some are blocked. `breaker` is true when a breaker caused it.
    Blocked {
        tasks: Vec<String>,
        breaker: bool,
    },
    /// The model service's limit resets at this time (Unix milliseconds).
    UsageLimit {
        until_ms: u64,
    },
    /// A run with workers: nothing new to start; what the workers are at goes on.
    Workers,
    /// A budget is spent: the run is paused until a person tops it up.
    Budget {
        budget: String,
        used: f64,
        limit: f64,
    },
}

impl WaitReason {
    /// "budget spent: cost $25.00 of $25.00" and the like.
    pub fn budget_words(budget: &str, used: f64, limit: f64) -> String {
        match budget {
            "cost_usd" => format!(
                "budget spent: cost {} of {}",
                agentloop_ground::words::money(used),
                agentloop_ground::words::money(limit)
            ),
            "duration_s" => format!(
                "budget spent: time {} of {}",
                humantime::format_duration(std::time::Duration::from_secs(used as u64)),
                humantime::format_duration(std::time::Duration::from_secs(limit as u64))
            ),
            other => format!("budget spent: {other} {used} of {limit}"),
        }
    }
}

/// A step the driver does with git and the forge, then records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShipStep {
    /// `pr = "task"`: begin shipping the next task ([`next_unit`]) on a branch of its
    /// own (`ship_unit_started`).
    StartUnit,
    /// Push the run's work to the ship branch (`ship_pushed`).
    Push,
    /// Open or update the pull request (`pr_opened`).
    OpenPr,
    /// Wait for the forge's checks on the pushed commit (`checks_finished`).
    AwaitChecks,
    /// Read the shipped diff for the diff gates; label the pull request and ask their
    /// reviewers (`diff_gates_checked`).
    CheckDiffGates,
    /// Take the labels of the diff gates released off the pull request and write its
    /// account again (`pr_released`).
    ReleaseGates,
    /// Merge the pull request (`pr_merged`).
    Merge,
    /// Run the run's checks on the base branch after the merge (`post_merge_verified`).
    PostMergeVerify,
}
