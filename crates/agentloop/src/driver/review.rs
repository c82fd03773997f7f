//! The independent reviewer in the driver (`[review]`, `policy::review`): the verified
//! work's risk read from its diff, then each reviewer in turn — another agent with
//! read-only tools, in the clean copy of the verified work — asked about the task, its
//! criteria, the diff against the baseline and the checks' evidence, and its verdict
//! recorded. It never sees the worker's transcript or its claims. With workers each
//! reviewer reads on a thread of its own while the others work.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::Instant;

use agentloop_journal::{Event, Finding, ReviewFinished, ReviewVerdict};
use agentloop_policy::review;

use super::Driver;
use super::gates::read_diff;
use super::jobs::{Done, Reviewed};
use crate::error::CliError;

/// A reviewer's turn, ready to run anywhere (everything it needs is owned), or its
/// verdict already known (the reviewer could not start).
pub(crate) struct ReviewJob {
    started: Reviewed,
    run: Option<ReviewRun>,
}

struct ReviewRun {
    agent: Box<dyn agentloop_agents::Agent>,
    run_id: String,
    run_dir: std::path::PathBuf,
    workdir: std::path::PathBuf,
    prompt: String,
    at: std::path::PathBuf,
    /// The sandbox it reads under; its proxy lives as long as the job.
    confined: agentloop_exec::sandbox::Confinement,
    /// The reviewer's own copy, removed when it has read.
    copy: Option<agentloop_verify::clean_copy::CleanCopy>,
}

fn rejected(what: String) -> (ReviewVerdict, Vec<Finding>, bool) {
    let finding = Finding {
        file: None,
        line: None,
        what,
    };
    (ReviewVerdict::Reject, vec![finding], true)
}

impl ReviewJob {
    /// Runs the reviewer (`stop`: the run is stopped now) and reads its verdict.
    pub(crate) fn run(self, stop: &mut dyn FnMut() -> bool) -> Reviewed {
        let mut r = self.started;
        let Some(job) = self.run else {
            return r;
        };
        let f = &mut r.finished;
        let inv = agentloop_agents::Invocation {
            run_id: &job.run_id,
            run_dir: &job.run_dir,
            iteration: f.iteration,
            workdir: &job.workdir,
            prompt: &job.prompt,
            prompt_file: &job.at.join("prompt.md"),
            log: &r.log,
            pid_file: &job.at.join("agent.pid"),
            wrap: job.confined.prefix.clone(),
        };
        let run = job.agent.run(&inv, stop);
        let end = &run.finished;
        (f.verdict, f.findings, f.unparsable) = match (&run.error, end) {
            (Some(e), _) => rejected(format!("the reviewer {} failed: {}", f.reviewer, e.message)),
            // Only an answer the reviewer finished counts, whatever it printed.
            (None, end) if end.timed_out => rejected(format!(
                "the reviewer {} ran out of time before it finished",
                f.reviewer
            )),
            (None, end) if end.signal.is_some() => rejected(format!(
                "the reviewer {} was ended by signal {}",
                f.reviewer,
                end.signal.unwrap_or_default()
            )),
            (None, end) if end.exit_code != Some(0) => rejected(format!(
                "the reviewer {} exited with {} (only a reviewer that exits 0 can approve)",
                f.reviewer,
                end.exit_code.map_or("no code".into(), |c| c.to_string())
            )),
            (None, _) => review::parse(&run.final_message),
        };
        f.cost_usd = run.cost_usd;
        if let Some(copy) = job.copy {
            copy.remove();
        }
        r
    }
}

impl Driver {
    /// One worker: the next reviewer's turn on the open iteration `iteration` of
    /// `task`, in the driver's own.
    pub(crate) fn review(&mut self, iteration: u32, task: &str) -> Result<(), CliError> {
        let Some(job) = self.ask_reviewer(iteration, task)? else {
            return Ok(());
        };
        let mut last = Instant::now();
        let (deadline, mut late) = (self.deadline, false);
        let mut r = job.run(&mut || {
            late = deadline.is_some_and(|d| Instant::now() >= d);
            late || self.should_stop(&mut last)
        });
        if late {
            let f = &mut r.finished;
            (f.verdict, f.findings, f.unparsable) = rejected(format!(
                "the reviewer {} gave no verdict before the hook's time ran out ([hook] time_limit = {})",
                f.reviewer,
                humantime::format_duration(self.config.hook.time_limit)
            ));
        }
        self.reviewed(r)
    }

