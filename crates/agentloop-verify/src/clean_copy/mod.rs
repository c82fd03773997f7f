//! The clean copy checks run in: the agent's result (tracked files and new ones git
//! does not ignore) with the baseline versions of the verification surface, checked
//! out in a detached git worktree outside the project that shares its object store.
//! Untracked junk, ignored build artefacts and edited harness files in the agent's
//! tree never reach it; the user's tree stays as the agent left it.
//!
//! The copy lives as long as its run and is brought up to date for each verification
//! (only the files that changed are written). Ignored files the checks themselves
//! create there (build caches like `target/`) are kept between verifications of the
//! run, so a check does not rebuild from nothing each time.

mod admit;
mod kept;
mod review;

pub use admit::{admission, files_of_tree, leave_out_in};
pub use kept::{KeptCopy, Way};
pub use review::ReviewTree;

use std::path::{Path, PathBuf};
use std::process::Command;

use agentloop_journal::{Baseline, LeftOut};
use agentloop_project::Admission;

/// What the judge's copy is made of besides the agent's tree.
#[derive(Debug, Clone, Copy, Default)]
pub struct Judge<'a> {
    /// The baseline's versions of the surface, laid over the agent's.
    pub overlay: Option<&'a Baseline>,
    /// Which of the files the agent added reach the copy (default-deny); none: all.
    pub admission: Option<&'a Admission>,
}

impl<'a> Judge<'a> {
    /// The surface laid over, everything the agent added let in.
    pub fn overlay(overlay: Option<&'a Baseline>) -> Judge<'a> {
        Judge {
            overlay,
            admission: None,
        }
    }
}

/// A clean copy brought up to date.
pub struct Refreshed {
    /// The commit checked out (by the last full refresh: one kept in step writes the
    /// files, not the copy's commit).
    pub commit: String,
    /// Surface files the repository's objects did not give as the baseline says
    /// (tampered with), written from agentloop's own copy.
    pub mended: Vec<String>,
    /// Files the agent added that the copy does not hold (see [`Admission`]).
    pub left_out: Vec<LeftOut>,
    /// Files the agent added that the checks would load on their own and the copy
    /// holds because the work writes tests.
    pub admitted: Vec<String>,
}

/// What [`CleanCopy::refresh_to`] checked out.
pub struct CheckedOut {
    /// The commit checked out.
    pub commit: String,
    /// Files Git LFS tracks whose content the repository's LFS store does not hold:
    /// the copy has their pointers (`exec::git::lfs`).
    pub lfs_missing: Vec<String>,
}

/// What to say of files Git LFS tracks that the checks read as pointers, if any.
pub fn lfs_missing_words(missing: &[String]) -> Option<String> {
    let first = missing.first()?;
    let more = match missing.len() {
        1 => String::new(),
        n => format!(" and {} more", n - 1),
    };
    Some(format!(
        "{first}{more}: Git LFS tracks them and this repository's LFS store does not hold their content, so the checks read their pointers (`git lfs pull` fetches it)"
    ))
}

/// Where checks run, and what of the agent's added files the copy there left out and
/// let in.
pub struct Prepared {
    pub dir: PathBuf,
    pub left_out: Vec<LeftOut>,
    pub admitted: Vec<String>,
    /// Why the checks run in the project although the run judges on a clean copy
    /// (the copy could not be made): what passes there proves nothing.
    pub unclean: Option<String>,
}

impl Prepared {
    /// A directory of the project's own (the project, a worktree): nothing left out.
    pub fn root(root: &Path) -> Prepared {
        Prepared {
            dir: root.to_path_buf(),
            left_out: Vec::new(),
            admitted: Vec::new(),
            unclean: None,
        }
    }
}

/// The tree a copy is made of: its id, and what of the agent's it left out and let in.
pub struct Made {
    pub tree: String,
    pub left_out: Vec<LeftOut>,
    pub admitted: Vec<String>,
}

impl Refreshed {
    /// What to tell a person when files were mended.
    pub fn warning(&self) -> Option<String> {
        (!self.mended.is_empty()).then(|| {
            format!(
                "the repository's objects for {} are not the baseline's (changed in place): the checks got agentloop's own copy",
                self.mended.join(", ")
            )
        })
    }
}

/// A run's clean copy.
pub struct CleanCopy {
    /// The project.
    pub root: PathBuf,
    /// The worktree the checks run in.
    pub dir: PathBuf,
}

fn git(dir: &Path) -> Command {
    agentloop_exec::git::git_command(dir)
}

/// A git command's trimmed output.
fn run(c: Command, input: Option<&[u8]>) -> Result<String, String> {
    agentloop_exec::git::run_git(c, input).map(|o| String::from_utf8_lossy(&o).trim().to_string())
}

impl CleanCopy {
    /// The clean copy of run `run_id` of the project at `root`, among the judges'
    /// copies (`fsutil::judge_dir`).
    pub fn for_run(root: &Path, run_id: &str) -> Option<CleanCopy> {
        let dir = agentloop_ground::fsutil::judge_dir()?
            .join("checkouts")
            .join(run_id);
        Some(CleanCopy {
            root: root.to_path_buf(),
            dir,
        })
    }

