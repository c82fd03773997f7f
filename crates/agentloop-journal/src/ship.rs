//! The ship flow in the journal: its events' records, and what the state keeps of them
//! (the push, the pull request, the checks of the pushed commit, the review, the merge,
//! the verification of the base branch after it).

use serde::{Deserialize, Serialize};

use super::{Event, Gate, RunState};

/// One of the forge's checks, as the journal keeps it (its output capped).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckOutcome {
    pub name: String,
    pub conclusion: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub output: String,
}

impl CheckOutcome {
    pub fn passed(&self) -> bool {
        matches!(self.conclusion.as_str(), "success" | "neutral" | "skipped")
    }
}

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
    pub triggered: Vec<crate::GateTrigger>,
    /// Diff gates a person or a reviewer released.
    #[serde(skip_serializing_if = "std::collections::BTreeSet::is_empty")]
    pub gates_approved: std::collections::BTreeSet<String>,
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

/// The failed checks as the agent is told: each one's name, conclusion and the end of
/// what it printed.
fn digest(checks: &[CheckOutcome]) -> String {
    let mut out = String::new();
    for c in checks.iter().filter(|c| !c.passed()) {
        out.push_str(&format!(
            "The forge's check `{}` concluded {}.",
            c.name, c.conclusion
        ));
        if !c.output.trim().is_empty() {
            out.push_str(&format!(
                " The end of its output:\n```\n{}\n```\n",
                agentloop_ground::failure::last_lines(&c.output)
            ));
        }
        out.push('\n');
    }
    out.trim_end().to_string()
}

impl ShipState {
    /// Forgets the last unit's push, pull request, checks, review, gates and merge.
    fn reset_unit(&mut self) {
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
    fn unit_through(&mut self) {
        if let Some(u) = self.unit.take() {
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

impl RunState {
    /// Each done fix task not yet verified is verified by `what`.
    fn fixes_verified(&mut self, what: &str) {
        for id in self.ship.fix_tasks.clone() {
            let done = self
                .task(&id)
                .is_some_and(|t| t.status == super::TaskStatus::Done);
            if done && !self.ship.fix_verified.contains_key(&id) {
                self.ship.fix_verified.insert(id, what.to_string());
            }
        }
    }

    /// A diff gate released (open now, or ahead of time): the pull request's, and the
    /// hold of every task it holds.
    pub(super) fn approve_diff_gate(&mut self, gate: &str) {
        self.ship.gates_approved.insert(gate.to_string());
        for t in &mut self.tasks {
            t.held.retain(|h| h.gate != gate);
        }
        if self.gate == Some(Gate::Diff(gate.to_string())) {
            self.gate = None;
        }
    }

    /// Folds a ship event.
    pub(super) fn apply_ship(&mut self, event: &Event) {
        match event {
            Event::ShipPushed { commit, .. } => {
                self.ship.pushed = Some((commit.clone(), self.iterations));
                self.ship.failed = None;
            }
            Event::PrOpened { number, url, .. } => {
                self.ship.pr = Some((*number, url.clone()));
                self.ship.pr_for = self.ship.pushed.as_ref().map(|(c, _)| c.clone());
            }
            Event::ChecksFinished {
                commit,
                passed,
                checks,
            } => {
                self.ship.checks = Some((commit.clone(), *passed));
                self.ship.checks_digest = (!passed).then(|| digest(checks));
                // No checks at all verify nothing.
                if *passed && !checks.is_empty() {
                    let names: Vec<&str> = checks.iter().map(|c| c.name.as_str()).collect();
                    self.fixes_verified(&format!(
                        "the forge's checks ({}) passed on {commit:.12}",
                        names.join(", ")
                    ));
                }
            }
            Event::ShipFixAdded {
                version,
                plan,
                task,
                after_merge,
            } => {
                self.plan_version = *version;
                self.ship.fixes += 1;
                self.ship.fix_tasks.push(task.clone());
                self.set_plan(plan.clone());
                if *after_merge {
                    // The next push opens a new pull request, checked and reviewed anew
                    // (one per task: the merged unit is through, the fix ships first).
                    self.ship.unit_through();
                    self.ship.reset_unit();
                    if self.settings.ship.pr == agentloop_config::PrScope::Task {
                        self.ship.urgent.push(task.clone());
                    }
                } else if let Some(u) = &mut self.ship.unit {
                    u.tasks.push(task.clone());
                }
                let digest = self.ship.checks_digest.clone();
                if let Some(t) = self.task_mut(task) {
                    t.last_digest = digest;
                }
            }
            Event::ReviewApproved { .. } => {
                self.ship.approved = true;
                if self.gate == Some(Gate::Review) {
                    self.gate = None;
                }
            }
            Event::DiffGatesChecked { commit, triggered } => {
                self.ship.diff_for = Some(commit.clone());
                self.ship.triggered = triggered.clone();
            }
            Event::TaskDiffChecked {
                task, triggered, ..
            } => {
                if let Some(t) = self.task_mut(task) {
                    t.diff_checked = true;
                    t.held = triggered.clone();
                }
            }
            Event::DiffGateApproved { gate, .. } => self.approve_diff_gate(gate),
            Event::PrMerged { commit } => self.ship.merged = Some(commit.clone()),
            Event::ShipUnitStarted {
                task,
                branch,
                base,
                onto,
            } => {
                self.ship.unit_through();
                self.ship.reset_unit();
                self.ship.pr = None;
                self.ship.urgent.retain(|t| t != task);
                self.ship.unit = Some(Unit {
                    task: task.clone(),
                    tasks: vec![task.clone()],
                    branch: branch.clone(),
                    base: base.clone(),
                    onto: onto.clone(),
                });
            }
            Event::TaskShipped { .. } => {
                self.ship.unit_through();
                self.ship.failed = None;
            }
            Event::IssueUpdated { task, state, .. } => {
                self.ship.issues.insert(task.clone(), state.clone());
            }
            Event::PostMergeVerified { passed, digest, .. } => {
                self.ship.post_merge = Some(*passed);
                if *passed {
                    self.fixes_verified(
                        "the run's checks passed on the base branch after the merge",
                    );
                }
                if !passed {
                    self.ship.checks_digest = Some(format!(
                        "The run's checks fail on the base branch after the merge.\n\n{}",
                        digest.as_deref().unwrap_or("")
                    ));
                }
            }
            Event::ShipFailed { step, message } => {
                self.ship.failed = Some(format!("{step}: {message}"));
            }
            _ => {}
        }
    }
}
