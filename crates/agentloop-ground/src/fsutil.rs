//! Writing files so that a crash leaves either the old or the new content.

use std::fs::File;
use std::io::Write;
use std::path::Path;

/// agentloop's own directory for this user, outside every repository:
/// `$XDG_STATE_HOME/agentloop` (`~/.local/state/agentloop`).
pub fn state_dir() -> Option<std::path::PathBuf> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".local/state"))
        })?;
    Some(base.join("agentloop"))
}

/// `$XDG_CACHE_HOME/agentloop` (or `~/.cache/agentloop`): what can be rebuilt, like
/// the clean copies checks run in.
pub fn cache_dir() -> Option<std::path::PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache")))?;
    Some(base.join("agentloop"))
}

/// Where the judges' own copies live — the clean copies checks run in, the merge
/// queue's and VALIDATE's worktrees, a planner's proposal's —: under agentloop's state
/// directory (`judge/`), not its cache. A check's runner reads configuration from the
/// directories above the one it runs in (pytest's ini and `conftest.py`, cargo's
/// `.cargo/config.toml`, a `go.work`), and an agent under the sandbox may write into
/// `~/.cache` (its CLIs keep their caches there): none of the directories above these
/// copies is writable to it, and the state directory itself is hidden from it.
pub fn judge_dir() -> Option<std::path::PathBuf> {
    Some(state_dir()?.join("judge"))
}

/// `~/…` as a path under the home directory (anything else as it is).
pub fn expand_home(p: &str) -> String {
    match (p.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest).to_string_lossy().into_owned(),
        _ => p.to_string(),
    }
}

/// Opens the regular file at `path` (a symlink followed) for reading, without
/// blocking: what was opened is judged by its type, and a FIFO, a device or a socket
/// is refused (`InvalidInput`, "not a regular file") before anything reads from it.
/// (`O_NONBLOCK` changes nothing for a regular file's reads.)
pub fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(f)
}

/// Reads the regular file at `path` (a symlink followed), when it holds at most
/// `most` bytes. It is opened without blocking and judged by what was opened: a FIFO,
/// a device or a socket planted where a file of agentloop's should be is refused by
/// its type, never read from (a FIFO would hold the reader for good).
pub fn read_regular(path: &Path, most: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let f = open_regular(path)?;
    let meta = f.metadata()?;
    if meta.len() > most {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {most} bytes"),
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    f.take(most + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > most {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {most} bytes"),
        ));
    }
    Ok(bytes)
}

/// Writes `bytes` to `path` atomically: a temp file in the same directory, fsync,
/// rename over the target, fsync the directory.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_inner(path, bytes).map_err(|e| named(path, e))
}

/// The error with the path it happened to, so "no space left on device" says where.
pub fn named(path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

fn write_atomic_inner(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        sync_dir(dir)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Makes a directory's entries (new files, renames) durable.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Writes a file that nothing reads until an event recorded after this call points at
/// it: no temp file is needed, only durability. Replaces what a crashed attempt left.
pub fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    (|| {
        let mut f = File::create(path)?;
        f.write_all(bytes)?;
        f.sync_all()
    })()
    .map_err(|e| named(path, e))
}

/// Writes a view of what the journal holds (an iteration's `result.json`): no fsync,
/// since a power cut that loses it loses nothing the journal does not keep; readers
/// take an empty or missing view as none.
pub fn write_view(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, bytes).map_err(|e| named(path, e))
}

/// Serializes `value` as pretty JSON with a trailing newline.
pub fn pretty_json<T: serde::Serialize>(value: &T) -> Vec<u8> {
    let mut v = serde_json::to_vec_pretty(value).expect("state serializes");
    v.push(b'\n');
    v
}

/// Removes the directory `dir` and everything in it, the directories an agent locked
/// (`chmod 000`) opened first; links are not followed (one at `dir` goes itself).
/// Neither recursion nor long paths: each directory one level down is emptied of its
/// files and its own directories moved up beside it, so a tree however deep (an
/// agent's, sixty thousand levels) is removed with paths two names long, on a stack
/// that does not grow.
pub fn remove_all(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let open_up = |d: &Path| {
        let _ = std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700));
    };
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            let _ = std::fs::remove_file(dir);
            return;
        }
        Err(_) => return,
    }
    open_up(dir);
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    loop {
        let mut subdirs = Vec::new();
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                subdirs.push(e.path());
            } else {
                let _ = std::fs::remove_file(e.path());
            }
        }
        if subdirs.is_empty() {
            break;
        }
        let mut moved = false;
        for sub in subdirs {
            open_up(&sub);
            for e in std::fs::read_dir(&sub).into_iter().flatten().flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let up = dir.join(format!(".up-{}-{n}", std::process::id()));
                    moved |= std::fs::rename(e.path(), up).is_ok();
                } else {
                    let _ = std::fs::remove_file(e.path());
                }
            }
            moved |= std::fs::remove_dir(&sub).is_ok();
        }
        // (Nothing could be moved or removed: what is left stays.)
        if !moved {
            break;
        }
    }
    let _ = std::fs::remove_dir(dir);
}
