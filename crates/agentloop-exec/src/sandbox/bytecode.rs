//! Python's bytecode for a run's checks, compiled once: what the baseline's confined
//! checks compiled in the clean copy (the person's code as the run found it), kept
//! beside the copy with the sources it was compiled from, and put back before each
//! later check for the sources that are still byte for byte the same.
//!
//! A confined check starts with the copy's `__pycache__` gone (an earlier check's
//! code could have left bytecode that is not its source's). Without a seed every
//! check compiled every module again, pytest's rewritten test modules too: 25 s
//! against 10 s for a plain run of a 20,000-test suite (docs/PERFORMANCE.md).
//!
//! What decides that a kept file is put back is agentloop's own comparison of the
//! source's bytes, never the interpreter's check of a time and a size (a check's
//! code can set a file's time) or of a 64-bit hash. A file whose source differs, or
//! whose path passes through a link, is compiled by the check as before. Only into
//! the copy the seed was kept from: pytest's rewritten modules keep the path they
//! were compiled at.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The most bytes of bytecode and sources a seed keeps.
const MOST_KEPT: u64 = 512 << 20;

/// Where a confined check's Python bytecode comes from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Bytecode {
    /// None: the check compiles what it imports.
    #[default]
    Compiled,
    /// What the check compiles is kept in this seed afterwards: the baseline's
    /// checks, which run the person's code as the run found it.
    Keeps(PathBuf),
    /// This seed's, for the sources the copy still holds unchanged.
    From(PathBuf),
}

/// Keeps in `seed` the bytecode found in the `__pycache__` directories of `copy`
/// (not under `.git`, not through a link), each file beside the source it was
/// compiled from; what the seed held before stays unless replaced. Returns how many
/// files were kept.
pub fn keep(copy: &Path, seed: &Path) -> io::Result<usize> {
    let tree = seed.join("tree");
    fs::create_dir_all(&tree)?;
    write_atomic(&seed.join("from"), copy.as_os_str().as_encoded_bytes())?;
    let mut budget = MOST_KEPT;
    let mut kept = 0;
    keep_dir(copy, &tree, &mut budget, &mut kept)?;
    Ok(kept)
}

fn keep_dir(dir: &Path, into: &Path, budget: &mut u64, kept: &mut usize) -> io::Result<()> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(());
    };
    for e in entries.flatten() {
        let Ok(kind) = e.file_type() else { continue };
        if !kind.is_dir() || e.file_name() == ".git" {
            continue;
        }
        if e.file_name() == "__pycache__" {
            keep_cache(dir, &e.path(), into, budget, kept)?;
        } else {
            keep_dir(&e.path(), &into.join(e.file_name()), budget, kept)?;
        }
    }
    Ok(())
}

/// Keeps the bytecode of one `__pycache__` (`cache`, in `dir`) whose sources are
/// regular files of `dir`: for each source, its bytecode first, then the source, so
/// that a kill between leaves no source beside bytecode that is not its own.
fn keep_cache(
    dir: &Path,
    cache: &Path,
    into: &Path,
    budget: &mut u64,
    kept: &mut usize,
) -> io::Result<()> {
    let mut by_source: std::collections::BTreeMap<String, Vec<PathBuf>> = Default::default();
    for e in fs::read_dir(cache)?.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(stem) = source_stem(name) else {
            continue;
        };
        if e.file_type().is_ok_and(|k| k.is_file()) {
            by_source
                .entry(stem.to_string())
                .or_default()
                .push(e.path());
        }
    }
    for (stem, pycs) in by_source {
        let source = dir.join(format!("{stem}.py"));
        let Ok(meta) = fs::symlink_metadata(&source) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let sizes: u64 = pycs
            .iter()
            .filter_map(|p| fs::symlink_metadata(p).ok())
            .map(|m| m.len())
            .sum::<u64>()
            + meta.len();
        if sizes > *budget {
            return Ok(());
        }
        *budget -= sizes;
        let kept_source = into.join(format!("{stem}.py"));
        match fs::remove_file(&kept_source) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let kept_cache = into.join("__pycache__");
        fs::create_dir_all(&kept_cache)?;
        for pyc in &pycs {
            let Some(name) = pyc.file_name() else {
                continue;
            };
            write_atomic(&kept_cache.join(name), &fs::read(pyc)?)?;
            *kept += 1;
        }
        write_atomic(&kept_source, &fs::read(&source)?)?;
    }
    Ok(())
}

