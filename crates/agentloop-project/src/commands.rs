//! What a check's command line says of the project: the paths it names, the programs
//! and scripts it runs, and the modules it runs with `python -m`. Read from the words
//! of the command, without running it.

use std::collections::BTreeSet;
use std::path::Path;

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

/// What the check commands name and run.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct CheckWords {
    /// Paths a command names, found when they were read (`tests/`, `check.sh`).
    pub named: BTreeSet<String>,
    /// Directories of code a test runner is pointed at (`go test ./reverse/`,
    /// `jest src/`): only the tests in them are the check, the rest is the work.
    pub tests_in: BTreeSet<String>,
    /// Programs a command runs (`pytest`, `make`, `./check.sh` → `check.sh`).
    pub programs: BTreeSet<String>,
    /// The scripts a command runs (`sh checks/t1.sh`, `./check.sh`), there or not
    /// yet: one the agent writes would be its own judge.
    pub scripts: BTreeSet<String>,
    /// Modules a command runs with `python -m` (`unittest`, `pytest`): a top-level
    /// `MODULE.py` or `MODULE/` package in the project would be run instead.
    pub modules: BTreeSet<String>,
}

impl CheckWords {
    /// Reads `commands` against the project at `root` (a named path counts when it is
    /// there).
    pub fn read(root: &Path, commands: &[String]) -> CheckWords {
        let mut named = BTreeSet::new();
        let mut tests_in = BTreeSet::new();
        let mut scripts = BTreeSet::new();
        let mut programs = BTreeSet::new();
        let mut modules = BTreeSet::new();
        for cmd in commands {
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
                let mut name_path = |w: &str, runs_tests: bool| {
                    let w = w.trim_end_matches("/...").trim_start_matches("./");
                    if w.is_empty() || w == "." || w.starts_with('-') {
                        return;
                    }
                    let path = root.join(w);
                    if path.is_dir() {
                        let dir = format!("{}/", w.trim_end_matches('/'));
                        if runs_tests && !is_test_dir(&dir) {
                            tests_in.insert(dir);
                        } else {
                            named.insert(dir);
                        }
                    } else if path.is_file() {
                        named.insert(w.to_string());
                    }
                };
                // The program itself, when it lives in the project (`./check.sh`).
                if program.contains('/') {
                    name_path(program, false);
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
                        name_path(script, false);
                        scripts.insert(script.trim_start_matches("./").to_string());
                    }
                } else if TEST_RUNNERS.contains(&runner) {
                    // What a test runner is pointed at: paths among its arguments.
                    for (i, w) in args.iter().enumerate() {
                        name_path(w, true);
                        // `cargo test --test it`: tests/it.rs or tests/it/.
                        if i > 0 && args[i - 1] == "--test" {
                            name_path(&format!("tests/{w}.rs"), false);
                            name_path(&format!("tests/{w}"), false);
                        }
                    }
                }
                // Other commands (`grep`, `test`, `diff`…) read the work itself: the
                // files they name are the agent's to change.
            }
        }
        CheckWords {
            named,
            tests_in,
            programs,
            scripts,
            modules,
        }
    }
}

/// Whether a directory holds only tests by its name (`tests/`, `e2e/test/`,
/// `__tests__/`): all of it is the check, helpers and fixtures too.
fn is_test_dir(dir: &str) -> bool {
    dir.trim_end_matches('/')
        .split('/')
        .any(|d| d == "testdata" || crate::names::TEST_DIRS.contains(&d))
}

/// The simple commands of a shell line: split on `&&`, `||`, `;`, `|` and newlines.
fn simple_commands(cmd: &str) -> Vec<&str> {
    cmd.split(['\n', ';', '|', '&'])
        .map(str::trim)
        .map(|c| c.trim_start_matches(['(', '{', '!', ' ']))
        .filter(|c| !c.is_empty())
        .collect()
}
