//! The kernel's watch on the kept copy: every directory and every file of its tree,
//! and inside the checks' directories git does not ignore as a whole.

use std::collections::BTreeSet;
use std::path::Path;

use nix::sys::inotify::AddWatchFlags as F;

use super::{Full, Kept, join};
use agentloop_exec::watch::{dir_mask, file_mask};

/// Beyond this many directories the copy is not watched (each costs a kernel watch).
pub(super) const MAX_WATCHES: usize = 20_000;

impl Kept {
    /// Watches directory `d` of the copy and notes what in it is not the tree's.
    pub(super) fn watch_dir(&mut self, top: &Path, d: &str) -> Result<(), Full> {
        let path = top.join(d);
        let mut m = dir_mask();
        if d.is_empty() {
            // Who opens the copy's `.git` runs git in it.
            m |= F::IN_OPEN;
        }
        let wd = self.inotify.add_watch(&path, m).map_err(|_| ())?;
        self.dirs.insert(wd, d.to_string());
        for e in std::fs::read_dir(&path).map_err(|_| ())? {
            let e = e.map_err(|_| ())?;
            let name = e.file_name().into_string().map_err(|_| ())?;
            let p = join(d, &name);
            if (d.is_empty() && name == ".git") || self.files.contains(&p) {
                continue;
            }
            let is_dir = e.file_type().map_err(|_| ())?.is_dir();
            if !(is_dir && self.tree_dirs.contains(&p)) {
                self.extras.insert(p, is_dir);
            }
        }
        Ok(())
    }

    /// Watches directory `d` of the checks' (not the tree's) and everything in it, as
    /// what the full way keeps there.
    pub(super) fn watch_extra_dir(&mut self, top: &Path, d: &str) -> Result<(), Full> {
        if self.dirs.len() > MAX_WATCHES {
            return Err(());
        }
        let wd = self
            .inotify
            .add_watch(&top.join(d), dir_mask())
            .map_err(|_| ())?;
        self.dirs.insert(wd, d.to_string());
        for e in std::fs::read_dir(top.join(d)).map_err(|_| ())? {
            let e = e.map_err(|_| ())?;
            let name = e.file_name().into_string().map_err(|_| ())?;
            let p = join(d, &name);
            let is_dir = e.file_type().map_err(|_| ())?.is_dir();
            self.extras.insert(p.clone(), is_dir);
            if is_dir {
                self.watch_extra_dir(top, &p)?;
            }
        }
        Ok(())
    }

    /// Watches file `p` of the copy itself (what is written to it, by any name).
    pub(super) fn watch_file(&mut self, top: &Path, p: &str) -> Result<(), Full> {
        let m = file_mask();
        let wd = self.inotify.add_watch(&top.join(p), m).map_err(|_| ())?;
        self.file_wds.insert(wd, p.to_string());
        self.wd_of.insert(p.to_string(), wd);
        Ok(())
    }

    /// Stops watching file `p` (it is replaced or goes).
    pub(super) fn unwatch_file(&mut self, p: &str) {
        if let Some(wd) = self.wd_of.remove(p) {
            self.file_wds.remove(&wd);
            let _ = self.inotify.rm_watch(wd);
        }
    }

    /// The copy's paths touched since the last drain; `Err` when they cannot be known.
    pub(super) fn drain(&mut self, git_used: &mut bool) -> Result<BTreeSet<String>, Full> {
        let mut touched = BTreeSet::new();
        let mut lost = false;
        loop {
            let events = match self.inotify.read_events() {
                Ok(events) if events.is_empty() => break,
                Ok(events) => events,
                Err(nix::errno::Errno::EAGAIN) => break,
                Err(_) => return Err(()),
            };
            for e in events {
                if e.mask.contains(F::IN_Q_OVERFLOW) {
                    lost = true;
                    continue;
                }
                if let Some(p) = self.file_wds.get(&e.wd) {
                    if e.mask.contains(F::IN_IGNORED) {
                        let p = p.clone();
                        self.file_wds.remove(&e.wd);
                        if self.wd_of.get(&p) == Some(&e.wd) {
                            self.wd_of.remove(&p);
                        }
                    } else {
                        touched.insert(p.clone());
                    }
                    continue;
                }
                let Some(dir) = self.dirs.get(&e.wd).cloned() else {
                    continue;
                };
                if e.mask.intersects(F::IN_DELETE_SELF | F::IN_MOVE_SELF) {
                    // Not one this process removed as it emptied.
                    lost |= self.tree_dirs.contains(&dir);
                    continue;
                }
                if e.mask.contains(F::IN_IGNORED) {
                    self.dirs.remove(&e.wd);
                    continue;
                }
                let Some(name) = e.name.as_ref() else {
                    continue;
                };
                let Some(name) = name.to_str() else {
                    // A name that is not UTF-8: not one the short way can write.
                    lost = true;
                    continue;
                };
                if dir.is_empty() && name == ".git" {
                    if e.mask.contains(F::IN_OPEN) {
                        *git_used = true;
                    } else {
                        lost = true;
                    }
                    continue;
                }
                if (e.mask & !(F::IN_OPEN | F::IN_ISDIR)).is_empty() {
                    continue;
                }
                touched.insert(join(&dir, name));
            }
        }
        if lost || *git_used {
            return Err(());
        }
        Ok(touched)
    }
}
