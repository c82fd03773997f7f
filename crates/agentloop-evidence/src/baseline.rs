//! The run's test baseline: what each check reported, test by test, on the tree as it
//! was before any agent worked (`tests_baseline` in the journal), and what a
//! verification must clear against it ([`Expected`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::judge::{Expect, KnownGood};
use crate::learned::ProjectModel;
use crate::names::TestName;
use crate::report::{Counts, Outcome};

/// Every check of the run, run once on the baseline tree.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TestsBaseline {
    /// The tree the checks ran on (git's id), when it is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<String>,
    pub commands: Vec<BaselineCommand>,
    /// Why there is no baseline to judge against, when there is none (no clean copy
    /// could be made, …): regressions are then not judged, and that is said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
    /// It came from the cache of an earlier run on the same tree.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
    /// Files the checks read at the baseline that join the verification surface (a
    /// script a check calls, a module its tests import outside every task's scope),
    /// with their content on the baseline tree.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub traced: BTreeMap<String, TracedFile>,
    /// Why the trace of what the checks read may have missed files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_incomplete: Option<String>,
    /// What the checks would load or run if it were there, learned at the baseline:
    /// a file the agent adds that matches is kept out of the judge's copy.
    #[serde(default, skip_serializing_if = "WouldLoad::is_empty")]
    pub would_load: WouldLoad,
    /// What each file the checks touched is to them, learned at the baseline from the
    /// runners' reports and the trace (see [`crate::learned`]).
    #[serde(default, skip_serializing_if = "ProjectModel::is_empty")]
    pub model: ProjectModel,
}

/// Paths the baseline's checks would load or run that its tree does not hold yet,
/// each with who would load it: what a check's harness names (`scripts/extra.sh`
/// behind a `[ -f … ]`, `checks.d/*.sh` sourced in a loop), and the test files'
/// names the runners collected beyond the usual ones (`checks/*_cases.py`). Patterns
/// may hold `*` within a path segment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WouldLoad {
    /// Pattern → the check or script that names it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub named: BTreeMap<String, String>,
    /// Pattern → the check whose runner collected files named so.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tests: BTreeMap<String, String>,
    /// The Python modules the checks' interpreters took from outside the tree, or
    /// looked for there, by name: a new module so named would be loaded in their place.
    #[serde(default, skip_serializing_if = "Shadowable::is_empty")]
    pub modules: Shadowable,
}

impl WouldLoad {
    pub fn is_empty(&self) -> bool {
        self.named.is_empty() && self.tests.is_empty() && self.modules.is_empty()
    }
}

/// What a new top-level Python module of the tree would stand in for, learned from
/// what a check's interpreter resolved at the test baseline (its report's
/// [`PythonNames`](crate::PythonNames)): beyond the names every Python check imports,
/// which `agentloop_project`'s `shadow` knows without asking.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Shadowable {
    /// A top-level name the interpreter imported from outside the tree, or looked for
    /// from code outside it and did not find → how.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub names: BTreeMap<String, LearnedName>,
    /// The tree's directories on the interpreter's path (`""` the root, `tests`
    /// where pytest put a test directory first).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub dirs: BTreeSet<String>,
}

/// How the baseline's interpreter came by a top-level name, and from where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LearnedName {
    pub how: How,
    /// The module's file (a namespace package's first folder), or the file of the code
    /// that looked for it; empty where there is none or it is not known.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub from: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum How {
    /// Imported from a file outside the tree.
    Imported,
    /// Imported as a namespace package: a folder of the tree by its name joins it,
    /// ahead of the installed portions.
    Namespace,
    /// Built into the interpreter.
    BuiltIn,
    /// Looked for, and no finder found it.
    LookedFor,
}

impl LearnedName {
    /// Whether a folder of the tree by the name, with no `__init__` (a namespace
    /// package), would be taken for it: only where nothing else answers the name.
    pub fn taken_by_a_folder(&self) -> bool {
        matches!(self.how, How::Namespace | How::LookedFor)
    }
}

impl std::fmt::Display for LearnedName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let from = &self.from;
        match self.how {
            How::Imported => write!(f, "imported from {from}"),
            How::Namespace => write!(f, "a namespace package imported from {from}"),
            How::BuiltIn => write!(f, "built into the interpreter"),
            How::LookedFor if from.is_empty() => write!(f, "looked for and not found"),
            How::LookedFor => write!(f, "looked for by {from}"),
        }
    }
}

