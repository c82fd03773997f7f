//! Each file of the surface watched itself (inotify on the file, not only on its
//! directory), so that a driver that lives on can tell that none was written since it
//! last found them as the stamp has them without reading every file's status again.
//!
//! A write reaches a file's own watch by any name it is written through (a hard link
//! from outside the tree included, which no directory's watch reports), as do a change
//! of its attributes or link count, its removal and its renaming. The directories on
//! the way to each file are watched too, for their names: a directory of tests moved
//! away and another put in its place changes no file's own watch. A mount over a path
//! reports nothing: the mount table must be as it was. Anything reported ends the
//! watch's word: the driver starts a new watch (on the files as they are now) and
//! reads every status, as without a watch. A write through a shared memory mapping is
//! not reported itself, but the descriptor it needs was opened for writing, and its
//! closing is; an agent's processes end with its iteration.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use nix::sys::inotify::{AddWatchFlags as F, InitFlags, Inotify, WatchDescriptor};

use agentloop_journal::Baseline;

/// The baseline's files watched, each itself, and the directories on their way.
pub struct SurfaceWatch {
    inotify: Inotify,
    /// The files watched.
    paths: Vec<String>,
    /// Watched directories (`""`: the top) by watch, and the names on the way to a
    /// surface file (each path's every prefix).
    dirs: HashMap<WatchDescriptor, String>,
    on_the_way: HashSet<String>,
    /// The mount table when the watch began.
    mounts: Option<Vec<u8>>,
    /// The top, and what it was (device, inode): one moved away from above and made
    /// again reports nothing to its own watch.
    root: std::path::PathBuf,
    root_id: Option<(u64, u64)>,
    /// Since the last event, a full look (every status read) found the surface as stamped.
    trusted: bool,
}

/// A directory's device and inode.
fn id_of(dir: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(dir).ok().map(|m| (m.dev(), m.ino()))
}

/// What a directory on the way reports: its names made, removed or renamed, and it
/// being removed or renamed itself.
fn way_mask() -> F {
    agentloop_exec::watch::dir_mask() & !(F::IN_MODIFY | F::IN_ATTRIB | F::IN_CLOSE_WRITE)
}

impl SurfaceWatch {
    /// Watches each file of `base` under `root`, and the directories on their way;
    /// `None` when one cannot be watched (gone, or the kernel's watches spent).
    pub fn start(root: &Path, base: &Baseline) -> Option<SurfaceWatch> {
        let mounts = agentloop_exec::mounts::table();
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok()?;
        let mut on_the_way = HashSet::new();
        let mut way_dirs: HashSet<String> = HashSet::from([String::new()]);
        for path in base.keys() {
            on_the_way.insert(path.clone());
            let mut p = path.as_str();
            while let Some((d, _)) = p.rsplit_once('/') {
                on_the_way.insert(d.to_string());
                way_dirs.insert(d.to_string());
                p = d;
            }
        }
        let mut dirs = HashMap::new();
        for d in way_dirs {
            let wd = inotify.add_watch(&root.join(&d), way_mask()).ok()?;
            dirs.insert(wd, d);
        }
        let mask = agentloop_exec::watch::file_mask();
        for path in base.keys() {
            inotify.add_watch(&root.join(path), mask).ok()?;
        }
        Some(SurfaceWatch {
            inotify,
            paths: base.keys().cloned().collect(),
            dirs,
            on_the_way,
            mounts,
            root: root.to_path_buf(),
            root_id: id_of(root),
            trusted: false,
        })
    }

    /// Reads what was reported: true when nothing was since the last call (anything
    /// reported also ends the trust a full look gave).
    pub fn quiet(&mut self) -> bool {
        let mut quiet = self.mounts.is_some()
            && agentloop_exec::mounts::table() == self.mounts
            && self.root_id.is_some()
            && id_of(&self.root) == self.root_id;
        loop {
            match self.inotify.read_events() {
                Ok(events) if events.is_empty() => break,
                Ok(events) => {
                    for e in events {
                        quiet &= !self.counts(&e);
                    }
                }
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

    /// Whether an event says a surface file may have changed: anything on a file's
    /// own watch, a directory on the way gone or moved, or one of the names on the way
    /// made, removed or renamed (other names in those directories are not the
    /// surface's).
    fn counts(&self, e: &nix::sys::inotify::InotifyEvent) -> bool {
        let Some(dir) = self.dirs.get(&e.wd) else {
            return true;
        };
        if !e
            .mask
            .intersects(F::IN_CREATE | F::IN_DELETE | F::IN_MOVED_FROM | F::IN_MOVED_TO)
        {
            return true;
        }
        let Some(name) = e.name.as_ref().and_then(|n| n.to_str()) else {
            return true;
        };
        let path = if dir.is_empty() {
            name.to_string()
        } else {
            format!("{dir}/{name}")
        };
        self.on_the_way.contains(&path)
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
#[path = "watch_tests.rs"]
mod tests;
