//! The clean copy kept in step: after one full refresh (git builds the tree and checks
//! it out), a driver that lives on brings the copy up to date without git, by writing
//! only what changed since: the project's paths whose state differs between the
//! snapshot the copy was made from and the one now, and the copy's paths a check (or
//! anyone) touched since, as the kernel reported them.
//!
//! The copy then holds exactly what the full refresh would give it — the agent's files
//! (tracked ones, and new ones git does not ignore), the baseline's versions of the
//! surface, the ignored files checks made kept — or the full refresh is taken: the
//! first time, and whenever the short way cannot be sure. A moved HEAD (a task
//! committed) is read from one `git diff-tree`; a changed index from one `git
//! ls-files`. What git would write otherwise is asked of git, in one process and only
//! for the paths to write: a path it ignores (`check-ignore`, for paths not in the
//! index), one it is told not to look at (assume-unchanged, skip-worktree: full), one
//! its attributes convert (`check-attr`, when the tree has any attributes file). A
//! repository whose configuration converts or ignores modes (`core.autocrlf`,
//! `core.eol=crlf`, `core.fileMode=false`) is never kept in step.
//!
//! The short way is not sure — and takes the full one — when the overlay or the
//! carried paths changed, a rule file (`.gitignore`, `.gitattributes`, `.gitmodules`)
//! or the repository's exclude, attributes or configuration file changed, the kernel's
//! queue overflowed, a watched directory went, a surface file in the copy was touched,
//! a path is not a plain file or its name not UTF-8, a directory became a file, or a
//! check left a name the copy did not have (git would have to say whether it is
//! ignored). A directory of the checks' that git does not ignore as a whole (it holds
//! only ignored files, so `clean` kept it) is watched inside too. Before a full
//! refresh the files the short way added go: the copy's own git does not know them and
//! would keep one its rules ignore.
//!
//! The short way writes the files, not the copy's own commit and index: the first check
//! that runs git in the copy after it sees the agent's work as uncommitted changes of
//! the copy (`git status`, `git diff HEAD`). That check opened the copy's `.git`, which
//! is watched: every refresh after it is a full one.
//!
//! Each file of the tree is watched itself, besides its directory: a write through a
//! hard link from outside the copy, which its directory's watch does not see, is seen
//! on the file (tried: neither the link nor the write reaches the directory's watch).
//! A write through a shared memory mapping reports nothing, but needs a descriptor
//! opened for writing, whose closing is reported; every process a check started ends
//! with it. Files are written to a new name and renamed over the old, as git does.
//! A mount over a path reports nothing either: the mount table must be as it was when
//! the copy was made. The limit is the kernel's number of watches: a copy it cannot watch whole is
//! refreshed the full way.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use nix::sys::inotify::{InitFlags, Inotify, WatchDescriptor};

use ask::{converted, git_z, ignored};
use watch::MAX_WATCHES;

mod admits;
mod ask;
mod watch;
mod write;

use super::{CleanCopy, Judge, Refreshed};
use crate::surface::Stat;
use agentloop_exec::git::{Dirty, Snapshot};
use agentloop_journal::{Baseline, LeftOut};
use agentloop_project::Admission;

/// Names whose change changes which other paths git ignores or how it writes them.
const RULE_FILES: [&str; 3] = [".gitignore", ".gitattributes", ".gitmodules"];

/// How the last refresh was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// git built the tree and checked it out.
    Full,
    /// Only what changed was written, without git.
    Kept,
}

/// A run's clean copy, kept in step between verifications by this process.
pub struct KeptCopy {
    copy: CleanCopy,
    kept: Option<Kept>,
    /// A check ran git in the copy: the copy's commit and index must be right.
    git_used: bool,
    /// How the last refresh was made.
    pub last: Option<Way>,
}

