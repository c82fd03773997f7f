//! `Must-not:` tripwires: a path the task must not touch, a line it must not add, a
//! dependency, a command that must keep passing, a command the agent must never run.
//! A hit stops the run at once with the evidence; a person accepts it or hands it back.

use crate::support::{Project, Scratch, agent};

fn project(plan: &str, script: &str) -> Project {
    Scratch::new()
        .plan(plan)
        .agent(&agent(script))
        .file("api.txt", "v1\n")
        .file(
            "keep.sh",
            "grep -q v1 api.txt || { echo 'api.txt lost v1'; exit 1; }\n",
        )
        .build()
}

fn kinds_of(p: &Project, kind: &str) -> Vec<serde_json::Value> {
    crate::real_cli::journal_events(p)
        .into_iter()
        .filter(|e| e["kind"] == kind)
        .collect()
}

const FRONT: &str = "---\nmustNot:\n  - touch migrations/\n---\n# Schema-free\n\n## T1: Make a.txt\nVerify: test -f a.txt\n";

#[test]
fn a_path_the_plan_forbids_stops_the_run_and_a_rejection_hands_it_back() {
    // First the agent adds a migration; told it must not, it takes it out.
    let p = project(
        FRONT,
        r#"touch a.txt
if printf '%s' "$prompt" | grep -q 'must not do'; then rm -rf migrations; else mkdir -p migrations && echo 'DROP TABLE users;' > migrations/001.sql; fi
echo TASK_COMPLETE
"#,
    );
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("migrations/001.sql changed (migrations/)"),
        "{}",
        r.stderr
    );
    let s = p.status();
    assert_eq!(s["status"], "waiting", "{s}");
    assert_eq!(s["tasks"][0]["status"], "running", "not done: {s}");
    let human = p.run(&["status"]).stdout;
    assert!(
        human.contains("T1: must not touch migrations/: migrations/001.sql changed"),
        "{human}"
    );
    assert!(
        kinds_of(&p, "verify_finished").is_empty(),
        "stopped before its checks"
    );
    let r = p.run(&["reject", "--note", "no schema changes in this run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let r = p.run(&["resume", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.status()["status"], "completed");
    assert!(!p.path().join("migrations").exists());
    let prompt = std::fs::read_to_string(p.run_dir().join("iterations/0002/prompt.md")).unwrap();
    assert!(
        prompt.contains("no schema changes in this run") && prompt.contains("migrations/001.sql"),
        "{prompt}"
    );
}

#[test]
fn an_accepted_hit_lets_the_task_go_on_and_does_not_stop_it_again() {
    let plan = "# Deps\n\n## T1: Use leftpad\nVerify: test -f a.txt\nMust-not: add dependency\n";
    let p = Scratch::new()
        .plan(plan)
        .agent(&agent(
            "printf '[package]\\nname = \"x\"\\n\\n[dependencies]\\nleftpad = \"1\"\\n' > Cargo.toml\n[ -f a.txt ] && echo TASK_COMPLETE\ntouch a.txt\n",
        ))
        .file("Cargo.toml", "[package]\nname = \"x\"\n\n[dependencies]\n")
        .build();
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert!(
        r.stderr.contains("Cargo.toml:5: leftpad = \"1\""),
        "{}",
        r.stderr
    );
    let r = p.run(&["approve", "--note", "leftpad is fine"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let r = p.run(&["resume", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.status()["status"], "completed");
    let checks = kinds_of(&p, "tripwires_checked");
    assert_eq!(
        checks.len(),
        1,
        "accepted for the task, the tripwire is not checked again: {checks:?}"
    );
    assert_eq!(p.status()["iterations"], 2);
}

#[test]
fn a_command_that_must_keep_passing_and_a_command_never_to_run() {
    let plan = "# Careful\n\n## T1: Make a.txt\nVerify: test -f a.txt\nMust-not: break sh keep.sh\nMust-not: run git push --force\n";
    let p = project(
        plan,
        // What a CLI's tool log looks like: the command inside escaped JSON.
        r#"touch a.txt
echo v2 > api.txt
echo '{"type":"tool_use","name":"Bash","input":{"command":"git push --force origin main"}}'
echo TASK_COMPLETE
"#,
    );
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    let hits = kinds_of(&p, "tripwires_checked")[0]["data"]["hits"].clone();
    assert_eq!(hits[0]["wire"], "run git push --force", "{hits}");
    assert!(
        hits[0]["evidence"]
            .as_str()
            .unwrap()
            .contains("the agent ran it")
    );
    assert_eq!(hits[1]["wire"], "break sh keep.sh", "{hits}");
    assert!(
        hits[1]["evidence"]
            .as_str()
            .unwrap()
            .contains("api.txt lost v1"),
        "{hits}"
    );
}

/// The agent deletes the tripwire from PLAN.md in the same iteration: the run goes by
/// the plan it started with (the journal's), not the file.
#[test]
fn deleting_the_tripwire_from_the_plan_does_not_disarm_it() {
    let plan = "# Careful\n\n## T1: Make a.txt\nVerify: test -f a.txt\nMust-not: touch secrets/\n";
    let p = project(
        plan,
        r#"touch a.txt
mkdir -p secrets && echo key > secrets/k
grep -v 'Must-not' PLAN.md > PLAN.tmp && mv PLAN.tmp PLAN.md
echo TASK_COMPLETE
"#,
    );
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert!(r.stderr.contains("secrets/k changed"), "{}", r.stderr);
    assert_eq!(p.status()["tasks"][0]["status"], "running");
}

#[test]
fn a_tripwire_that_does_not_read_is_refused_with_its_line() {
    let p = project(
        "# Bad\n\n## T1: Make a.txt\nVerify: test -f a.txt\nMust-not: delete everything\n",
        "echo TASK_COMPLETE\n",
    );
    let r = p.run(&["plan", "check"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("PLAN.md:5: Must-not: `delete everything` is not a tripwire"),
        "{}",
        r.stderr
    );
    let p = project(
        "---\nmustNot: [\"match (\"]\n---\n# Bad\n\n## T1: Make a.txt\n",
        "echo TASK_COMPLETE\n",
    );
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("mustNot: `match (`"), "{}", r.stderr);
    assert_eq!(p.run(&["status"]).code, Some(2), "no run was made");
}
