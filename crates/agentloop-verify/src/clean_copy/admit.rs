//! What of the agent's added files reaches a judge's copy, as the run stands: the
//! project model's admission (`agentloop_project::admit`) over the files of the tree
//! the run was created on. One function for every judge that builds a copy — the
//! driver, a worker's checks, a hook-mode run's resident — so that they agree.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentloop_journal::{LeftOut, RunState};
use agentloop_project::Admission;

/// Which of the files an agent added reach the judge's copy for a verification of
/// the work of every done task and of `tasks`; `None` where nothing is kept out (a run
/// with no baseline, or whose first tree is not known), or the first tree cannot be
/// listed (said by `Err`).
pub fn admission(
    state: &RunState,
    root: &Path,
    tasks: &[&str],
) -> Result<Option<Admission>, String> {
    state.baseline.as_ref().map_or(Ok(None), |_| {
        let Some(tree) = state.tree_at_create.as_deref() else {
            return Ok(None);
        };
        let created = files_of_tree(root, tree)?;
        Ok(state.admission(root, created, tasks))
    })
}

/// The paths of `tree` (the one a run was created on: what an agent added is what is
/// not among them), listed once per process and tree.
pub fn files_of_tree(root: &Path, tree: &str) -> Result<Arc<BTreeSet<String>>, String> {
    type Listed = (PathBuf, String, Arc<BTreeSet<String>>);
    static KNOWN: std::sync::Mutex<Vec<Listed>> = std::sync::Mutex::new(Vec::new());
    let mut known = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, files)) = known.iter().find(|(r, t, _)| r == root && t == tree) {
        return Ok(files.clone());
    }
    let files = Arc::new(
        crate::surface::tree_files(root, tree)?
            .into_keys()
            .collect::<BTreeSet<String>>(),
    );
    // A few trees at most live in one process (a run's, a queue's next run's).
    if known.len() >= 8 {
        known.remove(0);
    }
    known.push((root.to_path_buf(), tree.to_string(), files.clone()));
    Ok(files)
}

/// Takes out of the checkout at `dir` (a worktree of the run's own: the merge
/// worktree, VALIDATE's) the files `admission` keeps out, before checks run there; a
/// checkout of it with `-f` puts them back. With what it let in because the work
/// writes tests.
pub fn leave_out_in(
    dir: &Path,
    admission: &Admission,
) -> Result<(Vec<LeftOut>, Vec<String>), String> {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let mut c = agentloop_exec::git::git_command(dir);
    c.args(["ls-files", "-s", "-z"]);
    let listed = entries(&agentloop_exec::git::run_git(c, None)?);
    let at = |e: &Entry| dir.join(std::ffi::OsStr::from_bytes(&e.path));
    let out = kept_out(&listed, admission, |e| {
        std::fs::read_link(at(e))
            .ok()
            .map(|t| t.into_os_string().into_vec())
    });
    let mut left = Vec::with_capacity(out.len());
    for (raw, l) in out {
        let path = dir.join(std::ffi::OsStr::from_bytes(&raw));
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("{}: {e}", l.path)),
        }
        left.push(l);
    }
    Ok((left, admitted(&listed, admission)))
}

/// The entries (by UTF-8 name) `admission` lets in because the work writes tests.
pub(super) fn admitted(entries: &[Entry], admission: &Admission) -> Vec<String> {
    let mut out: Vec<String> = entries
        .iter()
        .filter_map(|e| std::str::from_utf8(&e.path).ok())
        .filter(|p| admission.admitted(p))
        .map(str::to_string)
        .collect();
    out.sort();
    out
}

/// One entry of a tree to judge: its path as git has it (any bytes), its mode, its
/// object.
pub(super) struct Entry {
    pub path: Vec<u8>,
    pub mode: u32,
    pub blob: String,
}

/// `git ls-files -s -z` output as entries (stage 0 only).
pub(super) fn entries(out: &[u8]) -> Vec<Entry> {
    out.split(|b| *b == 0)
        .filter_map(|e| {
            let tab = e.iter().position(|b| *b == b'\t')?;
            let info = std::str::from_utf8(&e[..tab]).ok()?;
            let mut f = info.split(' ');
            let (mode, blob, stage) = (f.next()?, f.next()?, f.next()?);
            let mode = u32::from_str_radix(mode, 8).ok()?;
            (stage == "0").then(|| Entry {
                path: e[tab + 1..].to_vec(),
                mode,
                blob: blob.to_string(),
            })
        })
        .collect()
}