/// What the copy holds since its last refresh, and the watch on it.
struct Kept {
    inotify: Inotify,
    /// Watched directories of the copy (`""`: its top) by watch.
    dirs: HashMap<WatchDescriptor, String>,
    /// The project's HEAD and dirty paths the copy was made from.
    head: Option<String>,
    dirty: Dirty,
    /// The project's status of each dirty path when it was copied.
    stats: HashMap<String, Option<Stat>>,
    /// Files of the copy's tree (the agent's result with the overlay).
    files: HashSet<String>,
    /// Those the full way checked out (the copy's own git knows only these).
    base_files: HashSet<String>,
    /// Directories holding them (and their parents; `""` is the top).
    tree_dirs: HashSet<String>,
    /// Names in watched directories that are not the tree's (ignored, checks' caches):
    /// path → whether it is a directory.
    extras: HashMap<String, bool>,
    /// Surface paths the copy holds the baseline's version of.
    overlay: HashSet<String>,
    /// Each file of the tree watched itself, by watch and by path: a write through a
    /// link from elsewhere reaches the file, not its directory.
    file_wds: HashMap<WatchDescriptor, String>,
    wd_of: HashMap<String, WatchDescriptor>,
    baseline: Option<Baseline>,
    /// Which of the agent's added files the copy lets in, and those it left out.
    admission: Option<Admission>,
    left_out: Vec<LeftOut>,
    carry: Vec<String>,
    /// The repository's files that change what git ignores or writes (its exclude
    /// and attributes files, its configuration), with their status.
    repo_files: Vec<(PathBuf, Option<Stat>)>,
    /// Some `.gitattributes` or `info/attributes` is there: what is written is asked.
    attributes: bool,
    /// The project's index as last read: its status, the paths in it, and those git
    /// is told not to look at (assume-unchanged, skip-worktree).
    index: (PathBuf, Option<Stat>),
    in_index: HashSet<String>,
    flagged: HashSet<String>,
    /// The mount table when the copy was made: a mount over one of its paths changes
    /// what it reads without a notification.
    mounts: Option<Vec<u8>>,
    commit: String,
}

/// The short way cannot be sure: the full one is taken.
type Full = ();

impl KeptCopy {
    pub fn new(copy: CleanCopy) -> KeptCopy {
        KeptCopy {
            copy,
            kept: None,
            git_used: false,
            last: None,
        }
    }

    /// The next refresh takes the full way (the copy was used otherwise meanwhile).
    pub fn forget(&mut self) {
        if let Some(kept) = self.kept.take() {
            kept.unwind(&self.copy);
        }
    }

    /// The copy removed and everything known of it forgotten: the next refresh makes
    /// it again from nothing (what earlier checks left in it goes too).
    pub fn start_over(&mut self) {
        self.copy.remove();
        self.kept = None;
        self.git_used = false;
        self.last = None;
    }

    /// The copy itself.
    pub fn copy(&self) -> &CleanCopy {
        &self.copy
    }

    /// Brings the copy up to the project as `now` (a snapshot of it taken after the
    /// agent's work; `None`: none) says it is, with `overlay`'s versions of the surface
    /// and `carry` linked in — the short way when it can be sure, else the full one.
    pub fn refresh(
        &mut self,
        now: Option<&Snapshot>,
        overlay: Option<&Baseline>,
        carry: &[String],
    ) -> Result<Refreshed, String> {
        self.refresh_judged(now, Judge::overlay(overlay), carry)
    }

    /// [`refresh`](Self::refresh), leaving out what `judge`'s admission keeps out. The
    /// short way is taken only while the admission is the same and nothing it would
    /// keep out, or kept out last time, moved.
    pub fn refresh_judged(
        &mut self,
        now: Option<&Snapshot>,
        judge: Judge<'_>,
        carry: &[String],
    ) -> Result<Refreshed, String> {
        if let (Some(now), Some(kept)) = (now, self.kept.as_mut())
            && !self.git_used
            && kept
                .short(&self.copy, now, judge, carry, &mut self.git_used)
                .is_ok()
        {
            self.last = Some(Way::Kept);
            return Ok(Refreshed {
                commit: kept.commit.clone(),
                mended: Vec::new(),
                left_out: kept.left_out.clone(),
                admitted: kept.admitted(),
            });
        }
        self.forget();
        self.last = Some(Way::Full);
        let stats = now
            .map(|n| stats_of(&self.copy.root, n.dirty.keys()))
            .unwrap_or_default();
        let r = self.copy.refresh_judged(judge, carry)?;
        if let Some(now) = now {
            self.kept = Kept::start(&self.copy, now, stats, judge, carry, &r);
        }
        Ok(r)
    }
}

fn stats_of<'a>(
    root: &Path,
    paths: impl Iterator<Item = &'a String>,
) -> HashMap<String, Option<Stat>> {
    paths
        .map(|p| (p.clone(), Stat::of(&root.join(p))))
        .collect()
}

