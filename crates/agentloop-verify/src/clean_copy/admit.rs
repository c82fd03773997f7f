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
/// checkout of it with `-f` puts them back.
pub fn leave_out_in(dir: &Path, admission: &Admission) -> Result<Vec<LeftOut>, String> {
    let mut c = agentloop_exec::git::git_command(dir);
    c.args(["ls-files", "-z"]);
    let listed = agentloop_exec::git::run_git(c, None)?;
    let mut out = Vec::new();
    for path in listed.split(|b| *b == 0).filter(|p| !p.is_empty()) {
        let path = String::from_utf8_lossy(path).into_owned();
        let Some(why) = admission.left_out(&path) else {
            continue;
        };
        match std::fs::remove_file(dir.join(&path)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("{path}: {e}")),
        }
        out.push(LeftOut { path, why });
    }
    Ok(out)
}
