//! The loop-efficiency suite: scripted agents that behave like real ones, run under
//! agentloop's policy and under re-implementations of the loops people use today, to
//! count the iterations and money each failure mode costs.
//!
//! Everything is simulated (no processes): an agent turn and a verification are
//! scripted per scenario, and agentloop's own pure policy decides what happens next.

use agentloop_config::{Config, Settings};
use agentloop_ground::failure::fingerprint;
use agentloop_ground::signals::Signals;
use agentloop_journal::*;
use agentloop_plan::Plan;
use agentloop_policy::{Action, WaitReason, next_action};
use serde::Serialize;

/// What the agent is told in one iteration.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub task: String,
    pub kind: IterationKind,
    /// The prompt carries a failure digest.
    pub has_digest: bool,
    /// A person's answer reached the prompt.
    pub answered: bool,
}

/// What the agent does in one iteration.
#[derive(Debug, Clone, Default)]
pub struct Turn {
    pub claims: bool,
    /// The work tree after the turn (`None`: unchanged).
    pub tree: Option<String>,
    pub silent: bool,
    pub blocked: Option<String>,
    pub replan: Option<String>,
    /// The model service refused (usage limit): nothing else happened.
    pub limited: bool,
    /// The agent also appended a record approving the open gate to the loop's own
    /// record of the run (agentloop's journal).
    pub forges_approval: bool,
}

#[derive(Debug, Clone)]
pub struct Verdict {
    pub passed: bool,
    /// What the failing check printed.
    pub output: String,
}

/// A scripted agent and the world it works in.
pub trait Scenario {
    fn name(&self) -> &'static str;
    /// True when a correct loop should end with the plan completed.
    fn solvable(&self) -> bool;
    fn plan(&self) -> &'static str {
        "# S\n\n## T1: The task\nVerify: ./check\n"
    }
    fn turn(&mut self, ctx: &Ctx) -> Turn;
    /// agentloop's own verification, after a turn.
    fn verify(&mut self, task: &str) -> Verdict;
    /// Whether the work is really right now (what a perfect reviewer would say).
    fn correct(&self) -> bool;
    /// Cost of one agent iteration in USD.
    fn cost(&self) -> f64 {
        0.40
    }
    /// The loop waited until the usage limit reset.
    fn wait_for_reset(&mut self) {}
    /// Files that decide "done" (tests, the plan) the agent's work has changed so far:
    /// what comparing them with the run's start finds.
    fn tampered(&self) -> Vec<&'static str> {
        Vec::new()
    }
    /// The loop put their versions from the run's start back.
    fn restore(&mut self) {}
}

mod corpus;
mod scenarios;
mod tamper;

pub use corpus::*;
pub use scenarios::*;
pub use tamper::*;

/// Every scenario of the suite, fresh.
pub fn suite() -> Vec<Box<dyn Scenario>> {
    let mut suite: Vec<Box<dyn Scenario>> = vec![
        Box::new(Honest::new()),
        Box::new(FalseClaimOnce::new()),
        Box::new(FalseClaimAlways::new()),
        Box::new(Flaky::new()),
        Box::new(Stuck::new()),
        Box::new(NoisyStuck::new()),
        Box::new(NoOp::new()),
        Box::new(Oscillating::new()),
        Box::new(SlowProgress::new()),
        Box::new(NeedsReplan::new()),
        Box::new(UsageLimit::new()),
        Box::new(Question::new()),
        Box::new(Tamperer::new(Trick::RewritesTest)),
        Box::new(Tamperer::new(Trick::EditsVerify)),
        Box::new(Tamperer::new(Trick::ForgesApproval)),
    ];
    // The cheating corpus: every shortcut.
    for s in Shortcut::ALL {
        suite.push(Box::new(Cheater::new(s)));
    }
    suite
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ending {
    /// The loop declared the plan done.
    Completed,
    /// The loop stopped without finishing (cap, breaker, blocked for a person).
    Stopped,
    /// The loop crashed (for example on a usage limit).
    Crashed,
}

#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub scenario: String,
    pub policy: String,
    pub iterations: u32,
    pub cost_usd: f64,
    pub ending: Ending,
    /// Completed only when really right; stopped only when really stuck.
    pub right: bool,
    /// Stopped although the plan could be completed.
    pub false_stop: bool,
    /// Asked a person and got the answer (the question scenario).
    pub asked_person: bool,
}

