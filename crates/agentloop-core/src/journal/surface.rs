//! The verification surface in the journal: the baseline recorded when a run starts
//! (the content of every file that decides "done"), what a check found changed, and
//! how the state moves when a person approves or rejects a change or agentloop
//! restores the baseline.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::state::RunState;

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

impl RunState {
    /// The changes a person is asked about at the surface gate, while it is open.
    pub fn surface_gate_changes(&self) -> Option<&[SurfaceChange]> {
        if !matches!(self.gate, Some(super::event::Gate::Surface(_))) {
            return None;
        }
        let check = self.open.as_ref()?.surface.as_ref()?;
        Some(&check.changes)
    }

    pub(super) fn baseline_recorded(&mut self, files: &Baseline) {
        self.baseline = Some(files.clone());
    }

    pub(super) fn surface_checked(&mut self, changes: &[SurfaceChange]) {
        if let Some(open) = &mut self.open {
            open.surface = Some(SurfaceCheck {
                changes: changes.to_vec(),
                settled: changes.is_empty(),
                ..SurfaceCheck::default()
            });
        }
    }

    pub(super) fn surface_restored(&mut self, cause: &RestoreCause) {
        let Some(check) = self.open.as_mut().and_then(|o| o.surface.as_mut()) else {
            return;
        };
        check.settled = true;
        check.rejected = None;
        check.restored = Some(cause.clone());
        if *cause == RestoreCause::Policy {
            // The next prompt says so, whichever task it is for (a rejection says it
            // in the iteration's digest).
            let note = restored_note(&check.changes, cause);
            self.steer.push(note);
        }
    }

    /// A person approved the changes at the surface gate: they become the baseline.
    pub(super) fn surface_approved(&mut self) {
        let Some(check) = self.open.as_mut().and_then(|o| o.surface.as_mut()) else {
            return;
        };
        check.settled = true;
        if let Some(base) = &mut self.baseline {
            for c in &check.changes {
                match &c.after {
                    Some(f) => {
                        base.insert(c.path.clone(), f.clone());
                    }
                    None => {
                        base.remove(&c.path);
                    }
                }
            }
        }
    }

    pub(super) fn surface_rejected(&mut self, note: Option<String>) {
        if let Some(check) = self.open.as_mut().and_then(|o| o.surface.as_mut()) {
            check.rejected = Some(RestoreCause::Rejected { note });
        }
    }
}
