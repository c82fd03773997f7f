//! The driver of a run with workers: a scheduler over task iterations. The policy
//! (`policy::schedule`) says what every iteration in progress needs and whether a
//! worker is free for the next ready task; agents, checks and merges run off this
//! thread ([`super::jobs`]); every result comes back here to be recorded, one at a
//! time, in the one journal.

use agentloop_policy::evidence::Place;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Duration;

use agentloop_exec::worktree;
use agentloop_ground::values::Land;
use agentloop_journal::*;
use agentloop_policy::{self as policy, Action, IterationPlan, Pick, WaitReason};

use super::Driver;
use super::executor::{self, Executor};
use super::jobs::{self, AgentJob, Checks, Done};
use crate::error::{CliError, ExitKind};

/// What the scheduler has under way, by iteration.
struct Workers {
    done_tx: Sender<Done>,
    done_rx: Receiver<Done>,
    busy: BTreeSet<u32>,
    /// Planners at work on threads of their own.
    planners: usize,
    stop: Arc<AtomicBool>,
    executor: Box<dyn Executor>,
}

impl Workers {
    /// The steps a job's report ends are no longer under way.
    fn free(&mut self, d: &Done) {
        if let Done::Planned(_) = d {
            self.planners = self.planners.saturating_sub(1);
        }
        if d.ends() {
            for i in d.iterations() {
                self.busy.remove(&i);
            }
        }
    }
}

impl Driver {
    /// Drives a run with workers until it ends or waits for a person.
    pub(super) fn drive_workers(&mut self) -> Result<ExitKind, CliError> {
        self.start_integration()?;
        // Agents run side by side: each runs under a keeper that ends what it leaves
        // (found by the process tree); a leftover that still reaches the driver is
        // told apart by its owner.
        agentloop_exec::reap::share(true);
        if let Ok(me) = std::env::current_exe() {
            agentloop_exec::keeper::use_keeper(me);
        }
        let result = self.schedule_workers();
        agentloop_exec::reap::sweep_all();
        result
    }

