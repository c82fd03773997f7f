//! What the tests of this crate and the crates above it share (not for use outside
//! tests: compiled in so that the crates above need no feature to reach it).

use std::path::{Path, PathBuf};

/// Runs git `args` in `root` as agentloop's own git runs (hermetic), with a fixed
/// identity; panics with git's words when it fails.
pub fn git(root: &Path, args: &[&str]) {
    let mut c = crate::git::git_command(root);
    c.args(["-c", "user.name=t", "-c", "user.email=t@t"]);
    let out = c.args(args).output().unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What plain git `args` in `dir` print (trimmed), with a fixed identity; panics with
/// git's words when it fails.
pub fn git_says(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=T", "-c", "user.email=t@example.org"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A project under `dir` (`project/`) on `main` with `a.txt` committed, and a task's
/// worktree beside it (`wt/`) on its branch `branch`: (project, worktree).
pub fn project_and_worktree(dir: &Path, branch: &str) -> (PathBuf, PathBuf) {
    let root = dir.join("project");
    std::fs::create_dir_all(&root).unwrap();
    git_says(&root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("a.txt"), "one\n").unwrap();
    git_says(&root, &["add", "a.txt"]);
    git_says(&root, &["commit", "-qm", "first"]);
    let wt = dir.join("wt");
    git_says(
        &root,
        &["worktree", "add", "-q", "-b", branch, wt.to_str().unwrap()],
    );
    (root, wt)
}

/// A committed repository at `root` with a gitlink `sub` whose directory is a
/// repository of its own: its clean filter touches the path returned, and its file
/// has changed since, so a git that looks inside it runs the filter.
pub fn embedded_repository_with_a_filter(root: &Path) -> PathBuf {
    git(root, &["init", "-q"]);
    let sub = root.join("sub");
    std::fs::create_dir(&sub).unwrap();
    git(&sub, &["init", "-q"]);
    std::fs::write(sub.join("f"), "x\n").unwrap();
    std::fs::write(sub.join(".gitattributes"), "* filter=x\n").unwrap();
    git(&sub, &["add", "-A"]);
    git(&sub, &["commit", "-qm", "s"]);
    let mark = root.join("MARK");
    let clean = format!("touch {} && cat", mark.display());
    git(&sub, &["config", "filter.x.clean", &clean]);
    git(root, &["add", "sub"]);
    git(root, &["commit", "-qm", "with sub"]);
    std::fs::write(sub.join("f"), "y\n").unwrap();
    mark
}

/// The Git LFS pointer of `content`, as `git lfs` writes one: (its SHA-256, the
/// pointer file's text).
pub fn lfs_pointer(content: &[u8]) -> (String, String) {
    use sha2::Digest;
    let oid: String = sha2::Sha256::digest(content)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let text = format!(
        "version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {}\n",
        content.len()
    );
    (oid, text)
}

/// Puts `content` in the LFS store of the repository whose common git directory is
/// `common`, under the SHA-256 `oid` (`content`'s own, or not, for a test that plants
/// something else there): its path.
pub fn lfs_store(common: &Path, oid: &str, content: &[u8]) -> PathBuf {
    let at = common
        .join("lfs/objects")
        .join(&oid[..2])
        .join(&oid[2..4])
        .join(oid);
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    std::fs::write(&at, content).unwrap();
    at
}
