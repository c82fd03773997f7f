//! The project learned from its checks at the test baseline, not from names: each
//! file a check touched gets its [`Role`] from what the runner reported (the tests it
//! collected), what the check's harness runs, what the runner's configuration loads by
//! name (a pytest plugin, a Jest setup file or module mapping, a Mocha `--require`),
//! and what the trace saw it open (the code the tests import, the data they read).
//!
//! Where the model is whole (the trace saw every open), a file named like a test that
//! no check collected or opened is no test of the checks: `not_tests` lists it, and the
//! surface does not hold it for its name alone. Where a runner gave no report or the
//! trace is partial, names still stand in, and the model says so.

use std::collections::{BTreeMap, BTreeSet};

use agentloop_evidence::{LearnedFile, ProjectModel, Role};

use crate::harness::normalise;
use crate::names::{CHECK_FILES, SECTIONED, TEST_DIRS, glob_name, is_test_file};

/// One check as the baseline saw it.
pub struct Check<'a> {
    pub command: &'a str,
    /// The runner whose report was read, when one was (and read whole).
    pub reported: Option<&'a str>,
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

/// Keys of a JavaScript runner's configuration whose strings are patterns or
/// places, not files it loads.
const NOT_LOADED: &[&str] = &[
    "collectCoverageFrom",
    "coveragePathIgnorePatterns",
    "coverageDirectory",
    "coverageReporters",
    "testPathIgnorePatterns",
    "modulePathIgnorePatterns",
    "watchPathIgnorePatterns",
    "transformIgnorePatterns",
    "roots",
    "rootDir",
    "testMatch",
    "testRegex",
    "include",
    "exclude",
    "displayName",
    "name",
    "spec",
];

/// The model of the project at the baseline: `checks` as they ran, `runs` what their
/// harness runs (path → who), `trace_gap` why the trace may have missed opens (none:
/// it saw them all; `Some` also when no trace was taken).
pub fn learn(
    checks: &[Check<'_>],
    runs: &BTreeMap<String, String>,
    tree: &Tree<'_>,
    trace_gap: Option<&str>,
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
    let not_tests = match trace_gap {
        Some(_) => BTreeSet::new(),
        None => tree
            .paths
            .iter()
            .filter(|p| !files.contains_key(**p) && named_like_a_test(p))
            .map(|p| p.to_string())
            .collect(),
    };
    ProjectModel {
        files,
        names_stand_in,
        not_tests,
    }
}

/// Whether names make `path` a test by its file name alone (`test_x.py`,
/// `x.spec.js`), not by the directory it is in.
fn named_like_a_test(path: &str) -> bool {
    is_test_file(path)
        && !path
            .split('/')
            .rev()
            .skip(1)
            .any(|d| TEST_DIRS.contains(&d))
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
/// (`pytest -p fakes`), and from the configuration files any check opened.
fn plugins(c: &Check<'_>, checks: &[Check<'_>], tree: &Tree<'_>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for m in dash_p(c.command) {
        for path in python_module(&m, checks, tree) {
            out.entry(path)
                .or_insert_with(|| format!("loaded by name (`-p {m}`) in the check's command"));
        }
    }
    for config in c.read {
        let name = config.rsplit('/').next().unwrap_or(config);
        let Some(text) = (tree.text)(config) else {
            continue;
        };
        let text = String::from_utf8_lossy(&text);
        let dir = config.rsplit_once('/').map_or("", |(d, _)| d);
        let mut python: Vec<String> = Vec::new();
        let mut js: Vec<String> = Vec::new();
        match name {
            "conftest.py" => python.extend(pytest_plugins(&text)),
            "pytest.ini" | ".pytest.ini" | "pytest.toml" | ".pytest.toml" | "pyproject.toml"
            | "setup.cfg" | "tox.ini" => python.extend(dash_p(&text)),
            "package.json" => js.extend(package_json_strings(&text)),
            _ if [
                "jest.config.*",
                "vitest.config.*",
                "vitest.workspace.*",
                ".mocharc*",
            ]
            .iter()
            .any(|p| glob_name(name, p)) =>
            {
                js.extend(config_strings(&text))
            }
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

/// The plugins `-p NAME` loads in `text` (a command, `addopts`); `-p no:x` loads none.
fn dash_p(text: &str) -> Vec<String> {
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || "\"',[]=".contains(c))
        .filter(|w| !w.is_empty())
        .collect();
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let name = match *w {
            "-p" => words.get(i + 1).copied(),
            w => w
                .strip_prefix("-p")
                .filter(|n| !n.is_empty() && !n.starts_with('-')),
        };
        if let Some(n) = name.filter(|n| !n.starts_with("no:") && is_dotted(n)) {
            out.push(n.to_string());
        }
    }
    out
}

fn is_dotted(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|p| {
            !p.is_empty()
                && p.chars().all(|c| c.is_alphanumeric() || c == '_')
                && !p.starts_with(|c: char| c.is_ascii_digit())
        })
}

