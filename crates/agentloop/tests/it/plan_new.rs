//! `agentloop plan new`: the agent drafts the plan in a throwaway copy; agentloop
//! checks the draft (it must parse; each check is run once: one that cannot run is
//! refused, one that passes already is flagged) and writes it only when approved.

use crate::support::{Project, Scratch, agent};

/// A scripted agent that answers with `plan` (and tries to write into the project).
fn drafting(plan: &str) -> Project {
    Scratch::new()
        .plan("# Existing\n\n## T1: x\nVerify: true\n")
        .agent(&agent(&format!(
            "touch written-by-the-planner\necho 'Here is the plan:'\necho\ncat <<'PLAN'\n{plan}PLAN\n"
        )))
        .file("README.md", "hello\n")
        .build()
}

/// The directory of the first draft the agent was asked for.
fn first_draft(p: &Project) -> std::path::PathBuf {
    let drafts = p.path().join(".agentloop/drafts");
    std::fs::read_dir(&drafts)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
}

const DRAFT: &str = "# Greeter\n\nA greeter.\n\n## T1: Make greet.sh\nVerify: test -x greet.sh\n\n## T2: Document it\nDepends: T1\nVerify: grep -q greet README.md\nVerify: test -f README.md\n";

#[test]
fn a_goal_becomes_a_checked_plan_written_once_approved() {
    let p = drafting(DRAFT);
    let r = p.run(&["plan", "new", "a greeter", "-o", "NEW.md", "--yes"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.read("NEW.md"), DRAFT);
    assert!(r.stdout.contains("## T1: Make greet.sh"), "{}", r.stdout);
    assert!(
        r.stderr.contains(
            "warning: T2: `test -f README.md` passes before any work: it does not test its task"
        ),
        "{}",
        r.stderr
    );
    assert!(
        !r.stderr.contains("`test -x greet.sh` passes"),
        "{}",
        r.stderr
    );
    assert!(
        !p.path().join("written-by-the-planner").exists(),
        "the agent worked in a copy"
    );
    // The agent was told the goal and the format.
    let dir = first_draft(&p);
    let prompt = std::fs::read_to_string(dir.join("prompt.md")).unwrap();
    assert!(prompt.contains("## The goal\n\na greeter"), "{prompt}");
    assert!(!dir.join("tree").exists(), "the copy is gone");
    assert_eq!(p.run(&["plan", "check", "NEW.md"]).code, Some(0));
}

#[test]
fn a_check_that_cannot_run_is_refused_and_nothing_is_written() {
    let p = drafting("# G\n\n## T1: x\nVerify: frobnicate --all\n");
    let r = p.run(&["plan", "new", "x", "-o", "NEW.md", "--yes"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("refused: T1: `frobnicate --all` cannot run here (command not found)"),
        "{}",
        r.stderr
    );
    assert!(!p.path().join("NEW.md").exists());
}

/// A first decomposition is 3 to 7 tasks (seed 001's INIT): the agent is told so, and
/// a longer draft is not written unless asked for with `--tasks`.
#[test]
fn a_first_plan_has_three_to_seven_tasks_unless_asked_for_more() {
    let mut eight = String::from("# Many\n\nMany small things.\n\n");
    for i in 1..=8 {
        eight.push_str(&format!("## T{i}: Make f{i}\nVerify: test -f f{i}\n\n"));
    }
    let p = drafting(&eight);
    let r = p.run(&["plan", "new", "many things", "-o", "NEW.md", "--yes"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("the draft has 8 tasks, more than a first plan's 7; NEW.md was not written"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("--tasks 8"), "{}", r.stderr);
    assert!(!p.path().join("NEW.md").exists());
    let prompt = std::fs::read_to_string(first_draft(&p).join("prompt.md")).unwrap();
    assert!(
        prompt.contains("A first decomposition: 3 to 7 tasks."),
        "{prompt}"
    );
    let r = p.run(&[
        "plan",
        "new",
        "many things",
        "-o",
        "NEW.md",
        "--yes",
        "--tasks",
        "8",
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.read("NEW.md"), eight.trim_end().to_string() + "\n");
}

#[test]
fn without_a_terminal_or_yes_the_plan_waits_for_approval() {
    let p = drafting(DRAFT);
    let r = p.run(&["plan", "new", "a greeter", "-o", "NEW.md"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert!(r.stderr.contains("waits for your approval"), "{}", r.stderr);
    assert!(!p.path().join("NEW.md").exists());
}

#[test]
fn bad_requests_change_nothing_and_ask_no_agent() {
    let p = drafting(DRAFT);
    let r = p.run(&["plan", "new", "a greeter"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("PLAN.md exists"), "{}", r.stderr);
    let r = p.run(&["plan", "new", "-o", "NEW.md"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("say what the plan is for"),
        "{}",
        r.stderr
    );
    std::fs::write(p.path().join("spec.bin"), [0x66u8, 0xff, 0xfe]).unwrap();
    let r = p.run(&["plan", "new", "--from", "spec.bin", "-o", "NEW.md"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("not UTF-8"), "{}", r.stderr);
    assert!(
        !p.path().join(".agentloop/drafts").exists(),
        "no agent was asked"
    );
    // An answer without a plan is kept and said.
    let p = drafting("Sorry, I cannot help with that.\n");
    let r = p.run(&["plan", "new", "x", "-o", "NEW.md", "--yes"]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(r.stderr.contains("has no plan in it"), "{}", r.stderr);
}

/// The real Claude Code drafts it against the mock model, offered only the tools that
/// read.
#[test]
fn the_real_claude_drafts_a_plan_with_read_only_tools() {
    use crate::real_cli::{Cli, say};
    let server = Cli::Claude.mock(vec![say(
        &format!("Here is the plan.\n\n```markdown\n{DRAFT}```\n"),
        40,
        30,
        0,
    )]);
    let p = Cli::Claude.project(&server, "# Existing\n\n## T1: x\nVerify: true\n", "");
    let r = p.run(&["plan", "new", "a greeter", "-o", "NEW.md", "--yes"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.read("NEW.md"), DRAFT);
    assert!(
        r.stderr.contains("with its read-only tools"),
        "{}",
        r.stderr
    );
    let req = server
        .requests()
        .into_iter()
        .find(|r| r.step == Some(0))
        .expect("the drafting request");
    let tools: Vec<String> = req.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str().map(String::from))
        .collect();
    assert!(tools.iter().any(|t| t == "Read"), "{tools:?}");
    for denied in ["Bash", "Write", "Edit"] {
        assert!(
            !tools.iter().any(|t| t == denied),
            "{denied} offered: {tools:?}"
        );
    }
    assert!(req.body.to_string().contains("a greeter"));
}
