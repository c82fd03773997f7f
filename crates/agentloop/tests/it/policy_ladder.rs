//! The policy, continued: replans, DEBUG iterations, usage limits and slow progress as
//! tables of (state, event) → action.

use agentloop_ground::signals::Signals;
use agentloop_journal::*;
use agentloop_policy::{Action, IterationPlan, WaitReason};

use crate::policy::*;
#[test]
fn replans_are_validated() {
    let mut s = Sim::new(PLAN, settings(|_| {}));
    s.iteration(claims(true, &["a"]), Some(true), "");
    let Action::Iterate(p) = s.act() else {
        unreachable!()
    };
    s.then(started(&p));
    // Changing a completed task is refused.
    let bad = Signals {
        replan: Some("## T1: redo\n\n## T2b: other\n".into()),
        ..Signals::default()
    };
    let a = s.then(Event::AgentFinished(AgentFinished {
        iteration: p.iteration,
        signals: bad,
        ..claims(false, &[])
    }));
    assert_eq!(
        a,
        Action::Record(Event::ReplanRejected {
            task: "T2".into(),
            reason: "task T1 is completed and cannot change".into()
        })
    );
    let a = s.then(a.into_event());
    assert_eq!(outcome(&a), Some(Outcome::Failed));
    s.then(a.into_event());
    let Action::Iterate(p) = s.act() else {
        unreachable!()
    };
    s.then(started(&p));
    let good = Signals {
        replan: Some("## T2a: half\nVerify: a\n\n## T2b: other half\nDepends: T2a\n".into()),
        ..Signals::default()
    };
    let a = s.then(Event::AgentFinished(AgentFinished {
        iteration: p.iteration,
        signals: good,
        ..claims(false, &[])
    }));
    let Action::Record(Event::ReplanAccepted {
        version,
        plan,
        added,
        removed,
        ..
    }) = &a
    else {
        panic!("{a:?}")
    };
    assert_eq!(
        (*version, added.clone(), removed.clone()),
        (
            2,
            vec!["T2a".to_string(), "T2b".to_string()],
            vec!["T2".to_string()]
        )
    );
    assert_eq!(
        plan.task("T2b").unwrap().verify,
        vec!["t2"],
        "the last replacement keeps the original's checks"
    );
    s.then(a.into_event());
    s.then(s.act().into_event());
    assert!(matches!(s.act(), Action::Iterate(IterationPlan { ref task, .. }) if task == "T2a"));
    assert_eq!(s.state.task("T1").unwrap().status, TaskStatus::Done);
}

/// Twice the same failure from work the agent did: a DEBUG iteration, never verified,
/// that leaves the failure count as it was and hands what it found on; the ladder goes
/// on from there.
#[test]
fn the_same_failure_twice_brings_one_debug_iteration_then_the_ladder() {
    let mut s = Sim::new(PLAN, settings(|_| {}));
    for _ in 0..2 {
        s.iteration(claims(true, &["x"]), Some(false), "same");
    }
    let Action::Iterate(p) = s.act() else {
        panic!("{:?}", s.act())
    };
    assert_eq!(p.kind, IterationKind::Debug);
    s.then(started(&p));
    let a = s.then(Event::AgentFinished(AgentFinished {
        iteration: p.iteration,
        final_message: Some("UNDERSTANDING: x is written twice".into()),
        ..claims(true, &[])
    }));
    assert_eq!(outcome(&a), Some(Outcome::Failed), "not verified: {a:?}");
    s.then(a.into_event());
    let t = s.state.task("T1").unwrap();
    assert_eq!(t.same_failure, 2);
    assert_eq!(
        t.understanding.as_deref(),
        Some("UNDERSTANDING: x is written twice")
    );
    let Action::Iterate(p) = s.act() else {
        panic!("{:?}", s.act())
    };
    assert_eq!(p.kind, IterationKind::Retry);
    let prompt = agentloop_policy::build_prompt(&s.state, "T1", p.kind);
    assert!(prompt.contains("x is written twice"), "{prompt}");
    s.iteration(claims(true, &["x"]), Some(false), "same");
    assert!(matches!(
        s.act(),
        Action::Record(Event::Escalated {
            trigger: Trigger::SameFailure { count: 3, .. },
            ..
        })
    ));
}

