//! A work tree's state carried through a git remote, for iterations that run on
//! another machine: the state as a commit on top of HEAD (tracked changes and files
//! git does not ignore, without touching HEAD or the index), pushed and fetched by
//! ref, and a fetched commit's files put back into a work tree as uncommitted changes.

use std::path::Path;

use super::git::{git_command, run_git};

fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let mut c = git_command(dir);
    c.args(args);
    run_git(c, None).map(|o| String::from_utf8_lossy(&o).trim().to_string())
}

/// A git command that writes the repository's refs (push updates the remote-tracking
/// ref, fetch and update-ref write refs, a deletion rewrites `packed-refs`): one at a
/// time with the worktree and merge commands of the driver's other threads, and
/// without git's automatic maintenance (a background `pack-refs` holds the lock on
/// `packed-refs` that a merge's `update-ref` then fails on).
fn git_refs(dir: &Path, args: &[&str]) -> Result<String, String> {
    // A push or fetch talks to the remote with the user's configuration (its
    // credentials); anything else is hermetic. Neither runs hooks or maintenance.
    let mut c = match args.first() {
        Some(&"push" | &"fetch") => super::git::remote_command(dir),
        _ => git_command(dir),
    };
    c.args(args);
    let _one_at_a_time = super::worktree::bookkeeping();
    run_git(c, None).map(|o| String::from_utf8_lossy(&o).trim().to_string())
}

