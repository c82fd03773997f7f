//! The project learned from its checks at the test baseline, not from names: each
//! file a check touched gets its [`Role`] from what the runner reported (the tests it
//! collected), what the check's harness runs, what the runner's configuration loads by
//! name (a pytest plugin, a Jest setup file or module mapping, a Mocha `--require`),
//! and what the trace saw it open (the code the tests import, the data they read).
//!
//! Where the model is whole (the trace saw every open, every check started and gave
//! its runner's report whole), a Python or Go file named like a test that no check
//! collected or opened, and that no task names, is no test of the checks: `not_tests`
//! lists it, and the surface does not hold it for its name alone. pytest collects, and
//! `go test` compiles, every test file of what it runs before it runs any; a
//! JavaScript runner runs its files one by one and may stop early (`--bail`), so a
//! JavaScript file named like a test stays a test by its name. Where a runner gave no
//! report or the trace is partial, names still stand in, and the model says so.

use std::collections::{BTreeMap, BTreeSet};

use agentloop_evidence::{LearnedFile, ProjectModel, Role};

use crate::harness::normalise;

mod config;
use crate::names::{CHECK_FILES, SECTIONED, glob_name, in_test_dir, is_test_file};
use config::*;

/// One check as the baseline saw it.
pub struct Check<'a> {
    pub command: &'a str,
    /// The runner whose report was read, when one was (and read whole).
    pub reported: Option<&'a str>,
    /// Its report holds an errored entry (a module that failed to import: with `-x`,
    /// pytest stops collecting there).
    pub errored: bool,
    /// The files of the tree it opened.
    pub read: &'a [String],
    /// The test files its runner's report names.
    pub collected: &'a BTreeSet<String>,
}

/// The tree the baseline ran on.
pub struct Tree<'a> {
    pub paths: &'a BTreeSet<&'a str>,
    /// A file's mode (`0o100755`).
    pub mode: &'a dyn Fn(&str) -> Option<u32>,
    /// A file's content.
    pub text: &'a dyn Fn(&str) -> Option<Vec<u8>>,
}

/// Files besides [`CHECK_FILES`] and the sectioned ones that a runner reads as its
/// configuration.
const ALSO_CONFIG: &[&str] = &["go.mod", "go.work", "tsconfig.json", "tsconfig.*.json"];

