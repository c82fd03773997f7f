//! Deterministic simulation of whole runs, the way FoundationDB and TigerBeetle test
//! theirs: a scenario drawn from a seed (plan, workers, shape, kind of work, gates,
//! tripwires, reviewer, what every attempt does) runs once without faults and once with
//! the driver killed between effects, in simulated time; the two must end the same
//! (a run with a person's requests at random moments: both hold the invariants).
//!
//! What is agentloop's own here: the policy, the journal's encoding, reader and fold,
//! the settings a takeover derives, the reviewer's rounds, what the tracker is told.
//! What is simulated: agents, checks, merges and the integration branch, the
//! reviewer's verdicts, the forge and the issue tracker, the person at the gates (and
//! with requests of their own: steer, pause, skip, debug, stop), the clock. See
//! docs/ARCHITECTURE.md ("The simulator").

mod fork;
mod rng;
mod scale;
mod scenario;
mod services;
mod ship;
mod steps;
mod tracker;
mod world;

use std::collections::{BTreeMap, BTreeSet};

use agentloop_journal::{Contents, Event, Gate, Outcome, RunState, TaskStatus, read};

pub use fork::run_killed_at;
pub use rng::Rng;
pub use scale::{Scaled, busiest, scale};
pub use scenario::{Asked, Asking, Attempt, Profile, Scenario};
pub use services::{Forge, Issue, Pr, Tracker};
pub use world::{Commit, Faults, Run, run};

/// What one seed's check saw.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    pub effects: u64,
    pub drivers: u32,
    pub workers: u32,
    pub tasks: usize,
    pub done: usize,
    pub gates: usize,
    pub merges: usize,
    /// Tasks planners added.
    pub planned: usize,
    /// A person's requests made unprompted (steer, pause, skip, debug, stop).
    pub asked: usize,
    /// Of them, at random moments (the run held to the invariants only).
    pub at_moments: bool,
    /// Pull requests opened on the simulated forge, and those merged.
    pub prs: usize,
    pub prs_merged: usize,
    /// Issues the tracker holds.
    pub issues: usize,
    /// How its ending was compared with the run without faults.
    pub compared: Compared,
}

/// The faults a seed draws: one to four kills at effects of the run without faults,
/// sometimes with the journal line under way torn.
pub fn faults_for(seed: u64, effects: u64) -> Faults {
    let mut r = Rng::new(seed).fork(0xfa17);
    let n = r.range(1, 4);
    Faults {
        kills: (0..n).map(|_| r.range(2, effects.max(2))).collect(),
        torn: r.chance(50),
    }
}

/// Runs the seed's scenario without faults and with its faults, and checks that the
/// faulted run ends as the other did. The error names the seed and what differs.
pub fn check(seed: u64) -> Result<Seen, String> {
    let sc = Scenario::from_seed(seed);
    let clean = run(&sc, &Faults::default());
    let base = sound(&clean).map_err(|e| format!("seed {seed}, without faults: {e}"))?;
    let faults = faults_for(seed, clean.effects);
    let faulted = run(&sc, &faults);
    let with = sound(&faulted).map_err(|e| format!("seed {seed}, with faults {faults:?}: {e}"))?;
    let compared = compare(&sc, &clean, &base, &with)
        .map_err(|e| format!("seed {seed}, with faults {faults:?}: {e}"))?;
    Ok(Seen {
        effects: faulted.effects,
        drivers: faulted.drivers,
        workers: faulted.state.settings.workers,
        tasks: sc.tasks.len(),
        done: base.done.len(),
        gates: base.gates.len(),
        merges: faulted.branch.len(),
        planned: faulted.state.planning.added.len(),
        asked: faulted.asked,
        at_moments: sc.at_random_moments(),
        prs: faulted.forge.prs.len(),
        prs_merged: faulted.forge.base.len(),
        issues: faulted.tracker.issues.len(),
        compared,
    })
}

/// Reads `journal` back as agentloop reads a journal file: written to a file in this
/// thread's scratch directory and read with `journal::read`. The directory is made
/// once per thread, not twice per run (the every-kill test's thousands of runs).
pub(crate) fn read_back(journal: &[u8]) -> Result<Contents, String> {
    thread_local! {
        static SCRATCH: tempfile::TempDir = tempfile::tempdir().expect("a temporary directory");
    }
    let path = SCRATCH.with(|d| d.path().join("journal.jsonl"));
    std::fs::write(&path, journal).map_err(|e| e.to_string())?;
    read(&path).map_err(|e| e.to_string())
}

