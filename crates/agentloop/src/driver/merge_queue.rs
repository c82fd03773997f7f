//! The merge queue of a run with workers: a batch of verified tasks merged onto the
//! integration branch one after the other, in the merge worktree, and checked once on
//! the merged result. A green batch lands as one move of the branch (each task still
//! its own merge commit); a red one is bisected over the prefixes of the batch until
//! the first task that turns it red is found: it goes back to its agent, the tasks
//! before it land, the tasks after it wait in the queue for the next batch.
//!
//! The integration branch is always green: beside the batch's checks run the checks of
//! every task already landed, and every test those tasks made pass must still pass
//! (PASS_TO_PASS of all that landed, not only of the batch).

use std::path::PathBuf;
use std::sync::mpsc::Sender;

use agentloop_evidence::baseline::Landed;
use agentloop_exec::worktree;
use agentloop_journal::{Event, MergeState, VerifyFinished};
use agentloop_policy::evidence::Place;

use super::Driver;
use super::jobs::{Checks, Done, MergeOutcome};
use crate::error::CliError;

/// One verified task of a batch.
pub(crate) struct Member {
    pub iteration: u32,
    pub task: String,
    pub worktree: PathBuf,
    /// The merge commit's message (with the iteration's trailer).
    pub message: String,
    /// The iteration's `merge.log`.
    pub log: PathBuf,
    /// Its own checks, as they run on a merged result.
    pub checks: Checks,
}

/// A batch's way onto the integration branch.
pub(crate) struct BatchJob {
    pub root: PathBuf,
    pub run_id: String,
    pub integration: String,
    /// The integration head the batch merges onto.
    pub head: String,
    pub members: Vec<Member>,
    /// Checks at once while a red batch is bisected.
    pub bisect: usize,
    /// `[verify] carry`: linked into each merge worktree the checks run in.
    pub carry: Vec<String>,
    /// Which of the files the agents added reach the checks on a merged result.
    pub admission: Option<agentloop_project::Admission>,
    /// What the tasks already landed want kept, and their checks' measures.
    pub landed: Landed,
    pub landed_measures: Vec<(String, agentloop_plan::Threshold)>,
    /// Where the check of each commit that lands is kept for VALIDATE (`checked`).
    pub checked: PathBuf,
    /// The secrets of the members' agents, kept out of what the checks left: their
    /// logs and the record kept for VALIDATE.
    pub redactor: agentloop_ground::redact::Redactor,
}

/// Runs the batch off the driver's thread; reports each member's outcome, in order
/// (or why git could not do it, which is not the work's fault).
pub(crate) fn merge(job: BatchJob, done: Sender<Done>) {
    std::thread::spawn(move || {
        let batch = job.members.iter().map(|m| m.iteration).collect();
        let outcome = merge_now(&job);
        for m in &job.members {
            let _ = job.redactor.scrub_check_log(&m.log);
        }
        let _ = done.send(Done::Merge { batch, outcome });
    });
}

