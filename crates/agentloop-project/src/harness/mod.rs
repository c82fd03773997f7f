//! What a check's harness runs, read from its words and, script by script, from the
//! text of the shell scripts and Makefiles it runs: the scripts it executes or sources
//! (`sh lib/verify.sh`, `python3 scripts/verify.py`, `. ./helpers.sh`), there or not
//! yet (`[ -f scripts/extra.sh ] && . scripts/extra.sh`), the globs it loops over (`for f in checks.d/*.sh`) and the package scripts an
//! `npm test` runs in turn. Read without running anything, from the tree the run was
//! created on, so that what it names is known before any agent works:
//! - a named file that is there is the harness: it joins the verification surface;
//! - a named path that is not there yet, and every glob, is what the harness would
//!   run once someone writes it: a file the agent adds there is kept out of the
//!   judge's copy (see `admit`).
//!
//! What the harness's scripts merely read or test for (`grep -q 'def f' src/main.py`,
//! `test -f src/login.rs`) is the work.

use std::collections::{BTreeMap, BTreeSet};
mod line;

pub use line::normalise;
use line::{Loops, Named, named_in_line};

/// The most scripts followed, and how deep.
const MOST_SCRIPTS: usize = 200;
const MOST_DEPTH: usize = 8;

/// What the harness runs: files of the tree, and what it names that is not there.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Harness {
    /// Files of the tree it runs, each with who runs it (a check, or a script).
    pub runs: BTreeMap<String, String>,
    /// Paths it would run that the tree does not hold, and every glob it runs from
    /// (`checks.d/*.sh`), each with who names it.
    pub absent: BTreeMap<String, String>,
}

/// The harness of `commands` (run at the project's root) in the tree whose files are
/// `tree`, whose contents `read` gives.
pub fn harness(
    commands: &[String],
    tree: &BTreeSet<&str>,
    read: impl Fn(&str) -> Option<Vec<u8>>,
) -> Harness {
    let mut out = Harness::default();
    let mut todo: Vec<(String, String, usize)> = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let package = read("package.json")
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v.get("scripts").and_then(|s| s.as_object()).cloned());
    for cmd in commands {
        let by = format!("`{cmd}`");
        for named in named_in_line(cmd, None, package.as_ref(), &mut Loops::new()) {
            found(named, &by, 0, tree, &mut todo, &mut out);
        }
    }
    while let Some((path, by, depth)) = todo.pop() {
        if !seen.insert(path.clone()) || seen.len() > MOST_SCRIPTS {
            continue;
        }
        out.runs.entry(path.clone()).or_insert(by);
        if depth >= MOST_DEPTH {
            continue;
        }
        let Some(text) = read(&path) else {
            continue;
        };
        let text = String::from_utf8_lossy(&text);
        let makefile = is_makefile(&path);
        let shell = makefile
            || crate::is_script_name(&path)
            || crate::runs_a_shell(text.lines().next().unwrap_or_default().as_bytes());
        if !shell {
            continue;
        }
        let by = format!("`{path}`");
        let mut loops = Loops::new();
        for line in text.lines() {
            let line = if makefile {
                match makefile_line(line) {
                    Some(l) => l,
                    None => continue,
                }
            } else {
                line.to_string()
            };
            for named in named_in_line(&line, Some(&path), package.as_ref(), &mut loops) {
                found(named, &by, depth + 1, tree, &mut todo, &mut out);
            }
        }
    }
    out
}

/// Of the paths a word may stand for, those the tree has are what it runs (to be
/// read in turn); when it has none, each is what the harness would run once written.
/// A glob is both: what it matches now, and what it would match.
fn found(
    named: Named,
    by: &str,
    depth: usize,
    tree: &BTreeSet<&str>,
    todo: &mut Vec<(String, String, usize)>,
    out: &mut Harness,
) {
    let mut matched = Vec::new();
    for path in &named.candidates {
        if path.contains(['*', '?', '[']) {
            let files: Vec<&str> = tree
                .iter()
                .copied()
                .filter(|f| glob_path(f, path))
                .collect();
            if !files.is_empty() {
                matched.push(path.clone());
            }
            todo.extend(
                files
                    .into_iter()
                    .map(|f| (f.to_string(), by.to_string(), depth)),
            );
        } else if tree.contains(path.as_str()) {
            matched.push(path.clone());
            todo.push((path.clone(), by.to_string(), depth));
        } else if is_dir_of(tree, path) {
            matched.push(path.clone());
        }
    }
    let absent = named.candidates.iter().filter(|p| {
        if matched.is_empty() {
            true
        } else {
            p.contains(['*', '?', '[']) && matched.contains(p)
        }
    });
    for path in absent {
        out.absent
            .entry(path.clone())
            .or_insert_with(|| by.to_string());
    }
}

