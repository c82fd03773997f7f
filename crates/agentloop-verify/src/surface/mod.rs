//! The verification surface: every file that decides whether a task is done, found by
//! rules, recorded by content (git blobs, written to the object store so they can be
//! put back) and compared with that baseline before a claimed task is verified.
//!
//! What belongs to it (see `docs/SECURITY.md`):
//! - `[verify] protected`, the run's plan file, `agentloop.toml`;
//! - CI configuration (`.github/workflows/`, `.gitlab-ci.yml`, `.circleci/`, …);
//! - the files and directories a `Verify:` command names (`sh tests/t1.sh`,
//!   `cargo test --test it` → `tests/it.rs` and `tests/it/`), and the programs it runs
//!   when they live in the project;
//! - test files by convention: `tests/`, `test/`, `spec/`, `__tests__/` anywhere,
//!   `*_test.go`, `test_*.py`, `*_test.py`, `*.test.*`, `*.spec.*` (Rust `#[cfg(test)]`
//!   modules inside source files are left out: they are the code under work);
//! - files that configure or intercept the checks, which count even when new: see
//!   [`agentloop_project::CHECK_FILES`], the test sections of `pyproject.toml`, `setup.cfg`, `tox.ini` and
//!   `package.json`, a Makefile when a check runs `make`, and `[verify] check_files`.
//!
//! `.agentloop/` is not hashed here: the journal authenticates itself.

mod gitdir;
mod grow;
mod keep;
mod memory;
mod model;
mod stamp;
mod traced;
mod watch;

use std::collections::BTreeMap;
use std::path::Path;

use agentloop_exec::git::{git_command as git, run_git as run};
use agentloop_journal::{Baseline, ChangeKind, SurfaceChange, SurfaceFile};
use agentloop_project::{Project, check_section, is_git_file, is_sectioned};

pub use grow::grow;
pub use keep::{blob, mend};
pub use memory::{Checked, Remembered};
pub use model::learn;
pub use stamp::{Stamp, Stat};
pub use traced::{TaskFiles, TreeFiles, harness_of, traced, tree_files, would_load};
pub use watch::SurfaceWatch;

/// The project's files: tracked ones and untracked ones not ignored.
pub fn project_files(root: &Path) -> Result<Vec<String>, String> {
    let mut c = git(root);
    c.args(["ls-files", "-z", "-c", "-o", "--exclude-standard"]);
    let out = run(c, None)?;
    let mut files: Vec<String> = out
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    files.sort();
    files.dedup();
    Ok(files)
}

/// The mode git would record for a file (`None`: it is not there).
fn mode_of(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    let m = std::fs::symlink_metadata(path).ok()?;
    Some(if m.file_type().is_symlink() {
        0o120000
    } else if !m.is_file() {
        return None;
    } else if m.permissions().mode() & 0o111 != 0 {
        0o100755
    } else {
        0o100644
    })
}

/// Blob ids of files (written to the object store); symbolic links hash as their
/// target's name, as git stores them.
fn hash(root: &Path, paths: &[&str]) -> Result<Vec<String>, String> {
    let (links, files): (Vec<&str>, Vec<&str>) = paths
        .iter()
        .partition(|p| mode_of(&root.join(p)) == Some(0o120000));
    let mut ids = BTreeMap::new();
    if !files.is_empty() {
        let mut c = git(root);
        c.args(["hash-object", "-w", "--no-filters", "--stdin-paths"]);
        let input = files.join("\n") + "\n";
        let out = run(c, Some(input.as_bytes()))?;
        for (p, id) in files.iter().zip(String::from_utf8_lossy(&out).lines()) {
            ids.insert(*p, id.to_string());
        }
    }
    for p in links {
        let target = std::fs::read_link(root.join(p)).map_err(|e| format!("{p}: {e}"))?;
        let mut c = git(root);
        c.args(["hash-object", "-w", "--stdin"]);
        let out = run(c, Some(target.as_os_str().as_encoded_bytes()))?;
        ids.insert(p, String::from_utf8_lossy(&out).trim().to_string());
    }
    paths
        .iter()
        .map(|p| ids.remove(p).ok_or_else(|| format!("{p}: not hashed")))
        .collect()
}