fn merge_now(job: &BatchJob) -> Result<Vec<(u32, MergeOutcome)>, String> {
    let at = worktree::merge_worktree(&job.root, &job.run_id, &job.head)?;
    let mut outcomes: Vec<Option<MergeOutcome>> = job.members.iter().map(|_| None).collect();
    // The members merged cleanly, by index, with their merge commits in order.
    let mut merged: Vec<(usize, String)> = Vec::new();
    for (i, m) in job.members.iter().enumerate() {
        // The worktree's state as verified, on the task's branch: an attempt, until
        // the merge takes its tree (and only its tree) onto the integration branch.
        let attempt = format!(
            "agentloop: attempt of iteration {} (not merged yet)",
            m.iteration
        );
        // (Its agent has ended; what it left in the worktree's bookkeeping goes.)
        worktree::settle(
            &job.root,
            &m.worktree,
            &worktree::task_branch(&job.integration, &m.task),
        );
        let work = worktree::commit_work(&m.worktree, &attempt)?;
        let verified = format!("{} (verified work)", m.message.lines().next().unwrap_or(""));
        match worktree::merge(&at, &work, &verified, &m.message)? {
            worktree::Merge::Clean { commit } => merged.push((i, commit)),
            worktree::Merge::Conflict { files, .. } if !merged.is_empty() => {
                let before = tasks(job, merged.iter().map(|(i, _)| *i));
                outcomes[i] = Some(MergeOutcome::Requeued {
                    reason: format!(
                        "conflicts with {before}, merged before it in its batch ({}): merged again in a later batch",
                        files.join(", ")
                    ),
                });
            }
            worktree::Merge::Conflict { files, hunks } => {
                let list = files.join(", ");
                outcomes[i] = Some(MergeOutcome::Failed {
                    conflict: true,
                    reason: format!("merge conflict with work merged meanwhile: {list}"),
                    digest: format!(
                        "Your work conflicts with work other workers merged meanwhile, in {list}. Your worktree now has the newer work merged in, with conflict markers where the two meet: resolve them, keep both intents, and make the checks pass again. The conflicting hunks:\n```\n{hunks}\n```"
                    ),
                    fingerprint: Some(agentloop_ground::failure::fingerprint("merge", &list)),
                });
            }
        }
    }
    if let Some(&(last, _)) = merged.last() {
        // The whole batch, checked once where it stands (the last merge).
        let (whole, fresh) = check(job, &at, &merged, merged.len())?;
        // The check of the prefix that lands, which VALIDATE may take when it ran on
        // a tree as a fresh checkout has it.
        let mut landing: Option<(usize, VerifyFinished, bool)> = None;
        let landed = if whole.passed {
            landing = Some((merged.len(), whole, fresh));
            merged.len()
        } else {
            // The first prefix that fails: all of them pass up to `good`; `bad` fails.
            // Each round checks up to `bisect` prefixes between the two at once, each
            // in a merge worktree of its own, and narrows to the first that fails.
            let (mut good, mut bad, mut failure) = (0, merged.len(), whole);
            while bad - good > 1 {
                let probes = probes(good, bad, job.bisect);
                let results = std::thread::scope(|scope| {
                    let handles: Vec<_> = probes
                        .iter()
                        .enumerate()
                        .map(|(n, &m)| {
                            let merged = &merged;
                            let at = &at;
                            scope.spawn(move || {
                                let commit = &merged[m - 1].1;
                                let dir = if n == 0 {
                                    worktree::checkout_detached(at, commit)?;
                                    at.clone()
                                } else {
                                    worktree::merge_worktree_n(&job.root, &job.run_id, n, commit)?
                                };
                                check(job, &dir, merged, m)
                            })
                        })
                        .collect();
                    handles
                        .into_iter()
                        .map(|h| {
                            h.join()
                                .unwrap_or_else(|_| Err("a check's thread panicked".into()))
                        })
                        .collect::<Result<Vec<_>, String>>()
                })?;
                for (m, (r, fresh)) in probes.into_iter().zip(results) {
                    if r.passed {
                        good = m;
                        landing = Some((m, r, fresh));
                    } else {
                        (bad, failure) = (m, r);
                        break;
                    }
                }
            }
            let (culprit, _) = merged[bad - 1];
            let first = failure.failure_words() + &broken_landed(&job.landed, &failure);
            let others = if merged.len() > 1 {
                " (it was merged and checked in a batch; the tasks before it pass without it)"
            } else {
                ""
            };
            outcomes[culprit] = Some(MergeOutcome::Failed {
                conflict: false,
                reason: format!("on the merged result, {first}{others}"),
                digest: format!(
                    "Your work passes alone, but once it is merged with what other workers did meanwhile (your worktree now has their work merged in), {first}. {}",
                    failure.digest.unwrap_or_default()
                ),
                fingerprint: failure.fingerprint,
            });
            let id = &job.members[culprit].task;
            for &(i, _) in &merged[bad..] {
                outcomes[i] = Some(MergeOutcome::Requeued {
                    reason: format!(
                        "merged in a batch after {id}, whose work failed the checks: merged again in a later batch"
                    ),
                });
            }
            bad - 1
        };
        if landed > 0 {
            let to = &merged[landed - 1].1;
            if let Some((n, result, _)) = landing.filter(|(n, _, fresh)| *n == landed && *fresh) {
                let log = &job.members[merged[n - 1].0].log;
                let mut result = result;
                result.redact(&job.redactor);
                let _ = job.redactor.scrub_check_log(log);
                super::checked::keep(&job.checked, to, &result, log);
            }
            worktree::advance(&job.root, &job.integration, &job.head, to).map_err(|e| {
                format!("the integration branch moved while merging (nothing was lost): {e}")
            })?;
            for (i, commit) in &merged[..landed] {
                outcomes[*i] = Some(MergeOutcome::Merged {
                    commit: commit.clone(),
                });
            }
        }
        note_batch(job, &merged, last);
    }
    Ok(job
        .members
        .iter()
        .zip(outcomes)
        .map(|(m, o)| {
            let o = o.unwrap_or(MergeOutcome::Requeued {
                reason: "not reached in its batch".into(),
            });
            (m.iteration, o)
        })
        .collect())
}

