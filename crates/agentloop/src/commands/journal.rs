//! `agentloop journal verify`.

use agentloop_core::journal;
use agentloop_core::state::RunState;
use agentloop_core::workspace::Workspace;

use crate::error::{CliError, ExitKind};

pub fn verify(ws: &Workspace, run: Option<&str>) -> Result<ExitKind, CliError> {
    let run = ws.resolve(run)?;
    let c = journal::read(&run.journal())?;
    RunState::fold(&c.records)
        .map_err(|e| CliError::user(format!("{}: {e}", run.journal().display())))?;
    println!(
        "{}: ok · {} events (seq 1..{}) · schema v{}",
        run.journal().display(),
        c.records.len(),
        c.records.len(),
        journal::SCHEMA_VERSION
    );
    if let Some(n) = c.torn_tail {
        crate::render::warn(&format!(
            "the last line is torn ({n} bytes, a write cut short by a crash); it is not an event and is dropped at the next append"
        ));
    }
    Ok(ExitKind::Completed)
}
