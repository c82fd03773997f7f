//! The policy as tables of (state, event) → action, and invariants checked over
//! random runs with proptest.

use agentloop_config::{Config, Settings};
use agentloop_ground::signals::Signals;
use agentloop_journal::*;
use agentloop_plan::{Mode, Plan};
use agentloop_policy::{Action, IterationPlan, WaitReason, next_action, step};
use proptest::prelude::*;

pub(crate) const PLAN: &str =
    "# P\n\n## T1: one\nVerify: t1\n\n## T2: two\nDepends: T1\nVerify: t2\n";

pub(crate) fn settings(f: impl FnOnce(&mut Config)) -> Settings {
    let mut c = Config::default();
    c.run.agent = "a".into();
    f(&mut c);
    Settings::from_config(&c)
}

/// A state folded from `events` after a run_created for `plan`.
pub(crate) struct Sim {
    pub(crate) state: RunState,
    pub(crate) seq: u64,
}

impl Sim {
    pub(crate) fn new(plan: &str, s: Settings) -> Sim {
        let plan = Plan::parse("PLAN.md", plan).unwrap();
        let first = Record {
            seq: 1,
            time: "2026-11-22T10:00:00.000Z".into(),
            event: Event::RunCreated {
                run_id: "r".into(),
                plan_file: "PLAN.md".into(),
                workdir: ".".into(),
                plan,
                settings: s,
                head: None,
                tree: None,
            },
        };
        Sim {
            state: RunState::from_first(&first).unwrap(),
            seq: 1,
        }
    }

    pub(crate) fn rec(&mut self, event: Event) -> Record {
        self.seq += 1;
        Record {
            seq: self.seq,
            time: format!("2026-11-22T10:00:{:02}.000Z", self.seq % 60),
            event,
        }
    }

    /// Applies an event and returns the next action (the table's right-hand side).
    pub(crate) fn then(&mut self, event: Event) -> Action {
        let r = self.rec(event);
        let (next, action) = step(&self.state, &r);
        self.state = next;
        action
    }

    pub(crate) fn act(&self) -> Action {
        next_action(&self.state)
    }

    /// Runs one whole iteration of whatever the policy asks for.
    pub(crate) fn iteration(
        &mut self,
        agent: AgentFinished,
        verify_passed: Option<bool>,
        fingerprint: &str,
    ) -> Action {
        let Action::Iterate(p) = self.act() else {
            panic!("expected an iteration, got {:?}", self.act())
        };
        self.then(started(&p));
        let mut a = self.then(Event::AgentFinished(AgentFinished {
            iteration: p.iteration,
            ..agent
        }));
        if let (Action::Verify { .. }, Some(passed)) = (&a, verify_passed) {
            a = self.then(verified(p.iteration, passed, fingerprint));
        }
        // Record the policy's judgement.
        if let Action::Record(e @ Event::IterationFinished(_)) = a.clone() {
            a = self.then(e);
        }
        a
    }
}

pub(crate) fn validated(passed: bool) -> Event {
    Event::Validated {
        passed,
        commands: vec![],
        digest: None,
        not_the_work: None,
    }
}

pub(crate) fn started(p: &IterationPlan) -> Event {
    Event::IterationStarted(IterationStarted {
        iteration: p.iteration,
        task: p.task.clone(),
        attempt: p.attempt,
        kind: p.kind,
        agent: p.agent.clone(),
        tree_before: None,
        head_before: None,
        steer: vec![],
        worktree: None,
    })
}

pub(crate) fn claims(done: bool, changed: &[&str]) -> AgentFinished {
    AgentFinished {
        exit_code: Some(0),
        output_bytes: 10,
        signals: Signals {
            complete: done,
            ..Signals::default()
        },
        changed_files: changed.iter().map(|s| s.to_string()).collect(),
        cost_usd: 0.5,
        ..AgentFinished::default()
    }
}

