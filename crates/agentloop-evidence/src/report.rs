//! A runner's report, read: how each test ended (`Outcome`, `TestResult`), in which
//! format it came (`Format`), the counts, and reading one from where it was written.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The most a report may weigh before it is refused (a runner writing without end is
/// not evidence).
pub const MAX_REPORT_BYTES: u64 = 256 * 1024 * 1024;
/// The most of a failure message kept per test.
const MESSAGE_BYTES: usize = 2048;

/// How one test ended, as its runner reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Passed,
    /// Expected to fail, and failed (pytest's xfail, a pending spec): not a pass.
    Xfail,
    Skipped,
    Failed,
    /// It could not run to an assertion (an error in set-up, collection, a crash).
    Errored,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Xfail => "xfail",
            Outcome::Skipped => "skipped",
            Outcome::Failed => "failed",
            Outcome::Errored => "errored",
        }
    }

    /// How bad, for an id reported twice: the worse outcome stands.
    fn badness(self) -> u8 {
        match self {
            Outcome::Passed => 0,
            Outcome::Xfail => 1,
            Outcome::Skipped => 2,
            Outcome::Failed => 3,
            Outcome::Errored => 4,
        }
    }

    /// The worse of two outcomes.
    pub fn worst(self, other: Outcome) -> Outcome {
        if other.badness() > self.badness() {
            other
        } else {
            self
        }
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One test in a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    pub id: String,
    pub outcome: Outcome,
    #[serde(default)]
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// How a report reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// JUnit XML: one file, or a directory of them (Surefire, Gradle).
    Junit,
    /// pytest's JUnit XML (`-o junit_family=xunit1`): ids rebuilt as pytest's node ids.
    PytestJunit,
    /// agentloop's own pytest plugin's report: node ids, each phase's outcome.
    PytestJson,
    /// `go test -json` events.
    GoJson,
    /// libtest's per-test lines (`test a::b ... ok`) or its JSON events.
    Libtest,
    /// Jest's and Vitest's `--json` result.
    JestJson,
    /// Mocha's `json` reporter.
    MochaJson,
    /// RSpec's `json` formatter.
    RspecJson,
    /// The Test Anything Protocol, as a check prints it or writes it.
    Tap,
}

/// A report read: every test once (an id reported more than once keeps its worst
/// outcome, and says so in `notes`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub tests: Vec<TestResult>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// What a Python runner's interpreter resolved by a top-level name, where its
    /// report says (agentloop's pytest plugin).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<PythonNames>,
}

/// What one Python process resolved by a top-level module name while a check ran:
/// at the test baseline, which new module of the judged tree would stand in for one
/// the runner, its plugins or the libraries load. Paths are absolute, as the check saw
/// them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PythonNames {
    /// Each top-level module it imported → the file it came from (empty: built in or
    /// frozen).
    #[serde(default)]
    pub imported: BTreeMap<String, String>,
    /// Each top-level name something looked for that no finder found → the file of the
    /// code that looked (empty: unknown).
    #[serde(default)]
    pub missing: BTreeMap<String, String>,
    /// `sys.path` at the end.
    #[serde(default)]
    pub path: Vec<String>,
}

impl Report {
    /// The tests, each id once, in the order first seen.
    pub fn from_tests(tests: impl IntoIterator<Item = TestResult>) -> Report {
        let mut at: BTreeMap<String, usize> = BTreeMap::new();
        let mut out: Vec<TestResult> = Vec::new();
        let mut seen_twice: BTreeMap<String, u32> = BTreeMap::new();
        for mut t in tests {
            if let Some(m) = &mut t.message {
                clip(m);
            }
            match at.get(&t.id) {
                Some(&i) => {
                    *seen_twice.entry(t.id.clone()).or_insert(1) += 1;
                    let kept = &mut out[i];
                    if t.outcome.badness() > kept.outcome.badness() {
                        kept.outcome = t.outcome;
                        kept.message = t.message;
                    }
                    kept.duration_ms += t.duration_ms;
                }
                None => {
                    at.insert(t.id.clone(), out.len());
                    out.push(t);
                }
            }
        }
        let notes = seen_twice
            .into_iter()
            .map(|(id, n)| format!("`{id}` was reported {n} times: its worst outcome stands"))
            .collect();
        Report {
            tests: out,
            notes,
            python: None,
        }
    }

    /// Each outcome's count.
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for t in &self.tests {
            c.add(t.outcome);
        }
        c
    }

    pub fn map(&self) -> BTreeMap<&str, &TestResult> {
        self.tests.iter().map(|t| (t.id.as_str(), t)).collect()
    }
}

/// How many tests ended each way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    #[serde(default)]
    pub passed: u32,
    #[serde(default)]
    pub failed: u32,
    #[serde(default)]
    pub errored: u32,
    #[serde(default)]
    pub skipped: u32,
    #[serde(default)]
    pub xfail: u32,
}

