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
//!
//! Where agentloop's binary is known ([`use_filter`]), agentloop's git goes further:
//! the repository's `lfs` filter is agentloop's own ([`filter`], started by git once
//! per command as `agentloop __agentloop_lfs process STORE`, git's long-running
//! filter protocol) instead of none. A checkout (a worker's worktree, the merge worktree, a
//! judge's copy) then writes the content, and its index records the file as git-lfs's
//! checkout would; a commit of agentloop's stores a changed file's content in the LFS
//! store and commits its pointer, as the person's git would, never the content itself.

use std::ffi::{OsStr, OsString};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

/// The first argument that makes agentloop's binary the filter.
pub const FILTER_ARG: &str = "__agentloop_lfs";

static FILTER: OnceLock<PathBuf> = OnceLock::new();

/// From now on agentloop's git filters Git LFS's files with `program` (agentloop's own
/// binary, which answers [`FILTER_ARG`]).
pub fn use_filter(program: PathBuf) {
    let _ = FILTER.set(program);
}

/// The settings that make the `lfs` filter of the repository whose common git
/// directory is `common` agentloop's own; `None` until [`use_filter`] was called.
pub(super) fn filter_settings(common: &Path) -> Option<Vec<(OsString, OsString)>> {
    let program = FILTER.get()?;
    let store = common.join("lfs").join("objects");
    let command = |mode: &str| {
        let mut c = quoted(program.as_os_str());
        c.push(format!(" {FILTER_ARG} {mode} "));
        c.push(quoted(store.as_os_str()));
        c
    };
    Some(vec![
        ("filter.lfs.clean".into(), command("clean")),
        ("filter.lfs.smudge".into(), command("smudge")),
        ("filter.lfs.process".into(), command("process")),
        // A filter that fails leaves the bytes as they are, as `cat` did.
        ("filter.lfs.required".into(), "false".into()),
    ])
}

/// `s` in single quotes for the shell git runs a filter's command with.
fn quoted(s: &OsStr) -> OsString {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let mut out = vec![b'\''];
    for &b in s.as_bytes() {
        if b == b'\'' {
            out.extend_from_slice(b"'\\''");
        } else {
            out.push(b);
        }
    }
    out.push(b'\'');
    OsString::from_vec(out)
}

/// The filter's whole life (`process STORE`, as git starts it; or `smudge STORE`,
/// `clean STORE` for one file), standard input to standard output: its exit code.
pub fn filter(args: &[OsString]) -> i32 {
    let (Some(mode), Some(store)) = (args.first(), args.get(1)) else {
        eprintln!("agentloop: {FILTER_ARG} needs smudge or clean and the LFS store");
        return 2;
    };
    let store = Path::new(store);
    let stdin = std::io::stdin().lock();
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    let done = match mode.to_str() {
        Some("smudge") => smudge(store, stdin, &mut stdout),
        Some("clean") => clean(store, stdin, &mut stdout),
        Some("process") => process::serve(store, stdin, &mut stdout),
        _ => {
            eprintln!("agentloop: {FILTER_ARG}: smudge or clean, not {mode:?}");
            return 2;
        }
    };
    match done.and_then(|()| stdout.flush()) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("agentloop: Git LFS filter: {e}");
            1
        }
    }
}

/// A pointer's content from `store` when the store holds content that hashes to it;
/// anything else as it came.
pub fn smudge(store: &Path, mut input: impl Read, out: &mut impl Write) -> std::io::Result<()> {
    let mut head = Vec::new();
    (&mut input).take(POINTER_MAX).read_to_end(&mut head)?;
    let whole = head.len() < POINTER_MAX as usize;
    if let (true, Some(pointer)) = (whole, Pointer::parse(&head))
        && let Ok(mut object) =
            agentloop_ground::fsutil::open_regular(&object_path(store, &pointer))
        && object.metadata()?.len() == pointer.size
        && digest_of(&mut object)? == (pointer.size, pointer.oid.clone())
    {
        object.rewind()?;
        let copied = std::io::copy(&mut (&mut object).take(pointer.size), out)?;
        if copied != pointer.size {
            return Err(std::io::Error::other(
                "the stored content shrank while read",
            ));
        }
        return Ok(());
    }
    out.write_all(&head)?;
    std::io::copy(&mut input, out)?;
    Ok(())
}

