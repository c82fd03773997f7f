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
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
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
/// directory is `common` agentloop's own; `None` until [`use_filter`] was called. One
/// long-running process per git command (no per-file `clean` or `smudge`, whose
/// command git would expand `%f` in). Required, as `git lfs install` makes it: a filter
/// that fails fails the git command, never leaving a file's raw content where its
/// pointer should be committed.
pub(super) fn filter_settings(common: &Path) -> Option<Vec<(OsString, OsString)>> {
    let program = FILTER.get()?;
    let store = common.join("lfs").join("objects");
    let mut process = quoted(program.as_os_str());
    process.push(format!(" {FILTER_ARG} process "));
    process.push(quoted(store.as_os_str()));
    Some(vec![
        ("filter.lfs.clean".into(), "".into()),
        ("filter.lfs.smudge".into(), "".into()),
        ("filter.lfs.process".into(), process),
        ("filter.lfs.required".into(), "true".into()),
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

/// The filter's whole life (`process STORE`, as git starts it), standard input to
/// standard output: its exit code.
pub fn filter(args: &[OsString]) -> i32 {
    let (Some("process"), Some(store)) = (args.first().and_then(|m| m.to_str()), args.get(1))
    else {
        eprintln!("agentloop: {FILTER_ARG} process STORE (started by git)");
        return 2;
    };
    let stdin = std::io::stdin().lock();
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    match process::serve(Path::new(store), stdin, &mut stdout).and_then(|()| stdout.flush()) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("agentloop: Git LFS filter: {e}");
            1
        }
    }
}

/// A pointer's content from `store` (`<common git directory>/lfs/objects`) when the
/// store holds content of its size ([`open_object`]); anything else as it came. The
/// content is hashed as it is written: content that turns out not to hash to the
/// pointer (changed while read) is an error, after it was written.
pub fn smudge(store: &Path, input: &[u8], out: &mut impl Write) -> std::io::Result<()> {
    let pointer = Pointer::parse(input).filter(|p| !p.extensions);
    if pointer.as_ref().is_some_and(|p| p.size == 0) {
        // Nothing to fetch: empty, whatever the oid, as Git LFS gives it.
        return Ok(());
    }
    if let Some(pointer) = pointer
        && let Some(mut object) = open_object(store, &pointer)
    {
        let got = copy_hashed(&mut object, out, pointer.size, None)?;
        if got != (pointer.size, pointer.oid) {
            return Err(std::io::Error::other(
                "the stored content does not hash to its pointer",
            ));
        }
        return Ok(());
    }
    out.write_all(input)
}

/// The store's content for `pointer`, opened from the common git directory down
/// without following a link ([`store`]), a regular file of the pointer's size with no
/// holes; `None` when there is none.
fn open_object(store: &Path, pointer: &Pointer) -> Option<std::fs::File> {
    let common = store.parent()?.parent()?;
    let o = &pointer.oid;
    let f = store::Dir::open(common)
        .and_then(|d| d.sub("lfs", false))
        .and_then(|d| d.sub("objects", false))
        .and_then(|d| d.sub(&o[..2], false))
        .and_then(|d| d.sub(&o[2..4], false))
        .and_then(|d| d.open_file(o))
        .ok()?;
    (f.metadata().ok()?.len() == pointer.size).then_some(f)
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
    let mut head = Vec::new();
    let (size, oid) = copy_hashed(input, tmp, u64::MAX, Some(&mut head))?;
    // A pointer stays as it is; so does an empty file (as Git LFS leaves both).
    if size == 0 || (size < POINTER_MAX && Pointer::parse(&head).is_some()) {
        return out.write_all(&head);
    }
    let objects = lfs
        .sub("objects", true)?
        .sub(&oid[..2], true)?
        .sub(&oid[2..4], true)?;
    if !objects.has_file(&oid) {
        tmp.sync_all()?;
        tmp_at.0.rename(tmp_at.1, &objects, &oid)?;
    }
    out.write_all(
        Pointer {
            oid,
            size,
            extensions: false,
        }
        .text()
        .as_bytes(),
    )
}

/// Copies `from` to `to`, hashing on the way (more than `most` bytes is an error), the
/// first bytes kept in `head` up to a pointer's size: the size and SHA-256 copied.
fn copy_hashed(
    from: &mut impl Read,
    to: &mut impl Write,
    most: u64,
    mut head: Option<&mut Vec<u8>>,
) -> std::io::Result<(u64, String)> {
    let mut hash = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut size = 0u64;
    loop {
        let n = from.read(&mut buf)?;
        if n == 0 {
            break;
        }
        if let Some(h) = head.as_deref_mut()
            && size < POINTER_MAX
        {
            h.extend_from_slice(&buf[..n.min((POINTER_MAX - size) as usize)]);
        }
        size += n as u64;
        if size > most {
            return Err(std::io::Error::other("longer than it should be"));
        }
        hash.update(&buf[..n]);
        to.write_all(&buf[..n])?;
    }
    let hex = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Ok((size, hex))
}

/// The versions a pointer may name (the others are the format's earlier names, which
/// Git LFS still reads).
const VERSIONS: [&str; 3] = [
    "https://git-lfs.github.com/spec/v1",
    "https://hawser.github.com/spec/v1",
    "http://git-media.io/v/2",
];

/// A pointer file is smaller than this.
const POINTER_MAX: u64 = 1024;

/// What a pointer names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pointer {
    /// The content's SHA-256, 64 lowercase hexadecimal digits.
    pub oid: String,
    pub size: u64,
    /// It names extensions, which rewrite the content: agentloop applies none, so its
    /// content is not put in its place.
    pub extensions: bool,
}

