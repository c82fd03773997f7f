//! The simulated driver: agentloop's own policy (`policy::schedule`) and its own
//! journal (the line encoding, the reader with its checksums and torn-tail rule, the
//! fold) driven in simulated time. What the real driver does at each action — start
//! an agent, run checks, merge onto the integration branch, ask the reviewer, take a
//! takeover's settings — is done here by simulated parts with scripted outcomes; what
//! git holds is a simulated branch whose moves are effects of their own.
//!
//! Every effect (a journal line written, the integration branch moved) is numbered;
//! a fault plan names the effects after which the driver dies. It then comes back as
//! `agentloop resume` does: the journal read from its bytes (a torn last line cut
//! off), the state folded again, settings built from the configuration with the run's
//! own decisions kept, `driver_started` recorded, and on it goes. The forge a run
//! ships through (`ship`) and the issue tracker it keeps in step (`tracker`) are
//! simulated too.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use agentloop_config::Settings;
use agentloop_journal::*;
use agentloop_policy::{self as policy, Action, Pick, WaitReason};

use super::scenario::Scenario;

/// The most effects one run may take: more is a run that cannot finish.
const MAX_EFFECTS: u64 = 20_000;
/// Simulated time a run may take (30 days).
const MAX_SIM_MS: u64 = 30 * 24 * 3_600_000;
/// The simulated clock's start (2026-11-27).
pub(super) const EPOCH_MS: u64 = 1_795_737_600_000;
/// How long a driver takes to come back after it died.
const RESTART_MS: u64 = 5_000;

/// When the driver dies.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// Effect numbers (from 1) after which the driver is killed.
    pub kills: Vec<u64>,
    /// A kill that follows a journal line leaves that line half-written.
    pub torn: bool,
}

/// A commit on the simulated integration branch.
#[derive(Debug, Clone, PartialEq)]
pub struct Commit {
    pub iteration: u32,
    pub task: String,
}

/// What a simulated run left behind.
#[derive(Debug)]
pub struct Run {
    /// The journal's bytes.
    pub journal: Vec<u8>,
    /// The last driver's state in memory.
    pub state: RunState,
    /// The integration branch, oldest first.
    pub branch: Vec<Commit>,
    /// Drivers started (1 without faults).
    pub drivers: u32,
    /// Effects taken.
    pub effects: u64,
    /// Of them, those that are a line of the driver's (a kill there may tear it), in
    /// order; a kill at any other tears nothing.
    pub tearable: Vec<u64>,
    /// Why the run could not finish, if it could not.
    pub stuck: Option<String>,
    /// Simulated time from the run's start to its end.
    pub elapsed_ms: u64,
    /// The simulated time agents and task checks took, summed over every attempt
    /// (what workers have to do, whatever the queue).
    pub work_ms: u64,
    /// A person's requests made (the scenario's, once their point came).
    pub asked: usize,
    /// What the forge holds (runs that ship).
    pub forge: super::services::Forge,
    /// What the issue tracker holds (runs kept in step with one).
    pub tracker: super::services::Tracker,
}

#[derive(Clone)]
pub(super) enum Done {
    Agent(u32),
    Checks(u32),
    Merge(Vec<u32>),
    Person,
    /// A planner's answer (planner, basis).
    Planned(u32, String),
}

#[derive(Clone)]
pub(super) struct Pending {
    pub(super) at: u64,
    pub(super) order: u64,
    pub(super) done: Done,
}

pub(super) struct Killed;

/// At which effects of the run under way a run killed there is tried (`at`), and what
/// is told each (the effect, whether its line was torn, and how the killed run ended):
/// `fork.rs`.
pub(super) struct Forks<'a> {
    pub(super) at: Box<dyn Fn(u64) -> bool + 'a>,
    pub(super) killed: Box<dyn FnMut(u64, bool, Run) + 'a>,
}

