//! `agentloop land`: a run's integration branch onto the branch checked out here — a
//! fast-forward, or with `--merge` a merge commit when that branch moved — recorded in
//! the run's journal (`landed`).

use agentloop_exec::worktree::{self, Landing};
use agentloop_ground::words::plural;
use agentloop_journal::Event;
use agentloop_workspace::Workspace;

use crate::error::{CliError, ExitKind};

pub fn land(
    ws: &Workspace,
    run: Option<&str>,
    dry_run: bool,
    merge: bool,
) -> Result<ExitKind, CliError> {
    let run = ws.resolve(run)?;
    let loaded = run.load()?;
    let s = &loaded.state;
    let Some(i) = s.integration.clone() else {
        return Err(CliError::user(format!(
            "run {} has no integration branch: it worked in this working tree, so its work is on your branch already",
            run.id
        )));
    };
    if let Some(pid) = run.lock_holder() {
        return Err(CliError::user(format!(
            "run {} is being driven (process {}): land it once it ends",
            run.id,
            pid.trim()
        )));
    }
    // No driver may start while the branch moves and the journal says so.
    let lock = if dry_run {
        None
    } else {
        Some(run.lock_driver()?)
    };
    let done = s
        .tasks
        .iter()
        .filter(|t| t.status == agentloop_journal::TaskStatus::Done)
        .count();
    let what = format!(
        "{} ({} of {} verified)",
        i.branch,
        done,
        plural(s.tasks.len(), "task", "tasks")
    );
    if s.status != agentloop_journal::RunStatus::Completed {
        crate::render::warn(&format!(
            "run {} is {}: what lands is the work verified so far",
            run.id,
            s.status.as_str()
        ));
    }
    let landing =
        worktree::landing(&ws.root, &i.branch, &i.head, &i.base).map_err(CliError::user)?;
    let branch = match &landing {
        // Landed already: by a person, or by a `land` killed before it recorded it
        // (then recorded now, so the run says so).
        Landing::Done { branch } if i.landed || dry_run => {
            outln!("{branch} holds {what} already: nothing to land");
            return Ok(ExitKind::Completed);
        }
        Landing::Done { branch } => {
            outln!("{branch} holds {what} already: recorded as landed");
            branch.clone()
        }
        Landing::FastForward { branch, commits } => {
            if dry_run {
                outln!(
                    "would fast-forward {branch} to {what}: {}",
                    plural(*commits as usize, "commit", "commits")
                );
                return Ok(ExitKind::Completed);
            }
            worktree::fast_forward(&ws.root, branch, &i.branch, &i.head).map_err(CliError::user)?;
            outln!(
                "landed: {branch} fast-forwarded to {what}, {}",
                plural(*commits as usize, "commit", "commits")
            );
            branch.clone()
        }
        Landing::Moved { branch, head } if !merge => {
            return Err(CliError::user(format!(
                "{branch} moved since run {} started ({} → {}): landing it would take more than a fast-forward",
                run.id,
                &i.base[..i.base.len().min(10)],
                &head[..head.len().min(10)]
            ))
            .hint(format!(
                "`agentloop land --merge` merges {} into {branch} with a merge commit (`--dry-run` first to see)",
                i.branch
            )));
        }
        Landing::Moved { branch, .. } => {
            if dry_run {
                outln!("would merge {what} into {branch} with a merge commit");
                return Ok(ExitKind::Completed);
            }
            worktree::merge_into(
                &ws.root,
                branch,
                &i.branch,
                &i.head,
                &format!("Merge agentloop run {} ({})", run.id, i.branch),
            )
            .map_err(CliError::user)?;
            outln!("landed: {what} merged into {branch}");
            branch.clone()
        }
    };
    // The run's journal says it landed (status, the dashboard, the handoff).
    let mut w = loaded.writer(&run)?;
    w.append(&Event::Landed {
        branch,
        commit: i.head.clone(),
    })?;
    drop(lock);
    Ok(ExitKind::Completed)
}
