//! A confined agent's view of the project's repository, when it works outside the
//! project (a worker's worktree, a reviewer's or planner's copy). Its commits must
//! reach the repository; nothing else of the repository may change:
//! - **Objects.** The object store is seen read-only. git reads an object without
//!   checking its hash, so an object rewritten in place would become another tree's
//!   file: in the checks' copies, in the merge, in the person's checkout at landing,
//!   and in no diff. The agent's new objects go to a private store of its own, which
//!   sees the real one as an alternate.
//! - **Refs.** The branches, tags and agentloop's refs are a private copy: no branch
//!   but its own moves (not the person's, not the integration branch, not another
//!   worker's).
//! - **Its worktree's bookkeeping** (HEAD, index) is the real one and writable, but for
//!   its links to the repository (`commondir`, `gitdir`).
//!
//! When the agent has ended, the commit its HEAD names is fetched from the private
//! store (git's fetch hashes every object it takes, so a forged one does not arrive,
//! and follows no link of the agent's) and its branch moved there, as the agent left
//! it; the rest of the view is thrown away.

use std::path::{Path, PathBuf};

use super::homes::{new_dir, remove_all, sweep};

/// Where the real object store is seen inside the view (its alternate).
const SHARED: &str = "agentloop-objects";

/// The largest ref file read back.
const REF_MOST: u64 = 4096;

/// How long the work may take to come back from the private store: what an agent made
/// to be slow holds its lane at most that long. Fetching it (git hashes every object
/// it takes), and reading the index it left.
const FETCH: std::time::Duration = std::time::Duration::from_secs(600);
const READ_INDEX: std::time::Duration = std::time::Duration::from_secs(120);

/// One confined process's view of the repository at `git`.
#[derive(Debug)]
pub struct GitView {
    /// The view's own directory: refs, `packed-refs`, the private object store, and
    /// the mount points of what is laid over it. Removed when this value goes.
    dir: PathBuf,
    /// The project.
    root: PathBuf,
    /// Its repository (`root/.git`).
    git: PathBuf,
    /// The agent's own worktree, when its directory is one of the repository's.
    own: Option<Own>,
}

#[derive(Debug)]
struct Own {
    /// Its bookkeeping in the real repository (`.git/worktrees/NAME`).
    admin: PathBuf,
    /// Its directory.
    worktree: PathBuf,
    start: Start,
}

/// What a worktree's HEAD was when the agent started.
#[derive(Debug, Clone, PartialEq)]
enum Start {
    /// On a branch (`refs/heads/…`), at that commit.
    Branch { name: String, at: Option<String> },
    /// Detached at a commit.
    Detached(String),
}

impl GitView {
    /// The view of `root`'s repository for an agent working in `workdir`, made in a
    /// new directory under `base` (agentloop's state directory, hidden from the
    /// sandbox). None when the repository is not a directory of `root`'s.
    pub fn make(root: &Path, workdir: &Path, base: &Path) -> std::io::Result<Option<GitView>> {
        let git = root.join(".git");
        if !std::fs::symlink_metadata(&git).is_ok_and(|m| m.is_dir()) {
            return Ok(None);
        }
        sweep(base);
        let dir = new_dir(base)?;
        let mut view = GitView {
            dir,
            root: root.to_path_buf(),
            git,
            own: None,
        };
        copy_refs(&view.git.join("refs"), &view.dir.join("refs"))?;
        let packed = view.git.join("packed-refs");
        if std::fs::symlink_metadata(&packed).is_ok_and(|m| m.is_file()) {
            std::fs::copy(&packed, view.dir.join("packed-refs"))?;
        }
        std::fs::create_dir_all(view.dir.join("logs"))?;
        std::fs::create_dir_all(view.dir.join("objects/info"))?;
        std::fs::create_dir_all(view.dir.join("objects/pack"))?;
        let mut alternates = view.git.join(SHARED).into_os_string();
        alternates.push("\n");
        std::fs::write(
            view.dir.join("objects/info/alternates"),
            alternates.as_encoded_bytes(),
        )?;
        view.own = own_worktree(&view.root, workdir);
        Ok(Some(view))
    }

