//! A run with workers in git: its integration branch, one worktree and branch per task,
//! the merge worktree where verified work is merged and checked before the
//! integration branch moves, and landing on the checked-out branch.
//!
//! Worktrees live in `$XDG_CACHE_HOME/agentloop/worktrees/RUN/` — outside the
//! project, so no tool run in the project walks into them (a test runner collecting
//! tests, a build tool finding a nested workspace) and none run in them walks up into
//! the project; the user's tree and checked-out branch are never touched until
//! `land`. Branches: `agentloop/RUN` (integration), `agentloop/RUN-TASK` (a task).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::git::{git_command, run_git};

/// Git's worktree bookkeeping is not safe against itself: a `worktree add` under way
/// makes other commands that list worktrees (`merge`, `checkout`, `branch -D`, a
/// `prune`) fail or drop it. The driver's threads run their git commands here one at
/// a time (each takes milliseconds; the checks run outside it).
mod repair;
mod tidy;
pub use repair::{prune, repair};
pub(crate) use tidy::rewrite;
pub use tidy::{admin_of, settle, tidy};

static BOOKKEEPING: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub(crate) fn bookkeeping() -> std::sync::MutexGuard<'static, ()> {
    BOOKKEEPING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where a run's task worktrees live (its agents work there).
pub fn run_dir(run_id: &str) -> Option<PathBuf> {
    Some(
        agentloop_ground::fsutil::cache_dir()?
            .join("worktrees")
            .join(run_id),
    )
}

/// Where a run's own worktrees live — the merge queue's, a proposal's, a planner's,
/// a cycle judge's (`_NAME`) —, among the judges' copies (`fsutil::judge_dir`).
pub fn judge_run_dir(run_id: &str) -> Option<PathBuf> {
    Some(
        agentloop_ground::fsutil::judge_dir()?
            .join("worktrees")
            .join(run_id),
    )
}

fn git(dir: &Path, args: &[&str]) -> Command {
    let mut c = git_command(dir);
    c.args(args);
    c
}

fn run(c: Command) -> Result<Vec<u8>, String> {
    let _guard = bookkeeping();
    run_git(c, None)
}

fn text(c: Command) -> Result<String, String> {
    run(c).map(|o| String::from_utf8_lossy(&o).trim().to_string())
}

/// The commit a ref names.
pub fn rev(dir: &Path, name: &str) -> Option<String> {
    text(git(
        dir,
        &["rev-parse", "--verify", "-q", &format!("{name}^{{commit}}")],
    ))
    .ok()
}

/// Creates the integration branch at HEAD (or finds it, on resume); returns the commit
/// it starts from.
pub fn start_integration(root: &Path, branch: &str) -> Result<String, String> {
    if let Some(at) = rev(root, &format!("refs/heads/{branch}")) {
        return Ok(at);
    }
    let head = rev(root, "HEAD").ok_or("the repository has no commit to start from")?;
    text(git(root, &["branch", "--no-track", branch, &head]))?;
    Ok(head)
}

/// The branch of a task.
pub fn task_branch(integration: &str, task: &str) -> String {
    format!("{integration}-{task}")
}

/// The task's worktree, made on its branch from `from` the first time.
pub fn task_worktree(
    root: &Path,
    run_id: &str,
    integration: &str,
    task: &str,
    from: &str,
) -> Result<PathBuf, String> {
    let dir = run_dir(run_id).ok_or("no cache directory (set HOME or XDG_CACHE_HOME)")?;
    let path = dir.join(task);
    // An agent worked here last (and its driver may have died before taking its
    // worktree back): agentloop's own again, on the task's branch.
    settle(root, &path, &task_branch(integration, task));
    if usable(&path) {
        return Ok(path);
    }
    // Half made by a driver killed in `worktree add`: made again (its branch holds
    // what was committed; an interrupted iteration's loose work is not kept).
    let _ = std::fs::remove_dir_all(&path);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let branch = task_branch(integration, task);
    let p = path.to_string_lossy().into_owned();
    // `-f`: a registration left by a crash (its directory gone) is taken over.
    let _admin = super::git::worktree_admin();
    text(git(
        root,
        &["worktree", "add", "-q", "-f", "-B", &branch, &p, from],
    ))?;
    Ok(path)
}

