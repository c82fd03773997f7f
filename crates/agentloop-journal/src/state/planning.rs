//! How a planner's answer, and a person's word on the tasks it proposed, move the state.

use agentloop_ground::words::add_usd;
use agentloop_plan::Plan;

use super::RunState;
use crate::planning::{Planned, PlannerFinished};

impl RunState {
    pub(crate) fn planner_started(&mut self, planner: u32, basis: &str) {
        self.planning.at_work.insert(planner);
        self.planning.basis = Some(basis.to_string());
    }

    pub(crate) fn planner_finished(&mut self, f: &PlannerFinished) {
        self.cost_usd = add_usd(self.cost_usd, f.cost_usd);
        self.planning.at_work.remove(&f.planner);
        self.planning.note(f.planner, f.outcome.describe());
        match &f.outcome {
            Planned::Added {
                version,
                plan,
                added,
            } => self.grow_plan(*version, plan, added),
            Planned::Proposed { tasks } => self.planning.proposal = Some(tasks.clone()),
            Planned::Refused { reason } => self.planning.refuse(reason.clone()),
            Planned::Nothing | Planned::Failed { .. } => {}
        }
        self.planning.quiet_at = match &f.outcome {
            Planned::Nothing => f.basis.split_once(", ").map(|(_, s)| s.to_string()),
            Planned::Failed { .. } => self.planning.quiet_at.take(),
            _ => None,
        };
        if matches!(f.outcome, Planned::Refused { .. }) {
            self.planning.refused_in_a_row += 1;
            // Asked again, told why, unless it keeps proposing what is refused.
            if self.planning.refused_in_a_row < 3 {
                self.planning.basis = None;
            }
        } else {
            self.planning.refused_in_a_row = 0;
        }
    }

    fn grow_plan(&mut self, version: u32, plan: &Plan, added: &[String]) {
        self.plan_version = version;
        self.set_plan(plan.clone());
        self.planning.added.extend(added.iter().cloned());
    }

    /// A new driver: planners a dead one asked are gone, and are asked again.
    pub(crate) fn planners_lost(&mut self) {
        if !self.planning.at_work.is_empty() {
            self.planning.at_work.clear();
            self.planning.basis = None;
        }
    }

    /// A person approved the proposed tasks: they join the plan.
    pub(crate) fn new_tasks_approved(&mut self) {
        if let Some(tasks) = self.planning.proposal.take() {
            let mut plan = self.plan.clone();
            let mut added = Vec::new();
            for t in tasks {
                if plan.task(&t.id).is_none() {
                    added.push(t.id.clone());
                    plan.tasks.push(t);
                }
            }
            let version = self.plan_version + 1;
            self.grow_plan(version, &plan, &added);
        }
    }

    /// A person rejected them: they are dropped, and the next planner is told why.
    pub(crate) fn new_tasks_rejected(&mut self, note: Option<&str>) {
        if let Some(tasks) = self.planning.proposal.take() {
            let ids: Vec<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
            self.planning.refuse(format!(
                "a person rejected the proposed tasks {}: {}",
                ids.join(", "),
                note.unwrap_or("no reason given")
            ));
        }
    }
}
