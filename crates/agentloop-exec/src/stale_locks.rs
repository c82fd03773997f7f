//! Git's lock files a killed driver left in a run's own part of the repository.
//!
//! git takes a lock by creating `NAME.lock` and drops it by renaming or removing it;
//! a git process killed in between leaves the lock, and every later command on that
//! index or ref fails with "File exists" — for good, since nothing removes it. A
//! driver that takes a run over removes them, but only in what belongs to the run
//! (its worktrees' bookkeeping under `.git/worktrees/`, its branches' refs, and the
//! packed refs), and only once no git process works in the project or in any of
//! agentloop's worktrees and clean copies: until then a lock may be a live one.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a takeover waits for git processes a dead driver left to end.
const SETTLE: Duration = Duration::from_secs(10);

/// Removes the stale lock files of run `run_id` (integration branch `integration`)
/// in the repository at `root`; returns what it removed. When git processes still
/// work there after [`SETTLE`], nothing is removed and the error says which.
pub fn clear(root: &Path, run_id: &str, integration: &str) -> Result<Vec<PathBuf>, String> {
    let common = crate::git::dirs(root)
        .map(|d| d.common)
        .ok_or_else(|| format!("{} is not a git repository", root.display()))?;
    let worktrees = [
        super::worktree::run_dir(run_id),
        super::worktree::judge_run_dir(run_id),
    ];
    let worktrees: Vec<&Path> = worktrees.iter().flatten().map(PathBuf::as_path).collect();
    let locks = candidates(&common, &worktrees, integration);
    if locks.is_empty() {
        return Ok(locks);
    }
    // Any git that could hold one: in the project, its git directory, or any of
    // agentloop's worktrees and clean copies (another run's too: the refs and the
    // packed refs are the repository's).
    let cache = agentloop_ground::fsutil::cache_dir();
    let judge = agentloop_ground::fsutil::judge_dir();
    let mut dirs: Vec<&Path> = vec![root, &common];
    dirs.extend(cache.as_deref());
    dirs.extend(judge.as_deref());
    let t = Instant::now();
    loop {
        let gits = super::reap::gits_in(&dirs);
        if gits.is_empty() {
            break;
        }
        if t.elapsed() > SETTLE {
            return Err(format!(
                "git is still at work in the project (pid {}); the lock files of the run stay: {}",
                gits.iter()
                    .map(|p| p.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                locks
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut removed = Vec::new();
    for l in locks {
        if std::fs::remove_file(&l).is_ok() {
            removed.push(l);
        }
    }
    Ok(removed)
}

/// The lock files in the run's part of the repository whose common directory is
/// `common`.
fn candidates(common: &Path, worktrees: &[&Path], integration: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let lock = |p: &Path| p.extension().is_some_and(|e| e == "lock");
    // The bookkeeping of the run's worktrees: its `gitdir` names the worktree's path.
    for e in std::fs::read_dir(common.join("worktrees"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let ours = std::fs::read_to_string(e.path().join("gitdir"))
            .is_ok_and(|g| worktrees.iter().any(|w| Path::new(g.trim()).starts_with(w)));
        if ours {
            files_under(&e.path(), &lock, &mut out);
        }
    }
    // The run's branches: `agentloop/RUN` and `agentloop/RUN-TASK`.
    let (dir, name) = match integration.rsplit_once('/') {
        Some((d, n)) => (common.join("refs/heads").join(d), n.to_string()),
        None => (common.join("refs/heads"), integration.to_string()),
    };
    for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let file = e.file_name().to_string_lossy().into_owned();
        if lock(&e.path()) && file.starts_with(&name) {
            out.push(e.path());
        }
    }
    let packed = common.join("packed-refs.lock");
    if packed.is_file() {
        out.push(packed);
    }
    out
}

fn files_under(dir: &Path, keep: &dyn Fn(&Path) -> bool, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => files_under(&p, keep, out),
            Ok(t) if t.is_file() && keep(&p) => out.push(p),
            _ => {}
        }
    }
}
