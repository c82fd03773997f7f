//! What a check's environment takes from the user's tree, and what it must take from
//! the tree it judges instead: the ignored directories `[verify] carry` names
//! (`node_modules`, `.venv`), linked into the clean copy as they are, when the user's
//! tree has them; and the directories Python imports the project from, first.

use std::path::{Path, PathBuf};

/// The entries of a carried directory (`node_modules`) that link back into the
/// project — a workspace package (npm, pnpm and yarn workspaces link each one in),
/// `npm link` — as (the entry under the carried directory, its target under `root`).
/// The clean copy links each of them to its own copy of the target, so the checks
/// import the package judged, not the user's tree.
pub fn links_into_project(root: &Path, carried: &str) -> Vec<(String, String)> {
    let dir = root.join(carried);
    let (Ok(real_root), Ok(real_dir)) = (root.canonicalize(), dir.canonicalize()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut look = |path: &Path, entry: String| {
        if !std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            return;
        }
        if let Ok(target) = path.canonicalize()
            && !target.starts_with(&real_dir)
            && let Ok(rel) = target.strip_prefix(&real_root)
        {
            out.push((entry, rel.to_string_lossy().into_owned()));
        }
    };
    for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = e.path();
        let scope = name.starts_with('@') && e.file_type().is_ok_and(|t| t.is_dir());
        if scope {
            for sub in std::fs::read_dir(&path).into_iter().flatten().flatten() {
                let entry = format!("{name}/{}", sub.file_name().to_string_lossy());
                look(&sub.path(), entry);
            }
        } else {
            look(&path, name);
        }
    }
    out.sort();
    out
}

/// The most package directories looked into for their own `node_modules`.
const MOST_PACKAGES: usize = 500;

/// Installed dependencies a check may need that live in the user's tree, ignored by
/// git, so that a clean copy has them only when `[verify] carry` names them: the
/// project's `node_modules`, and each workspace package's own (pnpm links a
/// package's dependencies, its sibling packages among them, into
/// `packages/app/node_modules`), found beside a `package.json` up to three
/// directories down.
pub fn installed(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    if root.join("node_modules").is_dir() {
        out.push("node_modules".to_string());
    } else {
        return out;
    }
    let mut todo = vec![(String::new(), 0)];
    let mut looked = 0;
    while let Some((rel, depth)) = todo.pop() {
        let dir = if rel.is_empty() {
            root.to_path_buf()
        } else {
            root.join(&rel)
        };
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "node_modules" {
                continue;
            }
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            looked += 1;
            if looked > MOST_PACKAGES {
                break;
            }
            let sub = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let path = root.join(&sub);
            if path.join("package.json").is_file() && path.join("node_modules").is_dir() {
                out.push(format!("{sub}/node_modules"));
            }
            if depth < 2 {
                todo.push((sub, depth + 1));
            }
        }
    }
    out.sort();
    out
}

/// The installed dependencies at `root` ([`installed`]) that `carry` does not name:
/// a check that did not start in the clean copy most likely wanted one of them.
pub fn uncarried(root: &Path, carry: &[String]) -> Vec<String> {
    installed(root)
        .into_iter()
        .filter(|d| !carry.iter().any(|c| c.trim_matches('/') == d))
        .collect()
}

/// Why a baseline check that did not start (`problem`: no per-test evidence; exit
/// 127: a program not found) most likely did not, when the project has installed
/// dependencies the clean copy lacks: said with the fix.
pub fn did_not_start(
    command: &str,
    exit_code: Option<i32>,
    problem: bool,
    root: &Path,
    carry: &[String],
) -> Option<String> {
    let missing = uncarried(root, carry);
    if missing.is_empty() || !(problem || exit_code == Some(127)) {
        return None;
    }
    let list: Vec<String> = missing.iter().map(|m| format!("{m:?}")).collect();
    Some(format!(
        "`{command}` did not start in the clean copy: {} is not there (git ignores it, and the copy holds what git tracks); add it to `[verify] carry = [{}]`",
        missing.join(", "),
        list.join(", ")
    ))
}

