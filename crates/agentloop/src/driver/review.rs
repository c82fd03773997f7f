//! The independent reviewer in the driver (`[review]`, `policy::review`): the verified
//! work's risk read from its diff, then each reviewer in turn — another agent with
//! read-only tools, in the clean copy of the verified work — asked about the task, its
//! criteria, the diff against the baseline and the checks' evidence, and its verdict
//! recorded. It never sees the worker's transcript or its claims.

use std::time::Instant;

use agentloop_core::journal::{Event, ReviewFinished, ReviewVerdict};
use agentloop_core::policy::review;

use super::Driver;
use super::gates::read_diff;
use crate::error::CliError;

impl Driver {
    /// The next reviewer's turn on the open iteration `iteration` of `task`.
    pub(crate) fn review(&mut self, iteration: u32, task: &str) -> Result<(), CliError> {
        let Some(cfg) = self.state.settings.review.clone() else {
            return Ok(());
        };
        let Some(open) = self.state.open_iteration(iteration).cloned() else {
            return Ok(());
        };
        let dir = self.review_dir(iteration, task);
        let (diff, input) = self.review_diff(&dir);
        let triggers = input
            .as_ref()
            .map(|i| agentloop_core::policy::triggered(&self.state.settings.gates, i))
            .unwrap_or_default();
        let lines = input.as_ref().map_or(usize::MAX, |i| {
            i.files
                .iter()
                .map(|f| f.added.len() + f.removed.len())
                .sum()
        });
        let started = review::next_round(&cfg, &open, &triggers, lines);
        let (round, of, risk, reviewer) = (
            started.round,
            started.of,
            started.risk.clone(),
            started.reviewer.clone(),
        );
        // Low risk: no reviewer; recorded so the decision is the journal's.
        if reviewer.is_empty() {
            return self.record(Event::ReviewStarted(started));
        }
        self.record(Event::ReviewStarted(started))?;
        self.progress.note(&format!(
            "task {task}: {reviewer} reviews the verified work ({risk} risk, reviewer {round} of {of})"
        ));
        let text = review::prompt(&self.state, task, open.verify.as_ref(), &diff);
        let at = self
            .run
            .iteration_dir(iteration)
            .join(format!("review-{round}"));
        std::fs::create_dir_all(&at)
            .map_err(|e| CliError::internal(format!("{}: {e}", at.display())))?;
        let prompt_file = at.join("prompt.md");
        agentloop_core::fsutil::write_atomic(&prompt_file, text.as_bytes())
            .map_err(|e| CliError::internal(format!("cannot write the review's prompt: {e}")))?;
        let log = at.join("agent.log");
        let (verdict, findings, unparsable, cost_usd) =
            match agentloop_agents::resolve_read_only(&self.config, &reviewer) {
                Err(e) => (
                    ReviewVerdict::Reject,
                    vec![agentloop_core::journal::Finding {
                        file: None,
                        line: None,
                        what: format!("the reviewer {reviewer} could not start: {e}"),
                    }],
                    true,
                    0.0,
                ),
                Ok((agent, _)) => {
                    // Under `[sandbox]` as the workers are.
                    let confined = self.confine_in(&dir, &at, &reviewer)?;
                    let (run_id, run_dir) = (self.run.id.clone(), self.run.path.clone());
                    let inv = agentloop_agents::Invocation {
                        run_id: &run_id,
                        run_dir: &run_dir,
                        iteration,
                        workdir: &dir,
                        prompt: &text,
                        prompt_file: &prompt_file,
                        log: &log,
                        pid_file: &at.join("agent.pid"),
                        wrap: confined.prefix.clone(),
                    };
                    let mut last = Instant::now();
                    let run = agent.run(&inv, &mut || self.should_stop(&mut last));
                    let _ = self.redactor(&reviewer).scrub_file(&log);
                    if let Some(e) = &run.error {
                        (
                            ReviewVerdict::Reject,
                            vec![agentloop_core::journal::Finding {
                                file: None,
                                line: None,
                                what: format!("the reviewer {reviewer} failed: {}", e.message),
                            }],
                            true,
                            run.cost_usd,
                        )
                    } else {
                        let (v, f, bad) = review::parse(&run.final_message);
                        (v, f, bad, run.cost_usd)
                    }
                }
            };
        let words = match verdict {
            ReviewVerdict::Approve => "approves".to_string(),
            ReviewVerdict::Reject => format!(
                "rejects: {}",
                findings
                    .first()
                    .map(agentloop_core::journal::Finding::words)
                    .unwrap_or_default()
            ),
        };
        self.progress
            .note(&format!("task {task}: {reviewer} {words}"));
        self.record(Event::ReviewFinished(ReviewFinished {
            iteration,
            reviewer,
            round,
            of,
            verdict,
            findings,
            unparsable,
            cost_usd,
        }))
    }

    /// Where the reviewer reads: the clean copy of the verified work (a worker's
    /// task copy), else the worktree or the project.
    fn review_dir(&mut self, iteration: u32, task: &str) -> std::path::PathBuf {
        match self.worktree_of(iteration) {
            Some(wt) => match self.task_copy(task, &wt) {
                Some(c) => match c.copy.refresh(c.overlay.as_ref(), &c.carry) {
                    Ok(_) => c.copy.dir,
                    Err(_) => wt,
                },
                None => wt,
            },
            None => self.verify_dir(),
        }
    }

    /// The verified work's diff against the tree the run was created on (else
    /// against HEAD), as text for the reviewer and parsed for the diff gates.
    fn review_diff(
        &self,
        dir: &std::path::Path,
    ) -> (String, Option<agentloop_core::policy::DiffInput>) {
        let from = self
            .state
            .tree_at_create
            .clone()
            .unwrap_or_else(|| "HEAD".into());
        let text = if dir == self.ws.root {
            agentloop_core::exec::git::run(dir, &["diff", "--no-color", "--no-ext-diff", &from])
        } else {
            agentloop_core::exec::git::run(
                dir,
                &["diff", "--no-color", "--no-ext-diff", &from, "HEAD"],
            )
        }
        .unwrap_or_default();
        let input = (dir != self.ws.root)
            .then(|| read_diff(dir, &from, "HEAD", false).ok())
            .flatten();
        (text, input)
    }
}