    /// The index this copy's commits are built in (a copy of the project's own, so only
    /// files whose stat changed are read again).
    fn index(&self) -> PathBuf {
        self.dir.with_extension("index")
    }

    /// The project's own index file (where `git rev-parse --git-path index` says).
    pub(super) fn project_index(&self) -> Result<PathBuf, String> {
        agentloop_exec::git::dirs(&self.root)
            .map(|d| d.index)
            .ok_or_else(|| format!("{} is not in a git work tree", self.root.display()))
    }

    /// Brings the copy up to the tree as it is now, with `overlay`'s versions of the
    /// surface (checked by hash, and written from agentloop's own copy where the
    /// repository's objects gave something else) and `carry` linked in.
    pub fn refresh(
        &self,
        overlay: Option<&Baseline>,
        carry: &[String],
    ) -> Result<Refreshed, String> {
        self.refresh_judged(Judge::overlay(overlay), carry)
    }

    /// [`refresh`](Self::refresh), leaving out what `judge`'s admission keeps out.
    pub fn refresh_judged(&self, judge: Judge<'_>, carry: &[String]) -> Result<Refreshed, String> {
        let made = self.tree_judged(judge)?;
        let commit = self.check_out(&made.tree, carry)?;
        let mended = match judge.overlay {
            Some(base) => crate::surface::mend(&self.root, &self.dir, base)?,
            None => Vec::new(),
        };
        // After the surface is mended: a pointer is what the tree holds, and what the
        // surface's hashes are of. (What the store lacks was said at the baseline.)
        self.fill_lfs();
        Ok(Refreshed {
            commit,
            mended,
            left_out: made.left_out,
            admitted: made.admitted,
        })
    }

    /// Brings the copy to `tree` (one [`tree_now`](Self::tree_now) gave earlier),
    /// with `carry` linked in.
    pub fn refresh_to(&self, tree: &str, carry: &[String]) -> Result<CheckedOut, String> {
        let commit = self.check_out(tree, carry)?;
        Ok(CheckedOut {
            commit,
            lfs_missing: self.fill_lfs(),
        })
    }

    /// The content of the files Git LFS tracks, in place of their pointers, where the
    /// repository's LFS store holds it; the paths it does not hold.
    fn fill_lfs(&self) -> Vec<String> {
        match agentloop_exec::git::common_dir(&self.root) {
            Some(common) => agentloop_exec::git::lfs::fill(&self.dir, &common).missing,
            None => Vec::new(),
        }
    }

    /// The project's tree as it is now (tracked files and new ones git does not
    /// ignore, with `overlay`'s versions of the surface), written into the object
    /// store: its id. Nothing is checked out.
    pub fn tree_now(&self, overlay: Option<&Baseline>) -> Result<String, String> {
        self.tree_judged(Judge::overlay(overlay)).map(|m| m.tree)
    }