    /// The bubblewrap binds that lay the view over the repository: `(flag, from, to)`.
    pub(super) fn binds(&self) -> Vec<(&'static str, PathBuf, PathBuf)> {
        let mut v = vec![("--bind", self.dir.clone(), self.git.clone())];
        let mut entries: Vec<_> = std::fs::read_dir(&self.git)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        entries.sort();
        for name in entries {
            let real = self.git.join(&name);
            match name.to_str() {
                Some("objects") => v.push(("--ro-bind", real, self.git.join(SHARED))),
                // The view's own.
                Some("refs" | "packed-refs" | "logs" | "worktrees" | SHARED) => {}
                // Everything else as it is, read-only: the configuration, the hooks,
                // the main worktree's HEAD and index, LFS's objects, `rr-cache`.
                _ => v.push(("--ro-bind", real.clone(), real)),
            }
        }
        if let Some(own) = &self.own
            && let Some(name) = own.admin.file_name()
        {
            let inside = self.git.join("worktrees").join(name);
            v.push(("--bind", own.admin.clone(), inside.clone()));
            for link in ["commondir", "gitdir"] {
                if own.admin.join(link).is_file() {
                    v.push(("--ro-bind", own.admin.join(link), inside.join(link)));
                }
            }
        }
        v
    }

    /// Takes the agent's work back: the commit its HEAD names fetched into the
    /// repository, its branch moved there, its HEAD on that branch again, and its
    /// index left naming no object the repository lacks.
    fn finish(&mut self) {
        let Some(own) = &self.own else { return };
        // Before any git of agentloop's reads it (outside the sandbox).
        crate::worktree::tidy(&self.root, &own.admin);
        // (A HEAD that is no small regular file names nothing, and is made again.)
        let head = read_own(&own.admin, "HEAD")
            .map(|h| String::from_utf8_lossy(&h).trim().to_string())
            .unwrap_or_default();
        let now = match head.strip_prefix("ref:") {
            Some(name) => self.resolve(name.trim()),
            None => is_hex(&head).then(|| head.clone()),
        };
        let private = self.private_objects();
        match &own.start {
            Start::Branch { name, at } => {
                let line = format!("ref: {name}");
                if head != line {
                    crate::worktree::rewrite(&own.admin.join("HEAD"), &line);
                }
                // Moved: what it names is taken into the repository first (from the
                // private store, or it is the repository's already).
                if let Some(commit) = now.filter(|c| Some(c) != at.as_ref())
                    && (if private {
                        self.fetch(&commit, at.as_deref())
                    } else {
                        crate::worktree::rev(&self.root, &commit).is_some()
                    })
                {
                    let mut c = crate::git::git_command(&self.root);
                    c.args(["update-ref", name, &commit, at.as_deref().unwrap_or("")]);
                    let _ = crate::git::run_git(c, None);
                }
            }
            Start::Detached(at) => {
                if &head != at {
                    crate::worktree::rewrite(&own.admin.join("HEAD"), at);
                }
            }
        }
        if private {
            forget_missing(&self.root, &own.worktree);
        }
    }

    /// The commit `name` names in the view's refs (a loose ref, else `packed-refs`;
    /// a symbolic ref followed a few times).
    fn resolve(&self, name: &str) -> Option<String> {
        let mut name = name.to_string();
        for _ in 0..5 {
            if !name.starts_with("refs/") || name.split('/').any(|p| p.is_empty() || p == "..") {
                return None;
            }
            if let Some(bytes) = read_own(&self.dir, &name) {
                let text = String::from_utf8_lossy(&bytes).trim().to_string();
                match text.strip_prefix("ref:") {
                    Some(next) => name = next.trim().to_string(),
                    None => return is_hex(&text).then_some(text),
                }
                continue;
            }
            let packed = read_own_most(&self.dir, "packed-refs", 64 * 1024 * 1024)?;
            return String::from_utf8_lossy(&packed).lines().find_map(|l| {
                let (id, n) = l.split_once(' ')?;
                (n == name && is_hex(id)).then(|| id.to_string())
            });
        }
        None
    }