    fn schedule_workers(&mut self) -> Result<ExitKind, CliError> {
        let (done_tx, done_rx) = channel();
        let executor =
            executor::from_config(&self.config, &self.ws.root).map_err(CliError::user)?;
        let mut w = Workers {
            done_tx,
            done_rx,
            busy: BTreeSet::new(),
            planners: 0,
            stop: Arc::new(AtomicBool::new(false)),
            executor,
        };
        // Left open by a driver that died: their jobs elsewhere are ended (local
        // agents were reaped already).
        for open in &self.state.running {
            if open.agent.is_none() {
                w.executor
                    .abandon(&self.run.iteration_dir(open.started.iteration));
            }
        }
        let mut waiting_since: Option<WaitReason> = None;
        let mut review_polled: Option<std::time::Instant> = None;
        loop {
            if self.interrupted.load(Ordering::SeqCst) {
                // Ctrl-C: end every agent; what is open is redone by `resume`.
                w.stop.store(true, Ordering::SeqCst);
                while !w.busy.is_empty() || w.planners > 0 {
                    match w.done_rx.recv_timeout(Duration::from_secs(10)) {
                        Ok(d) => w.free(&d),
                        Err(_) => break,
                    }
                }
                self.flush();
                self.progress.interrupted(&self.run.id);
                return Ok(ExitKind::Interrupted);
            }
            while let Ok(d) = w.done_rx.try_recv() {
                w.free(&d);
                self.complete(d)?;
            }
            self.poll_controls()?;
            // An agent's usage limit has reset: its tasks go on.
            let now = agentloop_ground::clock::now_ms();
            let over: Vec<String> = self
                .state
                .agent_limits
                .iter()
                .filter(|(_, until)| now >= **until)
                .map(|(a, _)| a.clone())
                .collect();
            for agent in over {
                self.record(Event::AgentLimitOver { agent })?;
            }
            w.stop
                .store(self.state.stop == Some(StopKind::Now), Ordering::SeqCst);
            let next = match policy::pick(&self.state, &w.busy) {
                // A planner at work may still add tasks: the run neither ends nor
                // stops to wait under it.
                Pick::Wait(_) | Pick::Exit(_) if w.planners > 0 => Pick::AwaitWork,
                next => next,
            };
            if !matches!(next, Pick::Wait(_) | Pick::AwaitWork) {
                waiting_since = None;
            }
            match next {
                Pick::Take(Action::Record(Event::RunFinished { status, reason })) => {
                    // Worktrees go, and the branch lands, before the run is recorded as
                    // over: a crash in between leaves a run that `resume` finishes.
                    self.wind_down(status)?;
                    self.record_decision(Event::RunFinished { status, reason })?;
                }
                Pick::Take(Action::Record(event)) => {
                    self.record_decision(event)?;
                }
                Pick::Take(Action::Iterate(plan)) => self.start_iteration(plan, &mut w)?,
                Pick::Take(Action::CheckSurface { iteration }) => self.check_surface(iteration)?,
                Pick::Take(Action::CheckTripwires { iteration }) => {
                    self.check_tripwires(iteration)?
                }
                Pick::Take(Action::Restore { iteration, cause }) => {
                    self.restore_surface(iteration, cause)?;
                }
                Pick::Take(Action::Verify { iteration, task }) => {
                    let dir = self.workdir(iteration);
                    let log = self.run.iteration_dir(iteration).join("verify.log");
                    let mut checks = self.checks_at(
                        &task,
                        &w.stop,
                        Place::Worktree,
                        self.reports_dir(iteration),
                    );
                    checks.copy = self.task_copy(&task, &dir);
                    checks.held_out = self.held_out(&task, iteration);
                    w.busy.insert(iteration);
                    jobs::check(iteration, dir, log, checks, w.done_tx.clone());
                }
                Pick::Take(Action::Merge { batch }) => {
                    self.start_merge(batch, &mut w.busy, &w.stop, &w.done_tx)?
                }
                Pick::Take(Action::Ship(step)) => self.ship(step)?,
                // The judge reads in the driver's own turn.
                Pick::Take(Action::Judge { cycle }) => self.judge_cycle(cycle)?,
                Pick::Take(Action::Plan { planner, basis }) => {
                    w.planners += 1;
                    self.start_planner(planner, basis, &w.stop, &w.done_tx)?;
                }
                Pick::Take(Action::Validate) => self.validate()?,
                Pick::Take(Action::TestBaseline) => self.test_baseline()?,
                // Each reviewer reads on a thread of its own while the others work.
                Pick::Take(Action::Review { iteration, task }) => {
                    if self.start_review(iteration, &task, &w.stop, &w.done_tx)? {
                        w.busy.insert(iteration);
                    }
                }
                Pick::Take(Action::CheckDiff { task }) => self.check_task_diff(&task)?,
                Pick::Take(a @ (Action::Exit(_) | Action::Wait(_))) => {
                    unreachable!("pick gives {a:?} as Exit or Wait")
                }
                Pick::Exit(status) => {
                    return self.finish_workers(status);
                }
                Pick::Wait(reason) => {
                    if waiting_since.as_ref() != Some(&reason) {
                        self.flush();
                        self.progress.waiting(&self.state, &reason);
                        waiting_since = Some(reason.clone());
                    }
                    if let WaitReason::Budget { .. } = reason {
                        self.flush();
                        return Ok(ExitKind::Budget);
                    }
                    if let WaitReason::UsageLimit { until_ms } = reason
                        && agentloop_ground::clock::now_ms() >= until_ms
                        && self.state.limit_until_ms.is_some()
                    {
                        self.record(Event::LimitWaitOver)?;
                        continue;
                    }
                    if self.out.no_wait
                        && !matches!(reason, WaitReason::Paused | WaitReason::UsageLimit { .. })
                    {
                        self.flush();
                        return Ok(match reason {
                            WaitReason::Blocked { breaker: true, .. } => ExitKind::Breaker,
                            _ => ExitKind::Waiting,
                        });
                    }
                    std::thread::sleep(Duration::from_millis(200));
                    if let WaitReason::Gate(
                        agentloop_journal::Gate::Review | agentloop_journal::Gate::Diff(_),
                    ) = reason
                    {
                        self.poll_review(&mut review_polled)?;
                    }
                }
                Pick::AwaitWork => {
                    // Only work under way: wait for some of it to finish.
                    self.flush_soon();
                    if let Ok(d) = w.done_rx.recv_timeout(Duration::from_millis(100)) {
                        w.free(&d);
                        self.complete(d)?;
                    }
                }
            }
        }
    }

