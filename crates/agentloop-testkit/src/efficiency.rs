//! The loop-efficiency suite: scripted agents that behave like real ones, run under
//! agentloop's policy and under re-implementations of the loops people use today, to
//! count the iterations and money each failure mode costs.
//!
//! Everything is simulated (no processes): an agent turn and a verification are
//! scripted per scenario, and agentloop's own pure policy decides what happens next.

use agentloop_core::config::{Config, Settings};
use agentloop_core::failure::fingerprint;
use agentloop_core::journal::*;
use agentloop_core::plan::Plan;
use agentloop_core::policy::{Action, WaitReason, next_action};
use agentloop_core::signals::Signals;
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
}

fn tree(n: u32) -> Option<String> {
    Some(format!("tree-{n}"))
}

fn fail(output: &str) -> Verdict {
    Verdict {
        passed: false,
        output: output.to_string(),
    }
}

fn pass() -> Verdict {
    Verdict {
        passed: true,
        output: String::new(),
    }
}

macro_rules! simple {
    ($name:ident, $label:expr, $solvable:expr, { $($field:ident : $ty:ty = $init:expr),* }, turn($s:ident, $c:ident) $turn:block, verify($v:ident) $verify:block, correct($k:ident) $correct:block) => {
        #[derive(Default)]
        pub struct $name { n: u32, $($field: $ty),* }
        impl $name { pub fn new() -> Self { $name { n: 0, $($field: $init),* } } }
        impl Scenario for $name {
            fn name(&self) -> &'static str { $label }
            fn solvable(&self) -> bool { $solvable }
            fn turn(&mut self, $c: &Ctx) -> Turn { self.n += 1; let $s = self; $turn }
            fn verify(&mut self, _task: &str) -> Verdict { let $v = self; $verify }
            fn correct(&self) -> bool { let $k = self; $correct }
        }
    };
}

simple!(Honest, "honest and competent", true, { done: bool = false },
    turn(s, _c) { s.done = true; Turn { claims: true, tree: tree(s.n), ..Turn::default() } },
    verify(s) { if s.done { pass() } else { fail("missing") } },
    correct(s) { s.done });

simple!(FalseClaimOnce, "claims completion once while a test fails", true, { done: bool = false },
    turn(s, c) { s.done = c.has_digest; Turn { claims: true, tree: tree(s.n), ..Turn::default() } },
    verify(s) { if s.done { pass() } else { fail("test_shout: expected HELLO, ADA!") } },
    correct(s) { s.done });

simple!(FalseClaimAlways, "claims completion every time, never fixes it", false, {},
    turn(s, _c) { Turn { claims: true, tree: tree(s.n), ..Turn::default() } },
    verify(_s) { fail("test_parse: panicked at index out of bounds") },
    correct(_s) { false });

simple!(Flaky, "flaky verification (fails 1 time in 3)", true, { done: bool = false, checks: u32 = 0 },
    turn(s, _c) { s.done = true; Turn { claims: true, tree: tree(s.n), ..Turn::default() } },
    verify(s) { s.checks += 1; if s.done && s.checks % 3 != 1 { pass() } else { fail("test_net: connection reset") } },
    correct(s) { s.done });

simple!(Stuck, "stuck: the same failure again and again", false, {},
    turn(s, _c) { Turn { claims: false, tree: tree(s.n), ..Turn::default() } },
    verify(_s) { fail("error[E0308]: mismatched types") },
    correct(_s) { false });

simple!(NoisyStuck, "stuck, each failure with its own random seed and time", false, {},
    turn(s, _c) { Turn { claims: false, tree: tree(s.n), ..Turn::default() } },
    verify(s) { fail(&format!(
        "Randomized with seed {}\nrunning 12 tests at 10:{:02}:{:02}\ntest parse_empty ... FAILED\nerror: expected 0, got 1",
        (s.n * 7919 + 13) % 65536, s.n / 60, s.n % 60)) },
    correct(_s) { false });

simple!(NoOp, "no-op: exits without changing anything", false, {},
    turn(_s, _c) { Turn { claims: false, tree: None, ..Turn::default() } },
    verify(_s) { fail("3 tests failed") },
    correct(_s) { false });

