//! Where agent iterations run, behind one trait: the scheduler hands an [`AgentJob`]
//! to the run's executor and hears back on its channel. [`LocalExecutor`] runs a
//! process on this machine; [`SlurmExecutor`] submits a batch job to a Slurm cluster
//! (`crate::cluster`), which gets the task's branch from the run's git remote and
//! pushes its result there. What comes back is judged the same way either way: the
//! result's files are put back into the task's worktree, and the driver's own guards
//! and checks decide.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc::Sender;

use agentloop_agents::{AgentRun, Invocation};
use agentloop_core::config::{AgentConfig, Config, ExecutorKind};
use agentloop_core::exec::{git, transport};
use agentloop_core::journal::{AgentError, AgentErrorKind};

use super::jobs::{AgentJob, Done};
use crate::cluster::{JobOutcome, JobSpec, slurm};

/// Where agent iterations run.
pub(crate) trait Executor {
    fn iterate(&self, job: AgentJob, done: Sender<Done>);
    /// An iteration a driver before this one left open (it died): whatever still runs
    /// for it elsewhere is ended, since the iteration is redone.
    fn abandon(&self, _iteration_dir: &Path) {}
}

/// The executor `[executor]` asks for.
pub(crate) fn from_config(config: &Config, root: &Path) -> Result<Box<dyn Executor>, String> {
    match config.executor.kind {
        ExecutorKind::Local => Ok(Box::new(LocalExecutor)),
        ExecutorKind::Slurm => Ok(Box::new(SlurmExecutor::new(config, root)?)),
    }
}

/// Whether `[executor]` can be set up here, before a run is created.
pub(crate) fn check(config: &Config, root: &Path) -> Result<(), String> {
    from_config(config, root).map(drop)
}

/// Runs each iteration as a local process, supervised from its own thread.
pub(crate) struct LocalExecutor;

impl Executor for LocalExecutor {
    fn iterate(&self, job: AgentJob, done: Sender<Done>) {
        std::thread::spawn(move || {
            // The whole job, not only the fields used: its sandbox's proxy lives as
            // long as the agent runs.
            let job = job;
            let prompt_file = job.dir.join("prompt.md");
            let log = job.dir.join("agent.log");
            let pid_file = job.dir.join("agent.pid");
            let inv = Invocation {
                run_id: &job.run_id,
                run_dir: &job.run_dir,
                iteration: job.iteration,
                workdir: &job.workdir,
                prompt: &job.prompt,
                prompt_file: &prompt_file,
                log: &log,
                pid_file: &pid_file,
                wrap: job.confined.prefix.clone(),
            };
            let stop = job.stop.clone();
            let run = job.agent.run(&inv, &mut || stop.load(Ordering::SeqCst));
            let _ = done.send(Done::Agent {
                iteration: job.iteration,
                agent: job.agent_name,
                run: Box::new(run),
                before: job.before,
            });
        });
    }
}

/// Runs each iteration as a Slurm batch job.
#[derive(Clone)]
pub(crate) struct SlurmExecutor {
    root: PathBuf,
    /// The remote as this repository names it (to push and fetch).
    remote: String,
    /// Its URL, for the jobs.
    remote_url: String,
    program: String,
    options: Vec<String>,
    poller: slurm::Poller,
    /// `[executor.slurm] time_limit`, when set.
    time_limit: Option<String>,
    agents: BTreeMap<String, AgentConfig>,
}

impl SlurmExecutor {
    fn new(config: &Config, root: &Path) -> Result<SlurmExecutor, String> {
        if config.sandbox.mode != agentloop_core::exec::sandbox::Mode::Off {
            return Err(
                "[sandbox] confines processes on this machine; with `[executor] kind = \"slurm\"` the agent runs on a node, where the cluster confines it: turn one of them off".into(),
            );
        }
        let remote = config.executor.remote.clone();
        let remote_url = match git::run(root, &["remote", "get-url", &remote]) {
            Ok(url) => url,
            Err(_) if remote.contains('/') || remote.contains(':') => remote.clone(),
            Err(_) => {
                return Err(format!(
                    "[executor] remote `{remote}` is neither a remote of this repository nor a URL (add one with `git remote add {remote} URL`)"
                ));
            }
        };
        // A local path as seen from here, absolute for the nodes.
        let remote_url = if Path::new(&remote_url).is_relative()
            && !remote_url.contains("://")
            && !remote_url.contains(':')
        {
            root.join(&remote_url).to_string_lossy().into_owned()
        } else {
            remote_url
        };
        let program = match &config.executor.program {
            Some(p) => p.clone(),
            None => std::env::current_exe()
                .map_err(|e| format!("cannot tell where agentloop is: {e}"))?
                .to_string_lossy()
                .into_owned(),
        };
        Ok(SlurmExecutor {
            root: root.to_path_buf(),
            remote,
            remote_url,
            program,
            options: config.executor.slurm.options()?,
            poller: slurm::Poller::new(config.executor.poll),
            time_limit: config.executor.slurm.time_limit.clone(),
            agents: config.agents.clone(),
        })
    }

