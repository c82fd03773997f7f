//! `agentloop queue`: plans run one after another, each a run of its own; one that
//! waits for a person holds up only the plans queued after it.

use crate::support::{Project, Scratch, agent};

fn project() -> Project {
    Scratch::new()
        .plan("# Unused\n\n## X1: x\nVerify: true\n")
        .agent(&agent(
            "touch \"$(printf '%s' \"$task\" | tr 'A-Z' 'a-z').txt\"\necho TASK_COMPLETE\n",
        ))
        .file("plans/a.md", "# A\n\n## A1: a\nVerify: test -f a1.txt\n")
        .file("plans/b.md", "# B\n\n## B1: b\nVerify: test -f b1.txt\n")
        .file(
            "plans/c.md",
            "# C\n\n## C1: c\nGate: before\nVerify: test -f c1.txt\n",
        )
        .file("plans/d.md", "# D\n\n## D1: d\nVerify: test -f d1.txt\n")
        .build()
}

fn entries(p: &Project) -> serde_json::Value {
    let r = p.run(&["queue", "list", "--json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap()
}

#[test]
fn plans_run_in_turn_and_a_blocked_one_holds_only_its_dependents() {
    let p = project();
    for args in [
        vec!["queue", "add", "plans/a.md"],
        vec!["queue", "add", "plans/b.md", "--after", "q1"],
        vec!["queue", "add", "plans/c.md"],
        vec!["queue", "add", "plans/d.md", "--after", "q3"],
    ] {
        let r = p.run(&args);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
    }
    let r = p.run(&["queue", "run"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("2 done, 1 blocked, 0 failed, 1 held by them")
            && r.stderr.contains("q4 waits for q3 (blocked)"),
        "{}",
        r.stderr
    );
    let e = entries(&p);
    let states: Vec<&str> = e
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["done", "done", "blocked", "waiting"]);
    assert!(!p.path().join("d1.txt").exists());
    // Each is a run of its own, with its own handoff.
    let a_run = e[0]["run"].as_str().unwrap();
    assert!(
        p.path()
            .join(format!(".agentloop/runs/{a_run}/handoff.md"))
            .exists()
    );
    let human = p.run(&["queue", "list"]).stdout;
    assert!(human.contains("held: q3 is blocked"), "{human}");
    // A person answers the blocked one; the queue goes on from there.
    let c_run = e[2]["run"].as_str().unwrap().to_string();
    let r = p.run(&["approve", &c_run]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let r = p.run(&["queue", "run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let e = entries(&p);
    assert!(
        e.as_array().unwrap().iter().all(|e| e["state"] == "done"),
        "{e}"
    );
    for f in ["a1.txt", "b1.txt", "c1.txt", "d1.txt"] {
        assert!(p.path().join(f).exists(), "{f}");
    }
}

/// A plan waiting at a gate holds its work tree, which one run drives at a time: a
/// later plan that does not depend on it waits its turn (deferred), it does not fail;
/// once the person answers, the queue runs both.
#[test]
fn an_independent_plan_after_a_waiting_one_is_deferred_not_failed() {
    let p = project();
    for plan in ["plans/c.md", "plans/a.md"] {
        let r = p.run(&["queue", "add", plan]);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
    }
    let r = p.run(&["queue", "run"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert!(
        r.stderr.contains("0 failed") && r.stderr.contains("q2 and what follows it: deferred: run"),
        "{}",
        r.stderr
    );
    let e = entries(&p);
    assert_eq!(e[0]["state"], "blocked", "{e}");
    assert_eq!(e[1]["state"], "waiting", "{e}");
    assert!(e[1]["run"].is_null(), "{e}");
    let c_run = e[0]["run"].as_str().unwrap().to_string();
    assert_eq!(p.run(&["approve", &c_run]).code, Some(0));
    let r = p.run(&["queue", "run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let e = entries(&p);
    assert!(
        e.as_array().unwrap().iter().all(|e| e["state"] == "done"),
        "{e}"
    );
    assert!(p.path().join("a1.txt").exists() && p.path().join("c1.txt").exists());
}

#[test]
fn bad_entries_are_refused_and_change_nothing() {
    let p = project();
    p.write("plans/bad.md", "## no title\n");
    let r = p.run(&["queue", "add", "plans/bad.md"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    let r = p.run(&["queue", "add", "plans/a.md", "--after", "q9"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("no queue entry q9"), "{}", r.stderr);
    assert_eq!(entries(&p), serde_json::json!([]));
    p.write(".agentloop/queue.json", "{broken");
    let r = p.run(&["queue", "add", "plans/a.md"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("does not read"), "{}", r.stderr);
    assert_eq!(p.read(".agentloop/queue.json"), "{broken");
    let r = p.run(&["queue", "run"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
}
