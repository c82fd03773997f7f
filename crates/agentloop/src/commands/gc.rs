//! `agentloop gc`: what finished runs left behind — worktrees and their branches, clean
//! copies, the refs of failed attempts — and what is left of runs that no longer exist. A run that may still go on
//! (interrupted, waiting) keeps its worktrees: `resume` needs them.

use agentloop_exec::worktree;
use agentloop_ground::words::{bytes, plural};
use agentloop_workspace::{Workspace, registered_runs};

use crate::error::{CliError, ExitKind};

pub fn gc(ws: &Workspace, dry_run: bool) -> Result<ExitKind, CliError> {
    let (Some(cache), Some(judge)) = (
        agentloop_ground::fsutil::cache_dir(),
        agentloop_ground::fsutil::judge_dir(),
    ) else {
        return Err(CliError::user(
            "no cache or state directory: set HOME, or XDG_CACHE_HOME and XDG_STATE_HOME",
        ));
    };
    // Where runs leave what gc sweeps: the agents' worktrees and tools' caches (the
    // cache), the judges' copies and worktrees (the state directory), and the clean
    // copies of versions before 0.1.0's stop 65, which lived in the cache.
    let places = [
        (&cache, "worktrees"),
        (&cache, "agent-caches"),
        (&judge, "worktrees"),
        (&judge, "checkouts"),
        (&cache, "checkouts"),
    ];
    let known: Vec<String> = registered_runs().into_iter().map(|r| r.id).collect();
    let mut freed = 0u64;
    let mut removed = Vec::new();
    // This project's finished runs.
    for id in ws.run_ids() {
        let run = ws.resolve(Some(&id))?;
        let Ok(loaded) = run.load_cached() else {
            continue;
        };
        let s = &loaded.state;
        if !s.is_finished() {
            continue;
        }
        // The run's worktrees, and its clean copies with their index files (the run's
        // own, `ID`, and each task's, `ID-TASK`).
        let mut mine: Vec<(&std::path::PathBuf, String)> = Vec::new();
        for (base, kind) in places {
            if kind == "worktrees" {
                mine.push((base, format!("worktrees/{id}")));
                continue;
            }
            mine.extend(
                entries(&base.join(kind))
                    .into_iter()
                    .filter(|n| owner(n, std::slice::from_ref(&id)).is_some())
                    .map(|n| (base, format!("{kind}/{n}"))),
            );
        }
        for (base, place) in mine {
            let dir = base.join(&place);
            if std::fs::symlink_metadata(&dir).is_err() {
                continue;
            }
            freed += worktree::dir_size(&dir);
            removed.push(place.clone());
            if dry_run {
                continue;
            }
            // Agents a killed driver left at work there go first.
            let ended = agentloop_exec::reap::end_processes_in(&dir);
            if ended > 0 {
                removed.push(format!(
                    "{} left at work in {place}",
                    plural(ended, "process", "processes")
                ));
            }
            match &s.integration {
                Some(i) if place.starts_with("worktrees/") => {
                    worktree::remove_run(&ws.root, &id, &i.branch)
                }
                // (A directory an agent locked, `chmod 000`, goes too.)
                _ if dir.is_dir() => agentloop_exec::sandbox::remove_all(&dir),
                _ => {
                    let _ = std::fs::remove_file(&dir);
                }
            }
        }
        if let Some(i) = &s.integration
            && !dry_run
        {
            // Task branches a crash left (the integration branch is the run's result).
            for task in &s.tasks {
                let branch = worktree::task_branch(&i.branch, &task.id);
                if worktree::rev(&ws.root, &format!("refs/heads/{branch}")).is_some() {
                    worktree::remove_task(&ws.root, &id, &i.branch, &task.id);
                    removed.push(format!("branch {branch}"));
                }
            }
        }
    }
    // The refs agentloop kept for runs (failed attempts off every branch, executors'
    // results): a finished run's, and those of runs this project no longer has.
    let runs = ws.run_ids();
    for (id, refs) in worktree::kept_refs(&ws.root) {
        let finished = runs.contains(&id)
            && ws
                .resolve(Some(&id))
                .ok()
                .and_then(|r| r.load_cached().ok())
                .is_some_and(|l| l.state.is_finished());
        if runs.contains(&id) && !finished {
            continue;
        }
        removed.push(format!(
            "refs/agentloop/{id}/ ({}: failed attempts and results{})",
            plural(refs.len(), "ref", "refs"),
            if finished { "" } else { "; its run is gone" }
        ));
        if !dry_run {
            worktree::remove_refs(&ws.root, &refs);
        }
    }
    // Runs whose creation a kill cut short: a directory with no record in it.
    for dir in ws.unmade_runs(std::time::Duration::from_secs(600)) {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        freed += worktree::dir_size(&dir);
        removed.push(format!(
            "run {name} (never made: its creation was cut short)"
        ));
        if !dry_run {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    // What runs no longer on this machine left.
    for (base, kind) in places {
        for name in entries(&base.join(kind)) {
            if owner(&name, &known).is_some() {
                continue;
            }
            let path = base.join(kind).join(&name);
            freed += worktree::dir_size(&path);
            removed.push(format!("{kind}/{name} (its run is gone)"));
            if !dry_run {
                if path.is_dir() {
                    agentloop_exec::sandbox::remove_all(&path);
                } else {
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
    }
    // The index lock a killed git of agentloop's left in the project (a person's
    // lock has no mark of agentloop's and stays).
    if let Some(lock) = agentloop_exec::index_mark::stale(&ws.root) {
        let shown = lock
            .strip_prefix(&ws.root)
            .unwrap_or(&lock)
            .display()
            .to_string();
        if dry_run {
            removed.push(format!("{shown} (left by a killed git of agentloop's)"));
        } else {
            match agentloop_exec::index_mark::clear(&ws.root) {
                Ok(Some(_)) => {
                    removed.push(format!("{shown} (left by a killed git of agentloop's)"))
                }
                Ok(None) => {}
                Err(e) => crate::render::warn(&e),
            }
        }
    }
    if !dry_run {
        worktree::repair(&ws.root);
    }
    if removed.is_empty() {
        eprintln!("agentloop gc: nothing to remove");
        return Ok(ExitKind::Completed);
    }
    for r in &removed {
        outln!("{}{r}", if dry_run { "would remove " } else { "removed " });
    }
    eprintln!(
        "agentloop gc: {} {}, {}",
        if dry_run { "would remove" } else { "removed" },
        plural(removed.len(), "item", "items"),
        bytes(freed)
    );
    Ok(ExitKind::Completed)
}

/// The names in a directory of the cache.
fn entries(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The run of `known` a cache entry belongs to: `ID`, `ID.index`, `ID-TASK`,
/// `ID-TASK.index`.
fn owner<'a>(name: &str, known: &'a [String]) -> Option<&'a String> {
    // A clean copy's index file, the run's build caches' seed (`.go-build` before stop
    // 77: Go's alone), its Python bytecode and the stage of it.
    let name = name.strip_suffix(".index").unwrap_or(name);
    let name = name.strip_suffix(".caches").unwrap_or(name);
    let name = name.strip_suffix(".go-build").unwrap_or(name);
    let name = name.strip_suffix(".python.stage").unwrap_or(name);
    let name = name.strip_suffix(".python").unwrap_or(name);
    known.iter().find(|id| {
        name == id.as_str()
            || name
                .strip_prefix(id.as_str())
                .is_some_and(|rest| rest.starts_with('-'))
    })
}
