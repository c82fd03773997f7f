//! Cycles (`[run] cycle`): a long run judged at the end of each — every N tasks done,
//! or every so long — by a rule or an agent, which says go on, stop, or restart the
//! workers fresh from the integration branch (against drift). The verdict's record, and
//! where the run is in its cycles (the fold of it is `state/cycles.rs`).

use serde::{Deserialize, Serialize};

/// A judge's verdict at the end of a cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CycleVerdict {
    GoOn,
    Stop,
    /// The tasks not done start again from the integration branch's head, their work
    /// so far set aside (kept under `refs/agentloop/RUN/attempts/`).
    Restart,
}

impl CycleVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            CycleVerdict::GoOn => "go on",
            CycleVerdict::Stop => "stop",
            CycleVerdict::Restart => "restart fresh",
        }
    }
}

/// The end of cycle `cycle`, judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CycleJudged {
    pub cycle: u32,
    pub verdict: CycleVerdict,
    pub reasons: Vec<String>,
    /// `rule`, or the judging agent's name.
    pub by: String,
    #[serde(default)]
    pub cost_usd: f64,
}

/// Where the run is in its cycles.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cycles {
    /// Cycles judged so far (the current one is the next).
    #[serde(default)]
    pub judged: u32,
    /// When the current cycle began (Unix ms; 0: when the run was created).
    #[serde(default)]
    pub since_ms: u64,
    /// Tasks done when it began.
    #[serde(default)]
    pub done_at_start: u32,
    /// The last verdict, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<(CycleVerdict, Vec<String>)>,
}

impl Cycles {
    pub fn is_idle(&self) -> bool {
        *self == Cycles::default()
    }
}