fn outcome(
    s: &dyn Scenario,
    policy: &str,
    iterations: u32,
    cost: f64,
    ending: Ending,
    asked: bool,
) -> Outcome {
    let right = match ending {
        Ending::Completed => s.correct(),
        Ending::Stopped => !s.solvable(),
        Ending::Crashed => false,
    };
    Outcome {
        scenario: s.name().to_string(),
        policy: policy.to_string(),
        iterations,
        cost_usd: (cost * 100.0).round() / 100.0,
        ending,
        right,
        false_stop: ending != Ending::Completed && s.solvable(),
        asked_person: asked,
    }
}

pub const AGENTLOOP: &str = "agentloop (default policy)";

/// A simulated verification surface of `paths` (blobs made up from their names).
pub fn surface_of(paths: &[&str]) -> agentloop_journal::Baseline {
    paths
        .iter()
        .map(|p| {
            let f = SurfaceFile {
                blob: format!("{:040x}", p.len()),
                mode: 0o100644,
                why: "a test file".into(),
            };
            (p.to_string(), f)
        })
        .collect()
}

/// agentloop's default policy, driven exactly as the driver drives it.
pub fn run_agentloop(s: &mut dyn Scenario) -> Outcome {
    let mut c = Config::default();
    c.run.agent = "agent".into();
    let plan = Plan::parse("PLAN.md", s.plan()).expect("scenario plans are valid");
    let mut seq = 1;
    let first = Record {
        seq,
        time: "2026-11-22T10:00:00.000Z".into(),
        event: Event::RunCreated {
            run_id: "bench".into(),
            plan_file: "PLAN.md".into(),
            workdir: ".".into(),
            plan,
            settings: Settings::from_config(&c),
            head: None,
            tree: None,
        },
    };
    let mut st = RunState::from_first(&first).expect("run_created first");
    // The surface at the start: the test and the plan.
    let files = surface_of(&["PLAN.md", "tests/t1.sh"]);
    let mut clock_ms: u64 = 1_795_000_000_000;
    let mut apply = |st: &mut RunState, e: Event, clock_ms: u64| {
        seq += 1;
        let t = humantime::format_rfc3339_millis(
            std::time::UNIX_EPOCH + std::time::Duration::from_millis(clock_ms),
        );
        st.apply(&Record {
            seq,
            time: t.to_string(),
            event: e,
        });
    };
    apply(&mut st, Event::BaselineRecorded { files }, clock_ms);
    let (mut cost, mut asked, mut answered) = (0.0, false, false);
    for _ in 0..10_000 {
        clock_ms += 1_000;
        match next_action(&st) {
            Action::Exit(status) => {
                let ending = if status == RunStatus::Completed {
                    Ending::Completed
                } else {
                    Ending::Stopped
                };
                return outcome(s, AGENTLOOP, st.iterations, cost, ending, asked);
            }
            Action::Record(e) => apply(&mut st, e, clock_ms),
            // The simulated runs ship nowhere and have no diffs to gate.
            Action::Ship(_)
            | Action::CheckDiff { .. }
            | Action::Plan { .. }
            | Action::Judge { .. } => {
                return outcome(s, AGENTLOOP, st.iterations, cost, Ending::Stopped, asked);
            }
            Action::Iterate(p) => {
                let ctx = Ctx {
                    task: p.task.clone(),
                    kind: p.kind,
                    has_digest: st.task(&p.task).is_some_and(|t| t.last_digest.is_some()),
                    answered,
                };
                let before = st
                    .task(&p.task)
                    .and_then(|t| t.trees.last().cloned())
                    .unwrap_or_else(|| "start".into());
                apply(
                    &mut st,
                    Event::IterationStarted(IterationStarted {
                        iteration: p.iteration,
                        task: p.task.clone(),
                        attempt: p.attempt,
                        kind: p.kind,
                        agent: p.agent.clone(),
                        tree_before: Some(before.clone()),
                        head_before: None,
                        steer: vec![],
                        worktree: None,
                    }),
                    clock_ms,
                );
                let turn = s.turn(&ctx);
                let iteration_cost = if turn.limited { 0.0 } else { s.cost() };
                cost += iteration_cost;
                let error = turn.limited.then(|| AgentError {
                    kind: AgentErrorKind::RateLimit,
                    message: "limit · resets in 1h".into(),
                });
                let changed = turn.tree.as_ref().is_some_and(|t| *t != before);
                apply(
                    &mut st,
                    Event::AgentFinished(AgentFinished {
                        iteration: p.iteration,
                        exit_code: Some(0),
                        output_bytes: if turn.silent { 0 } else { 100 },
                        signals: Signals {
                            complete: turn.claims,
                            blocked: turn.blocked.clone(),
                            replan: turn.replan.clone(),
                            ..Signals::default()
                        },
                        cost_usd: iteration_cost,
                        error,
                        resets_at_ms: turn.limited.then_some(clock_ms + 3_600_000),
                        tree_after: turn.tree.clone(),
                        changed_files: if changed {
                            vec!["src/lib.rs".into()]
                        } else {
                            vec![]
                        },
                        ..AgentFinished::default()
                    }),
                    clock_ms,
                );
                // A forged record goes through the real journal reader, which decides
                // whether it is honoured.
                if turn.forges_approval
                    && let Some(rec) = forged_is_honoured(Request::Approve {
                        note: None,
                        gate: None,
                    })
                {
                    apply(&mut st, rec.event, clock_ms);
                }
            }
            Action::Merge { .. } => unreachable!("the suite runs one worker"),
            // The scenarios' checks are their verdicts: no runner, no test baseline.
            Action::TestBaseline => {
                apply(&mut st, Event::TestsBaseline(Default::default()), clock_ms)
            }
            Action::CheckTripwires { .. } => unreachable!("the suite's plans have no tripwires"),
            Action::Review { .. } => unreachable!("the suite's runs have no reviewer"),
            // The scenarios' work stays verified: validation passes.
            Action::Validate => apply(
                &mut st,
                Event::Validated {
                    passed: true,
                    commands: Vec::new(),
                    digest: None,
                    not_the_work: None,
                },
                clock_ms,
            ),
            Action::CheckSurface { iteration } => {
                let changes = s
                    .tampered()
                    .into_iter()
                    .map(|p| SurfaceChange {
                        path: p.into(),
                        kind: ChangeKind::Modified,
                        why: "a test file".into(),
                        before: st.baseline.as_ref().and_then(|b| b.get(p).cloned()),
                        after: None,
                        diff: "-exit 1\n+exit 0".into(),
                    })
                    .collect();
                apply(
                    &mut st,
                    Event::SurfaceChecked { iteration, changes },
                    clock_ms,
                );
            }
            Action::Restore { iteration, cause } => {
                s.restore();
                apply(
                    &mut st,
                    Event::SurfaceRestored { iteration, cause },
                    clock_ms,
                );
            }
            Action::Wait(WaitReason::Gate(Gate::Surface(_))) => {
                // A person reads the diff of a check rewritten to pass, and says no.
                asked = true;
                let id = format!("person-gate-{}", st.last_seq);
                apply(
                    &mut st,
                    Event::Control {
                        id,
                        source: "person".into(),
                        request: Request::Reject {
                            note: Some("the checks stay as written".into()),
                        },
                        by: None,
                    },
                    clock_ms,
                );
            }
            Action::Verify { iteration, task } => {
                let v = s.verify(&task);
                apply(
                    &mut st,
                    Event::VerifyFinished(VerifyFinished {
                        iteration,
                        passed: v.passed,
                        commands: vec![],
                        // As the verification runner does: noise (seeds, times,
                        // temp paths) does not make a failure new.
                        fingerprint: (!v.passed).then(|| fingerprint("verify", &v.output)),
                        digest: (!v.passed).then(|| v.output.clone()),
                        evidence: None,
                        held_out: Vec::new(),
                        left_out: Vec::new(),
                        admitted: Vec::new(),
                    }),
                    clock_ms,
                );
            }
            Action::Wait(WaitReason::UsageLimit { until_ms }) => {
                clock_ms = until_ms;
                s.wait_for_reset();
                apply(&mut st, Event::LimitWaitOver, clock_ms);
            }
            Action::Wait(WaitReason::Blocked { tasks, .. }) => {
                // A person answers a question once; a breaker's block ends the run.
                let question = tasks.iter().any(|t| {
                    st.task(t)
                        .and_then(|t| t.blocked.clone())
                        .is_some_and(|b| b.starts_with("the agent asks"))
                });
                if question && !answered {
                    asked = true;
                    answered = true;
                    let task = tasks[0].clone();
                    for (i, r) in [
                        Request::Steer {
                            note: "Use SQLite.".into(),
                        },
                        Request::Retry { task },
                    ]
                    .into_iter()
                    .enumerate()
                    {
                        apply(
                            &mut st,
                            Event::Control {
                                id: format!("person-{i}"),
                                source: "person".into(),
                                request: r,
                                by: None,
                            },
                            clock_ms,
                        );
                    }
                } else {
                    return outcome(s, AGENTLOOP, st.iterations, cost, Ending::Stopped, asked);
                }
            }
            Action::Wait(_) => {
                return outcome(s, AGENTLOOP, st.iterations, cost, Ending::Stopped, asked);
            }
        }
    }
    outcome(s, AGENTLOOP, st.iterations, cost, Ending::Stopped, asked)
}

