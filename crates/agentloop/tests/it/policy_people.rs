//! The policy, continued: what people and budgets do to a run — a spent budget and its
//! top-up, control requests, gates — as tables of (state, event) → action.

use agentloop_journal::*;
use agentloop_plan::Mode;
use agentloop_policy::{Action, IterationPlan, WaitReason};

use crate::policy::*;
#[test]
fn budgets_pause_the_run_until_topped_up() {
    let ctl = |r: Request| Event::Control {
        id: "top-up".into(),
        source: "cli".into(),
        request: r,
        by: None,
    };
    let mut s = Sim::new(PLAN, settings(|c| c.budgets.max_cost_usd = Some(1.0)));
    s.iteration(claims(true, &["a"]), Some(false), "1");
    s.iteration(claims(true, &["b"]), Some(false), "2");
    let spent = Event::BudgetSpent {
        budget: "cost_usd".into(),
        used: 1.0,
        limit: 1.0,
    };
    assert_eq!(s.act(), Action::Record(spent.clone()));
    assert!(matches!(
        s.then(spent),
        Action::Wait(WaitReason::Budget { ref budget, .. }) if budget == "cost_usd"
    ));
    assert_eq!(s.state.status, RunStatus::Paused);
    // A top-up of a dollar: the next iteration may start.
    assert!(matches!(
        s.then(ctl(Request::TopUp {
            cost_cents: Some(100),
            tokens: None,
            seconds: None,
            iterations: None,
        })),
        Action::Iterate(_)
    ));
    let mut s = Sim::new(PLAN, settings(|c| c.budgets.max_iterations = 1));
    s.iteration(claims(true, &["a"]), Some(false), "1");
    assert!(matches!(
        s.act(),
        Action::Record(Event::BudgetSpent { ref budget, .. }) if budget == "iterations"
    ));
}

#[test]
fn control_requests() {
    let ctl = |r: Request| Event::Control {
        id: format!("{r:?}"),
        source: "test".into(),
        request: r,
        by: None,
    };
    let mut s = Sim::new(PLAN, settings(|_| {}));
    assert_eq!(
        s.then(ctl(Request::Pause)),
        Action::Wait(WaitReason::Paused)
    );
    assert_eq!(s.state.status, RunStatus::Paused);
    assert!(matches!(s.then(ctl(Request::Resume)), Action::Iterate(_)));
    // stop --now during an iteration aborts it, then the run is stopped.
    let Action::Iterate(p) = s.act() else {
        unreachable!()
    };
    s.then(started(&p));
    s.then(ctl(Request::StopNow));
    let a = s.then(Event::AgentFinished(AgentFinished {
        iteration: p.iteration,
        killed: true,
        ..claims(false, &[])
    }));
    assert_eq!(outcome(&a), Some(Outcome::Aborted));
    let a = s.then(a.into_event());
    assert_eq!(
        a,
        Action::Record(Event::RunFinished {
            status: RunStatus::Stopped,
            reason: FinishReason::StopRequested
        })
    );
    s.then(a.into_event());
    assert_eq!(s.state.status, RunStatus::Stopped);
    // Resume reopens a stopped run; skip lets dependents go ahead.
    assert!(matches!(s.then(ctl(Request::Resume)), Action::Iterate(_)));
    let a = s.then(ctl(Request::Skip {
        task: "T1".into(),
        reason: None,
    }));
    assert!(
        matches!(a, Action::Iterate(IterationPlan { ref task, .. }) if task == "T2"),
        "{a:?}"
    );
}

#[test]
fn gates_wait_for_a_person() {
    let ctl = |r: Request| Event::Control {
        id: format!("{r:?}"),
        source: "test".into(),
        request: r,
        by: None,
    };
    let plan = "# P\n\n## T1: one\nVerify: t\nGate: before\n\n## T2: two\nMilestone: yes\n";
    let mut s = Sim::new(
        plan,
        settings(|c| {
            c.gates.plan_approval = true;
            c.gates.final_review = true;
            c.run.mode = Mode::Checkpoint;
        }),
    );
    assert_eq!(
        s.act(),
        Action::Record(Event::GateOpened { gate: Gate::Plan })
    );
    assert_eq!(
        s.then(s.act().into_event()),
        Action::Wait(WaitReason::Gate(Gate::Plan))
    );
    assert_eq!(s.state.status, RunStatus::Waiting);
    assert_eq!(
        s.then(ctl(Request::Approve {
            note: None,
            gate: None
        })),
        Action::Record(Event::GateOpened {
            gate: Gate::BeforeTask("T1".into())
        })
    );
    s.then(s.act().into_event());
    assert!(matches!(
        s.then(ctl(Request::Approve {
            note: Some("go".into()),
            gate: None,
        })),
        Action::Iterate(_)
    ));
    assert_eq!(s.state.steer, vec!["go".to_string()]);
    s.iteration(claims(true, &["a"]), Some(true), "");
    // T2 is a milestone in checkpoint mode: gate after it.
    let a = s.iteration(claims(true, &["b"]), Some(true), "");
    assert_eq!(
        a,
        Action::Record(Event::GateOpened {
            gate: Gate::AfterTask("T2".into())
        })
    );
    s.then(a.into_event());
    // Rejecting after review sends the task back with the note.
    let a = s.then(ctl(Request::Reject {
        note: Some("needs docs".into()),
    }));
    assert!(
        matches!(a, Action::Iterate(IterationPlan { ref task, kind: IterationKind::Retry, .. }) if task == "T2"),
        "{a:?}"
    );
    s.iteration(claims(true, &["b"]), Some(true), "");
    s.then(s.act().into_event());
    assert_eq!(
        s.then(ctl(Request::Approve {
            note: None,
            gate: None
        })),
        Action::Validate
    );
    assert_eq!(
        s.then(validated(true)),
        Action::Record(Event::GateOpened { gate: Gate::Final })
    );
    s.then(s.act().into_event());
    assert!(matches!(
        s.then(ctl(Request::Approve {
            note: None,
            gate: None
        })),
        Action::Record(Event::RunFinished {
            status: RunStatus::Completed,
            ..
        })
    ));
}