    /// Workers: the reviewer's turn on a thread of its own (the other workers go on);
    /// its verdict comes back as [`Done::Reviewed`]. False when no reviewer reads.
    pub(crate) fn start_review(
        &mut self,
        iteration: u32,
        task: &str,
        stop: &Arc<AtomicBool>,
        done: &Sender<Done>,
    ) -> Result<bool, CliError> {
        let Some(job) = self.ask_reviewer(iteration, task)? else {
            return Ok(false);
        };
        let (stop, done) = (stop.clone(), done.clone());
        std::thread::spawn(move || {
            let r = job.run(&mut || stop.load(Ordering::SeqCst));
            let _ = done.send(Done::Reviewed(Box::new(r)));
        });
        Ok(true)
    }

    /// The next reviewer's turn recorded as started, and its job; `None` when no
    /// reviewer reads (no review configured, or low risk: recorded so the decision is
    /// the journal's).
    fn ask_reviewer(&mut self, iteration: u32, task: &str) -> Result<Option<ReviewJob>, CliError> {
        let Some(cfg) = self.state.settings.review.clone() else {
            return Ok(None);
        };
        let Some(open) = self.state.open_iteration(iteration).cloned() else {
            return Ok(None);
        };
        let (dir, copy, held_back, (diff, input)) = match self.review_copy(iteration, task) {
            Some((copy, tree, held_back)) => {
                let source = copy.root.clone();
                let diff = self.review_diff_of(&source, &tree);
                (copy.dir.clone(), Some(copy), held_back, diff)
            }
            None => {
                let dir = self.review_dir(iteration, task);
                let diff = self.review_diff(&dir);
                (dir, None, Vec::new(), diff)
            }
        };
        let triggers = input
            .as_ref()
            .map(|i| agentloop_policy::triggered(&self.state.settings.gates, i))
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
        self.record(Event::ReviewStarted(started))?;
        if reviewer.is_empty() {
            if let Some(c) = copy {
                c.remove();
            }
            return Ok(None);
        }
        self.progress.note(&format!(
            "task {task}: {reviewer} reviews the verified work ({risk} risk, reviewer {round} of {of})"
        ));
        let text = review::prompt(&self.state, task, open.verify.as_ref(), &diff, &held_back);
        let at = self
            .run
            .iteration_dir(iteration)
            .join(format!("review-{round}"));
        std::fs::create_dir_all(&at)
            .map_err(|e| CliError::internal(format!("{}: {e}", at.display())))?;
        agentloop_ground::fsutil::write_atomic(&at.join("prompt.md"), text.as_bytes())
            .map_err(|e| CliError::internal(format!("cannot write the review's prompt: {e}")))?;
        let mut started = Reviewed {
            task: task.to_string(),
            log: at.join("agent.log"),
            finished: ReviewFinished {
                iteration,
                reviewer: reviewer.clone(),
                round,
                of,
                verdict: ReviewVerdict::Reject,
                findings: Vec::new(),
                unparsable: true,
                cost_usd: 0.0,
            },
        };
        let run = match agentloop_agents::resolve_reviewer(&self.config, &reviewer) {
            Err(e) => {
                let f = &mut started.finished;
                (f.verdict, f.findings, f.unparsable) =
                    rejected(format!("the reviewer {reviewer} could not start: {e}"));
                if let Some(c) = copy {
                    c.remove();
                }
                None
            }
            Ok((agent, _)) => Some(ReviewRun {
                agent,
                run_id: self.run.id.clone(),
                run_dir: self.run.path.clone(),
                // Confined as the workers are under `[sandbox]`, and as the checks
                // are wherever they are.
                confined: self.confine_judge(&dir, &at, &reviewer)?,
                workdir: dir,
                prompt: text,
                at,
                copy,
            }),
        };
        Ok(Some(ReviewJob { started, run }))
    }

