//! The steps of one iteration, each a function the driver (or a hook process, or a
//! scheduler running several workers) calls in turn: **prepare** (snapshot the tree,
//! write the prompt, record `iteration_started`), **spawn** (run the agent until it
//! exits or is stopped), **observe** (what it said and changed: `agent_finished`),
//! **verify** (agentloop's own checks: `verify_finished`), then the policy **judges**
//! (`next_action` gives the iteration's end) and **record** carries the verdict out
//! (commit, `result.json`, plan versions).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use agentloop_agents::{Agent, AgentRun, Invocation};
use agentloop_exec::git;
use agentloop_ground::{fsutil, signals};
use agentloop_journal::*;
use agentloop_policy::evidence::Place;
use agentloop_policy::{self as policy, IterationPlan};
use agentloop_verify::clean_copy::CleanCopy;
use agentloop_verify::verify;

use super::Driver;
use crate::error::CliError;

/// The most of a DEBUG iteration's log kept (its end).
const DEBUG_LOG_KEPT: usize = 1024 * 1024;

/// The last `most` bytes of the regular file at `path`.
fn tail(path: &std::path::Path, most: usize) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(most as u64)))?;
    let mut out = Vec::new();
    f.take(most as u64).read_to_end(&mut out)?;
    Ok(out)
}

/// An iteration made ready for its agent.
pub(crate) struct Prepared {
    pub plan: IterationPlan,
    pub prompt: String,
    /// The work tree before the agent ran.
    pub before: Option<git::Snapshot>,
    /// Where the agent works: the project, or its task's worktree.
    pub workdir: std::path::PathBuf,
}

impl Driver {
    /// The task worktree an iteration works in, if it has one.
    pub(crate) fn worktree_of(&self, iteration: u32) -> Option<std::path::PathBuf> {
        self.state
            .open_iteration(iteration)
            .and_then(|o| o.started.worktree.as_ref())
            .map(std::path::PathBuf::from)
    }

    /// Where an iteration works: its worktree, or the project.
    pub(crate) fn workdir(&self, iteration: u32) -> std::path::PathBuf {
        self.worktree_of(iteration)
            .unwrap_or_else(|| self.ws.root.clone())
    }

    /// The tree in `dir` now: the project's from its watch when it has one (`full`:
    /// ask git about every path anyway), a worktree's from git.
    pub(crate) fn snapshot_of(
        &mut self,
        dir: &std::path::Path,
        full: bool,
    ) -> Option<git::Snapshot> {
        match &mut self.watched {
            Some(w) if dir == self.ws.root => w.take(full),
            _ => self.snapshots_of(dir).and_then(|g| g.take()),
        }
    }

    /// Snapshots of `dir`: the driver's own for the project, new ones for a worktree.
    pub(crate) fn snapshots_of(&self, dir: &std::path::Path) -> Option<git::Snapshots> {
        if dir == self.ws.root {
            self.snapshots.clone()
        } else {
            git::Snapshots::new(dir)
        }
    }

