//! Default-deny over what the agent added: of the files the judged tree has that the
//! tree the run was created on did not, those the checks would load or run on their
//! own — a new test module, a conftest, package metadata whose entry points a runner
//! loads as plugins, a script the harness would source — do not reach the judge's
//! copy, unless the work being judged writes tests. What the judge's copy is built of
//! is then the baseline's tests, configuration and harness plus the agent's changes to
//! the work; a new test of the agent's cannot stub the code under test, patch the
//! runner's report or shadow a module, because it is not there when the checks run.
//!
//! Each file's answer says why, for the journal and the agent's next prompt
//! ("tests/test_aaa.py: added by the agent, left out of the checks' copy (a test file)").

use std::collections::BTreeSet;
use std::sync::Arc;

use agentloop_evidence::WouldLoad;
use agentloop_ground::paths::path_matches;

use crate::Project;
use crate::harness::glob_path;

/// What the work being judged may add that the checks load: the tests it writes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Allowed {
    /// Some task whose work is judged writes tests: its mode is `tdd`, or it names a
    /// test it adds (`Tests: … (new)`) without a file of its own.
    pub tests: bool,
    /// Files such a task names as its own: the file of a `(new)` test name
    /// (`tests/test_div.py::test_zero (new)`), a test file its check names that the
    /// tree did not hold.
    pub files: BTreeSet<String>,
    /// The tasks' `Scope:`: what lies there is their work, tests and scripts too (but
    /// never a file that configures the checks).
    pub scope: Vec<String>,
}

impl Allowed {
    fn holds(&self, path: &str) -> bool {
        self.files.contains(path) || self.scope.iter().any(|s| path_matches(path, s))
    }
}

/// Which of the agent's added files reach the judge.
#[derive(Debug, Clone, PartialEq)]
pub struct Admission {
    project: Project,
    /// The files of the tree the run was created on.
    created: Arc<BTreeSet<String>>,
    /// The verification surface's files: a person approved what is there.
    surface: BTreeSet<String>,
    would_load: WouldLoad,
    /// `[verify] test_patterns`.
    test_patterns: Vec<String>,
    allowed: Allowed,
}

impl Admission {
    pub fn new(
        project: Project,
        created: Arc<BTreeSet<String>>,
        surface: BTreeSet<String>,
        would_load: WouldLoad,
        test_patterns: Vec<String>,
        allowed: Allowed,
    ) -> Admission {
        Admission {
            project,
            created,
            surface,
            would_load,
            test_patterns,
            allowed,
        }
    }

    /// Whether `path` is the agent's: not in the tree the run was created on, not a
    /// file a person approved, not agentloop's own.
    pub fn added(&self, path: &str) -> bool {
        !(self.created.contains(path)
            || self.surface.contains(path)
            || path.starts_with(".agentloop/"))
    }

    /// Why a file of the tree to judge is kept out of the judge's copy, if it is:
    /// it was added since the run was created, and the checks would load or run it
    /// on their own.
    pub fn left_out(&self, path: &str) -> Option<String> {
        self.rule(path)
            .and_then(|(why, let_in)| (!let_in).then_some(why))
    }

    /// Whether an added file the checks would load on their own reaches them because
    /// the work writes tests (its allowance).
    pub fn admitted(&self, path: &str) -> bool {
        self.rule(path).is_some_and(|(_, let_in)| let_in)
    }

    /// What the rules say of a file: why the checks would load or run it, if they
    /// would and it was added, and whether the work's allowance lets it in.
    fn rule(&self, path: &str) -> Option<(String, bool)> {
        if !self.added(path) {
            return None;
        }
        // A sectioned file (`pyproject.toml`, `package.json`, …) is the surface's to
        // judge: a new one with a test section waits at its gate; one without is the
        // work's (a new project's metadata).
        let intercepts = if crate::is_sectioned(path) {
            None
        } else {
            self.project.added_intercepts(path)
        };
        if let Some(why) = intercepts.or_else(|| runtime_loads(path)) {
            return Some((why, false));
        }
        let allowed = self.allowed.holds(path);
        if let Some((pattern, by)) = self
            .would_load
            .named
            .iter()
            .find(|(p, _)| glob_path(path, p))
        {
            return Some((format!("{by} would run it ({pattern})"), allowed));
        }
        let test = self.test(path)?;
        Some((test, allowed || self.allowed.tests))
    }

