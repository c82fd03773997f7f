//! What the agent changed, seen through git (shelling out to the real `git`). The one
//! way agentloop runs git: hermetic ([`hermetic`]: no hooks, filters, drivers, replace
//! objects or user configuration), a remote's commands apart.

mod blobs;
mod drivers;
mod head;
mod hermetic;
pub mod lfs;
mod locate;
mod object_id;
mod within;

pub use blobs::largest_blob_past;
pub use locate::{GitDirs, common_dir, dirs, is_repo, toplevel};
pub use object_id::blob_holds;
pub use within::run_git_within;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

fn git(workdir: &Path) -> Command {
    let mut c = Command::new("git");
    hermetic::apply(&mut c, workdir);
    c.current_dir(workdir)
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// `git` for a command that talks to a remote (push, fetch): the user's configuration
/// (the remote's credentials, URL rewrites), without hooks or replace objects.
pub fn remote_command(dir: &Path) -> Command {
    remote_in(dir, true)
}

/// [`remote_command`]; `pin`: hold the repository at `dir` to its own common git
/// directory (not for a `clone`, which makes its own).
fn remote_in(dir: &Path, pin: bool) -> Command {
    let mut c = Command::new("git");
    hermetic::remote(&mut c, pin.then_some(dir));
    c.current_dir(dir)
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// A commit identity: name and email.
pub type Identity = (String, String);

/// The person's commit identity, from their own git configuration (reading it runs
/// nothing): what agentloop's commits in their repository are made as. Read once per
/// directory by a process (one git process for both keys): a driver commits each task
/// as the same person.
pub fn user_identity(dir: &Path) -> Option<Identity> {
    static READ: Mutex<Vec<(PathBuf, Option<Identity>)>> = Mutex::new(Vec::new());
    let mut read = READ.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, who)) = read.iter().find(|(d, _)| d == dir) {
        return who.clone();
    }
    let who = read_identity(dir);
    read.push((dir.to_path_buf(), who.clone()));
    who
}

