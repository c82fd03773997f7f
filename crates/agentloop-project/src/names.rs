//! The fallback: what a file is by its name and place alone, the way projects are
//! usually laid out (`tests/`, `test_*.py`, `*.spec.ts`, `conftest.py`, CI's files).
//! Every rule here is a guess that a project's own layout can prove wrong; the
//! baseline's runner reports and trace are the better witness where they speak.

/// CI configuration, by path.
pub const CI: &[&str] = &[
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

/// Files whose test section (only) configures the checks.
pub const SECTIONED: &[&str] = &[
    "pyproject.toml",
    "setup.cfg",
    "tox.ini",
    "package.json",
    "Cargo.toml",
];

/// Whether only a section of this file configures the checks (`pyproject.toml`,
/// `setup.cfg`, `tox.ini`, `package.json`): the rest is the agent's to change.
pub fn is_sectioned(path: &str) -> bool {
    path == crate::sections::GIT_CONFIG
        || SECTIONED.contains(&path.rsplit('/').next().unwrap_or(path))
}

/// Whether a path of the surface is one of git's own files (never in a tree: the
/// clean copy does not carry it).
pub fn is_git_file(path: &str) -> bool {
    path.starts_with(".git/")
}

/// A file name against a pattern where `*` is any run of characters.
pub fn glob_name(name: &str, pattern: &str) -> bool {
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
/// Directories that hold tests by their name.
pub(crate) const TEST_DIRS: &[&str] = &["tests", "test", "spec", "__tests__"];

/// Whether `path` lies under a test directory (`tests/`, `spec/`, …) at any depth.
pub(crate) fn in_test_dir(path: &str) -> bool {
    path.split('/')
        .rev()
        .skip(1)
        .any(|d| TEST_DIRS.contains(&d))
}

pub fn is_test_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    in_test_dir(path)
        || name.ends_with("_test.go")
        || (name.starts_with("test_") && name.ends_with(".py"))
        || name.ends_with("_test.py")
        || name.contains(".test.")
        || name.contains(".spec.")
}

/// True if `path` matches one of the test patterns of `[verify] test_patterns` (a
/// directory prefix like `tests/` anywhere in the path, or a fragment of the file name
/// like `_test.`).
pub fn is_test_path(path: &str, patterns: &[String]) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    patterns.iter().any(|p| {
        if p.ends_with('/') {
            path.match_indices(p.as_str())
                .any(|(i, _)| i == 0 || path.as_bytes()[i - 1] == b'/')
        } else {
            name.contains(p.as_str())
        }
    })
}

/// Where a project's own code lives, by convention: a script there is the work.
const SOURCE_DIRS: &[&str] = &[
    "src", "lib", "bin", "app", "pkg", "cmd", "internal", "source",
];

/// Whether `path` lies under one of the usual source directories at the top.
pub fn in_source_dir(path: &str) -> bool {
    path.split_once('/')
        .is_some_and(|(top, _)| SOURCE_DIRS.contains(&top))
}

/// Interpreters whose scripts are the checks' own harness.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "ash", "bats", "make"];

/// A shell script or makefile by its name alone.
pub fn is_script_name(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let ext = name.rsplit_once('.').map(|(_, e)| e);
    matches!(ext, Some("sh" | "bash" | "zsh" | "ksh" | "bats" | "mk"))
        || matches!(name, "Makefile" | "makefile" | "GNUmakefile")
}

/// Whether a file's first line (`#!/usr/bin/env bash`) starts a shell or make.
pub fn runs_a_shell(first_line: &[u8]) -> bool {
    let Some(line) = std::str::from_utf8(first_line)
        .ok()
        .and_then(|l| l.strip_prefix("#!"))
    else {
        return false;
    };
    let mut words = line
        .split_whitespace()
        .map(|w| w.rsplit('/').next().unwrap_or(w));
    let program = match words.next() {
        Some("env") => words.find(|w| !w.starts_with('-')),
        other => other,
    };
    program.is_some_and(|p| SHELLS.contains(&p))
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
    fn a_script_by_its_name_or_its_first_line() {
        assert!(is_script_name("tests/check.sh") && is_script_name("Makefile"));
        assert!(!is_script_name("scripts/run") && !is_script_name("src/a.py"));
        assert!(runs_a_shell(b"#!/usr/bin/env bash"));
        assert!(runs_a_shell(b"#!/bin/sh -e"));
        assert!(!runs_a_shell(b"#!/usr/bin/env python3"));
        assert!(!runs_a_shell(b"echo hi"));
        assert!(in_source_dir("src/greet.sh") && !in_source_dir("tools/gen.sh"));
    }
}