fn parent(p: &str) -> &str {
    p.rsplit_once('/').map_or("", |(d, _)| d)
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// The surface paths a copy holds the baseline's version of.
fn overlay_paths(base: Option<&Baseline>) -> HashSet<String> {
    base.into_iter()
        .flatten()
        .filter(|(p, _)| !agentloop_project::is_sectioned(p) && !agentloop_project::is_git_file(p))
        .map(|(p, _)| p.clone())
        .collect()
}

/// What the short way does to one path of the copy.
enum Act {
    /// The project's file, as it is now.
    Write,
    Remove,
}

impl Kept {
    /// The state of the copy just refreshed the full way from `now`, watched from here.
    fn start(
        copy: &CleanCopy,
        now: &Snapshot,
        stats: HashMap<String, Option<Stat>>,
        judge: Judge<'_>,
        carry: &[String],
        made: &Refreshed,
    ) -> Option<Kept> {
        let (overlay, commit) = (judge.overlay, made.commit.as_str());
        let files: HashSet<String> = git_z(&copy.dir, &["ls-files", "-z"], None)
            .ok()?
            .into_iter()
            .collect();
        // Settings under which git writes other bytes than the file's, or another mode:
        // the short way never applies.
        if let Ok(set) = git_z(
            &copy.root,
            &[
                "config",
                "-z",
                "--get-regexp",
                r"^core\.(autocrlf|eol|filemode)$",
            ],
            None,
        ) {
            let plain = set.iter().all(|kv| {
                let (k, v) = kv.split_once('\n').unwrap_or((kv, ""));
                match k {
                    "core.autocrlf" => matches!(v, "false"),
                    "core.eol" => v != "crlf",
                    _ => v != "false",
                }
            });
            if !plain {
                return None;
            }
        }
        let agentloop_exec::git::GitDirs { own, common, index } =
            agentloop_exec::git::dirs(&copy.root)?;
        let repo_files: Vec<(PathBuf, Option<Stat>)> = [
            common.join("info/exclude"),
            common.join("info/attributes"),
            common.join("config"),
            common.join("config.worktree"),
            own.join("config.worktree"),
        ]
        .into_iter()
        .map(|p| {
            let stat = Stat::of(&p);
            (p, stat)
        })
        .collect();
        let attributes = repo_files[1].1.is_some()
            || files
                .iter()
                .any(|f| f.rsplit('/').next() == Some(".gitattributes"));
        let mut tree_dirs: HashSet<String> = HashSet::from([String::new()]);
        for f in &files {
            let mut d = parent(f);
            while !d.is_empty() && tree_dirs.insert(d.to_string()) {
                d = parent(d);
            }
        }
        if tree_dirs.len() > MAX_WATCHES {
            return None;
        }
        let overlay_set = overlay_paths(overlay);
        let mut kept = Kept {
            inotify: Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok()?,
            dirs: HashMap::new(),
            head: now.head.clone(),
            dirty: now.dirty.clone(),
            stats,
            files,
            base_files: HashSet::new(),
            tree_dirs: tree_dirs.clone(),
            extras: HashMap::new(),
            overlay: overlay_set,
            file_wds: HashMap::new(),
            wd_of: HashMap::new(),
            baseline: overlay.cloned(),
            admission: judge.admission.cloned(),
            left_out: made.left_out.clone(),
            carry: carry.to_vec(),
            repo_files,
            attributes,
            index: (index, None),
            in_index: HashSet::new(),
            flagged: HashSet::new(),
            mounts: agentloop_exec::mounts::table(),
            commit: commit.to_string(),
        };
        // Parents before children: a directory is watched before what is read in it.
        let mut dirs: Vec<String> = tree_dirs.into_iter().collect();
        dirs.sort();
        for d in dirs {
            kept.watch_dir(&copy.dir, &d).ok()?;
        }
        let files: Vec<String> = kept.files.iter().cloned().collect();
        for f in files {
            kept.watch_file(&copy.dir, &f).ok()?;
        }
        kept.read_index(&copy.root).ok()?;
        // A directory of the checks' that git does not ignore as a whole (it holds only
        // ignored files, so `clean` left it) is watched inside too: a file that is not
        // ignored may be made there.
        let dirs: Vec<String> = kept
            .extras
            .iter()
            .filter(|(_, is_dir)| **is_dir)
            .map(|(p, _)| p.clone())
            .collect();
        if !dirs.is_empty() {
            let ignored: HashSet<String> = ignored(&copy.dir, &dirs).ok()?;
            for d in dirs.iter().filter(|d| !ignored.contains(*d)) {
                kept.watch_extra_dir(&copy.dir, d).ok()?;
            }
            // What asking git in the copy made the kernel report is agentloop's own.
            while kept.inotify.read_events().is_ok_and(|e| !e.is_empty()) {}
        }
        kept.base_files = kept.files.clone();
        Some(kept)
    }

    /// The short way; `Err` where only the full one can be sure (nothing changed then
    /// that the full one does not put right).
    fn short(
        &mut self,
        copy: &CleanCopy,
        now: &Snapshot,
        judge: Judge<'_>,
        carry: &[String],
        git_used: &mut bool,
    ) -> Result<(), Full> {
        let touched = self.drain(git_used)?;
        if judge.overlay != self.baseline.as_ref()
            || !self.admits_alike(&copy.dir, judge.admission)
            || carry != self.carry
            || self.repo_files.iter().any(|(p, stat)| Stat::of(p) != *stat)
            || now.dirty.keys().any(|p| p.contains('\u{FFFD}'))
            || self.mounts.is_none()
            || agentloop_exec::mounts::table() != self.mounts
        {
            return Err(());
        }
        // What HEAD's move changed (a task committed): each path in the new HEAD or not.
        let mut in_head_now: HashMap<String, bool> = HashMap::new();
        if now.head != self.head {
            let (Some(from), Some(to)) = (&self.head, &now.head) else {
                return Err(());
            };
            let listed = git_z(
                &copy.root,
                &[
                    "diff-tree",
                    "-r",
                    "-z",
                    "--no-renames",
                    "--name-status",
                    from,
                    to,
                ],
                None,
            )?;
            let mut fields = listed.iter();
            while let (Some(status), Some(path)) = (fields.next(), fields.next()) {
                match status.as_str() {
                    "A" | "M" => in_head_now.insert(path.to_string(), true),
                    "D" => in_head_now.insert(path.to_string(), false),
                    // A type changed (a link, a submodule): the full way.
                    _ => return Err(()),
                };
            }
        }
        // The project's paths whose state moved: their entry or their status.
        let mut moved: BTreeSet<&String> = in_head_now.keys().collect();
        for p in self.dirty.keys().chain(now.dirty.keys()) {
            if self.dirty.get(p) != now.dirty.get(p)
                || self.stats.get(p).cloned().flatten() != Stat::of(&copy.root.join(p))
            {
                moved.insert(p);
            }
        }
        let mut acts: BTreeMap<String, Act> = BTreeMap::new();
        let mut head_asks: Vec<String> = Vec::new();
        for p in moved
            .iter()
            .map(|p| p.as_str())
            .chain(touched.iter().map(String::as_str))
        {
            if acts.contains_key(p) || head_asks.iter().any(|a| a == p) {
                continue;
            }
            let name = p.rsplit('/').next().unwrap_or(p);
            if RULE_FILES.contains(&name)
                || p == ".git"
                || p.starts_with(".git/")
                || p.contains("/.git/")
                || name == ".git"
            {
                return Err(());
            }
            if self.overlay.contains(p) {
                // The baseline's version stays; written over in the copy, only the full
                // way (which mends it from agentloop's own copy) puts it back.
                if touched.contains(p) {
                    return Err(());
                }
                continue;
            }
            if self.tree_dirs.contains(p) {
                // A directory of the tree: its own attributes are not git's; anything
                // else (gone, replaced, here or in the project) is for the full way.
                if std::fs::symlink_metadata(copy.dir.join(p)).is_ok_and(|m| m.is_dir())
                    && !now.dirty.contains_key(p)
                    && std::fs::symlink_metadata(copy.root.join(p)).is_ok_and(|m| m.is_dir())
                {
                    continue;
                }
                return Err(());
            }
            let in_project = std::fs::symlink_metadata(copy.root.join(p)).ok();
            match now.dirty.get(p) {
                Some(Some(_)) => {
                    if !in_project.is_some_and(|m| m.is_file()) {
                        return Err(());
                    }
                    acts.insert(p.to_string(), Act::Write);
                }
                Some(None) => {
                    if in_project.is_some() {
                        return Err(());
                    }
                    acts.insert(p.to_string(), Act::Remove);
                }
                None if in_head_now.get(p) == Some(&true) => {
                    if !in_project.is_some_and(|m| m.is_file()) {
                        return Err(());
                    }
                    acts.insert(p.to_string(), Act::Write);
                }
                None if in_head_now.get(p) == Some(&false) => {
                    acts.insert(p.to_string(), Act::Remove);
                }
                None if self.dirty.contains_key(p) => head_asks.push(p.to_string()),
                None if self.files.contains(p) => {
                    // Clean in the project: its file is HEAD's.
                    if !in_project.is_some_and(|m| m.is_file()) {
                        return Err(());
                    }
                    acts.insert(p.to_string(), Act::Write);
                }
                None => match self.extras.get(p) {
                    // Ignored when the copy was made, and the rules have not changed:
                    // the checks' own (a cache), kept as the full way keeps it.
                    Some(is_dir) => {
                        let now_dir = std::fs::symlink_metadata(copy.dir.join(p))
                            .map(|m| m.is_dir())
                            .unwrap_or(*is_dir);
                        if now_dir != *is_dir {
                            return Err(());
                        }
                    }
                    None => {
                        if std::fs::symlink_metadata(copy.dir.join(p)).is_ok() {
                            return Err(());
                        }
                    }
                },
            }
        }
        if !head_asks.is_empty() {
            // Dirty before, clean now: HEAD's file if HEAD has it, else gone.
            let mut args = vec!["ls-tree", "-z", "--name-only", "HEAD", "--"];
            args.extend(head_asks.iter().map(String::as_str));
            let in_head: HashSet<String> = git_z(&copy.root, &args, None)?.into_iter().collect();
            for p in &head_asks {
                let in_project = std::fs::symlink_metadata(copy.root.join(p)).ok();
                if in_head.contains(p) {
                    if !in_project.is_some_and(|m| m.is_file()) {
                        return Err(());
                    }
                    acts.insert(p.clone(), Act::Write);
                } else {
                    if in_project.is_some() {
                        return Err(());
                    }
                    acts.insert(p.clone(), Act::Remove);
                }
            }
        }
        // What the admission keeps out, or kept out last time, only the full way
        // (which asks it of every file) may decide.
        if acts.iter().any(|(p, act)| {
            self.left_out.iter().any(|l| l.path == *p)
                || (matches!(act, Act::Write)
                    && !self.files.contains(p)
                    && self
                        .admission
                        .as_ref()
                        .is_some_and(|a| a.left_out(p).is_some()))
        }) {
            return Err(());
        }
        // What git would write otherwise: a file it is told not to look at (its index
        // blob stays), one it ignores (not in the index, matched by a rule: the tree
        // does not have it), one its attributes convert.
        self.read_index(&copy.root)?;
        let writes: Vec<String> = acts
            .iter()
            .filter(|(_, a)| matches!(a, Act::Write))
            .map(|(p, _)| p.clone())
            .collect();
        if writes.iter().any(|p| self.flagged.contains(p)) {
            return Err(());
        }
        let untracked: Vec<String> = writes
            .iter()
            .filter(|p| !self.in_index.contains(*p))
            .cloned()
            .collect();
        if !untracked.is_empty() && !ignored(&copy.root, &untracked)?.is_empty() {
            return Err(());
        }
        if self.attributes && !writes.is_empty() {
            converted(&copy.root, &writes)?;
        }
        // A path that is a directory in the copy where a file goes (or goes away) is
        // for the full way.
        for p in acts.keys() {
            if std::fs::symlink_metadata(copy.dir.join(p)).is_ok_and(|m| m.is_dir()) {
                return Err(());
            }
        }
        for (p, act) in &acts {
            match act {
                Act::Write => self.write(copy, p)?,
                Act::Remove => self.remove(copy, p)?,
            }
        }
        // What the writes themselves made the kernel report.
        self.drain(git_used)?;
        self.dirty = now.dirty.clone();
        self.head = now.head.clone();
        self.stats = stats_of(&copy.root, now.dirty.keys());
        Ok(())
    }
}