/// The entries `admission` keeps out, each with what is said of it. Beyond what it
/// says of each path: a name that is not UTF-8 the agent added (the rules read
/// names), and a link the agent added to a directory, when through it a file would
/// stand where a rule keeps it out (`evil.dist-info` → `meta/`, `checks.d` →
/// `hooks/`), or to a place outside the tree. `target` gives a link's target.
pub(super) fn kept_out(
    entries: &[Entry],
    admission: &Admission,
    target: impl Fn(&Entry) -> Option<Vec<u8>>,
) -> Vec<(Vec<u8>, LeftOut)> {
    let mut out = Vec::new();
    let names: BTreeSet<&str> = entries
        .iter()
        .filter_map(|e| std::str::from_utf8(&e.path).ok())
        .collect();
    let links: std::collections::HashMap<&[u8], &Entry> = entries
        .iter()
        .filter(|e| e.mode == 0o120000)
        .map(|e| (e.path.as_slice(), e))
        .collect();
    let link = |p: &str| links.get(p.as_bytes()).and_then(|e| target(e));
    for e in entries {
        let Ok(path) = std::str::from_utf8(&e.path) else {
            let lossy = String::from_utf8_lossy(&e.path).into_owned();
            if admission.added(&lossy) {
                out.push((
                    e.path.clone(),
                    LeftOut {
                        path: lossy,
                        why: "its name is not UTF-8: no rule can tell what the checks make of it"
                            .into(),
                    },
                ));
            }
            continue;
        };
        let why = admission.left_out(path).or_else(|| {
            let link_added = e.mode == 0o120000 && admission.added(path);
            if link_added && agentloop_project::is_sectioned(path) {
                // Its test section is read from its own content, which for a link is
                // only where it points (the stop-78 attack's `tox.ini` → `cfg/real.ini`).
                return Some(
                    "a link in place of a file whose test section configures the checks".into(),
                );
            }
            link_added
                .then(|| through_link(path, &target(e)?, &names, admission, &link))
                .flatten()
        });
        if let Some(why) = why {
            out.push((
                e.path.clone(),
                LeftOut {
                    path: path.to_string(),
                    why,
                },
            ));
        }
    }
    out.sort_by(|a, b| a.1.path.cmp(&b.1.path));
    out
}

/// Why an added link at `path` to `target` is kept out, if it is: it leads out of
/// the tree, or through it a file of the tree would stand where a rule keeps it out.
/// Every link along the way is followed, as the file system would (`org` → `hop` →
/// `lib/forge`, `x.dist-info` → `hop/meta` with `hop` → `lib`: the stop-78 attacks),
/// at most [`HOPS`] times.
fn through_link(
    path: &str,
    target: &[u8],
    names: &BTreeSet<&str>,
    admission: &Admission,
    link: &dyn Fn(&str) -> Option<Vec<u8>>,
) -> Option<String> {
    let to = match resolve(path, target, link) {
        Ok(to) => to,
        Err(why) => return Some(why),
    };
    // A link to the tree's root reaches every file of it.
    let prefix = if to.is_empty() {
        String::new()
    } else {
        format!("{to}/")
    };
    names
        .range(prefix.as_str()..)
        .take_while(|f| f.starts_with(&prefix))
        .find_map(|f| {
            let through = format!("{path}/{}", &f[prefix.len()..]);
            admission
                .left_out(&through)
                .map(|why| format!("a link to {to}/: through it, {through}: {why}"))
        })
}

/// Where a link at `path` to `target` leads in the tree, followed as the kernel
/// follows it: one name at a time, each link met along the way replaced by its own
/// target before the next name, so that a `..` leaves where a link led, not the
/// link's name (`hop/../m` with `hop` → `lib/deep` is `lib/m`: the third stop-78
/// attack). Why not, when it leads out of the tree or round in a loop.
fn resolve(
    path: &str,
    target: &[u8],
    link: &dyn Fn(&str) -> Option<Vec<u8>>,
) -> Result<String, String> {
    let mut at: Vec<String> = path.split('/').map(String::from).collect();
    at.pop();
    let mut todo: std::collections::VecDeque<String> = std::collections::VecDeque::new();
    let mut hops = 0;
    let mut follow = |target: &[u8], todo: &mut std::collections::VecDeque<String>| {
        hops += 1;
        if hops > HOPS {
            return Err(format!("a chain of more than {HOPS} links"));
        }
        let Ok(text) = std::str::from_utf8(target) else {
            return Err("a link whose target is not UTF-8".to_string());
        };
        if text.starts_with('/') {
            return Err(format!("a link out of the tree ({text})"));
        }
        for part in text.split('/').rev() {
            todo.push_front(part.to_string());
        }
        Ok(())
    };
    follow(target, &mut todo)?;
    while let Some(part) = todo.pop_front() {
        match part.as_str() {
            "" | "." => {}
            ".." => {
                if at.pop().is_none() {
                    return Err(format!("a link out of the tree (through {path})"));
                }
            }
            _ => {
                at.push(part);
                if let Some(next) = link(&at.join("/")) {
                    at.pop();
                    follow(&next, &mut todo)?;
                }
            }
        }
    }
    Ok(at.join("/"))
}

/// How many links a chain may hold before it counts as a loop (Linux's own bound).
const HOPS: usize = 40;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_is_followed_as_the_kernel_follows_it() {
        let links: std::collections::HashMap<&str, &str> = [
            ("hop", "lib/deep"),
            ("chain", "hop"),
            ("loop", "loop"),
            ("up", ".."),
        ]
        .into_iter()
        .collect();
        let link = |p: &str| links.get(p).map(|t| t.as_bytes().to_vec());
        for (path, target, to) in [
            ("x.dist-info", "meta", Ok("meta")),
            ("a/b", "../c", Ok("c")),
            ("org", "chain", Ok("lib/deep")),
            ("x.dist-info", "hop/meta", Ok("lib/deep/meta")),
            // `..` leaves where the link led, not the link's name.
            ("x.dist-info", "hop/../m", Ok("lib/m")),
            ("x.dist-info", "pkg/..", Ok("")),
            ("x", "loop", Err("a chain of more than 40 links")),
            ("x", "/etc", Err("a link out of the tree (/etc)")),
            ("x", "up", Err("a link out of the tree (through x)")),
        ] {
            assert_eq!(
                resolve(path, target.as_bytes(), &link),
                to.map(String::from).map_err(String::from),
                "{path} -> {target}"
            );
        }
    }
}
