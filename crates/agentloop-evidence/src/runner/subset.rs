//! One check's tests read from another's run: a pytest check that is another pytest
//! check with paths added (`python3 -m pytest tests/test_x.py` beside `python3 -m
//! pytest`), or a `go test` of some of the packages another runs (`go test ./reverse/`
//! beside `go test ./...`), runs a part of what the other runs, on the same tree, so
//! at the test baseline its report is the other's, cut to those paths, and it is not
//! run again.

use std::collections::BTreeMap;
use std::path::Path;

use super::Runner;
use super::command::recognise;
use crate::report::{Outcome, Report};

/// Options after which pytest runs less than the whole of what it collects: a part
/// cut from such a run could lack tests its own run has.
const STOPS_EARLY: &[&str] = &[
    "-x",
    "--exitfirst",
    "--maxfail",
    "--lf",
    "--last-failed",
    "--ff",
    "--sw",
    "--stepwise",
];

/// pytest's options that take their value as the next word (`-k expr`): that word is
/// never a path.
const TAKES_VALUE: &[&str] = &[
    "-k",
    "-m",
    "-p",
    "-c",
    "-o",
    "-W",
    "-r",
    "-n",
    "--rootdir",
    "--ignore",
    "--ignore-glob",
    "--deselect",
    "--confcutdir",
    "--basetemp",
    "--import-mode",
    "--junitxml",
    "--junit-xml",
    "--junit-prefix",
    "--log-level",
    "--log-file",
    "--tb",
    "--maxfail",
    "--durations",
    "--override-ini",
    "--config-file",
    "--cov",
    "--cov-report",
    "--cov-config",
    "--dist",
    "--timeout",
];

/// The configuration files pytest takes its rootdir and options from, in the order it
/// looks for them (pytest 9: `pytest.toml` first; it and `pytest.ini` are the
/// configuration even when they have no `[pytest]` section).
const PYTEST_CONFIGS: &[&str] = &[
    "pytest.toml",
    ".pytest.toml",
    "pytest.ini",
    ".pytest.ini",
    "pyproject.toml",
    "tox.ini",
    "setup.cfg",
];

/// A pytest command's words split in two: the paths it runs (files, directories, node
/// ids of `workdir`, `./` and a trailing `/` dropped) and every other word, in order.
pub(super) fn pytest_split(words: &[String], workdir: &Path) -> (Vec<String>, Vec<String>) {
    let (mut paths, mut rest) = (Vec::new(), Vec::new());
    for (i, a) in words.iter().enumerate() {
        let value = i > 0 && TAKES_VALUE.contains(&words[i - 1].as_str());
        let path = !value
            && !a.starts_with('-')
            && !a.is_empty()
            && !a.contains("..")
            && !a.starts_with('/')
            && workdir.join(a.split("::").next().unwrap_or(a)).exists();
        if path {
            paths.push(a.trim_start_matches("./").trim_end_matches('/').to_string());
        } else {
            rest.push(a.clone());
        }
    }
    (paths, rest)
}

/// A pytest command's arguments without its paths: its options, each with its value
/// (every other word pytest takes is a path or a node id).
pub(super) fn pytest_options(args: &[String]) -> Vec<String> {
    args.iter()
        .enumerate()
        .filter(|(i, a)| {
            a.starts_with('-') || (*i > 0 && TAKES_VALUE.contains(&args[i - 1].as_str()))
        })
        .map(|(_, a)| a.clone())
        .collect()
}

