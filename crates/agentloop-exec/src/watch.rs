//! A work tree watched through the kernel's notifications (inotify): its next snapshot
//! asks git only about the paths something touched since the last one, and starts no
//! git process at all when nothing was touched. On a 100,000-file tree a full `git
//! status` has to look at every file (about 200 ms here); the watched one costs what
//! the touched paths cost.
//!
//! What the kernel reports: every name created, removed or renamed in a watched
//! directory, and every write or attribute change made through one. The whole tree is
//! asked about again when the notifications cannot be trusted to be complete: the
//! queue overflowed, the repository changed (HEAD, the index, a ref), a file that
//! changes what git reports about other paths changed (`.gitignore`, `.gitattributes`,
//! `.gitmodules`, a new `.git`), too many paths were touched, or git refused the
//! narrower question. What the kernel does not report is a file written through a
//! shared memory mapping or through a hard link from outside the tree: callers that
//! decide something on the snapshot (a task claimed done) take a full one.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use nix::sys::inotify::{AddWatchFlags as F, InitFlags, Inotify, InotifyEvent, WatchDescriptor};

use super::git::{Snapshot, Snapshots};

/// Beyond this many directories the tree is not watched (each costs a kernel watch).
const MAX_WATCHES: usize = 50_000;
/// Beyond this many touched paths the whole tree is asked about.
const MAX_TOUCHED: usize = 512;
/// Names whose change changes what git says about other paths.
const RULE_FILES: [&str; 4] = [".gitignore", ".gitattributes", ".gitmodules", ".git"];
/// What at the top of `.git` changes what `git status` says.
const REPO_FILES: [&str; 7] = [
    "HEAD",
    "index",
    "packed-refs",
    "config",
    "info",
    "refs",
    "sparse-checkout",
];

/// What a directory's watch reports: every name made, removed or renamed in it, and
/// every write or attribute change made through it.
pub fn dir_mask() -> F {
    F::IN_MODIFY
        | F::IN_ATTRIB
        | F::IN_CLOSE_WRITE
        | F::IN_CREATE
        | F::IN_DELETE
        | F::IN_MOVED_FROM
        | F::IN_MOVED_TO
        | F::IN_DELETE_SELF
        | F::IN_MOVE_SELF
        | F::IN_DONT_FOLLOW
        | F::IN_ONLYDIR
}

/// What a file's own watch reports: a write through any of its names, a change of its
/// attributes or link count, its removal or renaming.
pub fn file_mask() -> F {
    F::IN_MODIFY
        | F::IN_ATTRIB
        | F::IN_CLOSE_WRITE
        | F::IN_DELETE_SELF
        | F::IN_MOVE_SELF
        | F::IN_DONT_FOLLOW
}

/// Snapshots of one work tree, kept up to date by what the kernel reports.
pub struct Watched {
    snapshots: Snapshots,
    inotify: Inotify,
    /// Watched directories of the work tree, relative to its top (`""`: the top).
    dirs: HashMap<WatchDescriptor, PathBuf>,
    /// Watched directories of the repository (`.git`, `.git/info`, `.git/refs/…`).
    repo: HashMap<WatchDescriptor, PathBuf>,
    /// Directories git ignored when the watch began (not watched).
    ignored: HashSet<PathBuf>,
    last: Option<Snapshot>,
    touched: BTreeSet<PathBuf>,
    /// The next snapshot asks git about the whole tree.
    whole: bool,
}

impl Watched {
    /// Starts watching the tree of `snapshots`; `None` when it cannot be watched
    /// soundly (no `.git` directory at its top, submodules, no inotify, too many
    /// directories): its snapshots are then all full ones.
    pub fn start(snapshots: Snapshots) -> Option<Watched> {
        let root = snapshots.workdir().to_path_buf();
        let git_dir = root.join(".git");
        if !git_dir.is_dir() || root.join(".gitmodules").exists() {
            return None;
        }
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok()?;
        let ignored = super::git::run(
            &root,
            &[
                "ls-files",
                "-z",
                "--others",
                "--ignored",
                "--exclude-standard",
                "--directory",
            ],
        )
        .ok()?
        .split('\0')
        .filter_map(|p| p.strip_suffix('/'))
        .map(PathBuf::from)
        .collect();
        let mut w = Watched {
            snapshots,
            inotify,
            dirs: HashMap::new(),
            repo: HashMap::new(),
            ignored,
            last: None,
            touched: BTreeSet::new(),
            whole: true,
        };
        if !w.watch_tree(Path::new("")) || !w.dirs.values().any(|d| d.as_os_str().is_empty()) {
            return None;
        }
        w.watch_repo(&git_dir, false);
        w.watch_repo(&git_dir.join("info"), false);
        w.watch_repo(&git_dir.join("refs"), true);
        Some(w)
    }

    /// The tree now; `full` asks git about every path whatever the kernel reported.
    pub fn take(&mut self, full: bool) -> Option<Snapshot> {
        self.drain();
        let last = match &self.last {
            Some(last) if !full && !self.whole && !self.touched.contains(Path::new("")) => {
                last.clone()
            }
            _ => return self.take_whole(),
        };
        if self.touched.is_empty() {
            return Some(last);
        }
        let paths = outermost(std::mem::take(&mut self.touched));
        let asked: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
        match self.snapshots.status(&asked) {
            Some((head, found)) if head == last.head => {
                let mut dirty = last.dirty;
                dirty.retain(|p, _| !paths.iter().any(|t| Path::new(p).starts_with(t)));
                dirty.extend(found);
                let now = Snapshot::new(head, dirty);
                self.last = Some(now.clone());
                Some(now)
            }
            _ => self.take_whole(),
        }
    }

