//! `agentloop journal verify`.

use agentloop_journal as journal;
use agentloop_workspace::Workspace;

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
    report(&run.journal(), loaded.scan)
}

/// [`verify`] of a journal file that belongs to no run here: an export, a copy.
pub fn verify_file(path: &std::path::Path) -> Result<ExitKind, CliError> {
    if let Err(e) = std::fs::File::open(path) {
        return Err(CliError::user(format!("{}: {e}", path.display())));
    }
    let scan = journal::scan(path, 0, 1, |_| {})?;
    if scan.count == 0 && scan.forged.is_empty() {
        return Err(CliError::user(format!(
            "{}: no journal record in it",
            path.display()
        )));
    }
    report(path, scan)
}

/// What a check of the journal at `path` found: ok, or the lines agentloop did not write.
fn report(path: &std::path::Path, scan: journal::Scan) -> Result<ExitKind, CliError> {
    if let Some(n) = scan.torn_tail {
        crate::render::warn(&format!(
            "the last line is torn ({n} bytes, a write cut short by a crash); it is not an event and is dropped at the next append"
        ));
    }
    if !scan.forged.is_empty() {
        for f in &scan.forged {
            eprintln!(
                "{}:{}: not written by agentloop (a {} record claiming seq {}): forged or edited; never acted on",
                path.display(),
                f.line,
                f.kind,
                f.seq
            );
        }
        return Err(CliError::user(format!(
            "{}: {} not agentloop's",
            path.display(),
            agentloop_ground::words::plural(scan.forged.len(), "line is", "lines are")
        ))
        .hint("something other than agentloop wrote to the journal; `agentloop log` shows what agentloop recorded"));
    }
    outln!(
        "{}: ok · {} (seq 1..{}), each sealed by agentloop · schema v{}",
        path.display(),
        agentloop_ground::words::plural(scan.count as usize, "event", "events"),
        scan.count,
        journal::SCHEMA_VERSION
    );
    Ok(ExitKind::Completed)
}
