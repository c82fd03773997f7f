//! Where agent iterations run, behind one trait: the scheduler hands an [`AgentJob`]
//! to the run's executor and hears back on its channel. [`LocalExecutor`] runs a
//! process on this machine; [`ClusterExecutor`] submits a job to a cluster's scheduler
//! (Slurm or Kubernetes, `crate::cluster`), which gets the task's branch from the run's git remote and
//! pushes its result there. What comes back is judged the same way either way: the
//! result's files are put back into the task's worktree, and the driver's own guards
//! and checks decide.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Sender;

use agentloop_agents::{AgentRun, Invocation};
use agentloop_config::{AgentConfig, Config, ExecutorKind};
use agentloop_exec::{git, transport};
use agentloop_journal::{AgentError, AgentErrorKind};

use super::jobs::{AgentJob, Done};
use crate::cluster::kubernetes::KubernetesEngine;
use crate::cluster::slurm::SlurmEngine;
use crate::cluster::{Ended, Engine, JobOutcome, JobSpec, Submission};

/// Where agent iterations run.
pub(crate) trait Executor {
    fn iterate(&self, job: AgentJob, done: Sender<Done>);
    /// An iteration a driver before this one left open (it died): whatever still runs
    /// for it elsewhere is ended, since the iteration is redone.
    fn abandon(&self, _iteration_dir: &Path) {}
}

/// Where a Slurm job finds the agent's own variables, in its iteration's directory.
const SECRETS_FILE: &str = "job-secrets.json";

/// The executor `[executor]` asks for.
pub(crate) fn from_config(config: &Config, root: &Path) -> Result<Box<dyn Executor>, String> {
    match config.executor.kind {
        ExecutorKind::Local => Ok(Box::new(LocalExecutor)),
        ExecutorKind::Slurm | ExecutorKind::Kubernetes => {
            Ok(Box::new(cluster_executor(config, root)?))
        }
    }
}

fn cluster_executor(config: &Config, root: &Path) -> Result<ClusterExecutor, String> {
    let engine: Arc<dyn Engine> = match config.executor.kind {
        ExecutorKind::Kubernetes => Arc::new(KubernetesEngine::new(config)?),
        _ => Arc::new(SlurmEngine::new(config)?),
    };
    ClusterExecutor::new(config, root, engine)
}

/// Whether `[executor]` can be set up here, before a run is created.
pub(crate) fn check(config: &Config, root: &Path) -> Result<(), String> {
    match config.executor.kind {
        ExecutorKind::Local => Ok(()),
        _ => cluster_executor(config, root)?.engine.check(),
    }
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
            // Its sandbox goes before the driver hears of the end: the agent's commits
            // are taken back into the repository then (`GitView`).
            drop(job.confined);
            let _ = done.send(Done::Agent {
                iteration: job.iteration,
                agent: job.agent_name,
                run: Box::new(run),
                before: job.before,
            });
        });
    }
}

/// Runs each iteration as a job of a cluster's scheduler (its [`Engine`]).
#[derive(Clone)]
pub(crate) struct ClusterExecutor {
    root: PathBuf,
    /// The remote as this repository names it (to push and fetch).
    remote: String,
    /// Its URL, for the jobs.
    remote_url: String,
    program: String,
    agents: BTreeMap<String, AgentConfig>,
    engine: Arc<dyn Engine>,
}

