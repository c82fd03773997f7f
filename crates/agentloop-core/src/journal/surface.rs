//! How the verification surface moves the state: the baseline recorded when a run
//! starts, a check's changes, a person's approval or rejection, a restore.

use super::baseline::*;
use super::state::RunState;

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
