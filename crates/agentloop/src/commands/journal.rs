//! `agentloop journal verify`.

use agentloop_core::journal;
use agentloop_core::workspace::Workspace;

use crate::error::{CliError, ExitKind};

/// Checks every line: its checksum, sequence and schema, and that agentloop sealed it.
/// Lines agentloop did not write (appended or edited by something else) are named and
/// make the check fail; they were never acted on.
pub fn verify(ws: &Workspace, run: Option<&str>) -> Result<ExitKind, CliError> {
    let run = ws.resolve(run)?;
    let loaded = run.load()?;
    if let Some(why) = &loaded.stale {
        crate::render::warn(&format!(
            "the run's store cannot be read ({why}): what is checked is this machine's copy of the journal"
        ));
    }
    let scan = loaded.scan;
    if let Some(n) = scan.torn_tail {
        crate::render::warn(&format!(
            "the last line is torn ({n} bytes, a write cut short by a crash); it is not an event and is dropped at the next append"
        ));
    }
    if !scan.forged.is_empty() {
        for f in &scan.forged {
            eprintln!(
                "{}:{}: not written by agentloop (a {} record claiming seq {}): forged or edited; never acted on",
                run.journal().display(),
                f.line,
                f.kind,
                f.seq
            );
        }
        return Err(CliError::user(format!(
            "{}: {} not agentloop's",
            run.journal().display(),
            agentloop_core::words::plural(scan.forged.len(), "line is", "lines are")
        ))
        .hint("something other than agentloop wrote to the journal; `agentloop log` shows what agentloop recorded"));
    }
    outln!(
        "{}: ok · {} (seq 1..{}), each sealed by agentloop · schema v{}",
        run.journal().display(),
        agentloop_core::words::plural(scan.count as usize, "event", "events"),
        scan.count,
        journal::SCHEMA_VERSION
    );
    Ok(ExitKind::Completed)
}