/// The model of the project at the baseline: `checks` as they ran, `runs` what their
/// harness runs (path → who), `trace_gap` why the trace may have missed opens (none:
/// it saw them all; `Some` also when no trace was taken), `tasks` the words of each
/// task (a file they name is never taken off the tests).
pub fn learn(
    checks: &[Check<'_>],
    runs: &BTreeMap<String, String>,
    tree: &Tree<'_>,
    trace_gap: Option<&str>,
    tasks: &[String],
) -> ProjectModel {
    let mut files: BTreeMap<String, LearnedFile> = BTreeMap::new();
    let mut set = |path: &str, role: Role, by: &str, how: String| {
        files.entry(path.to_string()).or_insert(LearnedFile {
            role,
            by: by.to_string(),
            how,
        });
    };
    for c in checks {
        for path in c.collected {
            let runner = c.reported.unwrap_or("the runner");
            set(
                path,
                Role::Test,
                c.command,
                format!("collected by {runner}"),
            );
        }
    }
    for c in checks {
        for (path, how) in plugins(c, checks, tree) {
            set(&path, Role::Plugin, c.command, how);
        }
    }
    for (path, by) in runs {
        if tree.paths.contains(path.as_str()) {
            set(path, Role::Program, by, format!("run by {by}"));
        }
    }
    for c in checks {
        for path in c.read {
            let (role, how) = role_of_read(path, tree);
            set(path, role, c.command, how.into());
        }
    }
    let mut names_stand_in: Vec<String> = checks
        .iter()
        .filter(|c| c.reported.is_none())
        .map(|c| {
            format!(
                "`{}` gave no per-test report: the tests it runs are known by their names",
                c.command
            )
        })
        .collect();
    if let Some(gap) = trace_gap {
        names_stand_in.push(format!("what the checks opened is known in part: {gap}"));
    }
    // Only where every check ran whole: one that did not start, stopped at an
    // import error, or gave no report may not have reached a test file at all.
    let whole = trace_gap.is_none() && checks.iter().all(|c| c.reported.is_some() && !c.errored);
    let not_tests = if whole {
        tree.paths
            .iter()
            .filter(|p| {
                !files.contains_key(**p)
                    && named_like_a_test(p)
                    && !tasks.iter().any(|t| names(t, p))
            })
            .map(|p| p.to_string())
            .collect()
    } else {
        BTreeSet::new()
    };
    ProjectModel {
        files,
        names_stand_in,
        not_tests,
    }
}

/// Whether names make `path` a Python or Go test by its file name alone
/// (`test_x.py`, `x_test.go`), not by the directory it is in.
fn named_like_a_test(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    (name.ends_with(".py") || name.ends_with("_test.go"))
        && is_test_file(path)
        && !in_test_dir(path)
}

/// Whether a task's words name `path`: the path, or its file name.
fn names(text: &str, path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    text.contains(path) || text.contains(name)
}

/// What a file a check opened is, where nothing said more of it.
fn role_of_read(path: &str, tree: &Tree<'_>) -> (Role, &'static str) {
    let name = path.rsplit('/').next().unwrap_or(path);
    let config = CHECK_FILES
        .iter()
        .chain(SECTIONED)
        .chain(ALSO_CONFIG)
        .any(|p| glob_name(name, p) || (p.contains('/') && path.ends_with(*p)));
    if config {
        return (Role::Config, "the runner's configuration, read as it ran");
    }
    if executed(path, tree) {
        return (Role::Program, "a program the check ran (traced)");
    }
    if is_test_file(path) {
        return (Role::Support, "loaded by the tests, beside them (traced)");
    }
    if is_code(name) {
        return (Role::Work, "imported by the tests (traced)");
    }
    (Role::Data, "read by the check (traced)")
}

/// Whether a file opened by a check was run: a script by its name, or an executable
/// that starts with `#!` or is an ELF binary.
fn executed(path: &str, tree: &Tree<'_>) -> bool {
    if crate::is_script_name(path) {
        return true;
    }
    if (tree.mode)(path) != Some(0o100755) {
        return false;
    }
    (tree.text)(path).is_some_and(|t| t.starts_with(b"#!") || t.starts_with(b"\x7fELF"))
}

/// Source code by its extension.
fn is_code(name: &str) -> bool {
    let Some((_, ext)) = name.rsplit_once('.') else {
        return false;
    };
    matches!(
        ext,
        "py" | "pyi"
            | "js"
            | "mjs"
            | "cjs"
            | "jsx"
            | "ts"
            | "mts"
            | "cts"
            | "tsx"
            | "go"
            | "rs"
            | "rb"
            | "c"
            | "h"
            | "cc"
            | "cpp"
            | "hpp"
            | "java"
            | "kt"
            | "sh"
    )
}

/// What `c`'s runner loads by name, with how it is named: from `c`'s own words
/// (`pytest -p fakes`, `jest --config ci.config.js`), and from the configuration
/// files any check opened.
fn plugins(c: &Check<'_>, checks: &[Check<'_>], tree: &Tree<'_>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let words = shlex::split(c.command).unwrap_or_default();
    // Each command of `a && b; c | d` on its own: `mypy -p pkg && pytest` loads no
    // plugin `pkg`.
    let commands = words.split(|w| matches!(w.as_str(), "&&" | "||" | ";" | "|"));
    for words in commands.filter(|w| runs_pytest(w)) {
        for m in dash_p(words) {
            for path in python_module(&m, checks, tree) {
                out.entry(path)
                    .or_insert_with(|| format!("loaded by name (`-p {m}`) in the check's command"));
            }
        }
    }
    let named = named_configs(&words, tree);
    let configs = c.read.iter().cloned().chain(named.iter().cloned());
    for config in configs {
        let name = config.rsplit('/').next().unwrap_or(&config).to_string();
        let Some(text) = (tree.text)(&config) else {
            continue;
        };
        let text = String::from_utf8_lossy(&text);
        let dir = config.rsplit_once('/').map_or("", |(d, _)| d);
        let mut python: Vec<String> = Vec::new();
        let mut js: Vec<String> = Vec::new();
        let js_config = JS_CONFIGS.iter().any(|p| glob_name(&name, p)) || named.contains(&config);
        match name.as_str() {
            "conftest.py" => python.extend(pytest_plugins(&text)),
            "pytest.ini" | ".pytest.ini" | "pytest.toml" | ".pytest.toml" | "pyproject.toml"
            | "setup.cfg" | "tox.ini" => python.extend(addopts_plugins(&config, &text)),
            "package.json" => js.extend(package_json_strings(&text)),
            _ if js_config && (name.ends_with(".yml") || name.ends_with(".yaml")) => {
                js.extend(yaml_loaders(&text))
            }
            _ if js_config => js.extend(config_strings(&text)),
            _ => {}
        }
        for m in python {
            for path in python_module(&m, checks, tree) {
                out.entry(path)
                    .or_insert_with(|| format!("loaded by name (`{m}`) from {config}"));
            }
        }
        for s in js {
            if let Some(path) = js_file(dir, &s, tree) {
                out.entry(path)
                    .or_insert_with(|| format!("loaded by name (`{s}`) from {config}"));
            }
        }
    }
    out
}

/// The files of the tree a Python module name (`helpers.fakes`) may be, as pytest
/// imports it: from the root, `src/`, or the directory of a `conftest.py` a check
/// opened (pytest puts each on the path).
fn python_module(name: &str, checks: &[Check<'_>], tree: &Tree<'_>) -> Vec<String> {
    let rel = name.replace('.', "/");
    let mut bases: BTreeSet<String> = [String::new(), "src/".to_string()].into();
    for c in checks {
        for r in c.read {
            if let Some(dir) = r.strip_suffix("conftest.py")
                && (dir.is_empty() || dir.ends_with('/'))
            {
                bases.insert(dir.to_string());
            }
        }
    }
    bases
        .iter()
        .flat_map(|b| [format!("{b}{rel}.py"), format!("{b}{rel}/__init__.py")])
        .filter(|p| tree.paths.contains(p.as_str()))
        .collect()
}

/// The file of the tree a JavaScript configuration in `dir` names with `s`
/// (`./jest.setup.js`, `<rootDir>/test/env`, `test/setup`).
fn js_file(dir: &str, s: &str, tree: &Tree<'_>) -> Option<String> {
    if s.is_empty() || s.contains(['*', '$', '^', ' ', '\n']) || s.starts_with('/') {
        return None;
    }
    let s = s.strip_prefix("<rootDir>/").unwrap_or(s);
    // A bare word is a package's name, not a file (`jsdom`, `ts-jest`).
    if !s.contains('/') && !s.contains('.') {
        return None;
    }
    let path = normalise(dir, s)?;
    ["", ".js", ".ts", ".mjs", ".cjs", ".jsx", ".tsx"]
        .iter()
        .map(|ext| format!("{path}{ext}"))
        .find(|p| tree.paths.contains(p.as_str()))
}

#[cfg(test)]
mod tests;
