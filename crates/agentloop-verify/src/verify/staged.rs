//! Where a confined check's Python bytecode comes from (`exec::sandbox::bytecode`):
//! staged from the baseline's before each check, kept after each of the baseline's.

use agentloop_exec::sandbox::bytecode::{self, Bytecode};
use agentloop_exec::sandbox::judge;

use super::Runner;

impl Runner<'_> {
    /// The check's confinement, with the baseline's bytecode staged for it where the
    /// run keeps some and the copy still holds its sources: staged here, just before
    /// the check starts, or not at all (a stage made for an earlier check is never
    /// bound). A baseline's check writes the bytecode it compiles, to be kept.
    pub(super) fn wrap_staged(&self) -> Vec<std::ffi::OsString> {
        if self.wrap.is_empty() {
            return Vec::new();
        }
        match &self.bytecode {
            Bytecode::From(seed) => {
                let at = bytecode::stage_of(seed);
                match bytecode::stage(seed, self.workdir, &at) {
                    Ok(n) if n > 0 => judge::with_bytecode(&self.wrap, &at),
                    _ => self.wrap.clone(),
                }
            }
            Bytecode::Keeps(_) => judge::writing_bytecode(&self.wrap),
            Bytecode::Compiled => self.wrap.clone(),
        }
    }

    /// After a check of the baseline's that started at `since`: what it compiled kept
    /// for the run's later checks.
    pub(super) fn keep_bytecode(&self, since: std::time::SystemTime) {
        if let Bytecode::Keeps(seed) = &self.bytecode
            && !self.wrap.is_empty()
        {
            let _ = bytecode::keep(self.workdir, seed, since);
        }
    }
}