    /// One iteration as a job, start to end: what its agent did, or why there is
    /// nothing to judge.
    fn run_job(&self, job: &AgentJob, done: &Sender<Done>) -> AgentRun {
        match self.submit_and_wait(job, done) {
            Ok(run) => run,
            Err((kind, message)) => AgentRun {
                error: Some(AgentError { kind, message }),
                ..Default::default()
            },
        }
    }

    fn submit_and_wait(
        &self,
        job: &AgentJob,
        done: &Sender<Done>,
    ) -> Result<AgentRun, (AgentErrorKind, String)> {
        let spawn = |e: String| (AgentErrorKind::Spawn, e);
        let n = job.iteration;
        let branch = git::run(&job.workdir, &["symbolic-ref", "HEAD"]).map_err(spawn)?;
        let start = transport::snapshot(
            &job.workdir,
            &job.dir,
            &format!("agentloop: start of iteration {n} of run {}", job.run_id),
        )
        .map_err(spawn)?;
        transport::push(&self.root, &self.remote, &start, &branch).map_err(spawn)?;
        let result_ref = format!("refs/agentloop/{}/{n}", job.run_id);
        // Whatever an earlier job's agent may have planted there is gone before this
        // job starts: the result fetched is the one this job pushed.
        transport::forget(&self.root, &self.remote, &result_ref);
        let agent = self
            .agents
            .get(&job.agent_name)
            .cloned()
            .unwrap_or_else(|| AgentConfig::builtin(&job.agent_name));
        let export = slurm::exported(&agent.allowed_env());
        let spec_timeout = agent.timeout;
        let spec = JobSpec {
            run_id: job.run_id.clone(),
            iteration: n,
            remote: self.remote_url.clone(),
            branch: branch.clone(),
            start: start.clone(),
            result_ref: result_ref.clone(),
            agent_name: job.agent_name.clone(),
            agent,
            prompt: job.prompt.clone(),
            run_dir: job.run_dir.to_string_lossy().into_owned(),
        };
        let spec = serde_json::to_string(&spec).map_err(|e| spawn(e.to_string()))?;
        let mut options = self.options.clone();
        if self.time_limit.is_none() {
            // Not the partition's default, which may end the job before the agent's
            // own timeout: the agent's timeout and time to clone and push.
            options.push(format!("--time={}", slurm::minutes_for(spec_timeout)));
        }
        let title = format!("agentloop: iteration {n} of run {}", job.run_id);
        let name = format!("agentloop-{}-{n}", job.run_id);
        let log = job.dir.join("agent.log");
        let id = slurm::submit(&slurm::Submit {
            name: &name,
            output: &log,
            export: &export,
            options: &options,
            script: &slurm::script(&self.program, &title, &spec),
        })
        .map_err(spawn)?;
        let _ = std::fs::write(job.dir.join("slurm.job"), format!("{id}\n"));
        let report = |state: &str, reason: Option<&str>| {
            let _ = done.send(Done::Job(agentloop_core::journal::JobState {
                iteration: n,
                executor: "slurm".into(),
                job: id.clone(),
                state: state.to_string(),
                reason: reason
                    .filter(|r| !r.is_empty() && *r != "None")
                    .map(String::from),
            }));
        };
        report("SUBMITTED", None);
        let state = self.wait(&id, job, &report)?;
        // The result, if the job pushed one: whatever the job's state, it is the
        // agent's work, and is judged.
        match self.result(&result_ref, &branch, &start, job) {
            Ok(run) => Ok(run),
            Err(why) => Err(match state {
                slurm::JobState::Lost { state } => (
                    AgentErrorKind::Lost,
                    format!("Slurm job {id} ended {state} before its result was pushed"),
                ),
                slurm::JobState::TimedOut => (
                    AgentErrorKind::Timeout,
                    format!("Slurm job {id} reached its time limit"),
                ),
                slurm::JobState::OutOfMemory => (
                    AgentErrorKind::Other,
                    format!("Slurm job {id} ran out of memory"),
                ),
                _ if !log.exists() => (
                    AgentErrorKind::Spawn,
                    format!(
                        "Slurm job {id} ended without a result ({why}) and wrote no output to {}: the run's directory must be on a disk the nodes share, and `agentloop` at the same path there (docs/EXECUTORS.md)",
                        log.display()
                    ),
                ),
                _ => (
                    AgentErrorKind::Spawn,
                    format!(
                        "Slurm job {id} ended without a result ({why}): {}",
                        last_lines(&log)
                    ),
                ),
            }),
        }
    }

