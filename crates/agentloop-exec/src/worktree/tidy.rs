//! A task's worktree made agentloop's again before agentloop's own git works in it: its
//! own directory in the repository (`.git/worktrees/NAME`) is an agent's to write while
//! it works, and what git reads there can redirect git (another work tree named in
//! `config.worktree`), write through a link (a `COMMIT_EDITMSG` naming the person's
//! `.git/config`), hold it for good (a FIFO as the index), copy a file of the person's
//! (a `MERGE_RR` naming `~/.ssh/id_rsa` for rerere), or stop every later commit (a
//! `MERGE_HEAD` naming no commit). Done when an agent's sandbox ends, and again before
//! the worktree is used after a driver that died while an agent worked there.

use std::path::{Path, PathBuf};

use agentloop_ground::fsutil::remove_all;

/// What git keeps in a worktree's own directory that agentloop lets stay: everything
/// else there goes.
const BOOKKEEPING: &[&str] = &[
    "HEAD",
    "ORIG_HEAD",
    "FETCH_HEAD",
    "MERGE_HEAD",
    "MERGE_MSG",
    "MERGE_MODE",
    "AUTO_MERGE",
    "COMMIT_EDITMSG",
    "index",
    "commondir",
    "gitdir",
    "logs",
    "refs",
];

/// How deep a directory of the bookkeeping's is kept (a reflog's path is a ref's).
const DEPTH: usize = 12;

/// Leaves in the worktree's own directory `admin` only git's bookkeeping, as regular
/// files and directories (links, FIFOs, devices and sockets go, and so does whatever
/// is not git's), and a merge in progress only when what it merges is a commit of
/// `root`'s repository.
pub fn tidy(root: &Path, admin: &Path) {
    for e in std::fs::read_dir(admin).into_iter().flatten().flatten() {
        let name = e.file_name();
        let known = name.to_str().is_some_and(|n| BOOKKEEPING.contains(&n));
        match e.file_type() {
            Ok(t) if known && t.is_file() => {}
            Ok(t) if known && t.is_dir() => below(&e.path(), 1),
            _ => remove_all(&e.path()),
        }
    }
    let merging = admin.join("MERGE_HEAD");
    let real = agentloop_ground::fsutil::read_regular(&merging, 64 * 1024)
        .ok()
        .is_some_and(|b| {
            let text = String::from_utf8_lossy(&b).to_string();
            let ids: Vec<&str> = text.split_whitespace().collect();
            !ids.is_empty()
                && ids
                    .iter()
                    .all(|id| super::rev(root, id).as_deref() == Some(*id))
        });
    if !real {
        for f in ["MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "AUTO_MERGE"] {
            let _ = std::fs::remove_file(admin.join(f));
        }
    }
}

fn below(dir: &Path, depth: usize) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        match e.file_type() {
            Ok(t) if t.is_file() => {}
            Ok(t) if t.is_dir() && depth < DEPTH => below(&e.path(), depth + 1),
            _ => remove_all(&e.path()),
        }
    }
}

/// The worktree at `worktree` made agentloop's again before its own git works there:
/// its own directory tidied, and its HEAD on `branch` (whatever an agent whose driver
/// died left it naming: the person's branch, another commit).
pub fn settle(root: &Path, worktree: &Path, branch: &str) {
    let Some(admin) = admin_of(root, worktree) else {
        return;
    };
    tidy(root, &admin);
    let line = format!("ref: refs/heads/{branch}");
    let head = admin.join("HEAD");
    let now = agentloop_ground::fsutil::read_regular(&head, 4096).unwrap_or_default();
    if String::from_utf8_lossy(&now).trim() != line {
        rewrite(&head, &line);
    }
}

/// Writes `line` as the whole of the file at `path`, in place of whatever is there
/// (a link taken away, not followed).
pub(crate) fn rewrite(path: &Path, line: &str) {
    remove_all(path);
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()));
}

/// A worktree's own directory in `root`'s repository, as its `.git` file names it
/// (only one directly under `.git/worktrees/`).
pub fn admin_of(root: &Path, worktree: &Path) -> Option<PathBuf> {
    let link = agentloop_ground::fsutil::read_regular(&worktree.join(".git"), 4096).ok()?;
    let link = String::from_utf8_lossy(&link);
    let admin = PathBuf::from(link.trim().strip_prefix("gitdir:")?.trim())
        .canonicalize()
        .ok()?;
    let worktrees = root.join(".git/worktrees").canonicalize().ok()?;
    (admin.parent() == Some(worktrees.as_path())).then_some(admin)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::git_says as git;

    /// An agent whose driver died left its worktree on the person's branch, in a merge
    /// of a commit that does not exist, with a rerere record naming a file of the
    /// person's and the worktree locked: settled, it is on the task's branch again,
    /// nothing of that is left, and committing there moves only the task's branch.
    #[test]
    fn a_worktree_an_agent_left_is_the_tasks_again() {
        let tmp = tempfile::tempdir().unwrap();
        let (root, wt) = crate::testing::project_and_worktree(tmp.path(), "run-T1");
        let main = git(&root, &["rev-parse", "main"]);
        let admin = admin_of(&root, &wt).unwrap();
        std::fs::write(admin.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(admin.join("MERGE_HEAD"), format!("{}\n", "ab".repeat(20))).unwrap();
        std::fs::write(admin.join("MERGE_RR"), "x.7\t/etc/passwd\0").unwrap();
        std::fs::write(admin.join("locked"), "initializing\n").unwrap();
        std::fs::write(wt.join("b.txt"), "two\n").unwrap();
        settle(&root, &wt, "run-T1");
        for gone in ["MERGE_HEAD", "MERGE_RR", "locked"] {
            assert!(!admin.join(gone).exists(), "{gone}");
        }
        assert_eq!(git(&wt, &["symbolic-ref", "HEAD"]), "refs/heads/run-T1");
        git(&wt, &["add", "-A"]);
        git(&wt, &["commit", "-qm", "work"]);
        assert_eq!(git(&root, &["rev-parse", "main"]), main);
        assert_eq!(git(&root, &["show", "run-T1:b.txt"]), "two");
    }

    /// A merge agentloop left for the agent to finish (of a commit the repository has)
    /// stays.
    #[test]
    fn a_merge_of_a_real_commit_stays() {
        let tmp = tempfile::tempdir().unwrap();
        let (root, wt) = crate::testing::project_and_worktree(tmp.path(), "run-T1");
        let main = git(&root, &["rev-parse", "main"]);
        let admin = admin_of(&root, &wt).unwrap();
        std::fs::write(admin.join("MERGE_HEAD"), format!("{main}\n")).unwrap();
        std::fs::write(admin.join("MERGE_MSG"), "Merge\n").unwrap();
        tidy(&root, &admin);
        assert!(admin.join("MERGE_HEAD").exists() && admin.join("MERGE_MSG").exists());
    }
}