fn read_identity(dir: &Path) -> Option<Identity> {
    let out = Command::new("git")
        .args(["config", "-z", "--get-regexp", r"^user\.(name|email)$"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    // "key\nvalue\0" each; the last value of a key wins, as with `git config --get`.
    let (mut name, mut email) = (None, None);
    for entry in out.stdout.split(|&b| b == 0) {
        let entry = String::from_utf8_lossy(entry);
        match entry.split_once('\n') {
            Some(("user.name", v)) => name = Some(v.trim().to_string()),
            Some(("user.email", v)) => email = Some(v.trim().to_string()),
            _ => {}
        }
    }
    Some((
        name.filter(|v| !v.is_empty())?,
        email.filter(|v| !v.is_empty())?,
    ))
}

/// Sets `c`'s author and committer: the person's identity, else agentloop's.
pub fn set_identity(c: &mut Command, who: Option<&Identity>) {
    let (name, email) = who
        .map(|(n, e)| (n.as_str(), e.as_str()))
        .unwrap_or(("agentloop", "agentloop@localhost"));
    c.env("GIT_AUTHOR_NAME", name)
        .env("GIT_AUTHOR_EMAIL", email)
        .env("GIT_COMMITTER_NAME", name)
        .env("GIT_COMMITTER_EMAIL", email);
}

fn output(mut c: Command) -> Option<String> {
    let out = c.output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Runs `git ARGS` in `dir`: its output, trimmed, or why it failed (the command and
/// what git said). A command that talks to a remote (`push`, `fetch`, `ls-remote`)
/// runs as [`remote_command`]; every other hermetically.
pub fn run(dir: &Path, args: &[&str]) -> Result<String, String> {
    let remote = matches!(
        args.first().copied(),
        Some("push" | "fetch" | "ls-remote" | "clone" | "pull")
    );
    let mut c = if remote {
        remote_in(dir, args.first() != Some(&"clone"))
    } else {
        git(dir)
    };
    let out = c
        .args(args)
        .output()
        .map_err(|e| format!("git {}: {e}", args.join(" ")))?;
    if !out.status.success() {
        return Err(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The version of the git on the PATH (`git version 2.47.3` → `(2, 47)`).
pub fn version() -> Option<(u32, u32)> {
    let out = std::process::Command::new("git")
        .arg("--version")
        .output()
        .ok()?;
    parse_version(&String::from_utf8_lossy(&out.stdout))
}

fn parse_version(text: &str) -> Option<(u32, u32)> {
    let v = text.split_whitespace().nth(2)?;
    let mut parts = v.split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// The commit at HEAD, if there is one: read from the repository's files where they
/// tell it plainly ([`head::head_on_disk`]), else from git.
pub fn head(workdir: &Path) -> Option<String> {
    if let Some(seen) = head::head_on_disk(workdir) {
        return Some(seen);
    }
    let mut c = git(workdir);
    c.args(["rev-parse", "--verify", "-q", "HEAD"]);
    output(c).filter(|s| !s.is_empty())
}

/// What the work tree looked like at one moment: HEAD, and the content of every
/// path that differs from it (tracked changes and untracked files, not ignored ones).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Snapshot {
    /// A fingerprint of the whole state, stable for equal trees.
    pub id: String,
    pub head: Option<String>,
    /// Dirty path → CRC-32 of its content (`None`: deleted).
    pub dirty: Dirty,
}

/// Dirty path → CRC-32 of its content (`None`: deleted, or not a readable file).
pub type Dirty = std::collections::BTreeMap<String, Option<u32>>;

impl Snapshot {
    /// The snapshot of a tree at `head` with these dirty paths, fingerprinted.
    pub fn new(head: Option<String>, dirty: Dirty) -> Snapshot {
        let mut h = crc32fast::Hasher::new();
        h.update(head.as_deref().unwrap_or("").as_bytes());
        for (p, c) in &dirty {
            h.update(p.as_bytes());
            h.update(&c.map(|c| c.to_le_bytes()).unwrap_or([0xff; 4]));
        }
        let id = format!(
            "{}:{:08x}",
            head.as_deref()
                .map(|h| &h[..h.len().min(12)])
                .unwrap_or("-"),
            h.finalize()
        );
        Snapshot { id, head, dirty }
    }
}

/// A file past this size is known by its metadata, not read: an agent's 8 GiB sparse
/// file, read whole, held the driver for minutes, and hundreds of files just under a
/// larger bound would be read at every snapshot.
const CRC_READ_MOST: u64 = 1024 * 1024;

/// What a snapshot keeps of a dirty path's content: the CRC-32 of a regular file's
/// bytes, read in pieces (past [`CRC_READ_MOST`], 1 MiB, of its size, inode and change and
/// modification times), of a link's target (never followed: a link to `/dev/zero`
/// would be read for good), none for anything else (a FIFO, a device, a directory)
/// or what cannot be read. Opened without blocking and checked again once open, so
/// a FIFO put in its place meanwhile holds nothing.
pub fn content_crc(path: &Path) -> Option<u32> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let meta = std::fs::symlink_metadata(path).ok()?;
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(path).ok()?;
        return Some(crc32fast::hash(target.as_os_str().as_encoded_bytes()));
    }
    if !meta.is_file() {
        return None;
    }
    let f = std::fs::File::options()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY)
        .open(path)
        .ok()?;
    let meta = f.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    let mut h = crc32fast::Hasher::new();
    if meta.len() > CRC_READ_MOST {
        for n in [
            meta.len(),
            meta.ino(),
            meta.mtime() as u64,
            meta.mtime_nsec() as u64,
            meta.ctime() as u64,
            meta.ctime_nsec() as u64,
        ] {
            h.update(&n.to_le_bytes());
        }
        return Some(h.finalize());
    }
    let mut buf = vec![0u8; 64 * 1024];
    let mut left = f.take(CRC_READ_MOST);
    loop {
        match left.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => h.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    Some(h.finalize())
}

/// Takes snapshots with one `git status` each (no lock taken, the user's index untouched).
#[derive(Debug, Clone)]
pub struct Snapshots {
    workdir: std::path::PathBuf,
}

impl Snapshots {
    /// `None` when `workdir` is not in a git work tree.
    pub fn new(workdir: &Path) -> Option<Snapshots> {
        is_repo(workdir).then(|| Snapshots {
            workdir: workdir.to_path_buf(),
        })
    }

    /// For `workdir` known to be a git work tree (no git process to ask).
    pub fn known(workdir: &Path) -> Snapshots {
        Snapshots {
            workdir: workdir.to_path_buf(),
        }
    }

    pub fn take(&self) -> Option<Snapshot> {
        let (head, dirty) = self.status(&[])?;
        Some(Snapshot::new(head, dirty))
    }

    /// HEAD, and the paths under `paths` (literal pathspecs relative to the top; the
    /// whole tree when empty) that differ from it, each with its content's CRC-32.
    pub(crate) fn status(&self, paths: &[&Path]) -> Option<(Option<String>, Dirty)> {
        let mut c = git(&self.workdir);
        // What the tree holds, asked of the tree: not of a file-system monitor or an
        // untracked cache that the repository's configuration may name.
        c.args([
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.untrackedCache=false",
            "--no-optional-locks",
            "--literal-pathspecs",
            "status",
            "--porcelain=v2",
            "-z",
            "--branch",
            "--no-renames",
            "--untracked-files=all",
        ]);
        if !paths.is_empty() {
            c.arg("--").args(paths);
        }
        let out = c.output().ok().filter(|o| o.status.success())?;
        let mut head = None;
        let mut dirty = Dirty::new();
        for entry in out.stdout.split(|&b| b == 0).filter(|e| !e.is_empty()) {
            let entry = String::from_utf8_lossy(entry);
            let path = if let Some(oid) = entry.strip_prefix("# branch.oid ") {
                head = (oid != "(initial)").then(|| oid.to_string());
                continue;
            } else if entry.starts_with('#') {
                continue;
            } else if let Some(p) = entry.strip_prefix("? ") {
                p.to_string()
            } else {
                // "1 XY sub mH mI mW hH hI path" / "u XY sub m1 m2 m3 mW h1 h2 h3 path"
                let fields = if entry.starts_with('u') { 10 } else { 8 };
                match entry.splitn(fields + 1, ' ').nth(fields) {
                    Some(p) => p.to_string(),
                    None => continue,
                }
            };
            let content = content_crc(&self.workdir.join(&path));
            dirty.insert(path, content);
        }
        Some((head, dirty))
    }

    /// The work tree these snapshots are of.
    pub fn workdir(&self) -> &Path {
        &self.workdir
    }

    /// Paths whose content differs between two snapshots, including what commits
    /// made in between changed.
    pub fn changed(&self, before: &Snapshot, after: &Snapshot) -> Vec<String> {
        let mut paths: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
        for (p, c) in &after.dirty {
            if before.dirty.get(p) != Some(c) {
                paths.insert(p.clone());
            }
        }
        for p in before.dirty.keys() {
            if !after.dirty.contains_key(p) {
                paths.insert(p.clone());
            }
        }
        if before.head != after.head
            && let (Some(a), Some(b)) = (&before.head, &after.head)
        {
            paths.extend(changed_files(&self.workdir, a, b));
        }
        paths.into_iter().collect()
    }
}

/// Paths that differ between two commits or trees.
pub fn changed_files(workdir: &Path, before: &str, after: &str) -> Vec<String> {
    if before == after {
        return Vec::new();
    }
    let mut c = git(workdir);
    c.args(["diff", "--name-only", "--no-renames", "-z", before, after]);
    match c.output() {
        Ok(out) if out.status.success() => out
            .stdout
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect(),
        _ => Vec::new(),
    }
}

/// Commits everything in the working tree; returns the new HEAD (or the old one when
/// there was nothing to commit).
pub fn commit_all(workdir: &Path, message: &str) -> Result<String, String> {
    // A kill from here to the commit's end may leave the index locked: marked ours.
    let _mark = super::index_mark::mark(workdir);
    let mut add = git(workdir);
    add.args(add_all_args(workdir, None)).stdout(Stdio::null());
    let st = add.status().map_err(|e| format!("git add: {e}"))?;
    if !st.success() {
        return Err("git add -A failed".into());
    }
    let mut c = git(workdir);
    set_identity(&mut c, user_identity(workdir).as_ref());
    c.args([
        "commit",
        "-q",
        "--no-verify",
        "--allow-empty",
        "-m",
        message,
    ])
    .stdout(Stdio::null());
    let out = c.output().map_err(|e| format!("git commit: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git commit failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    head(workdir).ok_or_else(|| "no HEAD after commit".to_string())
}

/// `git` in `dir`, hermetic, stdin closed, stderr kept for the error.
pub fn git_command(dir: &Path) -> Command {
    git(dir)
}

/// The arguments of an `add -A` of everything in `dir` but its gitlinks (`index`: the
/// index to read them from, when not the repository's own). git looks inside a
/// gitlink whose directory is a repository to see whether it changed, with that
/// repository's own configuration — whose filters no one neutralised: a sandboxed
/// agent's or a check's, run outside the sandbox. A gitlink's change is not carried.
pub fn add_all_args(dir: &Path, index: Option<&Path>) -> Vec<String> {
    let mut c = git(dir);
    c.args(["ls-files", "--stage", "-z"]);
    if let Some(i) = index {
        c.env("GIT_INDEX_FILE", i);
    }
    let mut args: Vec<String> = ["add", "-A", "--", "."].map(String::from).to_vec();
    if let Ok(out) = run_git(c, None) {
        for entry in out.split(|b| *b == 0) {
            // `MODE OBJECT STAGE\tPATH`
            if let Some(rest) = entry.strip_prefix(b"160000 ")
                && let Some(tab) = rest.iter().position(|b| *b == b'\t')
            {
                let path = String::from_utf8_lossy(&rest[tab + 1..]);
                args.push(format!(":(exclude,literal){path}"));
            }
        }
    }
    args
}

/// Runs a git command (with `input` on its stdin); its stdout, or its stderr as the
/// error.
pub fn run_git(c: Command, input: Option<&[u8]>) -> Result<Vec<u8>, String> {
    let out = git_output(c, input).map_err(|e| format!("git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(out.stdout)
}

/// Runs a git command (with `input` on its stdin) to its end: its status and output,
/// for a caller that reads the exit code itself.
pub fn git_output(mut c: Command, input: Option<&[u8]>) -> std::io::Result<std::process::Output> {
    use std::io::Write;
    c.stdout(Stdio::piped());
    if input.is_some() {
        c.stdin(Stdio::piped());
    }
    let mut child = c.spawn()?;
    // The input is written while the output is read: git answers as it reads
    // (`hash-object --stdin-paths`), and a pipe full both ways would wait for good.
    std::thread::scope(|scope| {
        let writer = match (child.stdin.take(), input) {
            (Some(mut stdin), Some(bytes)) => Some(scope.spawn(move || stdin.write_all(bytes))),
            _ => None,
        };
        let out = child.wait_with_output();
        let written = writer.map_or(Ok(()), |w| w.join().unwrap_or(Ok(())));
        out.and_then(|o| written.map(|()| o))
    })
}

/// Adds gitignore `patterns` to the repository's own, uncommitted exclude file
/// (`info/exclude` in the common git directory, shared by its worktrees), under a line
/// that says why; those already there are left alone. An agent program's bookkeeping
/// files then never count as changes nor get committed, and the user's `.gitignore`
/// is not touched.
pub fn exclude_locally(workdir: &Path, patterns: &[&str], why: &str) -> std::io::Result<()> {
    if patterns.is_empty() {
        return Ok(());
    }
    let Some(dirs) = dirs(workdir) else {
        return Ok(());
    };
    let file = dirs.common.join("info/exclude");
    let current = std::fs::read_to_string(&file).unwrap_or_default();
    let missing: Vec<&str> = patterns
        .iter()
        .copied()
        .filter(|p| !current.lines().any(|l| l.trim() == *p))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut text = current;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!("# {why}\n"));
    for p in missing {
        text.push_str(p);
        text.push('\n');
    }
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent)?;
    }
    agentloop_ground::fsutil::write_atomic(&file, text.as_bytes())
}

/// Serialises git's worktree bookkeeping in this process (`worktree add`, `remove`,
/// `prune`): an add lists the other worktrees and a prune removes half-made ones, so
/// a task's worktree, a clean copy and the merge worktree made at once from several
/// threads would read each other half-made (`failed to read …/commondir`).
pub fn worktree_admin() -> std::sync::MutexGuard<'static, ()> {
    static ADMIN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ADMIN.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests;