/// Appends a forged control record (checksummed as agentloop's own lines are, but not
/// sealed, as an agent would write it) to a real journal and reads it back: the record
/// it became, if the reader honoured it.
fn forged_is_honoured(request: Request) -> Option<Record> {
    use std::io::Write;
    let path = std::env::temp_dir().join(format!(
        "agentloop-efficiency-{}-{}.jsonl",
        std::process::id(),
        SEQ.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    ));
    let created = Event::RunCreated {
        run_id: "forge".into(),
        plan_file: "PLAN.md".into(),
        workdir: ".".into(),
        plan: Plan::parse("PLAN.md", "# F\n\n## T1: T\nVerify: true\n").ok()?,
        settings: Settings::from_config(&Config::default()),
        head: None,
        tree: None,
    };
    let (writer, _) = Writer::create(&path, &created).ok()?;
    drop(writer);
    let event = Event::Control {
        id: "agent-approve".into(),
        source: "cli".into(),
        request,
        by: None,
    };
    let sealed = String::from_utf8(encode(2, "2026-11-22T10:00:01.000Z", &event)).ok()?;
    let forged = match sealed.rfind(",\"mac\":") {
        Some(i) => format!("{}}}\n", &sealed[..i]),
        None => sealed,
    };
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(forged.as_bytes()))
        .ok()?;
    let read = journal_read(&path);
    let _ = std::fs::remove_file(&path);
    read.ok()?.records.into_iter().find(|r| r.seq == 2)
}

