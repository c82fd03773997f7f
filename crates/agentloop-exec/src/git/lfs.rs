//! Git LFS content in the trees agentloop checks out for its judges. agentloop's git
//! runs no filter (`hermetic`), so a file Git LFS tracks comes out of a checkout as
//! its pointer (three lines naming the content's SHA-256 and size), where the person's
//! own checkout has the content: every check that reads such a file would judge
//! something else than the person runs. [`fill`] puts the content in place of each
//! pointer, from the repository's own LFS store (`lfs/objects` in its common git
//! directory), running nothing of Git LFS's: the content is taken only when it hashes
//! to the pointer's SHA-256 and has its size, so what lands in the tree is what the
//! tree's pointer names, whoever wrote the store.
//!
//! A path counts as Git LFS's when its attributes say `filter=lfs` (as `git lfs
//! track` writes them) and its file is a pointer as the specification writes one (a
//! file under 1024 bytes: `version`, `oid sha256:…`, `size …`, one line each, in that
//! order). Content the store does not hold stays a pointer, and is said.

use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use sha2::{Digest, Sha256};

/// The versions a pointer may name (the second is the format's first name, which Git
/// LFS still reads).
const VERSIONS: [&str; 2] = [
    "https://git-lfs.github.com/spec/v1",
    "https://hawser.github.com/spec/v1",
];

/// A pointer file is smaller than this.
const POINTER_MAX: u64 = 1024;

/// What a pointer names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pointer {
    /// The content's SHA-256, 64 lowercase hexadecimal digits.
    pub oid: String,
    pub size: u64,
}

impl Pointer {
    /// The pointer `bytes` hold, if they are one.
    pub fn parse(bytes: &[u8]) -> Option<Pointer> {
        if bytes.len() as u64 >= POINTER_MAX {
            return None;
        }
        let text = std::str::from_utf8(bytes).ok()?;
        let body = text.strip_suffix('\n')?;
        let mut lines = body.split('\n');
        let version = lines.next()?.strip_prefix("version ")?;
        if !VERSIONS.contains(&version) {
            return None;
        }
        let oid = lines.next()?.strip_prefix("oid sha256:")?;
        let size = lines.next()?.strip_prefix("size ")?;
        // Other keys (`ext-…`) name extensions that rewrite the content: not read.
        if lines.next().is_some() {
            return None;
        }
        let hex = |c: u8| c.is_ascii_digit() || (b'a'..=b'f').contains(&c);
        if oid.len() != 64 || !oid.bytes().all(hex) {
            return None;
        }
        if size.is_empty() || !size.bytes().all(|c| c.is_ascii_digit()) || size.len() > 19 {
            return None;
        }
        Some(Pointer {
            oid: oid.to_string(),
            size: size.parse().ok()?,
        })
    }
}

/// What [`fill`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Filled {
    /// The paths whose content was put in place of their pointer.
    pub filled: Vec<String>,
    /// The paths left as pointers: the store has no content that hashes to theirs.
    pub missing: Vec<String>,
}

/// Puts the content of each Git LFS pointer that `dir` (a work tree of the repository
/// whose common git directory is `common`) tracks in place of the pointer. Nothing
/// happens (and no git starts) in a repository without an LFS store.
pub fn fill(dir: &Path, common: &Path) -> Filled {
    let mut out = Filled::default();
    let store = common.join("lfs").join("objects");
    if !store.is_dir() {
        return out;
    }
    let mut c = super::git_command(dir);
    c.args(["ls-files", "-z"]);
    let Ok(listed) = super::run_git(c, None) else {
        return out;
    };
    let paths: Vec<String> = listed
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    for path in lfs_paths(dir, &paths) {
        let at = dir.join(&path);
        let Ok(meta) = std::fs::symlink_metadata(&at) else {
            continue;
        };
        if !meta.file_type().is_file() || meta.len() >= POINTER_MAX {
            continue;
        }
        let Some(pointer) = agentloop_ground::fsutil::read_regular(&at, POINTER_MAX)
            .ok()
            .and_then(|b| Pointer::parse(&b))
        else {
            continue;
        };
        let object = store
            .join(&pointer.oid[..2])
            .join(&pointer.oid[2..4])
            .join(&pointer.oid);
        match put(&object, &pointer, &at, meta.permissions().mode()) {
            Ok(()) => out.filled.push(path),
            Err(_) => out.missing.push(path),
        }
    }
    out
}

/// The paths among `paths` whose attributes in `dir` say `filter=lfs` (one `git
/// check-attr`).
fn lfs_paths(dir: &Path, paths: &[String]) -> Vec<String> {
    let mut input = Vec::new();
    for p in paths {
        input.extend_from_slice(p.as_bytes());
        input.push(0);
    }
    let mut c = super::git_command(dir);
    c.args(["check-attr", "-z", "--stdin", "filter"]);
    let Ok(said) = super::run_git(c, Some(&input)) else {
        return Vec::new();
    };
    // `path NUL filter NUL value NUL`, path by path.
    let fields: Vec<&[u8]> = said.split(|b| *b == 0).collect();
    fields
        .chunks(3)
        .filter(|f| f.len() == 3 && f[2] == b"lfs")
        .map(|f| String::from_utf8_lossy(f[0]).into_owned())
        .collect()
}

/// Copies the store's `object` over the pointer at `at` (mode `mode`) if it hashes to
/// the pointer's SHA-256 and has its size: written beside it, then renamed over it.
fn put(object: &Path, pointer: &Pointer, at: &Path, mode: u32) -> std::io::Result<()> {
    let bad = |why: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, why.to_string());
    // A FIFO or a device planted in the store is refused by its type, not waited on.
    let mut from = agentloop_ground::fsutil::open_regular(object)?;
    if from.metadata()?.len() != pointer.size {
        return Err(bad("not the pointer's size"));
    }
    let name = at.file_name().ok_or_else(|| bad("no file name"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(".agentloop-lfs");
    let tmp = at.with_file_name(tmp_name);
    let _ = std::fs::remove_file(&tmp);
    let written = (|| {
        let mut to = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode & 0o777)
            .custom_flags(nix::libc::O_NOFOLLOW)
            .open(&tmp)?;
        let mut hash = Sha256::new();
        let mut buf = vec![0u8; 1 << 16];
        let mut total = 0u64;
        loop {
            let n = from.read(&mut buf)?;
            if n == 0 {
                break;
            }
            total += n as u64;
            if total > pointer.size {
                return Err(bad("longer than the pointer's size"));
            }
            hash.update(&buf[..n]);
            to.write_all(&buf[..n])?;
        }
        let hex: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
        if total != pointer.size || hex != pointer.oid {
            return Err(bad("not the pointer's content"));
        }
        to.set_permissions(std::fs::Permissions::from_mode(mode & 0o777))?;
        std::fs::rename(&tmp, at)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests;
