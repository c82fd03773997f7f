//! Diff-triggered gates in a run without a forge: each done task's commit is read,
//! and a task whose change a gate covers holds the run until a person approves it
//! (`approve --gate NAME`) or rejects it (the task goes back to its agent).

use crate::support::{Project, Scratch, agent, scripted};

const PLAN: &str = "# Login\n\n## T1: Login\nVerify: test -f src/login.rs\n\n## T2: Docs\nVerify: test -f docs/login.md\n";

/// T1 puts the login under src/auth/ the first time, and, told that a person rejected
/// it, moves it out; T2 writes documentation.
const AGENT: &str = r#"case "$task" in
  T1) mkdir -p src
      if printf '%s' "$prompt" | grep -q 'rejected it: keep auth out'; then
        rm -rf src/auth; echo 'pub fn login() {}' > src/login.rs
      else
        mkdir -p src/auth; echo 'pub fn login() {}' > src/auth/login.rs; echo 'mod auth;' > src/login.rs
      fi ;;
  T2) mkdir -p docs; echo 'How to log in.' > docs/login.md ;;
esac
echo TASK_COMPLETE
"#;

const GATES: &str = "[gates.security]\nenabled = true\n\n[gates.database]\nenabled = true\n";

/// The two-task project with its agent script `script` and the gates on.
fn project(script: &str) -> Project {
    Scratch::new()
        .plan(PLAN)
        .agent(&agent(script))
        .config(GATES)
        .build()
}

