//! A file too large for the work (`[verify] max_file_size`), found before a task's
//! checks run in the project or its worktree: the verification fails, saying which.

use agentloop_exec::git;
use agentloop_journal::VerifyFinished;
use agentloop_verify::verify;

use super::Driver;
use crate::error::CliError;

impl Driver {
    /// The verification of `iteration` refused when the work adds or changes a file
    /// past `[verify] max_file_size` (what differs from HEAD, as the claim's snapshot
    /// or the watch has it, and in the project itself what the task committed since it
    /// began), said in its log; before anything copies the file.
    pub(super) fn too_large(
        &mut self,
        iteration: u32,
        task: &str,
        seen: Option<&git::Snapshot>,
        log: &std::path::Path,
    ) -> Result<Option<VerifyFinished>, CliError> {
        let most = self.config.verify.max_file_size;
        if most == 0 {
            return Ok(None);
        }
        // With no worktree the agent works (and may commit) in the project itself:
        // what it committed since its task began counts too.
        let (dir, now, committed_from) = match self.worktree_of(iteration) {
            Some(w) => (w.clone(), git::Snapshots::known(&w).take(), None),
            None => (
                self.ws.root.clone(),
                seen.cloned()
                    .or_else(|| self.watched.as_mut().and_then(|w| w.take(false)))
                    .or_else(|| self.snapshots.as_ref().and_then(|s| s.take())),
                self.state.task(task).and_then(|t| t.head_at_start.clone()),
            ),
        };
        let refused = now
            .and_then(|now| {
                verify::oversized::refused(
                    iteration,
                    &dir,
                    now.dirty.keys().map(String::as_str),
                    most,
                )
            })
            .or_else(|| {
                committed_from.and_then(|from| {
                    verify::oversized::committed_refused(iteration, &dir, &from, "HEAD", most)
                })
            });
        if let Some(r) = &refused {
            verify::oversized::tell(log, r)
                .map_err(|e| CliError::internal(format!("cannot write {}: {e}", log.display())))?;
        }
        Ok(refused)
    }
}
