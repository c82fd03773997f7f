//! Which files belong to the verification surface: the rules, from the run's settings
//! and its `Verify:` commands, and the test section of files that only partly
//! configure the checks.

use std::collections::BTreeSet;
use std::path::Path;

use agentloop_ground::paths::path_matches;

/// CI configuration, by path.
const CI: &[&str] = &[
    ".github/workflows/",
    ".gitlab-ci.yml",
    ".circleci/",
    ".buildkite/",
    ".travis.yml",
    "Jenkinsfile",
    "azure-pipelines.yml",
    "bitbucket-pipelines.yml",
];

/// Files that configure or intercept the checks wherever they are, by name (`*` is
/// any run of characters).
pub const CHECK_FILES: &[&str] = &[
    "conftest.py",
    "pytest.ini",
    ".pytest.ini",
    "pytest.toml",
    ".pytest.toml",
    // A module that shadows the runner itself under `python -m pytest`.
    "pytest.py",
    "sitecustomize.py",
    "usercustomize.py",
    "*.pth",
    "jest.config.*",
    "jest.setup.*",
    "vitest.config.*",
    "vitest.workspace.*",
    "vitest.setup.*",
    "setupTests.*",
    // Vitest reads Vite's configuration; Jest transforms through Babel's.
    "vite.config.*",
    "babel.config.*",
    ".babelrc*",
    // What npm, yarn and pnpm run a script with (`script-shell`, hooks).
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pnpmfile.cjs",
    ".mocharc*",
    ".rspec",
    ".config/nextest.toml",
    "karma.conf.*",
    "playwright.config.*",
    "build.rs",
    "agentloop.toml",
    // The shape the next run takes its settings from (`Plan::with_shape`).
    ".loop/shape/SHAPE.md",
    ".cargo/config.toml",
    ".cargo/config",
    // How git checks files out and diffs them, for a check that runs git.
    ".gitattributes",
];

/// Programs that run the script named by their first argument.
const INTERPRETERS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "python", "python3", "node", "deno", "bun", "ruby", "perl",
    "php", "bats", "lua", "Rscript", "tclsh", "source", ".",
];

/// Test runners: the paths they are given are tests.
const TEST_RUNNERS: &[&str] = &[
    "pytest", "py.test", "unittest", "jest", "vitest", "mocha", "ava", "tap", "rspec", "phpunit",
    "cargo", "go", "ctest", "tox", "nox", "npm", "npx", "pnpm", "yarn", "bundle", "rake", "mvn",
    "gradle", "dotnet", "swift", "mix", "make",
];

/// Files whose test section (only) configures the checks.
const SECTIONED: &[&str] = &[
    "pyproject.toml",
    "setup.cfg",
    "tox.ini",
    "package.json",
    "Cargo.toml",
];

/// What the rules are made of: the run's settings and plan.
#[derive(Debug)]
pub struct Rules {
    pub protected: Vec<String>,
    pub plan_file: String,
    /// Every `Verify:` command of the plan and `[verify] commands`.
    pub commands: Vec<String>,
    pub check_files: Vec<String>,
    /// Paths a `Verify:` names, found when the rules were made.
    named: BTreeSet<String>,
    /// Programs a `Verify:` runs (`pytest`, `make`, `./check.sh` → `check.sh`).
    programs: BTreeSet<String>,
    /// The scripts a `Verify:` runs (`sh checks/t1.sh`, `./check.sh`), there or not
    /// yet: one the agent writes would be its own judge.
    scripts: BTreeSet<String>,
    /// Modules a `Verify:` runs with `python -m` (`unittest`, `pytest`): a top-level
    /// `MODULE.py` or `MODULE/` package in the project would be run instead.
    modules: BTreeSet<String>,
}

impl Rules {
    pub fn new(
        root: &Path,
        protected: &[String],
        plan_file: &str,
        commands: Vec<String>,
        check_files: &[String],
    ) -> Rules {
        let mut named = BTreeSet::new();
        let mut scripts = BTreeSet::new();
        let mut programs = BTreeSet::new();
        let mut modules = BTreeSet::new();
        for cmd in &commands {
            for simple in simple_commands(cmd) {
                let words: Vec<&str> = simple
                    .split_whitespace()
                    .map(|w| w.trim_matches(|c| c == '"' || c == '\''))
                    .skip_while(|w| w.contains('=') && !w.starts_with('-'))
                    .collect();
                let Some(program) = words.first() else {
                    continue;
                };
                let name = program.rsplit('/').next().unwrap_or(program);
                programs.insert(name.to_string());
                let mut name_path = |w: &str| {
                    let w = w.trim_end_matches("/...").trim_start_matches("./");
                    if w.is_empty() || w == "." || w.starts_with('-') {
                        return;
                    }
                    let path = root.join(w);
                    if path.is_dir() {
                        named.insert(format!("{}/", w.trim_end_matches('/')));
                    } else if path.is_file() {
                        named.insert(w.to_string());
                    }
                };
                // The program itself, when it lives in the project (`./check.sh`).
                if program.contains('/') {
                    name_path(program);
                    scripts.insert(program.trim_start_matches("./").to_string());
                }
                let args = &words[1..];
                let runner = match (name, args.first().copied(), args.get(1).copied()) {
                    // `python -m pytest …`: the module is the runner.
                    (_, Some("-m"), Some(m)) => {
                        let top = m.split('.').next().unwrap_or(m);
                        modules.insert(top.to_string());
                        m
                    }
                    _ => name,
                };
                if INTERPRETERS.contains(&runner) {
                    // The script it runs: its first argument that is not an option.
                    if let Some(script) = args.iter().find(|a| !a.starts_with('-')) {
                        name_path(script);
                        scripts.insert(script.trim_start_matches("./").to_string());
                    }
                } else if TEST_RUNNERS.contains(&runner) {
                    // What a test runner is pointed at: paths among its arguments.
                    for (i, w) in args.iter().enumerate() {
                        name_path(w);
                        // `cargo test --test it`: tests/it.rs or tests/it/.
                        if i > 0 && args[i - 1] == "--test" {
                            name_path(&format!("tests/{w}.rs"));
                            name_path(&format!("tests/{w}"));
                        }
                    }
                }
                // Other commands (`grep`, `test`, `diff`…) read the work itself: the
                // files they name are the agent's to change.
            }
        }
        let plan_file = plan_file.trim_start_matches("./").to_string();
        Rules {
            protected: protected.to_vec(),
            plan_file,
            commands,
            check_files: check_files.to_vec(),
            named,
            scripts,
            programs,
            modules,
        }
    }

