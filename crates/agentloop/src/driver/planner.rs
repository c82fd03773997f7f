//! Planners in the driver (`[run] planners`, `policy::planning`): a planner is asked
//! in a throwaway copy of the work so far — the project's tree with one worker, the
//! integration branch's head with several, in a worktree of the planner's own — with
//! its agent's read-only tools where its CLI has them; what it changes there is
//! thrown away before the next planner. With workers it runs on a thread of its own
//! while they work. Its answer is judged by the policy, its tasks held to their
//! checks on the work as it stands (`proposal`), and recorded; tasks it adds join the
//! plan as a new plan version.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::Instant;

use agentloop_agents::Agent;
use agentloop_journal::{Event, Planned, PlannerFinished};
use agentloop_policy::planning;

use super::Driver;
use super::jobs::{Answer, Done};
use crate::error::CliError;

/// A planner's turn, ready to run anywhere: everything it needs is owned.
pub(crate) struct PlannerJob {
    planner: u32,
    basis: String,
    agent: Box<dyn Agent>,
    run_id: String,
    run_dir: PathBuf,
    /// Where it reads: the throwaway copy.
    workdir: PathBuf,
    /// Its prompt and log.
    dir: PathBuf,
    prompt: String,
    /// The sandbox it runs under (`[sandbox]`; none: an empty prefix), its proxy kept
    /// as long as the job.
    confined: agentloop_exec::sandbox::Confinement,
}

impl PlannerJob {
    fn run(self, stop: &mut dyn FnMut() -> bool) -> Answer {
        let started = Instant::now();
        let (log, prompt_file) = (self.dir.join("agent.log"), self.dir.join("prompt.md"));
        let inv = agentloop_agents::Invocation {
            run_id: &self.run_id,
            run_dir: &self.run_dir,
            iteration: 0,
            workdir: &self.workdir,
            prompt: &self.prompt,
            prompt_file: &prompt_file,
            log: &log,
            pid_file: &self.dir.join("agent.pid"),
            wrap: self.confined.prefix.clone(),
        };
        let run = self.agent.run(&inv, stop);
        let text = match &run.error {
            Some(e) => Err(format!("its agent failed: {}", e.message)),
            None => Ok(run.final_message.clone()),
        };
        Answer {
            planner: self.planner,
            basis: self.basis,
            text,
            cost_usd: run.cost_usd,
            duration_ms: started.elapsed().as_millis() as u64,
            log,
        }
    }
}

impl Driver {
    /// Planner `planner`'s turn, recorded as started, with its copy made.
    fn planner_job(&mut self, planner: u32, basis: &str) -> Result<PlannerJob, Answer> {
        let fail = |reason: String| Answer {
            planner,
            basis: basis.to_string(),
            text: Err(reason),
            cost_usd: 0.0,
            duration_ms: 0,
            log: PathBuf::new(),
        };
        let agent_name = self.planner_agent();
        let agent = match agentloop_agents::resolve_read_only(&self.config, &agent_name) {
            Ok((agent, _)) => agent,
            Err(e) => return Err(fail(format!("its agent {agent_name} cannot start: {e}"))),
        };
        let dir = self
            .run
            .path
            .join("planners")
            .join(format!("{}-planner-{planner}", self.state.last_seq + 1));
        let workdir = match self.throwaway_copy(&format!("planner-{planner}")) {
            Ok(w) => w,
            Err(e) => return Err(fail(format!("no copy of the work to read: {e}"))),
        };
        let prompt = planning::prompt(&self.state, planner);
        if let Err(e) = std::fs::create_dir_all(&dir).and_then(|_| {
            agentloop_ground::fsutil::write_atomic(&dir.join("prompt.md"), prompt.as_bytes())
        }) {
            return Err(fail(format!("{}: {e}", dir.display())));
        }
        let confined = match self.confine_in(&workdir, &dir, &agent_name) {
            Ok(c) => c,
            Err(e) => return Err(fail(e.message)),
        };
        Ok(PlannerJob {
            planner,
            basis: basis.to_string(),
            agent,
            run_id: self.run.id.clone(),
            run_dir: self.run.path.clone(),
            workdir,
            dir,
            prompt,
            confined,
        })
    }