static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn journal_read(path: &std::path::Path) -> Result<Contents, JournalError> {
    agentloop_journal::read(path)
}

/// The loops people run today, re-implemented from their documented behaviour.
#[derive(Debug, Clone, Copy)]
pub enum Baseline {
    /// In-session loop until an exact promise tag, with a max-iterations cap (20).
    PromiseLoop,
    /// Trust TASK_COMPLETE, 5 retries per task, 50 iterations in all.
    TrustRetries,
    /// Circuit breaker after 3 iterations without file changes or 5 with the same
    /// error; trusts the agent's reported status; waits out rate limits.
    CircuitBreaker,
    /// A fresh process per story until a COMPLETE tag, 10 iterations.
    FreshPerStory,
}

impl Baseline {
    pub const ALL: [Baseline; 4] = [
        Baseline::PromiseLoop,
        Baseline::TrustRetries,
        Baseline::CircuitBreaker,
        Baseline::FreshPerStory,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Baseline::PromiseLoop => "(a) promise tag, cap 20",
            Baseline::TrustRetries => "(b) trust TASK_COMPLETE, 5/task, 50",
            Baseline::CircuitBreaker => "(c) breaker 3 no-change / 5 same error",
            Baseline::FreshPerStory => "(d) fresh per story, 10",
        }
    }
}

