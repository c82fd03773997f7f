//! What the judge's copy left out of the agent's work (default-deny), told where the
//! verification is: its record, its log, and — when it failed — its digest, so that
//! the agent's next prompt says why a test of its own did not run.

use std::io::Write;
use std::path::Path;

use agentloop_journal::{LeftOut, VerifyFinished};

/// The most files named in a log or a digest (the record keeps them all).
const MOST_NAMED: usize = 20;

/// Puts `left_out` on `result`, and on the log at `log` and the digest.
pub fn tell(
    result: &mut VerifyFinished,
    left_out: Vec<LeftOut>,
    log: &Path,
) -> std::io::Result<()> {
    if left_out.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = left_out
        .iter()
        .take(MOST_NAMED)
        .map(LeftOut::line)
        .collect();
    let more = left_out.len().saturating_sub(MOST_NAMED);
    if log.exists() {
        let mut f = std::fs::OpenOptions::new().append(true).open(log)?;
        for l in &lines {
            writeln!(f, "[agentloop: {l}]")?;
        }
        if more > 0 {
            writeln!(
                f,
                "[agentloop: {more} more files added by the agent, not run by the judge]"
            )?;
        }
    }
    if !result.passed {
        let mut told = String::from(
            "Files you added that the checks would load or run on their own did not reach agentloop's checks (a task that writes tests says so: `mode: tdd`, or `(new)` after its `Tests:` names; its `Scope:` holds its scripts):",
        );
        for l in &lines {
            told.push_str("\n- ");
            told.push_str(l);
        }
        if more > 0 {
            told.push_str(&format!("\n- and {more} more"));
        }
        result.digest = Some(match result.digest.take() {
            Some(d) => format!("{d}\n\n{told}"),
            None => told,
        });
    }
    result.left_out = left_out;
    Ok(())
}
