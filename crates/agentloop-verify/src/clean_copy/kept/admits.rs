//! What the kept copy lets in of the agent's added files, from one verification to the
//! next: another task's admission may let in or keep out other files.

use std::path::Path;

use agentloop_journal::LeftOut;
use agentloop_project::Admission;

use super::Kept;

impl Kept {
    /// Whether `admission` lets into the copy what the last one did (the same files
    /// held, the same left out): then it is the one kept, with what it says of them.
    /// Another task's verification allows other files, most often none the copy has.
    pub(super) fn admits_alike(&mut self, copy: &Path, admission: Option<&Admission>) -> bool {
        if admission == self.admission.as_ref() {
            return true;
        }
        let (Some(new), Some(_)) = (admission, &self.admission) else {
            return false;
        };
        let mut left_out = Vec::with_capacity(self.left_out.len());
        for l in &self.left_out {
            match new.left_out(&l.path) {
                Some(why) => left_out.push(LeftOut {
                    path: l.path.clone(),
                    why,
                }),
                None => return false,
            }
        }
        // A link the agent added is judged by what lies behind it: the full way.
        if self.files.iter().any(|f| {
            new.left_out(f).is_some()
                || (new.added(f)
                    && std::fs::symlink_metadata(copy.join(f))
                        .is_ok_and(|m| m.file_type().is_symlink()))
        }) {
            return false;
        }
        self.left_out = left_out;
        self.admission = Some(new.clone());
        true
    }

    /// The files the copy holds that its admission let in because the work writes
    /// tests.
    pub(super) fn admitted(&self) -> Vec<String> {
        let mut out: Vec<String> = match &self.admission {
            Some(a) => self
                .files
                .iter()
                .filter(|f| a.admitted(f))
                .cloned()
                .collect(),
            None => Vec::new(),
        };
        out.sort();
        out
    }
}
