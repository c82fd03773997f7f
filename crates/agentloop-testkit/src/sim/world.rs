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
//! own decisions kept, `driver_started` recorded, and on it goes.

use std::collections::{BTreeMap, BTreeSet};

use agentloop_core::config::Settings;
use agentloop_core::journal::*;
use agentloop_core::policy::{self, Action, WaitReason};
use agentloop_core::signals::Signals;

use super::scenario::Scenario;

/// The most effects one run may take: more is a run that cannot finish.
const MAX_EFFECTS: u64 = 20_000;
/// Simulated time a run may take (30 days).
const MAX_SIM_MS: u64 = 30 * 24 * 3_600_000;
/// The simulated clock's start (2026-11-27).
const EPOCH_MS: u64 = 1_795_737_600_000;
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
    /// Why the run could not finish, if it could not.
    pub stuck: Option<String>,
}

enum Done {
    Agent(u32),
    Checks(u32),
    Merge(u32),
    Person,
}

struct Pending {
    at: u64,
    order: u64,
    done: Done,
}

struct Killed;

struct World<'a> {
    sc: &'a Scenario,
    journal: Vec<u8>,
    state: RunState,
    branch: Vec<Commit>,
    now: u64,
    effects: u64,
    kills: Vec<u64>,
    torn: bool,
    pending: Vec<Pending>,
    order: u64,
    busy: BTreeSet<u32>,
    questions: u64,
    drivers: u32,
    /// Tries of each (task, attempt) so far: a lost job or a usage limit happens on
    /// the first only.
    tries: BTreeMap<(String, u32), u32>,
    scratch: tempfile::TempDir,
}

/// Runs `sc` to its end with the driver killed as `faults` says.
pub fn run(sc: &Scenario, faults: &Faults) -> Run {
    let plan = agentloop_core::plan::Plan::parse("PLAN.md", &sc.plan)
        .unwrap_or_else(|e| panic!("seed {}: the generated plan does not parse: {e}", sc.seed));
    let mut settings = Settings::from_config(&sc.config);
    let stuck = match settings.decide_from_plan(&plan, sc.config.run.shape, sc.config.run.workflow)
    {
        Ok(()) => None,
        Err(c) => Some(format!("intent plan: {}", c.describe())),
    };
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
    let mut w = World {
        sc,
        journal: line,
        state: RunState::from_first(&rec).expect("run_created folds"),
        branch: Vec::new(),
        now: EPOCH_MS,
        effects: 1,
        kills,
        torn: faults.torn,
        pending: Vec::new(),
        order: 0,
        busy: BTreeSet::new(),
        questions: 0,
        drivers: 0,
        tries: BTreeMap::new(),
        scratch: tempfile::tempdir().expect("a temporary directory"),
    };
    let stuck = stuck.or_else(|| w.drive_to_end(settings));
    Run {
        journal: w.journal,
        state: w.state,
        branch: w.branch,
        drivers: w.drivers,
        effects: w.effects,
        stuck,
    }
}

fn time(ms: u64) -> String {
    humantime::format_rfc3339_millis(std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms))
        .to_string()
}

/// The open iteration a step belongs to (the real driver leaves out the steps of
/// iterations it has under way).
fn iteration_of(a: &Action) -> Option<u32> {
    match a {
        Action::Verify { iteration, .. }
        | Action::CheckSurface { iteration }
        | Action::CheckTripwires { iteration }
        | Action::Restore { iteration, .. }
        | Action::Review { iteration, .. }
        | Action::Merge { iteration } => Some(*iteration),
        Action::Record(Event::IterationFinished(f)) => Some(f.iteration),
        _ => None,
    }
}