/// A commit of everything in `worktree` as it is now, whose parent is HEAD; HEAD, the
/// index and the files stay as they are (a scratch index under `scratch`).
pub fn snapshot(worktree: &Path, scratch: &Path, message: &str) -> Result<String, String> {
    std::fs::create_dir_all(scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let index = scratch.join("snapshot.index");
    let _ = std::fs::remove_file(&index);
    let with_index = |args: &[&str]| {
        let mut c = git_command(worktree);
        c.args(args).env("GIT_INDEX_FILE", &index);
        run_git(c, None).map(|o| String::from_utf8_lossy(&o).trim().to_string())
    };
    with_index(&["read-tree", "HEAD"])?;
    let add = super::git::add_all_args(worktree, Some(&index));
    with_index(&add.iter().map(String::as_str).collect::<Vec<_>>())?;
    let tree = with_index(&["write-tree"])?;
    let _ = std::fs::remove_file(&index);
    let mut c = git_command(worktree);
    c.args(["commit-tree", &tree, "-p", "HEAD", "-F", "-"]);
    super::git::set_identity(&mut c, None);
    run_git(c, Some(message.as_bytes())).map(|o| String::from_utf8_lossy(&o).trim().to_string())
}

/// Pushes `commit` to `refname` on `remote` (replacing what was there).
pub fn push(dir: &Path, remote: &str, commit: &str, refname: &str) -> Result<(), String> {
    git_refs(
        dir,
        &[
            "push",
            "--quiet",
            "--force",
            "--no-verify",
            remote,
            &format!("{commit}:{refname}"),
        ],
    )
    .map(drop)
}

/// Fetches `refname` from `remote` into the same ref here; the commit it names.
pub fn fetch(dir: &Path, remote: &str, refname: &str) -> Result<String, String> {
    git_refs(
        dir,
        &[
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            remote,
            &format!("+{refname}:{refname}"),
        ],
    )?;
    git(
        dir,
        &["rev-parse", "--verify", &format!("{refname}^{{commit}}")],
    )
}

/// Deletes `refname` on `remote` (best effort: a ref already gone is fine); the ref
/// of the same name here stays.
pub fn forget(dir: &Path, remote: &str, refname: &str) {
    let _ = git_refs(
        dir,
        &[
            "push",
            "--quiet",
            "--no-verify",
            remote,
            &format!(":{refname}"),
        ],
    );
}

/// Deletes `refname` here (best effort).
pub fn drop_ref(dir: &Path, refname: &str) {
    let _ = git_refs(dir, &["update-ref", "-d", refname]);
}

/// The full message of `commit`.
pub fn message(dir: &Path, commit: &str) -> Result<String, String> {
    let mut c = git_command(dir);
    c.args(["cat-file", "commit", commit]);
    let raw = run_git(c, None)?;
    let text = String::from_utf8_lossy(&raw);
    Ok(text
        .split_once("\n\n")
        .map(|(_, m)| m.to_string())
        .unwrap_or_default())
}

/// The first parent of `commit`.
pub fn parent(dir: &Path, commit: &str) -> Result<String, String> {
    git(dir, &["rev-parse", "--verify", &format!("{commit}^1")])
}

/// Makes the files of `worktree` those of `commit` (what git does not ignore: files
/// missing from it are removed), left as uncommitted changes: HEAD and the index stay.
pub fn apply(worktree: &Path, commit: &str) -> Result<(), String> {
    let add = super::git::add_all_args(worktree, None);
    git(
        worktree,
        &add.iter().map(String::as_str).collect::<Vec<_>>(),
    )?;
    let applied = git(worktree, &["read-tree", "-u", "--reset", commit]);
    // The index goes back to HEAD whether or not the files could be updated.
    let reset = git(worktree, &["reset", "-q"]);
    applied?;
    reset.map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(dir: &Path) {
        for args in [
            &["init", "-q", "-b", "main"][..],
            &["config", "user.email", "t@t"],
            &["config", "user.name", "t"],
        ] {
            git(dir, args).unwrap();
        }
    }

    #[test]
    fn a_work_tree_goes_to_another_clone_and_back_as_uncommitted_changes() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, remote, b) = (
            tmp.path().join("a"),
            tmp.path().join("r.git"),
            tmp.path().join("b"),
        );
        std::fs::create_dir_all(&a).unwrap();
        repo(&a);
        std::fs::write(a.join("kept.txt"), "1\n").unwrap();
        std::fs::write(a.join("gone.txt"), "x\n").unwrap();
        std::fs::write(a.join(".gitignore"), "ignored/\n").unwrap();
        git(&a, &["add", "-A"]).unwrap();
        git(&a, &["commit", "-qm", "base"]).unwrap();
        git(tmp.path(), &["init", "-q", "--bare", "r.git"]).unwrap();
        let remote = remote.to_string_lossy().into_owned();
        // Work in progress, uncommitted: a change and a new file.
        std::fs::write(a.join("kept.txt"), "2\n").unwrap();
        std::fs::write(a.join("new.txt"), "n\n").unwrap();
        let head = git(&a, &["rev-parse", "HEAD"]).unwrap();
        let start = snapshot(&a, &tmp.path().join("scratch"), "start").unwrap();
        assert_eq!(git(&a, &["rev-parse", "HEAD"]).unwrap(), head, "HEAD stays");
        assert_eq!(parent(&a, &start).unwrap(), head);
        push(&a, &remote, &start, "refs/heads/task").unwrap();

        // Elsewhere: the task's branch, worked on.
        git(tmp.path(), &["clone", "-q", "-b", "task", &remote, "b"]).unwrap();
        assert_eq!(std::fs::read_to_string(b.join("new.txt")).unwrap(), "n\n");
        std::fs::write(b.join("kept.txt"), "3\n").unwrap();
        std::fs::remove_file(b.join("gone.txt")).unwrap();
        std::fs::create_dir_all(b.join("ignored")).unwrap();
        std::fs::write(b.join("ignored/out"), "o").unwrap();
        let result = snapshot(&b, &tmp.path().join("scratch-b"), "result\n\n{\"x\":1}").unwrap();
        push(&b, &remote, &result, "refs/agentloop/r/1").unwrap();

        // Back here: the result's files, uncommitted, on the same HEAD.
        let fetched = fetch(&a, &remote, "refs/agentloop/r/1").unwrap();
        assert_eq!(fetched, result);
        assert_eq!(parent(&a, &fetched).unwrap(), start);
        assert_eq!(
            message(&a, &fetched).unwrap().trim_end(),
            "result\n\n{\"x\":1}"
        );
        apply(&a, &fetched).unwrap();
        assert_eq!(git(&a, &["rev-parse", "HEAD"]).unwrap(), head);
        assert_eq!(std::fs::read_to_string(a.join("kept.txt")).unwrap(), "3\n");
        assert!(!a.join("gone.txt").exists());
        assert!(a.join("new.txt").exists());
        assert!(!a.join("ignored").exists(), "ignored files do not travel");
        let status = git(&a, &["status", "--porcelain"]).unwrap();
        assert_eq!(status, " D gone.txt\n M kept.txt\n?? new.txt".trim_start());
        forget(&a, &remote, "refs/agentloop/r/1");
        assert!(fetch(&a, &remote, "refs/agentloop/r/1").is_err());
        assert!(git(&a, &["rev-parse", "--verify", "refs/agentloop/r/1"]).is_ok());
    }
}