    /// Whether the agent's private store holds anything, what it left there made
    /// harmless first: only a store's own layout (`xx/`, `pack/`, `info/`, each
    /// holding files) stays; links, FIFOs, anything deeper and its own alternates go.
    fn private_objects(&self) -> bool {
        let objects = self.dir.join("objects");
        if !std::fs::symlink_metadata(&objects).is_ok_and(|m| m.is_dir()) {
            remove_all(&objects);
            return false;
        }
        let mut any = false;
        for e in std::fs::read_dir(&objects).into_iter().flatten().flatten() {
            let name = e.file_name();
            let name = name.to_str().unwrap_or("");
            let layout = name == "pack"
                || name == "info"
                || (name.len() == 2 && name.bytes().all(|b| b.is_ascii_hexdigit()));
            if !layout || !e.file_type().is_ok_and(|t| t.is_dir()) {
                remove_all(&e.path());
                continue;
            }
            for f in std::fs::read_dir(e.path()).into_iter().flatten().flatten() {
                if f.file_type().is_ok_and(|t| t.is_file()) {
                    any = true;
                } else {
                    remove_all(&f.path());
                }
            }
        }
        // (`info/` is a directory of the view's own now, its entries plain files.)
        for f in ["info/alternates", "info/http-alternates"] {
            let _ = std::fs::remove_file(objects.join(f));
        }
        any
    }

    /// Takes `commit` from the private store into the repository, git hashing
    /// every object it takes; whether it is there now. The fetch runs in a git
    /// directory of its own that writes into the repository's object store: its refs
    /// are only `base` (where the task's branch started, else the project's HEAD), so
    /// that git's walk is the new objects alone and sees no worktree's HEAD — another
    /// agent's, naming nothing while it works, would end the fetch.
    fn fetch(&self, commit: &str, base: Option<&str>) -> bool {
        let (from, into) = (self.dir.join("fetched-from"), self.dir.join("fetched-into"));
        remove_all(&from);
        remove_all(&into);
        let base = base
            .map(str::to_string)
            .or_else(|| crate::worktree::rev(&self.root, "HEAD"));
        let made = (|| -> std::io::Result<()> {
            std::fs::create_dir(&from)?;
            std::fs::create_dir_all(from.join("objects/info"))?;
            std::fs::create_dir_all(from.join("refs/heads"))?;
            std::fs::write(from.join("HEAD"), "ref: refs/heads/work\n")?;
            std::fs::write(from.join("config"), "")?;
            std::fs::write(from.join("refs/heads/work"), format!("{commit}\n"))?;
            let mut alternates = self.dir.join("objects").into_os_string();
            alternates.push("\n");
            alternates.push(self.git.join("objects"));
            alternates.push("\n");
            std::fs::write(
                from.join("objects/info/alternates"),
                alternates.as_encoded_bytes(),
            )?;
            std::fs::create_dir_all(into.join("refs/heads"))?;
            std::fs::write(into.join("HEAD"), "ref: refs/heads/base\n")?;
            std::fs::write(into.join("config"), "")?;
            if let Some(b) = base.as_deref().filter(|b| is_hex(b)) {
                std::fs::write(into.join("refs/heads/base"), format!("{b}\n"))?;
            }
            Ok(())
        })();
        if made.is_err() {
            return false;
        }
        let mut c = crate::git::git_command(&self.root);
        c.env("GIT_DIR", &into)
            .env_remove("GIT_COMMON_DIR")
            .env("GIT_OBJECT_DIRECTORY", self.git.join("objects"));
        c.args([
            "fetch",
            "-q",
            "--no-tags",
            "--no-write-fetch-head",
            "--no-recurse-submodules",
        ]);
        c.arg(&from).arg("refs/heads/work");
        let fetched = crate::git::run_git_within(c, None, FETCH).is_ok();
        fetched && crate::worktree::rev(&self.root, commit).as_deref() == Some(commit)
    }
}

impl Drop for GitView {
    fn drop(&mut self) {
        self.finish();
        remove_all(&self.dir);
    }
}