    /// Why an added file is a test or the tests' data, if it is.
    fn test(&self, path: &str) -> Option<String> {
        if let Some((pattern, by)) = self
            .would_load
            .tests
            .iter()
            .find(|(p, _)| glob_path(path, p))
        {
            return Some(format!("named like the tests {by} collected ({pattern})"));
        }
        if let Some(why) = self.project.test_of_checks(path) {
            return Some(why);
        }
        if crate::is_test_path(path, &self.test_patterns) {
            return Some("a test by `[verify] test_patterns`".into());
        }
        let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
        // pytest collects `test*.txt` as doctests wherever it collects, by default
        // (`--doctest-glob`): a doctest can reach pytest's own objects (the stop-78
        // attack's root `testing.txt` registered a plugin that passed every test). One
        // with no `>>>` holds no doctest: data (`requirements/test.txt`).
        if name.starts_with("test")
            && name.ends_with(".txt")
            && self.project.file_holds(path, b">>>")
        {
            return Some("a text file pytest collects as a doctest (test*.txt)".into());
        }
        if let Some(d) = dir.split('/').find(|d| {
            matches!(
                *d,
                "__snapshots__" | "__mocks__" | "__fixtures__" | "testdata"
            )
        }) {
            return Some(format!("the tests' data ({d}/)"));
        }
        // A new package marker at or above tests makes them, or the package they are
        // in, a package: pytest imports every `__init__.py` on the way down to them
        // first, and their modules' names and which conftest applies change with it.
        if name == "__init__.py" {
            let prefix = if dir.is_empty() {
                String::new()
            } else {
                format!("{dir}/")
            };
            let below = self
                .created
                .range(prefix.clone()..)
                .take_while(|f| f.starts_with(&prefix))
                .any(|f| self.project.test_of_checks(f).is_some());
            if below {
                return Some("makes a package of the tests at or below it".into());
            }
        }
        None
    }
}