pub(crate) fn verified(iteration: u32, passed: bool, fp: &str) -> Event {
    Event::VerifyFinished(VerifyFinished {
        iteration,
        passed,
        commands: vec![CommandResult {
            command: "t".into(),
            exit_code: Some(if passed { 0 } else { 1 }),
            timed_out: false,
            duration_ms: 1,
            output_bytes: 1,
            truncated: false,
            measured: None,
            tests: None,
            cause: None,
        }],
        fingerprint: (!passed).then(|| fp.to_string()),
        digest: (!passed).then(|| format!("failure {fp}")),
        evidence: None,
        held_out: Vec::new(),
        left_out: Vec::new(),
        admitted: Vec::new(),
    })
}

pub(crate) fn outcome(a: &Action) -> Option<Outcome> {
    match a {
        Action::Record(Event::IterationFinished(f)) => Some(f.outcome),
        _ => None,
    }
}

#[test]
fn table_of_single_steps() {
    // (what happened, what the policy must do next)
    let mut s = Sim::new(PLAN, settings(|_| {}));
    assert!(
        matches!(s.act(), Action::Iterate(IterationPlan { ref task, kind: IterationKind::Work, attempt: 1, .. }) if task == "T1")
    );

    // The driver died after starting an iteration: abort it, it does not count.
    let Action::Iterate(p) = s.act() else {
        unreachable!()
    };
    let a = s.then(started(&p));
    assert_eq!(outcome(&a), Some(Outcome::Aborted));
    s.then(match a {
        Action::Record(e) => e,
        _ => unreachable!(),
    });
    assert_eq!(s.state.task("T1").unwrap().attempts, 0);

    // Agent claims done → verify; verification fails → failed with the digest.
    let Action::Iterate(p) = s.act() else {
        unreachable!()
    };
    s.then(started(&p));
    let a = s.then(Event::AgentFinished(AgentFinished {
        iteration: p.iteration,
        ..claims(true, &["src/a.rs"])
    }));
    assert!(matches!(a, Action::Verify { .. }));
    let a = s.then(verified(p.iteration, false, "f1"));
    let Action::Record(Event::IterationFinished(f)) = &a else {
        panic!("{a:?}")
    };
    assert_eq!(f.outcome, Outcome::Failed);
    assert_eq!(
        f.reason,
        "verification failed: `t` exited 1 (the agent claimed the task was complete)"
    );
    assert_eq!(f.digest.as_deref(), Some("failure f1"));
    let a = s.then(a.clone().into_event());
    assert!(
        matches!(
            a,
            Action::Iterate(IterationPlan {
                kind: IterationKind::Retry,
                attempt: 2,
                ..
            })
        ),
        "{a:?}"
    );

    // Verification passes but no claim → not done (dual condition).
    let a = s.iteration(claims(false, &["src/a.rs"]), Some(true), "");
    assert_eq!(
        s.state.task("T1").unwrap().status,
        TaskStatus::Pending,
        "{a:?}"
    );
    // Claim and pass → done, next task.
    let a = s.iteration(claims(true, &["src/a.rs"]), Some(true), "");
    assert_eq!(s.state.task("T1").unwrap().status, TaskStatus::Done);
    assert!(matches!(a, Action::Iterate(IterationPlan { ref task, .. }) if task == "T2"));
    s.iteration(claims(true, &["src/b.rs"]), Some(true), "");
    // The VALIDATE phase, then the end.
    assert_eq!(s.act(), Action::Validate);
    s.then(validated(true));
    assert_eq!(
        s.act(),
        Action::Record(Event::RunFinished {
            status: RunStatus::Completed,
            reason: FinishReason::Completed
        })
    );
}

pub(crate) trait IntoEvent {
    fn into_event(self) -> Event;
}
impl IntoEvent for Action {
    fn into_event(self) -> Event {
        match self {
            Action::Record(e) => e,
            other => panic!("not a record: {other:?}"),
        }
    }
}

