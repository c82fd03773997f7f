//! The project as its checks showed it at the test baseline: for each file of the
//! tree a check touched, what it is to them — learned from the runners' reports and
//! the trace of what each check opened (`agentloop_project::learned` learns it; the
//! surface and `status` read it).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// Why a file of [`ProjectModel::not_tests`] is no test of the checks.
pub const NOT_A_TEST: &str = "named like a test, but no check collected or opened it";

/// What a file is to the checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The runner collected it as a test (its own report says so).
    Test,
    /// The runner's configuration, which it loaded (`conftest.py`, `jest.config.js`).
    Config,
    /// Loaded by name from the runner's configuration or the check's command: a
    /// pytest plugin (`pytest_plugins`, `-p`), a Jest setup file or module mapping, a
    /// Mocha `--require`.
    Plugin,
    /// A program or script a check ran.
    Program,
    /// Code the tests load that lives with them (a helper under `tests/`), not
    /// collected as a test itself.
    Support,
    /// Code the tests import that is the project's own: the work.
    Work,
    /// Any other file a check read (data, a fixture outside the tests).
    Data,
}

/// One file of the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LearnedFile {
    pub role: Role,
    /// The check that showed it (the first, where several did).
    pub by: String,
    /// How it was learned (`collected by pytest`, `loaded by name from conftest.py`).
    pub how: String,
}

/// What the checks showed of the project at the test baseline.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProjectModel {
    /// Path → what it is to the checks. A file no check touched is not here.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, LearnedFile>,
    /// Why names still stand in for what the model cannot say (a check whose runner
    /// gave no report, a trace in part); empty: the model covers every check.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names_stand_in: Vec<String>,
    /// Files named like a test (`test_release.py`, `x.spec.js`) that no check
    /// collected or opened ([`NOT_A_TEST`]): the surface does not hold them. Only
    /// learned where the trace is whole.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub not_tests: BTreeSet<String>,
}

impl ProjectModel {
    pub fn is_empty(&self) -> bool {
        self.files.is_empty() && self.names_stand_in.is_empty() && self.not_tests.is_empty()
    }

    /// How many files each role holds, in the roles' order.
    pub fn counts(&self) -> BTreeMap<Role, usize> {
        let mut out = BTreeMap::new();
        for f in self.files.values() {
            *out.entry(f.role).or_default() += 1;
        }
        out
    }

    /// `4 tests, 2 runner configurations, 1 plugin, 3 files of the work`.
    pub fn words(&self) -> String {
        let counts = self.counts();
        if counts.is_empty() {
            return "no file of the tree".into();
        }
        counts
            .iter()
            .map(|(role, n)| {
                let (one, many) = match role {
                    Role::Test => ("test", "tests"),
                    Role::Config => ("runner configuration", "runner configurations"),
                    Role::Plugin => ("plugin", "plugins"),
                    Role::Program => ("program", "programs"),
                    Role::Support => ("file of test support", "files of test support"),
                    Role::Work => ("file of the work", "files of the work"),
                    Role::Data => ("data file", "data files"),
                };
                format!("{n} {}", if *n == 1 { one } else { many })
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}