/// The agent's worktree when `workdir` is one of the repository's: its `.git` file
/// names a directory of `.git/worktrees/`.
fn own_worktree(root: &Path, workdir: &Path) -> Option<Own> {
    let admin = crate::worktree::admin_of(root, workdir)?;
    let head = read_own(&admin, "HEAD")?;
    let head = String::from_utf8_lossy(&head).trim().to_string();
    let start = match head.strip_prefix("ref:") {
        Some(name) => {
            let name = name.trim().to_string();
            let at = crate::worktree::rev(root, &name);
            Start::Branch { name, at }
        }
        None if is_hex(&head) => Start::Detached(head),
        None => return None,
    };
    Some(Own {
        admin,
        worktree: workdir.to_path_buf(),
        start,
    })
}

/// Copies the refs under `from` into `to`: directories and regular files (a link or
/// anything else left out).
fn copy_refs(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from).into_iter().flatten().flatten() {
        let Ok(kind) = e.file_type() else { continue };
        let dst = to.join(e.file_name());
        if kind.is_dir() {
            copy_refs(&e.path(), &dst)?;
        } else if kind.is_file() {
            std::fs::copy(e.path(), dst)?;
        }
    }
    Ok(())
}

/// The small regular file `rel` inside `dir`, reached through no link.
fn read_own(dir: &Path, rel: &str) -> Option<Vec<u8>> {
    read_own_most(dir, rel, REF_MOST)
}

fn read_own_most(dir: &Path, rel: &str, most: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join(rel);
    let parent = path.parent()?.canonicalize().ok()?;
    if !parent.starts_with(dir.canonicalize().ok()?) {
        return None;
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY)
        .open(parent.join(path.file_name()?))
        .ok()?;
    let meta = f.metadata().ok()?;
    if !meta.is_file() || meta.len() > most {
        return None;
    }
    let mut bytes = Vec::new();
    f.take(most).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// Takes out of the index of `worktree` every entry whose object the repository
/// lacks (staged in the agent's private store and never committed): the file is
/// hashed again from the tree when the work is committed.
fn forget_missing(root: &Path, worktree: &Path) {
    let mut c = crate::git::git_command(worktree);
    c.args(["ls-files", "-s", "-z"]);
    let Ok(listed) = crate::git::run_git_within(c, None, READ_INDEX) else {
        return;
    };
    // (A gitlink names a commit of another repository: never this one's.)
    let entries: Vec<(&str, &[u8])> = listed
        .split(|b| *b == 0)
        .filter_map(|e| {
            let tab = e.iter().position(|b| *b == b'\t')?;
            let meta = std::str::from_utf8(&e[..tab]).ok()?;
            let mut words = meta.split(' ');
            let mode = words.next()?;
            (mode != "160000").then_some((words.next()?, &e[tab + 1..]))
        })
        .collect();
    let mut ids: Vec<u8> = Vec::new();
    for (id, _) in &entries {
        ids.extend_from_slice(id.as_bytes());
        ids.push(b'\n');
    }
    let mut c = crate::git::git_command(root);
    c.args(["cat-file", "--batch-check=%(objectname)"]);
    let Ok(found) = crate::git::run_git_within(c, Some(&ids), READ_INDEX) else {
        return;
    };
    let missing: std::collections::BTreeSet<String> = String::from_utf8_lossy(&found)
        .lines()
        .filter_map(|l| l.strip_suffix(" missing").map(str::to_string))
        .collect();
    let mut paths: Vec<u8> = Vec::new();
    for (id, path) in &entries {
        if missing.contains(*id) {
            paths.extend_from_slice(path);
            paths.push(0);
        }
    }
    if paths.is_empty() {
        return;
    }
    // Out of the index whatever the file and HEAD hold (`rm --cached` refuses an
    // entry that differs from both, and with it every other).
    let mut c = crate::git::git_command(worktree);
    c.args(["update-index", "-z", "--force-remove", "--stdin"]);
    let _ = crate::git::run_git_within(c, Some(&paths), READ_INDEX);
}

fn is_hex(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests;