#[test]
fn same_failure_three_times_escalates_to_replan_then_block() {
    // The ladder alone (the DEBUG iteration it would take first is tested below).
    let mut s = Sim::new(PLAN, settings(|c| c.breakers.debug_after = 0));
    for _ in 0..3 {
        s.iteration(claims(true, &["x"]), Some(false), "same");
    }
    let Action::Record(Event::Escalated { trigger, rung, .. }) = s.act() else {
        panic!("{:?}", s.act())
    };
    assert_eq!(
        trigger,
        Trigger::SameFailure {
            count: 3,
            fingerprint: "same".into()
        }
    );
    assert_eq!(rung, Rung::Replan);
    s.then(s.act().into_event());
    // The replan iteration: the agent does not replan → next rung (no fallback) → block.
    let a = s.iteration(claims(true, &["x"]), Some(false), "other");
    assert!(
        matches!(
            a,
            Action::Record(Event::Escalated {
                rung: Rung::Block,
                trigger: Trigger::RetryBudget { attempts: 1, .. },
                ..
            })
        ),
        "{a:?}"
    );
    s.then(a.into_event());
    assert_eq!(
        s.act(),
        Action::Wait(WaitReason::Blocked {
            tasks: vec!["T1".into()],
            breaker: true
        })
    );
    assert_eq!(s.state.status, RunStatus::Blocked);
}

#[test]
fn no_change_and_no_output_breakers() {
    let mut s = Sim::new(PLAN, settings(|c| c.budgets.max_replans = 0));
    for _ in 0..3 {
        s.iteration(claims(false, &[]), Some(false), &format!("{}", s.seq));
    }
    let a = s.act();
    assert!(
        matches!(
            a,
            Action::Record(Event::Escalated {
                trigger: Trigger::NoChange { count: 3 },
                rung: Rung::Block,
                ..
            })
        ),
        "{a:?}"
    );
    s.then(a.into_event());
    assert_eq!(
        s.act(),
        Action::Wait(WaitReason::Blocked {
            tasks: vec!["T1".into()],
            breaker: true
        })
    );

    let mut s = Sim::new(PLAN, settings(|c| c.run.fallback_agent = Some("b".into())));
    for _ in 0..2 {
        s.iteration(
            AgentFinished {
                output_bytes: 0,
                changed_files: vec!["x".into()],
                ..claims(false, &[])
            },
            Some(false),
            &format!("{}", s.seq),
        );
    }
    let a = s.act();
    assert!(
        matches!(
            a,
            Action::Record(Event::Escalated {
                trigger: Trigger::NoOutput { count: 2 },
                rung: Rung::Fallback,
                ..
            })
        ),
        "{a:?}"
    );
}

#[test]
fn fallback_agent_takes_over_after_the_replan_rung() {
    let mut s = Sim::new(
        PLAN,
        settings(|c| {
            c.run.fallback_agent = Some("b".into());
            c.budgets.task_retries = 2;
        }),
    );
    s.iteration(claims(true, &["x"]), Some(false), "1");
    s.iteration(claims(true, &["x"]), Some(false), "1");
    s.then(s.act().into_event()); // → replan rung
    assert!(matches!(
        s.act(),
        Action::Iterate(IterationPlan {
            kind: IterationKind::Replan,
            ..
        })
    ));
    s.iteration(claims(true, &["x"]), Some(false), "3");
    s.then(s.act().into_event()); // → fallback rung
    assert!(
        matches!(s.act(), Action::Iterate(IterationPlan { kind: IterationKind::Fallback, ref agent, .. }) if agent == "b")
    );
}

