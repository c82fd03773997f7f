//! The test files a runner collected, read from the test ids of its own report: the
//! file before the first `::` (pytest's `tests/test_x.py::test_y`, Jest's, Vitest's
//! and Mocha's `test/calc.test.js::adds`), and for `go test` the `_test.go` files of
//! the package an id names (`example.com/m/ops::TestAdd` → `ops/*_test.go`). What the
//! runner ran as a test is a test, whatever it is named — except a module whose
//! doctests pytest ran (`calc.py::calc.add`), which is the work.

use std::collections::BTreeSet;
use std::path::Path;

/// The files of `tree` that the ids of one check's report say are tests.
pub fn test_files<'a>(
    ids: impl IntoIterator<Item = &'a str>,
    tree: &BTreeSet<&str>,
    go_module: Option<&str>,
) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut packages = BTreeSet::new();
    for id in ids {
        let Some((head, rest)) = id.split_once("::") else {
            continue;
        };
        let head = head.trim_start_matches("./");
        // A doctest pytest collected from a module (`calc.py::calc.add`): the module
        // is the work, its examples ride along.
        if head.ends_with(".py") && rest.split('[').next().is_some_and(|n| n.contains('.')) {
            continue;
        }
        if tree.contains(head) {
            out.insert(head.to_string());
            continue;
        }
        if let Some(module) = go_module {
            let dir = if head == module {
                Some("")
            } else {
                head.strip_prefix(module).and_then(|d| d.strip_prefix('/'))
            };
            if let Some(dir) = dir {
                packages.insert(dir.to_string());
            }
        }
    }
    for dir in packages {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        out.extend(
            tree.iter()
                .filter(|p| {
                    p.strip_prefix(prefix.as_str())
                        .is_some_and(|rest| !rest.contains('/') && rest.ends_with("_test.go"))
                })
                .map(|p| p.to_string()),
        );
    }
    out
}

/// Each baseline command's test files (see [`test_files`]), in `tree` (the paths of
/// the tree the baseline ran on) of the project at `root`.
pub fn of_commands<'a>(
    root: &Path,
    tree: &BTreeSet<&str>,
    commands: &'a [agentloop_evidence::BaselineCommand],
) -> Vec<(&'a agentloop_evidence::BaselineCommand, BTreeSet<String>)> {
    let module = go_module(root);
    commands
        .iter()
        .map(|c| {
            let files = test_files(c.tests.keys().map(String::as_str), tree, module.as_deref());
            (c, files)
        })
        .collect()
}

/// The names a runner collects by beyond the usual ones, learned from what it
/// collected (`collected`) in the tree whose files are `tree`: for a collected test
/// not named like a test, its directory's files of its kind (`checks/*.py`) when the
/// runner collected every one of them, and its name's last part anywhere
/// (`**/*_cases.py`) when every file so named was collected. A file the agent adds
/// that matches would be collected as a test.
pub fn learned(tree: &BTreeSet<&str>, collected: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let all_collected = |pattern: &str| {
        tree.iter()
            .filter(|f| crate::harness::glob_path(f, pattern))
            .all(|f| collected.contains(*f))
    };
    for file in collected {
        if crate::is_test_file(file) {
            continue;
        }
        let (dir, name) = file.rsplit_once('/').unwrap_or(("", file));
        let Some((_, ext)) = name.rsplit_once('.') else {
            continue;
        };
        let in_dir = if dir.is_empty() {
            format!("*.{ext}")
        } else {
            format!("{dir}/*.{ext}")
        };
        if all_collected(&in_dir) {
            out.insert(in_dir);
        }
        let stem = &name[..name.len() - ext.len() - 1];
        if let Some(i) = stem.rfind(['_', '-'])
            && stem.len() - i > 2
        {
            let named = format!("**/*{}", &name[i..]);
            if all_collected(&named) {
                out.insert(named);
            }
        }
    }
    out
}

/// The module path `go.mod` at `root` declares, if there is one.
pub fn go_module(root: &Path) -> Option<String> {
    let text = std::fs::read_to_string(root.join("go.mod")).ok()?;
    text.lines()
        .find_map(|l| l.trim().strip_prefix("module "))
        .map(|m| m.trim().trim_matches('"').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_a_report_names_as_tests() {
        let tree: BTreeSet<&str> = [
            "checks/calc_cases.py",
            "test/calc.test.js",
            "ops/ops.go",
            "ops/ops_test.go",
            "ops/more_test.go",
            "ops/deep/x_test.go",
            "main_test.go",
            "src/calc.py",
        ]
        .into_iter()
        .collect();
        let ids = [
            "checks/calc_cases.py::test_add[1-2]",
            "src/calc.py::calc.add",
            "./test/calc.test.js::div divides",
            "example.com/m/ops::TestAdd",
            "example.com/m::TestMain",
            "calc::tests::adds",
            "no-separator",
        ];
        let found = test_files(ids, &tree, Some("example.com/m"));
        assert_eq!(
            found.iter().map(String::as_str).collect::<Vec<_>>(),
            [
                "checks/calc_cases.py",
                "main_test.go",
                "ops/more_test.go",
                "ops/ops_test.go",
                "test/calc.test.js"
            ]
        );
    }

    #[test]
    fn the_names_a_runner_collects_by_are_learned_from_what_it_collected() {
        let tree: BTreeSet<&str> = [
            "checks/calc_cases.py",
            "checks/more_cases.py",
            "checks/helpers.py",
            "suite/a.py",
            "suite/b.py",
            "src/calc.py",
            "src/other_cases.py",
            "tests/test_x.py",
        ]
        .into_iter()
        .collect();
        let collected: BTreeSet<String> = [
            "checks/calc_cases.py",
            "checks/more_cases.py",
            "suite/a.py",
            "suite/b.py",
            "tests/test_x.py",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // checks/ holds a helper it did not collect; src/other_cases.py was not
        // collected either: neither pattern is learned from checks/. suite/ was
        // collected whole.
        assert_eq!(
            learned(&tree, &collected).into_iter().collect::<Vec<_>>(),
            ["suite/*.py"]
        );
        let tree: BTreeSet<&str> = tree
            .into_iter()
            .filter(|f| *f != "src/other_cases.py")
            .collect();
        assert_eq!(
            learned(&tree, &collected).into_iter().collect::<Vec<_>>(),
            ["**/*_cases.py", "suite/*.py"]
        );
    }

    #[test]
    fn the_module_go_mod_declares() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(go_module(d.path()), None);
        std::fs::write(
            d.path().join("go.mod"),
            "// c\nmodule example.com/strs\n\ngo 1.19\n",
        )
        .unwrap();
        assert_eq!(go_module(d.path()).as_deref(), Some("example.com/strs"));
    }
}
