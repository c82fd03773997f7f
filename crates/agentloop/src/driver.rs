//! The driver: asks the policy what to do next, does it, and records it in the journal
//! before and after. It holds the run's lock for its whole life.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use agentloop_agents::{AgentRun, Invocation};
use agentloop_core::config::Config;
use agentloop_core::config::Settings;
use agentloop_core::exec::{git, verify};
use agentloop_core::journal::*;
use agentloop_core::journal::{Record, Writer};
use agentloop_core::journal::{RunState, StopKind};
use agentloop_core::policy::{self, Action, IterationPlan, WaitReason};
use agentloop_core::workspace::{DriverLock, RunDir, Workspace};
use agentloop_core::{fsutil, signals};

use crate::cli::OutputArgs;
use crate::error::{CliError, ExitKind};
use crate::render::Progress;

pub struct Driver {
    pub ws: Workspace,
    pub run: RunDir,
    pub writer: Writer,
    pub state: RunState,
    pub config: Config,
    pub out: OutputArgs,
    _lock: DriverLock,
    interrupted: Arc<AtomicBool>,
    progress: Progress,
    snapshots: Option<git::Snapshots>,
    flushed: Instant,
    /// Notifications still being delivered (waited for, briefly, before exit).
    notifying: Vec<std::thread::JoinHandle<()>>,
    /// Events between the cached state.json and the journal when this driver began.
    pub(crate) cache_lag: u64,
    start_seq: u64,
}

/// Journal events a hook may leave past `state.json` before it rewrites the cache.
const HOOK_CACHE_LAG: u64 = 400;

