//! The driver: asks the policy what to do next, does it, and records it in the journal
//! before and after. It holds the run's lock for its whole life. The steps of one
//! iteration are in `steps`.

mod checked;
mod cycle;
mod evidence;
mod executor;
mod gates;
mod jobs;
mod menu;
mod merge_queue;
mod oversized;
mod planner;
mod proposal;
mod record;
mod refused;
mod review;
mod sandbox;
mod ship;

pub(crate) use executor::check as check_executor;
pub(crate) use sandbox::agent_hosts;
pub(crate) use ship::preflight;
mod steps;
mod surface;
mod tracker;
mod tripwire;
mod validate;
mod workers;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use agentloop_config::{Config, Settings};
use agentloop_exec::git;
use agentloop_journal::*;
use agentloop_policy::{self as policy, Action, WaitReason};
use agentloop_workspace::{DriverLock, RunDir, Workspace};

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
    /// The project's tree as the last iteration's end saw it, while nothing but
    /// agentloop's own bookkeeping has happened since: the next iteration starts from
    /// it instead of asking git again (see [`Driver::before`]).
    seen: Option<git::Snapshot>,
    /// The task whose iterations run now in the project, and the tree before its first.
    task_began: Option<(String, git::Snapshot)>,
    /// Paths of the project that changed while no agent of the run was at work (a
    /// person's editor, `agentloop run > out.log` in the tree): the person's, never
    /// charged to an agent; each said once.
    persons: std::collections::BTreeSet<String>,
    /// The project's tree when the run began to wait (for a person, a limit, a
    /// resume): what changes in it until the next iteration is the person's, unless a
    /// step of agentloop's changes the tree in between (then this is forgotten).
    wait_began: Option<git::Snapshot>,
    /// The project's tree watched between snapshots (a driver of its own tree).
    watched: Option<agentloop_exec::watch::Watched>,
    /// The run's clean copy, kept in step between verifications (see
    /// `exec::clean_copy::kept`).
    kept_copy: Option<agentloop_verify::clean_copy::KeptCopy>,
    /// The surface's last stamp, as this driver made or read it, and each surface
    /// file watched itself (a driver of its own tree).
    remembered: agentloop_verify::surface::Remembered,
    /// The plan version whose surface this driver has grown the baseline to (see
    /// `grow_surface`).
    surface_plan_version: u32,
    /// A hook-mode run's resident, which keeps the clean copy and the surface's memory
    /// between hook processes (see `exec::resident`).
    resident: Option<agentloop_resident::Resident>,
    /// Hook mode: the resident is reached (or started) when first needed.
    pub(crate) hook_resident: bool,
    /// Workers' task copies kept in step between a failed verification and the next.
    task_copies: std::collections::HashMap<String, agentloop_verify::clean_copy::KeptCopy>,
    flushed: Instant,
    /// Notifications still being delivered (waited for, briefly, before exit).
    notifying: Vec<std::thread::JoinHandle<()>>,
    /// Events between the cached state.json and the journal when this driver began.
    pub(crate) cache_lag: u64,
    /// Hook mode: when the CLI gives up on the hook this driver runs in; a reviewer
    /// still reading then is ended, its turn a rejection that says why.
    pub(crate) deadline: Option<Instant>,
    start_seq: u64,
    /// The commit made for a verified iteration (iteration, hash), kept in case its
    /// verdict has to be decided again.
    committed: Option<(u32, String)>,
    /// The tracker is being told (its own records fold without telling it again).
    syncing: bool,
    /// After the tracker failed, it is left alone until then, so a tracker that is
    /// down does not cost every event its retries.
    tracker_quiet_until: Option<std::time::Instant>,
    /// The tracker could not be reached (or made) at the last try.
    tracker_down: bool,
}