    /// A throwaway copy of the work so far for an agent that only reads (`name`: a
    /// planner, the judge): the integration branch's head in a worktree of its own
    /// with workers, else a clean copy of the project's tree.
    pub(crate) fn throwaway_copy(&self, name: &str) -> Result<PathBuf, String> {
        match &self.state.integration {
            Some(i) => agentloop_exec::worktree::reader_worktree(
                &self.ws.root,
                &self.run.id,
                name,
                &i.head,
            ),
            None => {
                let copy = agentloop_verify::clean_copy::CleanCopy::for_run(
                    &self.ws.root,
                    &format!("{}-{name}", self.run.id),
                )
                .ok_or("no cache directory (set HOME or XDG_CACHE_HOME)")?;
                copy.refresh(None, &self.state.settings.carry)?;
                Ok(copy.dir)
            }
        }
    }

    /// Planner `planner` asked, the run standing at `basis`: recorded, then its job
    /// made (or, when it cannot be, its answer: why).
    fn ask_planner(
        &mut self,
        planner: u32,
        basis: &str,
    ) -> Result<Result<PlannerJob, Answer>, CliError> {
        self.record(Event::PlannerStarted {
            planner,
            basis: basis.to_string(),
        })?;
        self.progress
            .note(&format!("planner {planner} looks for the next tasks"));
        Ok(self.planner_job(planner, basis))
    }

    /// One worker: the planner's turn now, in the driver's own.
    pub(crate) fn plan(&mut self, planner: u32, basis: String) -> Result<(), CliError> {
        let answer = match self.ask_planner(planner, &basis)? {
            Ok(job) => {
                let mut last = Instant::now();
                let stop = &mut || self.should_stop(&mut last);
                job.run(stop)
            }
            Err(a) => a,
        };
        self.planned(answer)
    }

    /// Workers: the planner's turn on a thread of its own; its answer comes back as
    /// [`Done::Planned`].
    pub(crate) fn start_planner(
        &mut self,
        planner: u32,
        basis: String,
        stop: &Arc<AtomicBool>,
        done: &Sender<Done>,
    ) -> Result<(), CliError> {
        match self.ask_planner(planner, &basis)? {
            Ok(job) => {
                let (stop, done) = (stop.clone(), done.clone());
                std::thread::spawn(move || {
                    let answer = job.run(&mut || stop.load(Ordering::SeqCst));
                    let _ = done.send(Done::Planned(Box::new(answer)));
                });
            }
            Err(a) => {
                let _ = done.send(Done::Planned(Box::new(a)));
            }
        }
        Ok(())
    }

    /// The agent planners run: `[run] planner_agent`, else the run's.
    fn planner_agent(&self) -> String {
        let s = &self.state.settings;
        s.planner_agent.clone().unwrap_or_else(|| s.agent.clone())
    }

    /// A planner's answer, judged and recorded.
    pub(crate) fn planned(&mut self, a: Answer) -> Result<(), CliError> {
        let agent = self.planner_agent();
        if a.log.exists() {
            let _ = self.redactor(&agent).scrub_file(&a.log);
        }
        let outcome = match &a.text {
            Ok(text) => {
                let read = planning::review(&self.state, text);
                let dir = match a.log.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                    _ => self.run.path.join("planners"),
                };
                self.held_to_checks(read, &dir)
            }
            Err(reason) => Planned::Failed {
                reason: reason.clone(),
            },
        };
        self.progress
            .note(&format!("planner {}: {}", a.planner, outcome.describe()));
        self.record(Event::PlannerFinished(PlannerFinished {
            planner: a.planner,
            basis: a.basis,
            outcome,
            cost_usd: a.cost_usd,
            duration_ms: a.duration_ms,
        }))
    }
}