/// A file's pointer, its content kept in `store` (`<common git directory>/lfs/objects`;
/// a pointer given stays as it is). Nothing is written through a link ([`store`]).
pub fn clean(store: &Path, mut input: impl Read, out: &mut impl Write) -> std::io::Result<()> {
    let common = store
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| std::io::Error::other("not an LFS store"))?;
    let lfs = store::Dir::open(common)?.sub("lfs", true)?;
    let tmp_dir = lfs.sub("tmp", true)?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let tmp_name = format!("agentloop-{}-{nanos}", std::process::id());
    let mut tmp = tmp_dir.create(&tmp_name)?;
    let kept = keep_cleaned(&lfs, &mut input, out, &mut tmp, (&tmp_dir, &tmp_name));
    tmp_dir.remove(&tmp_name);
    kept
}

/// [`clean`]'s work, the content written to `tmp` (`tmp_at`: its directory and name)
/// on the way.
fn keep_cleaned(
    lfs: &store::Dir,
    input: &mut impl Read,
    out: &mut impl Write,
    tmp: &mut std::fs::File,
    tmp_at: (&store::Dir, &str),
) -> std::io::Result<()> {
    let mut hash = Sha256::new();
    let mut head = Vec::new();
    let mut size = 0u64;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = input.read(&mut buf)?;
        if n == 0 {
            break;
        }
        if size < POINTER_MAX {
            head.extend_from_slice(&buf[..n.min((POINTER_MAX - size) as usize)]);
        }
        size += n as u64;
        hash.update(&buf[..n]);
        tmp.write_all(&buf[..n])?;
    }
    if size < POINTER_MAX && Pointer::parse(&head).is_some() {
        return out.write_all(&head);
    }
    let oid: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    let objects = lfs
        .sub("objects", true)?
        .sub(&oid[..2], true)?
        .sub(&oid[2..4], true)?;
    if !objects.has_file(&oid) {
        tmp.sync_all()?;
        tmp_at.0.rename(tmp_at.1, &objects, &oid)?;
    }
    out.write_all(Pointer { oid, size }.text().as_bytes())
}

/// Where `store` keeps a pointer's content.
fn object_path(store: &Path, pointer: &Pointer) -> PathBuf {
    store
        .join(&pointer.oid[..2])
        .join(&pointer.oid[2..4])
        .join(&pointer.oid)
}

/// The size and SHA-256 of what `f` holds from where it stands.
fn digest_of(f: &mut impl Read) -> std::io::Result<(u64, String)> {
    let mut hash = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut size = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        size += n as u64;
        hash.update(&buf[..n]);
    }
    let hex = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Ok((size, hex))
}

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
    /// The pointer file's text, as Git LFS writes it.
    pub fn text(&self) -> String {
        format!(
            "version {}\noid sha256:{}\nsize {}\n",
            VERSIONS[0], self.oid, self.size
        )
    }

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
    let Ok(top) = dir.canonicalize() else {
        return out;
    };
    for path in lfs_paths(dir, &paths) {
        let at = dir.join(&path);
        let Ok(meta) = std::fs::symlink_metadata(&at) else {
            continue;
        };
        // Never through a link on the way (a check's code could have made one).
        if !at
            .parent()
            .and_then(|p| p.canonicalize().ok())
            .is_some_and(|p| p.starts_with(&top))
        {
            continue;
        }
        if !meta.file_type().is_file() || meta.len() >= POINTER_MAX {
            continue;
        }
        let Some(pointer) = agentloop_ground::fsutil::read_regular(&at, POINTER_MAX)
            .ok()
            .and_then(|b| Pointer::parse(&b))
        else {
            continue;
        };
        let object = object_path(&store, &pointer);
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

mod process;
mod store;

#[cfg(test)]
mod tests;