/// Runs a scenario under a baseline loop. None of them verifies, replans or asks a
/// person; only (c) waits for a rate limit.
pub fn run_baseline(s: &mut dyn Scenario, b: Baseline) -> Outcome {
    let cap = match b {
        Baseline::PromiseLoop => 20,
        Baseline::TrustRetries => 50,
        Baseline::CircuitBreaker => 100,
        Baseline::FreshPerStory => 10,
    };
    let (mut iterations, mut cost) = (0u32, 0.0);
    let (mut no_change, mut same_error, mut last_error, mut task_tries) =
        (0u32, 0u32, String::new(), 0u32);
    let mut last_tree: Option<String> = None;
    while iterations < cap {
        iterations += 1;
        task_tries += 1;
        let ctx = Ctx {
            task: "T1".into(),
            kind: IterationKind::Work,
            has_digest: false,
            answered: false,
        };
        let turn = s.turn(&ctx);
        if turn.limited {
            match b {
                Baseline::CircuitBreaker => {
                    s.wait_for_reset();
                    continue;
                }
                Baseline::TrustRetries => {}
                _ => return outcome(s, b.label(), iterations, cost, Ending::Crashed, false),
            }
        } else {
            cost += s.cost();
        }
        if turn.claims {
            return outcome(s, b.label(), iterations, cost, Ending::Completed, false);
        }
        if let Baseline::CircuitBreaker = b {
            let changed = turn.tree.is_some() && turn.tree != last_tree;
            no_change = if changed { 0 } else { no_change + 1 };
            if turn.tree.is_some() {
                last_tree = turn.tree.clone();
            }
            // It reads the error the agent reports; the scripted agent reports the
            // failure its own test run would show.
            let error = s.verify("T1").output;
            same_error = if error == last_error {
                same_error + 1
            } else {
                1
            };
            last_error = error;
            if no_change >= 3 || same_error >= 5 {
                return outcome(s, b.label(), iterations, cost, Ending::Stopped, false);
            }
        }
        if let Baseline::TrustRetries = b
            && task_tries >= 5
        {
            return outcome(s, b.label(), iterations, cost, Ending::Stopped, false);
        }
    }
    outcome(s, b.label(), iterations, cost, Ending::Stopped, false)
}

/// Each scenario under agentloop and every baseline, fresh each time.
pub fn table() -> Vec<Outcome> {
    let mut out = Vec::new();
    for i in 0..suite().len() {
        out.push(run_agentloop(suite()[i].as_mut()));
        for b in Baseline::ALL {
            out.push(run_baseline(suite()[i].as_mut(), b));
        }
    }
    out
}

/// The table as Markdown: one row per scenario, one column per policy.
pub fn markdown(rows: &[Outcome]) -> String {
    let mut policies: Vec<String> = Vec::new();
    let mut scenarios: Vec<String> = Vec::new();
    for r in rows {
        if !policies.contains(&r.policy) {
            policies.push(r.policy.clone());
        }
        if !scenarios.contains(&r.scenario) {
            scenarios.push(r.scenario.clone());
        }
    }
    let mut md = String::from("| scenario |");
    for p in &policies {
        md.push_str(&format!(" {p} |"));
    }
    md.push_str("\n|---|");
    md.push_str(&"---|".repeat(policies.len()));
    md.push('\n');
    for sc in &scenarios {
        md.push_str(&format!("| {sc} |"));
        for p in &policies {
            let r = rows
                .iter()
                .find(|r| &r.scenario == sc && &r.policy == p)
                .expect("every cell is filled");
            let ending = match r.ending {
                Ending::Completed => "completed",
                Ending::Stopped => "stopped",
                Ending::Crashed => "crashed",
            };
            let mark = if r.right { "✓" } else { "✗" };
            let fs = if r.false_stop { ", false stop" } else { "" };
            md.push_str(&format!(
                " {mark} {ending}{fs}: {} it, ${:.2} |",
                r.iterations, r.cost_usd
            ));
        }
        md.push('\n');
    }
    md
}