/// A worktree git can work in: its `.git` file and git's bookkeeping of it both
/// there (a `worktree add` killed half-way leaves one without the other).
fn usable(path: &Path) -> bool {
    path.join(".git").exists() && rev(path, "HEAD").is_some()
}

/// Brings a task's worktree up to the integration head for another attempt after its
/// work could not be merged: the head is merged into the task's branch; conflicts
/// stay in the files, with markers, for the agent to resolve. Returns the paths that
/// conflict.
pub fn catch_up(worktree: &Path, head: &str) -> Result<Vec<String>, String> {
    // What the agent left uncommitted goes first, so the merge cannot lose it.
    commit_work(worktree, "agentloop: work in progress")?;
    let mut c = git(worktree, &["merge", "--no-edit", "-q", head]);
    super::git::set_identity(&mut c, None);
    if run(c).is_ok() {
        return Ok(Vec::new());
    }
    let conflicted = text(git(worktree, &["diff", "--name-only", "--diff-filter=U"]))?;
    Ok(conflicted.lines().map(String::from).collect())
}

/// Commits everything in the worktree (tracked changes and new files git does not
/// ignore; finishing a merge in progress); returns HEAD.
pub fn commit_work(worktree: &Path, message: &str) -> Result<String, String> {
    let add = super::git::add_all_args(worktree, None);
    text(git(
        worktree,
        &add.iter().map(String::as_str).collect::<Vec<_>>(),
    ))?;
    let mut c = git(
        worktree,
        &[
            "commit",
            "-q",
            "--no-verify",
            "--allow-empty",
            "-m",
            message,
        ],
    );
    super::git::set_identity(&mut c, None);
    let dirty = !text(git(worktree, &["status", "--porcelain"]))?.is_empty();
    let merging = crate::git::dirs(worktree).is_some_and(|d| d.own.join("MERGE_HEAD").exists());
    if dirty || merging {
        text(c)?;
    }
    rev(worktree, "HEAD").ok_or_else(|| "no HEAD after commit".to_string())
}

/// What merging a task's work onto the integration head came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Merge {
    /// The merge commit, checked out in the merge worktree (not yet on the branch).
    Clean { commit: String },
    /// The files that conflict and the conflicting hunks (capped).
    Conflict { files: Vec<String>, hunks: String },
}

/// The merge worktree of a run, detached at `head`, clean but for ignored files the
/// checks made earlier (build caches).
pub fn merge_worktree(root: &Path, run_id: &str, head: &str) -> Result<PathBuf, String> {
    merge_worktree_n(root, run_id, 0, head)
}

/// The run's `n`th merge worktree at `head` (0: the merge worktree; more: those a red
/// batch's bisection checks its prefixes in at the same time).
pub fn merge_worktree_n(
    root: &Path,
    run_id: &str,
    n: usize,
    head: &str,
) -> Result<PathBuf, String> {
    let name = match n {
        0 => "_merge".to_string(),
        n => format!("_merge-{}", n + 1),
    };
    scratch_worktree(root, run_id, &name, head)
}

/// A throwaway worktree of a run at `head` (the integration branch's), `_NAME`, for an
/// agent that only reads (a planner, a cycle's judge): clean but for ignored files.
pub fn reader_worktree(
    root: &Path,
    run_id: &str,
    name: &str,
    head: &str,
) -> Result<PathBuf, String> {
    scratch_worktree(root, run_id, &format!("_{name}"), head)
}

/// One of the run's own worktrees (named with a leading `_`, never a task's), detached
/// at `head`, clean but for ignored files.
fn scratch_worktree(root: &Path, run_id: &str, name: &str, head: &str) -> Result<PathBuf, String> {
    let dir = judge_run_dir(run_id).ok_or("no state directory (set HOME or XDG_STATE_HOME)")?;
    let path = dir.join(name);
    if usable(&path) {
        let _ = text(git(&path, &["merge", "--abort"]));
        text(git(&path, &["checkout", "-q", "-f", "--detach", head]))?;
        text(git(&path, &["clean", "-fdq"]))?;
        return Ok(path);
    }
    let _ = std::fs::remove_dir_all(&path);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let _admin = super::git::worktree_admin();
    prune(root);
    let p = path.to_string_lossy().into_owned();
    text(git(
        root,
        &["worktree", "add", "-q", "--detach", "-f", &p, head],
    ))?;
    Ok(path)
}