/// The paths `part` runs, when `part` runs a part of what `whole` runs: both pytest,
/// run where they are, with the same words but their paths (files, directories, node
/// ids: `tests/test_x.py::test_a`), each of `part`'s under one of `whole`'s — or, when
/// `whole` names none, under its `testpaths` if the configuration sets them — and no
/// pytest configuration between the root and a part's path (it would be the part's
/// rootdir, with options and test ids of its own). None when the whole may stop early
/// (`-x`, `--maxfail`, in its words, its configuration's `addopts` or
/// `PYTEST_ADDOPTS`).
pub fn selected_from(part: &str, whole: &str, workdir: &Path) -> Option<Vec<String>> {
    if part == whole {
        return None;
    }
    let (p, w) = (
        recognise(part, Some(workdir))?,
        recognise(whole, Some(workdir))?,
    );
    if p.via_script || w.via_script || p.runner != w.runner {
        return None;
    }
    if p.runner == Runner::GoTest {
        return go_packages(
            &p.words[p.program_end..],
            &w.words[w.program_end..],
            workdir,
        )
        .filter(|_| p.words[..p.program_end] == w.words[..w.program_end]);
    }
    if p.runner != Runner::Pytest {
        return None;
    }
    let (part_paths, part_rest) = pytest_split(&p.words, workdir);
    let (whole_paths, whole_rest) = pytest_split(&w.words, workdir);
    let (testpaths, addopts) = pytest_settings(workdir);
    let environment = std::env::var("PYTEST_ADDOPTS").unwrap_or_default();
    let stops = whole_rest
        .iter()
        .map(String::as_str)
        .chain(addopts.split_whitespace())
        .chain(environment.split_whitespace())
        .any(|a| {
            STOPS_EARLY
                .iter()
                .any(|s| a == *s || a.starts_with(&format!("{s}=")))
                || exits_first_among(a)
        });
    if stops || part_rest != whole_rest || part_paths.is_empty() {
        return None;
    }
    let within = |p: &str, of: &str| {
        p == of
            || p.strip_prefix(of)
                .is_some_and(|r| r.starts_with('/') || r.starts_with("::"))
    };
    let roots: Vec<String> = if whole_paths.is_empty() {
        testpaths
    } else {
        whole_paths
    };
    let under = |p: &str| roots.is_empty() || roots.iter().any(|w| within(p, w));
    // A pytest configuration in a directory between the root and the path.
    let own_config = |p: &str| {
        let file = p.split("::").next().unwrap_or(p);
        let mut dir = Path::new(file);
        let mut found = false;
        while let Some(parent) = dir.parent() {
            if parent.as_os_str().is_empty() {
                break;
            }
            if workdir.join(parent).is_dir()
                && PYTEST_CONFIGS
                    .iter()
                    .any(|c| workdir.join(parent).join(c).is_file())
            {
                found = true;
            }
            dir = parent;
        }
        found
            || (workdir.join(file).is_dir()
                && PYTEST_CONFIGS
                    .iter()
                    .any(|c| workdir.join(file).join(c).is_file()))
    };
    part_paths
        .iter()
        .all(|p| under(p) && !own_config(p))
        .then_some(part_paths)
}

/// `go test`'s arguments split: its flags (each with its value) and its packages.
fn go_split(args: &[String]) -> (Vec<String>, Vec<String>) {
    let (mut flags, mut packages) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a.starts_with('-') {
            flags.push(a.clone());
            let name = a.split('=').next().unwrap_or(a);
            if !a.contains('=') && super::GO_TAKES_VALUE.contains(&name) {
                if let Some(v) = args.get(i + 1) {
                    flags.push(v.clone());
                }
                i += 1;
            }
        } else {
            packages.push(a.clone());
        }
        i += 1;
    }
    (flags, packages)
}

