//! What the sandbox refused an agent, as the journal records it: each refusal, and the
//! run's count of them with the latest few.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DenialKind {
    /// A host not in `[sandbox] allow_hosts`.
    Network,
    /// A write outside the writable paths.
    Write,
    /// A read of a hidden path.
    Read,
}

impl DenialKind {
    pub fn word(self) -> &'static str {
        match self {
            DenialKind::Network => "network",
            DenialKind::Write => "write",
            DenialKind::Read => "read",
        }
    }
}

/// One refusal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Denial {
    pub kind: DenialKind,
    /// The host:port, or the path.
    pub target: String,
    /// What shows it (the proxy's words, or the agent's output line).
    pub detail: String,
}

impl Denial {
    pub fn describe(&self) -> String {
        match self.kind {
            DenialKind::Network => {
                format!("network: {} (not in [sandbox] allow_hosts)", self.target)
            }
            DenialKind::Write => format!("write: {} (outside the writable paths)", self.target),
            DenialKind::Read => format!("read: {} (hidden)", self.target),
        }
    }
}

/// How many of the latest refusals the views show.
pub const RECENT_REFUSALS: usize = 10;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusals {
    /// Every refusal recorded in the run.
    pub count: u32,
    /// The latest, with their iteration, oldest first.
    pub recent: Vec<(u32, Denial)>,
}

impl Refusals {
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}
