//! Settling a run that no driver holds, after a control request: the decisions that
//! need no agent are recorded at once, so what a person sees is true whoever sent the
//! request (the CLI, the API, a hook).

use crate::error::WorkspaceError;
use crate::run_dir::RunDir;
use agentloop_journal::{Appended, Event, FinishReason, Outcome, RunState};
use agentloop_policy::{Action, next_action};

impl RunDir {
    /// With no driver alive, records what follows from requests alone — an interrupted
    /// iteration is aborted, a stop ends the run — and rewrites the derived files.
    /// Returns the settled state, or `None` when a driver holds the run (it settles
    /// the run itself).
    pub fn settle(&self) -> Result<Option<RunState>, WorkspaceError> {
        let Ok(_lock) = self.lock_briefly() else {
            return Ok(None);
        };
        let loaded = self.load()?;
        let mut w = loaded.writer(self)?;
        let mut state = loaded.state;
        for _ in 0..8 {
            let Action::Record(event) = next_action(&state) else {
                break;
            };
            // No new gates or iterations: only an aborted iteration or a stop.
            let settles = matches!(
                event,
                Event::IterationFinished(ref f) if f.outcome != Outcome::Completed
            ) || matches!(
                event,
                Event::RunFinished {
                    reason: FinishReason::StopRequested,
                    ..
                }
            );
            if !settles {
                break;
            }
            let (Appended::Written(recs) | Appended::Stale(recs)) = w.append_if_current(&event)?;
            for r in &recs {
                state.apply(r);
            }
        }
        state.journal_bytes = w.offset();
        self.write_derived(&state)?;
        Ok(Some(state))
    }
}