/// The prefixes a round of the bisection checks between `good` (passes) and `bad`
/// (fails): up to `at_once` of them, evenly spread, in order.
fn probes(good: usize, bad: usize, at_once: usize) -> Vec<usize> {
    let inside = bad - good - 1;
    let k = at_once.clamp(1, inside.max(1));
    let mut out: Vec<usize> = (1..=k).map(|i| good + i * (bad - good) / (k + 1)).collect();
    out.retain(|&m| m > good && m < bad);
    out.dedup();
    if out.is_empty() {
        out.push(good + 1);
    }
    out
}

/// The checks of the first `n` merged members together, on the merged result where
/// the worktree `at` stands, logged with the `n`th member; and whether the tree they
/// ran on was as a fresh checkout has it (nothing untracked or ignored but the
/// `[verify] carry` links: what earlier checks left there, a build's output, stays
/// between batches, and a fresh checkout — VALIDATE's — has none of it).
fn check(
    job: &BatchJob,
    at: &std::path::Path,
    merged: &[(usize, String)],
    n: usize,
) -> Result<(VerifyFinished, bool), String> {
    let members: Vec<&Member> = merged[..n].iter().map(|(i, _)| &job.members[*i]).collect();
    let last = members[n - 1];
    // What the checks need that git leaves out of a worktree (`node_modules`).
    agentloop_verify::clean_copy::link_carried(&job.root, at, &job.carry)
        .map_err(|e| format!("cannot link [verify] carry into the merge worktree: {e}"))?;
    // The content of the files Git LFS tracks, as the task's checks had it (the next
    // checkout of the worktree, forced, puts their pointers back). What the store does
    // not hold was said at the baseline.
    if let Some(common) = agentloop_exec::git::common_dir(&job.root) {
        agentloop_exec::git::lfs::fill(at, &common);
    }
    // What the agents added that the checks would load on their own, out (the next
    // checkout of the worktree, forced, puts it back).
    let (left_out, admitted) = match &job.admission {
        Some(a) => agentloop_verify::clean_copy::leave_out_in(at, a)
            .map_err(|e| format!("cannot prepare the merge worktree: {e}"))?,
        None => (Vec::new(), Vec::new()),
    };
    let fresh = untracked(at).is_some_and(|left| {
        left.iter().all(|p| {
            job.carry
                .iter()
                .any(|c| p.trim_end_matches('/') == c.trim_end_matches('/'))
        })
    });
    let mut together = Checks::together(&members.iter().map(|m| &m.checks).collect::<Vec<_>>());
    together.keep(&job.landed, &job.landed_measures);
    let mut result = together
        .run(last.iteration, at, &last.log)
        .map_err(|e| format!("cannot run the checks on the merged result: {e}"))?;
    agentloop_verify::verify::left_out::tell(&mut result, left_out, admitted, &last.log)
        .map_err(|e| format!("cannot run the checks on the merged result: {e}"))?;
    Ok((result, fresh))
}

