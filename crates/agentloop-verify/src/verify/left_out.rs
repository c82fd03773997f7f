//! What the judge's copy left out of the agent's work (default-deny), told where the
//! verification is: its record, its log, and — when it failed — its digest, so that
//! the agent's next prompt says why a test of its own did not run.

use std::io::Write;
use std::path::Path;

use agentloop_journal::{LeftOut, VerifyFinished};

/// The most files named in a log or a digest (the record keeps them all).
const MOST_NAMED: usize = 20;

/// Puts `left_out` (and `admitted`, what the work's allowance let in) on `result`,
/// and what was left out on the log at `log` and the digest.
pub fn tell(
    result: &mut VerifyFinished,
    left_out: Vec<LeftOut>,
    admitted: Vec<String>,
    log: &Path,
) -> std::io::Result<()> {
    result.admitted = admitted;
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
                "[agentloop: {more} more files added by the agent, left out of the checks' copy]"
            )?;
        }
    }
    if !result.passed {
        let mut told = String::from(
            "Files you added that the checks would load or run on their own did not reach agentloop's checks. They count only when the plan says the task writes them (`mode: tdd`, a `Tests:` name in a file the task creates or marked `(new)`, or the task's `Scope:`). If the task needs them and its plan does not say so, answer BLOCKED with what is missing: the plan is a person's to change.",
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
