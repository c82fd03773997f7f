//! What the merge queue found on the commits it landed, kept for VALIDATE: in a run
//! with workers the last batch's check ran every landed task's checks on the
//! integration branch's head, and VALIDATE runs them again there. (In a run with no
//! workers, the last iteration's check ran on the tree VALIDATE judges: kept by the
//! tree, [`tree_key`].) When nothing was
//! merged since (the head is the commit checked) and the tree the checks saw is the
//! same (the same files of the agents' left out, the same let in), a check that
//! passed there passed for VALIDATE too: it is taken, not run again.
//!
//! `checked/COMMIT.json` in the run's directory: the check's result and its tests'
//! per-command records. A commit's content never changes, so a file written before a
//! kill, for a merge never recorded, says nothing false.

use std::path::{Path, PathBuf};

use agentloop_journal::{CommandResult, VerifyFinished};
use serde::{Deserialize, Serialize};

/// One landed commit's check.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Checked {
    pub commit: String,
    pub result: VerifyFinished,
    /// Its checks' per-test records, one per command (the log's `tests.json`).
    #[serde(default)]
    pub tests: Vec<serde_json::Value>,
}

/// The largest record read.
const MOST: u64 = 64 << 20;

/// The name a run with no workers keeps a check under: the tree it judged, as the
/// project's watch saw it (its HEAD and what differs from it). VALIDATE takes it only
/// when no iteration came after it and the watch sees the same tree then.
pub(crate) fn tree_key(tree: &agentloop_exec::git::Snapshot) -> Option<String> {
    let head = tree.head.as_deref()?;
    let (_, crc) = tree.id.rsplit_once(':')?;
    Some(format!("{head}{crc}"))
}

/// Where the records of run directory `run`'s landed commits are.
pub(crate) fn dir_of(run: &Path) -> PathBuf {
    run.join("checked")
}

fn path(dir: &Path, commit: &str) -> Option<PathBuf> {
    commit
        .bytes()
        .all(|b| b.is_ascii_hexdigit())
        .then(|| dir.join(format!("{commit}.json")))
}

/// Keeps the check of `commit` whose output went to `log` (a passing one only).
pub(crate) fn keep(dir: &Path, commit: &str, result: &VerifyFinished, log: &Path) {
    let Some(path) = path(dir, commit).filter(|_| result.passed) else {
        return;
    };
    let tests = agentloop_ground::fsutil::read_regular(&log.with_extension("tests.json"), MOST)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let record = Checked {
        commit: commit.to_string(),
        result: result.clone(),
        tests,
    };
    // A record lost is a check run again by VALIDATE, nothing worse.
    let _ = std::fs::create_dir_all(dir);
    let _ = agentloop_ground::fsutil::write_atomic(
        &path,
        &agentloop_ground::fsutil::pretty_json(&record),
    );
}

/// The check kept for `commit`, if any.
pub(crate) fn recall(dir: &Path, commit: &str) -> Option<Checked> {
    let bytes = agentloop_ground::fsutil::read_regular(&path(dir, commit)?, MOST).ok()?;
    serde_json::from_slice::<Checked>(&bytes)
        .ok()
        .filter(|c| c.commit == commit && c.result.passed)
}