    pub(crate) fn should_stop(&mut self, last: &mut Instant) -> bool {
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

    /// One turn of the agent: prepare → spawn → observe. Verification and the verdict
    /// follow as the policy asks for them.
    pub(super) fn iterate(&mut self, plan: IterationPlan) -> Result<(), CliError> {
        let agent = agentloop_agents::resolve(&self.config, &plan.agent)
            .map_err(|e| CliError::user(format!("task {}: {e}", plan.task)).hint(e.hint()))?;
        self.exclude_own_files(agent.as_ref());
        let Some(prepared) = self.prepare(plan)? else {
            return Ok(());
        };
        let run = self.spawn(agent.as_ref(), &prepared);
        let spawn_error = run
            .error
            .clone()
            .filter(|e| e.kind == AgentErrorKind::Spawn);
        let iteration = prepared.plan.iteration;
        self.observe(iteration, run, prepared.before)?;
        if let Some(err) = spawn_error {
            self.agent_did_not_start(iteration, err.message)?;
        }
        Ok(())
    }

    /// The agent an open iteration runs.
    fn agent_of(&self, iteration: u32) -> String {
        self.state
            .open_iteration(iteration)
            .map(|o| o.started.agent.clone())
            .unwrap_or_default()
    }

    /// The agent program's bookkeeping files (Aider's `.aider*`) out of what git sees
    /// in this repository, before the tree is looked at: never the agent's changes.
    pub(crate) fn exclude_own_files(&self, agent: &dyn Agent) {
        let why = format!(
            "agentloop: {}'s own files, not the agent's work",
            agent.name()
        );
        if let Err(e) = git::exclude_locally(&self.ws.root, agent.own_files(), &why) {
            self.progress.warn(&format!(
                "cannot add {}'s files to info/exclude: {e}",
                agent.name()
            ));
        }
    }

    /// Nothing ran: the iteration is recorded as aborted, then the run ends rather than
    /// burn its budget on an agent that cannot start.
    pub(crate) fn agent_did_not_start(
        &mut self,
        iteration: u32,
        message: String,
    ) -> Result<(), CliError> {
        self.record(Event::IterationFinished(IterationFinished {
            iteration,
            outcome: Outcome::Aborted,
            reason: message.clone(),
            digest: None,
            commit: None,
            agent_failed: false,
            fingerprint: None,
            checkpoint: None,
        }))?;
        self.record(Event::RunFinished {
            status: RunStatus::Failed,
            reason: FinishReason::Error { message },
        })
    }

    /// Snapshots the tree, writes the prompt (and, in hook mode, the snapshot, for the
    /// process that ends the iteration) and records `iteration_started` — unless a
    /// control request came in since the policy planned it (`None`: ask again), so the
    /// prompt carries every note recorded before the iteration began.
    pub(crate) fn prepare(&mut self, plan: IterationPlan) -> Result<Option<Prepared>, CliError> {
        self.prepare_in(plan, None)
    }

    /// [`prepare`](Self::prepare) for an agent that works in `worktree` (a run with
    /// workers) rather than in the project.
    pub(crate) fn prepare_in(
        &mut self,
        plan: IterationPlan,
        worktree: Option<std::path::PathBuf>,
    ) -> Result<Option<Prepared>, CliError> {
        let workdir = worktree.clone().unwrap_or_else(|| self.ws.root.clone());
        // What changed since the last iteration ended, while no agent was at work.
        let mut theirs = Vec::new();
        let before = match self.seen.take() {
            // What changed since the last iteration ended, while no agent was at work,
            // is the person's: left alone, said once, never charged to the agent.
            Some(seen) if worktree.is_none() => match self.snapshot_of(&workdir, false) {
                Some(now) if now.id != seen.id => {
                    theirs.extend(git::Snapshots::known(&workdir).changed(&seen, &now));
                    Some(now)
                }
                Some(now) => Some(now),
                None => Some(seen),
            },
            _ => self.snapshot_of(&workdir, false),
        };
        if !theirs.is_empty() {
            self.note_persons(theirs);
        }
        // Where the task's stretch of iterations began: what a claim is judged against.
        if worktree.is_none()
            && let Some(before) = &before
            && self
                .task_began
                .as_ref()
                .is_none_or(|(t, _)| *t != plan.task)
        {
            self.task_began = Some((plan.task.clone(), before.clone()));
        }
        let dir = self.run.iteration_dir(plan.iteration);
        std::fs::create_dir_all(&dir)?;
        // Reports count only when made during the iteration: one planted before it began
        // (by an earlier agent) is removed.
        match std::fs::remove_file(agentloop_ground::reports::path(&dir)) {
            Ok(()) => self.progress.warn(&format!(
                "iteration {}: removed MCP reports written before it began",
                plan.iteration
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
        // The prompt is made from the run's state alone, so the journal keeps it: a view,
        // not fsynced (a power cut that loses it loses nothing `iteration_started` and the
        // records before it do not say).
        let prompt = policy::build_prompt(&self.state, &plan.task, plan.kind);
        fsutil::write_view(&dir.join("prompt.md"), prompt.as_bytes())?;
        if let Some(b) = before.as_ref().filter(|_| self.state.settings.hook) {
            fsutil::write_new(&dir.join("tree-before.json"), &fsutil::pretty_json(b))?;
        }
        let started = Event::IterationStarted(IterationStarted {
            iteration: plan.iteration,
            task: plan.task.clone(),
            attempt: plan.attempt,
            kind: plan.kind,
            agent: plan.agent.clone(),
            tree_before: before.as_ref().map(|s| s.id.clone()),
            head_before: before.as_ref().and_then(|s| s.head.clone()),
            steer: self.state.steer.clone(),
            worktree: worktree.map(|w| w.display().to_string()),
        });
        match self.writer.append_if_current(&started)? {
            Appended::Written(recs) => self.apply(&recs),
            Appended::Stale(recs) => {
                self.apply(&recs);
                return Ok(None);
            }
        }
        self.flush_soon();
        Ok(Some(Prepared {
            plan,
            prompt,
            before,
            workdir,
        }))
    }

    /// Runs the agent in its own process group until it exits, times out or is
    /// stopped; secrets in what it wrote never reach the disk or the journal.
    pub(crate) fn spawn(&mut self, agent: &dyn Agent, p: &Prepared) -> AgentRun {
        let dir = self.run.iteration_dir(p.plan.iteration);
        let prompt_file = dir.join("prompt.md");
        let log = dir.join("agent.log");
        let pid_file = dir.join("agent.pid");
        let workdir = p.workdir.clone();
        let run_id = self.run.id.clone();
        let run_dir = self.run.path.clone();
        let confined = match self.confine(&workdir, p.plan.iteration, &p.plan.agent) {
            Ok(c) => c,
            Err(e) => {
                return AgentRun {
                    error: Some(AgentError {
                        kind: AgentErrorKind::Spawn,
                        message: e.message,
                    }),
                    ..AgentRun::default()
                };
            }
        };
        let inv = Invocation {
            run_id: &run_id,
            run_dir: &run_dir,
            iteration: p.plan.iteration,
            workdir: &workdir,
            prompt: &p.prompt,
            prompt_file: &prompt_file,
            log: &log,
            pid_file: &pid_file,
            wrap: confined.prefix.clone(),
        };
        let mut last = Instant::now();
        let run = agent.run(&inv, &mut || self.should_stop(&mut last));
        drop(confined);
        self.redact_run(p.plan.iteration, &p.plan.agent, run)
    }

    /// Secrets out of what an agent's turn produced: its log, final message, error.
    pub(crate) fn redact_run(&self, iteration: u32, agent: &str, mut run: AgentRun) -> AgentRun {
        let log = self.run.iteration_dir(iteration).join("agent.log");
        let redactor = self.redactor(agent);
        if let Err(e) = redactor.scrub_file(&log) {
            self.progress
                .warn(&format!("cannot redact {}: {e}", log.display()));
        }
        run.final_message = redactor.redact(&run.final_message).into_owned();
        if let Some(err) = &mut run.error {
            err.message = redactor.redact(&err.message).into_owned();
        }
        run
    }

    /// Records what the agent's turn produced: its signals, usage and error, and what
    /// it changed in the tree since `before` (read back from the iteration's directory
    /// when another process prepared it).
    pub(crate) fn observe(
        &mut self,
        iteration: u32,
        run: AgentRun,
        before: Option<git::Snapshot>,
    ) -> Result<(), CliError> {
        let before = before.or_else(|| {
            let path = self.run.iteration_dir(iteration).join("tree-before.json");
            serde_json::from_slice(&std::fs::read(path).ok()?).ok()
        });
        self.record_denials(iteration)?;
        let f = &run.finished;
        let failed = f.timed_out || f.signal.is_some() || f.exit_code.is_some_and(|c| c != 0);
        let stderr_tail = (failed && !f.stderr_tail.is_empty()).then(|| {
            let text = String::from_utf8_lossy(&f.stderr_tail);
            let text = agentloop_ground::failure::last_lines(&text);
            self.redactor(&self.agent_of(iteration))
                .redact(&text)
                .into_owned()
        });
        // What it reported through the MCP server counts as its markers do.
        let redactor = self.redactor(&self.agent_of(iteration));
        let mcp_calls: Vec<_> = agentloop_ground::reports::read(&self.run.iteration_dir(iteration))
            .into_iter()
            .map(|mut r| {
                r.text = r.text.map(|t| redactor.redact(&t).into_owned());
                r
            })
            .collect();
        if self
            .state
            .open_iteration(iteration)
            .is_some_and(|o| o.started.kind == agentloop_journal::IterationKind::Debug)
        {
            self.keep_understanding(iteration, &run.final_message);
        }
        let mut signals =
            signals::parse(&run.final_message, &self.state.settings.completion_promise);
        agentloop_ground::reports::apply(&mut signals, &mcp_calls);
        // A claim is judged on a full look at the tree (see `exec::watch`).
        let workdir = self.workdir(iteration);
        let after = self.snapshot_of(&workdir, signals.complete);
        let persons = &self.persons;
        let changed_files = match (&before, &after) {
            (Some(a), Some(b)) => git::Snapshots::known(&workdir)
                .changed(a, b)
                .into_iter()
                .filter(|p| workdir != self.ws.root || !persons.contains(p))
                .collect(),
            _ => Vec::new(),
        };
        let task = self
            .state
            .open_iteration(iteration)
            .map(|o| o.started.task.clone());
        let task_changed = match (&self.task_began, &after) {
            (Some((t, began)), Some(now))
                if signals.complete && workdir == self.ws.root && Some(t) == task.as_ref() =>
            {
                let all = git::Snapshots::known(&workdir).changed(began, now);
                all.into_iter()
                    .filter(|p| !changed_files.contains(p) && !persons.contains(p))
                    .collect()
            }
            _ => Vec::new(),
        };
        // Workers' worktrees change under the merge queue: only the project's is kept.
        self.seen = after
            .clone()
            .filter(|_| workdir == self.ws.root && !self.state.settings.in_worktrees());
        self.record(Event::AgentFinished(AgentFinished {
            iteration,
            exit_code: f.exit_code,
            signal: f.signal,
            timed_out: f.timed_out,
            killed: f.killed,
            duration_ms: f.duration.as_millis() as u64,
            output_bytes: f.output_bytes,
            truncated: f.truncated,
            signals,
            usage: run.usage,
            cost_usd: run.cost_usd,
            session_id: run.session_id.clone(),
            error: run.error.clone(),
            resets_at_ms: run.resets_at_ms,
            most_edited: run.most_edited.clone(),
            tree_after: after.as_ref().map(|s| s.id.clone()),
            head_after: after.as_ref().and_then(|s| s.head.clone()),
            changed_files,
            task_changed,
            final_message: (!run.final_message.trim().is_empty())
                .then(|| agentloop_ground::failure::last_lines(&run.final_message)),
            mcp_calls,
            stderr_tail,
        }))
    }

    /// A DEBUG iteration's answer, kept in its directory: `understanding.md` (all of
    /// it) and `hypotheses.json` (its `HYPOTHESIS: … | TEST: … | RESULT: …` lines).
    fn keep_understanding(&self, iteration: u32, message: &str) {
        let dir = self.run.iteration_dir(iteration);
        // What its logging points wrote goes with the iteration, out of the tree
        // (before the tree is looked at: it is not the agent's change).
        let log = self.workdir(iteration).join(agentloop_policy::DEBUG_LOG);
        // Only a regular file, and only its end: the agent names what is there, and a
        // FIFO, a device or a link must not hang or flood the driver.
        let regular = std::fs::symlink_metadata(&log).is_ok_and(|m| m.file_type().is_file());
        if regular && let Ok(kept) = tail(&log, DEBUG_LOG_KEPT) {
            let text = self
                .redactor(&self.agent_of(iteration))
                .redact(&String::from_utf8_lossy(&kept))
                .into_owned();
            if let Err(e) =
                agentloop_ground::fsutil::write_atomic(&dir.join("debug.log"), text.as_bytes())
            {
                self.progress.warn(&format!(
                    "cannot keep debug.log of iteration {iteration}: {e}"
                ));
            }
            let _ = std::fs::remove_file(&log);
        }
        let hypotheses: Vec<serde_json::Value> = message
            .lines()
            .filter_map(|l| l.trim().strip_prefix("HYPOTHESIS:"))
            .map(|rest| {
                let mut parts = rest.split('|').map(str::trim);
                let what = parts.next().unwrap_or_default();
                let mut v = serde_json::json!({ "hypothesis": what });
                for part in parts {
                    if let Some((k, val)) = part.split_once(':') {
                        v[k.trim().to_ascii_lowercase()] = serde_json::json!(val.trim());
                    }
                }
                v
            })
            .collect();
        for (name, text) in [
            ("understanding.md", message.to_string()),
            (
                "hypotheses.json",
                serde_json::to_string_pretty(&hypotheses).unwrap_or_default() + "\n",
            ),
        ] {
            if let Err(e) = agentloop_ground::fsutil::write_atomic(&dir.join(name), text.as_bytes())
            {
                self.progress
                    .warn(&format!("cannot keep {name} of iteration {iteration}: {e}"));
            }
        }
    }

    /// A task's checks: its `Verify:` commands and its (and the run's) execution and
    /// measurement criteria, then the run's `[verify] commands`.
    pub(crate) fn checks_for(&self, task: &str) -> Vec<String> {
        let mut out = self.state.plan.checks(task);
        for c in &self.state.settings.verify_commands {
            if !out.contains(c) {
                out.push(c.clone());
            }
        }
        out
    }

    pub(crate) fn verify(&mut self, iteration: u32, task: &str) -> Result<(), CliError> {
        let commands = self.checks_for(task);
        // Checks may write (caches, build output) where they run.
        let seen = if commands.is_empty() {
            None
        } else {
            self.seen.take()
        };
        let log = self.run.iteration_dir(iteration).join("verify.log");
        if let Some(refused) = self.too_large(iteration, task, seen.as_ref(), &log)? {
            return self.record_verified(iteration, &log, refused, None);
        }
        // In a worktree the agent's work is checked where it is; the merge queue checks
        // it again on a clean merge of it.
        // Held-out files a killed verification left in the run's clean copy go first.
        if self.state.settings.holdout.is_some()
            && let Some(c) = CleanCopy::for_run(&self.ws.root, &self.run.id)
        {
            verify::clear_held_out_leftovers(&self.held_out_logs(), &c.dir);
        }
        // The tree the copy is brought up to date with, as the watch sees it before
        // (kept with a passing check, for VALIDATE: `checked::tree_key`).
        let mut tree = None;
        let judged = match self.worktree_of(iteration) {
            Some(w) => agentloop_verify::clean_copy::Prepared::root(&w),
            // Nothing to run: no copy to bring up to date.
            None if commands.is_empty() => {
                agentloop_verify::clean_copy::Prepared::root(&self.ws.root)
            }
            None => {
                let claimed = seen.clone();
                if self.resident.is_none() {
                    tree = self.watched.as_mut().and_then(|w| w.take(false));
                }
                let prepared = self.verify_dir_at(seen, &[task]);
                // A hook-mode run's resident brought the copy to the tree the claim's
                // snapshot saw.
                if self.resident.is_some() {
                    tree = claimed;
                }
                prepared
            }
        };
        let tree = tree.filter(|_| judged.dir != self.ws.root && judged.unclean.is_none());
        let workdir = judged.dir;
        let place = if self.worktree_of(iteration).is_some() {
            Place::Worktree
        } else {
            Place::Tree
        };
        let expected = self.expected(Some(task), place);
        let runner = verify::Runner {
            workdir: &workdir,
            timeout: self.config.verify.timeout,
            output_cap: self.config.verify.output_cap,
            jobs: self.config.verify.jobs_for(1),
            log: &log,
            wrap: self.check_wrap(&workdir, &self.reports_dir(iteration)),
            bytecode: self.bytecode(false),
            tests: expected.as_ref().map(|e| verify::TestsCheck {
                expected: e,
                reports: self.reports_dir(iteration),
            }),
        };
        let mut last = Instant::now();
        let measures = self.state.plan.measures(task);
        let mut result = runner.run_measured(iteration, &commands, &measures, || {
            self.should_stop(&mut last)
        })?;
        verify::left_out::tell(&mut result, judged.left_out, judged.admitted, &log)?;
        if let Some(why) = &judged.unclean {
            super::refused::unclean_refused(&mut result, why);
        }
        if let Some(h) = self.held_out(task, iteration) {
            if workdir == self.ws.root {
                super::refused::held_out_refused(&mut result);
            } else {
                runner.held_out(&h, &mut result, || self.should_stop(&mut last))?;
            }
        }
        if self.interrupted.load(Ordering::SeqCst) {
            // Cut short by Ctrl-C: leave the iteration open; `resume` aborts and redoes it.
            return Ok(());
        }
        let tree = tree.as_ref().and_then(super::checked::tree_key);
        self.record_verified(iteration, &log, result, tree.as_deref())
    }

    /// Records an iteration's checks, secrets out of their log and digest; kept for
    /// VALIDATE too (secrets out) under `tree`, the tree they ran on, when given.
    pub(crate) fn record_verified(
        &mut self,
        iteration: u32,
        log: &std::path::Path,
        mut result: VerifyFinished,
        tree: Option<&str>,
    ) -> Result<(), CliError> {
        let redactor = self.iteration_redactor(iteration);
        redactor.scrub_check_log(log)?;
        result.redact(&redactor);
        if let Some(key) = tree {
            super::checked::keep(&super::checked::dir_of(&self.run.path), key, &result, log);
        }
        if let Some(first) = result.left_out.first() {
            let more = match result.left_out.len() {
                1 => String::new(),
                n => format!(" (and {} more)", n - 1),
            };
            self.progress.note(&format!(
                "{}{more}; a task that writes them says so in the plan (`mode: tdd`, a `Tests:` name in the file or `(new)`, `Scope:`)",
                first.line()
            ));
        }
        self.record(Event::VerifyFinished(result))
    }
}