impl Shadowable {
    pub fn is_empty(&self) -> bool {
        self.names.is_empty() && self.dirs.is_empty()
    }

    /// Both together (the first's reason kept for a name both hold).
    pub fn join(&mut self, other: &Shadowable) {
        for (name, how) in &other.names {
            self.names
                .entry(name.clone())
                .or_insert_with(|| how.clone());
        }
        self.dirs.extend(other.dirs.iter().cloned());
    }
}

/// A file a check read at the baseline, as the surface records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TracedFile {
    pub blob: String,
    pub mode: u32,
    pub why: String,
}

/// One check at the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineCommand {
    pub command: String,
    /// The runner whose report it read (`pytest`, `junit ($AGENTLOOP_TEST_REPORT)`);
    /// none: exit code only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Why its report could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// Every test it reported, id → outcome.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tests: BTreeMap<String, Outcome>,
    /// The files of the tree it opened while it ran (traced on the clean copy).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read: Vec<String>,
    /// How long its run took, in milliseconds (none: read from another check's run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// What a new Python module would stand in for in its run (see [`Shadowable`]).
    #[serde(default, skip_serializing_if = "Shadowable::is_empty")]
    pub shadowable: Shadowable,
}

impl BaselineCommand {
    /// Each outcome's count among its tests.
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for o in self.tests.values() {
            c.add(*o);
        }
        c
    }
}

impl TestsBaseline {
    pub fn command(&self, command: &str) -> Option<&BaselineCommand> {
        self.commands.iter().find(|c| c.command == command)
    }

    /// Every test of every check (an id in two checks: its worse outcome).
    pub fn all_tests(&self) -> BTreeMap<&str, Outcome> {
        let mut out: BTreeMap<&str, Outcome> = BTreeMap::new();
        for c in &self.commands {
            for (id, o) in &c.tests {
                out.entry(id.as_str())
                    .and_modify(|was| *was = was.worst(*o))
                    .or_insert(*o);
            }
        }
        out
    }

    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for o in self.all_tests().values() {
            c.add(*o);
        }
        c
    }

    /// Whether any check gave per-test evidence.
    pub fn has_tests(&self) -> bool {
        self.commands.iter().any(|c| !c.tests.is_empty())
    }

    /// `42 tests, 6 failing at baseline`; or why there are none.
    pub fn words(&self) -> String {
        if let Some(why) = &self.unavailable {
            return format!("no test baseline: {why}");
        }
        if !self.has_tests() {
            return "no per-test evidence (exit codes only)".into();
        }
        let c = self.counts();
        let failing = c.failed + c.errored;
        format!(
            "{}, {failing} failing at baseline",
            agentloop_ground::words::plural(c.total() as usize, "test", "tests")
        )
    }
}

/// What a verification must show, per check: the task's names, the baseline, the
/// tests tasks done since made pass, the flaky ones.
#[derive(Debug, Clone, Default)]
pub struct Expected {
    pub named: Vec<TestName>,
    pub baseline: Option<Arc<TestsBaseline>>,
    pub made_passing: BTreeSet<String>,
    pub flaky: Vec<String>,
    /// The task's own checks; any other is a run-wide regression check.
    pub own: Vec<String>,
    /// Run-wide checks judged test by test (`[verify] regression = "per-test"`);
    /// otherwise by their exit code.
    pub per_test_regression: bool,
    /// Test files whose change a person approved (see [`KnownGood::excused`]).
    pub excused: Vec<String>,
    /// On a merge queue's merged result: what the tasks already landed want kept.
    pub landed: Landed,
}

/// What the tasks already landed on the integration branch want kept, on a merged
/// result the merge queue checks: their checks run beside the batch's, judged test by
/// test, and every test they made pass must be reported passing by one of them.
#[derive(Debug, Clone, Default)]
pub struct Landed {
    /// Their checks (beside the batch's own).
    pub commands: Vec<String>,
    /// Their held-out checks' names (`Holdout:`), run again on the merged result.
    pub held_out: Vec<String>,
    /// Each test they made pass → the task that did.
    pub tests: BTreeMap<String, String>,
}

impl Expected {
    /// Whether `command`'s report decides it (rather than its exit code).
    pub fn judged_by_tests(&self, command: &str) -> bool {
        self.per_test_regression
            || self.own.iter().any(|c| c == command)
            || self.landed.commands.iter().any(|c| c == command)
    }