/// What lies in the worktree at `dir` that git does not track, ignored files too (a
/// directory once); `None` when git cannot say.
fn untracked(dir: &std::path::Path) -> Option<Vec<String>> {
    let mut c = agentloop_exec::git::git_command(dir);
    c.args(["ls-files", "--others", "--directory", "-z"]);
    let out = agentloop_exec::git::run_git(c, None).ok()?;
    Some(
        out.split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect(),
    )
}

/// `: it breaks what T1 made pass (tests/test_a.py::test_x)`, when the failure is
/// of tests that tasks already landed made pass.
fn broken_landed(landed: &Landed, failure: &VerifyFinished) -> String {
    let mut by: Vec<String> = Vec::new();
    for r in failure.evidence.iter().flat_map(|e| &e.regressions) {
        if let Some(task) = landed.tests.get(&r.id) {
            by.push(format!("{task}'s {}", r.id));
        }
    }
    if by.is_empty() {
        return String::new();
    }
    format!(
        "; it breaks what tasks already merged made pass: {}",
        by.join(", ")
    )
}

/// Each merged member's log says which batch it was checked in, and where.
fn note_batch(job: &BatchJob, merged: &[(usize, String)], last: usize) {
    if merged.len() < 2 {
        return;
    }
    let all = tasks(job, merged.iter().map(|(i, _)| *i));
    let checked = job.members[last].iteration;
    for (i, _) in merged {
        let m = &job.members[*i];
        let line = if *i == last {
            format!("[agentloop: merged and checked in a batch with {all}]\n")
        } else {
            format!(
                "[agentloop: merged in a batch with {all}; checked together: iteration {checked}'s merge.log]\n"
            )
        };
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&m.log)
        {
            let _ = f.write_all(line.as_bytes());
        }
    }
}