    /// A reviewer's verdict, recorded.
    pub(crate) fn reviewed(&mut self, r: Reviewed) -> Result<(), CliError> {
        let f = r.finished;
        let _ = self.redactor(&f.reviewer).scrub_file(&r.log);
        let words = match f.verdict {
            ReviewVerdict::Approve => "approves".to_string(),
            ReviewVerdict::Reject => format!(
                "rejects: {}",
                f.findings.first().map(Finding::words).unwrap_or_default()
            ),
        };
        self.progress
            .note(&format!("task {}: {} {words}", r.task, f.reviewer));
        self.record(Event::ReviewFinished(f))
    }

    /// The reviewer's own copy of the verified work: the tree the checks judged (the
    /// agent's files, the baseline's surface) with every file that configures an agent
    /// CLI at the baseline's version or gone (`CleanCopy::without_agent_files`), in a
    /// worktree of its own. Also the tree as the worker left it, for the diff, and the
    /// agent files held back. `None` where the run has no clean copies.
    fn review_copy(
        &mut self,
        iteration: u32,
        task: &str,
    ) -> Option<(agentloop_verify::clean_copy::CleanCopy, String, Vec<String>)> {
        let s = &self.state;
        if !s.settings.clean_copy || self.snapshots.is_none() {
            return None;
        }
        let source = self.workdir(iteration);
        let copy = agentloop_verify::clean_copy::CleanCopy::for_run(
            &source,
            &format!("{}-review-{task}", self.run.id),
        )?;
        let made = (|| {
            let tree = copy.tree_now(s.baseline.as_ref())?;
            let read = copy.without_agent_files(&tree, s.tree_at_create.as_deref())?;
            copy.refresh_to(&read.tree, &[])?;
            Ok::<_, String>((tree, read.held_back))
        })();
        match made {
            Ok((tree, held_back)) => Some((copy, tree, held_back)),
            Err(e) => {
                self.progress.warn(&format!(
                    "task {task}: the reviewer's own copy could not be made ({e}): it reads the checks' copy"
                ));
                copy.remove();
                None
            }
        }
    }

    /// Where the reviewer reads when it has no copy of its own: the clean copy of the
    /// verified work (a worker's task copy), else the worktree or the project.
    fn review_dir(&mut self, iteration: u32, task: &str) -> std::path::PathBuf {
        match self.worktree_of(iteration) {
            Some(wt) => match self.task_copy(task, &wt) {
                // The full way: what the reviewer does there is not a check's.
                Some(mut c) => match c.copy.refresh_judged(
                    None,
                    agentloop_verify::clean_copy::Judge {
                        overlay: c.overlay.as_ref(),
                        admission: c.admission.as_ref(),
                    },
                    &c.carry,
                ) {
                    Ok(_) => c.copy.copy().dir.clone(),
                    Err(_) => wt,
                },
                None => wt,
            },
            None => {
                let dir = self.verify_dir(&[task]).dir;
                // What the reviewer does there is not a check's.
                self.forget_copy();
                dir
            }
        }
    }

    /// What the reviewer's diff is against: the tree the run was created on, else HEAD.
    fn review_base(&self) -> String {
        self.state
            .tree_at_create
            .clone()
            .unwrap_or_else(|| "HEAD".into())
    }

    /// The diff of `tree` (the verified work as the worker left it) against the tree
    /// the run was created on (else against HEAD), read in `source`.
    fn review_diff_of(
        &self,
        source: &std::path::Path,
        tree: &str,
    ) -> (String, Option<agentloop_policy::DiffInput>) {
        let from = self.review_base();
        let text = agentloop_exec::git::run(
            source,
            &["diff", "--no-color", "--no-ext-diff", &from, tree],
        )
        .unwrap_or_default();
        (text, read_diff(source, &from, tree, false).ok())
    }

    /// The verified work's diff against the tree the run was created on (else
    /// against HEAD), as text for the reviewer and parsed for the diff gates.
    fn review_diff(&self, dir: &std::path::Path) -> (String, Option<agentloop_policy::DiffInput>) {
        let from = self.review_base();
        let text = if dir == self.ws.root {
            agentloop_exec::git::run(dir, &["diff", "--no-color", "--no-ext-diff", &from])
        } else {
            agentloop_exec::git::run(dir, &["diff", "--no-color", "--no-ext-diff", &from, "HEAD"])
        }
        .unwrap_or_default();
        let input = (dir != self.ws.root)
            .then(|| read_diff(dir, &from, "HEAD", false).ok())
            .flatten();
        (text, input)
    }
}
