//! Planners (`[run] planners`): agents that grow the plan while workers run. Their
//! records — a planner asked, and its answer: tasks added (a new plan version), tasks
//! held for a person (`[gates] new_tasks`), nothing to add, a proposal refused, or no
//! answer — and what the run knows of them (the fold of it is `state/planning.rs`).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use agentloop_plan::{Plan, Task};

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

    pub(crate) fn note(&mut self, planner: u32, what: String) {
        self.last.push((planner, what));
        let over = self.last.len().saturating_sub(8);
        self.last.drain(..over);
    }

    pub(crate) fn refuse(&mut self, why: String) {
        self.refused.push(why);
        let over = self.refused.len().saturating_sub(4);
        self.refused.drain(..over);
    }
}
