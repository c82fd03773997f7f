//! The agent CLIs' own directories in the home directory (`~/.claude`, `~/.qwen`, …)
//! as a sandboxed agent sees them: a private copy of each, made when its process is
//! confined and thrown away after it. What the agent writes there — a hook or an MCP
//! server in a settings file, an instructions file, a command, a model endpoint —
//! never reaches the person's own CLI, a later reviewer or planner, or another
//! worker: they all read the directories as the person left them. Only a refreshed
//! login goes back (the CLI's credentials file, when it changed in the copy and the
//! real one did not change meanwhile).
//!
//! What a CLI keeps of its past sessions (transcripts, logs, todos) is not copied: a
//! sandboxed agent starts without them, as agentloop never resumes a session, and
//! what it writes there goes with the copy. A part too large to copy (a tree of more
//! than 500 files or 8 MiB: plugins, installed packages) is seen read-only. The copies live in agentloop's state directory, hidden from the
//! sandbox; what a killed driver left there is removed by the next confinement.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

pub use agentloop_ground::fsutil::remove_all;

/// The agent CLIs' directories (and files) in the home directory, copied for each
/// confined process. (`~/.cache` and `~/.npm` are the tools' caches, shared.)
pub(super) const COPIED: &[&str] = &[
    "~/.claude",
    "~/.claude.json",
    "~/.codex",
    "~/.gemini",
    "~/.copilot",
    "~/.qwen",
    "~/.factory",
    "~/.cline",
    "~/.config/opencode",
    "~/.local/share/opencode",
    "~/.local/state/opencode",
    "~/.aider",
    // OpenCode loads the provider packages it installs here.
    "~/.cache/opencode",
];

/// The tools' caches in the home directory (`npx` runs the packages `~/.npm` holds,
/// OpenCode the ones in `~/.cache`, Go the builds): an agent writes the run's own,
/// never the person's ([`Caches`]).
pub(super) const CACHES: &[(&str, &str)] = &[("~/.cache", "cache"), ("~/.npm", "npm")];

/// The tools' caches an agent writes.
#[derive(Debug, Clone, Copy)]
pub enum Caches<'a> {
    /// The run's own, in this directory, kept between its workers' iterations (warm
    /// for the next one), never the person's.
    Run(&'a Path),
    /// Empty, and gone with the process: a reviewer's, a planner's or a cycle's
    /// judge's, which no package a worker planted reaches.
    Fresh,
}

/// The run's caches in `dir`, each a directory, and where a copy of a CLI's own
/// directory is laid in one (`~/.cache/opencode`), a plain directory: not a link an
/// agent left there for the next one to follow.
pub(super) fn prepare_caches(dir: &Path, homes: &Homes) -> std::io::Result<()> {
    let home = super::home();
    for (p, name) in CACHES {
        let mine = dir.join(name);
        std::fs::create_dir_all(&mine)?;
        let real = super::expand(p, &home);
        for (_, at) in &homes.binds {
            let Ok(rel) = at.strip_prefix(&real) else {
                continue;
            };
            let point = mine.join(rel);
            let plain = std::fs::symlink_metadata(&point).is_ok_and(|m| m.is_dir());
            if !plain {
                remove_all(&point);
                let _ = std::fs::remove_file(&point);
            }
        }
    }
    Ok(())
}

/// The login files the CLIs rewrite when they refresh a token, under the home
/// directory: the only writes of a sandboxed agent that reach the real directories,
/// and only their tokens (`only_tokens_changed`). Droid's store (`auth.v2.file`) is
/// sealed with a key the agent can read, so it cannot be told from one the agent
/// made: not taken back.
const CREDENTIALS: &[&str] = &[
    ".claude/.credentials.json",
    ".codex/auth.json",
    // (MCP servers' logins, where there is no keyring.)
    ".codex/.credentials.json",
    ".gemini/oauth_creds.json",
    ".gemini/mcp-oauth-tokens.json",
    ".qwen/oauth_creds.json",
    ".qwen/mcp-oauth-tokens.json",
    ".local/share/opencode/auth.json",
    ".local/share/opencode/mcp-auth.json",
    // Also each provider's endpoint and model, which stay as they were.
    ".cline/data/settings/providers.json",
];

/// The largest credentials file taken back.
const CREDENTIAL_MOST: u64 = 256 * 1024;

/// The directories a CLI keeps its past sessions in: not copied.
const SESSIONS: &[&str] = &[
    "projects",
    "sessions",
    "session-state",
    "session-env",
    "history",
    "log",
    "logs",
    "tmp",
    "todos",
    "file-history",
    "shell-snapshots",
    "statsig",
    "debug",
    "storage",
    "snapshot",
    "tasks",
    "checkpoints",
];