/// The agent's REPLAN cannot shed what binds its work: the replaced task's tripwires
/// go to each replacement, and a pending task it revises keeps its checks and
/// tripwires.
#[test]
fn a_replan_keeps_the_tripwires_and_checks_it_would_drop() {
    let plan = "---\nmustNot: [\"run rm -rf /\"]\n---\n# P\n\n## T1: one\nVerify: t1\nMust-not: touch db/\n\n## T2: two\nDepends: T1\nVerify: t2\nMust-not: add dependency\n";
    let mut s = Sim::new(plan, settings(|_| {}));
    let Action::Iterate(p) = s.act() else {
        unreachable!()
    };
    s.then(started(&p));
    let a = s.then(Event::AgentFinished(AgentFinished {
        iteration: p.iteration,
        signals: Signals {
            replan: Some(
                "## T1a: smaller\nVerify: a\n\n## T1b: the rest\nDepends: T1a\n\n## T2: two, lighter\nDepends: T1b\n".into(),
            ),
            ..Signals::default()
        },
        ..claims(false, &[])
    }));
    assert_eq!(
        a,
        Action::CheckTripwires {
            iteration: p.iteration
        }
    );
    let a = s.then(Event::TripwiresChecked {
        iteration: p.iteration,
        hits: vec![],
    });
    let Action::Record(Event::ReplanAccepted { plan, .. }) = &a else {
        panic!("{a:?}")
    };
    assert_eq!(plan.must_not, ["run rm -rf /"]);
    assert_eq!(plan.task("T1a").unwrap().must_not, ["touch db/"]);
    // The last replacement carries T1's checks, and only them.
    assert_eq!(plan.task("T1b").unwrap().verify, ["t1"]);
    let t2 = plan.task("T2").unwrap();
    assert_eq!(t2.verify, ["t2"]);
    assert_eq!(t2.must_not, ["add dependency"]);
}

/// What a simulated agent does in one iteration.
#[test]
fn a_usage_limit_waits_or_hands_over_to_the_fallback() {
    let limited = |s: &mut Sim| {
        let Action::Iterate(p) = s.act() else {
            panic!("{:?}", s.act())
        };
        s.then(started(&p));
        let err = AgentError {
            kind: AgentErrorKind::RateLimit,
            message: "limit".into(),
        };
        s.then(Event::AgentFinished(AgentFinished {
            iteration: p.iteration,
            error: Some(err),
            ..claims(false, &[])
        }))
    };
    // Default: wait, with a backoff that doubles; retries untouched.
    let mut s = Sim::new(
        PLAN,
        settings(|c| c.limits.wait = std::time::Duration::from_secs(60)),
    );
    let a = limited(&mut s);
    let Action::Record(Event::LimitHit {
        until_ms,
        known_reset: false,
        ..
    }) = a
    else {
        panic!("{a:?}")
    };
    let agent_ms = s.state.current().unwrap().agent_ms;
    assert_eq!(until_ms, agent_ms + 60_000);
    s.then(a.clone().into_event());
    let a = s.act();
    assert_eq!(outcome(&a), Some(Outcome::Limited));
    s.then(a.into_event());
    assert_eq!(s.act(), Action::Wait(WaitReason::UsageLimit { until_ms }));
    assert_eq!(
        s.state.task("T1").unwrap().attempts,
        0,
        "the limited try does not count"
    );
    s.then(Event::LimitWaitOver);
    let a = limited(&mut s);
    let Action::Record(Event::LimitHit { until_ms, .. }) = a else {
        panic!("{a:?}")
    };
    assert_eq!(
        until_ms,
        s.state.current().unwrap().agent_ms + 120_000,
        "doubled"
    );

    // on_limit = "fallback": the fallback agent takes the task at once.
    let mut s = Sim::new(
        PLAN,
        settings(|c| {
            c.run.fallback_agent = Some("b".into());
            c.limits.on_limit = agentloop_ground::values::OnLimit::Fallback;
        }),
    );
    let a = limited(&mut s);
    assert!(
        matches!(
            a,
            Action::Record(Event::Escalated {
                rung: Rung::Fallback,
                trigger: Trigger::UsageLimit { .. },
                ..
            })
        ),
        "{a:?}"
    );
    s.then(a.into_event());
    let a = s.act();
    assert_eq!(outcome(&a), Some(Outcome::Limited));
    s.then(a.into_event());
    assert!(
        matches!(s.act(), Action::Iterate(IterationPlan { kind: IterationKind::Fallback, ref agent, .. }) if agent == "b")
    );
}