impl World<'_> {
    /// Drivers one after another until the run is over; `None` when it ended.
    fn drive_to_end(&mut self, first: Settings) -> Option<String> {
        let mut settings = first;
        loop {
            self.drivers += 1;
            match self.start(settings.clone()).and_then(|()| self.drive()) {
                Ok(None) => return None,
                Ok(Some(stuck)) => return Some(stuck),
                Err(Killed) => {
                    if let Err(why) = self.takeover() {
                        return Some(why);
                    }
                    settings = self.resume_settings();
                }
            }
        }
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
        self.pending.clear();
        self.now += RESTART_MS;
        let path = self.scratch.path().join("journal.jsonl");
        std::fs::write(&path, &self.journal).map_err(|e| e.to_string())?;
        let c = read(&path).map_err(|e| format!("the journal cannot be read back: {e}"))?;
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
            let files = ["PLAN.md", "tests/t.sh"]
                .map(|p| {
                    let f = SurfaceFile {
                        blob: format!("{:040x}", p.len()),
                        mode: 0o100644,
                        why: "a test file".into(),
                    };
                    (p.to_string(), f)
                })
                .into_iter()
                .collect();
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

    /// One effect: a journal line, applied to the state as the driver applies it.
    fn append(&mut self, event: Event) -> Result<(), Killed> {
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
        self.effect(Some(len))
    }

    /// Counts an effect; the driver dies here when the fault plan says so (a journal
    /// line of `line` bytes just written is torn when the plan tears).
    fn effect(&mut self, line: Option<usize>) -> Result<(), Killed> {
        self.effects += 1;
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

    fn later(&mut self, after_ms: u64, done: Done) {
        self.order += 1;
        self.pending.push(Pending {
            at: self.now + after_ms,
            order: self.order,
            done,
        });
    }

    fn attempt_of(&self, iteration: u32) -> Option<(String, super::scenario::Attempt)> {
        let open = self.state.open_iteration(iteration)?;
        let task = open.started.task.clone();
        let a = self.sc.attempt(&task, open.started.attempt);
        Some((task, a))
    }

    /// The driver's loop, as `drive_workers` takes it (one worker is the same loop:
    /// the policy gives one action at a time). `Ok(None)`: the run is over.
    fn drive(&mut self) -> Result<Option<String>, Killed> {
        loop {
            if self.effects > MAX_EFFECTS || self.now > EPOCH_MS + MAX_SIM_MS {
                return Ok(Some(self.stuck_words()));
            }
            self.deliver_due()?;
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
            let actions = policy::schedule(&self.state);
            let next = actions
                .into_iter()
                .find(|a| iteration_of(a).is_none_or(|i| !self.busy.contains(&i)));
            let idle = self.busy.is_empty();
            match next {
                Some(Action::Record(e @ Event::RunFinished { .. })) if idle => self.append(e)?,
                Some(Action::Record(Event::RunFinished { .. })) => self.wait()?,
                Some(Action::Record(e)) => self.record_decision(e)?,
                Some(Action::Iterate(p)) => self.start_iteration(p)?,
                Some(Action::CheckSurface { iteration }) => self.check_surface(iteration)?,
                Some(Action::CheckTripwires { iteration }) => self.check_tripwires(iteration)?,
                Some(Action::Restore { iteration, cause }) => {
                    self.append(Event::SurfaceRestored { iteration, cause })?
                }
                Some(Action::Verify { iteration, .. }) => {
                    let ms = self
                        .attempt_of(iteration)
                        .map_or(1_000, |(_, a)| a.checks_ms);
                    self.busy.insert(iteration);
                    self.later(ms, Done::Checks(iteration));
                }
                Some(Action::Merge { iteration }) => self.start_merge(iteration)?,
                Some(Action::Review { iteration, .. }) => self.review(iteration)?,
                Some(Action::CheckDiff { task }) => self.append(Event::TaskDiffChecked {
                    task,
                    commit: Some("task-commit".into()),
                    triggered: Vec::new(),
                })?,
                Some(Action::Validate) if idle => self.append(Event::Validated {
                    passed: true,
                    commands: Vec::new(),
                    digest: None,
                })?,
                Some(Action::TestBaseline) if idle => {
                    self.append(Event::TestsBaseline(Default::default()))?
                }
                Some(Action::Ship(step)) if idle => {
                    return Ok(Some(format!(
                        "shipping is not simulated (asked for {step:?})"
                    )));
                }
                Some(Action::Exit(_)) if idle => return Ok(None),
                Some(Action::Wait(reason)) if idle && reason != WaitReason::Workers => {
                    // The run's limit: waited out, and said so. An agent's (with
                    // workers): the wait ends at its reset (`agent_limit_over`).
                    if let WaitReason::UsageLimit { until_ms } = reason {
                        if self.state.limit_until_ms.is_some() {
                            self.now = self.now.max(until_ms);
                            self.append(Event::LimitWaitOver)?;
                        } else {
                            self.now = self.now.max(until_ms);
                        }
                        continue;
                    }
                    if !self.person_asked() {
                        self.ask_person();
                    }
                    self.wait()?;
                }
                _ => self.wait()?,
            }
        }
    }

    fn stuck_words(&self) -> String {
        let path = self.scratch.path().join("stuck.jsonl");
        let tail: Vec<String> = std::fs::write(&path, &self.journal)
            .ok()
            .and_then(|()| read(&path).ok())
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
    fn wait(&mut self) -> Result<(), Killed> {
        let resets = self
            .state
            .agent_limits
            .values()
            .copied()
            .chain(self.state.limit_until_ms);
        let Some(at) = self.pending.iter().map(|p| p.at).chain(resets).min() else {
            // Nothing under way and nothing a person will do: say what the policy
            // waits for, as a stuck run.
            self.now = EPOCH_MS + MAX_SIM_MS + 1;
            return Ok(());
        };
        self.now = self.now.max(at);
        self.deliver_due()
    }

    fn deliver_due(&mut self) -> Result<(), Killed> {
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
                Done::Merge(n) => {
                    self.busy.remove(&n);
                    self.merge_finished(n)?;
                }
                Done::Person => self.person_answers()?,
            }
        }
    }

    fn person_asked(&self) -> bool {
        self.pending.iter().any(|p| matches!(p.done, Done::Person))
    }

    fn ask_person(&mut self) {
        self.questions += 1;
        let ms = self.sc.answer_ms(self.questions);
        self.later(ms, Done::Person);
    }

    /// A person answers what the run waits for now: approves a gate (rejects a
    /// changed check or a tripwire hit), skips a blocked task, stops a run whose
    /// budget is spent.
    fn person_answers(&mut self) -> Result<(), Killed> {
        let id = format!("person-{}", self.questions);
        let request = if let Some(g) = &self.state.gate {
            match g {
                Gate::Surface(_) | Gate::Tripwire(_) => Request::Reject {
                    note: Some("no: the checks and the tripwires stay".into()),
                },
                _ => Request::Approve {
                    note: None,
                    gate: None,
                },
            }
        } else if self.state.budget_spent.is_some() {
            Request::Stop
        } else if let Some(t) = self
            .state
            .tasks
            .iter()
            .find(|t| t.status == TaskStatus::Blocked)
        {
            Request::Skip {
                task: t.id.clone(),
                reason: Some("the simulated person skips it".into()),
            }
        } else {
            return Ok(());
        };
        self.append(Event::Control {
            id,
            source: "cli".into(),
            request,
            by: Some("person@sim".into()),
        })
    }

    fn record_decision(&mut self, e: Event) -> Result<(), Killed> {
        // One worker in the project commits a verified task as it records it.
        let e = match e {
            Event::IterationFinished(mut f)
                if f.outcome == Outcome::Completed
                    && self.state.settings.commit
                    && !self.state.settings.in_worktrees() =>
            {
                f.commit = Some(format!("commit-{}", f.iteration));
                Event::IterationFinished(f)
            }
            e => e,
        };
        self.append(e)
    }

    fn start_iteration(&mut self, p: policy::IterationPlan) -> Result<(), Killed> {
        let a = self.sc.attempt(&p.task, p.attempt);
        let worktree = self
            .state
            .settings
            .in_worktrees()
            .then(|| format!(".agentloop/worktrees/{}", p.task));
        self.append(Event::IterationStarted(IterationStarted {
            iteration: p.iteration,
            task: p.task.clone(),
            attempt: p.attempt,
            kind: p.kind,
            agent: p.agent.clone(),
            tree_before: Some(format!("tree-before-{}", p.iteration)),
            head_before: None,
            steer: vec![],
            worktree,
        }))?;
        *self.tries.entry((p.task.clone(), p.attempt)).or_insert(0) += 1;
        self.busy.insert(p.iteration);
        self.later(a.agent_ms, Done::Agent(p.iteration));
        Ok(())
    }

    fn agent_finished(&mut self, n: u32) -> Result<(), Killed> {
        let Some((task, a)) = self.attempt_of(n) else {
            return Ok(());
        };
        let attempt = self
            .state
            .open_iteration(n)
            .map_or(0, |o| o.started.attempt);
        let first = self.tries.get(&(task.clone(), attempt)) == Some(&1);
        if first && (a.lost || a.limited) {
            let (kind, message) = if a.lost {
                (AgentErrorKind::Lost, "the job was lost with its node")
            } else {
                (
                    AgentErrorKind::RateLimit,
                    "usage limit reached · resets in 1h",
                )
            };
            return self.append(Event::AgentFinished(AgentFinished {
                iteration: n,
                exit_code: Some(1),
                duration_ms: a.agent_ms,
                error: Some(AgentError {
                    kind,
                    message: message.into(),
                }),
                resets_at_ms: (!a.lost).then_some(self.now + 3_600_000),
                ..AgentFinished::default()
            }));
        }
        let mut changed = Vec::new();
        if !a.idle && !a.crashes && !a.asks {
            changed.push(format!("src/{}.rs", task.to_lowercase()));
        }
        if a.tampers {
            changed.push("tests/t.sh".into());
        }
        if a.trips {
            changed.push("migrations/0001.sql".into());
        }
        let tree_after = (!changed.is_empty()).then(|| format!("tree-after-{n}"));
        self.append(Event::AgentFinished(AgentFinished {
            iteration: n,
            exit_code: Some(if a.crashes { 1 } else { 0 }),
            duration_ms: a.agent_ms,
            output_bytes: if a.crashes { 0 } else { 400 },
            signals: Signals {
                complete: a.claims,
                blocked: a.asks.then(|| "which database should it use?".into()),
                ..Signals::default()
            },
            cost_usd: 0.05,
            tree_after,
            changed_files: changed.clone(),
            task_changed: changed,
            ..AgentFinished::default()
        }))
    }

    fn check_surface(&mut self, iteration: u32) -> Result<(), Killed> {
        let tampered = self.attempt_of(iteration).is_some_and(|(_, a)| a.tampers);
        let changes = if tampered {
            vec![SurfaceChange {
                path: "tests/t.sh".into(),
                kind: ChangeKind::Modified,
                why: "a test file".into(),
                before: self
                    .state
                    .baseline
                    .as_ref()
                    .and_then(|b| b.get("tests/t.sh").cloned()),
                after: None,
                diff: "-exit 1\n+exit 0".into(),
            }]
        } else {
            Vec::new()
        };
        self.append(Event::SurfaceChecked { iteration, changes })
    }

    fn check_tripwires(&mut self, iteration: u32) -> Result<(), Killed> {
        let trips = self.attempt_of(iteration).is_some_and(|(_, a)| a.trips);
        let hits = if trips {
            vec![TripHit {
                wire: "touch migrations/".into(),
                evidence: "migrations/0001.sql changed (migrations/)".into(),
            }]
        } else {
            Vec::new()
        };
        self.append(Event::TripwiresChecked { iteration, hits })
    }

    fn checks_finished(&mut self, iteration: u32) -> Result<(), Killed> {
        let Some((task, a)) = self.attempt_of(iteration) else {
            return Ok(());
        };
        let command = format!("sh tests/{}.sh", task.to_lowercase());
        let fp = format!("{task}-fails");
        self.append(Event::VerifyFinished(VerifyFinished {
            iteration,
            passed: a.passes,
            commands: vec![CommandResult {
                command,
                exit_code: Some(if a.passes { 0 } else { 1 }),
                timed_out: false,
                duration_ms: a.checks_ms,
                output_bytes: 100,
                truncated: false,
                measured: None,
                tests: None,
            }],
            fingerprint: (!a.passes).then(|| fp.clone()),
            digest: (!a.passes).then(|| format!("{fp}: assertion failed")),
            evidence: None,
            held_out: Vec::new(),
        }))
    }

    /// As `start_merge`: a merge a dead driver began that is on the branch already is
    /// recorded as merged; otherwise it starts (again) from the branch's head.
    fn start_merge(&mut self, iteration: u32) -> Result<(), Killed> {
        let Some(open) = self.state.open_iteration(iteration).cloned() else {
            return Ok(());
        };
        if let Some(MergeState::Started { head }) = &open.merge {
            let since: usize = head.parse().unwrap_or(0);
            if self.branch[since.min(self.branch.len())..]
                .iter()
                .any(|c| c.iteration == iteration)
            {
                let commit = format!("merge-{iteration}");
                return self.append(Event::Merged { iteration, commit });
            }
        }
        self.append(Event::MergeStarted {
            iteration,
            head: self.branch.len().to_string(),
        })?;
        let ms = self
            .attempt_of(iteration)
            .map_or(1_000, |(_, a)| a.merge_ms);
        self.busy.insert(iteration);
        self.later(ms, Done::Merge(iteration));
        Ok(())
    }

    /// The merge job's end: the branch moves (an effect of its own), then the driver
    /// records it; a conflict or red checks on the merged result leave the branch.
    fn merge_finished(&mut self, iteration: u32) -> Result<(), Killed> {
        let Some((task, a)) = self.attempt_of(iteration) else {
            return Ok(());
        };
        if a.conflicts {
            return self.append(Event::MergeFailed {
                iteration,
                conflict: true,
                reason: format!("{task} conflicts with the integration branch"),
                digest: "CONFLICT (content): src/lib.rs".into(),
                fingerprint: Some(format!("{task}-conflict")),
            });
        }
        self.branch.push(Commit {
            iteration,
            task: task.clone(),
        });
        self.effect(None)?;
        self.append(Event::Merged {
            iteration,
            commit: format!("merge-{iteration}"),
        })
    }

    /// The reviewer's turn, in the driver's own turn as the driver takes it.
    fn review(&mut self, iteration: u32) -> Result<(), Killed> {
        let (Some(cfg), Some(open)) = (
            self.state.settings.review.clone(),
            self.state.open_iteration(iteration).cloned(),
        ) else {
            return Ok(());
        };
        let started = policy::review::next_round(&cfg, &open, &[], 40);
        let (reviewer, round, of) = (started.reviewer.clone(), started.round, started.of);
        self.append(Event::ReviewStarted(started))?;
        if reviewer.is_empty() {
            return Ok(());
        }
        let rejected = self
            .attempt_of(iteration)
            .is_some_and(|(_, a)| a.rejected && round == 1);
        self.append(Event::ReviewFinished(ReviewFinished {
            iteration,
            reviewer,
            round,
            of,
            verdict: if rejected {
                ReviewVerdict::Reject
            } else {
                ReviewVerdict::Approve
            },
            findings: if rejected {
                vec![Finding {
                    file: Some("src/lib.rs".into()),
                    line: Some(3),
                    what: "the error case is not handled".into(),
                }]
            } else {
                Vec::new()
            },
            unparsable: false,
            cost_usd: 0.01,
        }))
    }
}