    /// The rules of a run: its settings and its plan as they stand now.
    pub fn for_run(root: &Path, s: &agentloop_journal::RunState) -> Rules {
        let plan_file = Path::new(&s.plan_file);
        let plan_file = plan_file
            .strip_prefix(root)
            .unwrap_or(plan_file)
            .to_string_lossy()
            .into_owned();
        let commands = s
            .plan
            .tasks
            .iter()
            .flat_map(|t| s.plan.checks_of(Some(t)))
            .chain(s.settings.verify_commands.iter().cloned())
            .collect();
        Rules::new(
            root,
            &s.settings.protected,
            &plan_file,
            commands,
            &s.settings.check_files,
        )
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
        if let Some(n) = self.named.iter().find(|n| path_matches(path, n)) {
            return Some(format!("named by a Verify command ({n})"));
        }
        if let Some(why) = self.configures_checks(path) {
            return Some(why);
        }
        if is_test_file(path) {
            return Some("a test file".into());
        }
        None
    }

    /// Why a file (new or not) configures or intercepts the checks, if it does. A
    /// sectioned file counts by its test section, judged by [`check_section`](super::check_section).
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
        if matches!(name, "Makefile" | "makefile" | "GNUmakefile") && self.programs.contains("make")
        {
            return Some("a Verify command runs make".into());
        }
        if let Some(m) = self
            .modules
            .iter()
            .find(|m| path == format!("{m}.py") || path.starts_with(&format!("{m}/")))
        {
            return Some(format!(
                "shadows the module a Verify command runs (python -m {m})"
            ));
        }
        if self.scripts.contains(path) {
            return Some(format!("the script a Verify command runs ({path})"));
        }
        if self.programs.contains(name) {
            return Some(format!(
                "named like a program a Verify command runs ({name})"
            ));
        }
        None
    }
}

/// Whether only a section of this file configures the checks (`pyproject.toml`,
/// `setup.cfg`, `tox.ini`, `package.json`): the rest is the agent's to change.
pub fn is_sectioned(path: &str) -> bool {
    path == super::section::GIT_CONFIG
        || SECTIONED.contains(&path.rsplit('/').next().unwrap_or(path))
}

/// The simple commands of a shell line: split on `&&`, `||`, `;`, `|` and newlines.
fn simple_commands(cmd: &str) -> Vec<&str> {
    cmd.split(['\n', ';', '|', '&'])
        .map(str::trim)
        .map(|c| c.trim_start_matches(['(', '{', '!', ' ']))
        .filter(|c| !c.is_empty())
        .collect()
}

/// A file name against a pattern where `*` is any run of characters.
fn glob_name(name: &str, pattern: &str) -> bool {
    let Some((head, tail)) = pattern.split_once('*') else {
        return name == pattern;
    };
    name.len() >= head.len() + tail.len()
        && name.starts_with(head)
        && (tail.is_empty() || glob_name_tail(&name[head.len()..], tail))
}

fn glob_name_tail(rest: &str, pattern: &str) -> bool {
    if !pattern.contains('*') {
        return rest.ends_with(pattern);
    }
    (0..=rest.len()).any(|i| rest.is_char_boundary(i) && glob_name(&rest[i..], pattern))
}

/// Test files by the usual conventions.
pub fn is_test_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let in_dir = path
        .split('/')
        .rev()
        .skip(1)
        .any(|d| matches!(d, "tests" | "test" | "spec" | "__tests__"));
    in_dir
        || name.ends_with("_test.go")
        || (name.starts_with("test_") && name.ends_with(".py"))
        || name.ends_with("_test.py")
        || name.contains(".test.")
        || name.contains(".spec.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_files_by_convention() {
        for t in [
            "tests/t1.sh",
            "a/test/x.rb",
            "spec/a_spec.rb",
            "web/__tests__/a.js",
            "pkg/a_test.go",
            "test_x.py",
            "pkg/x_test.py",
            "a.test.ts",
            "b.spec.js",
        ] {
            assert!(is_test_file(t), "{t}");
        }
        for t in [
            "src/latest_news.py",
            "src/testing.rs",
            "contest.py",
            "tests",
        ] {
            assert!(!is_test_file(t), "{t}");
        }
    }

    #[test]
    fn names_and_globs() {
        assert!(glob_name("jest.config.js", "jest.config.*"));
        assert!(glob_name(".mocharc.yml", ".mocharc*"));
        assert!(glob_name("evil.pth", "*.pth"));
        assert!(!glob_name("path.txt", "*.pth"));
        assert!(glob_name("conftest.py", "conftest.py"));
    }

    #[test]
    fn what_a_verify_command_names_and_runs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("tests/it")).unwrap();
        std::fs::write(dir.path().join("tests/t1.sh"), "exit 1").unwrap();
        std::fs::write(dir.path().join("check.sh"), "true").unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/main.py"), "def f(): pass").unwrap();
        let r = Rules::new(
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
}
