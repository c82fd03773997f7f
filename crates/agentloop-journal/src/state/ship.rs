//! How the ship flow's records move the state.

use super::RunState;
use crate::check_outcome::CheckOutcome;
use crate::event::Event;
use crate::person::Gate;
use crate::ship::Unit;

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

impl RunState {
    /// Each done fix task not yet verified is verified by `what`.
    fn fixes_verified(&mut self, what: &str) {
        for id in self.ship.fix_tasks.clone() {
            let done = self
                .task(&id)
                .is_some_and(|t| t.status == crate::task::TaskStatus::Done);
            if done && !self.ship.fix_verified.contains_key(&id) {
                self.ship.fix_verified.insert(id, what.to_string());
            }
        }
    }

    /// A diff gate released (open now, or ahead of time): the pull request's, and the
    /// hold of every task it holds.
    pub(crate) fn approve_diff_gate(&mut self, gate: &str) {
        self.ship.gates_approved.insert(gate.to_string());
        self.ship.passed.insert(gate.to_string());
        for t in &mut self.tasks {
            t.held.retain(|h| h.gate != gate);
        }
        if self.gate == Some(Gate::Diff(gate.to_string())) {
            self.gate = None;
        }
    }

    /// Folds a ship event.
    pub(crate) fn apply_ship(&mut self, event: &Event) {
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
            Event::PrReleased { gates } => self.ship.released.extend(gates.iter().cloned()),
            Event::PrMerged { commit } => {
                self.ship.merged = Some(commit.clone());
                // The deploy gate holds every merge: this one used its release up.
                self.ship.gates_approved.remove("deploy");
                self.ship.released.remove("deploy");
            }
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
