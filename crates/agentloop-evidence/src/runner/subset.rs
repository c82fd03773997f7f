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

/// The paths `part` runs, when `part` runs a part of what `whole` runs: both pytest,
/// run where they are, with the same words but their paths (files, directories, node
/// ids: `tests/test_x.py::test_a`), each of `part`'s under one of `whole`'s (or
/// `whole` naming none).
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
    let is_path = |a: &str| {
        !a.starts_with('-')
            && !a.is_empty()
            && !a.contains("..")
            && !a.starts_with('/')
            && workdir.join(a.split("::").next().unwrap_or(a)).exists()
    };
    let split = |words: &[String]| -> (Vec<String>, Vec<String>) {
        let (paths, rest): (Vec<&String>, Vec<&String>) = words.iter().partition(|a| is_path(a));
        (
            paths
                .into_iter()
                .map(|a| a.trim_start_matches("./").trim_end_matches('/').to_string())
                .collect(),
            rest.into_iter().cloned().collect(),
        )
    };
    let (part_paths, part_rest) = split(&p.words);
    let (whole_paths, whole_rest) = split(&w.words);
    let stops = whole_rest.iter().any(|a| {
        STOPS_EARLY
            .iter()
            .any(|s| a == s || a.starts_with(&format!("{s}=")))
    });
    if stops || part_rest != whole_rest || part_paths.is_empty() {
        return None;
    }
    let under = |p: &str| {
        whole_paths.is_empty()
            || whole_paths.iter().any(|w| {
                p == w
                    || p.strip_prefix(w.as_str())
                        .is_some_and(|r| r.starts_with('/') || r.starts_with("::"))
            })
    };
    part_paths.iter().all(|p| under(p)).then_some(part_paths)
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
