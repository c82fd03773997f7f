//! What a run with workers runs off the driver's thread: an agent's iteration (through
//! an executor, [`super::executor`]), a task's checks, and a merge with its checks on the merged result.
//! Each reports what it did on a channel; the driver records it.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::Duration;

use agentloop_agents::{Agent, AgentRun};
use agentloop_exec::git;
use agentloop_exec::sandbox::Sandbox;
use agentloop_journal::VerifyFinished;
use agentloop_verify::verify;

/// What a job reports when it is done.
pub(crate) enum Done {
    Agent {
        iteration: u32,
        agent: String,
        run: Box<AgentRun>,
        before: Option<git::Snapshot>,
    },
    Checked {
        iteration: u32,
        log: PathBuf,
        result: std::io::Result<Box<VerifyFinished>>,
        /// The task's clean copy, kept in step for its next verification.
        copy: Option<Box<Copied>>,
    },
    /// A batch of the merge queue: what became of each of its iterations.
    Merge {
        batch: Vec<u32>,
        outcome: Result<Vec<(u32, MergeOutcome)>, String>,
    },
    /// Not an end: where the iteration's job stands on its cluster now.
    Job(agentloop_journal::JobState),
    /// A planner's answer.
    Planned(Box<Answer>),
    /// A reviewer's verdict on an iteration's verified work.
    Reviewed(Box<Reviewed>),
}

/// What a reviewer said, to record.
pub(crate) struct Reviewed {
    pub task: String,
    /// Its log, to redact once recorded.
    pub log: PathBuf,
    pub finished: agentloop_journal::ReviewFinished,
}

impl Reviewed {
    pub(crate) fn iteration(&self) -> u32 {
        self.finished.iteration
    }
}

/// What a planner answered.
pub(crate) struct Answer {
    pub planner: u32,
    pub basis: String,
    /// Its final message, or why there is none.
    pub text: Result<String, String>,
    pub cost_usd: f64,
    pub duration_ms: u64,
    /// Its log, to redact once recorded.
    pub log: PathBuf,
}

/// What became of one task of a batch.
#[derive(Debug)]
pub(crate) enum MergeOutcome {
    Merged {
        commit: String,
    },
    Failed {
        conflict: bool,
        reason: String,
        digest: String,
        fingerprint: Option<String>,
    },
    /// Not merged, through no fault of its own: it waits for the next batch.
    Requeued {
        reason: String,
    },
}

impl Done {
    /// The iterations whose step this is (a merge's: every one of its batch).
    pub(crate) fn iterations(&self) -> Vec<u32> {
        match self {
            Done::Agent { iteration, .. } | Done::Checked { iteration, .. } => vec![*iteration],
            Done::Merge { batch, .. } => batch.clone(),
            Done::Job(j) => vec![j.iteration],
            Done::Planned(_) => Vec::new(),
            Done::Reviewed(r) => vec![r.iteration()],
        }
    }

    /// Whether the step under way for its iteration is over (its worker is free for
    /// the next step).
    pub(crate) fn ends(&self) -> bool {
        !matches!(self, Done::Job(_))
    }
}

/// One agent iteration, ready to run anywhere: everything it needs is owned.
pub(crate) struct AgentJob {
    pub iteration: u32,
    pub agent_name: String,
    pub agent: Box<dyn Agent>,
    pub run_id: String,
    pub run_dir: PathBuf,
    pub workdir: PathBuf,
    pub prompt: String,
    pub dir: PathBuf,
    pub before: Option<git::Snapshot>,
    /// Set when the run is stopped now: the agent's process group is ended.
    pub stop: Arc<AtomicBool>,
    /// The sandbox it runs under (none: an empty prefix); its proxy lives as long as
    /// the job.
    pub confined: agentloop_exec::sandbox::Confinement,
}

/// Checks to run somewhere, and how.
pub(crate) struct Checks {
    /// What the checks' per-test reports must show (none: exit codes decide).
    pub expected: Option<agentloop_evidence::Expected>,
    /// agentloop's directory for their reports.
    pub reports: PathBuf,
    pub commands: Vec<String>,
    /// The thresholds of measurement criteria among them.
    pub measures: Vec<(String, agentloop_plan::Threshold)>,
    pub timeout: Duration,
    pub output_cap: u64,
    /// Workers each check's runner may use (`[verify] jobs`).
    pub jobs: agentloop_config::CheckJobs,
    /// `[verify] max_file_size`: a file of the work past it fails the checks.
    pub max_file_size: u64,
    /// The commit the run's integration branch was made from: what the work committed
    /// since counts toward `max_file_size` too.
    pub base: Option<String>,
    pub stop: Arc<AtomicBool>,
    /// `[sandbox] verify`: what the checks are confined by.
    pub sandbox: Option<CheckBox>,
    /// The clean copy they run in instead of the directory given (a task's worktree).
    pub copy: Option<Copied>,
    /// The task's held-out checks, run on the clean copy once its own checks pass.
    pub held_out: Option<verify::HeldOut>,
    /// The directory the checks run in is agentloop's own, which no agent writes (the
    /// merge queue's worktree): held-out checks are laid there as into a clean copy.
    pub own_dir: bool,
}