impl Pointer {
    /// The pointer file's text, as Git LFS writes it.
    pub fn text(&self) -> String {
        format!(
            "version {}\noid sha256:{}\nsize {}\n",
            VERSIONS[0], self.oid, self.size
        )
    }

    /// The pointer `bytes` hold, if they are one, read as Git LFS reads one (so that
    /// what agentloop's git takes for a pointer is what the person's takes): at most
    /// 1024 bytes; white space (Unicode's) around it dropped; lines split at `\n`, a
    /// line's last `\r` dropped, empty lines skipped; then exactly `version` (one of
    /// the names the format has had), `oid sha256:` and 64 lowercase hexadecimal
    /// digits, `size` (a decimal, a sign allowed, not below 0), in that order, with
    /// only extension lines (`ext-N-name`) between them and nothing after.
    pub fn parse(bytes: &[u8]) -> Option<Pointer> {
        if bytes.len() as u64 > POINTER_MAX {
            return None;
        }
        let text = std::str::from_utf8(bytes).ok()?.trim();
        let mut values: Vec<&str> = Vec::new();
        let mut extensions = false;
        for line in text.split('\n') {
            let line = line.strip_suffix('\r').unwrap_or(line);
            if line.is_empty() {
                continue;
            }
            let (key, value) = line.split_once(' ')?;
            let expected = *["version", "oid", "size"].get(values.len())?;
            if key == expected {
                values.push(value);
            } else if is_extension(key) {
                extensions = true;
            } else {
                return None;
            }
        }
        let [version, oid, size] = values[..] else {
            return None;
        };
        if !VERSIONS.contains(&version) {
            return None;
        }
        let oid = oid.strip_prefix("sha256:")?;
        let hex = |c: u8| c.is_ascii_digit() || (b'a'..=b'f').contains(&c);
        if oid.len() != 64 || !oid.bytes().all(hex) {
            return None;
        }
        let digits = size.strip_prefix(['+', '-']).unwrap_or(size);
        if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        let size: i64 = size.parse().ok()?;
        Some(Pointer {
            oid: oid.to_string(),
            size: u64::try_from(size).ok()?,
            extensions,
        })
    }
}

/// `ext-` a digit `-` and word characters: an extension's key.
fn is_extension(key: &str) -> bool {
    let Some(rest) = key.strip_prefix("ext-") else {
        return false;
    };
    let mut b = rest.bytes();
    b.next().is_some_and(|d| d.is_ascii_digit())
        && b.next() == Some(b'-')
        && rest.len() > 2
        && rest[2..]
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_')
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
        if !meta.file_type().is_file() || meta.len() > POINTER_MAX {
            continue;
        }
        let Some(pointer) = agentloop_ground::fsutil::read_regular(&at, POINTER_MAX)
            .ok()
            .and_then(|b| Pointer::parse(&b))
            .filter(|p| !p.extensions)
        else {
            continue;
        };
        match put(dir, &path, &store, &pointer, meta.permissions().mode()) {
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

/// Writes the store's content for `pointer` over the pointer at `path` in `dir` (mode
/// `mode`): every directory on the way opened without following a link, the content
/// written to a new file beside it and hashed on the way, renamed over the pointer only
/// when it hashes to it.
fn put(dir: &Path, path: &str, store: &Path, pointer: &Pointer, mode: u32) -> std::io::Result<()> {
    // Empty, whatever the oid, as Git LFS gives it.
    let empty = pointer.size == 0;
    let mut object: Box<dyn Read> = if empty {
        Box::new(std::io::empty())
    } else {
        Box::new(
            open_object(store, pointer)
                .ok_or_else(|| std::io::Error::other("the store has no such content"))?,
        )
    };
    let (parents, name) = match path.rsplit_once('/') {
        Some((p, n)) => (p.split('/').collect::<Vec<_>>(), n),
        None => (Vec::new(), path),
    };
    let mut at = store::Dir::open(dir)?;
    for p in parents {
        at = at.sub(p, false)?;
    }
    let mut made = None;
    for n in 0..16 {
        let tmp = format!(".{name}.agentloop-lfs-{}-{n}", std::process::id());
        match at.create(&tmp) {
            Ok(f) => {
                made = Some((tmp, f));
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    let (tmp, mut to) = made.ok_or_else(|| std::io::Error::other("no name for the copy"))?;
    let written = (|| {
        let got = copy_hashed(&mut object, &mut to, pointer.size, None)?;
        if !empty && got != (pointer.size, pointer.oid.clone()) {
            return Err(std::io::Error::other("not the pointer's content"));
        }
        to.set_permissions(std::fs::Permissions::from_mode(mode & 0o777))?;
        at.rename(&tmp, &at, name)
    })();
    if written.is_err() {
        at.remove(&tmp);
    }
    written
}

mod process;
mod store;

#[cfg(test)]
mod tests;