/// How much of a home is copied for one process; the rest is seen read-only.
const COPY_MOST: u64 = 64 * 1024 * 1024;

/// The private copies of one confined process.
#[derive(Debug)]
pub struct Homes {
    /// Where the copies are (removed when this value goes).
    dir: PathBuf,
    /// Each copy and the real path it is seen at.
    pub(super) binds: Vec<(PathBuf, PathBuf)>,
    /// Parts too large to copy: seen read-only at these real paths.
    pub(super) read_only: Vec<PathBuf>,
    /// Each credentials file: its real path, its copy, and its content when copied.
    credentials: Vec<(PathBuf, PathBuf, Vec<u8>)>,
}

impl Homes {
    /// Copies the CLIs' directories of `home` that exist into a new directory under
    /// `base` (agentloop's state directory).
    pub fn make(home: &Path, base: &Path) -> std::io::Result<Homes> {
        Homes::make_within(home, base, COPY_MOST, &[])
    }

    /// [`Homes::make`], with `more` directories copied too: a CLI's own directory
    /// that its environment puts elsewhere (`CODEX_HOME`, `CLAUDE_CONFIG_DIR`, …),
    /// each with the directory of the home it stands for (`.codex`), whose login
    /// files it holds under the same names.
    pub fn make_with(home: &Path, base: &Path, more: &[(PathBuf, &str)]) -> std::io::Result<Homes> {
        Homes::make_within(home, base, COPY_MOST, more)
    }

    /// [`Homes::make_with`], copying at most `most` bytes.
    fn make_within(
        home: &Path,
        base: &Path,
        most: u64,
        more: &[(PathBuf, &str)],
    ) -> std::io::Result<Homes> {
        sweep(base);
        let dir = new_dir(base)?;
        let mut homes = Homes {
            dir,
            binds: Vec::new(),
            read_only: Vec::new(),
            credentials: Vec::new(),
        };
        let mut budget = most;
        let all = COPIED.iter().map(|p| super::expand(p, home)).chain(
            more.iter()
                .map(|(p, _)| p)
                .filter(|p| p.is_absolute())
                .cloned(),
        );
        for (i, real) in all.enumerate() {
            if homes.binds.iter().any(|(_, r)| real.starts_with(r)) {
                continue;
            }
            let Ok(meta) = std::fs::metadata(&real) else {
                continue;
            };
            // (A directory that holds the copies is not copied into them.)
            let inside = homes
                .dir
                .canonicalize()
                .unwrap_or_else(|_| homes.dir.clone());
            if real.canonicalize().is_ok_and(|r| inside.starts_with(r)) {
                continue;
            }
            let copy = homes.dir.join(i.to_string());
            let copied = if meta.is_dir() {
                std::fs::create_dir(&copy)
                    .and_then(|()| copy_dir(&real, &copy, &mut budget, &mut homes.read_only))
            } else if meta.is_file() {
                copy_file(&real, &copy, &mut budget, &mut homes.read_only)
            } else {
                continue;
            };
            match copied {
                Ok(()) => homes.binds.push((copy, real)),
                // What cannot be copied (a full disk) is seen as it is, read-only.
                Err(_) => {
                    remove_all(&copy);
                    let _ = std::fs::remove_file(&copy);
                    homes.read_only.retain(|p| !p.starts_with(&real));
                    homes.read_only.push(real);
                }
            }
        }
        // Each login file where the home has it, and where a directory of `more`
        // stands for its CLI's (`CODEX_HOME/auth.json` for `.codex/auth.json`).
        let logins = CREDENTIALS.iter().flat_map(|c| {
            let elsewhere = more.iter().filter_map(move |(dir, stands_for)| {
                let rest = c.strip_prefix(stands_for)?.strip_prefix('/')?;
                dir.is_absolute().then(|| dir.join(rest))
            });
            std::iter::once(home.join(c)).chain(elsewhere)
        });
        for real in logins {
            let Some((copy_root, real_root)) =
                homes.binds.iter().find(|(_, r)| real.starts_with(r))
            else {
                continue;
            };
            let copy = copy_root.join(real.strip_prefix(real_root).unwrap_or(&real));
            if let Ok(was) = agentloop_ground::fsutil::read_regular(&real, CREDENTIAL_MOST) {
                homes.credentials.push((real, copy, was));
            }
        }
        Ok(homes)
    }

    /// Takes back the logins refreshed in the copies, then removes them.
    fn finish(&mut self) {
        for (real, copy, was) in &self.credentials {
            let Some(now) = read_in_copy(&self.dir, copy) else {
                continue;
            };
            let untouched = agentloop_ground::fsutil::read_regular(real, CREDENTIAL_MOST)
                .is_ok_and(|r| &r == was);
            if &now != was
                && untouched
                && let Some(back) = plausible(was, &now)
            {
                let _ = write_private(real, &back);
            }
        }
        remove_all(&self.dir);
    }
}

