//! Python's bytecode for a run's checks, compiled once: what the baseline's confined
//! checks compiled in the clean copy (the person's code as the run found it), kept
//! beside the copy, each file with the digest of the source it was compiled from, and
//! staged before each later check for the sources whose bytes still have that digest.
//!
//! A confined check starts with the copy's `__pycache__` gone (an earlier check's
//! code could have left bytecode that is not its source's; every directory is made
//! its owner's to walk and write again first, and a check whose copy still has one
//! does not run: `judge`'s first step), then what was staged for it copied in. Without a seed every check compiled
//! every module again, pytest's rewritten test modules too: 25 s against 10 s for a
//! plain run of a 20,000-test suite (docs/PERFORMANCE.md). (`PYTHONPYCACHEPREFIX`
//! would keep the bytecode out of the copy, but Python then compiles the standard
//! library and every package again too, each check: half a second for pytest alone.)
//!
//! What lets a kept file in is agentloop's own SHA-256 of the source's bytes, never
//! the interpreter's test of a time and a size (a check's code can set a file's time)
//! or of pytest 9's 64-bit hash. A file staged under a name goes to the one source
//! whose name it can be the bytecode of; a name that fits several sources, a source
//! that is not a regular file, one under a link, are compiled by the check as before.
//! Only into the copy the seed was kept from: pytest's rewritten modules keep the path
//! they were compiled at.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use sha2::{Digest, Sha256};

/// The most bytes of bytecode a seed keeps.
const MOST_KEPT: u64 = 512 << 20;

/// Where a confined check's Python bytecode comes from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Bytecode {
    /// Nowhere: the check compiles what it imports.
    #[default]
    Compiled,
    /// What the check compiles is kept in this seed afterwards: the baseline's
    /// checks, which run the person's code as the run found it.
    Keeps(PathBuf),
    /// This seed's, for the sources the copy still holds unchanged.
    From(PathBuf),
}

/// Keeps in `seed` the bytecode a check found in the `__pycache__` directories of
/// `copy` (not under `.git`, not through a link), each file with the digest and name
/// of its source as the copy holds it now; a source changed since `since` (while the
/// check ran) is left out. What the seed held before stays unless replaced. Returns
/// how many files were kept.
pub fn keep(copy: &Path, seed: &Path, since: SystemTime) -> io::Result<usize> {
    let tree = seed.join("tree");
    fs::create_dir_all(&tree)?;
    write_atomic(&seed.join("from"), copy.as_os_str().as_encoded_bytes())?;
    let mut k = Keeping {
        since,
        budget: MOST_KEPT,
        kept: 0,
    };
    k.dir(copy, &tree)?;
    Ok(k.kept)
}

/// A [`keep`] under way: sources changed since `since` left out, `budget` bytes
/// left, `kept` files kept.
struct Keeping {
    since: SystemTime,
    budget: u64,
    kept: usize,
}

impl Keeping {
    fn dir(&mut self, dir: &Path, into: &Path) -> io::Result<()> {
        let Ok(entries) = fs::read_dir(dir) else {
            return Ok(());
        };
        for e in entries.flatten() {
            let Ok(kind) = e.file_type() else { continue };
            if !kind.is_dir() || e.file_name() == ".git" {
                continue;
            }
            if e.file_name() == "__pycache__" {
                self.cache(dir, into)?;
            } else {
                self.dir(&e.path(), &into.join(e.file_name()))?;
            }
        }
        Ok(())
    }

    /// Keeps the bytecode of `dir`'s `__pycache__`.
    fn cache(&mut self, dir: &Path, into: &Path) -> io::Result<()> {
        let sources = sources(dir);
        let into = into.join("__pycache__");
        let mut digests: BTreeMap<String, Option<(fs::Metadata, [u8; 32])>> = BTreeMap::new();
        for e in fs::read_dir(dir.join("__pycache__"))?.flatten() {
            let name = e.file_name();
            let Some(name) = name.to_str() else { continue };
            if !e.file_type().is_ok_and(|k| k.is_file()) || !name.ends_with(".pyc") {
                continue;
            }
            let Some(source) = only_source(name, &sources) else {
                continue;
            };
            let digest = digests.entry(source.to_string()).or_insert_with(|| {
                source_now(&dir.join(source))
                    .filter(|(meta, _)| meta.modified().is_ok_and(|m| m < self.since))
            });
            let Some((meta, digest)) = digest else {
                continue;
            };
            let len = e.metadata().map_or(u64::MAX, |m| m.len());
            if len > self.budget {
                return Ok(());
            }
            let bytes = fs::read(e.path())?;
            // Bytecode checked by a time and a size must have been compiled from the
            // source as it is now (not from bytes the check replaced under the same
            // time): the interpreter's own test.
            if timed(&bytes) && bytes[8..16] != stamp(meta) {
                continue;
            }
            self.budget -= len;
            fs::create_dir_all(&into)?;
            // Its source's record goes first and comes back last: a kill between leaves
            // bytecode with no record, which is not staged.
            let record = into.join(format!("{name}.source"));
            match fs::remove_file(&record) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
            write_atomic(&into.join(name), &bytes)?;
            let mut r = digest.to_vec();
            r.extend_from_slice(source.as_bytes());
            write_atomic(&record, &r)?;
            self.kept += 1;
        }
        Ok(())
    }
}

/// Where the bytecode of `seed` is staged for a check: beside it.
pub fn stage_of(seed: &Path) -> PathBuf {
    let mut at = seed.as_os_str().to_owned();
    at.push(".stage");
    at.into()
}