/// The packages a `go test` part runs of what its whole runs, as selectors of its
/// report's ids: `example.com/m/reverse::` (that package), `example.com/m/util/...`
/// (that package and those below). Both with the same flags (no `-failfast`, which
/// stops a package's tests early), every package a directory of the module, each of
/// the part's under one of the whole's (`./...`, `./util/...`, or itself).
fn go_packages(part: &[String], whole: &[String], workdir: &Path) -> Option<Vec<String>> {
    let (part_flags, part_packages) = go_split(part);
    let (whole_flags, whole_packages) = go_split(whole);
    if part_flags != whole_flags
        || part_flags
            .iter()
            .any(|f| f.trim_start_matches('-').starts_with("failfast"))
        || part_packages.is_empty()
    {
        return None;
    }
    let module = std::fs::read_to_string(workdir.join("go.mod"))
        .ok()?
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("module ")
                .map(|m| m.trim().to_string())
        })?;
    // `./x/...` → ("x", true); `./x/`, `./x` → ("x", false); `./...` → ("", true).
    let local = |p: &str| -> Option<(String, bool)> {
        let p = p.strip_prefix("./").or_else(|| (p == ".").then_some(""))?;
        let (dir, all) = match p.strip_suffix("...") {
            Some(d) => (d.trim_end_matches('/'), true),
            None => (p.trim_end_matches('/'), false),
        };
        (!dir.contains("..") && workdir.join(dir).is_dir()).then(|| (dir.to_string(), all))
    };
    let wholes: Vec<(String, bool)> = whole_packages
        .iter()
        .map(|p| local(p))
        .collect::<Option<_>>()?;
    let mut out = Vec::new();
    for p in &part_packages {
        let (dir, all) = local(p)?;
        let under = wholes.iter().any(|(w, w_all)| {
            (w == &dir && (*w_all || !all))
                || (*w_all
                    && (w.is_empty()
                        || dir
                            .strip_prefix(w.as_str())
                            .is_some_and(|r| r.starts_with('/'))))
        });
        if !under {
            return None;
        }
        let path = if dir.is_empty() {
            module.clone()
        } else {
            format!("{module}/{dir}")
        };
        out.push(if all {
            format!("{path}/...")
        } else {
            format!("{path}::")
        });
    }
    Some(out)
}

/// The root's pytest configuration: its `testpaths` and its `addopts`, as words.
pub(super) fn pytest_settings(workdir: &Path) -> (Vec<String>, String) {
    for name in PYTEST_CONFIGS {
        let Ok(text) = std::fs::read_to_string(workdir.join(name)) else {
            continue;
        };
        // `[tool.pytest.ini_options]`, or pytest 9's native `[tool.pytest]` table.
        let toml_section = |t: &toml::Table| -> Option<toml::Table> {
            let s = if *name == "pyproject.toml" {
                let tool = t.get("tool")?.get("pytest")?;
                match tool.get("ini_options") {
                    Some(ini) => ini,
                    None => tool,
                }
            } else {
                t.get("pytest")?
            };
            s.as_table().cloned()
        };
        if name.ends_with(".toml") {
            let Some(section) = text
                .parse::<toml::Table>()
                .ok()
                .as_ref()
                .and_then(toml_section)
            else {
                // `pytest.toml` is the configuration all the same.
                if name.contains("pytest.toml") {
                    return (Vec::new(), String::new());
                }
                continue;
            };
            let words = |k: &str| -> Vec<String> {
                match section.get(k) {
                    Some(toml::Value::String(s)) => {
                        s.split_whitespace().map(str::to_string).collect()
                    }
                    Some(toml::Value::Array(a)) => a
                        .iter()
                        .filter_map(|v| v.as_str())
                        .map(str::to_string)
                        .collect(),
                    _ => Vec::new(),
                }
            };
            return (clean(words("testpaths")), words("addopts").join(" "));
        }
        let mut section = None;
        let (mut testpaths, mut addopts, mut key) = (Vec::new(), String::new(), "");
        let mut found = false;
        for line in text.lines() {
            let t = line.trim();
            if let Some(h) = t.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
                section = Some(h.trim().to_string());
                key = "";
                continue;
            }
            let ours = matches!(section.as_deref(), Some("pytest" | "tool:pytest"));
            if !ours {
                continue;
            }
            found = true;
            let (k, v) = if line.starts_with([' ', '\t']) && !key.is_empty() {
                (key, t)
            } else if let Some((k, v)) = t.split_once('=') {
                key = match k.trim() {
                    "testpaths" => "testpaths",
                    "addopts" => "addopts",
                    _ => "",
                };
                (key, v.trim())
            } else {
                continue;
            };
            match k {
                "testpaths" => testpaths.extend(v.split_whitespace().map(str::to_string)),
                "addopts" => {
                    addopts.push(' ');
                    addopts.push_str(v);
                }
                _ => {}
            }
        }
        if found || name.contains("pytest.ini") {
            return (clean(testpaths), addopts);
        }
    }
    (Vec::new(), String::new())
}