/// Puts the merge worktree at `commit` (an earlier merge of a batch, to check it alone).
pub fn checkout_detached(merge_wt: &Path, commit: &str) -> Result<(), String> {
    text(git(merge_wt, &["checkout", "-q", "-f", "--detach", commit]))?;
    text(git(merge_wt, &["clean", "-fdq"]))?;
    Ok(())
}

/// Bytes of conflicting hunks kept for the agent.
const HUNKS_CAP: usize = 12 * 1024;

/// Merges the tree of `work` (a commit of a task's branch) in the merge worktree,
/// which is at the integration head. What is merged is not the task's branch, whose
/// history holds its failed attempts and work in progress, but one commit of the
/// verified tree (`verified`: its message) on the commit the task's work and the
/// head last shared: the merge's second parent carries only verified work, so nothing
/// reachable from the integration branch is an attempt that failed.
pub fn merge(merge_wt: &Path, work: &str, verified: &str, message: &str) -> Result<Merge, String> {
    let base = text(git(merge_wt, &["merge-base", "HEAD", work]))?;
    let tree = format!("{work}^{{tree}}");
    let mut c = git(
        merge_wt,
        &["commit-tree", &tree, "-p", &base, "-m", verified],
    );
    super::git::set_identity(&mut c, None);
    let squashed = text(c)?;
    let mut c = git(
        merge_wt,
        &[
            "merge",
            "--no-ff",
            "--no-edit",
            "-q",
            "-m",
            message,
            &squashed,
        ],
    );
    super::git::set_identity(&mut c, None);
    if run(c).is_ok() {
        let commit = rev(merge_wt, "HEAD").ok_or("no HEAD after the merge")?;
        return Ok(Merge::Clean { commit });
    }
    let files: Vec<String> = text(git(merge_wt, &["diff", "--name-only", "--diff-filter=U"]))?
        .lines()
        .map(String::from)
        .collect();
    if files.is_empty() {
        let _ = text(git(merge_wt, &["merge", "--abort"]));
        return Err("the merge failed without a conflict".into());
    }
    let mut hunks =
        text(git(merge_wt, &["diff", "--no-color", "--no-ext-diff"])).unwrap_or_default();
    if hunks.len() > HUNKS_CAP {
        let mut cut = HUNKS_CAP;
        while !hunks.is_char_boundary(cut) {
            cut -= 1;
        }
        hunks.truncate(cut);
        hunks.push_str("\n… (cut)");
    }
    let _ = text(git(merge_wt, &["merge", "--abort"]));
    Ok(Merge::Conflict { files, hunks })
}

/// Moves the integration branch from `from` to `to`, only if it is still at `from`.
pub fn advance(root: &Path, branch: &str, from: &str, to: &str) -> Result<(), String> {
    text(git(
        root,
        &["update-ref", &format!("refs/heads/{branch}"), to, from],
    ))
    .map(|_| ())
}

/// The commit on the integration branch after `since` whose message carries
/// `trailer` (a merge made before a crash, whose record was lost).
pub fn merged_since(root: &Path, branch: &str, since: &str, trailer: &str) -> Option<String> {
    let range = format!("{since}..refs/heads/{branch}");
    let out = text(git(root, &["log", "--format=%H%x00%B%x01", &range])).ok()?;
    out.split('\u{1}').find_map(|entry| {
        let (id, body) = entry.trim().split_once('\0')?;
        body.lines()
            .any(|l| l.trim() == trailer)
            .then(|| id.to_string())
    })
}

/// Removes a task's worktree and its branch (its attempts kept under
/// `refs/agentloop/RUN/attempts/TASK`).
pub fn remove_task(root: &Path, run_id: &str, integration: &str, task: &str) {
    if let Some(dir) = run_dir(run_id) {
        let path = dir.join(task);
        if path.exists() {
            let p = path.to_string_lossy().into_owned();
            let _admin = super::git::worktree_admin();
            let _ = text(git(root, &["worktree", "remove", "--force", &p]));
            let _ = std::fs::remove_dir_all(&path);
        }
    }
    let _admin = super::git::worktree_admin();
    prune(root);
    // Its attempts stay reachable, off every branch.
    let branch = task_branch(integration, task);
    if let Some(at) = rev(root, &format!("refs/heads/{branch}")) {
        let _ = text(git(
            root,
            &[
                "update-ref",
                &format!("refs/agentloop/{run_id}/attempts/{task}"),
                &at,
            ],
        ));
    }
    let _ = text(git(root, &["branch", "-D", "-q", &branch]));
}

