//! Each file of the surface watched itself (inotify on the file, not only on its
//! directory), so that a driver that lives on can tell that none was written since it
//! last found them as the stamp has them without reading every file's status again.
//!
//! A write reaches a file's own watch by any name it is written through (a hard link
//! from outside the tree included, which no directory's watch reports), as do a change
//! of its attributes or link count, its removal and its renaming. Anything reported
//! ends the watch's word: the driver starts a new watch (on the files as they are now)
//! and reads every status, as without a watch. A write through a shared memory mapping
//! is not reported itself, but the descriptor it needs was opened for writing, and its
//! closing is; an agent's processes end with its iteration.

use std::path::Path;

use nix::sys::inotify::{InitFlags, Inotify};

use crate::journal::Baseline;

/// The baseline's files watched, each itself.
pub struct SurfaceWatch {
    inotify: Inotify,
    /// The files watched.
    paths: Vec<String>,
    /// Since the last event, a full look (every status) found the surface as stamped.
    trusted: bool,
}

impl SurfaceWatch {
    /// Watches each file of `base` under `root`; `None` when one cannot be watched
    /// (gone, or the kernel's watches spent).
    pub fn start(root: &Path, base: &Baseline) -> Option<SurfaceWatch> {
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok()?;
        let mask = crate::exec::watch::file_mask();
        for path in base.keys() {
            inotify.add_watch(&root.join(path), mask).ok()?;
        }
        Some(SurfaceWatch {
            inotify,
            paths: base.keys().cloned().collect(),
            trusted: false,
        })
    }

    /// Reads what was reported: true when nothing was since the last call (anything
    /// reported also ends the trust a full look gave).
    pub fn quiet(&mut self) -> bool {
        let mut quiet = true;
        loop {
            match self.inotify.read_events() {
                Ok(events) if events.is_empty() => break,
                Ok(_) => quiet = false,
                Err(nix::errno::Errno::EAGAIN) => break,
                Err(_) => {
                    quiet = false;
                    break;
                }
            }
        }
        self.trusted &= quiet;
        quiet
    }

    /// Whether a full look since the last report found every file as stamped.
    pub fn trusted(&self) -> bool {
        self.trusted
    }

    /// Whether the files watched are `base`'s (a baseline extended since is not).
    pub fn covers(&self, base: &Baseline) -> bool {
        base.keys().eq(self.paths.iter())
    }

    /// A full look — every status read after the last [`quiet`](Self::quiet) — found
    /// every file as stamped.
    pub fn looked(&mut self) {
        self.trusted = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::SurfaceFile;

    #[test]
    fn a_write_by_any_name_a_rename_over_and_a_mode_change_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        std::fs::create_dir_all(root.join("tests")).unwrap();
        std::fs::write(root.join("tests/t.py"), "t").unwrap();
        let file = SurfaceFile {
            blob: "b".into(),
            mode: 0o100644,
            why: "test".into(),
        };
        let base: Baseline = [("tests/t.py".to_string(), file)].into_iter().collect();
        let outside = dir.path().join("link");
        let changes: [&dyn Fn(); 3] = [
            &|| {
                let _ = std::fs::remove_file(&outside);
                std::fs::hard_link(root.join("tests/t.py"), &outside).unwrap();
                std::fs::write(&outside, "through the link").unwrap();
            },
            &|| {
                std::fs::write(root.join("tests/new"), "other").unwrap();
                std::fs::rename(root.join("tests/new"), root.join("tests/t.py")).unwrap();
            },
            &|| {
                use std::os::unix::fs::PermissionsExt;
                let p = std::fs::Permissions::from_mode(0o755);
                std::fs::set_permissions(root.join("tests/t.py"), p).unwrap();
            },
        ];
        for change in changes {
            let mut w = SurfaceWatch::start(&root, &base).unwrap();
            assert!(w.covers(&base));
            assert!(w.quiet());
            w.looked();
            assert!(w.quiet() && w.trusted());
            change();
            assert!(!w.quiet());
            assert!(!w.trusted());
        }
        // A file that is not there cannot be watched: no watch's word then.
        std::fs::remove_file(root.join("tests/t.py")).unwrap();
        assert!(SurfaceWatch::start(&root, &base).is_none());
    }
}