    /// [`tree_now`](Self::tree_now) without the files the agent added that `judge`'s
    /// admission keeps out: they are taken out of the index the tree is written from.
    pub fn tree_judged(&self, judge: Judge<'_>) -> Result<Made, String> {
        let overlay = judge.overlay;
        let parent = self.dir.parent().ok_or("no parent for the clean copy")?;
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        let index = self.index();
        let own = self.project_index()?;
        match std::fs::copy(&own, &index) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let _ = std::fs::remove_file(&index);
            }
            Err(e) => return Err(format!("{}: {e}", index.display())),
        }
        let with_index = |args: &[&str]| {
            let mut c = git(&self.root);
            c.env("GIT_INDEX_FILE", &index).args(args);
            c
        };
        // (Gitlinks left out: git would look inside them, with their own config.)
        let add = agentloop_exec::git::add_all_args(&self.root, Some(&index));
        run(
            with_index(&add.iter().map(String::as_str).collect::<Vec<_>>()),
            None,
        )?;
        let overlay = overlay.filter(|b| !b.is_empty());
        let mut left_out = Vec::new();
        let mut admitted = Vec::new();
        if overlay.is_some() || judge.admission.is_some() {
            let listed = agentloop_exec::git::run_git(with_index(&["ls-files", "-s", "-z"]), None)?;
            let listed = admit::entries(&listed);
            let held: std::collections::HashMap<&[u8], (u32, &str)> = listed
                .iter()
                .map(|e| (e.path.as_slice(), (e.mode, e.blob.as_str())))
                .collect();
            // The baseline's versions of the surface (a sectioned file stays the
            // agent's: only its test section is judged, and it was, before
            // verification). Only what the index does not already hold as the baseline
            // has it is laid over: an entry rewritten with the same blob would still
            // invalidate its directories' cached trees, and `write-tree` would hash
            // them all again.
            let mut lines: Vec<u8> = Vec::new();
            for (path, f) in overlay.into_iter().flatten() {
                if agentloop_project::is_sectioned(path)
                    || agentloop_project::is_git_file(path)
                    || held
                        .get(path.as_bytes())
                        .is_some_and(|(mode, blob)| *mode == f.mode && *blob == f.blob)
                {
                    continue;
                }
                lines.extend_from_slice(format!("{:o} {}\t{path}\0", f.mode, f.blob).as_bytes());
            }
            // What the agent added that the checks would load on their own: out (a
            // mode of 0 takes the entry away; its null id as long as the repository's).
            if let Some(admission) = judge.admission {
                let out = admit::kept_out(&listed, admission, |e| {
                    let mut c = git(&self.root);
                    c.args(["cat-file", "blob", &e.blob]);
                    agentloop_exec::git::run_git(c, None).ok()
                });
                admitted = admit::admitted(&listed, admission);
                let zero = "0".repeat(listed.first().map_or(40, |e| e.blob.len()));
                for (raw, l) in out {
                    lines.extend_from_slice(format!("0 {zero}\t").as_bytes());
                    lines.extend_from_slice(&raw);
                    lines.push(0);
                    left_out.push(l);
                }
            }
            if !lines.is_empty() {
                run(
                    with_index(&["update-index", "-z", "--add", "--index-info"]),
                    Some(&lines),
                )?;
            }
        }
        let tree = run(with_index(&["write-tree"]), None)?;
        Ok(Made {
            tree,
            left_out,
            admitted,
        })
    }

    /// Checks `tree` out in the copy (as a commit on HEAD), `carry` linked in.
    fn check_out(&self, tree: &str, carry: &[String]) -> Result<String, String> {
        let mut commit = git(&self.root);
        commit.args(["commit-tree", tree, "-m", "agentloop: the tree verified"]);
        agentloop_exec::git::set_identity(&mut commit, None);
        if let Some(head) = agentloop_exec::git::head(&self.root) {
            commit.args(["-p", &head]);
        }
        let commit = run(commit, None)?;
        if self.linked() {
            run(
                {
                    let mut c = git(&self.dir);
                    c.args(["checkout", "-q", "--detach", "-f", &commit]);
                    c
                },
                None,
            )?;
            // An ignore file a check made goes first (one that ignores itself and a
            // `conftest.py` beside it would keep both for every later check); then the
            // new files git does not ignore; ignored ones the checks made stay.
            run(
                {
                    let mut c = git(&self.dir);
                    c.args(["clean", "-fdqx", "--", ":(glob)**/.gitignore"]);
                    c
                },
                None,
            )?;
            run(
                {
                    let mut c = git(&self.dir);
                    c.args(["clean", "-fdq"]);
                    c
                },
                None,
            )?;
        } else {
            let _admin = agentloop_exec::git::worktree_admin();
            let _ = std::fs::remove_dir_all(&self.dir);
            // `-f` takes the place over a registration whose directory is gone (no
            // `worktree prune` here: it races with worktrees other workers are adding).
            let dir = self.dir.to_string_lossy().into_owned();
            run(
                {
                    let mut c = git(&self.root);
                    c.args(["worktree", "add", "-q", "--detach", "-f", &dir, &commit]);
                    c
                },
                None,
            )?;
        }
        carry::link(&self.root, &self.dir, carry)?;
        Ok(commit)
    }

    /// Whether the copy's `.git` is the link `git worktree add` made: a file naming a
    /// git directory among the project's worktrees. Anything else (a check's code
    /// pointed it at a repository of its own, whose filters agentloop's git would
    /// run) and the copy is made again from nothing.
    fn linked(&self) -> bool {
        let link = self.dir.join(".git");
        if !link.symlink_metadata().is_ok_and(|m| m.is_file()) {
            return false;
        }
        let Ok(text) = std::fs::read_to_string(&link) else {
            return false;
        };
        let Some(gitdir) = text.strip_prefix("gitdir:").map(str::trim) else {
            return false;
        };
        let (Ok(gitdir), Some(common)) = (
            self.dir.join(gitdir).canonicalize(),
            agentloop_exec::git::common_dir(&self.root),
        ) else {
            return false;
        };
        gitdir.parent() == Some(common.join("worktrees").as_path())
    }

    /// Removes the copy and its worktree registration.
    pub fn remove(&self) {
        let _admin = agentloop_exec::git::worktree_admin();
        if self.dir.exists() {
            let dir = self.dir.to_string_lossy().into_owned();
            let mut c = git(&self.root);
            c.args(["worktree", "remove", "--force", &dir]);
            let _ = c.output();
            let _ = std::fs::remove_dir_all(&self.dir);
        }
        agentloop_exec::worktree::prune(&self.root);
        let _ = std::fs::remove_file(self.index());
    }
}

mod carry;
pub use carry::link as link_carried;

#[cfg(test)]
mod tests;