simple!(Oscillating, "oscillating: edits the same file back and forth", false, {},
    turn(s, _c) { Turn { claims: true, tree: tree(s.n % 2), ..Turn::default() } },
    verify(s) { if s.n.is_multiple_of(2) { fail("test_a failed") } else { fail("test_b failed") } },
    correct(_s) { false });

simple!(SlowProgress, "slow progress: one more of ten failing tests fixed per iteration", true, { fixed: u32 = 0 },
    turn(s, _c) { s.fixed = (s.fixed + 1).min(10); Turn { claims: s.fixed == 10, tree: tree(s.n), ..Turn::default() } },
    verify(s) { if s.fixed == 10 { pass() } else { fail(&format!("{} of 10 tests failed", 10 - s.fixed)) } },
    correct(s) { s.fixed == 10 });

/// Refused until the loop waits for the reset (an hour away), then works.
#[derive(Default)]
pub struct UsageLimit {
    n: u32,
    reset: bool,
    done: bool,
}

impl UsageLimit {
    pub fn new() -> Self {
        UsageLimit::default()
    }
}

impl Scenario for UsageLimit {
    fn name(&self) -> &'static str {
        "hits a usage limit with a reset time, then works"
    }
    fn solvable(&self) -> bool {
        true
    }
    fn turn(&mut self, _c: &Ctx) -> Turn {
        self.n += 1;
        if !self.reset {
            return Turn {
                limited: true,
                ..Turn::default()
            };
        }
        self.done = true;
        Turn {
            claims: true,
            tree: tree(self.n),
            ..Turn::default()
        }
    }
    fn verify(&mut self, _task: &str) -> Verdict {
        if self.done { pass() } else { fail("missing") }
    }
    fn correct(&self) -> bool {
        self.done
    }
    fn wait_for_reset(&mut self) {
        self.reset = true;
    }
}

simple!(Question, "asks a question (BLOCKED) that a person must answer", true, { done: bool = false },
    turn(s, c) {
        if !c.answered { return Turn { blocked: Some("Which database should I use?".into()), tree: None, ..Turn::default() }; }
        s.done = true;
        Turn { claims: true, tree: tree(s.n), ..Turn::default() }
    },
    verify(s) { if s.done { pass() } else { fail("no database chosen") } },
    correct(s) { s.done });

/// The task as written cannot pass; split in two, both halves do.
#[derive(Default)]
pub struct NeedsReplan {
    n: u32,
    halves: u32,
}

impl NeedsReplan {
    pub fn new() -> Self {
        NeedsReplan::default()
    }
}

impl Scenario for NeedsReplan {
    fn name(&self) -> &'static str {
        "needs a replan: the task as written is impossible, splitting it works"
    }
    fn solvable(&self) -> bool {
        true
    }
    fn turn(&mut self, c: &Ctx) -> Turn {
        self.n += 1;
        match (c.task.as_str(), c.kind) {
            ("T1", IterationKind::Replan) => Turn {
                replan: Some("## T1a: Parse the header\nVerify: ./check-a\n\n## T1b: Parse the body\nDepends: T1a\n".into()),
                ..Turn::default()
            },
            ("T1a", _) | ("T1b", _) => {
                self.halves += 1;
                Turn { claims: true, tree: tree(self.n), ..Turn::default() }
            }
            _ => Turn { claims: false, tree: tree(self.n), ..Turn::default() },
        }
    }
    fn verify(&mut self, task: &str) -> Verdict {
        match task {
            "T1a" if self.halves >= 1 => pass(),
            "T1b" if self.halves >= 2 => pass(),
            _ => fail("cannot parse header and body in one pass: ambiguous grammar"),
        }
    }
    fn correct(&self) -> bool {
        self.halves >= 2
    }
}

/// Every scenario of the suite, fresh.
pub fn suite() -> Vec<Box<dyn Scenario>> {
    vec![
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
    ]
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
        },
    };
    let mut st = RunState::from_first(&first).expect("run_created first");
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
