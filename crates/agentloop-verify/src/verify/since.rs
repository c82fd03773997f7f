//! What a held-out run leaves in the tree it ran in, taken out again. The agent's code
//! runs during the held-out checks and could copy the hidden tests into a file that
//! stays there — an ignored one above all, which no refresh of a copy removes — for
//! a later check to print into a log the agent reads. Every entry of the tree is
//! listed before the lay (its inode, size and change time: a write or a `utime`
//! moves the change time, which no process can set back); afterwards every file or
//! link made or changed since goes, and every directory made since, whole. A directory
//! that was there keeps its entries, so what the run can set on it is put back: its
//! mode (one made unreadable would hide a new file from the sweep) and its extended
//! attributes (the stop-73 second attack carried a hidden test out in one). A tracked
//! file that went is put back by the next refresh of the copy or checkout of the
//! merge worktree. A directory's times are not put back (see docs/SECURITY.md).

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Each entry under a directory (`.git` and links not followed): what says it is the
/// same entry with the same content.
pub(super) struct Inventory {
    entries: HashMap<PathBuf, (u64, u64, i64, i64)>,
    /// Each directory's mode and extended attributes.
    dirs: HashMap<PathBuf, (u32, Attrs)>,
}

/// Extended attributes, each name with its value, sorted.
type Attrs = Vec<(Vec<u8>, Vec<u8>)>;

fn stamp(m: &std::fs::Metadata) -> (u64, u64, i64, i64) {
    (m.ino(), m.size(), m.ctime(), m.ctime_nsec())
}

impl Inventory {
    pub(super) fn take(dir: &Path) -> Inventory {
        let (mut entries, mut dirs) = (HashMap::new(), HashMap::new());
        walk(dir, &mut |p, m| {
            entries.insert(p.to_path_buf(), stamp(m));
            if m.is_dir() {
                dirs.insert(p.to_path_buf(), (m.mode() & 0o7777, xattrs(p)));
            }
        });
        Inventory { entries, dirs }
    }

    /// Every directory that was there as it was: its mode first (so that it can be
    /// listed), then its extended attributes.
    fn put_back_dirs(&self) {
        use std::os::unix::fs::PermissionsExt;
        for (d, (mode, attrs)) in &self.dirs {
            let Ok(m) = std::fs::symlink_metadata(d) else {
                continue;
            };
            if !m.is_dir() {
                continue;
            }
            if m.mode() & 0o7777 != *mode {
                let _ = std::fs::set_permissions(d, std::fs::Permissions::from_mode(*mode));
            }
            let now = xattrs(d);
            if now != *attrs {
                for (name, _) in &now {
                    if !attrs.iter().any(|(n, _)| n == name) {
                        xattr_remove(d, name);
                    }
                }
                for (name, value) in attrs {
                    if !now.iter().any(|(n, v)| n == name && v == value) {
                        xattr_set(d, name, value);
                    }
                }
            }
        }
    }

    /// Removes every file or link under `dir` made or changed since, and every
    /// directory made since; how many entries went.
    pub(super) fn sweep(&self, dir: &Path) -> usize {
        self.put_back_dirs();
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

/// A path's extended attributes (not followed if a link), each name with its value.
fn xattrs(p: &Path) -> Attrs {
    use nix::libc;
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else {
        return Vec::new();
    };
    let mut names = vec![0u8; 4096];
    // SAFETY: the buffer is as long as said; the kernel writes at most that much.
    let n = unsafe { libc::llistxattr(c.as_ptr(), names.as_mut_ptr().cast(), names.len()) };
    if n <= 0 {
        return Vec::new();
    }
    names.truncate(n as usize);
    let mut out = Vec::new();
    for name in names.split(|b| *b == 0).filter(|n| !n.is_empty()) {
        let Ok(cn) = std::ffi::CString::new(name) else {
            continue;
        };
        let mut value = vec![0u8; 64 * 1024];
        // SAFETY: as above.
        let v = unsafe {
            libc::lgetxattr(
                c.as_ptr(),
                cn.as_ptr(),
                value.as_mut_ptr().cast(),
                value.len(),
            )
        };
        if v >= 0 {
            value.truncate(v as usize);
            out.push((name.to_vec(), value));
        }
    }
    out.sort();
    out
}

fn xattr_remove(p: &Path, name: &[u8]) {
    use std::os::unix::ffi::OsStrExt;
    if let (Ok(c), Ok(n)) = (
        std::ffi::CString::new(p.as_os_str().as_bytes()),
        std::ffi::CString::new(name),
    ) {
        // SAFETY: both strings end in a zero.
        unsafe { nix::libc::lremovexattr(c.as_ptr(), n.as_ptr()) };
    }
}

fn xattr_set(p: &Path, name: &[u8], value: &[u8]) {
    use std::os::unix::ffi::OsStrExt;
    if let (Ok(c), Ok(n)) = (
        std::ffi::CString::new(p.as_os_str().as_bytes()),
        std::ffi::CString::new(name),
    ) {
        // SAFETY: both strings end in a zero; the value is as long as said.
        unsafe {
            nix::libc::lsetxattr(
                c.as_ptr(),
                n.as_ptr(),
                value.as_ptr().cast(),
                value.len(),
                0,
            )
        };
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

    /// A directory that was there gets back its mode and its extended attributes: a
    /// secret set on one goes, and one made unreadable is swept inside all the same.
    #[test]
    fn a_directory_that_was_there_is_put_back_as_it_was() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("copy");
        std::fs::create_dir_all(d.join("tests")).unwrap();
        std::fs::create_dir_all(d.join("chan")).unwrap();
        xattr_set(&d.join("tests"), b"user.kept", b"k");
        let mode = |p: &str| std::fs::metadata(d.join(p)).unwrap().permissions().mode() & 0o7777;
        let (chan, tests) = (mode("chan"), mode("tests"));
        let before = Inventory::take(&d);
        xattr_set(&d.join("tests"), b"user.leak", b"the hidden test");
        xattr_set(&d.join("tests"), b"user.kept", b"changed");
        std::fs::write(d.join("chan/leak.txt"), "secret").unwrap();
        std::fs::set_permissions(d.join("chan"), std::fs::Permissions::from_mode(0o100)).unwrap();
        std::fs::set_permissions(d.join("tests"), std::fs::Permissions::from_mode(0o700)).unwrap();
        before.sweep(&d);
        let attrs = xattrs(&d.join("tests"));
        if !attrs.is_empty() || xattrs_work(&d) {
            assert_eq!(attrs, vec![(b"user.kept".to_vec(), b"k".to_vec())]);
        }
        assert!(!d.join("chan/leak.txt").exists());
        assert_eq!(mode("chan"), chan);
        assert_eq!(mode("tests"), tests);
    }

    /// Whether this file system keeps `user.` attributes at all (tmpfs may not).
    fn xattrs_work(d: &Path) -> bool {
        let probe = d.join("probe");
        std::fs::write(&probe, "").unwrap();
        xattr_set(&probe, b"user.p", b"1");
        let there = !xattrs(&probe).is_empty();
        let _ = std::fs::remove_file(&probe);
        there
    }
}
