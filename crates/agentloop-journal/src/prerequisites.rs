//! What a run needs from the machine, as a driver found it when it started (looked at
//! by `agentloop-exec`'s `prereq`).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prerequisites {
    /// The project is a git work tree.
    pub git: bool,
    /// Uncommitted paths when the driver started (at most 20), and how many in all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dirty: Vec<String>,
    #[serde(default)]
    pub dirty_count: usize,
    /// Programs the checks run that are not there: `frob (T2: frob --all)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
}