/// Whether `path` is a directory of the tree (some file lies under it).
fn is_dir_of(tree: &BTreeSet<&str>, path: &str) -> bool {
    let dir = format!("{path}/");
    tree.range(dir.as_str()..)
        .next()
        .is_some_and(|f| f.starts_with(&dir))
}

fn is_makefile(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    matches!(name, "Makefile" | "makefile" | "GNUmakefile") || name.ends_with(".mk")
}

/// The shell of a Makefile's line: a recipe (tab first; `@`, `-`, `+` dropped), or an
/// `include` as a `.` of the files it names.
fn makefile_line(line: &str) -> Option<String> {
    if let Some(recipe) = line.strip_prefix('\t') {
        return Some(recipe.trim_start_matches(['@', '-', '+']).to_string());
    }
    let t = line.trim_start();
    for inc in ["include ", "-include ", "sinclude "] {
        if let Some(files) = t.strip_prefix(inc) {
            // `$(wildcard checks.d/*.mk)`: its patterns, as globs.
            let files = files.replace("$(wildcard", " ").replace(')', " ");
            return Some(
                files
                    .split_whitespace()
                    .map(|f| format!(". {f}"))
                    .collect::<Vec<_>>()
                    .join("; "),
            );
        }
    }
    None
}

/// A path against a pattern whose segments may hold `*` (any run of characters but
/// `/`) and `?` (one character); a `**` segment is any number of directories, and a
/// pattern ending in `/` matches everything under it.
pub fn glob_path(path: &str, pattern: &str) -> bool {
    let pattern = match pattern.strip_suffix('/') {
        Some(dir) => format!("{dir}/**/*"),
        None => pattern.to_string(),
    };
    let p: Vec<&str> = path.split('/').collect();
    let q: Vec<&str> = pattern.split('/').collect();
    glob_segments(&p, &q)
}

fn glob_segments(p: &[&str], q: &[&str]) -> bool {
    match q.split_first() {
        None => p.is_empty(),
        Some((&"**", rest)) => (0..=p.len()).any(|i| glob_segments(&p[i..], rest)),
        Some((seg, rest)) => p.split_first().is_some_and(|(first, more)| {
            glob_segment(first.as_bytes(), seg.as_bytes()) && glob_segments(more, rest)
        }),
    }
}

