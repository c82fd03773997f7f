//! `pr = "task"`: each task shipped as a pull request of its own, in the plan's order.
//! A unit's branch is built without touching any working tree: the task's change (and
//! the fixes its red checks asked for) replayed with `git merge-tree` onto where the
//! unit starts — the base branch's head, or the branch of the unmerged pull request
//! before it — each as a commit with the original's message, author and dates, so that
//! building the branch again after a fix gives the same commits plus the fix's.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use agentloop_config::MergeWhen;
use agentloop_journal::{Event, Unit};

use crate::driver::Driver;
use agentloop_exec::git::run as git;

/// A task id as a branch name's last part.
fn ref_safe(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect::<String>()
        .trim_matches('.')
        .to_string()
}

fn tree(root: &Path, commit: &str) -> Result<String, String> {
    git(root, &["rev-parse", &format!("{commit}^{{tree}}")])
}

/// The change `from..to` replayed onto `onto`: the new commit, or `onto` itself when
/// the change is already there.
fn replay(root: &Path, from: &str, to: &str, onto: &str) -> Result<String, String> {
    let out = agentloop_exec::git::git_command(root)
        .args([
            "merge-tree",
            "--write-tree",
            "--name-only",
            &format!("--merge-base={from}"),
            onto,
            to,
        ])
        .current_dir(root)
        .output()
        .map_err(|e| format!("git merge-tree: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    match out.status.code() {
        Some(0) => {}
        Some(1) => {
            let files: Vec<&str> = text.lines().skip(1).take_while(|l| !l.is_empty()).collect();
            return Err(format!(
                "the change of {to:.12} does not apply on {onto:.12}: it conflicts in {}",
                files.join(", ")
            ));
        }
        _ => {
            return Err(format!(
                "git merge-tree: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    let new_tree = text.lines().next().unwrap_or_default().to_string();
    if new_tree == tree(root, onto)? {
        return Ok(onto.to_string());
    }
    let info = git(
        root,
        &[
            "log",
            "-1",
            "--format=%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B",
            to,
        ],
    )?;
    let f: Vec<&str> = info.splitn(7, '\0').collect();
    let [an, ae, ad, cn, ce, cd, message] = f[..] else {
        return Err(format!("cannot read the commit {to:.12}"));
    };
    let mut child = agentloop_exec::git::git_command(root)
        .args(["commit-tree", &new_tree, "-p", onto, "-F", "-"])
        .current_dir(root)
        .envs([
            ("GIT_AUTHOR_NAME", an),
            ("GIT_AUTHOR_EMAIL", ae),
            ("GIT_AUTHOR_DATE", ad),
            ("GIT_COMMITTER_NAME", cn),
            ("GIT_COMMITTER_EMAIL", ce),
            ("GIT_COMMITTER_DATE", cd),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("git commit-tree: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(message.as_bytes())
            .map_err(|e| format!("git commit-tree: {e}"))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("git commit-tree: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git commit-tree: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

impl Driver {
    /// The next task to ship gets its branch, its base and the commit it starts from:
    /// the branch of the last pull request while a person has yet to merge it (stacked),
    /// else the base branch as the remote has it now.
    pub(super) fn ship_start_unit(&mut self) -> Result<Option<Event>, String> {
        let cfg = self.ship_cfg().clone();
        let Some(task) = agentloop_policy::next_unit(&self.state).map(str::to_string) else {
            return Err("no task is left to ship".into());
        };
        let branch = format!("{}-{}", cfg.branch_of(&self.run.id), ref_safe(&task));
        let stacked = match cfg.merge {
            MergeWhen::Manual => self
                .state
                .ship
                .shipped
                .iter()
                .rev()
                .find(|u| u.pr.is_some() && u.merged.is_none()),
            MergeWhen::Auto => None,
        };
        let (base, onto) = match stacked.and_then(|u| Some((u.branch.clone(), u.commit.clone()?))) {
            Some(on) => on,
            None => {
                let base = self.ship_base()?;
                git(&self.ws.root, &["fetch", "--quiet", &cfg.remote, &base])?;
                (base, git(&self.ws.root, &["rev-parse", "FETCH_HEAD"])?)
            }
        };
        Ok(Some(Event::ShipUnitStarted {
            task,
            branch,
            base,
            onto,
        }))
    }

    /// The head of the unit's branch: its tasks' changes replayed onto where it starts;
    /// `None` when they change nothing there.
    pub(super) fn unit_commit(&self, unit: &Unit) -> Result<Option<String>, String> {
        let root = &self.ws.root;
        let mut head = unit.onto.clone();
        for id in &unit.tasks {
            // A fix that changed nothing has no commit.
            let Some((t, commit)) = self
                .state
                .task(id)
                .and_then(|t| Some((t, t.commit.clone()?)))
            else {
                continue;
            };
            let from = self.change_from(t, &commit);
            head = replay(root, &from, &commit, &head)?;
        }
        Ok((tree(root, &head)? != tree(root, &unit.onto)?).then_some(head))
    }
}

#[cfg(test)]
mod tests {
    use super::ref_safe;

    #[test]
    fn a_task_id_becomes_a_branch_name_part() {
        assert_eq!(ref_safe("T1"), "T1");
        assert_eq!(ref_safe("GH-12"), "GH-12");
        assert_eq!(ref_safe("a b:c~d"), "a-b-c-d");
        assert_eq!(ref_safe(".hidden."), "hidden");
    }
}