/// The directories of `tree` (the copy a check runs in) that Python must import the
/// project from before anything installed: `src/` of a src layout, else the root of
/// a flat one, when it holds a package. An editable install (`pip install -e .`, uv's,
/// hatch's or poetry's) points Python at the user's own tree, or at another worker's;
/// these first on `PYTHONPATH` make the check import the tree it judges. Empty for a
/// tree that is no Python project.
pub fn python_first(tree: &Path) -> Vec<PathBuf> {
    let python = ["pyproject.toml", "setup.py", "setup.cfg"]
        .iter()
        .any(|f| tree.join(f).is_file());
    if !python {
        return Vec::new();
    }
    let holds_package = |dir: &Path, skip: &[&str]| {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                if name.starts_with('.') || skip.iter().any(|s| name.starts_with(s)) {
                    return false;
                }
                let path = e.path();
                (path.is_dir() && path.join("__init__.py").is_file())
                    || (dir.ends_with("src") && name.ends_with(".py"))
            })
    };
    let src = tree.join("src");
    if src.is_dir() && holds_package(&src, &[]) {
        return vec![src];
    }
    if holds_package(
        tree,
        &["test", "src", "doc", "build", "dist", "node_modules"],
    ) {
        return vec![tree.to_path_buf()];
    }
    Vec::new()
}

/// The entries of `carry` that the clean copy of the project at `root` links: each as
/// a path relative to the project (slashes at either end dropped), when it is there.
pub fn carried<'a>(root: &'a Path, carry: &'a [String]) -> impl Iterator<Item = &'a str> + 'a {
    carry
        .iter()
        .map(|c| c.trim_matches('/'))
        .filter(move |c| !c.is_empty() && root.join(c).exists())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_there_is_carried() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("node_modules")).unwrap();
        let carry = ["/node_modules/".to_string(), ".venv".into(), "".into()];
        assert_eq!(
            carried(dir.path(), &carry).collect::<Vec<_>>(),
            ["node_modules"]
        );
    }

    #[test]
    fn a_check_that_did_not_start_is_told_what_the_copy_lacks() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            did_not_start("npm test", Some(127), false, dir.path(), &[]),
            None
        );
        std::fs::create_dir(dir.path().join("node_modules")).unwrap();
        assert_eq!(
            did_not_start("npm test", Some(127), false, dir.path(), &[]).as_deref(),
            Some(
                "`npm test` did not start in the clean copy: node_modules is not there (git ignores it, and the copy holds what git tracks); add it to `[verify] carry = [\"node_modules\"]`"
            )
        );
        assert_eq!(
            did_not_start("npm test", Some(1), false, dir.path(), &[]),
            None,
            "it ran"
        );
        assert_eq!(
            did_not_start(
                "npm test",
                None,
                true,
                dir.path(),
                &["node_modules/".into()]
            ),
            None,
            "carried"
        );
    }

    #[test]
    fn workspace_packages_linked_into_node_modules_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in [
            "packages/util",
            "node_modules/dep",
            "node_modules/@acme",
            "node_modules/.pnpm/x",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        use std::os::unix::fs::symlink;
        symlink("../../packages/util", root.join("node_modules/@acme/util")).unwrap();
        symlink("../packages/util", root.join("node_modules/util-too")).unwrap();
        symlink(".pnpm/x", root.join("node_modules/x")).unwrap();
        let outside = tempfile::tempdir().unwrap();
        symlink(outside.path(), root.join("node_modules/global")).unwrap();
        assert_eq!(
            links_into_project(root, "node_modules"),
            [
                ("@acme/util".to_string(), "packages/util".to_string()),
                ("util-too".to_string(), "packages/util".to_string())
            ]
        );
        assert!(links_into_project(root, "absent").is_empty());
    }

    #[test]
    fn python_imports_the_project_from_the_tree_it_judges() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path();
        let write = |rel: &str| {
            let p = t.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        };
        write("src/minicalc/__init__.py");
        write("tests/__init__.py");
        assert_eq!(python_first(t), Vec::<PathBuf>::new(), "no Python project");
        write("pyproject.toml");
        assert_eq!(python_first(t), [t.join("src")]);
        std::fs::remove_dir_all(t.join("src")).unwrap();
        assert_eq!(
            python_first(t),
            Vec::<PathBuf>::new(),
            "tests are not the project"
        );
        write("calc/__init__.py");
        assert_eq!(python_first(t), [t.to_path_buf()]);
    }
}
