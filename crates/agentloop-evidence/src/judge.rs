//! A check's report against the run's baseline and the task's named tests: pure.
//!
//! - Every named test must be reported passed (absent, skipped, xfail or errored is
//!   not passed): FAIL_TO_PASS.
//! - Every test that passed at the baseline (or that a task done since made pass) must
//!   still be reported passed: PASS_TO_PASS. Those that fail are run again, together,
//!   before they count ([`CommandVerdict::regressions`] are what the runner re-runs).
//! - Every test the command collected at the baseline must still be collected: a
//!   deleted, renamed or deselected test is named.
//! - A task's own check that names no tests passes when every test it reports passes
//!   (or is skipped) and it exits 0: its own selection is the task's.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::names::{TestName, matches_id};
use crate::report::{Outcome, Report};

/// One test as judged: what it was at the baseline and what it is now (`None`:
/// absent from the report).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Seen {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<Outcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now: Option<Outcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Seen {
    /// `failed`, `absent`.
    pub fn now_words(&self) -> &'static str {
        self.now.map(Outcome::as_str).unwrap_or("absent")
    }
}

/// What the baseline says a command's tests must keep doing.
#[derive(Debug, Clone, Default)]
pub struct KnownGood<'a> {
    /// The command's tests at the baseline, id → outcome (`None`: it has no baseline,
    /// and regressions are not judged for it).
    pub baseline: Option<&'a BTreeMap<String, Outcome>>,
    /// Tests that tasks done since the baseline made pass.
    pub made_passing: BTreeSet<&'a str>,
    /// Patterns and ids of flaky tests: their failures are forgiven.
    pub flaky: Vec<&'a str>,
    /// Test files whose change a person approved: a test of one that is gone (deleted,
    /// renamed) is not held against the task. Ids that name their file (pytest's, the
    /// JavaScript runners', RSpec's: `file::…`) are matched.
    pub excused: Vec<&'a str>,
}

impl KnownGood<'_> {
    fn is_flaky(&self, id: &str) -> bool {
        self.flaky.iter().any(|p| *p == id || matches_id(p, id))
    }

    fn is_excused(&self, id: &str) -> bool {
        excused(&self.excused, id)
    }

    fn must_pass(&self, id: &str) -> bool {
        self.baseline
            .and_then(|b| b.get(id))
            .is_some_and(|o| *o == Outcome::Passed)
            || self.made_passing.contains(id)
    }
}

/// Whether test `id` is of a file in `excused` (files a person approved changing).
pub(crate) fn excused<S: AsRef<str>>(excused: &[S], id: &str) -> bool {
    let file = id.split("::").next().unwrap_or(id);
    excused.iter().any(|e| e.as_ref() == file)
}

/// How one command is judged.
#[derive(Debug, Clone)]
pub struct Expect<'a> {
    /// The task's named tests (empty: none).
    pub named: &'a [TestName],
    /// One of the task's own checks; otherwise a run-wide regression check.
    pub own: bool,
    /// A check of a task already landed, on a merged result: it keeps what passed
    /// (the baseline's and what tasks made pass), never more.
    pub landed: bool,
    pub known: KnownGood<'a>,
}

/// One command's verdict.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CommandVerdict {
    pub passed: bool,
    /// Why it did not pass, in one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The named tests this command reported.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub named: Vec<Seen>,
    /// Tests that passed before and do not now (PASS_TO_PASS).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub regressions: Vec<Seen>,
    /// Tests collected at the baseline and not now (that did not pass then either).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<Seen>,
    /// An own check without names: its tests that did not pass.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failing: Vec<Seen>,
    /// Regressions forgiven as flaky.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flaky: Vec<String>,
}