impl Counts {
    pub fn add(&mut self, o: Outcome) {
        match o {
            Outcome::Passed => self.passed += 1,
            Outcome::Failed => self.failed += 1,
            Outcome::Errored => self.errored += 1,
            Outcome::Skipped => self.skipped += 1,
            Outcome::Xfail => self.xfail += 1,
        }
    }

    pub fn total(&self) -> u32 {
        self.passed + self.failed + self.errored + self.skipped + self.xfail
    }

    /// `12 tests: 9 passed, 2 failed, 1 skipped`.
    pub fn words(&self) -> String {
        let mut parts = vec![format!("{} passed", self.passed)];
        for (n, w) in [
            (self.failed, "failed"),
            (self.errored, "errored"),
            (self.skipped, "skipped"),
            (self.xfail, "xfail"),
        ] {
            if n > 0 {
                parts.push(format!("{n} {w}"));
            }
        }
        format!(
            "{}: {}",
            agentloop_ground::words::plural(self.total() as usize, "test", "tests"),
            parts.join(", ")
        )
    }
}

/// What one check's report showed, as the journal keeps it (the tests themselves are
/// in the iteration's `tests.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandTests {
    /// The runner whose report was read (`pytest`, `junit ($AGENTLOOP_TEST_REPORT)`).
    pub runner: String,
    #[serde(default)]
    pub counts: Counts,
    /// Why there is no report to read: never a pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// Why the report does not clear the check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The report decided the check (a run-wide check with `regression =
    /// "exit-code"` is decided by its exit code; its report is only shown).
    #[serde(default)]
    pub judged: bool,
    /// The check whose run its tests were read from, when it was not run itself: its
    /// tests are a part of that check's, on the same tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_from: Option<String>,
}

impl CommandTests {
    /// `pytest: 3 tests: 3 passed`, and where its tests were read from when it was
    /// not run itself.
    pub fn shown(&self) -> String {
        format!(
            "{}: {}{}",
            self.runner,
            self.counts.words(),
            self.read_from
                .as_ref()
                .map(|w| format!(", read from `{w}`'s run (not run itself)"))
                .unwrap_or_default()
        )
    }
}

/// Why a report could not be read: never a pass.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReportError {
    #[error("the runner wrote no report (at {0})")]
    Missing(String),
    #[error("the report at {path} cannot be read: {why}")]
    Unreadable { path: String, why: String },
    #[error("the report at {0} is larger than {MAX_REPORT_BYTES} bytes")]
    TooLarge(String),
}

/// A message cut to what a digest can quote, on a character boundary.
fn clip(m: &mut String) {
    let trimmed = m.trim();
    if trimmed.len() != m.len() {
        *m = trimmed.to_string();
    }
    if m.len() > MESSAGE_BYTES {
        let mut cut = MESSAGE_BYTES;
        while !m.is_char_boundary(cut) {
            cut -= 1;
        }
        m.truncate(cut);
        m.push('…');
    }
}

/// A path a report gives (absolute, or relative to where the runner ran) relative to
/// `workdir`.
pub(crate) fn relative(path: &str, workdir: &Path) -> String {
    let p = Path::new(path);
    if let Ok(r) = p.strip_prefix(workdir) {
        return r.to_string_lossy().into_owned();
    }
    // The copy may be reached through a symlink (`/tmp` → `/private/tmp`).
    if let Ok(real) = workdir.canonicalize()
        && let Ok(r) = p.strip_prefix(&real)
    {
        return r.to_string_lossy().into_owned();
    }
    path.trim_start_matches("./").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(id: &str, o: Outcome) -> TestResult {
        TestResult {
            id: id.into(),
            outcome: o,
            duration_ms: 1,
            message: None,
        }
    }

    #[test]
    fn an_id_reported_twice_keeps_its_worst_outcome_and_says_so() {
        let r = Report::from_tests([
            t("a", Outcome::Passed),
            t("b", Outcome::Passed),
            t("a", Outcome::Failed),
            t("a", Outcome::Passed),
        ]);
        assert_eq!(r.tests.len(), 2);
        assert_eq!(r.tests[0].outcome, Outcome::Failed);
        assert_eq!(
            r.notes,
            ["`a` was reported 3 times: its worst outcome stands"]
        );
        assert_eq!(r.counts().words(), "2 tests: 1 passed, 1 failed");
    }

    #[test]
    fn paths_are_made_relative_to_where_the_check_ran() {
        let dir = tempfile::tempdir().unwrap();
        let abs = dir.path().join("tests/a.test.js");
        assert_eq!(
            relative(&abs.to_string_lossy(), dir.path()),
            "tests/a.test.js"
        );
        assert_eq!(relative("./tests/b.js", dir.path()), "tests/b.js");
    }
}
