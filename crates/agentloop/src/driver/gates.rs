//! The diff gates' reading of git: what a range of commits changed, as the policy's
//! `DiffInput`, for the shipped pull request or, in a run without a forge, for each
//! done task's commit.

use std::path::Path;

use agentloop_core::journal::Event;
use agentloop_core::policy::{DiffInput, parse_unified};

use super::Driver;
use super::ship::git;
use crate::error::CliError;

/// What `to` changed since `from` (`three_dot`: since where `to` forked off `from`),
/// with the names at the top of `from`'s tree.
pub(crate) fn read_diff(
    root: &Path,
    from: &str,
    to: &str,
    three_dot: bool,
) -> Result<DiffInput, String> {
    let range = if three_dot {
        format!("{from}...{to}")
    } else {
        format!("{from}..{to}")
    };
    let diff = git(
        root,
        &[
            "diff",
            "--unified=0",
            "--no-color",
            "--no-renames",
            "--no-ext-diff",
            &range,
        ],
    )?;
    let base_top = git(root, &["ls-tree", "--name-only", from])?
        .lines()
        .map(String::from)
        .collect();
    Ok(DiffInput {
        files: parse_unified(&diff),
        base_top,
    })
}

impl Driver {
    /// A run without a forge: what the done task's commit changed, gate by gate. In a
    /// run with workers the commit is the task's merge onto the integration branch
    /// (its first parent is where it went); else the task is measured from the HEAD
    /// its first iteration began at.
    pub(crate) fn check_task_diff(&mut self, task: &str) -> Result<(), CliError> {
        let Some(t) = self.state.task(task) else {
            return Ok(());
        };
        let Some(commit) = t.commit.clone() else {
            return Ok(());
        };
        let from = match &t.head_at_start {
            Some(h) if !self.state.settings.in_worktrees() => h.clone(),
            _ => format!("{commit}^1"),
        };
        let triggered = read_diff(&self.ws.root, &from, &commit, false)
            .map(|input| agentloop_core::policy::triggered(&self.state.settings.gates, &input));
        let triggered = match triggered {
            Ok(t) => t,
            Err(e) => {
                // A diff that cannot be read holds the task as if every gate triggered:
                // a gate is never passed by not looking.
                self.progress.warn(&format!(
                    "cannot read what task {task} changed ({e}); holding it for review"
                ));
                agentloop_core::policy::ORDER
                    .iter()
                    .filter(|g| gate_enabled(&self.state.settings.gates, g))
                    .map(|g| agentloop_core::policy::Trigger {
                        gate: g.to_string(),
                        file: "(unread)".into(),
                        line: None,
                        why: format!("its diff could not be read: {e}"),
                    })
                    .collect()
            }
        };
        self.record(Event::TaskDiffChecked {
            task: task.to_string(),
            commit,
            triggered,
        })
    }
}

fn gate_enabled(gates: &agentloop_core::values::Gates, name: &str) -> bool {
    match name {
        "security" => gates.security.enabled,
        "database" => gates.database.enabled,
        "external" => gates.external.enabled,
        "architecture" => gates.architecture.enabled,
        _ => false,
    }
}