impl Checked {
    /// Of `commands` (VALIDATE's), the results this check already has on the same
    /// tree: each passed here as VALIDATE judges it (`by_tests`: by its report where
    /// it had one; else by its exit code) and measures nothing
    /// VALIDATE judges (`measured`, whose thresholds VALIDATE holds), when the check
    /// left out and let in exactly what VALIDATE's copy does. Each with its per-test
    /// record, when there is one.
    pub(crate) fn reusable(
        &self,
        commands: &[String],
        measured: &[String],
        by_tests: impl Fn(&str) -> bool,
        left_out: &[agentloop_journal::LeftOut],
        admitted: &[String],
    ) -> Vec<(CommandResult, Option<serde_json::Value>)> {
        if self.result.left_out != left_out || self.result.admitted != admitted {
            return Vec::new();
        }
        commands
            .iter()
            .filter(|c| !measured.contains(c))
            .filter_map(|c| {
                let r = self.result.commands.iter().find(|r| &r.command == c)?;
                // Judged the same way here as VALIDATE would: by the report, where
                // there was one and VALIDATE reads it; else by the exit code.
                let exited_0 = r.exit_code == Some(0) && !r.timed_out;
                let passed = match &r.tests {
                    Some(t) if t.judged => by_tests(c) && r.passed(),
                    Some(_) => !by_tests(c) && exited_0,
                    None => exited_0,
                };
                if !passed {
                    return None;
                }
                let tests = self
                    .tests
                    .iter()
                    .find(|t| t["command"].as_str() == Some(c.as_str()))
                    .cloned();
                Some((r.clone(), tests))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentloop_journal::LeftOut;

    fn result(cmd: &str, code: i32) -> CommandResult {
        CommandResult {
            command: cmd.into(),
            exit_code: Some(code),
            timed_out: false,
            duration_ms: 1,
            output_bytes: 0,
            truncated: false,
            measured: None,
            tests: None,
            cause: None,
        }
    }

    fn checked(left_out: Vec<LeftOut>) -> Checked {
        Checked {
            commit: "ab12".into(),
            result: VerifyFinished {
                iteration: 3,
                passed: true,
                commands: vec![result("a", 0), result("b", 0), result("m", 0)],
                fingerprint: None,
                digest: None,
                evidence: None,
                held_out: Vec::new(),
                left_out,
                admitted: Vec::new(),
            },
            tests: vec![serde_json::json!({"command": "b", "runner": "pytest", "tests": []})],
        }
    }

    /// Only what passed on the same tree, and measures nothing VALIDATE judges.
    #[test]
    fn only_a_passing_check_on_the_same_tree_is_taken() {
        let c = checked(Vec::new());
        let all: Vec<String> = ["a", "b", "m", "new"].map(String::from).to_vec();
        let taken = c.reusable(&all, &["m".to_string()], |_| false, &[], &[]);
        let names: Vec<&str> = taken.iter().map(|(r, _)| r.command.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert!(taken[0].1.is_none() && taken[1].1.is_some());
        // Another file of the agents' left out: another tree.
        let out = LeftOut {
            path: "conftest.py".into(),
            why: "a test file".into(),
        };
        let none = |_: &str| false;
        assert!(
            c.reusable(&all, &[], none, std::slice::from_ref(&out), &[])
                .is_empty()
        );
        assert!(
            checked(vec![out])
                .reusable(&all, &[], none, &[], &[])
                .is_empty()
        );
        assert!(
            c.reusable(&all, &[], none, &[], &["x.py".into()])
                .is_empty()
        );
        // Judged by its report for VALIDATE, by its exit code here: run again.
        let mut read = checked(Vec::new());
        read.result.commands[0].tests = Some(agentloop_evidence::CommandTests {
            runner: "tap".into(),
            counts: Default::default(),
            problem: None,
            reason: None,
            notes: Vec::new(),
            judged: false,
            read_from: None,
        });
        let taken = read.reusable(&all, &[], |c| c == "a", &[], &[]);
        assert!(taken.iter().all(|(r, _)| r.command != "a"));
        // No report: judged by its exit code either way.
        assert_eq!(c.reusable(&all, &[], |_| true, &[], &[]).len(), 3);
        // Exited 1 with no report to decide it: run again.
        let mut failing = checked(Vec::new());
        failing.result.commands[0].exit_code = Some(1);
        let taken = failing.reusable(&all, &[], none, &[], &[]);
        assert!(taken.iter().all(|(r, _)| r.command != "a"));
    }

    /// A record is kept only for a passing check of a commit by its id, and read back
    /// only for that commit.
    #[test]
    fn a_record_is_kept_only_for_a_passing_check_of_that_commit() {
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join("merge.log");
        let mut c = checked(Vec::new());
        keep(d.path(), "ab12", &c.result, &log);
        assert_eq!(recall(d.path(), "ab12").unwrap().result.commands.len(), 3);
        assert!(recall(d.path(), "cd34").is_none());
        c.result.passed = false;
        keep(d.path(), "ef56", &c.result, &log);
        assert!(recall(d.path(), "ef56").is_none());
        keep(d.path(), "../x", &checked(Vec::new()).result, &log);
        assert!(!d.path().join("../x.json").exists());
    }
}