/// Judges one command's report (`exit_code`: how the command ended).
pub fn judge_command(report: &Report, exit_code: Option<i32>, e: &Expect) -> CommandVerdict {
    let now = report.map();
    let before = |id: &str| e.known.baseline.and_then(|b| b.get(id).copied());
    let seen = |id: &str| {
        let t = now.get(id);
        Seen {
            id: id.to_string(),
            before: before(id),
            now: t.map(|t| t.outcome),
            message: t.and_then(|t| t.message.clone()),
        }
    };
    let mut v = CommandVerdict::default();
    for t in &report.tests {
        if e.named.iter().any(|n| n.matches(&t.id)) {
            v.named.push(seen(&t.id));
        }
    }
    // PASS_TO_PASS: every test that must pass, reported passed.
    let mut must: BTreeSet<&str> = BTreeSet::new();
    if let Some(b) = e.known.baseline {
        must.extend(
            b.iter()
                .filter(|(_, o)| **o == Outcome::Passed)
                .map(|(id, _)| id.as_str()),
        );
    }
    for id in &e.known.made_passing {
        // Another command's test is not this one's to judge.
        if e.known.baseline.is_some_and(|b| b.contains_key(*id)) || now.contains_key(*id) {
            must.insert(id);
        }
    }
    for id in must {
        let ok = now.get(id).is_some_and(|t| t.outcome == Outcome::Passed);
        if ok || (!now.contains_key(id) && e.known.is_excused(id)) {
            continue;
        }
        if e.known.is_flaky(id) {
            v.flaky.push(id.to_string());
        } else {
            v.regressions.push(seen(id));
        }
    }
    // Collected at the baseline and gone (a test that did not pass then). A module
    // that did not import (a package that did not build) was one errored entry named
    // after it, one skipped at its top (`pytest.importorskip` of a module the task
    // adds) one skipped entry; once its tests are collected (`entry::…`), that entry is
    // not "gone".
    if let Some(b) = e.known.baseline {
        for (id, o) in b {
            if !now.contains_key(id.as_str())
                && *o != Outcome::Passed
                && !e.known.must_pass(id)
                && !e.known.is_excused(id)
                && (!matches!(o, Outcome::Errored | Outcome::Skipped)
                    || !collected_under(&report.tests, id))
            {
                v.dropped.push(seen(id));
            }
        }
    }
    // Its own selection is the task's: an own check without names, or a regression
    // check with no baseline to tell old failures from new ones (a run from before
    // baselines, a check a replan added), wants every test it reports passing.
    let whole =
        (e.own && e.named.is_empty()) || (!e.own && !e.landed && e.known.baseline.is_none());
    if whole {
        v.failing = report
            .tests
            .iter()
            .filter(|t| matches!(t.outcome, Outcome::Failed | Outcome::Errored))
            .filter(|t| !e.known.is_flaky(&t.id) || e.known.must_pass(&t.id))
            .map(|t| seen(&t.id))
            .collect();
    }
    let named_bad: Vec<&Seen> = v
        .named
        .iter()
        .filter(|s| s.now != Some(Outcome::Passed))
        .collect();
    v.reason = if !named_bad.is_empty() {
        Some(format!(
            "{} of the tests it must make pass {} not passing ({})",
            named_bad.len(),
            if named_bad.len() == 1 { "is" } else { "are" },
            list(&named_bad)
        ))
    } else if !v.regressions.is_empty() {
        Some(format!(
            "{} that passed before {} ({})",
            agentloop_ground::words::plural(v.regressions.len(), "test", "tests"),
            if v.regressions.len() == 1 {
                "fails now"
            } else {
                "fail now"
            },
            list(&v.regressions.iter().collect::<Vec<_>>())
        ))
    } else if !v.dropped.is_empty() {
        Some(format!(
            "{} collected at the baseline {} no longer run ({})",
            agentloop_ground::words::plural(v.dropped.len(), "test", "tests"),
            if v.dropped.len() == 1 { "is" } else { "are" },
            list(&v.dropped.iter().collect::<Vec<_>>())
        ))
    } else if !v.failing.is_empty() {
        Some(format!(
            "{} ({})",
            agentloop_ground::words::plural(v.failing.len(), "test fails", "tests fail"),
            list(&v.failing.iter().collect::<Vec<_>>())
        ))
    } else if report.tests.is_empty() {
        Some("its report has no tests".into())
    } else if whole && exit_code != Some(0) {
        Some(format!(
            "every test it reports passed, but it exited {}",
            exit_code
                .map(|c| c.to_string())
                .unwrap_or_else(|| "by a signal".into())
        ))
    } else {
        None
    };
    v.passed = v.reason.is_none();
    v
}

/// Whether some test reported now is one of `entry`'s (`entry::…`).
fn collected_under(tests: &[crate::report::TestResult], entry: &str) -> bool {
    let prefix = format!("{entry}::");
    tests.iter().any(|t| t.id.starts_with(&prefix))
}

/// `a, b, c and 4 more`.
fn list(seen: &[&Seen]) -> String {
    const SHOWN: usize = 3;
    let mut out = seen
        .iter()
        .take(SHOWN)
        .map(|s| format!("{}: {}", s.id, s.now_words()))
        .collect::<Vec<_>>()
        .join(", ");
    if seen.len() > SHOWN {
        out.push_str(&format!(" and {} more", seen.len() - SHOWN));
    }
    out
}