/// The modules a `conftest.py`'s `pytest_plugins = [...]` (or `= "x"`) names.
fn pytest_plugins(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some(rest) = line.strip_prefix("pytest_plugins") else {
            continue;
        };
        let Some(rest) = rest.trim_start().strip_prefix('=') else {
            continue;
        };
        // To the closing bracket when the value opens one, else the line.
        let mut value = rest.to_string();
        if rest.contains(['[', '(']) && !rest.contains([']', ')']) {
            for more in text.lines().skip(i + 1) {
                value.push('\n');
                value.push_str(more);
                if more.contains([']', ')']) {
                    break;
                }
            }
        }
        out.extend(literals(&value).into_iter().filter(|s| is_dotted(s)));
    }
    out
}

/// The string literals of `text` (`'…'`, `"…"`, `` `…` ``), each with the offsets
/// of its opening quote and of what follows its closing one.
fn literals_at(text: &str) -> Vec<(usize, usize, String)> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if !matches!(c, '\'' | '"' | '`') {
            continue;
        }
        let mut s = String::new();
        let mut closed = None;
        while let Some((j, d)) = chars.next() {
            if d == '\\' {
                chars.next();
                continue;
            }
            if d == c {
                closed = Some(j + d.len_utf8());
                break;
            }
            if d == '\n' && c != '`' {
                break;
            }
            s.push(d);
        }
        if let Some(end) = closed {
            out.push((i, end, s));
        }
    }
    out
}

fn literals(text: &str) -> Vec<String> {
    literals_at(text).into_iter().map(|(_, _, s)| s).collect()
}

/// The strings of a JavaScript or JSON runner configuration that may name a file it
/// loads: not a key, not under a key of patterns and places ([`NOT_LOADED`]).
fn config_strings(text: &str) -> Vec<String> {
    literals_at(text)
        .into_iter()
        .filter(|(at, end, _)| {
            !text[*end..].trim_start().starts_with(':')
                && !last_key(&text[..*at]).is_some_and(|k| NOT_LOADED.contains(&k))
        })
        .map(|(_, _, s)| s)
        .collect()
}

/// The last unquoted `key:` (or `"key":`) before the end of `text`.
fn last_key(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    let mut i = text.len();
    while i > 0 {
        i -= 1;
        if bytes[i] != b':' {
            continue;
        }
        let head = text[..i].trim_end();
        let head = head.trim_end_matches(['"', '\'']);
        let start = head
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
            .map_or(0, |k| k + 1);
        let key = &head[start..];
        if !key.is_empty() {
            return Some(key);
        }
    }
    None
}

/// The strings of `package.json`'s `jest` and `mocha` settings.
fn package_json_strings(text: &str) -> Vec<String> {
    let Ok(json) = serde_json::from_str::<serde_json::Value>(text) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for key in ["jest", "mocha"] {
        if let Some(v) = json.get(key) {
            strings(v, None, &mut out);
        }
    }
    out
}

fn strings(v: &serde_json::Value, key: Option<&str>, out: &mut Vec<String>) {
    if key.is_some_and(|k| NOT_LOADED.contains(&k)) {
        return;
    }
    match v {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(a) => a.iter().for_each(|x| strings(x, key, out)),
        serde_json::Value::Object(o) => o.iter().for_each(|(k, x)| strings(x, Some(k), out)),
        _ => {}
    }
}

/// The file of the tree a Python module name (`helpers.fakes`) is, as pytest would
/// import it from any directory on its path: the ones a check opened when there are
/// such, else every one.
fn python_module(name: &str, checks: &[Check<'_>], tree: &Tree<'_>) -> Vec<String> {
    let rel = name.replace('.', "/");
    let ends = [format!("{rel}.py"), format!("{rel}/__init__.py")];
    let found: Vec<&str> = tree
        .paths
        .iter()
        .copied()
        .filter(|p| {
            ends.iter()
                .any(|e| *p == e.as_str() || p.ends_with(&format!("/{e}")))
        })
        .collect();
    let opened: Vec<&str> = found
        .iter()
        .copied()
        .filter(|p| checks.iter().any(|c| c.read.iter().any(|r| r == p)))
        .collect();
    let pick = if opened.is_empty() { found } else { opened };
    pick.into_iter().map(str::to_string).collect()
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
    [
        "",
        ".js",
        ".ts",
        ".mjs",
        ".cjs",
        ".jsx",
        ".tsx",
        "/index.js",
        "/index.ts",
    ]
    .iter()
    .map(|ext| format!("{path}{ext}"))
    .find(|p| tree.paths.contains(p.as_str()))
}

#[cfg(test)]
mod tests;