/// A step of the policy in words: what `next` did, or does next.
fn step_words(a: &Action) -> String {
    match a {
        Action::Iterate(p) => format!(
            "iteration {}: task {}, attempt {} ({}, agent {})",
            p.iteration,
            p.task,
            p.attempt,
            p.kind.as_str(),
            p.agent
        ),
        Action::Verify { iteration, task } => {
            format!("verify iteration {iteration} (task {task})")
        }
        Action::CheckSurface { iteration } => {
            format!("check the verification surface after iteration {iteration}")
        }
        Action::CheckTripwires { iteration } => {
            format!("check the tripwires after iteration {iteration}")
        }
        Action::Validate => "validate the whole project".to_string(),
        Action::TestBaseline => "take the test baseline".to_string(),
        Action::Review { iteration, task } => {
            format!("review iteration {iteration}'s verified work (task {task})")
        }
        Action::Restore { iteration, .. } => {
            format!("restore the verification surface changed by iteration {iteration}")
        }
        Action::Merge { batch } => format!(
            "merge {}",
            agentloop_ground::words::plural(batch.len(), "iteration", "iterations")
        ),
        Action::Ship(step) => format!("ship: {step:?}"),
        Action::Plan { planner, basis } => format!("ask planner {planner} for new tasks ({basis})"),
        Action::Judge { cycle } => format!("judge the end of cycle {cycle}"),
        Action::CheckDiff { task } => format!("read what task {task} changed for the diff gates"),
        Action::Record(e) => format!("record {}", e.kind()),
        Action::Wait(WaitReason::Gate(g)) => format!("wait for a person: {}", g.describe()),
        Action::Wait(w) => format!("wait ({w:?})"),
        Action::Exit(status) => format!("nothing: the run is {}", status.as_str()),
    }
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
        let stamp_file = run.surface_stamp_file();
        // Agent helpers that leave the agent's process group still end with it.
        if let Err(e) = agentloop_exec::reap::become_subreaper() {
            crate::render::warn(&format!("cannot become a child subreaper: {e}"));
        }
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            // A second signal while we are still cleaning up exits at once.
            signal_hook::flag::register_conditional_shutdown(sig, 130, interrupted.clone())?;
            signal_hook::flag::register(sig, interrupted.clone())?;
        }
        let progress = Progress::new(out.quiet);
        let snapshots = if ws.in_git {
            Some(git::Snapshots::known(&ws.root))
        } else {
            git::Snapshots::new(&ws.root)
        };
        let watched = snapshots
            .clone()
            .filter(|_| !state.settings.hook && !state.settings.in_worktrees())
            .and_then(agentloop_exec::watch::Watched::start);
        let start_seq = state.last_seq;
        let mut writer = writer;
        writer.group_syncs();
        // This process's own output written into the project (`agentloop run > out.log`
        // there) is the person's file, never an agent's change.
        let persons = own_output_in(&ws.root);
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
            seen: None,
            task_began: None,
            persons,
            wait_began: None,
            watched,
            kept_copy: None,
            remembered: agentloop_verify::surface::Remembered::new(stamp_file),
            surface_plan_version: 0,
            resident: None,
            hook_resident: false,
            task_copies: std::collections::HashMap::new(),
            flushed: Instant::now() - Duration::from_secs(10),
            notifying: Vec::new(),
            cache_lag: u64::MAX,
            deadline: None,
            start_seq,
            committed: None,
            syncing: false,
            tracker_quiet_until: None,
            tracker_down: false,
        })
    }

    /// Records a driver start (with the settings in force) and drives.
    pub fn start(
        mut self,
        settings: Settings,
        agents: std::collections::BTreeMap<String, String>,
    ) -> Result<ExitKind, CliError> {
        if settings.sandbox.verify == agentloop_config::ConfineChecks::Auto {
            agentloop_exec::sandbox::judge::find_out_early(&settings.sandbox.bwrap);
        }
        let prerequisites = agentloop_exec::prereq::check(
            &self.ws.root,
            &self.state.plan,
            &settings.verify_commands,
            self.state.iterations == 0,
        );
        self.record(Event::DriverStarted {
            pid: std::process::id(),
            version: env!("CARGO_PKG_VERSION").into(),
            settings,
            agents,
            prerequisites: Some(prerequisites),
        })?;
        self.say_unconfined()?;
        self.ensure_baseline()?;
        if self.state.settings.in_worktrees() {
            if self.out.step || self.out.interactive {
                return Err(CliError::user(
                    "step mode and the interactive menu take one decision at a time; a run with workers takes several at once",
                ));
            }
            return self.drive_workers();
        }
        self.drive()
    }

    fn drive(&mut self) -> Result<ExitKind, CliError> {
        let mut waiting_since: Option<WaitReason> = None;
        let mut review_polled: Option<Instant> = None;
        // Step mode: what the one step did, once it is done.
        let mut did: Option<String> = None;
        // Interactive: the menu comes between iterations (once per iteration to start).
        let mut iterated = false;
        let mut asked_for: Option<u32> = None;
        loop {
            if self.interrupted.load(Ordering::SeqCst) {
                self.flush();
                self.progress.interrupted(&self.run.id);
                return Ok(ExitKind::Interrupted);
            }
            let action = policy::next_action(&self.state);
            // A step is an iteration, a verification (with its surface check) or a ship
            // step; what only records or checks the surface goes on within it.
            let whole = !matches!(
                action,
                Action::Record(_)
                    | Action::CheckSurface { .. }
                    | Action::CheckTripwires { .. }
                    | Action::Restore { .. }
                    | Action::Merge { .. }
                    | Action::CheckDiff { .. }
            );
            if self.out.step
                && whole
                && let Some(done) = did.take()
            {
                self.flush();
                eprintln!("agentloop: did {done}");
                eprintln!("agentloop: next: {}", step_words(&action));
                eprintln!("  `agentloop next` does it");
                return Ok(ExitKind::Completed);
            }
            if self.out.step && whole {
                did = did.or_else(|| match &action {
                    Action::Wait(_) | Action::Exit(_) => None,
                    a => Some(step_words(a)),
                });
            }
            if !matches!(action, Action::Wait(_)) {
                waiting_since = None;
            }
            self.before(&action)?;
            match action {
                Action::Record(event) => {
                    self.record_decision(event)?;
                }
                Action::Iterate(plan) => {
                    if self.out.interactive && iterated && asked_for != Some(plan.iteration) {
                        // A person at the menu may change the tree.
                        self.seen = None;
                        match self.menu(&plan.task)? {
                            menu::Choice::Continue => asked_for = Some(plan.iteration),
                            menu::Choice::Again => {}
                            menu::Choice::Finish => {
                                asked_for = Some(plan.iteration);
                                self.validate()?;
                                self.ask(Request::Stop)?;
                            }
                            menu::Choice::Exit => {
                                self.flush();
                                eprintln!(
                                    "agentloop: the run is saved; `agentloop resume {}` goes on",
                                    self.run.id
                                );
                                return Ok(ExitKind::Stopped);
                            }
                        }
                        // What was chosen may change what comes next.
                        continue;
                    }
                    iterated = true;
                    self.iterate(plan)?;
                }
                Action::Verify { iteration, task } => self.verify(iteration, &task)?,
                Action::CheckSurface { iteration } => self.check_surface(iteration)?,
                Action::CheckTripwires { iteration } => self.check_tripwires(iteration)?,
                Action::Validate => self.validate()?,
                Action::TestBaseline => self.test_baseline()?,
                Action::Review { iteration, task } => self.review(iteration, &task)?,
                Action::Merge { .. } => {
                    return Err(CliError::internal(
                        "a run with workers is driven by the scheduler, not the single-worker driver",
                    ));
                }
                Action::Restore { iteration, cause } => self.restore_surface(iteration, cause)?,
                Action::Ship(step) => self.ship(step)?,
                Action::Plan { planner, basis } => self.plan(planner, basis)?,
                Action::Judge { cycle } => self.judge_cycle(cycle)?,
                Action::CheckDiff { task } => self.check_task_diff(&task)?,
                Action::Wait(reason) => {
                    if waiting_since.as_ref() != Some(&reason) {
                        self.flush();
                        self.progress.waiting(&self.state, &reason);
                        waiting_since = Some(reason.clone());
                    }
                    // A spent budget pauses the run; nothing goes on until a person tops
                    // it up with `resume`, so the driver does not stay.
                    if let WaitReason::Budget { .. } = reason {
                        self.flush();
                        self.progress.leaving(&self.state, &reason);
                        return Ok(ExitKind::Budget);
                    }
                    if let WaitReason::UsageLimit { until_ms } = reason {
                        if agentloop_ground::clock::now_ms() >= until_ms {
                            self.record(Event::LimitWaitOver)?;
                        } else {
                            std::thread::sleep(Duration::from_millis(
                                until_ms
                                    .saturating_sub(agentloop_ground::clock::now_ms())
                                    .min(200),
                            ));
                            self.poll_controls()?;
                        }
                        continue;
                    }
                    if self.out.no_wait && !matches!(reason, WaitReason::Paused) {
                        self.progress.leaving(&self.state, &reason);
                        return Ok(match reason {
                            WaitReason::Blocked { breaker: true, .. } => ExitKind::Breaker,
                            _ => ExitKind::Waiting,
                        });
                    }
                    std::thread::sleep(Duration::from_millis(200));
                    self.poll_controls()?;
                    if let WaitReason::Gate(
                        agentloop_journal::Gate::Review | agentloop_journal::Gate::Diff(_),
                    ) = reason
                    {
                        self.poll_review(&mut review_polled)?;
                    }
                }
                Action::Exit(status) => {
                    self.tell_tracker_last();
                    self.flush();
                    self.remove_clean_copy();
                    self.write_handoff();
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

    /// Before each step. A step that may change the tree or lets time pass (a check
    /// run in the project, a restore, a commit, shipping, a merge, a wait) forgets the
    /// tree the last iteration ended on — what changes then is not the next agent's
    /// doing — and first makes the journal durable (see [`Writer::group_syncs`]): it
    /// acts outside the process. What is left — recording decisions, reading the
    /// surface or a diff, planning the next iteration — takes milliseconds and touches
    /// only `.agentloop/`, so the next iteration starts from the same tree either way,
    /// one `git status` sooner.
    pub(crate) fn before(&mut self, action: &Action) -> Result<(), CliError> {
        // A wait is over: what changed while it lasted is the person's, taken before
        // any step of agentloop's (a check, a tripwire's command) runs in the tree.
        if !matches!(action, Action::Wait(_))
            && let Some(began) = self.wait_began.take()
        {
            self.waited(began)?;
        }
        if !matches!(
            action,
            Action::Record(_)
                | Action::CheckSurface { .. }
                | Action::CheckTripwires { .. }
                | Action::CheckDiff { .. }
                | Action::Iterate(_)
                | Action::Verify { .. }
        ) {
            self.seen = None;
            self.writer.sync()?;
            if matches!(action, Action::Wait(_))
                && self.wait_began.is_none()
                && !self.state.settings.in_worktrees()
            {
                let root = self.ws.root.clone();
                self.wait_began = self.snapshot_of(&root, false);
            }
        }
        Ok(())
    }

    /// Appends an event and folds it (and anything other processes appended first).
    pub(crate) fn record(&mut self, event: Event) -> Result<(), CliError> {
        let recs = self.writer.append(&event)?;
        self.apply(&recs);
        Ok(())
    }

    pub(crate) fn apply(&mut self, recs: &[Record]) {
        self.apply_records(recs);
        self.sync_tracker();
    }

    fn apply_records(&mut self, recs: &[Record]) {
        let version = self.state.plan_version;
        for r in recs {
            self.state.apply(r);
            if let Some(body) = crate::notify::payload(&self.state, r) {
                // What a notification tells is durable first.
                if let Err(e) = self.writer.sync() {
                    crate::render::warn(&format!("cannot make the journal durable: {e}"));
                }
                if let Some(h) = crate::notify::send(&self.state.settings.notify, body) {
                    self.notifying.push(h);
                }
            }
            if self.out.json {
                crate::render::json_event(r);
            }
            self.progress.event(&self.state, r);
        }
        // A new plan version (a REPLAN, a planner's tasks, their approval): kept.
        if self.state.plan_version != version {
            let v = self.state.plan_version;
            let md = self.state.plan.to_markdown();
            if let Err(e) =
                agentloop_ground::fsutil::write_atomic(&self.run.plan_version(v), md.as_bytes())
            {
                self.progress
                    .warn(&format!("cannot write plan version {v}: {e}"));
            }
        }
        self.report_forged();
    }

    /// Lines of the journal agentloop did not write, met while reading it: never acted
    /// on; each is recorded once and said on stderr.
    fn report_forged(&mut self) {
        for f in self.writer.take_forged() {
            if self.state.forged.contains(&f) {
                continue;
            }
            crate::render::warn(&format!(
                "journal line {} is not agentloop's (a {} record claiming seq {}, appended or edited by something else): ignored",
                f.line, f.kind, f.seq
            ));
            match self.writer.append(&Event::ForgeryIgnored(f)) {
                Ok(recs) => {
                    for r in &recs {
                        self.state.apply(r);
                    }
                }
                Err(e) => crate::render::warn(&format!("cannot record it: {e}")),
            }
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
        if let Err(e) = self.writer.sync() {
            self.progress
                .warn(&format!("cannot make the journal durable: {e}"));
        }
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

/// The files inside `root` this process's standard output and error are written to,
/// relative to it.
fn own_output_in(root: &std::path::Path) -> std::collections::BTreeSet<String> {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    [1, 2]
        .into_iter()
        .filter_map(|fd| std::fs::read_link(format!("/proc/self/fd/{fd}")).ok())
        .filter_map(|p| {
            p.strip_prefix(&root)
                .ok()
                .map(|r| r.to_string_lossy().into_owned())
        })
        .filter(|r| !r.is_empty())
        .collect()
}