#[derive(Clone)]
pub(super) struct World<'a> {
    pub(super) sc: &'a Scenario,
    /// Set on a run without faults whose every kill is tried from a copy of its world.
    pub(super) forks: Option<Rc<RefCell<Forks<'a>>>>,
    pub(super) journal: Vec<u8>,
    pub(super) state: RunState,
    pub(super) branch: Vec<Commit>,
    pub(super) now: u64,
    pub(super) effects: u64,
    pub(super) kills: Vec<u64>,
    pub(super) torn: bool,
    /// The effects that are a line of the driver's (a kill there may tear it), in order.
    pub(super) tearable: Vec<u64>,
    pub(super) pending: Vec<Pending>,
    pub(super) order: u64,
    pub(super) busy: BTreeSet<u32>,
    /// Planners at work.
    pub(super) planning: u32,
    pub(super) questions: u64,
    pub(super) drivers: u32,
    /// Tries of each (task, attempt) so far: a lost job or a usage limit happens on
    /// the first only.
    pub(super) tries: BTreeMap<(String, u32), u32>,
    /// Simulated agent and check time so far.
    pub(super) work_ms: u64,
    /// The scenario's requests a person has made (their lines are theirs, written
    /// whole whatever becomes of the driver).
    pub(super) asked: BTreeSet<usize>,
    /// The forge and the tracker, and how often each call to them was tried.
    pub(super) forge: super::services::Forge,
    pub(super) tracker: super::services::Tracker,
    pub(super) calls: BTreeMap<String, u32>,
    /// What the driver keeps in memory of the tracker: telling it now (a line it
    /// records meanwhile tells nothing more), refused until then (simulated ms).
    pub(super) telling: bool,
    pub(super) tracker_quiet_until: u64,
}

/// Runs `sc` to its end with the driver killed as `faults` says.
pub fn run(sc: &Scenario, faults: &Faults) -> Run {
    let (mut w, settings) = World::new(sc, faults);
    let stuck = w.drive_to_end(settings);
    w.into_run(stuck)
}

impl<'a> World<'a> {
    /// The world at the run's first line (`run_created`), with the settings its first
    /// driver starts with.
    pub(super) fn new(sc: &'a Scenario, faults: &Faults) -> (World<'a>, Settings) {
        // With planners the plan may start with its goal alone.
        let plan = agentloop_plan::Plan::parse_unchecked("PLAN.md", &sc.plan)
            .and_then(|p| {
                match sc.config.run.planners {
                    0 => p.validate("PLAN.md"),
                    _ => p.validate_growing("PLAN.md"),
                }?;
                Ok(p)
            })
            .unwrap_or_else(|e| panic!("seed {}: the generated plan does not parse: {e}", sc.seed));
        let mut settings = Settings::from_config(&sc.config);
        settings.decide_from_plan(&plan, sc.config.run.shape, sc.config.run.workflow);
        let first = Event::RunCreated {
            run_id: format!("sim-{}", sc.seed),
            plan_file: "PLAN.md".into(),
            workdir: ".".into(),
            plan,
            settings: settings.clone(),
            head: Some("base".into()),
            tree: Some("tree0".into()),
        };
        let line = encode(1, &time(EPOCH_MS), &first);
        let rec = Record {
            seq: 1,
            time: time(EPOCH_MS),
            event: first,
        };
        let mut kills = faults.kills.clone();
        kills.sort_unstable();
        kills.dedup();
        let w = World {
            sc,
            forks: None,
            journal: line,
            state: RunState::from_first(&rec).expect("run_created folds"),
            branch: Vec::new(),
            now: EPOCH_MS,
            effects: 1,
            kills,
            torn: faults.torn,
            tearable: Vec::new(),
            pending: Vec::new(),
            order: 0,
            busy: BTreeSet::new(),
            planning: 0,
            questions: 0,
            drivers: 0,
            tries: BTreeMap::new(),
            work_ms: 0,
            asked: BTreeSet::new(),
            forge: Default::default(),
            tracker: Default::default(),
            calls: BTreeMap::new(),
            telling: false,
            tracker_quiet_until: 0,
        };
        (w, settings)
    }