/// The seed's scenario killed at every effect in turn (one kill per run), and at each
/// that is a line of the driver's, killed with that line torn too: each of them must
/// end as the run without faults does. (A torn kill at any other effect tears nothing:
/// it would be the same run again.) Each killed run goes on from a copy of the run
/// without faults at its kill ([`run_killed_at`]). Returns the effects and the
/// kills tried.
pub fn check_every_kill(seed: u64) -> Result<(u64, u64), String> {
    let sc = Scenario::from_seed(seed);
    let mut endings = Vec::new();
    let clean = run_killed_at(
        &sc,
        |_| true,
        |k, torn, faulted| endings.push((k, torn, sound(&faulted))),
    );
    let base = sound(&clean).map_err(|e| format!("seed {seed}, without faults: {e}"))?;
    let kills = endings.len() as u64;
    for (k, torn, with) in endings {
        let at = || format!("seed {seed}, killed after effect {k} (torn {torn})");
        let with = with.map_err(|e| format!("{}: {e}", at()))?;
        compare(&sc, &clean, &base, &with).map_err(|e| format!("{}: {e}", at()))?;
    }
    Ok((clean.effects, kills))
}

/// How a run ended, as the comparison reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Ending {
    status: String,
    tasks: BTreeMap<String, TaskStatus>,
    done: BTreeSet<String>,
    /// The gates opened, in order (one worker) or sorted (workers: their order follows
    /// the timing the faults moved).
    gates: Vec<String>,
    merged: BTreeSet<String>,
    /// What the forge holds: each pull request (branch, base, merged, labels) and the
    /// base branch's heads.
    forge: Vec<String>,
    /// Where each tracker issue was moved last.
    tracker: Vec<String>,
}

impl Ending {
    /// Tasks done.
    pub fn done_count(&self) -> usize {
        self.done.len()
    }
}

/// What holds for every run, faults or not: it finished; its journal reads back
/// whole and folds to the state the driver had; every driver applied the run's own
/// gates and phases; the integration branch holds each done task once, and only
/// verified work.
pub fn sound(r: &Run) -> Result<Ending, String> {
    if let Some(why) = &r.stuck {
        return Err(why.clone());
    }
    let c = read_back(&r.journal).map_err(|e| format!("the journal does not read back: {e}"))?;
    if c.torn_tail.is_some() || !c.forged.is_empty() {
        return Err(format!(
            "the journal ends torn ({:?}) or has lines agentloop did not write ({})",
            c.torn_tail,
            c.forged.len()
        ));
    }
    let folded = RunState::fold(&c.records).map_err(|e| format!("fold: {e}"))?;
    if folded != r.state {
        return Err("the journal folds to another state than the driver had".into());
    }
    if !folded.is_finished() {
        return Err(format!(
            "the run ended {} without finishing",
            folded.status.as_str()
        ));
    }
    // Every driver applies what the run decided when it was created.
    let Some(Event::RunCreated {
        settings: created, ..
    }) = c.records.first().map(|r| &r.event)
    else {
        return Err("the journal does not start with run_created".into());
    };
    for rec in &c.records {
        if let Event::DriverStarted { settings, .. } = &rec.event
            && (settings.gates != created.gates
                || settings.debug_first != created.debug_first
                || settings.shape != created.shape
                || settings.workflow != created.workflow)
        {
            return Err(format!(
                "driver_started at seq {} applies other gates or phases than the run decided: {:?} / debug first {} / shape {:?} / workflow {:?}, created with {:?} / {} / {:?} / {:?}",
                rec.seq,
                settings.gates,
                settings.debug_first,
                settings.shape,
                settings.workflow,
                created.gates,
                created.debug_first,
                created.shape,
                created.workflow
            ));
        }
    }
    // What the branch may hold: verified iterations only, each task once.
    let mut outcome: BTreeMap<u32, Outcome> = BTreeMap::new();
    let mut passed: BTreeSet<u32> = BTreeSet::new();
    let mut gates = Vec::new();
    let mut step_failed = false;
    for rec in &c.records {
        match &rec.event {
            Event::IterationFinished(f) => {
                outcome.insert(f.iteration, f.outcome);
            }
            Event::VerifyFinished(v) if v.passed => {
                passed.insert(v.iteration);
            }
            // A failed ship step's gate depends on when the step was tried (a refused
            // first try the dead driver never recorded is not refused again): the
            // comparison leaves it out; the rest of the run must end the same.
            Event::ShipFailed { .. } => step_failed = true,
            Event::GateOpened {
                gate: Gate::Ship(_),
            } if step_failed => step_failed = false,
            Event::GateOpened { gate } => gates.push(format!("{gate:?}")),
            _ => {}
        }
    }
    let mut merged = BTreeSet::new();
    for commit in &r.branch {
        if !passed.contains(&commit.iteration)
            || outcome.get(&commit.iteration) != Some(&Outcome::Completed)
        {
            return Err(format!(
                "the integration branch holds iteration {} of {}, which was not verified ({:?})",
                commit.iteration,
                commit.task,
                outcome.get(&commit.iteration)
            ));
        }
        if !merged.insert(commit.task.clone()) {
            return Err(format!(
                "{} is on the integration branch twice",
                commit.task
            ));
        }
    }
    let tasks: BTreeMap<String, TaskStatus> = folded
        .tasks
        .iter()
        .map(|t| (t.id.clone(), t.status))
        .collect();
    let done: BTreeSet<String> = tasks
        .iter()
        .filter(|(_, s)| **s == TaskStatus::Done)
        .map(|(t, _)| t.clone())
        .collect();
    if folded.settings.in_worktrees() && merged != done {
        return Err(format!(
            "the integration branch holds {merged:?}, the done tasks are {done:?}"
        ));
    }
    if folded.settings.workers > 1 {
        gates.sort();
    }
    // A planner's proposal waits for the person at the driver's next decision: a
    // driver killed mid-iteration comes to it before that iteration is done again.
    // Its place among the other gates is left out; how many there were is not.
    let (proposals, mut gates): (Vec<String>, Vec<String>) =
        gates.into_iter().partition(|g| g == "NewTasks");
    gates.extend(proposals);
    let forge = ship::forge_ending(&r.forge, &c.records, &folded.settings.ship)?;
    let tracker = tracker::tracker_ending(&r.tracker, &c.records, &folded)?;
    Ok(Ending {
        status: format!("{} ({:?})", folded.status.as_str(), folded.finished),
        tasks,
        done,
        gates,
        merged,
        forge,
        tracker,
    })
}