/// Whether `word` is short options run together that hold `-x` (`-xq`, `-vx`):
/// letters up to one that takes a value (`-rx` is `-r x`, not `-x`).
fn exits_first_among(word: &str) -> bool {
    let Some(letters) = word.strip_prefix('-').filter(|l| !l.starts_with('-')) else {
        return false;
    };
    for c in letters.chars() {
        if c == 'x' {
            return true;
        }
        if TAKES_VALUE.iter().any(|t| t.len() == 2 && t.ends_with(c)) || !c.is_ascii_alphabetic() {
            return false;
        }
    }
    false
}

fn clean(paths: Vec<String>) -> Vec<String> {
    paths
        .into_iter()
        .map(|p| p.trim_start_matches("./").trim_end_matches('/').to_string())
        .filter(|p| !p.is_empty() && !p.contains('*'))
        .collect()
}

/// Whether a file-level id (`tests/test_x.py`, a go package that did not build)
/// lies under `path`.
fn within_path(id: &str, path: &str) -> bool {
    let path = path.split("::").next().unwrap_or(path);
    let path = path
        .strip_suffix("/...")
        .unwrap_or(path)
        .trim_end_matches('/');
    id == path || id.strip_prefix(path).is_some_and(|r| r.starts_with('/'))
}

/// Whether test `id` (`tests/test_x.py::TestC::test_a[1]`) is one `path` selects: a
/// directory it lies under, its file, or its node id (or a class or parameters of it).
pub fn selects(path: &str, id: &str) -> bool {
    // go's selectors: one package (`m/x::`), or a package and those below (`m/x/...`).
    if path.ends_with("::") {
        return id.starts_with(path);
    }
    if let Some(prefix) = path.strip_suffix("/...") {
        return id
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with("::") || rest.starts_with('/'));
    }
    let path = path.trim_end_matches('/');
    if path.contains("::") {
        return id == path
            || id
                .strip_prefix(path)
                .is_some_and(|rest| rest.starts_with("::") || rest.starts_with('['));
    }
    id.strip_prefix(path)
        .is_some_and(|rest| rest.starts_with("::") || rest.starts_with('/'))
}

/// Of `tests` (id → outcome, the whole's report), the ones `paths` select; `None`
/// when a path selects none of them (it may name what the whole does not collect:
/// the part is then run as it is).
pub fn cut(
    tests: &BTreeMap<String, Outcome>,
    paths: &[String],
) -> Option<BTreeMap<String, Outcome>> {
    let mut out = BTreeMap::new();
    for p in paths {
        let before = out.len();
        for (id, o) in tests {
            if selects(p, id) {
                out.insert(id.clone(), *o);
            }
        }
        if out.len() == before {
            return None;
        }
    }
    // A file that did not import in the whole's run (an id with no test in it) hides
    // what the part's own run might collect there.
    if out.keys().any(|id| !id.contains("::"))
        || tests
            .keys()
            .any(|id| !id.contains("::") && paths.iter().any(|p| within_path(id, p)))
    {
        return None;
    }
    Some(out)
}

/// `report` (the whole's) cut to the tests `paths` select, as [`cut`] would cut its
/// outcomes: `None` when the part cannot be read from it.
pub fn cut_report(report: &Report, paths: &[String]) -> Option<Report> {
    let outcomes: BTreeMap<String, Outcome> = report
        .tests
        .iter()
        .map(|t| (t.id.clone(), t.outcome))
        .collect();
    let kept = cut(&outcomes, paths)?;
    Some(Report {
        tests: report
            .tests
            .iter()
            .filter(|t| kept.contains_key(&t.id))
            .cloned()
            .collect(),
        notes: report.notes.clone(),
        python: report.python.clone(),
    })
}

#[cfg(test)]
mod tests;
