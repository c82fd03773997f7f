//! agentloop's own copy of the surface's contents, by git blob id, under its state
//! directory (`$XDG_STATE_HOME/agentloop/objects/`, hidden from a sandboxed agent):
//! the baseline is read back from here, never trusted from the project's object
//! database, which the agent can write (a loose object overwritten in place, a pack
//! replaced). Every content read, from here or from git, is checked against its id
//! by hashing it again; the clean copy's surface files are checked the same way
//! after each checkout, and written from here where git put something else.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{git, run};
use agentloop_exec::git::blob_holds;
use agentloop_journal::Baseline;

/// Where the content of blob `id` is kept.
fn kept_at(id: &str) -> Option<PathBuf> {
    if id.len() < 4 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some(
        agentloop_ground::fsutil::state_dir()?
            .join("objects")
            .join(&id[..2])
            .join(&id[2..]),
    )
}

/// The ids git gives the files at `paths` (relative to `dir`), in order.
pub(super) fn ids_of(dir: &Path, paths: &[&str]) -> Result<Vec<String>, String> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let mut c = git(dir);
    c.args(["hash-object", "--no-filters", "--stdin-paths"]);
    let input = paths.join("\n") + "\n";
    let out = run(c, Some(input.as_bytes()))?;
    Ok(String::from_utf8_lossy(&out)
        .lines()
        .map(str::to_string)
        .collect())
}

/// The content of blob `id`: agentloop's own copy, else git's; either only if it
/// hashes to `id`.
pub fn blob(root: &Path, id: &str) -> Result<Vec<u8>, String> {
    let at = kept_at(id);
    if let Some(bytes) = at.as_ref().and_then(|p| std::fs::read(p).ok()) {
        if blob_holds(id, &bytes) {
            return Ok(bytes);
        }
        // A kept copy that does not hash to its name is not used (nor kept).
        let _ = std::fs::remove_file(at.as_ref().expect("read from it"));
    }
    let mut c = git(root);
    c.args(["cat-file", "blob", id]);
    let bytes = run(c, None)?;
    if !blob_holds(id, &bytes) {
        return Err(format!(
            "the repository's object {id} does not hold what its id says (it was changed in place): agentloop does not use it"
        ));
    }
    if let Some(at) = at {
        let _ = keep_bytes(&at, &bytes);
    }
    Ok(bytes)
}

fn keep_bytes(at: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if at.exists() {
        return Ok(());
    }
    if let Some(d) = at.parent() {
        std::fs::create_dir_all(d)?;
    }
    agentloop_ground::fsutil::write_atomic(at, bytes)
}

/// Keeps the content of `files` (path in `root`, blob id as hashed from it) in
/// agentloop's own copy; a file that no longer hashes to its id (changed meanwhile)
/// is not kept. Symbolic links are kept as their target's name, as git does.
pub(super) fn keep(root: &Path, files: &[(&str, &str)]) -> Result<(), String> {
    for (path, id) in files {
        let Some(at) = kept_at(id) else { continue };
        if at.exists() {
            continue;
        }
        let src = root.join(path);
        let bytes = match std::fs::symlink_metadata(&src) {
            Ok(m) if m.file_type().is_symlink() => std::fs::read_link(&src)
                .map(|t| t.into_os_string().into_encoded_bytes())
                .map_err(|e| format!("{path}: {e}"))?,
            Ok(_) => std::fs::read(&src).map_err(|e| format!("{path}: {e}"))?,
            Err(_) => continue,
        };
        // What was read is hashed before it is kept: a file written between its hash
        // and this read is not kept under the wrong id.
        if blob_holds(id, &bytes) {
            keep_bytes(&at, &bytes).map_err(|e| format!("{}: {e}", at.display()))?;
        }
    }
    Ok(())
}

/// A file's identity and times as the kernel keeps them: a change time no one but
/// the kernel sets, so a file written since is told apart however it was written.
type Seen = (u64, u64, u64, i64, i64, i64, i64, u32);

fn seen(path: &Path) -> Option<Seen> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(path).ok()?;
    Some((
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
        m.mode(),
    ))
}

/// What this process last found right in each clean copy: path → (blob, status).
/// Only a file written since (its status changed) is hashed again; a driver that
/// starts anew hashes every file once.
static VERIFIED: std::sync::Mutex<BTreeMap<PathBuf, Verified>> =
    std::sync::Mutex::new(BTreeMap::new());

/// One copy's files found right: path → (blob, status).
type Verified = BTreeMap<String, (String, Seen)>;

/// Makes the surface files of the clean copy at `copy` what `base` says, whatever
/// git's object database gave the checkout: each file written since this process
/// last found it right is hashed, and one that is not its baseline blob is written
/// from agentloop's own copy. Returns the paths mended (each a sign that the
/// project's objects were tampered with).
pub fn mend(root: &Path, copy: &Path, base: &Baseline) -> Result<Vec<String>, String> {
    use std::os::unix::fs::PermissionsExt;
    let mut verified = VERIFIED.lock().unwrap_or_else(|e| e.into_inner());
    let known = verified.entry(copy.to_path_buf()).or_default();
    // Each file's status is read before it is hashed: one written meanwhile differs
    // from what is kept, and is hashed the next time.
    let files: Vec<(&str, &str, u32, Option<Seen>)> = base
        .iter()
        .filter(|(p, f)| {
            f.mode != 0o120000
                && !agentloop_project::is_git_file(p)
                && !agentloop_project::is_sectioned(p)
                && copy.join(p).is_file()
        })
        .map(|(p, f)| (p.as_str(), f.blob.as_str(), f.mode, seen(&copy.join(p))))
        .filter(|(p, id, _, now)| {
            known
                .get(*p)
                .is_none_or(|(blob, was)| blob != id || now.as_ref() != Some(was))
        })
        .collect();
    let paths: Vec<&str> = files.iter().map(|f| f.0).collect();
    let mut mended = Vec::new();
    for ((path, id, mode, before), got) in files.iter().zip(ids_of(copy, &paths)?) {
        let at = copy.join(path);
        if got != *id {
            let bytes = blob(root, id)?;
            std::fs::remove_file(&at).map_err(|e| format!("{path}: {e}"))?;
            std::fs::write(&at, &bytes).map_err(|e| format!("{path}: {e}"))?;
            let m = if *mode == 0o100755 { 0o755 } else { 0o644 };
            std::fs::set_permissions(&at, std::fs::Permissions::from_mode(m))
                .map_err(|e| format!("{path}: {e}"))?;
            mended.push(path.to_string());
            if let Some(now) = seen(&at) {
                known.insert(path.to_string(), (id.to_string(), now));
            }
        } else if let Some(was) = before {
            known.insert(path.to_string(), (id.to_string(), *was));
        }
    }
    Ok(mended)
}
