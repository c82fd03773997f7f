//! How the verification surface moves the state: the baseline recorded when a run
//! starts, a check's changes, a person's approval or rejection, a restore.

use super::baseline::*;
use super::state::RunState;

impl RunState {
    /// The changes a person is asked about at the surface gate, while it is open.
    pub fn surface_gate_changes(&self) -> Option<&[SurfaceChange]> {
        let Some(super::person::Gate::Surface(task)) = &self.gate else {
            return None;
        };
        let check = self.open_of_task(task)?.surface.as_ref()?;
        Some(&check.changes)
    }

    pub(super) fn baseline_recorded(&mut self, files: &Baseline) {
        self.baseline = Some(files.clone());
    }

    pub(super) fn surface_checked(&mut self, iteration: u32, changes: &[SurfaceChange]) {
        if let Some(open) = self.open_mut(iteration) {
            open.surface = Some(SurfaceCheck {
                changes: changes.to_vec(),
                settled: changes.is_empty(),
                ..SurfaceCheck::default()
            });
        }
    }

    pub(super) fn surface_restored(&mut self, iteration: u32, cause: &RestoreCause) {
        let Some(check) = self.open_mut(iteration).and_then(|o| o.surface.as_mut()) else {
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
    pub(super) fn surface_approved(&mut self, task: &str) {
        let Some(check) = self.open_of_task_mut(task).and_then(|o| o.surface.as_mut()) else {
            return;
        };
        check.settled = true;
        let changes = check.changes.clone();
        for c in &changes {
            if !self.surface_approved.contains(&c.path) {
                self.surface_approved.push(c.path.clone());
            }
        }
        if let Some(base) = &mut self.baseline {
            for c in &changes {
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

    pub(super) fn surface_rejected(&mut self, task: &str, note: Option<String>) {
        if let Some(check) = self.open_of_task_mut(task).and_then(|o| o.surface.as_mut()) {
            check.rejected = Some(RestoreCause::Rejected { note });
        }
    }
}