    fn take_whole(&mut self) -> Option<Snapshot> {
        self.touched.clear();
        self.last = self.snapshots.take();
        self.whole = self.last.is_none();
        self.last.clone()
    }

    /// Reads every notification queued so far.
    fn drain(&mut self) {
        loop {
            match self.inotify.read_events() {
                Ok(events) if events.is_empty() => return,
                Ok(events) => events.into_iter().for_each(|e| self.note(e)),
                Err(nix::errno::Errno::EAGAIN) => return,
                Err(_) => {
                    self.whole = true;
                    return;
                }
            }
        }
    }

    fn note(&mut self, e: InotifyEvent) {
        if e.mask.contains(F::IN_Q_OVERFLOW) {
            self.whole = true;
            return;
        }
        if let Some(dir) = self.repo.get(&e.wd).cloned() {
            // A lock file comes and goes; what it guards changes under its own name. At
            // the top of `.git`, only what git reads to answer `status` counts (not
            // objects, logs, worktrees, hooks, a commit message).
            let counts = match &e.name {
                Some(n) if n.as_encoded_bytes().ends_with(b".lock") => false,
                Some(n) if dir == self.git_dir() => REPO_FILES.iter().any(|f| n == *f),
                _ => true,
            };
            if counts {
                self.whole = true;
            }
            if e.mask.contains(F::IN_IGNORED) {
                self.repo.remove(&e.wd);
            }
            // A new directory of refs (`refs/heads/feature/`) is watched too.
            if let Some(name) = &e.name
                && e.mask.contains(F::IN_ISDIR)
                && e.mask.intersects(F::IN_CREATE | F::IN_MOVED_TO)
                && dir.starts_with(self.git_dir().join("refs"))
            {
                self.watch_repo(&dir.join(name), true);
            }
            return;
        }
        if e.mask.contains(F::IN_IGNORED) {
            self.dirs.remove(&e.wd);
            return;
        }
        // A directory no longer watched was moved away: its old and new places were
        // both noted when the move was.
        let Some(dir) = self.dirs.get(&e.wd).cloned() else {
            return;
        };
        let Some(name) = e.name else {
            self.touch(dir);
            return;
        };
        if RULE_FILES.iter().any(|r| name == *r) {
            self.whole = true;
            return;
        }
        let path = dir.join(&name);
        if e.mask.contains(F::IN_ISDIR) {
            if e.mask.contains(F::IN_MOVED_FROM) {
                self.unwatch(&path);
            }
            if e.mask.intersects(F::IN_CREATE | F::IN_MOVED_TO) && !self.watch_tree(&path) {
                self.whole = true;
            }
        }
        self.touch(path);
    }

    fn touch(&mut self, path: PathBuf) {
        if self.touched.len() >= MAX_TOUCHED {
            self.whole = true;
        } else {
            self.touched.insert(path);
        }
    }

    /// Watches `rel` and every directory below it that git did not ignore and that
    /// is not another repository; false when that would pass [`MAX_WATCHES`].
    fn watch_tree(&mut self, rel: &Path) -> bool {
        let root = self.snapshots.workdir().to_path_buf();
        let mut stack = vec![rel.to_path_buf()];
        while let Some(d) = stack.pop() {
            if self.dirs.len() >= MAX_WATCHES {
                return false;
            }
            let abs = root.join(&d);
            let nested = !d.as_os_str().is_empty() && abs.join(".git").exists();
            // Gone already, or not a directory: the event that named it is noted.
            let Ok(wd) = self.inotify.add_watch(&abs, dir_mask()) else {
                continue;
            };
            self.dirs.insert(wd, d.clone());
            if nested {
                continue;
            }
            let Ok(entries) = std::fs::read_dir(&abs) else {
                continue;
            };
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) && e.file_name() != ".git" {
                    let sub = d.join(e.file_name());
                    if !self.ignored.contains(&sub) {
                        stack.push(sub);
                    }
                }
            }
        }
        true
    }

    fn git_dir(&self) -> PathBuf {
        self.snapshots.workdir().join(".git")
    }

    /// Stops watching `rel` and everything below it (it was moved away).
    fn unwatch(&mut self, rel: &Path) {
        let gone: Vec<WatchDescriptor> = self
            .dirs
            .iter()
            .filter(|(_, d)| d.starts_with(rel))
            .map(|(wd, _)| *wd)
            .collect();
        for wd in gone {
            self.dirs.remove(&wd);
            let _ = self.inotify.rm_watch(wd);
        }
    }

    /// Watches a directory of the repository, and with `down` every one below it.
    fn watch_repo(&mut self, dir: &Path, down: bool) {
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            if let Ok(wd) = self.inotify.add_watch(&d, dir_mask()) {
                self.repo.insert(wd, d.clone());
            }
            if !down {
                continue;
            }
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(e.path());
                }
            }
        }
    }
}

/// The touched paths without those inside another touched one (sorted, a directory
/// comes right before what is inside it).
fn outermost(touched: BTreeSet<PathBuf>) -> Vec<PathBuf> {
    let mut kept: Vec<PathBuf> = Vec::new();
    for p in touched {
        if kept.last().is_none_or(|k| !p.starts_with(k)) {
            kept.push(p);
        }
    }
    kept
}

#[cfg(test)]
mod property;