/// The faulted run's ending against the clean run's, as far as it does not depend on
/// when things happened, which a kill moves (the new driver starts later, and what a
/// person or a planner does meanwhile lands elsewhere among the driver's steps):
/// - a person's requests at random moments; a Skip, DEBUG or Stop asked at a point of
///   a run with planners (which task is the last not started yet, and which tasks are
///   in when the run stops, depend on when a planner's proposal was taken up); a
///   budget spent with workers (which of their iterations it cut off): the invariants
///   only ([`sound`]);
/// - a Stop asked at a point: all but the gates (the one the driver was about to open
///   when the stop came may be open, or not yet).
fn compare(sc: &Scenario, clean: &Run, base: &Ending, with: &Ending) -> Result<Compared, String> {
    let asked = |what: Asking| sc.requests.iter().any(|a| a.what == what);
    let timed = sc.at_random_moments()
        || (sc.config.run.planners > 0
            && (asked(Asking::Skip) || asked(Asking::Debug) || asked(Asking::Stop)))
        || (clean.state.settings.workers > 1 && clean.state.budget_spent.is_some());
    if timed {
        return Ok(Compared::Invariants);
    }
    if asked(Asking::Stop) {
        let gateless = |e: &Ending| Ending {
            gates: Vec::new(),
            ..e.clone()
        };
        return same(&gateless(base), &gateless(with)).map(|()| Compared::ButGates);
    }
    same(base, with).map(|()| Compared::Whole)
}

/// How a faulted run was compared with the run without faults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Compared {
    /// Its whole ending.
    #[default]
    Whole,
    /// All but the gates opened.
    ButGates,
    /// Held to the invariants only.
    Invariants,
}

/// The faulted run ends as the run without faults: the same verdict, the same tasks
/// done, the same gates, the same branch.
fn same(clean: &Ending, faulted: &Ending) -> Result<(), String> {
    if clean == faulted {
        return Ok(());
    }
    Err(format!(
        "it ends otherwise than without faults:\n  without: {clean:?}\n  with:    {faulted:?}"
    ))
}

/// The journal of a run, one line per record (kind and what matters of it), for
/// reading a failing seed.
pub fn describe(r: &Run) -> Vec<String> {
    let Ok(c) = read_back(&r.journal) else {
        return vec!["(unreadable)".into()];
    };
    c.records
        .iter()
        .map(|rec| {
            let what = match &rec.event {
                Event::IterationStarted(s) => {
                    format!(
                        "{} {} attempt {} {:?}",
                        s.iteration, s.task, s.attempt, s.kind
                    )
                }
                Event::IterationFinished(f) => {
                    format!("{} {:?} {}", f.iteration, f.outcome, f.reason)
                }
                Event::AgentFinished(a) => format!("{} claims {}", a.iteration, a.signals.complete),
                Event::VerifyFinished(v) => format!("{} passed {}", v.iteration, v.passed),
                Event::GateOpened { gate } => format!("{gate:?}"),
                Event::Control { request, .. } => format!("{request:?}"),
                Event::Escalated { task, rung, .. } => format!("{task} {rung:?}"),
                Event::SurfaceChecked { iteration, changes } => {
                    format!("{iteration} {} changes", changes.len())
                }
                Event::MergeStarted { iteration, .. }
                | Event::Merged { iteration, .. }
                | Event::MergeFailed { iteration, .. } => format!("{iteration}"),
                _ => String::new(),
            };
            format!("{:>4} {} {what}", rec.seq, rec.event.kind())
        })
        .collect()
}