    /// Follows the job until it is over; cancels it when the run is stopped now.
    fn wait(
        &self,
        id: &str,
        job: &AgentJob,
        report: &dyn Fn(&str, Option<&str>),
    ) -> Result<slurm::JobState, (AgentErrorKind, String)> {
        self.poller.watch(id);
        let state = self.follow(id, job, report);
        self.poller.forget(id);
        state
    }

    /// Follows the job, reporting each change of its state or reason.
    fn follow(
        &self,
        id: &str,
        job: &AgentJob,
        report: &dyn Fn(&str, Option<&str>),
    ) -> Result<slurm::JobState, (AgentErrorKind, String)> {
        let mut cancelled = false;
        let mut last: Option<(String, String)> = None;
        loop {
            if job.stop.load(Ordering::SeqCst) && !cancelled {
                cancelled = slurm::cancel(id).is_ok();
            }
            let now = self.poller.next(id);
            if let Ok(s) = &now {
                let seen = match s {
                    slurm::JobState::Waiting { state, reason } => (state.clone(), reason.clone()),
                    over => (over.word().to_string(), String::new()),
                };
                if last.as_ref() != Some(&seen) {
                    report(&seen.0, Some(&seen.1));
                    last = Some(seen);
                }
            }
            match now {
                Ok(slurm::JobState::Waiting { state, reason }) => {
                    if state == "PENDING" && slurm::never_starts(&reason) {
                        let _ = slurm::cancel(id);
                        return Err((
                            AgentErrorKind::Spawn,
                            format!("Slurm cannot start job {id}: {reason}"),
                        ));
                    }
                }
                Ok(_) if cancelled => {
                    return Err((
                        AgentErrorKind::Other,
                        format!("Slurm job {id} was cancelled: the run was stopped"),
                    ));
                }
                Ok(over) => return Ok(over),
                // The controller did not answer: ask again next round.
                Err(_) => {}
            }
        }
    }

    /// The job's pushed result, fetched and put into the task's worktree.
    fn result(
        &self,
        result_ref: &str,
        branch: &str,
        start: &str,
        job: &AgentJob,
    ) -> Result<AgentRun, String> {
        let commit = transport::fetch(&self.root, &self.remote, result_ref)?;
        let parent = transport::parent(&self.root, &commit)?;
        let start_parent = transport::parent(&self.root, start)?;
        if parent != start_parent {
            return Err(format!(
                "the result {commit} does not start from the task's branch at {start_parent}"
            ));
        }
        let outcome = JobOutcome::parse(
            &transport::message(&self.root, &commit)?,
            &job.run_id,
            job.iteration,
        )?;
        transport::apply(&job.workdir, &commit)?;
        // Neither the result nor the task's start is needed there any more: the
        // work is in the worktree, and the next iteration pushes its own start.
        transport::forget(&self.root, &self.remote, result_ref);
        transport::forget(&self.root, &self.remote, branch);
        transport::drop_ref(&self.root, result_ref);
        // What only the engine or the driver may say is not taken from the job's
        // word: an outcome pushed from the node cannot make its iteration one that was
        // stopped or lost (neither counts as an attempt).
        let mut run = outcome.into_run();
        run.finished.killed = false;
        if let Some(e) = run
            .error
            .as_mut()
            .filter(|e| e.kind == AgentErrorKind::Lost)
        {
            e.kind = AgentErrorKind::Other;
        }
        Ok(run)
    }
}

fn last_lines(log: &Path) -> String {
    let text = std::fs::read(log).unwrap_or_default();
    let from = text.len().saturating_sub(2000);
    agentloop_core::failure::last_lines(&String::from_utf8_lossy(&text[from..]))
}

impl Executor for SlurmExecutor {
    fn abandon(&self, iteration_dir: &Path) {
        if let Ok(id) = std::fs::read_to_string(iteration_dir.join("slurm.job")) {
            let _ = slurm::cancel(id.trim());
        }
    }

    fn iterate(&self, job: AgentJob, done: Sender<Done>) {
        let this = self.clone();
        std::thread::spawn(move || {
            let mut run = this.run_job(&job, &done);
            // Stopped now: whatever came back, the iteration was ended on request.
            if job.stop.load(Ordering::SeqCst) {
                run.finished.killed = true;
            }
            let _ = done.send(Done::Agent {
                iteration: job.iteration,
                agent: job.agent_name,
                run: Box::new(run),
                before: job.before,
            });
        });
    }
}
