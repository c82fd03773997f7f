//! The verification surface's records: the baseline (the content of every file that
//! decides "done"), a change to it, and what came of a check. Plain data, shared by the
//! events, the state and the policy.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One file of the surface as it was: its git blob id, its mode (`100644`, `100755`,
/// `120000` for a symbolic link) and why it belongs to the surface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SurfaceFile {
    pub blob: String,
    pub mode: u32,
    pub why: String,
}

/// The surface at the start of the run, moved forward by a person's approvals.
pub type Baseline = BTreeMap<String, SurfaceFile>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Modified,
    Deleted,
    /// A new file that configures or intercepts the checks.
    Added,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Modified => "modified",
            ChangeKind::Deleted => "deleted",
            ChangeKind::Added => "added",
        }
    }
}

/// A file of the surface that is not what the baseline says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SurfaceChange {
    pub path: String,
    pub kind: ChangeKind,
    pub why: String,
    /// The baseline's version (`None` for an added file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<SurfaceFile>,
    /// The version in the tree (`None` for a deleted file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<SurfaceFile>,
    /// The unified diff, capped (secrets redacted).
    #[serde(default)]
    pub diff: String,
}

impl SurfaceChange {
    pub fn describe(&self) -> String {
        format!("{} ({}, {})", self.path, self.kind.as_str(), self.why)
    }
}

/// Why agentloop put baseline versions back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum RestoreCause {
    /// `on_protected_change = "restore"`.
    Policy,
    /// A person rejected the change at the gate.
    Rejected {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
}

/// The open iteration's surface check and what came of it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SurfaceCheck {
    pub changes: Vec<SurfaceChange>,
    /// The changes are dealt with: approved, or restored.
    #[serde(default)]
    pub settled: bool,
    /// A person rejected them; the baseline is to be restored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected: Option<RestoreCause>,
    /// What was restored, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored: Option<RestoreCause>,
}

/// The lines that tell the agent what was restored and why.
pub fn restored_note(changes: &[SurfaceChange], cause: &RestoreCause) -> String {
    let list: Vec<String> = changes.iter().map(|c| c.describe()).collect();
    let head = match cause {
        RestoreCause::Policy => {
            "agentloop put back the run's baseline versions of files that verify your work"
                .to_string()
        }
        RestoreCause::Rejected { note } => format!(
            "A person rejected your change to files that verify your work{}; agentloop put back their baseline versions",
            note.as_deref()
                .filter(|n| !n.trim().is_empty())
                .map(|n| format!(" (\"{n}\")"))
                .unwrap_or_default()
        ),
    };
    format!(
        "{head}: {}. These files are not yours to change: make the checks pass as they are.",
        list.join(", ")
    )
}