#[test]
fn slow_progress_earns_retries_and_going_in_circles_trips() {
    // Each iteration fails differently (one more test fixed): not stopped at 5.
    let mut s = Sim::new(PLAN, settings(|_| {}));
    for i in 0..9 {
        let a = s.iteration(
            claims(false, &["src/a.rs"]),
            Some(false),
            &format!("{} failing", 10 - i),
        );
        assert!(
            matches!(a, Action::Iterate(_)),
            "iteration {}: {a:?}",
            i + 1
        );
    }
    s.iteration(claims(true, &["src/a.rs"]), Some(true), "");
    assert_eq!(s.state.task("T1").unwrap().status, TaskStatus::Done);
    assert_eq!(s.state.iterations, 10);

    // Edits that flip the tree between two states trip the oscillation breaker.
    let mut s = Sim::new(PLAN, settings(|c| c.budgets.max_replans = 0));
    for i in 0..4 {
        let tree = if i % 2 == 0 { "tree-a" } else { "tree-b" };
        let agent = AgentFinished {
            tree_after: Some(tree.into()),
            ..claims(true, &["src/a.rs"])
        };
        s.iteration(agent, Some(false), if i % 2 == 0 { "fa" } else { "fb" });
    }
    let a = s.act();
    assert!(
        matches!(
            a,
            Action::Record(Event::Escalated {
                trigger: Trigger::Oscillation { count: 2 },
                rung: Rung::Block,
                ..
            })
        ),
        "{a:?}"
    );
}

/// The thrashing breaker (seed 004): one file edited five times by the agent's own
/// tool calls in an iteration that did not pass moves the task up the ladder at once,
/// read from the CLI's tool log (here Claude Code's stream-json, from a stand-in).
#[test]
fn a_file_edited_over_and_over_without_passing_trips_the_thrashing_breaker() {
    let fake = r#"#!/bin/sh
case "$*" in *--version*) echo "2.1.197 (Claude Code)"; exit 0 ;; esac
cat > /dev/null
for i in 1 2 3 4 5; do
  echo "x$i" >> notes.txt
  printf '{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t%s","name":"Edit","input":{"file_path":"notes.txt","old_string":"a","new_string":"b"}}]}}\n' "$i"
done
printf '{"type":"result","subtype":"success","is_error":false,"result":"TASK_COMPLETE","session_id":"s1","usage":{"input_tokens":10,"output_tokens":5}}\n'
"#;
    let p = crate::support::Scratch::new()
        .plan("# P\n\n## T1: Make done.txt\nVerify: test -f done.txt\n")
        .config("[run]\nagent = \"fake\"\n\n[agents.fake]\nkind = \"claude\"\ncommand = [\"./fake-claude.sh\"]\n")
        .file("fake-claude.sh", fake)
        .build();
    std::process::Command::new("chmod")
        .args(["+x", "fake-claude.sh"])
        .current_dir(p.path())
        .status()
        .unwrap();
    let r = p.run(&["run", "--no-wait", "--max-iterations", "3"]);
    let log = p.run(&["log"]).stdout;
    assert!(
        log.contains("notes.txt edited 5 times in one iteration that did not pass (thrashing)"),
        "{}\n{log}",
        r.stderr
    );
    let escalated: Vec<serde_json::Value> = crate::real_cli::journal_events(&p)
        .into_iter()
        .filter(|e| e["kind"] == "escalated")
        .collect();
    let trigger = &escalated[0]["data"]["trigger"];
    assert_eq!(
        (trigger["type"].as_str(), trigger["times"].as_u64()),
        (Some("thrashing"), Some(5)),
        "{escalated:?}"
    );
    // Tripped by the first iteration alone: not the same failure three times.
    let events = crate::real_cli::journal_events(&p);
    let first = events
        .iter()
        .position(|e| e["kind"] == "escalated")
        .unwrap();
    assert_eq!(
        events[..first]
            .iter()
            .filter(|e| e["kind"] == "iteration_finished")
            .count(),
        1
    );
}