/// A run without a forge and a diff gate on: a task done without a commit (the agent
/// broke agentloop's commit, say with a stale `.git/index.lock`) is not waved through.
/// It is read like any other, holds the run for every gate that is on, and a retry of
/// it lets go of a gate that held only it.
#[test]
fn a_task_done_without_a_commit_is_held_by_the_diff_gates_all_the_same() {
    let ctl = |r: Request| Event::Control {
        id: "person".into(),
        source: "cli".into(),
        request: r,
        by: None,
    };
    let mut s = Sim::new(PLAN, settings(|c| c.gates.security.enabled = true));
    let a = s.iteration(claims(true, &["src/auth/login.rs"]), Some(true), "");
    assert_eq!(s.state.task("T1").unwrap().commit, None);
    assert_eq!(a, Action::CheckDiff { task: "T1".into() });
    let held = agentloop_policy::unread(
        &s.state.settings.gates,
        "its change was not committed, so what it changed is unknown",
    );
    assert_eq!(held.len(), 1, "{held:?}");
    let a = s.then(Event::TaskDiffChecked {
        task: "T1".into(),
        commit: None,
        triggered: held,
    });
    assert_eq!(
        a,
        Action::Record(Event::GateOpened {
            gate: Gate::Diff("security".into())
        })
    );
    assert_eq!(
        s.then(a.into_event()),
        Action::Wait(WaitReason::Gate(Gate::Diff("security".into())))
    );
    // Retried, T1 holds nothing: the gate closes and T1 runs again (T2 depends on it).
    let a = s.then(ctl(Request::Retry { task: "T1".into() }));
    assert!(matches!(&a, Action::Iterate(p) if p.task == "T1"), "{a:?}");
}

#[derive(Debug, Clone)]
struct Behaviour {
    claim: bool,
    passes: bool,
    changes: bool,
    silent: bool,
    blocked: bool,
    cost: f64,
    fingerprint: u8,
}

fn behaviour() -> impl Strategy<Value = Behaviour> {
    (
        any::<bool>(),
        prop::bool::weighted(0.4),
        prop::bool::weighted(0.8),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.03),
        0.0..2.0f64,
        0..3u8,
    )
        .prop_map(
            |(claim, passes, changes, silent, blocked, cost, fingerprint)| Behaviour {
                claim,
                passes,
                changes,
                silent,
                blocked,
                cost,
                fingerprint,
            },
        )
}

#[derive(Debug, Clone)]
enum Person {
    Approve,
    Retry,
    Skip,
    Pause,
    Resume,
    Stop,
    Leave,
}

fn person() -> impl Strategy<Value = Person> {
    prop_oneof![
        4 => Just(Person::Approve),
        3 => Just(Person::Retry),
        2 => Just(Person::Skip),
        1 => Just(Person::Pause),
        2 => Just(Person::Resume),
        1 => Just(Person::Stop),
        1 => Just(Person::Leave),
    ]
}