/// Fills `stage` (emptied first) with the bytecode of `seed` whose sources `copy`
/// still holds with the bytes it was compiled from, at the paths it goes to in the
/// copy, each file's recorded time and size those of the copy's source. Nothing when `copy` is
/// not the copy the seed was kept from. Returns how many files were staged.
///
/// The checks of that one copy run one after another, so its stage is never bound by
/// two at once; a check in another copy leaves it alone.
pub fn stage(seed: &Path, copy: &Path, stage: &Path) -> io::Result<usize> {
    let from = fs::read(seed.join("from")).unwrap_or_default();
    if from != copy.as_os_str().as_encoded_bytes() {
        return Ok(0);
    }
    remove(stage)?;
    let mut staged = 0;
    stage_dir(&seed.join("tree"), copy, stage, &mut staged)?;
    Ok(staged)
}

fn stage_dir(kept: &Path, copy: &Path, into: &Path, staged: &mut usize) -> io::Result<()> {
    let Ok(entries) = fs::read_dir(kept) else {
        return Ok(());
    };
    if !real_dir(copy) {
        return Ok(());
    }
    for e in entries.flatten() {
        let name = e.file_name();
        if name == "__pycache__" {
            stage_cache(kept, copy, &into.join("__pycache__"), staged)?;
        } else if e.file_type().is_ok_and(|k| k.is_dir()) {
            stage_dir(&e.path(), &copy.join(&name), &into.join(&name), staged)?;
        }
    }
    Ok(())
}

/// Stages the kept bytecode of `copy`'s `__pycache__`.
fn stage_cache(kept: &Path, copy: &Path, into: &Path, staged: &mut usize) -> io::Result<()> {
    // A `__pycache__` that is not a directory stays through the check's start (only
    // directories are removed): what is copied there would land where it leads.
    if fs::symlink_metadata(copy.join("__pycache__")).is_ok_and(|m| !m.is_dir()) {
        return Ok(());
    }
    let sources = sources(copy);
    let mut digests: BTreeMap<String, Option<(fs::Metadata, [u8; 32])>> = BTreeMap::new();
    let kept = kept.join("__pycache__");
    for e in fs::read_dir(&kept)?.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(pyc) = name.strip_suffix(".source") else {
            continue;
        };
        let Ok(record) = fs::read(e.path()) else {
            continue;
        };
        let (want, source) = record.split_at(record.len().min(32));
        let Some(source) = std::str::from_utf8(source)
            .ok()
            .filter(|s| only_source(pyc, &sources) == Some(*s))
        else {
            continue;
        };
        let now = digests
            .entry(source.to_string())
            .or_insert_with(|| source_now(&copy.join(source)));
        let Some((meta, digest)) = now else { continue };
        if digest[..] != *want {
            continue;
        }
        let Ok(mut bytes) = fs::read(kept.join(pyc)) else {
            continue;
        };
        // The copy's source's time and size: it was compiled from its bytes.
        if timed(&bytes) {
            bytes[8..16].copy_from_slice(&stamp(meta));
        }
        fs::create_dir_all(into)?;
        fs::write(into.join(pyc), &bytes)?;
        *staged += 1;
    }
    Ok(())
}

/// The names of the Python sources in `dir`, whatever kind of file each is.
fn sources(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with(".py"))
        .collect()
}

/// The one source of `sources` a bytecode file named `pyc` can be the bytecode of:
/// Python and pytest name it after the source (`m.v2.py`:
/// `m.v2.cpython-311.pyc`, `m.v2.cpython-311-pytest-9.2.0.pyc`). None when no source
/// or several fit (`m.py` and `m.v2.py` both fit `m.v2.cpython-311.pyc`).
fn only_source<'a>(pyc: &str, sources: &'a [String]) -> Option<&'a str> {
    let mut fits = sources.iter().filter(|s| {
        let stem = &s[..s.len() - 3];
        pyc.len() > stem.len() + 5
            && pyc.starts_with(stem)
            && pyc.as_bytes()[stem.len()] == b'.'
            && pyc.ends_with(".pyc")
    });
    let one = fits.next()?;
    fits.next().is_none().then_some(one.as_str())
}

/// Whether `dir` is a directory, not a link to one.
fn real_dir(dir: &Path) -> bool {
    fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir())
}

/// The source at `path` when it is a regular file (not a link): what it is, and the
/// SHA-256 of its bytes.
fn source_now(path: &Path) -> Option<(fs::Metadata, [u8; 32])> {
    let meta = fs::symlink_metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    let bytes = agentloop_ground::fsutil::read_regular(path, MOST_KEPT).ok()?;
    Some((meta, Sha256::digest(bytes).into()))
}

/// Whether bytecode is checked by its source's time and size (flags 0), which its
/// header's next eight bytes hold ([`stamp`]); else by a hash, or not at all.
fn timed(pyc: &[u8]) -> bool {
    pyc.len() >= 16 && pyc[4..8] == [0; 4]
}

/// A source's time and size as a bytecode header records them (each modulo 2³²).
fn stamp(source: &fs::Metadata) -> [u8; 8] {
    let mut b = [0; 8];
    b[..4].copy_from_slice(&(source.mtime() as u32).to_le_bytes());
    b[4..].copy_from_slice(&(source.len() as u32).to_le_bytes());
    b
}

/// Removes the stage at `dir`; an error if anything of it is left (what an earlier
/// check was staged must never be bound for the next).
fn remove(dir: &Path) -> io::Result<()> {
    agentloop_ground::fsutil::remove_all(dir);
    match fs::symlink_metadata(dir) {
        Ok(_) => Err(io::Error::other(format!("{} is left", dir.display()))),
        Err(_) => Ok(()),
    }
}

/// As `fsutil::write_atomic`, without its fsyncs: a seed lives as long as its run,
/// and a kill (not a power cut) cannot tear a file renamed into place.
fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp-{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let mut f = fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    drop(f);
    fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests;