/// A checkpoint of the tree in `dir` as it is now (tracked files and new ones git does
/// not ignore), made without touching the tree, its index or its branch: a commit on
/// HEAD kept under `refs/agentloop/RUN/checkpoints/TASK/ITERATION`. Returns it.
pub fn checkpoint(dir: &Path, run_id: &str, task: &str, iteration: u32) -> Result<String, String> {
    let cache = agentloop_ground::fsutil::cache_dir()
        .ok_or("no cache directory")?
        .join("checkpoints");
    std::fs::create_dir_all(&cache).map_err(|e| format!("{}: {e}", cache.display()))?;
    let index = cache.join(format!("{run_id}-{task}.index"));
    let _ = std::fs::remove_file(&index);
    let with_index = |args: &[&str]| {
        let mut c = git(dir, args);
        c.env("GIT_INDEX_FILE", &index);
        c
    };
    let head = rev(dir, "HEAD");
    if let Some(h) = &head {
        text(with_index(&["read-tree", h]))?;
    }
    let add = super::git::add_all_args(dir, Some(&index));
    text(with_index(
        &add.iter().map(String::as_str).collect::<Vec<_>>(),
    ))?;
    let tree = text(with_index(&["write-tree"]))?;
    let _ = std::fs::remove_file(&index);
    let message =
        format!("agentloop: checkpoint of {task} after iteration {iteration}\n\nRun {run_id}");
    let mut commit = git(dir, &["commit-tree", &tree, "-m", &message]);
    if let Some(h) = &head {
        commit.args(["-p", h]);
    }
    super::git::set_identity(&mut commit, None);
    let commit = text(commit)?;
    text(git(
        dir,
        &[
            "update-ref",
            &format!("refs/agentloop/{run_id}/checkpoints/{task}/{iteration}"),
            &commit,
        ],
    ))?;
    Ok(commit)
}

/// The refs agentloop keeps for runs under `refs/agentloop/`, by run: each task's
/// attempts off every branch (`RUN/attempts/TASK`), class 2B tasks' checkpoints
/// (`RUN/checkpoints/TASK/N`) and the results executors fetched (`RUN/N`).
pub fn kept_refs(root: &Path) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut by_run = std::collections::BTreeMap::<String, Vec<String>>::new();
    let listed = text(git(
        root,
        &["for-each-ref", "--format=%(refname)", "refs/agentloop/"],
    ))
    .unwrap_or_default();
    for name in listed.lines().filter(|l| !l.is_empty()) {
        if let Some(run) = name
            .strip_prefix("refs/agentloop/")
            .and_then(|r| r.split('/').next())
        {
            by_run
                .entry(run.to_string())
                .or_default()
                .push(name.to_string());
        }
    }
    by_run
}

/// Deletes `refs` (as [`kept_refs`] lists them).
pub fn remove_refs(root: &Path, refs: &[String]) {
    for r in refs.iter().filter(|r| r.starts_with("refs/agentloop/")) {
        let _ = text(git(root, &["update-ref", "-d", r]));
    }
}

/// Removes every worktree of a run (its tasks' and the merge worktree) and the task
/// branches; the integration branch stays: it is the run's result.
pub fn remove_run(root: &Path, run_id: &str, integration: &str) {
    let Some(dir) = run_dir(run_id) else { return };
    let own = judge_run_dir(run_id);
    let entries = [Some(&dir), own.as_ref()]
        .into_iter()
        .flatten()
        .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
        .collect::<Vec<_>>();
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('_') {
            let p = e.path().to_string_lossy().into_owned();
            let _admin = super::git::worktree_admin();
            let _ = text(git(root, &["worktree", "remove", "--force", &p]));
            let _ = std::fs::remove_dir_all(e.path());
        } else {
            remove_task(root, run_id, integration, &name);
        }
    }
    let _ = std::fs::remove_dir(&dir);
    if let Some(own) = own {
        let _ = std::fs::remove_dir(own);
    }
    let _admin = super::git::worktree_admin();
    prune(root);
}