const BIG_PLAN: &str = "# P\n\n## A: a\nVerify: a\n\n## B: b\nDepends: A\nVerify: b\nGate: after\n\n## C: c\nVerify: c\nMax-iterations: 2\n\n## D: d\nDepends: B, C\nVerify: d\n";

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold_over_random_runs(
        agents in prop::collection::vec(behaviour(), 1..120),
        people in prop::collection::vec(person(), 1..40),
        max_iterations in 1u32..40,
        task_retries in 1u32..6,
        max_cost in prop::option::of(1.0..30.0f64),
        fallback in any::<bool>(),
        mode in prop_oneof![Just(Mode::Quick), Just(Mode::Tdd), Just(Mode::Pair)],
        reviewed in any::<bool>(),
        max_rounds in 1u32..4,
    ) {
        let s = settings(|c| {
            c.budgets.max_iterations = max_iterations;
            c.budgets.task_retries = task_retries;
            c.budgets.max_cost_usd = max_cost;
            c.run.fallback_agent = fallback.then(|| "fb".to_string());
            c.run.mode = mode;
            c.gates.final_review = true;
            // An independent reviewer of every verified task.
            if reviewed {
                c.review.agent = Some("rev".to_string());
                c.review.when = agentloop_config::ReviewWhen::Always;
                c.review.max_rounds = max_rounds;
            }
        });
        let mut sim = Sim::new(BIG_PLAN, s);
        // The verification surface: an agent that changes tests/t.rs changes it.
        let base = SurfaceFile { blob: "b0".into(), mode: 0o100644, why: "a test file".into() };
        sim.then(Event::BaselineRecorded { files: [("tests/t.rs".to_string(), base.clone())].into() });
        let (mut ai, mut pi) = (0usize, 0usize);
        let mut verified_ok: std::collections::HashSet<u32> = Default::default();
        let mut reopened: std::collections::HashSet<String> = Default::default();
        // Iterations that changed the surface, and those whose change a person approved
        // or agentloop restored.
        let mut tampered: std::collections::HashSet<u32> = Default::default();
        let mut surface_settled: std::collections::HashSet<u32> = Default::default();
        let mut current: Option<Behaviour> = None;
        // Iterations a reviewer approved.
        let mut approved: std::collections::HashSet<u32> = Default::default();
        let mut steps = 0;
        loop {
            steps += 1;
            prop_assert!(steps < 5000, "the run did not end");
            let action = sim.act();
            match action {
                Action::Exit(_) => break,
                // The generated runs ship nowhere.
                Action::Ship(_) => prop_assert!(false, "a run without [ship] shipped"),
                Action::CheckDiff { .. } => prop_assert!(false, "a run without diff gates read a diff"),
                Action::TestBaseline => prop_assert!(false, "a plan without runners took a test baseline"),
                Action::Plan { .. } => prop_assert!(false, "a run without planners asked one"),
                Action::Judge { .. } => prop_assert!(false, "a run without cycles judged one"),
                Action::Record(e) => {
                    if let Event::IterationFinished(f) = &e && f.outcome == Outcome::Completed {
                        prop_assert!(verified_ok.contains(&f.iteration), "completed without passing verification");
                        prop_assert!(
                            !tampered.contains(&f.iteration) || surface_settled.contains(&f.iteration),
                            "completed with a changed surface nobody approved or restored"
                        );
                        prop_assert!(!reviewed || approved.contains(&f.iteration), "completed without a reviewer's approval");
                    }
                    if let Event::IterationFinished(f) = &e && reviewed {
                        // A task is never rejected more than max_rounds times before a
                        // person is asked.
                        let t = sim.state.open_iteration(f.iteration).map(|o| o.started.task.clone());
                        if let Some(t) = t.and_then(|t| sim.state.task(&t).cloned()) {
                            prop_assert!(t.review_rejections <= max_rounds, "rejected past max_rounds");
                        }
                    }
                    sim.then(e);
                }
                Action::Iterate(p) => {
                    // Budgets are checked before an iteration starts.
                    prop_assert!(sim.state.iterations < max_iterations);
                    if let Some(max) = max_cost { prop_assert!(sim.state.cost_usd < max); }
                    let t = sim.state.task(&p.task).unwrap();
                    prop_assert!(t.status != TaskStatus::Done, "a done task ran again");
                    prop_assert!(t.attempts < agentloop_policy::rung_budget(&sim.state, t));
                    let Some(b) = agents.get(ai).cloned() else { break };
                    ai += 1;
                    sim.then(started(&p));
                    let files = if b.changes { vec![if b.fingerprint == 0 { "tests/t.rs".to_string() } else { "src/x.rs".to_string() }] } else { vec![] };
                    if b.changes && b.fingerprint == 0 {
                        tampered.insert(p.iteration);
                    }
                    let signals = Signals { complete: b.claim, blocked: b.blocked.then(|| "which?".to_string()), ..Signals::default() };
                    sim.then(Event::AgentFinished(AgentFinished {
                        iteration: p.iteration, exit_code: Some(0), output_bytes: if b.silent { 0 } else { 5 },
                        signals, changed_files: files, cost_usd: b.cost, ..AgentFinished::default()
                    }));
                    current = Some(b);
                }
                Action::CheckSurface { iteration } => {
                    prop_assert!(sim.state.current().is_some_and(|o| o.started.iteration == iteration));
                    let changes = if tampered.contains(&iteration) {
                        vec![SurfaceChange {
                            path: "tests/t.rs".into(), kind: ChangeKind::Modified, why: "a test file".into(),
                            before: Some(base.clone()), after: None, diff: String::new(),
                        }]
                    } else {
                        vec![]
                    };
                    sim.then(Event::SurfaceChecked { iteration, changes });
                }
                Action::Merge { .. } => prop_assert!(false, "one worker never merges"),
                Action::CheckTripwires { .. } => prop_assert!(false, "the plan has no tripwires"),
                Action::Validate => {
                    prop_assert!(sim.state.tasks.iter().all(|t| t.status.is_settled()), "validated before every task settled");
                    sim.then(validated(true));
                }
                Action::Restore { iteration, cause } => {
                    surface_settled.insert(iteration);
                    sim.then(Event::SurfaceRestored { iteration, cause });
                }
                Action::Verify { iteration, .. } => {
                    let Some(b) = current.clone() else {
                        prop_assert!(false, "verify asked outside an iteration");
                        unreachable!()
                    };
                    if b.passes { verified_ok.insert(iteration); }
                    sim.then(verified(iteration, b.passes, &b.fingerprint.to_string()));
                }
                Action::Review { iteration, .. } => {
                    prop_assert!(reviewed, "a run without a reviewer asked for a review");
                    prop_assert!(verified_ok.contains(&iteration), "a review of unverified work");
                    // The reviewer's verdict, from the agent's behaviour: some work is
                    // rejected, over and over.
                    let reject = current.as_ref().is_some_and(|b| b.fingerprint % 3 == 1);
                    sim.then(Event::ReviewStarted(ReviewStarted {
                        iteration, reviewer: "rev".into(), round: 1, of: 1, risk: "medium".into(),
                    }));
                    let verdict = if reject { ReviewVerdict::Reject } else { ReviewVerdict::Approve };
                    if !reject {
                        approved.insert(iteration);
                    }
                    sim.then(Event::ReviewFinished(ReviewFinished {
                        iteration, reviewer: "rev".into(), round: 1, of: 1, verdict,
                        findings: if reject { vec![Finding { file: None, line: None, what: "wrong".into() }] } else { vec![] },
                        unparsable: false, cost_usd: 0.0,
                    }));
                }
                Action::Wait(reason) => {
                    let Some(who) = people.get(pi).cloned() else { break };
                    pi += 1;
                    let blocked = sim.state.tasks.iter().find(|t| t.status == TaskStatus::Blocked).map(|t| t.id.clone());
                    let request = match who {
                        Person::Approve => Request::Approve { note: None, gate: None },
                        Person::Retry => Request::Retry { task: blocked.clone().unwrap_or_else(|| "A".into()) },
                        Person::Skip => Request::Skip { task: blocked.clone().unwrap_or_else(|| "C".into()), reason: None },
                        Person::Pause => Request::Pause,
                        Person::Resume => Request::Resume,
                        Person::Stop => Request::Stop,
                        Person::Leave => break,
                    };
                    if let (WaitReason::Gate(Gate::Surface(_)), Request::Approve { .. }) = (&reason, &request)
                        && let Some(o) = sim.state.current()
                    {
                        surface_settled.insert(o.started.iteration);
                    }
                    if let Request::Retry { task } = &request { reopened.insert(task.clone()); }
                    sim.then(Event::Control { id: format!("p{pi}"), source: "prop".into(), request, by: None });
                }
            }
        }
        // The run ended by itself or is waiting for a person who left; never mid-way.
        prop_assert!(sim.state.running.is_empty() || ai >= agents.len() || matches!(sim.state.gate, Some(Gate::Surface(_))));
        for t in &sim.state.tasks {
            prop_assert!(t.iterations <= max_iterations);
        }
        prop_assert!(sim.state.iterations <= max_iterations);
        if sim.state.status == RunStatus::Completed {
            prop_assert!(sim.state.tasks.iter().all(|t| t.status.is_settled()));
        }
    }
}