#[test]
fn a_task_that_touches_auth_holds_the_run_until_a_person_approves_it() {
    let p = project(AGENT);
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert!(
        r.stderr.contains("the security review")
            && r.stderr
                .contains("T1: src/auth/login.rs: the path matches `auth`"),
        "{}",
        r.stderr
    );
    let shown = p.run(&["status"]).stdout;
    assert!(
        shown.contains("  T1: src/auth/login.rs: the path matches `auth`"),
        "{shown}"
    );
    let s = p.status();
    assert_eq!(s["tasks"][0]["status"], "done");
    assert_eq!(
        s["tasks"][1]["status"], "pending",
        "nothing goes on past the held task"
    );
    // Committed (a diff gate needs to know what each task changed), with the change.
    assert!(
        p.git_cmd(&["show", "--stat", "HEAD"])
            .contains("src/auth/login.rs")
    );
    // A gate the run does not have is refused, naming the ones it has.
    let before = p.run(&["log", "--json"]).stdout;
    let r = p.run(&["approve", "--gate", "deploy"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("has no deploy gate: its diff gates: security, database"),
        "{}",
        r.stderr
    );
    let r = p.run(&["approve", "--gate", "securty"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert_eq!(p.run(&["log", "--json"]).stdout, before, "nothing recorded");
    // Approving another gate does not release this one.
    let r = p.run(&["approve", "--gate", "database"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let r = p.run(&["resume", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert_eq!(p.status()["tasks"][1]["status"], "pending");
    let r = p.run(&["approve", "--gate", "security", "--note", "reviewed"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let r = p.run(&["resume", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["status"], "completed");
    assert_eq!(s["tasks"][1]["status"], "done");
    let log = p.run(&["log"]).stdout;
    assert!(
        log.contains("task T1, ") && log.contains("held for the security review"),
        "{log}"
    );
    assert!(
        log.contains("task T2, ") && log.contains("no diff gate triggered"),
        "{log}"
    );
    // The handoff lists the review the person approved among the gates passed.
    let handoff = std::fs::read_to_string(p.run_dir().join("handoff.md")).unwrap();
    let passed = handoff
        .lines()
        .find(|l| l.starts_with("- Gates passed:"))
        .unwrap_or_default();
    assert!(passed.contains("the security review"), "{handoff}");
}

#[test]
fn a_rejected_change_goes_back_to_its_agent_with_the_reason() {
    let p = project(AGENT);
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    let r = p.run(&["reject", "--note", "keep auth out of this"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let r = p.run(&["resume", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["status"], "completed");
    assert_eq!(p.read(".git/agent-state/T1").trim(), "2", "T1 ran again");
    assert!(!p.path().join("src/auth").exists());
    let log = p.run(&["log"]).stdout;
    assert_eq!(
        log.matches("held for the security review").count(),
        1,
        "the second change touches no auth path: {log}"
    );
}

#[test]
fn with_workers_the_task_is_read_from_its_merge_onto_the_integration_branch() {
    let p = project(AGENT);
    let r = p.run(&["run", "--no-wait", "--workers", "2"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("T1: src/auth/login.rs: the path matches `auth`"),
        "{}",
        r.stderr
    );
    assert!(
        !r.stderr.contains("T2: docs"),
        "T2's merge is its own change, not T1's: {}",
        r.stderr
    );
    let r = p.run(&["approve", "--gate", "security"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let r = p.run(&["resume", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.status()["status"], "completed");
}

/// The agent commits its auth change itself, so that agentloop's own commit of the
/// task holds only a harmless file: the task is still measured from where it began.
#[test]
fn a_change_the_agent_committed_itself_is_read_all_the_same() {
    let script = r#"case "$task" in
  T1) mkdir -p src/auth; echo 'pub fn login() {}' > src/auth/login.rs
      git add -A >/dev/null && git -c user.name=a -c user.email=a@b commit -qm 'tidy' >/dev/null
      echo 'mod auth;' > src/login.rs ;;
  T2) mkdir -p docs; echo 'How to log in.' > docs/login.md ;;
esac
echo TASK_COMPLETE
"#;
    let p = project(script);
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert!(
        !p.git_cmd(&["show", "--stat", "HEAD"]).contains("src/auth"),
        "agentloop's commit of T1 holds only src/login.rs"
    );
    assert!(
        r.stderr
            .contains("T1: src/auth/login.rs: the path matches `auth`"),
        "{}",
        r.stderr
    );
}

/// Seed 004's interface updates, asked only when it matters: the plan's words alone
/// ("signature") open no gate; with `[gates] architecture` on, a task whose words say
/// it is an interface update is reviewed as architecture, and a resume keeps it so;
/// plain work next to it is not held.
#[test]
fn an_interface_update_is_reviewed_as_architecture() {
    let plan = "# Greeter\n\n## T1: Change the signature of greet() to take a name\nVerify: test -f src/greet.rs\n\n## T2: Docs\nDepends: T1\nVerify: test -f docs/greet.md\n";
    let work = agent(
        "case \"$task\" in\n  T1) mkdir -p src; echo 'pub fn greet(name: &str) {}' > src/greet.rs ;;\n  T2) mkdir -p docs; echo 'greet NAME' > docs/greet.md ;;\nesac\necho TASK_COMPLETE\n",
    );
    let words_only = Scratch::new()
        .plan(plan)
        .agent(&work)
        .file("src/lib.rs", "mod greet;\n")
        .file("docs/README.md", "Greeter.\n")
        .build();
    let r = words_only.run(&["plan", "check"]);
    assert!(
        r.stdout
            .contains("interface update? `[gates] architecture` would review it"),
        "{}",
        r.stdout
    );
    let r = words_only.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(0), "the words open no gate: {}", r.stderr);
    let p = Scratch::new()
        .plan(&format!(
            "---\ngates:\n  architecture:\n    enabled: true\n---\n{plan}"
        ))
        .agent(&work)
        .file("src/lib.rs", "mod greet;\n")
        .file("docs/README.md", "Greeter.\n")
        .build();
    let r = p.run(&["plan", "check"]);
    assert!(
        r.stdout
            .contains("interface update: reviewed as architecture"),
        "{}",
        r.stdout
    );
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert!(
        r.stderr.contains("the architecture review")
            && r.stderr.contains(
                "T1: src/greet.rs: an interface update (it speaks of \"signature\"): what it changed (1 file) is reviewed as architecture"
            ),
        "{}",
        r.stderr
    );
    assert_eq!(p.status()["tasks"][1]["status"], "pending");
    // Resumed, still held: the decision is the run's.
    let r = p.run(&["resume", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    let r = p.run(&["approve", "--gate", "architecture"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let r = p.run(&["resume", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let log = p.run(&["log"]).stdout;
    assert!(
        log.contains("task T2, ") && log.contains("no diff gate triggered"),
        "{log}"
    );
}

/// Reversibility class 1 guessed from a task's words ("migration") does not hold a
/// run told to proceed; stated by the plan (`Reversibility: 1`), it does.
#[test]
fn under_yes_only_a_class_the_plan_states_waits_for_a_person() {
    let guessed = "# Users\n\n## T1: Add a migration for the users table\nVerify: test -f m.sql\n";
    let work = "touch m.sql\necho TASK_COMPLETE\n";
    let p = scripted(guessed, work);
    let r = p.run(&["plan", "check"]);
    assert!(r.stdout.contains("class 1"), "{}", r.stdout);
    let r = p.run(&["run", "--yes", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let stated = "# Users\n\n## T1: Add a migration for the users table\nReversibility: 1\nVerify: test -f m.sql\n";
    let p = scripted(stated, work);
    let r = p.run(&["run", "--yes", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert_eq!(p.status()["iterations"], 0, "{}", p.status());
}