fn tasks(job: &BatchJob, members: impl Iterator<Item = usize>) -> String {
    members
        .map(|i| job.members[i].task.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

impl Driver {
    /// The merge queue's next batch: merged and checked off this thread. A merge a
    /// crash interrupted after the branch moved is recognized, not made twice.
    pub(super) fn start_merge(
        &mut self,
        batch: Vec<u32>,
        busy: &mut std::collections::BTreeSet<u32>,
        stop: &std::sync::Arc<std::sync::atomic::AtomicBool>,
        done: &Sender<Done>,
    ) -> Result<(), CliError> {
        let i =
            self.state.integration.clone().ok_or_else(|| {
                CliError::internal("a run with workers has no integration branch")
            })?;
        let mut members = Vec::new();
        for iteration in batch {
            let open = self
                .state
                .open_iteration(iteration)
                .cloned()
                .ok_or_else(|| CliError::internal(format!("no iteration {iteration} to merge")))?;
            let trailer = format!("Agentloop-Iteration: {}/{iteration}", self.run.id);
            if let Some(MergeState::Started { head }) = &open.merge
                && let Some(commit) =
                    worktree::merged_since(&self.ws.root, &i.branch, head, &trailer)
            {
                self.record(Event::Merged { iteration, commit })?;
                self.merged(iteration);
                continue;
            }
            let task = open.started.task.clone();
            let title = self
                .state
                .task(&task)
                .map(|t| t.title.clone())
                .unwrap_or_default();
            members.push(Member {
                iteration,
                worktree: self.workdir(iteration),
                message: format!("agentloop: {task} {title}\n\n{trailer}"),
                log: self.run.iteration_dir(iteration).join("merge.log"),
                checks: Checks {
                    held_out: self.merge_held_out(&task, iteration),
                    own_dir: true,
                    ..self.checks_at(
                        &task,
                        stop,
                        Place::Merged,
                        self.reports_dir(iteration).join("merge"),
                    )
                },
                task,
            });
        }
        if members.is_empty() {
            return Ok(());
        }
        // The head as the journal has it: a branch that moved otherwise (the person,
        // an unconfined agent) is refused when the batch lands (`advance` compares).
        let head = i.head.clone();
        for m in &members {
            self.record(Event::MergeStarted {
                iteration: m.iteration,
                head: head.clone(),
            })?;
            busy.insert(m.iteration);
        }
        let tasks: Vec<&str> = members.iter().map(|m| m.task.as_str()).collect();
        let (landed, landed_measures) = agentloop_policy::evidence::landed(&self.state, &tasks);
        let admission = self.admission(&tasks);
        let redactor = self.iterations_redactor(members.iter().map(|m| m.iteration));
        merge(
            BatchJob {
                landed,
                landed_measures,
                root: self.ws.root.clone(),
                run_id: self.run.id.clone(),
                integration: i.branch.clone(),
                head,
                members,
                bisect: self.state.settings.merge_bisect.max(1) as usize,
                checked: super::checked::dir_of(&self.run.path),
                redactor,
                carry: self.state.settings.carry.clone(),
                admission,
            },
            done.clone(),
        );
        Ok(())
    }

    /// Records what became of each task of a batch.
    pub(super) fn merge_done(
        &mut self,
        outcome: Result<Vec<(u32, MergeOutcome)>, String>,
    ) -> Result<(), CliError> {
        let outcomes = outcome.map_err(|e| CliError::internal(format!("cannot merge: {e}")))?;
        for (iteration, outcome) in outcomes {
            match outcome {
                MergeOutcome::Merged { commit } => {
                    self.record(Event::Merged { iteration, commit })?;
                    self.merged(iteration);
                }
                MergeOutcome::Requeued { reason } => {
                    self.record(Event::MergeRequeued { iteration, reason })?;
                }
                MergeOutcome::Failed {
                    conflict,
                    reason,
                    digest,
                    fingerprint,
                } => {
                    let redactor = self.iteration_redactor(iteration);
                    self.record(Event::MergeFailed {
                        iteration,
                        conflict,
                        reason: redactor.redact(&reason).into_owned(),
                        digest: redactor.redact(&digest).into_owned(),
                        fingerprint,
                    })?;
                }
            }
        }
        Ok(())
    }

    /// A merged task's worktree goes (unless kept).
    fn merged(&mut self, iteration: u32) {
        if let (Some(task), Some(i), false) = (
            self.state
                .open_iteration(iteration)
                .map(|o| o.started.task.clone()),
            self.state.integration.clone(),
            self.state.settings.keep_worktrees,
        ) {
            worktree::remove_task(&self.ws.root, &self.run.id, &i.branch, &task);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::probes;

    #[test]
    fn a_round_probes_evenly_between_what_passes_and_what_fails() {
        assert_eq!(probes(0, 8, 1), vec![4], "halves");
        assert_eq!(probes(0, 8, 3), vec![2, 4, 6]);
        assert_eq!(probes(4, 6, 3), vec![5], "one prefix left between them");
        assert_eq!(probes(0, 2, 8), vec![1]);
        assert_eq!(probes(0, 16, 4), vec![3, 6, 9, 12]);
        // Every probe is strictly between, so each round narrows the range.
        for good in 0..20 {
            for bad in good + 2..30 {
                for at_once in 1..6 {
                    let p = probes(good, bad, at_once);
                    assert!(!p.is_empty() && p.iter().all(|&m| m > good && m < bad));
                    assert!(p.windows(2).all(|w| w[0] < w[1]));
                }
            }
        }
    }
}
