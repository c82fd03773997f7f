//! An iteration in progress, as the journal knows it: its start, its agent's end, its
//! checks, its surface and tripwire checks, its way onto the integration branch, its
//! job on a cluster, its reviews.

use serde::{Deserialize, Serialize};

use super::event::{AgentFinished, IterationStarted, VerifyFinished};
use super::integration::MergeState;

/// The iteration in progress, as far as the journal knows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenIteration {
    pub started: IterationStarted,
    pub started_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentFinished>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifyFinished>,
    /// `Some(true)` once a replan proposal was accepted, `Some(false)` when rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replan: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replan_rejection: Option<String>,
    /// When the agent finished (Unix milliseconds).
    #[serde(default)]
    pub agent_ms: u64,
    /// A limit was recorded for this iteration.
    #[serde(default)]
    pub limited: bool,
    /// The verification surface checked before verification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surface: Option<super::baseline::SurfaceCheck>,
    /// The tripwires checked after the agent finished (`Must-not:`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tripwires: Option<super::tripwire::TripCheck>,
    /// A run with workers: the verified work's way onto the integration branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge: Option<MergeState>,
    /// Its job on a cluster (a remote executor), as last reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<super::event::JobState>,
    /// The review under way (`review_started` without its answer yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_started: Option<super::event::ReviewStarted>,
    /// The reviewers' answers so far, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reviews: Vec<super::event::ReviewFinished>,
}
