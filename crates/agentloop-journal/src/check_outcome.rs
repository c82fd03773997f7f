//! One of the forge's checks of a shipped commit, as the journal records it.

use serde::{Deserialize, Serialize};

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
