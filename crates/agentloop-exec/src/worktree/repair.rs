//! Clearing what a killed driver left half-made in git's worktree bookkeeping.

use std::path::Path;

use super::{git, text};

/// Clears what a killed driver left half-made in git's worktree bookkeeping (an entry
/// without its `commondir` or `gitdir`, which makes every command that lists worktrees
/// fail; an entry still locked by a `worktree add` that was killed), then prunes
/// entries whose directories are gone.
pub fn repair(root: &Path) {
    let _admin = crate::git::worktree_admin();
    if let Some(common) = crate::git::dirs(root).map(|d| d.common) {
        let entries = common.join("worktrees");
        // `worktree add` locks its entry ("initializing") until its checkout is done,
        // and prune leaves locked entries alone: one whose git was killed stays for
        // good, its files half checked out (an agent working there would commit the
        // rest as deleted). Unless a git is at work in the repository to be making
        // it, the worktree goes, to be made again.
        let idle = || crate::reap::gits_in(&[root, &common]).is_empty();
        for e in std::fs::read_dir(&entries).into_iter().flatten().flatten() {
            let p = e.path();
            if !p.join("commondir").is_file() || !p.join("gitdir").is_file() {
                let _ = std::fs::remove_dir_all(&p);
                continue;
            }
            let initializing =
                std::fs::read_to_string(p.join("locked")).is_ok_and(|l| l.trim() == "initializing");
            if initializing && idle() {
                // (Only a worktree of agentloop's own: this bookkeeping is in the
                // project's `.git`, which a sandboxed worker writes into.)
                if let Some(dir) = std::fs::read_to_string(p.join("gitdir"))
                    .ok()
                    .and_then(|g| Path::new(g.trim()).parent().map(Path::to_path_buf))
                    .filter(|d| agentloops_own(d))
                {
                    let _ = std::fs::remove_dir_all(dir);
                }
                let _ = std::fs::remove_dir_all(&p);
            }
        }
    }
    let _ = text(git(root, &["worktree", "prune"]));
}

/// `git worktree prune`, when git's bookkeeping holds a worktree whose files are gone
/// (no `gitdir` file, or one naming a `.git` that is not there), which is all that
/// prune removes; else no git process is started (a worker's lane adds and removes
/// worktrees at every task). The caller holds [`crate::git::worktree_admin`].
pub fn prune(root: &Path) {
    let stale = crate::git::dirs(root).is_none_or(|d| {
        let entries = std::fs::read_dir(d.common.join("worktrees"));
        entries.into_iter().flatten().flatten().any(|e| {
            std::fs::read_to_string(e.path().join("gitdir"))
                .map_or(true, |g| !e.path().join(g.trim()).exists())
        })
    });
    if stale {
        let _ = text(git(root, &["worktree", "prune"]));
    }
}

/// Whether `dir` is one of agentloop's worktrees: strictly inside the agents' (the
/// cache's `worktrees/`) or the judges' directory, named without `..`, and not a link
/// (a link on the way is judged by where it leads).
fn agentloops_own(dir: &Path) -> bool {
    let plain = dir.is_absolute()
        && !dir
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir));
    let link = std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink());
    let Ok(real) = dir.canonicalize() else {
        return false;
    };
    let places = [
        agentloop_ground::fsutil::cache_dir().map(|c| c.join("worktrees")),
        agentloop_ground::fsutil::judge_dir(),
    ];
    plain
        && !link
        && places
            .into_iter()
            .flatten()
            .filter_map(|p| p.canonicalize().ok())
            .any(|p| real.starts_with(&p) && real != p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A registration whose work tree is gone is pruned, and one without its `gitdir`
    /// file; a live one is kept. (That no git starts while all are live is not seen
    /// here: prune would keep them too.)
    #[test]
    fn only_worktrees_whose_files_are_gone_are_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        let git_ok = |args: &[&str]| {
            let out = git(&repo, args).output().unwrap();
            assert!(out.status.success(), "{args:?}: {out:?}");
        };
        git_ok(&["init", "-q"]);
        git_ok(&[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "one",
        ]);
        let [live, gone] = ["live", "gone"].map(|n| dir.path().join(n));
        for w in [&live, &gone] {
            git_ok(&["worktree", "add", "-q", "--detach", w.to_str().unwrap()]);
        }
        let entries = || -> Vec<String> {
            let mut v: Vec<String> = std::fs::read_dir(repo.join(".git/worktrees"))
                .unwrap()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        };
        prune(&repo);
        assert_eq!(entries(), ["gone", "live"]);
        std::fs::remove_dir_all(&gone).unwrap();
        prune(&repo);
        assert_eq!(entries(), ["live"]);
        // A registration without its `gitdir` file is gone too.
        std::fs::create_dir(repo.join(".git/worktrees/half")).unwrap();
        prune(&repo);
        assert_eq!(entries(), ["live"]);
    }
}