impl Drop for Homes {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The file at `copy`, in the copies' directory `dir`, read only when it is a
/// regular file reached through no link: the agent could have put a link there (or
/// on a directory on the way) to a file of the person's that it cannot read itself.
fn read_in_copy(dir: &Path, copy: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let real = copy.canonicalize().ok()?;
    if real != dir.canonicalize().ok()?.join(copy.strip_prefix(dir).ok()?) {
        return None;
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY)
        .open(&real)
        .ok()?;
    let meta = f.metadata().ok()?;
    if !meta.is_file() || meta.len() > CREDENTIAL_MOST {
        return None;
    }
    let mut bytes = Vec::new();
    f.take(CREDENTIAL_MOST + 1).read_to_end(&mut bytes).ok()?;
    (bytes.len() as u64 <= CREDENTIAL_MOST).then_some(bytes)
}

/// A credentials file's new content, as it goes back: only when nothing but its
/// tokens changed. The same JSON with the same members everywhere (none added or
/// gone, no member twice), and only the values of members named exactly for a token
/// or its expiry (`access_token`, `refreshToken`, `expiresAt`, …; not `tokenUrl`)
/// changed, each keeping its type. A new account's key, an endpoint, a new entry
/// (OpenCode's `wellknown` ones set variables and fetch configuration) stays in the
/// copy. What goes back is the parsed value written anew, not the agent's bytes. (A
/// token is opaque: one of another account's cannot be told from a refreshed one.)
fn plausible(was: &[u8], now: &[u8]) -> Option<Vec<u8>> {
    let was: serde_json::Value = serde_json::from_slice(was).ok()?;
    let new: serde_json::Value = serde_json::from_slice(now).ok()?;
    if !(was.is_object() || was.is_array()) || twice(now) || !only_tokens_changed(&was, &new) {
        return None;
    }
    serde_json::to_vec_pretty(&new).ok()
}

/// Whether some object in the JSON text `bytes` names a member twice (the parsed
/// value keeps only the last).
fn twice(bytes: &[u8]) -> bool {
    struct Unique;
    impl<'de> serde::de::Visitor<'de> for Unique {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("JSON")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
            let mut seen = std::collections::BTreeSet::new();
            while let Some(k) = m.next_key::<String>()? {
                if !seen.insert(k) {
                    return Err(serde::de::Error::custom("a member twice"));
                }
                m.next_value::<UniqueValue>()?;
            }
            Ok(())
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
            while s.next_element::<UniqueValue>()?.is_some() {}
            Ok(())
        }
        fn visit_bool<E>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        fn visit_i64<E>(self, _: i64) -> Result<(), E> {
            Ok(())
        }
        fn visit_u64<E>(self, _: u64) -> Result<(), E> {
            Ok(())
        }
        fn visit_f64<E>(self, _: f64) -> Result<(), E> {
            Ok(())
        }
        fn visit_str<E>(self, _: &str) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E>(self) -> Result<(), E> {
            Ok(())
        }
    }
    struct UniqueValue;
    impl<'de> serde::Deserialize<'de> for UniqueValue {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<UniqueValue, D::Error> {
            d.deserialize_any(Unique).map(|()| UniqueValue)
        }
    }
    serde_json::from_slice::<UniqueValue>(bytes).is_err()
}

fn only_tokens_changed(was: &serde_json::Value, now: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (was, now) {
        (Value::Object(a), Value::Object(b)) => {
            // An entry that sets a variable (OpenCode's `wellknown`) keeps every value.
            let fixed = a.get("type").and_then(Value::as_str) == Some("wellknown");
            if fixed && a != b || !a.keys().eq(b.keys()) {
                return false;
            }
            b.iter().all(|(k, v)| {
                let old = &a[k];
                let leaf = !(old.is_object() || old.is_array());
                if TOKENS.contains(&k.as_str()) && !fixed && leaf {
                    same_kind(old, v)
                } else {
                    only_tokens_changed(old, v)
                }
            })
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| only_tokens_changed(x, y))
        }
        (a, b) => a == b,
    }
}

/// The members whose values a refreshed login changes.
const TOKENS: &[&str] = &[
    "access_token",
    "accessToken",
    "access",
    "refresh_token",
    "refreshToken",
    "refresh",
    "id_token",
    "idToken",
    "token",
    "expiry_date",
    "expiry",
    "expires",
    "expires_at",
    "expiresAt",
    "expires_in",
    "expiresIn",
    "last_refresh",
];

