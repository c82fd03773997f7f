//! What a held-out run leaves in the tree it ran in, taken out again. The agent's code
//! runs during the held-out checks and could copy the hidden tests into a file that
//! stays there — an ignored one above all, which no refresh of a copy removes — for
//! a later check to print into a log the agent reads. Every entry of the tree is
//! listed before the lay (its inode, size and change time: a write or a `utime`
//! moves the change time, which no process can set back); afterwards every file or
//! link made or changed since goes, and every directory made since, whole. A tracked
//! file that went is put back by the next refresh of the copy or checkout of the
//! merge worktree.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Each entry under a directory (`.git` and links not followed): what says it is the
/// same entry with the same content.
pub(super) struct Inventory {
    entries: HashMap<PathBuf, (u64, u64, i64, i64)>,
}

fn stamp(m: &std::fs::Metadata) -> (u64, u64, i64, i64) {
    (m.ino(), m.size(), m.ctime(), m.ctime_nsec())
}

impl Inventory {
    pub(super) fn take(dir: &Path) -> Inventory {
        let mut entries = HashMap::new();
        walk(dir, &mut |p, m| {
            entries.insert(p.to_path_buf(), stamp(m));
        });
        Inventory { entries }
    }

    /// Removes every file or link under `dir` made or changed since, and every
    /// directory made since; how many entries went.
    pub(super) fn sweep(&self, dir: &Path) -> usize {
        let mut gone = Vec::new();
        walk(dir, &mut |p, m| {
            let was = self.entries.get(p);
            let changed = match was {
                None => true,
                Some(s) => !m.is_dir() && *s != stamp(m),
            };
            if changed {
                gone.push((p.to_path_buf(), m.is_dir()));
            }
        });
        // A directory made since is removed whole (what is under it was listed
        // after it).
        let mut removed: Vec<&Path> = Vec::new();
        for (p, is_dir) in &gone {
            if removed.iter().any(|r| p.starts_with(r)) {
                continue;
            }
            if *is_dir {
                agentloop_ground::fsutil::remove_all(p);
                removed.push(p);
            } else {
                let _ = std::fs::remove_file(p);
            }
        }
        gone.len()
    }
}

/// Every entry under `dir` but `dir/.git`, parents before their children, links
/// never followed.
fn walk(dir: &Path, each: &mut impl FnMut(&Path, &std::fs::Metadata)) {
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if d == dir && e.file_name() == ".git" {
                continue;
            }
            let Ok(m) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            each(&p, &m);
            if m.is_dir() {
                todo.push(p);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a run made or changed goes, an ignored directory's new file among them;
    /// what it did not touch stays, a link's target untouched.
    #[test]
    fn what_was_made_or_changed_goes_and_nothing_else() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("copy");
        let outside = t.path().join("outside");
        std::fs::create_dir_all(d.join("build/cache")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(d.join("kept.txt"), "k").unwrap();
        std::fs::write(d.join("build/cache/old"), "o").unwrap();
        std::fs::write(d.join("written.txt"), "w").unwrap();
        std::fs::write(d.join(".git"), "gitdir: x").unwrap();
        std::fs::write(outside.join("f"), "theirs").unwrap();
        std::os::unix::fs::symlink(&outside, d.join("node_modules")).unwrap();
        let before = Inventory::take(&d);
        // The run: a copy into an ignored directory, a new directory, a write that
        // keeps the size and sets the time back, a write through the link.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(d.join("build/cache/leak"), "secret").unwrap();
        std::fs::create_dir_all(d.join(".leak/deep")).unwrap();
        std::fs::write(d.join(".leak/deep/x"), "secret").unwrap();
        let m = std::fs::metadata(d.join("written.txt")).unwrap();
        std::fs::write(d.join("written.txt"), "s").unwrap();
        let f = std::fs::File::options()
            .write(true)
            .open(d.join("written.txt"))
            .unwrap();
        f.set_modified(m.modified().unwrap()).unwrap();
        std::fs::write(d.join("node_modules/f"), "theirs too").unwrap();
        // The leak, the new directory and what is in it, the rewritten file.
        assert_eq!(before.sweep(&d), 5);
        assert!(!d.join("build/cache/leak").exists());
        assert!(!d.join(".leak").exists());
        assert!(!d.join("written.txt").exists());
        assert!(d.join("kept.txt").exists() && d.join("build/cache/old").exists());
        assert!(d.join(".git").exists());
        assert!(d.join("node_modules").is_symlink());
        assert_eq!(
            std::fs::read_to_string(outside.join("f")).unwrap(),
            "theirs too",
            "not followed"
        );
    }
}
