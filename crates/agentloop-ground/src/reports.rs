//! What the agent reported through agentloop's MCP server (`agentloop mcp`) during an
//! iteration: every call, in order, one JSON line each in the iteration's
//! `reports.jsonl`. The driver journals them with the iteration's `agent_finished` and
//! reads the reports as it reads the markers of the final message: `report_complete`
//! is a claim like `TASK_COMPLETE` (verification still decides), `report_blocked` a
//! `BLOCKED:` question, `report_learning` a `LEARNING:` line.
//!
//! The agent could write this file by hand as well: it holds claims, never proof, the
//! same trust as the text the agent prints.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::signals::Signals;

/// The file in an iteration's directory.
pub const FILE: &str = "reports.jsonl";
/// The most calls of one iteration that are read.
const MAX_CALLS: usize = 200;
/// The most of the file that is read.
const MAX_BYTES: u64 = 4 * 1024 * 1024;
/// The longest text of one call that is kept.
const MAX_TEXT: usize = 8 * 1024;

/// One call of an MCP tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// The tool: `current_task`, `progress`, `report_complete`, `report_blocked`,
    /// `report_learning`.
    pub tool: String,
    /// What the agent passed (a summary, a question, a learning).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

pub fn path(iteration_dir: &Path) -> PathBuf {
    iteration_dir.join(FILE)
}

/// Appends one call (one line, written in one piece).
pub fn append(iteration_dir: &Path, report: &Report) -> std::io::Result<()> {
    let mut r = report.clone();
    r.text = r.text.map(|t| cap(&t));
    let mut line = serde_json::to_vec(&r).map_err(std::io::Error::other)?;
    line.push(b'\n');
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path(iteration_dir))?;
    f.write_all(&line)
}

/// The calls of an iteration (lines that are not reports are skipped; at most
/// `MAX_CALLS`, each text capped).
pub fn read(iteration_dir: &Path) -> Vec<Report> {
    use std::io::Read;
    // Opened without blocking (a FIFO is refused), and read to a bound: the agent
    // writes this file.
    let Ok(f) = crate::fsutil::open_regular(&path(iteration_dir)) else {
        return Vec::new();
    };
    std::io::BufReader::new(f.take(MAX_BYTES))
        .split(b'\n')
        .map_while(Result::ok)
        .filter_map(|l| serde_json::from_slice::<Report>(&l).ok())
        .take(MAX_CALLS)
        .map(|mut r| {
            r.text = r.text.map(|t| cap(&t));
            r
        })
        .collect()
}

fn cap(text: &str) -> String {
    match text.char_indices().nth(MAX_TEXT) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// The reports as signals, on top of what the final message said.
pub fn apply(signals: &mut Signals, reports: &[Report]) {
    for r in reports {
        let text = r.text.as_deref().map(str::trim).unwrap_or_default();
        match r.tool.as_str() {
            "report_complete" => {
                signals.complete = true;
                signals
                    .marker
                    .get_or_insert_with(|| "mcp:report_complete".to_string());
            }
            "report_blocked" if !text.is_empty() => {
                signals.blocked = Some(text.to_string());
            }
            "report_learning"
                if !text.is_empty() && !signals.learnings.iter().any(|l| l == text) =>
            {
                signals.learnings.push(text.to_string());
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_read_back_in_order_and_become_signals() {
        let dir = tempfile::tempdir().unwrap();
        let call = |tool: &str, text: Option<&str>| Report {
            tool: tool.into(),
            text: text.map(String::from),
        };
        append(dir.path(), &call("current_task", None)).unwrap();
        append(
            dir.path(),
            &call("report_learning", Some("tests are in t/")),
        )
        .unwrap();
        append(dir.path(), &call("report_complete", Some("done"))).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(path(dir.path()))
            .unwrap()
            .write_all(b"not json\n")
            .unwrap();
        let got = read(dir.path());
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].tool, "current_task");
        let mut s = Signals::default();
        apply(&mut s, &got);
        assert!(s.complete);
        assert_eq!(s.marker.as_deref(), Some("mcp:report_complete"));
        assert_eq!(s.learnings, vec!["tests are in t/"]);
        assert!(read(&dir.path().join("none")).is_empty());
    }

    #[test]
    fn a_huge_text_is_capped() {
        let dir = tempfile::tempdir().unwrap();
        let big = "x".repeat(100_000);
        append(
            dir.path(),
            &Report {
                tool: "report_blocked".into(),
                text: Some(big),
            },
        )
        .unwrap();
        let got = read(dir.path());
        assert!(got[0].text.as_ref().unwrap().chars().count() <= MAX_TEXT + 1);
    }
}
