//! Planners (`[run] planners`): agents that grow the plan while workers run. Their
//! records — a planner asked, and its answer: tasks added (a new plan version), tasks
//! held for a person (`[gates] new_tasks`), nothing to add, a proposal refused, or no
//! answer — and how they move the state.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::state::RunState;
use crate::plan::{Plan, Task};
use crate::words::add_usd;

/// A planner's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Planned {
    /// Its tasks joined the plan, as plan version `version`.
    Added {
        version: u32,
        plan: Plan,
        added: Vec<String>,
    },
    /// Its tasks wait for a person's approval (`[gates] new_tasks`); approved, they
    /// join the plan as it is then.
    Proposed { tasks: Vec<Task> },
    /// It found nothing more the goal needs.
    Nothing,
    /// What it proposed cannot join the plan, and why.
    Refused { reason: String },
    /// It gave no answer (its agent failed, or said nothing agentloop reads).
    Failed { reason: String },
}

impl Planned {
    /// A few words for the views: "added T9, T10 (plan v3)".
    pub fn describe(&self) -> String {
        match self {
            Planned::Added { version, added, .. } => {
                format!("added {} (plan v{version})", added.join(", "))
            }
            Planned::Proposed { tasks } => format!(
                "proposed {}, waiting for a person",
                tasks
                    .iter()
                    .map(|t| t.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Planned::Nothing => "nothing more to add".into(),
            Planned::Refused { reason } => format!("refused: {reason}"),
            Planned::Failed { reason } => format!("no answer: {reason}"),
        }
    }
}

/// A planner's turn ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannerFinished {
    pub planner: u32,
    /// What the run stood at when it was asked.
    pub basis: String,
    pub outcome: Planned,
    #[serde(default)]
    pub cost_usd: f64,
    #[serde(default)]
    pub duration_ms: u64,
}

/// What the run knows of its planners.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Planning {
    /// Planners asked and not answered yet.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub at_work: BTreeSet<u32>,
    /// What the run stood at when a planner was last asked: no planner is asked again
    /// until it moves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basis: Option<String>,
    /// Tasks a planner proposed that wait for a person (`[gates] new_tasks`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal: Option<Vec<Task>>,
    /// The last answers, newest last: (planner, what it came to).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub last: Vec<(u32, String)>,
    /// Every task planners added.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub added: Vec<String>,
    /// Why recent proposals were refused or rejected, for the next planner to know.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<String>,
    /// The setbacks (blocked and skipped tasks) when a planner last found nothing to
    /// add: none is asked again until they change or the plan's tasks are all settled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quiet_at: Option<String>,
    /// Proposals refused in a row: each of the first two is asked for again at once.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub refused_in_a_row: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Planning {
    pub fn is_idle(&self) -> bool {
        *self == Planning::default()
    }

    fn note(&mut self, planner: u32, what: String) {
        self.last.push((planner, what));
        let over = self.last.len().saturating_sub(8);
        self.last.drain(..over);
    }

    fn refuse(&mut self, why: String) {
        self.refused.push(why);
        let over = self.refused.len().saturating_sub(4);
        self.refused.drain(..over);
    }
}

impl RunState {
    pub(super) fn planner_started(&mut self, planner: u32, basis: &str) {
        self.planning.at_work.insert(planner);
        self.planning.basis = Some(basis.to_string());
    }

    pub(super) fn planner_finished(&mut self, f: &PlannerFinished) {
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
    pub(super) fn planners_lost(&mut self) {
        if !self.planning.at_work.is_empty() {
            self.planning.at_work.clear();
            self.planning.basis = None;
        }
    }

    /// A person approved the proposed tasks: they join the plan.
    pub(super) fn new_tasks_approved(&mut self) {
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
    pub(super) fn new_tasks_rejected(&mut self, note: Option<&str>) {
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