impl ClusterExecutor {
    fn new(
        config: &Config,
        root: &Path,
        engine: Arc<dyn Engine>,
    ) -> Result<ClusterExecutor, String> {
        if config.sandbox.mode != agentloop_config::sandbox::Mode::Off {
            return Err(format!(
                "[sandbox] confines processes on this machine; with `[executor] kind = \"{}\"` the agent runs on a node, where the cluster confines it: turn one of them off",
                engine.word()
            ));
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
        if !engine.reaches_local_paths()
            && (remote_url.starts_with('/') || remote_url.starts_with("file://"))
        {
            return Err(format!(
                "[executor] remote `{remote}` is {remote_url}, a path on this machine: no {} job can reach it; give the jobs a URL they can clone from and push to (`git remote add {remote} https://…`, or `[executor] remote = \"https://…\"`)",
                engine.name()
            ));
        }
        let program = match &config.executor.program {
            Some(p) if p.trim().is_empty() => {
                return Err(
                    "executor.program: empty; name the `agentloop` program on the cluster's nodes, or leave the key out".into(),
                );
            }
            Some(p) => p.clone(),
            None => engine.default_program()?,
        };
        Ok(ClusterExecutor {
            root: root.to_path_buf(),
            remote,
            remote_url,
            program,
            agents: config.agents.clone(),
            engine,
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
        let mut agent = self
            .agents
            .get(&job.agent_name)
            .cloned()
            .unwrap_or_else(|| AgentConfig::builtin(&job.agent_name));
        let env = crate::cluster::exported(&agent.allowed_env());
        let agent_timeout = agent.timeout;
        // The agent's own variables travel apart from the spec, which the engine
        // shows to whoever may read its jobs.
        let secrets = std::mem::take(&mut agent.env);
        let secret_file = job.dir.join(SECRETS_FILE);
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
            secret_env: secrets.keys().cloned().collect(),
            secret_file: (!secrets.is_empty()).then(|| secret_file.to_string_lossy().into_owned()),
        };
        let spec = serde_json::to_string(&spec).map_err(|e| spawn(e.to_string()))?;
        let log = job.dir.join("agent.log");
        let engine = &self.engine;
        let name = format!("agentloop-{}-{n}-{}", job.run_id, nonce());
        // The token first: a driver killed before the id is written down leaves a job
        // that whoever takes over finds by it.
        let token_file = job.dir.join(format!("{}.name", engine.word()));
        agentloop_ground::fsutil::write_atomic(&token_file, format!("{name}\n").as_bytes())
            .map_err(|e| spawn(format!("cannot write {}: {e}", token_file.display())))?;
        let id = engine
            .submit(&Submission {
                name: &name,
                title: &format!("agentloop: iteration {n} of run {}", job.run_id),
                spec: &spec,
                program: &self.program,
                log: &log,
                env: &env,
                secrets: &secrets,
                secret_file: &secret_file,
                agent_timeout,
                run_id: &job.run_id,
                iteration: n,
                start: &start,
            })
            .map_err(spawn)?;
        let _ = std::fs::write(
            job.dir.join(format!("{}.job", engine.word())),
            format!("{id}\n"),
        );
        let mut report = |state: &str, reason: Option<&str>| {
            let _ = done.send(Done::Job(agentloop_journal::JobState {
                iteration: n,
                executor: engine.word().into(),
                job: id.clone(),
                state: state.to_string(),
                reason: reason
                    .filter(|r| !r.is_empty() && *r != "None")
                    .map(String::from),
            }));
        };
        report("SUBMITTED", None);
        let ended = engine.follow(&id, &name, &job.stop, &mut report);
        // A job that never started leaves its secrets file: gone with the job.
        let _ = std::fs::remove_file(&secret_file);
        let ended = ended?;
        let name = engine.name();
        // The result, if the job pushed one: however the job ended, it is the agent's
        // work, and is judged.
        match self.result(&result_ref, &branch, &start, job) {
            Ok(run) => Ok(run),
            Err(why) => Err(match ended {
                Ended::Lost(how) => (
                    AgentErrorKind::Lost,
                    format!("{name} job {id} {how} before its result was pushed"),
                ),
                Ended::TimedOut => (
                    AgentErrorKind::Timeout,
                    format!("{name} job {id} reached its time limit"),
                ),
                Ended::OutOfMemory => (
                    AgentErrorKind::Other,
                    format!("{name} job {id} ran out of memory"),
                ),
                _ if !log.exists() => (
                    AgentErrorKind::Spawn,
                    format!(
                        "{name} job {id} ended without a result ({why}) and wrote no output to {}: {}",
                        log.display(),
                        engine.no_output_hint()
                    ),
                ),
                _ => (
                    AgentErrorKind::Spawn,
                    format!(
                        "{name} job {id} ended without a result ({why}): {}",
                        last_lines(&log)
                    ),
                ),
            }),
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
    agentloop_ground::failure::last_lines(&String::from_utf8_lossy(&text[from..]))
}

impl Executor for ClusterExecutor {
    fn abandon(&self, iteration_dir: &Path) {
        let word = self.engine.word();
        let read = |file: String| {
            agentloop_ground::fsutil::read_regular(&iteration_dir.join(file), 4096)
                .ok()
                .map(|b| String::from_utf8_lossy(&b).trim().to_string())
                .filter(|s| !s.is_empty())
        };
        let (id, name) = (read(format!("{word}.job")), read(format!("{word}.name")));
        if id.is_some() || name.is_some() {
            // An iteration of a version that wrote no token has only the id.
            self.engine
                .cancel(id.as_deref(), name.as_deref().unwrap_or(""));
        }
        // A driver killed before its job read them (or before it was submitted)
        // leaves the agent's variables on the shared disk: gone with the job.
        let _ = std::fs::remove_file(iteration_dir.join(SECRETS_FILE));
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

/// Eight hex digits no other job's name has: from the standard library's per-process
/// random hash keys, the clock and the pid.
fn nonce() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.write_u32(std::process::id());
    format!("{:08x}", h.finish() as u32)
}
