//! The model of one project as its checks see it: which files are the plan, protected,
//! CI, named by a check, the harness that configures or runs the checks, or tests —
//! everything else is the work.

use std::path::Path;

use agentloop_evidence::Shadowable;
use agentloop_ground::paths::path_matches;

use crate::commands::CheckWords;
use crate::names::{CHECK_FILES, CI, SECTIONED, glob_name, is_test_file};

/// Why a file is on the surface when only its name makes it a test.
pub const TEST_BY_NAME: &str = "a test file";

/// What each file of a project is to its checks, from the run's settings and check
/// commands. Today every answer comes from names: the commands' words and the usual
/// layouts (`names.rs`), a fallback that says what it guessed from (`why`).
#[derive(Debug, Clone, PartialEq)]
pub struct Project {
    pub protected: Vec<String>,
    pub plan_file: String,
    /// Every `Verify:` command of the plan and `[verify] commands`.
    pub commands: Vec<String>,
    pub check_files: Vec<String>,
    /// What those commands name and run.
    words: CheckWords,
    /// What a new Python module would stand in for, learned at the test baseline.
    modules: Shadowable,
    /// The tree asked about.
    root: std::path::PathBuf,
}

impl Project {
    /// The project at `root` as names tell it: `protected` and `check_files` from
    /// `[verify]`, the plan file, and every check command.
    pub fn from_names(
        root: &Path,
        protected: &[String],
        plan_file: &str,
        commands: Vec<String>,
        check_files: &[String],
    ) -> Project {
        let words = CheckWords::read(root, &commands);
        Project {
            protected: protected.to_vec(),
            plan_file: plan_file.trim_start_matches("./").to_string(),
            commands,
            check_files: check_files.to_vec(),
            words,
            modules: Shadowable::default(),
            root: root.to_path_buf(),
        }
    }

    /// Whether the file at `path` of the tree holds `needle` (a file too large to read
    /// whole, or one that cannot be read, is taken to hold it).
    pub fn file_holds(&self, path: &str, needle: &[u8]) -> bool {
        const MOST: u64 = 4 << 20;
        match agentloop_ground::fsutil::read_regular(&self.root.join(path), MOST) {
            Ok(text) => text.windows(needle.len()).any(|w| w == needle),
            Err(e) => e.kind() != std::io::ErrorKind::NotFound,
        }
    }

    /// The project, knowing too what the test baseline's interpreters showed a new
    /// Python module would stand in for ([`WouldLoad::modules`](agentloop_evidence::WouldLoad)).
    pub fn knowing(mut self, modules: Shadowable) -> Project {
        self.modules = modules;
        self
    }

    /// Why an existing file belongs to the surface, if it does.
    pub fn classify(&self, path: &str) -> Option<String> {
        if path.starts_with(".agentloop/") || path.starts_with(".git/") {
            return None;
        }
        if path == self.plan_file {
            return Some("the plan".into());
        }
        if let Some(p) = self.protected.iter().find(|p| path_matches(path, p)) {
            return Some(format!("protected ({p})"));
        }
        if CI.iter().any(|p| path_matches(path, p)) {
            return Some("CI configuration".into());
        }
        if let Some(n) = self.words.named.iter().find(|n| path_matches(path, n)) {
            return Some(format!("named by a Verify command ({n})"));
        }
        if let Some(d) = self.words.tests_in.iter().find(|d| path_matches(path, d))
            && is_a_test_in(&path[d.len()..])
        {
            return Some(format!("a test a Verify command runs ({d})"));
        }
        if let Some(why) = self.configures_checks(path) {
            return Some(why);
        }
        if is_test_file(path) {
            return Some(TEST_BY_NAME.into());
        }
        None
    }

    /// Why a file is one of the tests the checks run, if it is: one under a directory
    /// a test runner is pointed at that is a test there (`reverse/x_test.go`), one in
    /// a directory a check names whole (`tests/`), one named like a test.
    pub fn test_of_checks(&self, path: &str) -> Option<String> {
        if let Some(d) = self.words.tests_in.iter().find(|d| path_matches(path, d))
            && is_a_test_in(&path[d.len()..])
        {
            return Some(format!("a test a Verify command runs ({d})"));
        }
        if let Some(n) = self
            .words
            .named
            .iter()
            .find(|n| n.ends_with('/') && path_matches(path, n))
        {
            return Some(format!("under {n}, where the checks' tests are"));
        }
        is_test_file(path).then(|| TEST_BY_NAME.into())
    }

    /// Why a file the agent added would intercept the checks, if it would: what
    /// [`Self::configures_checks`] says, or a new Python module standing in for one the
    /// checks import (`src/json.py`, `pluggy.py`, or a name learned at the test
    /// baseline; see `shadow`).
    pub fn added_intercepts(&self, path: &str) -> Option<String> {
        self.configures_checks(path).or_else(|| {
            crate::shadow::shadowed_module(path, &self.modules)
                .map(|m| format!("a new module in place of one the checks import ({m})"))
                .or_else(|| {
                    crate::shadow::displaces(path, |p| self.root.join(p).is_file())
                        .map(|why| format!("a new module of the same name: {why}"))
                })
        })
    }