    /// The run's integration branch, made from HEAD when the run first drives.
    fn start_integration(&mut self) -> Result<(), CliError> {
        worktree::repair(&self.ws.root);
        let branch = match &self.state.integration {
            Some(i) => i.branch.clone(),
            None => self.state.settings.branch.replace("{run}", &self.run.id),
        };
        // A driver that died in the middle of a git command left its locks.
        match agentloop_exec::stale_locks::clear(&self.ws.root, &self.run.id, &branch) {
            Ok(removed) if !removed.is_empty() => crate::render::warn(&format!(
                "removed {} a killed driver left: {}",
                agentloop_ground::words::plural(removed.len(), "git lock file", "git lock files"),
                removed
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            Ok(_) => {}
            Err(e) => return Err(CliError::user(format!("cannot take the run over: {e}"))),
        }
        if self.state.integration.is_some() {
            return Ok(());
        }
        let base = worktree::start_integration(&self.ws.root, &branch)
            .map_err(|e| CliError::user(format!("cannot start the integration branch: {e}")))?;
        self.record(Event::IntegrationStarted { branch, base })
    }

    fn integration(&self) -> Result<Integration, CliError> {
        self.state
            .integration
            .clone()
            .ok_or_else(|| CliError::internal("a run with workers has no integration branch"))
    }

    /// A task's checks, as they run at `place` (its worktree, or the merged result)
    /// with their reports in `reports`.
    pub(super) fn checks_at(
        &self,
        task: &str,
        stop: &Arc<AtomicBool>,
        place: Place,
        reports: std::path::PathBuf,
    ) -> Checks {
        Checks {
            expected: self.expected(Some(task), place),
            reports,
            commands: self.checks_for(task),
            measures: self.state.plan.measures(task),
            timeout: self.config.verify.timeout,
            output_cap: self.config.verify.output_cap,
            jobs: self.config.verify.jobs_for(self.state.settings.workers),
            max_file_size: self.config.verify.max_file_size,
            base: self.state.integration.as_ref().map(|i| i.base.clone()),
            stop: stop.clone(),
            sandbox: self.check_sandbox(),
            copy: None,
            held_out: None,
            own_dir: false,
        }
    }

    /// A task's iteration: its worktree (made, or brought up to the integration head),
    /// the prompt and `iteration_started`, then its agent on the executor.
    fn start_iteration(&mut self, plan: IterationPlan, w: &mut Workers) -> Result<(), CliError> {
        let agent = agentloop_agents::resolve(&self.config, &plan.agent)
            .map_err(|e| CliError::user(format!("task {}: {e}", plan.task)).hint(e.hint()))?;
        self.exclude_own_files(agent.as_ref());
        let i = self.integration()?;
        // A cycle's judge restarted the workers: the task starts again from the
        // integration head, its work so far set aside (its attempts stay under
        // `refs/agentloop/RUN/attempts/`).
        if self.state.task(&plan.task).is_some_and(|t| t.fresh_start) {
            worktree::remove_task(&self.ws.root, &self.run.id, &i.branch, &plan.task);
        }
        let fresh = worktree::run_dir(&self.run.id)
            .is_none_or(|d| !d.join(&plan.task).join(".git").exists());
        let wt =
            worktree::task_worktree(&self.ws.root, &self.run.id, &i.branch, &plan.task, &i.head)
                .map_err(|e| {
                    CliError::internal(format!("task {}: cannot make its worktree: {e}", plan.task))
                })?;
        if !fresh {
            // Another attempt: on top of what was merged meanwhile (conflicts, if any,
            // stay in the files for the agent, whose prompt says so).
            worktree::catch_up(&wt, &i.head).map_err(|e| {
                CliError::internal(format!(
                    "task {}: cannot update its worktree: {e}",
                    plan.task
                ))
            })?;
        }
        let Some(p) = self.prepare_in(plan, Some(wt))? else {
            return Ok(());
        };
        let iteration = p.plan.iteration;
        w.busy.insert(iteration);
        let confined = self.confine(&p.workdir, iteration, &p.plan.agent)?;
        w.executor.iterate(
            AgentJob {
                confined,
                iteration,
                agent_name: p.plan.agent.clone(),
                agent,
                run_id: self.run.id.clone(),
                run_dir: self.run.path.clone(),
                workdir: p.workdir,
                prompt: p.prompt,
                dir: self.run.iteration_dir(iteration),
                before: p.before,
                stop: w.stop.clone(),
            },
            w.done_tx.clone(),
        );
        Ok(())
    }

    /// Records what a job reports.
    fn complete(&mut self, d: Done) -> Result<(), CliError> {
        match d {
            Done::Planned(a) => self.planned(*a),
            Done::Reviewed(r) => self.reviewed(*r),
            Done::Job(j) => {
                if self
                    .state
                    .open_iteration(j.iteration)
                    .is_some_and(|o| o.agent.is_none())
                {
                    self.record(Event::JobState(j))?;
                }
                Ok(())
            }
            Done::Agent {
                iteration,
                agent,
                run,
                before,
            } => {
                let run = self.redact_run(iteration, &agent, *run);
                let spawn_error = run
                    .error
                    .clone()
                    .filter(|e| e.kind == AgentErrorKind::Spawn);
                self.observe(iteration, run, before)?;
                if let Some(err) = spawn_error {
                    self.agent_did_not_start(iteration, err.message)?;
                }
                Ok(())
            }
            Done::Checked {
                iteration,
                log,
                result,
                copy,
            } => {
                if self.interrupted.load(Ordering::SeqCst) {
                    return Ok(());
                }
                // A task that failed is verified again: its copy is kept for then.
                if let (Some(c), Ok(r)) = (copy, &result)
                    && !r.passed
                {
                    self.task_copies.insert(c.task, c.copy);
                }
                self.record_verified(iteration, &log, *result?, None)
            }
            Done::Merge { outcome, .. } => self.merge_done(outcome),
        }
    }

    /// The run is about to end: its worktrees go, and the checked-out branch lands on
    /// the integration branch if asked to.
    fn wind_down(&mut self, status: RunStatus) -> Result<(), CliError> {
        let Ok(i) = self.integration() else {
            return Ok(());
        };
        if !self.state.settings.keep_worktrees {
            worktree::remove_run(&self.ws.root, &self.run.id, &i.branch);
        }
        if status == RunStatus::Completed && self.state.settings.land == Land::Ff && !i.landed {
            match worktree::land(&self.ws.root, &i.branch, &i.head, &i.base) {
                Ok(branch) => {
                    let commit = i.head.clone();
                    self.record(Event::Landed { branch, commit })?;
                }
                Err(e) => self.progress.warn(&format!("not landed: {e}")),
            }
        }
        Ok(())
    }

    /// The run is over.
    fn finish_workers(&mut self, status: RunStatus) -> Result<ExitKind, CliError> {
        if let Ok(i) = self.integration()
            && !self.state.settings.keep_worktrees
        {
            // A run that ended waiting (stopped, failed) keeps nothing on disk either.
            worktree::remove_run(&self.ws.root, &self.run.id, &i.branch);
        }
        // The clean copies (the baseline's, each task's) go whatever the end.
        self.remove_clean_copy();
        self.tell_tracker_last();
        self.flush();
        self.write_handoff();
        self.progress.finished(&self.state, &self.run);
        Ok(match status {
            RunStatus::Completed => ExitKind::Completed,
            RunStatus::Stopped => ExitKind::Stopped,
            RunStatus::Failed => match &self.state.finished {
                Some(FinishReason::Budget { .. }) => ExitKind::Budget,
                _ => ExitKind::Internal,
            },
            _ => ExitKind::Internal,
        })
    }
}