impl Driver {
    pub fn new(
        ws: Workspace,
        run: RunDir,
        writer: Writer,
        state: RunState,
        config: Config,
        out: OutputArgs,
        lock: DriverLock,
    ) -> Result<Driver, CliError> {
        let interrupted = Arc::new(AtomicBool::new(false));
        // Agent helpers that leave the agent's process group still end with it.
        if let Err(e) = agentloop_core::exec::supervise::become_subreaper() {
            crate::render::warn(&format!("cannot become a child subreaper: {e}"));
        }
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            // A second signal while we are still cleaning up exits at once.
            signal_hook::flag::register_conditional_shutdown(sig, 130, interrupted.clone())?;
            signal_hook::flag::register(sig, interrupted.clone())?;
        }
        let progress = Progress::new(out.quiet);
        let snapshots = git::Snapshots::new(&ws.root);
        let start_seq = state.last_seq;
        Ok(Driver {
            ws,
            run,
            writer,
            state,
            config,
            out,
            _lock: lock,
            interrupted,
            progress,
            snapshots,
            flushed: Instant::now() - Duration::from_secs(10),
            notifying: Vec::new(),
            cache_lag: u64::MAX,
            start_seq,
        })
    }

    /// Records a driver start (with the settings in force) and drives.
    pub fn start(
        mut self,
        settings: Settings,
        agents: std::collections::BTreeMap<String, String>,
    ) -> Result<ExitKind, CliError> {
        self.record(Event::DriverStarted {
            pid: std::process::id(),
            version: env!("CARGO_PKG_VERSION").into(),
            settings,
            agents,
        })?;
        self.drive()
    }

    fn drive(&mut self) -> Result<ExitKind, CliError> {
        let mut waiting_since: Option<WaitReason> = None;
        loop {
            if self.interrupted.load(Ordering::SeqCst) {
                self.flush();
                self.progress.interrupted(&self.run.id);
                return Ok(ExitKind::Interrupted);
            }
            let action = policy::next_action(&self.state);
            if !matches!(action, Action::Wait(_)) {
                waiting_since = None;
            }
            match action {
                Action::Record(event) => self.record_decision(event)?,
                Action::Iterate(plan) => self.iterate(plan)?,
                Action::Verify { iteration, task } => self.verify(iteration, &task)?,
                Action::Wait(reason) => {
                    if waiting_since.as_ref() != Some(&reason) {
                        self.flush();
                        self.progress.waiting(&self.state, &reason);
                        waiting_since = Some(reason.clone());
                    }
                    if let WaitReason::UsageLimit { until_ms } = reason {
                        if agentloop_core::clock::now_ms() >= until_ms {
                            self.record(Event::LimitWaitOver)?;
                        } else {
                            std::thread::sleep(Duration::from_millis(
                                until_ms
                                    .saturating_sub(agentloop_core::clock::now_ms())
                                    .min(200),
                            ));
                            self.poll_controls()?;
                        }
                        continue;
                    }
                    if self.out.no_wait && !matches!(reason, WaitReason::Paused) {
                        return Ok(match reason {
                            WaitReason::Blocked { breaker: true, .. } => ExitKind::Breaker,
                            _ => ExitKind::Waiting,
                        });
                    }
                    std::thread::sleep(Duration::from_millis(200));
                    self.poll_controls()?;
                }
                Action::Exit(status) => {
                    self.flush();
                    self.progress.finished(&self.state, &self.run);
                    return Ok(match status {
                        RunStatus::Completed => ExitKind::Completed,
                        RunStatus::Stopped => ExitKind::Stopped,
                        RunStatus::Failed => match &self.state.finished {
                            Some(FinishReason::Budget { .. }) => ExitKind::Budget,
                            _ => ExitKind::Internal,
                        },
                        _ => ExitKind::Internal,
                    });
                }
            }
        }
    }

    /// Appends an event and folds it (and anything other processes appended first).
    pub(crate) fn record(&mut self, event: Event) -> Result<(), CliError> {
        let recs = self.writer.append(&event)?;
        self.apply(&recs);
        Ok(())
    }

    fn apply(&mut self, recs: &[Record]) {
        for r in recs {
            self.state.apply(r);
            if let Some(body) = crate::notify::payload(&self.state, r)
                && let Some(h) = crate::notify::send(&self.state.settings.notify, body)
            {
                self.notifying.push(h);
            }
            if self.out.json {
                crate::render::json_event(r);
            }
            self.progress.event(&self.state, r);
        }
    }

    fn poll_controls(&mut self) -> Result<(), CliError> {
        let recs = self.writer.catch_up()?;
        self.apply(&recs);
        Ok(())
    }

    /// Rewrites the derived files (state.json, progress.md).
    pub(crate) fn flush(&mut self) {
        self.flushed = Instant::now();
        // A hook process lives for one stop: rewriting a large state.json each time
        // costs more than reading a few hundred journal lines past an older one.
        let lag = self
            .cache_lag
            .saturating_add(self.state.last_seq - self.start_seq);
        if self.state.settings.hook && lag < HOOK_CACHE_LAG {
            if let Err(e) = self.run.write_progress(&self.state) {
                self.progress
                    .warn(&format!("cannot update progress.md: {e}"));
            }
            return;
        }
        self.state.journal_bytes = self.writer.offset();
        if let Err(e) = self.run.write_derived(&self.state) {
            self.progress
                .warn(&format!("cannot update state.json/progress.md: {e}"));
        }
    }

    /// Like `flush`, at most once a second: they are caches, and rewriting them for
    /// every quick iteration would cost more than the iteration.
    fn flush_soon(&mut self) {
        if self.flushed.elapsed() >= Duration::from_secs(1) {
            self.flush();
        }
    }

    pub(crate) fn record_decision(&mut self, mut event: Event) -> Result<(), CliError> {
        if let Event::IterationFinished(f) = &mut event
            && f.outcome == Outcome::Completed
            && self.state.settings.commit
        {
            let task = self
                .state
                .open
                .as_ref()
                .map(|o| o.started.task.clone())
                .unwrap_or_default();
            let title = self
                .state
                .task(&task)
                .map(|t| t.title.clone())
                .unwrap_or_default();
            match git::commit_all(
                &self.ws.root,
                &format!("agentloop: {task} {title}\n\nRun {}", self.run.id),
            ) {
                Ok(hash) => f.commit = Some(hash),
                Err(e) => self
                    .progress
                    .warn(&format!("could not commit task {task}: {e}")),
            }
        }
        let result = match &event {
            Event::IterationFinished(f) => Some(f.clone()),
            _ => None,
        };
        let replan_version = match &event {
            Event::ReplanAccepted { version, .. } => Some(*version),
            _ => None,
        };
        let open = self.state.open.clone();
        self.record(event)?;
        if let (Some(f), Some(open)) = (result, open) {
            self.write_result(&open, &f);
        }
        if let Some(v) = replan_version {
            let md = self.state.plan.to_markdown();
            if let Err(e) = fsutil::write_atomic(&self.run.plan_version(v), md.as_bytes()) {
                self.progress
                    .warn(&format!("cannot write plan version {v}: {e}"));
            }
        }
        Ok(())
    }

    fn write_result(&self, open: &agentloop_core::journal::OpenIteration, f: &IterationFinished) {
        let dir = self.run.iteration_dir(f.iteration);
        let result = serde_json::json!({
            "v": 1,
            "iteration": f.iteration,
            "task": open.started.task,
            "attempt": open.started.attempt,
            "kind": open.started.kind,
            "agent": open.started.agent,
            "outcome": f.outcome,
            "reason": f.reason,
            "digest": f.digest,
            "commit": f.commit,
            "signals": open.agent.as_ref().map(|a| &a.signals),
            "exit_code": open.agent.as_ref().and_then(|a| a.exit_code),
            "usage": open.agent.as_ref().map(|a| a.usage),
            "cost_usd": open.agent.as_ref().map(|a| a.cost_usd),
            "changed_files": open.agent.as_ref().map(|a| &a.changed_files),
            "fingerprint": open.verify.as_ref().and_then(|v| v.fingerprint.clone()),
            "verify": open.verify.as_ref().map(|v| &v.commands),
        });
        let _ = std::fs::create_dir_all(&dir);
        if let Err(e) = fsutil::write_new(
            &dir.join("result.json"),
            &agentloop_core::fsutil::pretty_json(&result),
        ) {
            self.progress
                .warn(&format!("cannot write result.json: {e}"));
        }
    }

    /// Secrets known for an agent: its configured env and this process's environment.
    fn redactor(&self, agent: &str) -> agentloop_core::redact::Redactor {
        let env = self
            .config
            .agents
            .get(agent)
            .map(|a| a.env.clone())
            .unwrap_or_default();
        agentloop_core::redact::Redactor::from_env(&env)
    }

    fn should_stop(&mut self, last: &mut Instant) -> bool {
        if self.interrupted.load(Ordering::SeqCst) {
            return true;
        }
        if last.elapsed() >= Duration::from_millis(100) {
            *last = Instant::now();
            if let Ok(recs) = self.writer.catch_up() {
                self.apply(&recs);
            }
            self.progress.tick(&self.state);
        }
        self.state.stop == Some(StopKind::Now)
    }

    fn iterate(&mut self, plan: IterationPlan) -> Result<(), CliError> {
        let agent = agentloop_agents::resolve(&self.config, &plan.agent)
            .map_err(|e| CliError::user(format!("task {}: {e}", plan.task)).hint(e.hint()))?;
        let workdir = self.ws.root.clone();
        let (text, before) = self.begin_iteration(&plan)?;
        let dir = self.run.iteration_dir(plan.iteration);
        let prompt_file = dir.join("prompt.md");
        let log = dir.join("agent.log");
        let inv = Invocation {
            workdir: &workdir,
            prompt: &text,
            prompt_file: &prompt_file,
            log: &log,
        };
        let mut last = Instant::now();
        let mut run: AgentRun = agent.run(&inv, &mut || self.should_stop(&mut last));
        // Secrets in the agent's output never reach the disk or the journal.
        let redactor = self.redactor(&plan.agent);
        if let Err(e) = redactor.scrub_file(&log) {
            self.progress
                .warn(&format!("cannot redact {}: {e}", log.display()));
        }
        run.final_message = redactor.redact(&run.final_message).into_owned();
        if let Some(err) = &mut run.error {
            err.message = redactor.redact(&err.message).into_owned();
        }
        let spawn_error = run
            .error
            .clone()
            .filter(|e| e.kind == AgentErrorKind::Spawn);
        self.finish_agent(plan.iteration, run, before)?;
        if let Some(err) = spawn_error {
            // Nothing ran: record it, then end the run rather than burn the budget.
            self.record(Event::IterationFinished(IterationFinished {
                iteration: plan.iteration,
                outcome: Outcome::Aborted,
                reason: err.message.clone(),
                digest: None,
                commit: None,
            }))?;
            self.record(Event::RunFinished {
                status: RunStatus::Failed,
                reason: FinishReason::Error {
                    message: err.message.clone(),
                },
            })?;
        }
        Ok(())
    }

    /// Snapshots the tree, writes the prompt (and, for hook mode, the snapshot) and
    /// records the iteration's start. Returns the prompt.
    pub(crate) fn begin_iteration(
        &mut self,
        plan: &IterationPlan,
    ) -> Result<(String, Option<git::Snapshot>), CliError> {
        let before = self.snapshots.as_ref().and_then(|g| g.take());
        let dir = self.run.iteration_dir(plan.iteration);
        std::fs::create_dir_all(&dir)?;
        let text = policy::build_prompt(&self.state, &plan.task, plan.kind);
        fsutil::write_new(&dir.join("prompt.md"), text.as_bytes())?;
        // Hook mode ends the iteration in another process: keep the snapshot for it.
        if let Some(b) = before.as_ref().filter(|_| self.state.settings.hook) {
            fsutil::write_new(
                &dir.join("tree-before.json"),
                &agentloop_core::fsutil::pretty_json(b),
            )?;
        }
        self.record(Event::IterationStarted(IterationStarted {
            iteration: plan.iteration,
            task: plan.task.clone(),
            attempt: plan.attempt,
            kind: plan.kind,
            agent: plan.agent.clone(),
            tree_before: before.as_ref().map(|s| s.id.clone()),
            head_before: before.as_ref().and_then(|s| s.head.clone()),
            steer: self.state.steer.clone(),
        }))?;
        self.flush_soon();
        Ok((text, before))
    }

    /// Records what the agent's turn produced, with what it changed in the tree.
    pub(crate) fn finish_agent(
        &mut self,
        iteration: u32,
        run: AgentRun,
        before: Option<git::Snapshot>,
    ) -> Result<(), CliError> {
        let before = before.or_else(|| {
            let path = self.run.iteration_dir(iteration).join("tree-before.json");
            serde_json::from_slice(&std::fs::read(path).ok()?).ok()
        });
        let after = self.snapshots.as_ref().and_then(|g| g.take());
        let changed_files = match (&self.snapshots, &before, &after) {
            (Some(g), Some(a), Some(b)) => g.changed(a, b),
            _ => Vec::new(),
        };
        let f = &run.finished;
        self.record(Event::AgentFinished(AgentFinished {
            iteration,
            exit_code: f.exit_code,
            signal: f.signal,
            timed_out: f.timed_out,
            killed: f.killed,
            duration_ms: f.duration.as_millis() as u64,
            output_bytes: f.output_bytes,
            truncated: f.truncated,
            signals: signals::parse(&run.final_message, &self.state.settings.completion_promise),
            usage: run.usage,
            cost_usd: run.cost_usd,
            session_id: run.session_id.clone(),
            error: run.error.clone(),
            resets_at_ms: run.resets_at_ms,
            tree_after: after.as_ref().map(|s| s.id.clone()),
            head_after: after.as_ref().and_then(|s| s.head.clone()),
            changed_files,
        }))
    }

    pub(crate) fn verify(&mut self, iteration: u32, task: &str) -> Result<(), CliError> {
        let commands: Vec<String> = self
            .state
            .plan
            .task(task)
            .map(|t| t.verify.clone())
            .unwrap_or_default()
            .into_iter()
            .chain(self.state.settings.verify_commands.iter().cloned())
            .collect();
        let log = self.run.iteration_dir(iteration).join("verify.log");
        let workdir = self.ws.root.clone();
        let runner = verify::Runner {
            workdir: &workdir,
            timeout: self.config.verify.timeout,
            output_cap: self.config.verify.output_cap,
            log: &log,
        };
        let mut last = Instant::now();
        let mut result = runner.run(iteration, &commands, || self.should_stop(&mut last))?;
        let agent = self
            .state
            .open
            .as_ref()
            .map(|o| o.started.agent.clone())
            .unwrap_or_default();
        let redactor = self.redactor(&agent);
        redactor.scrub_file(&log)?;
        result.digest = result.digest.map(|d| redactor.redact(&d).into_owned());
        if self.interrupted.load(Ordering::SeqCst) {
            // Cut short by Ctrl-C: leave the iteration open; `resume` aborts and redoes it.
            return Ok(());
        }
        self.record(Event::VerifyFinished(result))
    }
}

impl Drop for Driver {
    /// Gives notifications still on their way up to 5 s to be delivered.
    fn drop(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(5);
        for h in self.notifying.drain(..) {
            while !h.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}
