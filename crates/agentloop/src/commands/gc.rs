//! `agentloop gc`: what finished runs left behind — worktrees and their branches, clean
//! copies — and what is left of runs that no longer exist. A run that may still go on
//! (interrupted, waiting) keeps its worktrees: `resume` needs them.

use agentloop_core::exec::worktree;
use agentloop_core::words::{bytes, plural};
use agentloop_core::workspace::{Workspace, registered_runs};

use crate::error::{CliError, ExitKind};

pub fn gc(ws: &Workspace, dry_run: bool) -> Result<ExitKind, CliError> {
    let Some(cache) = agentloop_core::fsutil::cache_dir() else {
        return Err(CliError::user(
            "no cache directory: set HOME or XDG_CACHE_HOME",
        ));
    };
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
        for kind in ["worktrees", "checkouts"] {
            let dir = cache.join(kind).join(&id);
            if dir.exists() {
                freed += worktree::dir_size(&dir);
                removed.push(format!("{kind}/{id}"));
                if dry_run {
                    continue;
                }
                // Agents a killed driver left at work there go first.
                let ended = agentloop_core::exec::reap::end_processes_in(&dir);
                if ended > 0 {
                    removed.push(format!(
                        "{} left at work in {kind}/{id}",
                        plural(ended, "process", "processes")
                    ));
                }
                match (&s.integration, kind) {
                    (Some(i), "worktrees") => worktree::remove_run(&ws.root, &id, &i.branch),
                    _ => {
                        let _ = std::fs::remove_dir_all(&dir);
                    }
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
    // What runs no longer on this machine left in the cache.
    for kind in ["worktrees", "checkouts"] {
        for e in std::fs::read_dir(cache.join(kind))
            .into_iter()
            .flatten()
            .flatten()
        {
            let id = e.file_name().to_string_lossy().into_owned();
            if known.contains(&id) {
                continue;
            }
            freed += worktree::dir_size(&e.path());
            removed.push(format!("{kind}/{id} (its run is gone)"));
            if !dry_run {
                let _ = std::fs::remove_dir_all(e.path());
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