/// A REPLAN names tests of its own only in a task that, as a person wrote it, writes
/// tests; a revision of a pending task is held to that task as written.
#[test]
fn a_replan_adds_tests_only_where_the_person_s_task_writes_them() {
    for (plan, proposal, accepted) in [
        (
            "# P\n\n## T1: one\nVerify: t1\nTests: t.py::a (new)\n",
            "## T1: one, and b\nVerify: t1\nTests: t.py::b (new)\n",
            true,
        ),
        (
            "# P\n\n## T1: one\nVerify: t1\n",
            "## T1a: one, with a test\nVerify: t1\nTests: t.py::b (new)\n",
            false,
        ),
        (
            "# P\n\n## T1: one\nVerify: t1\n\n## T2: two\nDepends: T1\nVerify: t2\n",
            "## T1: one\nVerify: t1\n\n## T2: two, tested\nDepends: T1\nVerify: t2\nMode: tdd\n",
            false,
        ),
    ] {
        let a = replan_answer(plan, proposal);
        match (&a, accepted) {
            (Action::Record(Event::ReplanAccepted { .. }), true) => {}
            (Action::Record(Event::ReplanRejected { reason, .. }), false) => {
                assert!(reason.contains("cannot add tests of its own"), "{reason}")
            }
            _ => panic!("{proposal}: {a:?}"),
        }
    }
}

/// A REPLAN adds no check beside the ones a task carries (the replaced task's, on its
/// last replacement; a revised task's own): run first in the same copy, a command of
/// the agent's could write what the checks then load. A new task may have its own.
#[test]
fn a_replan_adds_no_check_beside_the_ones_a_task_carries() {
    let plan = "# P\n\n## T1: one\nVerify: t1\n\n## T2: two\nDepends: T1\nVerify: t2\n";
    for (proposal, refused) in [
        (
            "## T1: one\nVerify: plant\nVerify: t1\n",
            Some("T1 carries the checks of T1"),
        ),
        (
            "## T1a: one, smaller\nVerify: plant\n",
            Some("T1a carries the checks of T1"),
        ),
        (
            "## T1: one\n\n## T2: two\nDepends: T1\nVerify: plant\n",
            Some("T2 carries the checks of T2"),
        ),
        (
            "## T1a: part\nVerify: a\n\n## T1b: rest\nDepends: T1a\nVerify: t1\n",
            None,
        ),
    ] {
        let a = replan_answer(plan, proposal);
        match (&a, refused) {
            (Action::Record(Event::ReplanAccepted { .. }), None) => {}
            (Action::Record(Event::ReplanRejected { reason, .. }), Some(why)) => {
                assert!(reason.contains(why), "{proposal}: {reason}")
            }
            _ => panic!("{proposal}: {a:?}"),
        }
    }
}

/// What the policy answers to the first iteration's agent proposing `proposal` as a
/// REPLAN of `plan`'s first task.
fn replan_answer(plan: &str, proposal: &str) -> Action {
    let mut s = Sim::new(plan, settings(|_| {}));
    let mut a = s.act();
    if a == Action::TestBaseline {
        a = s.then(Event::TestsBaseline(Default::default()));
    }
    let Action::Iterate(p) = a else {
        panic!("{plan}: {a:?}")
    };
    s.then(started(&p));
    s.then(Event::AgentFinished(AgentFinished {
        iteration: p.iteration,
        signals: Signals {
            replan: Some(proposal.into()),
            ..Signals::default()
        },
        ..claims(false, &[])
    }));
    s.then(Event::TripwiresChecked {
        iteration: p.iteration,
        hits: vec![],
    })
}