/// A clean copy of a task's worktree, as the checks of one worker see it: what the
/// agent committed or left untracked and not ignored, with the baseline versions of
/// the surface (see `exec::clean_copy`).
pub(crate) struct Copied {
    pub task: String,
    pub copy: agentloop_verify::clean_copy::KeptCopy,
    pub overlay: Option<agentloop_journal::Baseline>,
    /// Which of the files the agent added reach the copy.
    pub admission: Option<agentloop_project::Admission>,
    pub carry: Vec<String>,
}

impl Checks {
    /// The checks of several tasks run once, together (a batch of the merge queue):
    /// every task's commands and measures, and what each task's tests must show; the
    /// rest as the last task's (its reports directory among them).
    pub(crate) fn together(all: &[&Checks]) -> Checks {
        let last = all.last().expect("checks of at least one task");
        let mut commands: Vec<String> = Vec::new();
        let mut measures = Vec::new();
        let mut expected = last.expected.clone();
        for c in all {
            for command in &c.commands {
                if !commands.contains(command) {
                    commands.push(command.clone());
                }
            }
            for m in &c.measures {
                if !measures.contains(m) {
                    measures.push(m.clone());
                }
            }
            if let (Some(e), Some(mine)) = (&mut expected, &c.expected) {
                for n in &mine.named {
                    if !e.named.contains(n) {
                        e.named.push(n.clone());
                    }
                }
                for o in &mine.own {
                    if !e.own.contains(o) {
                        e.own.push(o.clone());
                    }
                }
            }
        }
        Checks {
            expected,
            reports: last.reports.clone(),
            commands,
            measures,
            timeout: last.timeout,
            output_cap: last.output_cap,
            jobs: last.jobs,
            max_file_size: last.max_file_size,
            base: last.base.clone(),
            stop: last.stop.clone(),
            sandbox: last.sandbox.clone(),
            copy: None,
            held_out: held_out(all),
            own_dir: last.own_dir,
        }
    }

    /// On a merged result, what the tasks already landed want kept beside: their
    /// checks and measures run too, and the tests they made pass must pass.
    pub(crate) fn keep(
        &mut self,
        landed: &agentloop_evidence::baseline::Landed,
        measures: &[(String, agentloop_plan::Threshold)],
    ) {
        for c in &landed.commands {
            if !self.commands.contains(c) {
                self.commands.push(c.clone());
            }
        }
        for m in measures {
            if !self.measures.contains(m) {
                self.measures.push(m.clone());
            }
        }
        if let Some(h) = &mut self.held_out {
            for n in &landed.held_out {
                if !h.names.contains(n) {
                    h.names.push(n.clone());
                }
            }
        }
        if let Some(e) = &mut self.expected {
            e.made_passing.extend(landed.tests.keys().cloned());
            e.landed = landed.clone();
        }
    }

    pub(crate) fn run(
        &mut self,
        iteration: u32,
        dir: &std::path::Path,
        log: &std::path::Path,
    ) -> std::io::Result<VerifyFinished> {
        let mut mended = None;
        // Held-out files a killed verification left in this task's copy (or in
        // agentloop's own directory) go first.
        if let Some(logs) = self.held_out.as_ref().and_then(|h| h.log.parent()) {
            match &self.copy {
                Some(c) => verify::clear_held_out_leftovers(logs, &c.copy.copy().dir),
                None if self.own_dir => verify::clear_held_out_leftovers(logs, dir),
                None => {}
            }
        }
        // The worktree as it is now (all of it: a worktree is not watched), for the
        // copy kept in step, and for a file too large for the work, which fails it
        // before anything copies it (a merged result's files were each a task's).
        let now = (self.copy.is_some() || (self.max_file_size > 0 && !self.own_dir))
            .then(|| agentloop_exec::git::Snapshots::known(dir).take())
            .flatten();
        if !self.own_dir
            && let Some(refused) = now.as_ref().and_then(|n| {
                let committed = self.committed_since_base(dir);
                verify::oversized::refused(
                    iteration,
                    dir,
                    n.dirty
                        .keys()
                        .map(String::as_str)
                        .chain(committed.iter().map(String::as_str)),
                    self.max_file_size,
                )
            })
        {
            verify::oversized::tell(log, &refused)?;
            return Ok(refused);
        }
        let (mut left_out, mut admitted) = (Vec::new(), Vec::new());
        let (dir, refused) = match &mut self.copy {
            Some(c) => {
                let judge = agentloop_verify::clean_copy::Judge {
                    overlay: c.overlay.as_ref(),
                    admission: c.admission.as_ref(),
                };
                match c.copy.refresh_judged(now.as_ref(), judge, &c.carry) {
                    Ok(r) => {
                        mended = r.warning();
                        left_out = r.left_out;
                        admitted = r.admitted;
                        (c.copy.copy().dir.clone(), None)
                    }
                    Err(e) => (dir.to_path_buf(), Some(e)),
                }
            }
            None => (dir.to_path_buf(), None),
        };
        let copied = (self.copy.is_some() && refused.is_none()) || self.own_dir;
        let result = self.run_in(iteration, &dir, log, copied).and_then(|mut r| {
            verify::left_out::tell(&mut r, left_out, admitted, log)?;
            Ok(r)
        });
        if let Some(w) = mended {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().append(true).open(log)?;
            writeln!(f, "[agentloop: {w}]")?;
        }
        if let Some(e) = refused {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().append(true).open(log)?;
            writeln!(
                f,
                "[agentloop could not make the clean copy ({e}): the checks ran in the worktree]"
            )?;
        }
        result
    }

