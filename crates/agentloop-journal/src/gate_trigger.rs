//! A diff gate triggered by a file (and line): what the diff gates found, recorded
//! with the task and the ship unit it holds.

use serde::{Deserialize, Serialize};

/// A gate triggered by a file (and line).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateTrigger {
    pub gate: String,
    pub file: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    pub why: String,
}
