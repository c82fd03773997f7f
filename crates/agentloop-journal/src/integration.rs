//! A run with workers: its integration branch and where a verified iteration is in
//! the merge queue. Plain data, shared by the state and the policy.

use serde::{Deserialize, Serialize};

/// Where a verified iteration of a run with workers is in the merge queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum MergeState {
    /// Being merged onto `head` and checked.
    Started {
        head: String,
    },
    Merged {
        commit: String,
    },
    Failed {
        conflict: bool,
        reason: String,
        digest: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fingerprint: Option<String>,
    },
}

/// The integration branch of a run with workers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Integration {
    pub branch: String,
    /// The commit it was made from.
    pub base: String,
    /// Where it is now.
    pub head: String,
    /// The checked-out branch was fast-forwarded to it.
    #[serde(default)]
    pub landed: bool,
}