    /// What the run left behind; `stuck`: why it could not finish.
    pub(super) fn into_run(self, stuck: Option<String>) -> Run {
        Run {
            journal: self.journal,
            state: self.state,
            branch: self.branch,
            drivers: self.drivers,
            effects: self.effects,
            tearable: self.tearable,
            stuck,
            elapsed_ms: self.now - EPOCH_MS,
            work_ms: self.work_ms,
            asked: self.asked.len(),
            forge: self.forge,
            tracker: self.tracker,
        }
    }
}

fn time(ms: u64) -> String {
    humantime::format_rfc3339_millis(std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms))
        .to_string()
}

impl World<'_> {
    /// Drivers one after another until the run is over; `None` when it ended.
    pub(super) fn drive_to_end(&mut self, first: Settings) -> Option<String> {
        let mut settings = first;
        loop {
            self.drivers += 1;
            match self.start(settings.clone()).and_then(|()| self.drive()) {
                Ok(None) => return None,
                Ok(Some(stuck)) => return Some(stuck),
                Err(Killed) => match self.come_back() {
                    Ok(s) => settings = s,
                    Err(why) => return Some(why),
                },
            }
        }
    }

    /// The driver died: the next one reads the journal back and builds the settings
    /// it goes on with.
    pub(super) fn come_back(&mut self) -> Result<Settings, String> {
        self.takeover()?;
        Ok(self.resume_settings())
    }

    /// What `resume` builds: the configuration's settings, with what the run decided
    /// when it was created kept.
    fn resume_settings(&self) -> Settings {
        let mut s = Settings::new(&self.sc.config, self.state.settings.flags.clone());
        s.keep_run_decisions(&self.state.settings);
        s
    }

    /// The driver died: everything under way is gone; the journal is read back from
    /// its bytes as the next driver reads it.
    fn takeover(&mut self) -> Result<(), String> {
        self.busy.clear();
        self.planning = 0;
        self.pending.clear();
        self.telling = false;
        self.tracker_quiet_until = 0;
        self.now += RESTART_MS;
        let c = super::read_back(&self.journal)
            .map_err(|e| format!("the journal cannot be read back: {e}"))?;
        if !c.forged.is_empty() {
            return Err(format!(
                "the journal has lines it did not write: {:?}",
                c.forged
            ));
        }
        self.journal.truncate(c.valid_len as usize);
        self.state = RunState::fold(&c.records).map_err(|e| format!("fold: {e}"))?;
        Ok(())
    }

    fn start(&mut self, settings: Settings) -> Result<(), Killed> {
        if self.state.is_finished() {
            return Ok(());
        }
        if self.state.paused {
            self.append(Event::Control {
                id: format!("resume-{}", self.drivers),
                source: "cli".into(),
                request: Request::Resume,
                by: None,
            })?;
        }
        self.append(Event::DriverStarted {
            pid: 1000 + self.drivers,
            version: "sim".into(),
            settings,
            agents: BTreeMap::new(),
            prerequisites: None,
        })?;
        if self.state.baseline.is_none() {
            let files = crate::efficiency::surface_of(&["PLAN.md", "tests/t.sh"]);
            self.append(Event::BaselineRecorded { files })?;
        }
        if self.state.settings.in_worktrees() && self.state.integration.is_none() {
            self.append(Event::IntegrationStarted {
                branch: format!("agentloop/{}", self.state.run_id),
                base: "base".into(),
            })?;
        }
        Ok(())
    }

    /// A line another process writes (a person's request): never torn by the
    /// driver's death, which may still follow it.
    pub(super) fn append_whole(&mut self, event: Event) -> Result<(), Killed> {
        self.write(event, false)
    }

    /// One effect: a journal line, applied to the state as the driver applies it.
    pub(super) fn append(&mut self, event: Event) -> Result<(), Killed> {
        self.write(event, true)
    }

    /// A journal line; `tearable`: the driver's own, torn when it dies writing it.
    fn write(&mut self, event: Event, tearable: bool) -> Result<(), Killed> {
        let seq = self.state.last_seq + 1;
        let rec = Record {
            seq,
            time: time(self.now),
            event,
        };
        let line = encode(seq, &rec.time, &rec.event);
        let len = line.len();
        self.journal.extend_from_slice(&line);
        self.state.apply(&rec);
        self.effect(tearable.then_some(len))?;
        // As the driver: the tracker told what the line changed.
        self.tell_tracker()
    }

    /// Counts an effect; the driver dies here when the fault plan says so (a journal
    /// line of `line` bytes just written is torn when the plan tears).
    pub(super) fn effect(&mut self, line: Option<usize>) -> Result<(), Killed> {
        self.effects += 1;
        if line.is_some() {
            self.tearable.push(self.effects);
        }
        self.try_kills_here(line);
        if self.kills.first() == Some(&self.effects) {
            self.kills.remove(0);
            if let (true, Some(len)) = (self.torn, line) {
                let keep = self.journal.len() - len / 2;
                self.journal.truncate(keep);
            }
            return Err(Killed);
        }
        Ok(())
    }

    /// A call to the forge or the tracker, tried once more: the first try of each
    /// is refused when `refused` (the scenario's draw) says so.
    pub(super) fn call(&mut self, what: &str, refused: bool) -> Result<(), String> {
        let tries = self.calls.entry(what.to_string()).or_insert(0);
        *tries += 1;
        if *tries == 1 && refused {
            return Err(format!("{what}: 502 Bad Gateway"));
        }
        Ok(())
    }

    pub(super) fn later(&mut self, after_ms: u64, done: Done) {
        self.order += 1;
        self.pending.push(Pending {
            at: self.now + after_ms,
            order: self.order,
            done,
        });
    }

    pub(super) fn attempt_of(&self, iteration: u32) -> Option<(String, super::scenario::Attempt)> {
        let open = self.state.open_iteration(iteration)?;
        let task = open.started.task.clone();
        let a = self.sc.attempt(&task, open.started.attempt);
        Some((task, a))
    }

    /// The driver's loop, as `drive_workers` takes it (one worker is the same loop:
    /// the policy gives one action at a time). `Ok(None)`: the run is over.
    fn drive(&mut self) -> Result<Option<String>, Killed> {
        loop {
            let most = MAX_EFFECTS.max(self.sc.tasks.len() as u64 * 200);
            if self.effects > most || self.now > EPOCH_MS + MAX_SIM_MS {
                return Ok(Some(self.stuck_words()));
            }
            self.deliver_due()?;
            self.person_requests()?;
            self.poll_review()?;
            // An agent's usage limit has reset: its tasks go on.
            let over: Vec<String> = self
                .state
                .agent_limits
                .iter()
                .filter(|(_, until)| self.now >= **until)
                .map(|(a, _)| a.clone())
                .collect();
            for agent in over {
                self.append(Event::AgentLimitOver { agent })?;
            }
            if self.state.gate.is_some() && !self.person_asked() {
                self.ask_person();
            }
            // The driver's own choice of what to do now.
            match policy::pick(&self.state, &self.busy) {
                Pick::Take(Action::Record(e)) => self.record_decision(e)?,
                Pick::Take(Action::Iterate(p)) => self.start_iteration(p)?,
                Pick::Take(Action::CheckSurface { iteration }) => self.check_surface(iteration)?,
                Pick::Take(Action::CheckTripwires { iteration }) => {
                    self.check_tripwires(iteration)?
                }
                Pick::Take(Action::Restore { iteration, cause }) => {
                    self.append(Event::SurfaceRestored { iteration, cause })?
                }
                Pick::Take(Action::Verify { iteration, .. }) => {
                    let ms = self
                        .attempt_of(iteration)
                        .map_or(1_000, |(_, a)| a.checks_ms);
                    self.busy.insert(iteration);
                    self.work_ms += ms;
                    self.later(ms, Done::Checks(iteration));
                }
                Pick::Take(Action::Merge { batch }) => self.start_merge(batch)?,
                Pick::Take(Action::Review { iteration, .. }) => self.review(iteration)?,
                Pick::Take(Action::CheckDiff { task }) => self.append(Event::TaskDiffChecked {
                    task,
                    commit: Some("task-commit".into()),
                    triggered: Vec::new(),
                })?,
                Pick::Take(Action::Validate) => self.append(Event::Validated {
                    passed: true,
                    commands: Vec::new(),
                    digest: None,
                    not_the_work: None,
                })?,
                Pick::Take(Action::TestBaseline) => {
                    self.append(Event::TestsBaseline(Default::default()))?
                }
                Pick::Take(Action::Ship(step)) => self.ship(step)?,
                Pick::Take(Action::Plan { planner, basis }) => self.ask_planner(planner, basis)?,
                Pick::Take(Action::Judge { cycle }) => self.judge_cycle(cycle)?,
                // A planner at work may still add tasks: the run neither ends nor
                // waits for a person under it (as the driver with workers does).
                Pick::Wait(_) | Pick::Exit(_) if self.planning > 0 => self.wait()?,
                Pick::Take(a @ (Action::Exit(_) | Action::Wait(_))) => {
                    return Ok(Some(format!("pick gave {a:?} to take")));
                }
                Pick::Exit(_) => {
                    self.tell_tracker_last()?;
                    return Ok(None);
                }
                Pick::Wait(reason) => {
                    // The run's limit: waited out, and said so. An agent's (with
                    // workers): the wait ends at its reset (`agent_limit_over`).
                    if let WaitReason::UsageLimit { until_ms } = reason {
                        self.now = self.now.max(until_ms);
                        if self.state.limit_until_ms.is_some() {
                            self.append(Event::LimitWaitOver)?;
                        }
                        continue;
                    }
                    if !self.person_asked() {
                        self.ask_person();
                    }
                    self.wait()?;
                }
                Pick::AwaitWork => self.wait()?,
            }
        }
    }

    fn stuck_words(&self) -> String {
        let tail: Vec<String> = super::read_back(&self.journal)
            .ok()
            .map(|c| {
                c.records
                    .iter()
                    .rev()
                    .take(8)
                    .map(|r| r.event.kind().to_string())
                    .collect()
            })
            .unwrap_or_default();
        format!(
            "the run did not finish: {} effects, {} simulated; the journal ends with {}",
            self.effects,
            humantime::format_duration(std::time::Duration::from_millis(self.now - EPOCH_MS)),
            tail.into_iter().rev().collect::<Vec<_>>().join(", ")
        )
    }

    /// Nothing to do now: time moves to the next thing that happens.
    pub(super) fn wait(&mut self) -> Result<(), Killed> {
        let resets = self
            .state
            .agent_limits
            .values()
            .copied()
            .chain(self.state.limit_until_ms);
        // A person's request at a moment still to come.
        let moments = self
            .sc
            .requests
            .iter()
            .enumerate()
            .filter(|(i, a)| !self.asked.contains(i) && a.at_ms.is_some())
            .filter_map(|(_, a)| Some(EPOCH_MS + a.at_ms?))
            .filter(|&t| t > self.now && !self.state.is_finished());
        let Some(at) = self
            .pending
            .iter()
            .map(|p| p.at)
            .chain(resets)
            .chain(moments)
            .min()
        else {
            // Nothing under way and nothing a person will do: say what the policy
            // waits for, as a stuck run.
            self.now = EPOCH_MS + MAX_SIM_MS + 1;
            return Ok(());
        };
        self.now = self.now.max(at);
        self.deliver_due()
    }

    pub(super) fn deliver_due(&mut self) -> Result<(), Killed> {
        loop {
            let Some(i) = self
                .pending
                .iter()
                .enumerate()
                .filter(|(_, p)| p.at <= self.now)
                .min_by_key(|(_, p)| (p.at, p.order))
                .map(|(i, _)| i)
            else {
                return Ok(());
            };
            let p = self.pending.remove(i);
            match p.done {
                Done::Agent(n) => {
                    self.busy.remove(&n);
                    self.agent_finished(n)?;
                }
                Done::Checks(n) => {
                    self.busy.remove(&n);
                    self.checks_finished(n)?;
                }
                Done::Merge(batch) => {
                    for n in &batch {
                        self.busy.remove(n);
                    }
                    self.merge_finished(batch)?;
                }
                Done::Person => self.person_answers()?,
                Done::Planned(planner, basis) => {
                    self.planning = self.planning.saturating_sub(1);
                    self.planner_answers(planner, basis)?;
                }
            }
        }
    }
}
