//! What a plan is: a goal and tasks with their fields.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub title: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub goal: String,
    /// Plan-level settings from the front matter, in the same shape as `agentloop.toml`.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub settings: serde_json::Map<String, serde_json::Value>,
    /// What of `settings` came from a shaping step's `.loop/shape/SHAPE.md` (its front
    /// matter as read, under the plan's own): which file a setting came from.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub shaped: serde_json::Map<String, serde_json::Value>,
    /// Tripwires for every task (`mustNot:` in the front matter; see `Tripwire`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub must_not: Vec<String>,
    /// The run's criteria (`criteria:` in the front matter; see `Requirement`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub criteria: Vec<String>,
    pub tasks: Vec<Task>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    pub id: String,
    pub title: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub body: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acceptance: Vec<Criterion>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verify: Vec<String>,
    /// The tests this task must make pass (`Tests:`), judged from the runners'
    /// reports: FAIL_TO_PASS.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tests: Vec<agentloop_evidence::TestName>,
    /// Held-out checks this task must pass (`Holdout:`): names of `[verify] holdout`
    /// checks, whose content the agent never sees.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub holdout: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<GatePoint>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scope: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<u32>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub milestone: bool,
    /// This task's tripwires (`Must-not:` lines; see `Tripwire`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub must_not: Vec<String>,
    /// This task's criteria (`Criteria:` lines; see `Requirement`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub criteria: Vec<String>,
    /// How long undoing it takes (`Reversibility: 1 | 2A | 2B`); else judged from
    /// what it speaks of (`clarity::reversibility`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reversibility: Option<Class>,
    /// Line of the task's heading in the file it was read from (0 when built in code).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub line: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Criterion {
    pub text: String,
    #[serde(default)]
    pub checked: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GatePoint {
    Before,
    After,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Quick,
    Tdd,
    Pair,
    Checkpoint,
    /// Tasks judged as in quick mode, run by several workers at once (4 unless
    /// `[run] workers` says otherwise), each in its own worktree, merged through the
    /// verified merge queue.
    Swarm,
}

impl Mode {
    pub const ALL: [Mode; 5] = [
        Mode::Quick,
        Mode::Tdd,
        Mode::Pair,
        Mode::Checkpoint,
        Mode::Swarm,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Quick => "quick",
            Mode::Tdd => "tdd",
            Mode::Pair => "pair",
            Mode::Checkpoint => "checkpoint",
            Mode::Swarm => "swarm",
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Mode::ALL
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                format!(
                    "unknown mode `{}`; expected quick, tdd, pair, checkpoint or swarm",
                    s.trim()
                )
            })
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Plan {
    pub fn ids(&self) -> Vec<&str> {
        self.tasks.iter().map(|t| t.id.as_str()).collect()
    }

    pub fn task(&self, id: &str) -> Option<&Task> {
        self.tasks.iter().find(|t| t.id == id)
    }

    /// Task `id`'s criteria, then the run's, as read (a line that does not read is
    /// left out: the plan was checked when it was read).
    pub fn requirements(&self, id: &str) -> Vec<crate::criteria::Requirement> {
        self.requirements_of(self.task(id))
    }

    fn requirements_of(&self, task: Option<&Task>) -> Vec<crate::criteria::Requirement> {
        task.map(|t| t.criteria.as_slice())
            .unwrap_or_default()
            .iter()
            .chain(&self.criteria)
            .filter_map(|c| crate::criteria::Requirement::parse(c).ok())
            .collect()
    }

    /// What verifies task `id`, before the run's `[verify] commands`: its `Verify:`
    /// commands, then the commands of its and the run's execution and measurement
    /// criteria (each once).
    pub fn checks(&self, id: &str) -> Vec<String> {
        self.checks_of(self.task(id))
    }

    /// [`checks`](Self::checks) of a task in hand (`None`: the run's alone), without
    /// looking it up again.
    pub fn checks_of(&self, task: Option<&Task>) -> Vec<String> {
        let mut out: Vec<String> = task.map(|t| t.verify.clone()).unwrap_or_default();
        for r in self.requirements_of(task) {
            if let Some(c) = r.command
                && !out.contains(&c)
            {
                out.push(c);
            }
        }
        out
    }

    /// The thresholds of task `id`'s measurements and the run's: (command, threshold).
    pub fn measures(&self, id: &str) -> Vec<(String, crate::criteria::Threshold)> {
        self.requirements(id)
            .into_iter()
            .filter_map(|r| Some((r.command?, r.threshold?)))
            .collect()
    }
}

impl Task {
    pub fn new(id: &str, title: &str) -> Task {
        Task {
            id: id.to_string(),
            title: title.to_string(),
            body: String::new(),
            acceptance: Vec::new(),
            verify: Vec::new(),
            tests: Vec::new(),
            holdout: Vec::new(),
            depends: Vec::new(),
            gate: None,
            agent: None,
            mode: None,
            scope: Vec::new(),
            max_iterations: None,
            milestone: false,
            reversibility: None,
            must_not: Vec::new(),
            criteria: Vec::new(),
            line: 0,
        }
    }
}

/// How fast a task's change can be rolled back (`Reversibility:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Class {
    /// Under a minute to roll back.
    #[serde(rename = "2A")]
    TwoA,
    /// Under five minutes.
    #[serde(rename = "2B")]
    TwoB,
    /// Hours or more: schema changes, public APIs, releases.
    #[serde(rename = "1")]
    One,
}

impl Class {
    pub fn as_str(self) -> &'static str {
        match self {
            Class::TwoA => "2A",
            Class::TwoB => "2B",
            Class::One => "1",
        }
    }

    pub fn parse(s: &str) -> Option<Class> {
        match s.trim().to_ascii_uppercase().as_str() {
            "2A" => Some(Class::TwoA),
            "2B" => Some(Class::TwoB),
            "1" => Some(Class::One),
            _ => None,
        }
    }
}