/// Records the surface of the tree as it is now.
pub fn record(root: &Path, project: &Project) -> Result<Baseline, String> {
    let files = project_files(root)?;
    let mut members: Vec<(&str, String, u32)> = Vec::new();
    for f in &files {
        if let Some(why) = project.classify(f)
            && let Some(mode) = mode_of(&root.join(f))
        {
            members.push((f, why, mode));
        }
    }
    let git_files = gitdir::git_files(root);
    for (f, why) in &git_files {
        if let Some(mode) = mode_of(&root.join(f)) {
            members.push((f, why.clone(), mode));
        }
    }
    let paths: Vec<&str> = members.iter().map(|m| m.0).collect();
    let blobs = hash(root, &paths)?;
    // agentloop's own copy of the baseline, read back instead of the project's
    // object database.
    let pairs: Vec<(&str, &str)> = paths
        .iter()
        .copied()
        .zip(blobs.iter().map(String::as_str))
        .collect();
    keep::keep(root, &pairs)?;
    Ok(members
        .into_iter()
        .zip(blobs)
        .map(|((path, why, mode), blob)| (path.to_string(), SurfaceFile { blob, mode, why }))
        .collect())
}

/// [`check`], and when it finds nothing changed a [`Stamp`] of what it saw (`head`:
/// the work tree's HEAD, as a snapshot taken before the check saw it), from statuses
/// read before anything was hashed.
pub fn check_stamped(
    root: &Path,
    base: &Baseline,
    project: &Project,
    head: Option<String>,
) -> Result<(Vec<SurfaceChange>, Option<Stamp>), String> {
    let statuses = stamp::Statuses::read(root, base);
    let changes = check(root, base, project)?;
    let stamp = changes
        .is_empty()
        .then(|| Stamp::new(head, project, base, &statuses))
        .flatten();
    Ok((changes, stamp))
}

/// What differs from the baseline: files of it modified or deleted, and new files that
/// configure the checks. A sectioned file whose test section is unchanged is not a
/// change.
pub fn check(
    root: &Path,
    base: &Baseline,
    project: &Project,
) -> Result<Vec<SurfaceChange>, String> {
    let files = project_files(root)?;
    let present: Vec<&str> = base
        .keys()
        .map(String::as_str)
        .filter(|p| mode_of(&root.join(p)).is_some())
        .collect();
    let git_files = gitdir::git_files(root);
    let added: Vec<(&str, String)> = files
        .iter()
        .filter(|f| !base.contains_key(*f))
        .filter_map(|f| project.added_intercepts(f).map(|why| (f.as_str(), why)))
        .chain(
            git_files
                .iter()
                .filter(|(f, _)| !base.contains_key(f))
                .map(|(f, why)| (f.as_str(), why.clone())),
        )
        .collect();
    let all: Vec<&str> = present
        .iter()
        .copied()
        .chain(added.iter().map(|a| a.0))
        .collect();
    let blobs: BTreeMap<&str, String> = all.iter().copied().zip(hash(root, &all)?).collect();
    let now = |p: &str| -> Option<SurfaceFile> {
        Some(SurfaceFile {
            blob: blobs.get(p)?.clone(),
            mode: mode_of(&root.join(p))?,
            why: String::new(),
        })
    };
    // A worktree's git files are its main repository's: they are checked there.
    let own_git = root.join(".git").is_dir();
    let mut changes = Vec::new();
    for (path, was) in base {
        if is_git_file(path) && !own_git {
            continue;
        }
        let after = now(path).map(|f| SurfaceFile {
            why: was.why.clone(),
            ..f
        });
        let kind = match &after {
            None => ChangeKind::Deleted,
            Some(a) if a.blob == was.blob && a.mode == was.mode => continue,
            Some(a) if a.mode == was.mode && same_section(root, path, &was.blob, &a.blob) => {
                continue;
            }
            Some(_) => ChangeKind::Modified,
        };
        changes.push(SurfaceChange {
            path: path.clone(),
            kind,
            why: was.why.clone(),
            before: Some(was.clone()),
            after,
            diff: String::new(),
        });
    }
    for (path, why) in added {
        let Some(after) = now(path).map(|f| SurfaceFile {
            why: why.clone(),
            ..f
        }) else {
            continue;
        };
        // A link's content is where it points, not a section: it counts as a change.
        if is_sectioned(path)
            && after.mode != 0o120000
            && blob(root, &after.blob)
                .is_ok_and(|b| check_section(path, &b) == check_section(path, b""))
        {
            continue;
        }
        changes.push(SurfaceChange {
            path: path.to_string(),
            kind: ChangeKind::Added,
            why,
            before: None,
            after: Some(after),
            diff: String::new(),
        });
    }
    for c in &mut changes {
        c.diff = diff(root, c);
    }
    // What a person may approve is kept too: it becomes the baseline.
    let after: Vec<(&str, &str)> = changes
        .iter()
        .filter_map(|c| Some((c.path.as_str(), c.after.as_ref()?.blob.as_str())))
        .collect();
    keep::keep(root, &after)?;
    Ok(changes)
}