fn glob_segment(name: &[u8], pattern: &[u8]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => (0..=name.len()).any(|i| glob_segment(&name[i..], rest)),
        Some((b'?', rest)) => !name.is_empty() && glob_segment(&name[1..], rest),
        Some((c, rest)) => name.first() == Some(c) && glob_segment(&name[1..], rest),
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    fn tree(
        files: &[(&'static str, &'static str)],
    ) -> (BTreeSet<&'static str>, BTreeMap<&'static str, &'static str>) {
        (
            files.iter().map(|f| f.0).collect(),
            files.iter().copied().collect(),
        )
    }

    fn of(commands: &[&str], files: &[(&'static str, &'static str)]) -> Harness {
        let (paths, texts) = tree(files);
        let commands: Vec<String> = commands.iter().map(|c| c.to_string()).collect();
        harness(&commands, &paths, |p| {
            texts.get(p).map(|t| t.as_bytes().to_vec())
        })
    }

    fn keys(m: &BTreeMap<String, String>) -> Vec<&str> {
        m.keys().map(String::as_str).collect()
    }

    #[test]
    fn what_a_check_and_its_scripts_run() {
        let h = of(
            &["sh tests/check.sh"],
            &[
                (
                    "tests/check.sh",
                    "#!/bin/sh\nset -e\n# sh notes/old.sh is only a comment\n\
                     python3 scripts/verify.py --fast\n\
                     sh lib/verify.sh\n\
                     for f in checks.d/*.sh; do . \"$f\"; done\n\
                     if [ -f scripts/extra.sh ]; then . scripts/extra.sh; fi\n\
                     . \"$(dirname \"$0\")/helpers.sh\"\n\
                     grep -q 'def add' src/calc.py\n\
                     for g in src/*.py; do grep -q add \"$g\"; done\n\
                     test -f src/new.sh\n\
                     python3 -c 'import calc; assert calc.add(1, 2) == 3'\n",
                ),
                ("scripts/verify.py", "import calc\n"),
                ("lib/verify.sh", "./bin/run-more\n"),
                ("bin/run-more", "#!/usr/bin/env bash\nexit 0\n"),
                ("checks.d/a.sh", "true\n"),
                ("tests/helpers.sh", "true\n"),
                ("src/calc.py", "def add(a, b): return a + b\n"),
            ],
        );
        assert_eq!(
            keys(&h.runs),
            [
                "bin/run-more",
                "checks.d/a.sh",
                "lib/verify.sh",
                "scripts/verify.py",
                "tests/check.sh",
                "tests/helpers.sh"
            ]
        );
        assert_eq!(h.runs["tests/check.sh"], "`sh tests/check.sh`");
        assert_eq!(h.runs["bin/run-more"], "`lib/verify.sh`");
        assert_eq!(
            keys(&h.absent),
            [
                "checks.d/*.sh",
                "scripts/extra.sh",
                "tests/scripts/extra.sh"
            ]
        );
    }

    #[test]
    fn what_runs_a_list_of_files_runs_them_all() {
        let h = of(
            &[
                "sh -c 'for f in loop.d/*.sh; do . \"$f\"; done; test -f one.txt'",
                "sh tests/check.sh",
            ],
            &[
                (
                    "tests/check.sh",
                    "find find.d -name '*.sh' -exec sh {} \\;\n\
                 ls xargs.d | xargs -I{} sh xargs.d/{}\n\
                 cat cat.d/* | sh\n\
                 run-parts parts.d\n\
                 for f in $(find found.d -name '*.sh'); do . \"$f\"; done\n\
                 find pipe.d -type f | xargs sh\n\
                 find . -name '*.pyc' -delete\n",
                ),
                ("tests/Makefile", "-include $(wildcard mk.d/*.mk)\n"),
            ],
        );
        let absent = keys(&h.absent);
        for p in [
            "loop.d/*.sh",
            "find.d/**/*.sh",
            "xargs.d/*",
            "cat.d/*",
            "parts.d/**/*",
            "found.d/**/*.sh",
            "pipe.d/**/*",
        ] {
            assert!(absent.contains(&p), "{p}: {absent:?}");
        }
        // Deleting what `find` finds runs nothing.
        assert!(!absent.iter().any(|p| p.starts_with("**")), "{absent:?}");
        let h = of(
            &["make -C tests"],
            &[("tests/Makefile", "-include $(wildcard mk.d/*.mk)\n")],
        );
        assert!(
            keys(&h.absent).contains(&"tests/mk.d/*.mk"),
            "{:?}",
            h.absent
        );
    }

    #[test]
    fn makefiles_and_package_scripts_are_followed() {
        let h = of(
            &["make test", "npm test"],
            &[
                (
                    "Makefile",
                    "include rules.mk\ntest:\n\t@sh tests/run.sh\n\t-./tools/lint\n",
                ),
                ("rules.mk", "x:\n\tbash ci/x.sh\n"),
                ("tests/run.sh", ". ./lib/calc.sh\n"),
                ("lib/calc.sh", "add() { :; }\n"),
                (
                    "package.json",
                    r#"{"scripts":{"test":"npm run lint && node scripts/test.mjs","lint":"eslint .","pretest":"sh scripts/pre.sh"}}"#,
                ),
                ("scripts/test.mjs", ""),
            ],
        );
        assert_eq!(
            keys(&h.runs),
            [
                "Makefile",
                "lib/calc.sh",
                "rules.mk",
                "scripts/test.mjs",
                "tests/run.sh"
            ]
        );
        assert_eq!(keys(&h.absent), ["ci/x.sh", "scripts/pre.sh", "tools/lint"]);
    }

    #[test]
    fn globs() {
        assert!(glob_path("checks.d/a.sh", "checks.d/*.sh"));
        assert!(!glob_path("checks.d/x/a.sh", "checks.d/*.sh"));
        assert!(glob_path("a/b/c.py", "a/"));
        assert!(!glob_path("ab/c.py", "a/"));
        assert!(glob_path("t/x1.sh", "t/x?.sh"));
        assert!(glob_path("a/b/c_cases.py", "**/*_cases.py"));
        assert!(glob_path("c_cases.py", "**/*_cases.py"));
        assert!(!glob_path("a/c_cases.pyc", "**/*_cases.py"));
        assert!(glob_path("d/a/b/x.sh", "d/**/*.sh"));
        assert!(glob_path("d/x.sh", "d/**/*.sh"));
        assert!(!glob_path("e/x.sh", "d/**/*.sh"));
    }
}
