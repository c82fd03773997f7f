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
fn told() -> bool {
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

/// The commit HEAD names in the work tree at (or above) `dir`, read from the files
/// agentloop's own git reads (`git rev-parse --verify -q HEAD` without a process):
/// `Some(None)` when HEAD's branch has no commit yet. `None` when only git can tell:
/// its environment says where the repository is, the refs are not kept in files
/// (`extensions.refStorage`), HEAD names a ref outside the branches, tags and
/// remotes, or a file is not as git writes it.
pub fn head_on_disk(dir: &Path) -> Option<Option<String>> {
    let also_told = ["GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some());
    if told() || also_told {
        return None;
    }
    let (own, common) = hermetic::git_dirs(dir)?;
    let config = String::from_utf8(small(&common.join("config"), 1 << 20)?).ok()?;
    let config = config.to_ascii_lowercase();
    // (A reftable's HEAD names `refs/heads/.invalid`; its directory says so too when
    // the setting comes from an included file.)
    if config.contains("refstorage") || common.join("reftable").exists() {
        return None;
    }
    let id_len = if config.contains("objectformat") {
        if !config
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["objectformat", "=", "sha256"])
        {
            return None;
        }
        64
    } else {
        40
    };
    let is_id =
        |s: &str| s.len() == id_len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let mut text = String::from_utf8(small(&own.join("HEAD"), 4096)?).ok()?;
    // A symbolic ref may name another: git follows five.
    for _ in 0..5 {
        let line = text.strip_suffix('\n').unwrap_or(&text);
        let Some(target) = line.strip_prefix("ref: ") else {
            return is_id(line).then(|| Some(line.to_string()));
        };
        let shared = ["refs/heads/", "refs/tags/", "refs/remotes/"]
            .iter()
            .any(|p| target.starts_with(p));
        let plain = target
            .split('/')
            .all(|c| !c.is_empty() && !c.starts_with('.') && !c.ends_with(".lock"));
        if !shared || !plain {
            return None;
        }
        let loose = common.join(target);
        match std::fs::symlink_metadata(&loose) {
            Ok(m) if m.is_file() => text = String::from_utf8(small(&loose, 4096)?).ok()?,
            // No such file, or a directory of refs named below it: packed, if anywhere.
            Ok(m) if m.is_dir() => return packed(&common, target, is_id),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return packed(&common, target, is_id);
            }
            _ => return None,
        }
    }
    None
}

/// `target`'s commit in `packed-refs`: `Some(None)` when it is not there (a branch
/// yet to be born), `None` when the file is not as git writes it.
fn packed(common: &Path, target: &str, is_id: impl Fn(&str) -> bool) -> Option<Option<String>> {
    let path = common.join("packed-refs");
    if !path.exists() {
        return Some(None);
    }
    let text = String::from_utf8(small(&path, 64 << 20)?).ok()?;
    let mut found = None;
    for line in text.lines() {
        if line.starts_with('#') || line.starts_with('^') {
            continue;
        }
        let (id, name) = line.split_once(' ')?;
        if name == target {
            // Named twice: which one git takes is git's to say.
            if found.is_some() || !is_id(id) {
                return None;
            }
            found = Some(id.to_string());
        }
    }
    Some(found)
}

/// A regular file's bytes, at most `most` of them (a FIFO or a device is refused by
/// its type, never opened).
fn small(path: &Path, most: u64) -> Option<Vec<u8>> {
    agentloop_ground::fsutil::read_regular(path, most).ok()
}
