//! What `[verify] carry` links into a tree the checks run in (a clean copy, a merge
//! worktree): the project's ignored, installed directories (`node_modules`) as they
//! are, from the project itself also when the tree is of a worker's worktree; and,
//! where such a directory links back into the project (a workspace package), entry by
//! entry, each link back pointed at the tree's own copy of its target.

use std::path::{Path, PathBuf};

/// Links `carry` into `dir`, a tree of the project at `root` (or of a worktree of it).
pub fn link(root: &Path, dir: &Path, carry: &[String]) -> Result<(), String> {
    let main = main_worktree(root);
    let carried: Vec<(&Path, &str)> = agentloop_project::carried(root, carry)
        .map(|c| (root, c))
        .chain(
            main.iter()
                .flat_map(|m| agentloop_project::carried(m, carry).map(move |c| (m.as_path(), c))),
        )
        .collect();
    let mut done = std::collections::BTreeSet::new();
    for (source, c) in carried {
        if !done.insert(c) {
            continue;
        }
        let (from, to) = (source.join(c), dir.join(c));
        let back = agentloop_project::links_into_project(source, c);
        if !back.is_empty() {
            link_entries(dir, &from, &to, &back)?;
            continue;
        }
        if std::fs::symlink_metadata(&to).is_err() {
            if let Some(p) = to.parent() {
                std::fs::create_dir_all(p).map_err(|e| format!("{}: {e}", p.display()))?;
            }
            std::os::unix::fs::symlink(&from, &to).map_err(|e| format!("{}: {e}", to.display()))?;
        }
    }
    Ok(())
}

/// The project's main worktree, when `root` is a linked one (a worker's): git leaves
/// ignored directories like `node_modules` out of a new worktree, so what is carried
/// comes from there.
fn main_worktree(root: &Path) -> Option<PathBuf> {
    if !root.join(".git").is_file() {
        return None;
    }
    let common = agentloop_exec::git::dirs(root)?.common;
    (common.file_name()? == ".git")
        .then(|| common.parent().map(Path::to_path_buf))
        .flatten()
        .filter(|m| *m != root)
}

/// The mark of a carried directory made entry by entry here, so that the next refresh
/// knows it for its own and not the tree's.
const MADE: &str = ".agentloop-carried";

/// A carried directory with entries that link back into the project (`back`: entry
/// → target under the project), made entry by entry in `dir`'s `to`: each such entry
/// links to `dir`'s own target, every other one to the user's entry as it is. Made
/// again at every call, so what the user installs since is there.
fn link_entries(
    dir: &Path,
    from: &Path,
    to: &Path,
    back: &[(String, String)],
) -> Result<(), String> {
    let err = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    match std::fs::symlink_metadata(to) {
        Ok(m) if m.file_type().is_symlink() => std::fs::remove_file(to).map_err(|e| err(to, e))?,
        // Made here before: made again.
        Ok(m) if m.is_dir() && to.join(MADE).exists() => {
            std::fs::remove_dir_all(to).map_err(|e| err(to, e))?
        }
        // The tree's own (tracked, or what a check made): left as it is.
        Ok(_) => return Ok(()),
        Err(_) => {}
    }
    std::fs::create_dir_all(to).map_err(|e| err(to, e))?;
    std::fs::write(to.join(MADE), "").map_err(|e| err(to, e))?;
    let target = |entry: &str| {
        back.iter()
            .find(|(e, _)| e == entry)
            .map(|(_, t)| dir.join(t))
    };
    for e in std::fs::read_dir(from).map_err(|e| err(from, e))?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if back.iter().any(|(b, _)| b.starts_with(&format!("{name}/"))) {
            let scope = to.join(&name);
            std::fs::create_dir_all(&scope).map_err(|e| err(&scope, e))?;
            for sub in std::fs::read_dir(e.path())
                .map_err(|x| err(&e.path(), x))?
                .flatten()
            {
                let entry = format!("{name}/{}", sub.file_name().to_string_lossy());
                let link = to.join(&entry);
                let at = target(&entry).unwrap_or_else(|| sub.path());
                std::os::unix::fs::symlink(&at, &link).map_err(|e| err(&link, e))?;
            }
            continue;
        }
        let link = to.join(&name);
        let at = target(&name).unwrap_or_else(|| e.path());
        std::os::unix::fs::symlink(&at, &link).map_err(|e| err(&link, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_the_tree_has_of_its_own_is_left_as_it_is() {
        let tmp = tempfile::tempdir().unwrap();
        let (root, dir) = (tmp.path().join("p"), tmp.path().join("copy"));
        std::fs::create_dir_all(root.join("packages/util")).unwrap();
        std::fs::create_dir_all(root.join("node_modules/@acme")).unwrap();
        std::os::unix::fs::symlink("../../packages/util", root.join("node_modules/@acme/util"))
            .unwrap();
        // The tree judged has a node_modules of its own (tracked): not replaced.
        std::fs::create_dir_all(dir.join("node_modules/own")).unwrap();
        link(&root, &dir, &["node_modules".into()]).unwrap();
        assert!(dir.join("node_modules/own").is_dir());
        assert!(!dir.join("node_modules/@acme").exists());
        // Made here, it is made again at the next call.
        std::fs::remove_dir_all(dir.join("node_modules")).unwrap();
        link(&root, &dir, &["node_modules".into()]).unwrap();
        link(&root, &dir, &["node_modules".into()]).unwrap();
        assert!(
            std::fs::symlink_metadata(dir.join("node_modules/@acme/util"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }
}