/// Bytes a run's worktrees take on disk (its tasks' and its own).
pub fn disk_usage(run_id: &str) -> u64 {
    [run_dir(run_id), judge_run_dir(run_id)]
        .into_iter()
        .flatten()
        .map(|d| dir_size(&d))
        .sum()
}

/// Bytes of the files under `p` (symbolic links not followed).
pub fn dir_size(p: &Path) -> u64 {
    let Ok(m) = std::fs::symlink_metadata(p) else {
        return 0;
    };
    if m.is_dir() {
        std::fs::read_dir(p)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| dir_size(&e.path()))
            .sum()
    } else {
        m.len()
    }
}

/// Fast-forwards the checked-out branch of `root` to the integration branch's head
/// as the run's journal has it (`head`: never what the branch's ref says, which a
/// worker's git could have written), if it is still where the run started
/// (`base`). Returns the branch's name.
pub fn land(root: &Path, integration: &str, head: &str, base: &str) -> Result<String, String> {
    match landing(root, integration, head, base)? {
        Landing::FastForward { branch, .. } => {
            fast_forward(root, &branch, integration, head)?;
            Ok(branch)
        }
        Landing::Moved { branch, head } => Err(format!(
            "{branch} moved since the run started ({} → {}); merge `{integration}` yourself",
            short(base),
            short(&head)
        )),
        Landing::Done { branch } => Ok(branch),
    }
}

/// How the checked-out branch of `root` stands to a run's integration branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Landing {
    /// It has nothing the run's branch lacks: a fast-forward lands the run
    /// (`commits`: how many it brings).
    FastForward { branch: String, commits: u32 },
    /// It holds the run's branch already.
    Done { branch: String },
    /// It moved since the run started, off the run's branch: only a merge lands it.
    Moved { branch: String, head: String },
}

fn short(c: &str) -> &str {
    &c[..c.len().min(10)]
}

/// Where the checked-out branch stands to `integration`, whose head the journal says
/// is `target` (whose run began at `base`).
pub fn landing(
    root: &Path,
    integration: &str,
    target: &str,
    base: &str,
) -> Result<Landing, String> {
    let branch = text(git(root, &["symbolic-ref", "-q", "--short", "HEAD"]))
        .map_err(|_| "HEAD is detached: there is no branch to land on".to_string())?;
    let head = rev(root, "HEAD").ok_or("the repository has no HEAD")?;
    let target = rev(root, target).filter(|t| t == target).ok_or_else(|| {
        format!(
            "the repository lacks {integration}'s head {}",
            short(target)
        )
    })?;
    let is_ancestor =
        |a: &str, b: &str| run(git(root, &["merge-base", "--is-ancestor", a, b])).is_ok();
    if is_ancestor(&target, &head) {
        return Ok(Landing::Done { branch });
    }
    if head == base || is_ancestor(&head, &target) {
        let commits = text(git(
            root,
            &["rev-list", "--count", &format!("{head}..{target}")],
        ))
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
        return Ok(Landing::FastForward { branch, commits });
    }
    Ok(Landing::Moved { branch, head })
}

/// Fast-forwards the checked-out `branch` of `root` to `head`, `integration`'s head.
pub fn fast_forward(
    root: &Path,
    branch: &str,
    integration: &str,
    head: &str,
) -> Result<(), String> {
    let _mark = super::index_mark::mark(root);
    text(git(root, &["merge", "--ff-only", "-q", head]))
        .map(|_| ())
        .map_err(|e| format!("cannot fast-forward {branch} to {integration}: {e}"))
}

/// Merges `head`, `integration`'s head, into the checked-out `branch` of `root` with a
/// merge commit saying `message`; a merge that does not go through cleanly is undone.
pub fn merge_into(
    root: &Path,
    branch: &str,
    integration: &str,
    head: &str,
    message: &str,
) -> Result<(), String> {
    let _mark = super::index_mark::mark(root);
    let mut c = git(root, &["merge", "--no-ff", "-q", "-m", message, head]);
    // The merge commit is the person's: made as them.
    super::git::set_identity(&mut c, super::git::user_identity(root).as_ref());
    match text(c) {
        Ok(_) => Ok(()),
        Err(e) => {
            let _ = run(git(root, &["merge", "--abort"]));
            Err(format!("cannot merge {integration} into {branch}: {e}"))
        }
    }
}