/// The module a bytecode file's name is of (`test_x.cpython-311-pytest-9.2.0.pyc`:
/// `test_x`).
fn source_stem(name: &str) -> Option<&str> {
    let stem = name.strip_suffix(".pyc")?.split_once('.')?.0;
    (!stem.is_empty()).then_some(stem)
}

fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp-{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let mut f = fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    drop(f);
    fs::rename(&tmp, path)
}

/// Fills `stage` (emptied first) with the bytecode of `seed` whose sources `copy`
/// still holds byte for byte, at the paths it goes to in the copy, each file's
/// recorded time and size those of the copy's source. Nothing when `copy` is not
/// the copy the seed was kept from. Returns how many files were staged.
pub fn stage(seed: &Path, copy: &Path, stage: &Path) -> io::Result<usize> {
    match fs::remove_dir_all(stage) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let from = fs::read(seed.join("from")).unwrap_or_default();
    if from != copy.as_os_str().as_encoded_bytes() {
        return Ok(0);
    }
    fs::create_dir_all(stage)?;
    let mut staged = 0;
    stage_dir(&seed.join("tree"), copy, stage, &mut staged)?;
    Ok(staged)
}

fn stage_dir(kept: &Path, copy: &Path, stage: &Path, staged: &mut usize) -> io::Result<()> {
    // The copy's directory must be a directory, not a link to one.
    if !fs::symlink_metadata(copy).is_ok_and(|m| m.is_dir()) {
        return Ok(());
    }
    let Ok(entries) = fs::read_dir(kept) else {
        return Ok(());
    };
    for e in entries.flatten() {
        let name = e.file_name();
        if name == "__pycache__" {
            stage_cache(kept, copy, &stage.join("__pycache__"), staged)?;
        } else if e.file_type().is_ok_and(|k| k.is_dir()) {
            stage_dir(&e.path(), &copy.join(&name), &stage.join(&name), staged)?;
        }
    }
    Ok(())
}

fn stage_cache(kept: &Path, copy: &Path, into: &Path, staged: &mut usize) -> io::Result<()> {
    // A `__pycache__` that is not a directory stays through the check's start (only
    // directories are removed): what is copied there would land where it leads.
    if fs::symlink_metadata(copy.join("__pycache__")).is_ok_and(|m| !m.is_dir()) {
        return Ok(());
    }
    let mut same: std::collections::BTreeMap<String, Option<fs::Metadata>> = Default::default();
    for e in fs::read_dir(kept.join("__pycache__"))?.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(stem) = source_stem(name) else {
            continue;
        };
        let source = same.entry(stem.to_string()).or_insert_with(|| {
            unchanged(
                &kept.join(format!("{stem}.py")),
                &copy.join(format!("{stem}.py")),
            )
        });
        let Some(meta) = source else { continue };
        let mut bytes = fs::read(e.path())?;
        // Bytecode checked by its source's time and size (flags 0): those of the
        // copy's source, which is what it was compiled from.
        if bytes.len() >= 16 && bytes[4..8] == [0; 4] {
            bytes[8..12].copy_from_slice(&(meta.mtime() as u32).to_le_bytes());
            bytes[12..16].copy_from_slice(&(meta.len() as u32).to_le_bytes());
        }
        fs::create_dir_all(into)?;
        fs::write(into.join(name), &bytes)?;
        *staged += 1;
    }
    Ok(())
}

/// The copy's source when it is a regular file holding what `kept` holds.
fn unchanged(kept: &Path, copy: &Path) -> Option<fs::Metadata> {
    let meta = fs::symlink_metadata(copy).ok()?;
    if !meta.is_file() || meta.len() != fs::symlink_metadata(kept).ok()?.len() {
        return None;
    }
    (fs::read(kept).ok()? == fs::read(copy).ok()?).then_some(meta)
}

#[cfg(test)]
mod tests;
