//! One run per test per tree: a check that runs a part of another check's tests on
//! the same tree (`python3 -m pytest tests/test_x.py` beside `python3 -m pytest`,
//! `go test ./reverse/` beside `go test ./...`) is judged from the other's report, cut
//! to its paths, rather than run again — on a task's iteration, on a merged result and
//! at VALIDATE, as at the baseline. The other runs first.

use std::path::Path;

use agentloop_evidence::runner::subset;
use agentloop_evidence::{CommandVerdict, Expected, Outcome, Report};

/// For each of `commands` that `eligible` allows, the one it is a part of (itself
/// eligible, and a part of none: read from a run, not from another read) and the
/// paths it selects there. Of several, the first that runs as written: `go test
/// ./text/reverse/` beside `go test ./text/...` and `go test ./...` is read from the
/// last.
pub(super) fn parts_of(
    commands: &[String],
    eligible: impl Fn(&str) -> bool,
    workdir: &Path,
) -> Vec<Option<(usize, Vec<String>)>> {
    let wholes: Vec<Vec<(usize, Vec<String>)>> = commands
        .iter()
        .enumerate()
        .map(|(k, part)| {
            if !eligible(part) {
                return Vec::new();
            }
            commands
                .iter()
                .enumerate()
                .filter(|(w, whole)| *w != k && *whole != part && eligible(whole))
                .filter_map(|(w, whole)| {
                    subset::selected_from(part, whole, workdir).map(|paths| (w, paths))
                })
                .collect()
        })
        .collect();
    wholes
        .iter()
        .map(|of| of.iter().find(|(w, _)| wholes[*w].is_empty()).cloned())
        .collect()
}

/// Which check may be read from which: for each check, the one it is a part of and
/// the paths it selects there.
pub(super) struct Parts {
    of: Vec<Option<(usize, Vec<String>)>>,
}

impl Parts {
    /// Only checks judged by their reports, neither of them a measure (whose value is
    /// printed by its own run).
    pub(super) fn new(
        commands: &[String],
        measured: &[&str],
        expected: Option<&Expected>,
        workdir: &Path,
    ) -> Parts {
        let Some(expected) = expected else {
            return Parts {
                of: vec![None; commands.len()],
            };
        };
        let judged = |c: &str| expected.judged_by_tests(c) && !measured.contains(&c);
        Parts {
            of: parts_of(commands, judged, workdir),
        }
    }

    /// The order the checks go in: every one that runs, as written, then the parts.
    pub(super) fn order(&self) -> Vec<usize> {
        let n = self.of.len();
        (0..n)
            .filter(|k| self.of[*k].is_none())
            .chain((0..n).filter(|k| self.of[*k].is_some()))
            .collect()
    }

    pub(super) fn whole_of(&self, k: usize) -> Option<(usize, &[String])> {
        self.of[k].as_ref().map(|(w, p)| (*w, p.as_slice()))
    }

    /// Whether some check is to be read from check `w`'s run.
    pub(super) fn is_whole(&self, w: usize) -> bool {
        self.of.iter().flatten().any(|(x, _)| *x == w)
    }
}

/// A whole's run, kept to read its parts from: it ran to its end (pytest's and go's
/// 0 or 1), its own runner wrote the report, and its verdict passed.
pub(super) struct WholeRun {
    pub(super) command: String,
    pub(super) runner: String,
    pub(super) report: Report,
    /// The tests its verdict forgave as flaky (failed, then passed when run again).
    pub(super) flaky: Vec<String>,
}

impl WholeRun {
    /// The part's report and the exit code its own run would have had; `None` when a
    /// path of the part selects none of the whole's tests, or holds a file that did
    /// not import (the part then runs as it is).
    pub(super) fn cut(&self, paths: &[String]) -> Option<(Report, i32)> {
        let report = subset::cut_report(&self.report, paths)?;
        let failing = report
            .tests
            .iter()
            .any(|t| matches!(t.outcome, Outcome::Failed | Outcome::Errored));
        Some((report, i32::from(failing)))
    }

    /// The part judged on its cut report as its own run would be: what the whole's
    /// run forgave as flaky is forgiven here too (it was run again there).
    pub(super) fn judge(
        &self,
        expected: &Expected,
        part: &str,
        report: &Report,
        exit_code: i32,
    ) -> CommandVerdict {
        let mut expect = expected.expect(part);
        expect
            .known
            .flaky
            .extend(self.flaky.iter().map(String::as_str));
        agentloop_evidence::judge_command(report, Some(exit_code), &expect)
    }
}