    /// Why a file (new or not) configures or intercepts the checks, if it does. A
    /// sectioned file counts by its test section, judged by [`check_section`](crate::check_section).
    pub fn configures_checks(&self, path: &str) -> Option<String> {
        let name = path.rsplit('/').next().unwrap_or(path);
        if let Some(p) = CHECK_FILES
            .iter()
            .find(|p| glob_name(name, p) || (p.contains('/') && path.ends_with(*p)))
        {
            return Some(format!("configures the checks ({p})"));
        }
        if let Some(p) = self
            .check_files
            .iter()
            .find(|p| glob_name(name, p) || path_matches(path, p))
        {
            return Some(format!("configures the checks ({p}, [verify] check_files)"));
        }
        if SECTIONED.contains(&name) {
            return Some(format!("its test section configures the checks ({name})"));
        }
        if matches!(name, "Makefile" | "makefile" | "GNUmakefile")
            && self.words.programs.contains("make")
        {
            return Some("a Verify command runs make".into());
        }
        if let Some(m) = self
            .words
            .modules
            .iter()
            .find(|m| path == format!("{m}.py") || path.starts_with(&format!("{m}/")))
        {
            return Some(format!(
                "shadows the module a Verify command runs (python -m {m})"
            ));
        }
        if self.words.scripts.contains(path) {
            return Some(format!("the script a Verify command runs ({path})"));
        }
        if self.words.programs.contains(name) {
            return Some(format!(
                "named like a program a Verify command runs ({name})"
            ));
        }
        None
    }
}

/// Whether a file under a directory a runner is pointed at is one of its tests or their
/// data (`x_test.go`, `testdata/…`, `a.test.js`, `test_a.py`, `conftest.py`), not the
/// package's own code.
fn is_a_test_in(rest: &str) -> bool {
    let mut dirs = rest.split('/').rev().skip(1);
    is_test_file(rest) || dirs.any(|d| matches!(d, "testdata" | "__mocks__" | "__fixtures__"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_verify_command_names_and_runs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("tests/it")).unwrap();
        std::fs::write(dir.path().join("tests/t1.sh"), "exit 1").unwrap();
        std::fs::write(dir.path().join("check.sh"), "true").unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/main.py"), "def f(): pass").unwrap();
        let r = Project::from_names(
            dir.path(),
            &[],
            "PLAN.md",
            vec![
                "sh tests/t1.sh && ./check.sh".into(),
                "cargo test --test it".into(),
                "CI=1 make lint | tee out".into(),
                "pytest -q".into(),
                "grep -q 'def f' src/main.py && test -f src/main.py".into(),
                "python3 -m unittest.main -q tests.test_x".into(),
            ],
            &[],
        );
        assert!(r.classify("tests/t1.sh").is_some());
        assert_eq!(
            r.classify("check.sh").as_deref(),
            Some("named by a Verify command (check.sh)")
        );
        assert!(r.classify("tests/it/main.rs").is_some());
        assert!(r.classify("PLAN.md").is_some());
        assert!(r.classify(".github/workflows/ci.yml").is_some());
        assert!(r.classify("src/lib.rs").is_none());
        // What a plain command reads is the work, not the check.
        assert!(r.classify("src/main.py").is_none());
        // New files that would intercept the checks.
        for f in [
            "conftest.py",
            "sub/conftest.py",
            "Makefile",
            "bin/pytest",
            "make",
            "x.pth",
            "pytest.toml",
            "pytest.py",
            ".npmrc",
            "vite.config.mjs",
            "babel.config.js",
            ".babelrc",
            ".config/nextest.toml",
            ".gitattributes",
            // The shape a next run would take its settings from.
            ".loop/shape/SHAPE.md",
            // A package or module named like the one `python -m` runs.
            "unittest/__main__.py",
            "unittest.py",
        ] {
            assert!(r.configures_checks(f).is_some(), "{f}");
        }
        assert!(r.configures_checks("src/main.py").is_none());
        assert!(r.configures_checks("src/unittest.py").is_none());
    }

    #[test]
    fn a_package_a_runner_is_pointed_at_is_the_work_but_its_tests() {
        let dir = tempfile::tempdir().unwrap();
        for f in [
            "reverse/reverse.go",
            "reverse/reverse_test.go",
            "reverse/testdata/words.txt",
            "web/src/app.js",
            "web/src/app.test.js",
            "web/src/__mocks__/fs.js",
            "tests/helpers.py",
        ] {
            let p = dir.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        let r = Project::from_names(
            dir.path(),
            &[],
            "PLAN.md",
            vec![
                "go test ./reverse/".into(),
                "npx jest web/src".into(),
                "pytest tests/".into(),
            ],
            &[],
        );
        assert_eq!(r.classify("reverse/reverse.go"), None);
        assert_eq!(r.classify("reverse/other.go"), None);
        assert_eq!(
            r.classify("reverse/reverse_test.go").as_deref(),
            Some("a test a Verify command runs (reverse/)")
        );
        assert!(r.classify("reverse/testdata/words.txt").is_some());
        assert!(r.classify("reverse/testdata/new.txt").is_some());
        assert_eq!(r.classify("web/src/app.js"), None);
        assert!(r.classify("web/src/app.test.js").is_some());
        assert!(r.classify("web/src/__mocks__/fs.js").is_some());
        // A directory of tests is the check as a whole, its helpers too.
        assert_eq!(
            r.classify("tests/helpers.py").as_deref(),
            Some("named by a Verify command (tests/)")
        );
    }
}