/// A value a token's member may change to: a string for a string, a number for a
/// number.
fn same_kind(was: &serde_json::Value, now: &serde_json::Value) -> bool {
    matches!(
        (was, now),
        (serde_json::Value::String(_), serde_json::Value::String(_))
            | (serde_json::Value::Number(_), serde_json::Value::Number(_))
    )
}

/// A new directory of this process's under `base`, only its owner's.
pub(super) fn new_dir(base: &Path) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(base)?;
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    loop {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = base.join(format!("{}-{n}", std::process::id()));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                // A dead process's with the same pid: gone with the sweep.
                remove_all(&dir);
            }
            r => return r.map(|()| dir),
        }
    }
}

/// Removes the copies of processes that are gone (a killed driver's).
pub(super) fn sweep(base: &Path) {
    for e in std::fs::read_dir(base).into_iter().flatten().flatten() {
        let name = e.file_name();
        let pid = name
            .to_str()
            .and_then(|n| n.split_once('-'))
            .and_then(|(p, _)| p.parse::<i32>().ok());
        let gone = pid.is_some_and(|p| {
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(p), None)
                == Err(nix::errno::Errno::ESRCH)
        });
        if gone {
            remove_all(&e.path());
        }
    }
}

/// Copies the directory `from` into the (new, empty) `to`: directories, regular files
/// and links as they are, past sessions left out, what the budget cannot hold left
/// to be seen read-only (a placeholder made for it).
fn copy_dir(
    from: &Path,
    to: &Path,
    budget: &mut u64,
    read_only: &mut Vec<PathBuf>,
) -> std::io::Result<()> {
    let mut entries: BTreeMap<std::ffi::OsString, std::fs::DirEntry> = BTreeMap::new();
    // (Unreadable to this user: nor could the CLI read it.)
    for e in std::fs::read_dir(from).into_iter().flatten().flatten() {
        entries.insert(e.file_name(), e);
    }
    for (name, e) in entries {
        let Ok(kind) = e.file_type() else { continue };
        let (src, dst) = (e.path(), to.join(&name));
        if kind.is_symlink() {
            if let Ok(target) = std::fs::read_link(&src) {
                std::os::unix::fs::symlink(target, &dst)?;
            }
        } else if kind.is_dir() {
            if name.to_str().is_some_and(|n| SESSIONS.contains(&n)) {
                continue;
            }
            std::fs::create_dir(&dst)?;
            // A large tree (plugins, installed packages) is seen as it is, read-only:
            // copying thousands of files for each process costs more than the agent.
            if *budget == 0 || !small(&src) {
                read_only.push(src);
                continue;
            }
            copy_dir(&src, &dst, budget, read_only)?;
            if let Ok(meta) = e.metadata() {
                let _ = std::fs::set_permissions(&dst, meta.permissions());
            }
        } else if kind.is_file() {
            copy_file(&src, &dst, budget, read_only)?;
        }
        // Sockets, FIFOs and devices are left out.
    }
    Ok(())
}

/// A directory tree copied for each process: at most this many files and bytes.
const TREE_FILES: u64 = 500;
const TREE_BYTES: u64 = 8 * 1024 * 1024;

/// Whether the tree at `dir` holds at most [`TREE_FILES`] entries and [`TREE_BYTES`]
/// (counted until either is passed; links not followed).
fn small(dir: &Path) -> bool {
    fn count(d: &Path, files: &mut u64, bytes: &mut u64) -> bool {
        for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
            *files += 1;
            let Ok(meta) = e.metadata() else { continue };
            if meta.is_dir() {
                if !count(&e.path(), files, bytes) {
                    return false;
                }
            } else {
                *bytes += meta.len();
            }
            if *files > TREE_FILES || *bytes > TREE_BYTES {
                return false;
            }
        }
        true
    }
    count(dir, &mut 0, &mut 0)
}

/// Copies one regular file, or leaves an empty placeholder for it to be seen
/// read-only when the budget is spent.
fn copy_file(
    from: &Path,
    to: &Path,
    budget: &mut u64,
    read_only: &mut Vec<PathBuf>,
) -> std::io::Result<()> {
    let len = std::fs::metadata(from).map(|m| m.len()).unwrap_or(0);
    if len > *budget || len > TREE_BYTES {
        std::fs::File::create(to)?;
        read_only.push(from.to_path_buf());
        return Ok(());
    }
    *budget -= len;
    match std::fs::copy(from, to) {
        Ok(_) => Ok(()),
        // Unreadable to this user: nor could the CLI read it.
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Ok(()),
        Err(e) => Err(e),
    }
}

/// Writes a credentials file back: a temp file only its owner can read, renamed over
/// the real one.
fn write_private(real: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = real.parent().unwrap_or(Path::new("."));
    let name = real.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.agentloop-{}-{n}.tmp", std::process::id()));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, real)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests;