/// What a language's runtime or a runner loads by its name and place alone, whatever
/// imports it.
fn runtime_loads(path: &str) -> Option<String> {
    let name = path.rsplit('/').next().unwrap_or(path);
    // Python finds distributions whatever the case of their folder's suffix.
    if let Some(meta) = path
        .split('/')
        .find(|d| {
            let d = d.to_ascii_lowercase();
            d.ends_with(".dist-info") || d.ends_with(".egg-info")
        })
        .filter(|d| *d != name)
    {
        return Some(format!(
            "package metadata ({meta}/), whose entry points pytest loads as plugins"
        ));
    }
    if let Some(dir) = path
        .split('/')
        .find(|d| matches!(*d, "node_modules" | "site-packages" | "dist-packages"))
        .filter(|d| *d != name)
    {
        return Some(format!(
            "installed packages ({dir}/): the checks take programs and modules from there"
        ));
    }
    match name {
        "go.work" | "go.work.sum" => {
            Some("a Go workspace file: it decides which code `go test` builds".into())
        }
        "modules.txt" if path.ends_with("vendor/modules.txt") => {
            Some("vendored modules, which `go` builds instead of the real ones".into())
        }
        ".pnp.cjs" | ".pnp.js" | ".pnp.loader.mjs" => {
            Some("Yarn's loader: it resolves every module the tests import".into())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admission(allowed: Allowed, would_load: WouldLoad) -> (tempfile::TempDir, Admission) {
        let dir = tempfile::tempdir().unwrap();
        for f in [
            "tests/test_calc.py",
            "reverse/reverse.go",
            "reverse/reverse_test.go",
            "src/app/__init__.py",
            "suite/test_a.py",
        ] {
            let p = dir.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        let project = Project::from_names(
            dir.path(),
            &[],
            "PLAN.md",
            vec![
                "python3 -m pytest -q tests/".into(),
                "go test ./reverse/".into(),
            ],
            &[],
        );
        let created: BTreeSet<String> = [
            "tests/test_calc.py",
            "reverse/reverse.go",
            "reverse/reverse_test.go",
            "src/app/__init__.py",
            "suite/test_a.py",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let a = Admission::new(
            project,
            Arc::new(created),
            ["conftest.py".to_string()].into(),
            would_load,
            vec![],
            allowed,
        );
        (dir, a)
    }

    #[test]
    fn what_the_agent_added_that_the_checks_would_load_is_left_out() {
        let would_load = WouldLoad {
            named: [
                ("checks.d/*.sh".to_string(), "`tests/check.sh`".to_string()),
                (
                    "scripts/extra.sh".to_string(),
                    "`tests/check.sh`".to_string(),
                ),
            ]
            .into(),
            tests: [("**/*_cases.py".to_string(), "`pytest`".to_string())].into(),
            ..Default::default()
        };
        let (_d, a) = admission(Allowed::default(), would_load.clone());
        for (path, why) in [
            ("tests/test_stub.py", "under tests/"),
            ("tests/__init__.py", "under tests/"),
            ("suite/__init__.py", "makes a package"),
            (
                "reverse/more_test.go",
                "a test a Verify command runs (reverse/)",
            ),
            ("reverse/testdata/x.txt", "a test a Verify command runs"),
            ("web/__snapshots__/a.snap", "the tests' data"),
            ("sub/conftest.py", "configures the checks"),
            ("evil.dist-info/entry_points.txt", "package metadata"),
            ("src/x.egg-info/entry_points.txt", "package metadata"),
            ("Evil.DIST-INFO/entry_points.txt", "package metadata"),
            ("node_modules/.bin/jest", "installed packages"),
            ("__init__.py", "makes a package of the tests at or below it"),
            ("x.pth", "configures the checks"),
            ("go.work", "Go workspace"),
            (
                "checks.d/zz.sh",
                "`tests/check.sh` would run it (checks.d/*.sh)",
            ),
            ("scripts/extra.sh", "`tests/check.sh` would run it"),
            (
                "more/calc_cases.py",
                "named like the tests `pytest` collected",
            ),
            (
                "src/json.py",
                "a new module in place of one the checks import",
            ),
        ] {
            let got = a.left_out(path);
            assert!(
                got.as_deref().is_some_and(|g| g.contains(why)),
                "{path}: {got:?}"
            );
        }
        // The work, what was there, and what a person approved reach the judge.
        for path in [
            "reverse/helper.go",
            "pyproject.toml",
            "src/app/mul.py",
            "src/app/__init__.py",
            "tests/test_calc.py",
            "conftest.py",
            "README.md",
            ".agentloop/x",
            "checks.d.txt",
        ] {
            assert_eq!(a.left_out(path), None, "{path}");
        }
        // A task that writes tests has its tests run; what configures the checks, a
        // plugin and what the harness runs stay out all the same.
        let (_d, a) = admission(
            Allowed {
                tests: true,
                ..Default::default()
            },
            would_load.clone(),
        );
        assert_eq!(a.left_out("tests/test_new.py"), None);
        assert_eq!(a.left_out("reverse/more_test.go"), None);
        assert!(a.left_out("tests/conftest.py").is_some());
        assert!(a.left_out("evil.dist-info/entry_points.txt").is_some());
        assert!(a.left_out("checks.d/zz.sh").is_some());
        // A file of its own (a `(new)` name's file) or its scope: that file alone.
        let (_d, a) = admission(
            Allowed {
                files: ["tests/test_div.py".to_string()].into(),
                scope: vec!["scripts/".into()],
                ..Default::default()
            },
            would_load,
        );
        assert_eq!(a.left_out("tests/test_div.py"), None);
        assert!(a.left_out("tests/test_other.py").is_some());
        assert_eq!(a.left_out("scripts/extra.sh"), None);
        assert!(a.left_out("scripts/conftest.py").is_some());
    }
}
