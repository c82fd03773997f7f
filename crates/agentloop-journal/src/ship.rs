//! The ship flow in the journal: its events' records, and what the state keeps of them
//! (the push, the pull request, the checks of the pushed commit, the review, the merge,
//! the verification of the base branch after it).

use serde::{Deserialize, Serialize};

/// `pr = "task"`: the task being shipped, on its own branch and pull request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unit {
    pub task: String,
    /// The task, then the fixes its red checks asked for, in the order they apply.
    pub tasks: Vec<String>,
    pub branch: String,
    /// The branch its pull request goes into.
    pub base: String,
    /// The commit its branch starts from.
    pub onto: String,
}

/// `pr = "task"`: a unit that went through.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shipped {
    pub task: String,
    pub tasks: Vec<String>,
    pub branch: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pr: Option<(u64, String)>,
    /// The pushed commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The base branch's head after agentloop merged it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<String>,
}

/// What the state keeps of the ship flow.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ShipState {
    /// The pushed commit, and the iterations counted when it was pushed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pushed: Option<(String, u32)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pr: Option<(u64, String)>,
    /// The pushed commit the pull request's account was last written for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pr_for: Option<String>,
    /// The checks' verdict on the pushed commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checks: Option<(String, bool)>,
    /// What the failed checks said, for the fix task's prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checks_digest: Option<String>,
    /// Fix tasks made from red checks.
    pub fixes: u32,
    /// The fix tasks (`CI-N`, `MAIN-N`), in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fix_tasks: Vec<String>,
    /// Fix tasks the forge's checks (or the run's checks on the base branch after the
    /// merge) passed after, with what passed: their verification.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub fix_verified: std::collections::BTreeMap<String, String>,
    pub approved: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merged: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub post_merge: Option<bool>,
    /// The pushed commit the diff gates were checked for, and what triggered them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff_for: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub triggered: Vec<crate::gate_trigger::GateTrigger>,
    /// Diff gates a person or a reviewer released for the pull request at hand: the
    /// run's, or (`pr = "task"`) the unit's, cleared when the unit is through. A merge
    /// uses up `deploy`'s: every merge agentloop makes waits for it.
    #[serde(skip_serializing_if = "std::collections::BTreeSet::is_empty")]
    pub gates_approved: std::collections::BTreeSet<String>,
    /// Every diff gate released in the run (the handoff's gates passed).
    #[serde(default, skip_serializing_if = "std::collections::BTreeSet::is_empty")]
    pub passed: std::collections::BTreeSet<String>,
    /// Diff gates released whose labels are off the pull request and whose release
    /// its account says.
    #[serde(default, skip_serializing_if = "std::collections::BTreeSet::is_empty")]
    pub released: std::collections::BTreeSet<String>,
    /// What each task's tracker issue was last told (task → started, blocked, done,
    /// skipped).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub issues: std::collections::BTreeMap<String, String>,
    /// `pr = "task"`: the unit being shipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<Unit>,
    /// `pr = "task"`: the units through, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shipped: Vec<Shipped>,
    /// `pr = "task"`: fixes for the base branch after a merge, shipped before the
    /// tasks still waiting.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub urgent: Vec<String>,
    /// A step that failed, waiting for a person at the ship gate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

impl ShipState {
    /// Forgets the last unit's push, pull request, checks, review, gates and merge.
    pub(crate) fn reset_unit(&mut self) {
        self.pushed = None;
        self.pr_for = None;
        self.checks = None;
        self.approved = false;
        self.merged = None;
        self.post_merge = None;
        self.diff_for = None;
        self.triggered.clear();
    }

    /// The unit being shipped goes into `shipped`.
    pub(crate) fn unit_through(&mut self) {
        if let Some(u) = self.unit.take() {
            // Its gates were its pull request's: the next one is held again.
            self.gates_approved.clear();
            self.released.clear();
            self.shipped.push(Shipped {
                task: u.task,
                tasks: u.tasks,
                branch: u.branch,
                pr: self.pr.clone(),
                commit: self.pushed.as_ref().map(|(c, _)| c.clone()),
                merged: self.merged.clone(),
            });
        }
    }

    /// Is task `id` shipped, or being shipped?
    pub fn has(&self, id: &str) -> bool {
        self.unit.iter().any(|u| u.tasks.iter().any(|t| t == id))
            || self.shipped.iter().any(|u| u.tasks.iter().any(|t| t == id))
    }
}