fn same_section(root: &Path, path: &str, a: &str, b: &str) -> bool {
    if !is_sectioned(path) {
        return false;
    }
    match (blob(root, a), blob(root, b)) {
        (Ok(x), Ok(y)) => check_section(path, &x) == check_section(path, &y),
        _ => false,
    }
}

/// Bytes of diff kept per change.
const DIFF_CAP: usize = 8 * 1024;

/// The unified diff of a change (blob to blob, in the repository), capped.
pub fn diff(root: &Path, c: &SurfaceChange) -> String {
    let empty = || {
        let mut h = git(root);
        h.args(["hash-object", "-w", "--stdin"]);
        run(h, Some(b"")).map(|o| String::from_utf8_lossy(&o).trim().to_string())
    };
    let side = |f: &Option<SurfaceFile>| match f {
        Some(f) => Ok(f.blob.clone()),
        None => empty(),
    };
    let (Ok(a), Ok(b)) = (side(&c.before), side(&c.after)) else {
        return String::new();
    };
    let mut cmd = git(root);
    cmd.args(["diff", "--no-color", "--no-ext-diff", "-U3", &a, &b]);
    let Ok(out) = run(cmd, None) else {
        return String::new();
    };
    let text = String::from_utf8_lossy(&out);
    // Name the file, not the blobs.
    let body: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("@@") && !l.starts_with("Binary"))
        .collect();
    let mut shown = format!("--- a/{p}\n+++ b/{p}\n{}", body.join("\n"), p = c.path);
    if shown.len() > DIFF_CAP {
        let mut cut = DIFF_CAP;
        while !shown.is_char_boundary(cut) {
            cut -= 1;
        }
        shown.truncate(cut);
        shown.push_str("\n… (diff cut)");
    }
    shown
}

/// Puts the baseline versions of `changes` back: modified and deleted files get their
/// recorded content and mode, added ones are removed.
pub fn restore(root: &Path, changes: &[SurfaceChange]) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    for c in changes {
        let path = root.join(&c.path);
        match &c.before {
            None => match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(format!("{}: {e}", c.path)),
            },
            Some(f) => {
                let bytes = blob(root, &f.blob)?;
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", c.path))?;
                }
                if std::fs::symlink_metadata(&path).is_ok() {
                    std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", c.path))?;
                }
                if f.mode == 0o120000 {
                    use std::os::unix::ffi::OsStrExt;
                    let target = std::ffi::OsStr::from_bytes(&bytes);
                    std::os::unix::fs::symlink(target, &path)
                        .map_err(|e| format!("{}: {e}", c.path))?;
                    continue;
                }
                std::fs::write(&path, &bytes).map_err(|e| format!("{}: {e}", c.path))?;
                let mode = if f.mode == 0o100755 { 0o755 } else { 0o644 };
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
                    .map_err(|e| format!("{}: {e}", c.path))?;
            }
        }
    }
    Ok(())
}
