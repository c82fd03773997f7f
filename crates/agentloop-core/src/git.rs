//! What the agent changed, seen through git (shelling out to the real `git`).

use std::path::Path;
use std::process::{Command, Stdio};

fn git(workdir: &Path) -> Command {
    let mut c = Command::new("git");
    c.current_dir(workdir)
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    c
}

fn output(mut c: Command) -> Option<String> {
    let out = c.output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

pub fn is_repo(workdir: &Path) -> bool {
    output({
        let mut c = git(workdir);
        c.args(["rev-parse", "--is-inside-work-tree"]);
        c
    })
    .is_some_and(|s| s == "true")
}

/// The top of the work tree containing `dir`, if it is in one.
pub fn toplevel(dir: &Path) -> Option<std::path::PathBuf> {
    let mut c = git(dir);
    c.args(["rev-parse", "--show-toplevel"]);
    output(c).map(Into::into)
}

/// The commit at HEAD, if there is one.
pub fn head(workdir: &Path) -> Option<String> {
    let mut c = git(workdir);
    c.args(["rev-parse", "--verify", "-q", "HEAD"]);
    output(c).filter(|s| !s.is_empty())
}

/// Takes snapshots of a work tree: a tree id for the whole working tree (tracked and
/// untracked, not ignored files), computed in a scratch index so the user's index is
/// untouched.
#[derive(Debug, Clone)]
pub struct Snapshots {
    workdir: std::path::PathBuf,
    index: Option<std::path::PathBuf>,
    scratch: std::path::PathBuf,
}

impl Snapshots {
    /// `None` when `workdir` is not in a git work tree.
    pub fn new(workdir: &Path, scratch_index: &Path) -> Option<Snapshots> {
        let mut c = git(workdir);
        c.args(["rev-parse", "--is-inside-work-tree", "--git-path", "index"]);
        let out = output(c)?;
        let mut lines = out.lines();
        (lines.next()? == "true").then_some(())?;
        let index = lines.next().map(|p| workdir.join(p));
        Some(Snapshots {
            workdir: workdir.to_path_buf(),
            index,
            scratch: scratch_index.to_path_buf(),
        })
    }

    pub fn take(&self) -> Option<String> {
        match &self.index {
            // Starting from a copy of the real index lets git skip unchanged files.
            Some(real) if real.exists() => {
                std::fs::copy(real, &self.scratch).ok()?;
            }
            _ => {
                let _ = std::fs::remove_file(&self.scratch);
            }
        }
        let mut add = git(&self.workdir);
        add.env("GIT_INDEX_FILE", &self.scratch)
            .args(["add", "-A", "--", "."])
            .stdout(Stdio::null());
        add.status().ok().filter(|s| s.success())?;
        let mut wt = git(&self.workdir);
        wt.env("GIT_INDEX_FILE", &self.scratch).arg("write-tree");
        let tree = output(wt);
        let _ = std::fs::remove_file(&self.scratch);
        tree
    }
}

/// Paths that differ between two snapshots.
pub fn changed_files(workdir: &Path, before: &str, after: &str) -> Vec<String> {
    if before == after {
        return Vec::new();
    }
    let mut c = git(workdir);
    c.args(["diff", "--name-only", "--no-renames", "-z", before, after]);
    match c.output() {
        Ok(out) if out.status.success() => out
            .stdout
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect(),
        _ => Vec::new(),
    }
}

/// Commits everything in the working tree; returns the new HEAD (or the old one when
/// there was nothing to commit).
pub fn commit_all(workdir: &Path, message: &str) -> Result<String, String> {
    let mut add = git(workdir);
    add.args(["add", "-A", "--", "."]).stdout(Stdio::null());
    let st = add.status().map_err(|e| format!("git add: {e}"))?;
    if !st.success() {
        return Err("git add -A failed".into());
    }
    let mut c = git(workdir);
    let has_identity = {
        let mut id = git(workdir);
        id.args(["config", "user.email"]);
        output(id).is_some()
    };
    if !has_identity {
        c.args([
            "-c",
            "user.name=agentloop",
            "-c",
            "user.email=agentloop@localhost",
        ]);
    }
    c.args([
        "commit",
        "-q",
        "--no-verify",
        "--allow-empty",
        "-m",
        message,
    ])
    .stdout(Stdio::null());
    let out = c.output().map_err(|e| format!("git commit: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git commit failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    head(workdir).ok_or_else(|| "no HEAD after commit".to_string())
}