/// What a whole verification showed, over all its commands.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Judged {
    /// Each named test as last reported.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub named: Vec<Seen>,
    /// Names no report matched.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmatched: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub regressions: Vec<Seen>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<Seen>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failing: Vec<Seen>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flaky: Vec<String>,
}

impl Judged {
    /// Adds a command's verdict.
    pub fn add(&mut self, v: &CommandVerdict) {
        for s in &v.named {
            match self.named.iter_mut().find(|n| n.id == s.id) {
                // Reported by two commands: the worse stands.
                Some(n) => {
                    if worse(s.now, n.now) {
                        *n = s.clone();
                    }
                }
                None => self.named.push(s.clone()),
            }
        }
        extend_unique(&mut self.regressions, &v.regressions);
        extend_unique(&mut self.dropped, &v.dropped);
        extend_unique(&mut self.failing, &v.failing);
        for f in &v.flaky {
            if !self.flaky.contains(f) {
                self.flaky.push(f.clone());
            }
        }
    }

    /// Names that matched no reported test, after every command: `Some(reason)`.
    pub fn close(&mut self, names: &[TestName]) -> Option<String> {
        self.unmatched = names
            .iter()
            .filter(|n| !self.named.iter().any(|s| n.matches(&s.id)))
            .map(|n| n.pattern.clone())
            .collect();
        (!self.unmatched.is_empty()).then(|| {
            format!(
                "no report has the {} it must make pass: {}",
                if self.unmatched.len() == 1 {
                    "test"
                } else {
                    "tests"
                },
                self.unmatched.join(", ")
            )
        })
    }

    /// Named tests reported passed, of all named.
    pub fn named_passing(&self) -> (usize, usize) {
        let passing = self
            .named
            .iter()
            .filter(|s| s.now == Some(Outcome::Passed))
            .count();
        (passing, self.named.len() + self.unmatched.len())
    }

    /// What the next attempt is told: the named tests still failing with their own
    /// messages, the regressions, the tests that stopped running.
    pub fn digest(&self) -> Option<String> {
        let mut out = String::new();
        let bad: Vec<&Seen> = self
            .named
            .iter()
            .filter(|s| s.now != Some(Outcome::Passed))
            .collect();
        if !bad.is_empty() || !self.unmatched.is_empty() {
            let (passing, all) = self.named_passing();
            out.push_str(&format!(
                "The tests this task must make pass: {passing} of {all} pass.\n"
            ));
            for s in &bad {
                say(&mut out, s);
            }
            for u in &self.unmatched {
                out.push_str(&format!("- {u}: no test by that name ran\n"));
            }
        }
        if !self.regressions.is_empty() {
            out.push_str("Tests that passed before and fail now (PASS_TO_PASS):\n");
            for s in &self.regressions {
                say(&mut out, s);
            }
        }
        if !self.dropped.is_empty() {
            out.push_str("Tests that ran at the baseline and no longer run (deleted, renamed or deselected):\n");
            for s in &self.dropped {
                out.push_str(&format!("- {}\n", s.id));
            }
        }
        if !self.failing.is_empty() {
            out.push_str("Failing tests:\n");
            for s in &self.failing {
                say(&mut out, s);
            }
        }
        (!out.is_empty()).then(|| out.trim_end().to_string())
    }
}

/// Whether outcome `a` is worse than `b` (absent is worst).
fn worse(a: Option<Outcome>, b: Option<Outcome>) -> bool {
    match (a, b) {
        (None, Some(_)) => true,
        (Some(a), Some(b)) => a.worst(b) == a && a != b,
        _ => false,
    }
}

fn extend_unique(into: &mut Vec<Seen>, more: &[Seen]) {
    for s in more {
        if !into.iter().any(|x| x.id == s.id) {
            into.push(s.clone());
        }
    }
}

/// One test's line in a digest, with the start of its own failure message.
fn say(out: &mut String, s: &Seen) {
    out.push_str(&format!("- {}: {}", s.id, s.now_words()));
    if let Some(b) = s.before {
        out.push_str(&format!(" (at the baseline: {b})"));
    }
    out.push('\n');
    if let Some(m) = s
        .message
        .as_deref()
        .map(str::trim)
        .filter(|m| !m.is_empty())
    {
        let lines: Vec<&str> = m.lines().take(12).collect();
        out.push_str("  ```\n");
        for l in lines {
            out.push_str("  ");
            out.push_str(l);
            out.push('\n');
        }
        out.push_str("  ```\n");
    }
}

#[cfg(test)]
mod tests;
