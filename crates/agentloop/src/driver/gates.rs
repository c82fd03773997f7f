//! The diff gates' reading of git: what a range of commits changed, as the policy's
//! `DiffInput`, for the shipped pull request or, in a run without a forge, for each
//! done task's commit.

use std::path::Path;

use agentloop_journal::{Event, TaskState};
use agentloop_policy::{DiffInput, parse_unified};

use super::Driver;
use crate::error::CliError;
use agentloop_exec::git::run as git;

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
    /// Where the change task `t` committed as `commit` starts: in a run with workers
    /// the commit is the task's merge onto the integration branch (its first parent is
    /// where it went); else the HEAD its first iteration began at, so commits the agent
    /// made itself count too.
    pub(crate) fn change_from(&self, t: &TaskState, commit: &str) -> String {
        match &t.head_at_start {
            Some(h) if !self.state.settings.in_worktrees() => h.clone(),
            _ => format!("{commit}^1"),
        }
    }

    /// A run without a forge: what the done task's commit changed
    /// ([`Driver::change_from`]), gate by gate. A change that was not committed, or whose diff cannot be read, holds the task for
    /// every gate that is on.
    pub(crate) fn check_task_diff(&mut self, task: &str) -> Result<(), CliError> {
        let Some(t) = self.state.task(task) else {
            return Ok(());
        };
        let commit = t.commit.clone();
        let gates = &self.state.settings.gates;
        let triggered = match &commit {
            None => agentloop_policy::unread(
                gates,
                "its change was not committed, so what it changed is unknown",
            ),
            Some(commit) => {
                let from = self.change_from(t, commit);
                match read_diff(&self.ws.root, &from, commit, false) {
                    Ok(input) => match self
                        .state
                        .plan_task(task)
                        .filter(|_| {
                            self.state
                                .settings
                                .interface_tasks
                                .iter()
                                .any(|i| i == task)
                        })
                        .and_then(agentloop_plan::interface_update)
                    {
                        Some(why) => agentloop_policy::triggered_interface(gates, &input, &why),
                        None => agentloop_policy::triggered(gates, &input),
                    },
                    Err(e) => {
                        self.progress.warn(&format!(
                            "cannot read what task {task} changed ({e}); holding it for review"
                        ));
                        agentloop_policy::unread(gates, &format!("its diff could not be read: {e}"))
                    }
                }
            }
        };
        self.record(Event::TaskDiffChecked {
            task: task.to_string(),
            commit,
            triggered,
        })
    }
}
