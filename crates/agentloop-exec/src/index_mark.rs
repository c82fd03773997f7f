//! The project's own index, which agentloop's git writes in a few places only (a
//! task's commit with `[git] commit`, `land`'s merge into the person's branch).
//!
//! A git killed while it writes the index leaves `.git/index.lock`, and every later
//! git of the person's fails on it, for good. So before such a command agentloop
//! leaves a mark beside the index, `agentloop-index.owner` (its pid and when that
//! process started), and takes it away after. A lock with a mark whose process is
//! gone is agentloop's: a takeover and `gc` remove it, once no git works in the
//! project. A lock with no mark, or whose marking process still lives, is a
//! person's git (or one still at work) and stays.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The mark's name in the git directory.
const MARK: &str = "agentloop-index.owner";

/// How long a clearing waits for the git processes at work in the project to end.
const SETTLE: Duration = Duration::from_secs(10);

/// Held while agentloop's git writes the index of the repository it was made for;
/// dropping it takes the mark away.
pub struct Mark {
    path: PathBuf,
}

impl Drop for Mark {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Leaves the mark in the git directory of the work tree `root` (`None` when it has
/// none, or the mark cannot be written: the lock, if a kill leaves one, then stays
/// for a person to remove, as before).
pub fn mark(root: &Path) -> Option<Mark> {
    let path = git_dir(root)?.join(MARK);
    let me = std::process::id();
    let since = super::reap::started(me)?;
    agentloop_ground::fsutil::write_atomic(&path, format!("{me} {since}\n").as_bytes()).ok()?;
    Some(Mark { path })
}

/// The index lock agentloop's own killed git left in the work tree `root`, if there
/// is one (what [`clear`] would remove). A mark whose process is gone but with no
/// lock of its own beside it is taken away.
pub fn stale(root: &Path) -> Option<PathBuf> {
    let dir = git_dir(root)?;
    let mark = dir.join(MARK);
    let text = std::fs::read_to_string(&mark).ok()?;
    let mut words = text.split_whitespace();
    let pid = words.next().and_then(|p| p.parse::<u32>().ok());
    let since = words.next().and_then(|t| t.parse::<u64>().ok());
    if let (Some(pid), Some(since)) = (pid, since)
        && super::reap::started(pid) == Some(since)
    {
        return None;
    }
    let lock = dir.join("index.lock");
    // A lock older than the mark was there before agentloop's git ran (which then
    // failed on it): not agentloop's.
    let modified = |p: &Path| std::fs::symlink_metadata(p).and_then(|m| m.modified()).ok();
    match (modified(&lock), modified(&mark)) {
        (Some(l), Some(m)) if l >= m => Some(lock),
        _ => {
            let _ = std::fs::remove_file(&mark);
            None
        }
    }
}

/// Removes the index lock agentloop's own killed git left in the work tree `root`
/// ([`stale`]); returns it. `Ok(None)`: there is none. Err: git still works in the
/// project after a while, and the lock stays.
pub fn clear(root: &Path) -> Result<Option<PathBuf>, String> {
    let Some(lock) = stale(root) else {
        return Ok(None);
    };
    let dir = lock.parent().unwrap_or(root).to_path_buf();
    let t = Instant::now();
    loop {
        let gits = super::reap::gits_in(&[root, &dir]);
        if gits.is_empty() {
            break;
        }
        if t.elapsed() > SETTLE {
            return Err(format!(
                "git is still at work in the project (pid {}); {} stays",
                gits.iter()
                    .map(|p| p.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                lock.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let removed = std::fs::remove_file(&lock).is_ok();
    let _ = std::fs::remove_file(dir.join(MARK));
    Ok(removed.then_some(lock))
}

/// The git directory of the work tree `root`, read without running git: `.git`
/// itself, or where the `gitdir:` line of a `.git` file (a linked worktree) points.
fn git_dir(root: &Path) -> Option<PathBuf> {
    let dot = root.join(".git");
    let meta = std::fs::symlink_metadata(&dot).ok()?;
    if meta.is_dir() {
        return Some(dot);
    }
    if !meta.is_file() || meta.len() > 4096 {
        return None;
    }
    let text = std::fs::read_to_string(&dot).ok()?;
    let to = text
        .lines()
        .find_map(|l| l.strip_prefix("gitdir: "))?
        .trim();
    Some(root.join(to)).filter(|d| d.is_dir())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pid no process has (one that just ended, its number not reused this soon).
    fn dead_pid() -> u32 {
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let pid = c.id();
        c.wait().unwrap();
        pid
    }

    fn repo() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join(".git")).unwrap();
        d
    }

    #[test]
    fn a_lock_marked_by_a_process_that_is_gone_is_removed_and_only_that() {
        let d = repo();
        let git = d.path().join(".git");
        // Marked by a dead process, locked after: agentloop's, removed.
        std::fs::write(git.join(MARK), format!("{} 1\n", dead_pid())).unwrap();
        std::fs::write(git.join("index.lock"), "").unwrap();
        assert_eq!(clear(d.path()).unwrap(), Some(git.join("index.lock")));
        assert!(!git.join("index.lock").exists());
        assert!(!git.join(MARK).exists());
        // No mark: a person's lock, kept.
        std::fs::write(git.join("index.lock"), "").unwrap();
        assert_eq!(clear(d.path()).unwrap(), None);
        assert!(git.join("index.lock").exists());
        // Marked by a process that lives (this one): its git may be at work, kept.
        let m = mark(d.path()).unwrap();
        std::fs::write(git.join("index.lock"), "").unwrap();
        assert_eq!(clear(d.path()).unwrap(), None);
        assert!(git.join("index.lock").exists());
        drop(m);
        assert!(!git.join(MARK).exists(), "the mark goes with its holder");
    }

    #[test]
    fn a_lock_from_before_the_mark_is_not_agentloops() {
        let d = repo();
        let git = d.path().join(".git");
        std::fs::write(git.join("index.lock"), "").unwrap();
        let old = std::time::SystemTime::now() - Duration::from_secs(60);
        std::fs::File::options()
            .write(true)
            .open(git.join("index.lock"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        std::fs::write(git.join(MARK), format!("{} 1\n", dead_pid())).unwrap();
        assert_eq!(clear(d.path()).unwrap(), None);
        assert!(git.join("index.lock").exists(), "the person's lock stays");
        assert!(!git.join(MARK).exists(), "the dead mark is taken away");
    }
}
