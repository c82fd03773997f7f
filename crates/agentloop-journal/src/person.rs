//! What a person decides, as the journal keeps it: the gates a run waits at, and the
//! control requests (pause, approve, skip, top up, …) people send it.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "point", content = "task", rename_all = "snake_case")]
pub enum Gate {
    /// Approve the plan before the first iteration (Gate 1).
    Plan,
    /// Accept the plan's review, what agentloop found reading it (Gate 2).
    PlanReview,
    BeforeTask(String),
    AfterTask(String),
    /// Approve before the run is declared complete.
    Final,
    /// The task's iteration changed the verification surface (see the open
    /// iteration's surface check): approve moves the baseline, reject restores it.
    Surface(String),
    /// The task's iteration hit a tripwire (`Must-not:`; see the open iteration's
    /// tripwire check): approve accepts it for the task, reject hands it back.
    Tripwire(String),
    /// The pull request's review: an approving review (or `approve`) releases it.
    Review,
    /// A step of the ship flow failed: approve tries it again, reject ends the run.
    Ship(String),
    /// What the diff touches needs this gate's review (security, database, external,
    /// architecture; deploy before a merge).
    Diff(String),
    /// Tasks a planner proposed wait for approval (`[gates] new_tasks`): approve adds
    /// them to the plan, reject drops them.
    NewTasks,
}

impl Gate {
    /// A few words for what was passed: `plan approval`, `after T2`.
    pub fn short(&self) -> String {
        match self {
            Gate::Plan => "plan approval".into(),
            Gate::PlanReview => "the plan's review".into(),
            Gate::BeforeTask(t) => format!("before {t}"),
            Gate::AfterTask(t) => format!("after {t}"),
            Gate::Final => "final review".into(),
            Gate::Surface(t) => format!("the change to the checks in {t}"),
            Gate::Tripwire(t) => format!("a tripwire hit in {t}"),
            Gate::Review => "the pull request's review".into(),
            Gate::Ship(_) => "a retry of the ship step".into(),
            Gate::Diff(g) => format!("the {g} review"),
            Gate::NewTasks => "the planners' new tasks".into(),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Gate::Plan => "approve the plan before the first iteration".into(),
            Gate::NewTasks => {
                "a planner proposed new tasks: approve adds them to the plan, reject drops them (the next planner is told why)".into()
            }
            Gate::PlanReview => {
                "accept the plan's review (what agentloop found reading it) before the first iteration: approve goes on as planned, reject ends the run to change the plan".into()
            }
            Gate::BeforeTask(t) => format!("approve task {t} before it starts"),
            Gate::AfterTask(t) => format!("review task {t} now that it is verified"),
            Gate::Final => "final review before the run is declared complete".into(),
            Gate::Surface(t) => format!(
                "task {t} changed files that verify it: approve moves the baseline, reject restores it"
            ),
            Gate::Tripwire(t) => format!(
                "task {t} hit a tripwire (Must-not): approve accepts it for the task, reject hands it back to the agent"
            ),
            Gate::Review => {
                "the pull request's review: an approving review or `agentloop approve` releases it"
                    .into()
            }
            Gate::Ship(why) => {
                format!("shipping failed ({why}): approve tries again, reject ends the run")
            }
            Gate::Diff(g) => format!(
                "the {g} review: what changed needs it (`agentloop approve --gate {g}`, or on the forge an approving review from its reviewers)"
            ),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Request {
    Pause,
    Resume,
    /// Stop after the current iteration.
    Stop,
    /// Kill the agent's process group now and stop.
    StopNow,
    Approve {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
        /// A diff gate approved by name, open or not yet.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        gate: Option<String>,
    },
    Reject {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    Skip {
        task: String,
        /// Why, for the handoff and the tracker.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    Retry {
        task: String,
    },
    /// A required skill (`[prompt.require_skills]`) no longer asked of the run's
    /// iterations, for the reason given (which the handoff keeps).
    SkipSkill {
        skill: String,
        reason: String,
    },
    /// The task's next iteration is a DEBUG iteration (the interactive menu's "debug").
    Debug {
        task: String,
    },
    Steer {
        note: String,
    },
    /// A person adds to the run's budgets (cents, tokens, seconds, iterations).
    TopUp {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_cents: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokens: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seconds: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        iterations: Option<u32>,
    },
    /// A person takes the surface as it is now (files changed outside an iteration,
    /// by themselves) as the new baseline: path → its version (`None`: gone).
    AcceptSurface {
        files: std::collections::BTreeMap<String, Option<super::baseline::SurfaceFile>>,
    },
}

impl Request {
    /// The request with secrets in its note replaced, as everything written is.
    pub fn redacted(self, r: &agentloop_ground::redact::Redactor) -> Request {
        // What a person typed may hold a secret the environment does not: known
        // shapes (cloud keys, forge tokens, `password=…`) go too.
        let clean = |n: String| agentloop_ground::redact::by_shape(&r.redact(&n)).into_owned();
        match self {
            Request::Approve { note, gate } => Request::Approve {
                note: note.map(clean),
                gate,
            },
            Request::Reject { note } => Request::Reject {
                note: note.map(clean),
            },
            Request::Steer { note } => Request::Steer { note: clean(note) },
            Request::Skip { task, reason } => Request::Skip {
                task,
                reason: reason.map(clean),
            },
            Request::SkipSkill { skill, reason } => Request::SkipSkill {
                skill,
                reason: clean(reason),
            },
            other => other,
        }
    }
}