    /// The paths the worktree at `dir` committed since the run's base (its task's
    /// commits and the landed work merged into it).
    fn committed_since_base(&self, dir: &std::path::Path) -> Vec<String> {
        let Some(base) = self.base.as_deref() else {
            return Vec::new();
        };
        let mut c = agentloop_exec::git::git_command(dir);
        c.args([
            "diff",
            "--name-only",
            "-z",
            "--no-renames",
            base,
            "HEAD",
            "--",
        ]);
        agentloop_exec::git::run_git(c, None)
            .map(|out| {
                out.split(|b| *b == 0)
                    .filter(|p| !p.is_empty())
                    .map(|p| String::from_utf8_lossy(p).into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    fn run_in(
        &self,
        iteration: u32,
        dir: &std::path::Path,
        log: &std::path::Path,
        copied: bool,
    ) -> std::io::Result<VerifyFinished> {
        let runner = verify::Runner {
            workdir: dir,
            timeout: self.timeout,
            output_cap: self.output_cap,
            jobs: self.jobs,
            log,
            wrap: self
                .sandbox
                .as_ref()
                .map(|b| {
                    b.sandbox
                        .confine_check(&b.root, dir, &self.reports, &b.warm)
                        .prefix
                })
                .unwrap_or_default(),
            bytecode: Default::default(),
            tests: self.expected.as_ref().map(|e| verify::TestsCheck {
                expected: e,
                reports: self.reports.clone(),
            }),
        };
        let mut result = runner.run_measured(iteration, &self.commands, &self.measures, || {
            self.stop.load(Ordering::SeqCst)
        })?;
        match &self.held_out {
            Some(h) if copied => {
                runner.held_out(h, &mut result, || self.stop.load(Ordering::SeqCst))?;
            }
            Some(_) => super::refused::held_out_refused(&mut result),
            None => {}
        }
        Ok(result)
    }
}

/// The held-out checks of several tasks' checks run together: every name, laid out and
/// logged as the last task's are; none when the last has no held-out directory.
fn held_out(all: &[&Checks]) -> Option<verify::HeldOut> {
    let last = all.last()?.held_out.as_ref()?;
    let mut names: Vec<String> = Vec::new();
    for n in all
        .iter()
        .filter_map(|c| c.held_out.as_ref())
        .flat_map(|h| &h.names)
    {
        if !names.contains(n) {
            names.push(n.clone());
        }
    }
    Some(verify::HeldOut {
        dir: last.dir.clone(),
        names,
        log: last.log.clone(),
        reports: last.reports.clone(),
    })
}

/// What a check run off the driver's thread is confined by: the sandbox, the project,
/// and where its Go build cache comes from.
#[derive(Debug, Clone)]
pub(crate) struct CheckBox {
    pub sandbox: agentloop_config::SandboxConfig,
    pub root: std::path::PathBuf,
    pub warm: agentloop_exec::sandbox::judge::WarmCaches,
}

/// A task's checks on a clean copy of its worktree, from a thread of their own.
pub(crate) fn check(
    iteration: u32,
    dir: PathBuf,
    log: PathBuf,
    checks: Checks,
    done: Sender<Done>,
) {
    std::thread::spawn(move || {
        let mut checks = checks;
        let result = checks.run(iteration, &dir, &log);
        let _ = done.send(Done::Checked {
            iteration,
            log,
            result: result.map(Box::new),
            copy: checks.copy.take().map(Box::new),
        });
    });
}
