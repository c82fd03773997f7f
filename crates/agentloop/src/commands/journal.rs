//! `agentloop journal verify`.

use agentloop_core::journal;
use agentloop_core::workspace::Workspace;

use crate::error::{CliError, ExitKind};

pub fn verify(ws: &Workspace, run: Option<&str>) -> Result<ExitKind, CliError> {
    let run = ws.resolve(run)?;
    // Streams the file: every line's checksum, sequence and schema, then the fold.
    let scan = run.load()?.scan;
    outln!(
        "{}: ok · {} (seq 1..{}) · schema v{}",
        run.journal().display(),
        agentloop_core::words::plural(scan.count as usize, "event", "events"),
        scan.count,
        journal::SCHEMA_VERSION
    );
    if let Some(n) = scan.torn_tail {
        crate::render::warn(&format!(
            "the last line is torn ({n} bytes, a write cut short by a crash); it is not an event and is dropped at the next append"
        ));
    }
    Ok(ExitKind::Completed)
}
