//! One check's tests read from another's run: a pytest check that is another pytest
//! check with paths added (`python3 -m pytest tests/test_x.py` beside `python3 -m
//! pytest`) runs a part of what the other runs, on the same tree, so at the test
//! baseline its report is the other's, cut to those paths, and it is not run again.

use std::collections::BTreeMap;
use std::path::Path;

use super::Runner;
use super::command::recognise;
use crate::report::Outcome;

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

/// The configuration files pytest takes its rootdir and options from.
const PYTEST_CONFIGS: &[&str] = &[
    "pytest.ini",
    ".pytest.ini",
    "pytest.toml",
    ".pytest.toml",
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
    if p.runner != Runner::Pytest || w.runner != Runner::Pytest || p.via_script || w.via_script {
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

/// The root's pytest configuration: its `testpaths` and its `addopts`, as words.
fn pytest_settings(workdir: &Path) -> (Vec<String>, String) {
    for name in PYTEST_CONFIGS {
        let Ok(text) = std::fs::read_to_string(workdir.join(name)) else {
            continue;
        };
        let toml_section = |t: &toml::Table| -> Option<toml::Table> {
            let s = if *name == "pyproject.toml" {
                t.get("tool")?.get("pytest")?.get("ini_options")?
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
        if found {
            return (clean(testpaths), addopts);
        }
    }
    (Vec::new(), String::new())
}

fn clean(paths: Vec<String>) -> Vec<String> {
    paths
        .into_iter()
        .map(|p| p.trim_start_matches("./").trim_end_matches('/').to_string())
        .filter(|p| !p.is_empty() && !p.contains('*'))
        .collect()
}

/// Whether a file-level id (`tests/test_x.py`) lies under `path`.
fn within_path(id: &str, path: &str) -> bool {
    let path = path
        .split("::")
        .next()
        .unwrap_or(path)
        .trim_end_matches('/');
    id == path || id.strip_prefix(path).is_some_and(|r| r.starts_with('/'))
}

/// Whether test `id` (`tests/test_x.py::TestC::test_a[1]`) is one `path` selects: a
/// directory it lies under, its file, or its node id (or a class or parameters of it).
pub fn selects(path: &str, id: &str) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pytest_check_with_paths_added_is_a_part_of_the_one_without() {
        let d = tempfile::tempdir().unwrap();
        let w = d.path();
        std::fs::create_dir_all(w.join("tests")).unwrap();
        std::fs::write(w.join("tests/test_x.py"), "").unwrap();
        let part = selected_from(
            "python3 -m pytest -q tests/test_x.py",
            "python3 -m pytest -q",
            w,
        );
        assert_eq!(part, Some(vec!["tests/test_x.py".to_string()]));
        let node = selected_from(
            "python3 -m pytest -q ./tests/test_x.py::test_a",
            "python3 -m pytest -q",
            w,
        );
        assert_eq!(node, Some(vec!["tests/test_x.py::test_a".to_string()]));
        // Under the whole's own paths.
        let under = selected_from(
            "python3 -m pytest tests/test_x.py",
            "python3 -m pytest tests",
            w,
        );
        assert_eq!(under, Some(vec!["tests/test_x.py".to_string()]));
        // An option of its own, another runner's words, a path outside the whole's, a
        // path that is not there, a whole that may stop early: none is a part.
        std::fs::create_dir_all(w.join("other")).unwrap();
        for (part, whole) in [
            (
                "python3 -m pytest -q -k add tests/test_x.py",
                "python3 -m pytest -q",
            ),
            ("python3 -m pytest tests/test_x.py", "python3 -m pytest -q"),
            (
                "python3 -m pytest -q tests/test_x.py",
                "python3 -m pytest -q other/",
            ),
            (
                "python3 -m pytest -q tests/test_gone.py",
                "python3 -m pytest -q",
            ),
            ("python3 -m pytest -q", "python3 -m pytest -q"),
            (
                "python3 -m pytest -x tests/test_x.py",
                "python3 -m pytest -x",
            ),
            ("go test ./tests/", "go test"),
        ] {
            assert_eq!(selected_from(part, whole, w), None, "{part} of {whole}");
        }
    }

    #[test]
    fn what_would_make_the_parts_own_run_differ_keeps_it_apart() {
        let d = tempfile::tempdir().unwrap();
        let w = d.path();
        for f in [
            "tests/unit/test_a.py",
            "tests/integration/test_b.py",
            "pkg/foo/tests/test_c.py",
            "api/test_d.py",
        ] {
            std::fs::create_dir_all(w.join(f).parent().unwrap()).unwrap();
            std::fs::write(w.join(f), "").unwrap();
        }
        let part = |p: &str, whole: &str| selected_from(p, whole, w);
        // A configuration of its own below the root: another rootdir.
        std::fs::write(
            w.join("pkg/foo/pyproject.toml"),
            "[tool.pytest.ini_options]\n",
        )
        .unwrap();
        assert_eq!(part("pytest pkg/foo/tests", "pytest"), None);
        // `testpaths`: the whole collects only there.
        std::fs::write(
            w.join("pytest.ini"),
            "[pytest]\ntestpaths =\n    tests/unit\n",
        )
        .unwrap();
        assert_eq!(part("pytest tests", "pytest"), None);
        assert_eq!(
            part("pytest tests/unit/test_a.py", "pytest"),
            Some(vec!["tests/unit/test_a.py".to_string()])
        );
        // `-x` in `addopts`: the whole may stop before the part's tests.
        std::fs::write(w.join("pytest.ini"), "[pytest]\naddopts = -q -x\n").unwrap();
        assert_eq!(part("pytest tests/unit/test_a.py", "pytest"), None);
        std::fs::remove_file(w.join("pytest.ini")).unwrap();
        // An option's value that happens to name a directory is no path.
        assert_eq!(part("pytest -k api", "pytest -k db"), None);
        // A file that did not import in the whole's run.
        let tests: BTreeMap<String, Outcome> = [
            ("tests/unit/test_a.py", Outcome::Errored),
            ("tests/unit/test_e.py::test_e", Outcome::Passed),
        ]
        .into_iter()
        .map(|(i, o)| (i.to_string(), o))
        .collect();
        assert_eq!(cut(&tests, &["tests/unit".to_string()]), None);
    }

    #[test]
    fn the_whole_report_is_cut_to_the_paths() {
        let tests: BTreeMap<String, Outcome> = [
            ("tests/test_x.py::test_a", Outcome::Passed),
            ("tests/test_x.py::test_a[1]", Outcome::Failed),
            ("tests/test_x.py::TestC::test_b", Outcome::Passed),
            ("tests/test_xy.py::test_c", Outcome::Passed),
            ("tests/sub/test_y.py::test_d", Outcome::Passed),
        ]
        .into_iter()
        .map(|(i, o)| (i.to_string(), o))
        .collect();
        let ids = |paths: &[&str]| {
            cut(
                &tests,
                &paths.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
            )
            .map(|m| m.into_keys().collect::<Vec<_>>())
        };
        assert_eq!(
            ids(&["tests/test_x.py"]).unwrap(),
            [
                "tests/test_x.py::TestC::test_b",
                "tests/test_x.py::test_a",
                "tests/test_x.py::test_a[1]"
            ]
        );
        assert_eq!(
            ids(&["tests/test_x.py::test_a"]).unwrap(),
            ["tests/test_x.py::test_a", "tests/test_x.py::test_a[1]"]
        );
        assert_eq!(
            ids(&["tests/sub/"]).unwrap(),
            ["tests/sub/test_y.py::test_d"]
        );
        assert_eq!(ids(&["tests/test_none.py"]), None);
    }
}