    /// The tests landed tasks made pass that no check reported (`reported`: every id
    /// any report had), with the task that made each pass; a test of a file a person
    /// approved changing is not missed.
    pub fn missing_landed<'a>(
        &'a self,
        reported: &std::collections::BTreeSet<String>,
    ) -> Vec<(&'a str, &'a str)> {
        self.landed
            .tests
            .iter()
            .filter(|(id, _)| !reported.contains(*id))
            .filter(|(id, _)| !crate::judge::excused(&self.excused, id))
            .map(|(id, task)| (id.as_str(), task.as_str()))
            .collect()
    }

    /// Whether `command` ran to its end at the baseline (exit 0) without writing a
    /// report: a check that does not report, so a report from it later was written by
    /// something else. (One that failed there may not have got as far as its tests:
    /// a build that fails until the work is done.)
    pub fn silent_at_baseline(&self, command: &str) -> bool {
        self.baseline
            .as_deref()
            .and_then(|b| b.command(command))
            .is_some_and(|b| b.runner.is_none() && b.exit_code == Some(0))
    }

    /// How `command` reported at the baseline (`tap (its output)`, `junit
    /// ($AGENTLOOP_TEST_REPORT)`), when it did.
    pub fn reported_at_baseline(&self, command: &str) -> Option<&str> {
        self.baseline
            .as_deref()
            .and_then(|b| b.command(command))
            .and_then(|b| b.runner.as_deref())
    }

    /// How `command` is judged.
    pub fn expect(&self, command: &str) -> Expect<'_> {
        // A named test may be in any check's report (a task without a `Verify:` of its
        // own is judged by the run's checks).
        Expect {
            named: &self.named,
            own: self.own.iter().any(|c| c == command),
            landed: self.landed.commands.iter().any(|c| c == command),
            known: KnownGood {
                baseline: self
                    .baseline
                    .as_deref()
                    .and_then(|b| b.command(command))
                    // A check that gave no report at the baseline has no tests to
                    // compare with.
                    .filter(|c| c.problem.is_none() && c.runner.is_some())
                    .map(|c| &c.tests),
                made_passing: self.made_passing.iter().map(String::as_str).collect(),
                flaky: self.flaky.iter().map(String::as_str).collect(),
                excused: self.excused.iter().map(String::as_str).collect(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_baseline_says_how_many_tests_and_how_many_fail() {
        let b = TestsBaseline {
            tree: None,
            commands: vec![
                BaselineCommand {
                    command: "pytest".into(),
                    runner: Some("pytest".into()),
                    exit_code: Some(1),
                    problem: None,
                    tests: [
                        ("a", Outcome::Passed),
                        ("b", Outcome::Failed),
                        ("c", Outcome::Errored),
                    ]
                    .into_iter()
                    .map(|(i, o)| (i.to_string(), o))
                    .collect(),
                    read: Vec::new(),
                    duration_ms: None,
                    shadowable: Default::default(),
                },
                BaselineCommand {
                    command: "make lint".into(),
                    runner: None,
                    exit_code: Some(0),
                    problem: None,
                    tests: BTreeMap::new(),
                    read: Vec::new(),
                    duration_ms: None,
                    shadowable: Default::default(),
                },
            ],
            unavailable: None,
            cached: false,
            ..Default::default()
        };
        assert_eq!(b.words(), "3 tests, 2 failing at baseline");
        let e = Expected {
            own: vec!["pytest".into()],
            baseline: Some(Arc::new(b)),
            ..Default::default()
        };
        assert!(e.expect("pytest").known.baseline.is_some());
        assert!(
            e.expect("make lint").known.baseline.is_none(),
            "exit code only then"
        );
        assert!(!e.judged_by_tests("make lint"));
    }

    #[test]
    fn a_landed_test_no_report_has_is_missed_unless_its_file_was_approved() {
        let mut e = Expected::default();
        e.landed.tests.insert("tests/a.py::t1".into(), "T1".into());
        e.landed.tests.insert("tests/b.py::t2".into(), "T2".into());
        let reported: std::collections::BTreeSet<String> =
            ["tests/a.py::t1".to_string()].into_iter().collect();
        assert_eq!(e.missing_landed(&reported), vec![("tests/b.py::t2", "T2")]);
        e.excused.push("tests/b.py".into());
        assert!(e.missing_landed(&reported).is_empty());
    }
}
