//! Where a repository is and keeps its files, found on the file system where git's
//! environment says nothing else: each answer is a git process fewer (a worker's
//! lane asks at every task).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{git, hermetic, output};

/// Whether `workdir` is in a git work tree: seen without starting git where a `.git`
/// directory with its `HEAD`, or a worktree's `.git` file naming a git directory with
/// its `HEAD`, is at or above it and git's environment says nothing of where the
/// repository is; else git is asked. A directory git found to be one is not asked
/// about again by this process (a work tree does not stop being one under a run, and
/// the driver asks before each task's commit).
pub fn is_repo(workdir: &Path) -> bool {
    static FOUND: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    let found = || FOUND.lock().unwrap_or_else(|e| e.into_inner());
    if found().iter().any(|d| d == workdir) {
        return true;
    }
    // (`git_dirs` finds a git directory only with its `HEAD`.)
    let seen = !told() && hermetic::git_dirs(workdir).is_some();
    let is = seen || {
        let mut c = git(workdir);
        c.args(["rev-parse", "--is-inside-work-tree"]);
        output(c).is_some_and(|s| s == "true")
    };
    if is {
        found().push(workdir.to_path_buf());
    }
    is
}

/// Whether git's environment says where the repository is (then git is asked, not
/// the file system).
pub(super) fn told() -> bool {
    ["GIT_DIR", "GIT_WORK_TREE", "GIT_CEILING_DIRECTORIES"]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
}

/// The top of the work tree containing `dir`, if it is in one: the nearest directory
/// with a `.git` repository (or a worktree's `.git` file) found without starting
/// git; git itself is asked when its environment says where the repository is, or
/// when no such directory is found.
pub fn toplevel(dir: &Path) -> Option<std::path::PathBuf> {
    if !told()
        && let Ok(start) = dir.canonicalize()
    {
        for d in start.ancestors() {
            let g = d.join(".git");
            let repo = if g.is_dir() {
                g.join("HEAD").is_file() && g.join("objects").is_dir()
            } else {
                std::fs::read(&g).is_ok_and(|b| b.starts_with(b"gitdir: "))
            };
            if repo {
                return Some(d.to_path_buf());
            }
        }
    }
    let mut c = git(dir);
    c.args(["rev-parse", "--show-toplevel"]);
    output(c).map(Into::into)
}

/// The common git directory of the repository at (or above) `dir`, found by where
/// its git directories are (never from a `commondir` file), canonical.
pub fn common_dir(dir: &Path) -> Option<PathBuf> {
    hermetic::git_dirs(dir).map(|(_, common)| common)
}

/// The git directory of the work tree at (or above) `dir` and its common directory,
/// as `git rev-parse --path-format=absolute --git-dir --git-common-dir` answers for
/// agentloop's own git (which is pinned to that common directory), found without
/// starting git. git itself is asked when its environment says where the repository
/// is. (One git process less at each of a task's commits, clean-copy refreshes and
/// agent starts.)
pub fn dirs(dir: &Path) -> Option<GitDirs> {
    // Besides where the repository is, where its common directory and index are.
    let also_told = ["GIT_COMMON_DIR", "GIT_INDEX_FILE"]
        .iter()
        .any(|v| std::env::var_os(v).is_some());
    if !told() && !also_told {
        return hermetic::git_dirs(dir).map(|(own, common)| GitDirs {
            index: own.join("index"),
            own,
            common,
        });
    }
    let mut c = git(dir);
    c.args([
        "rev-parse",
        "--path-format=absolute",
        "--git-dir",
        "--git-common-dir",
        "--git-path",
        "index",
    ]);
    let out = output(c)?;
    let mut lines = out.lines().map(PathBuf::from);
    let (own, common, index) = (lines.next()?, lines.next()?, lines.next()?);
    Some(GitDirs { own, common, index })
}

/// Where a work tree's repository keeps its files: [`dirs`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitDirs {
    /// The work tree's own git directory (`HEAD`, the index, `MERGE_HEAD`).
    pub own: PathBuf,
    /// The directory its worktrees share (objects, refs, `info/`, `shallow`).
    pub common: PathBuf,
    /// Its index file.
    pub index: PathBuf,
}
