//! The phases of a run beyond develop: a DEBUG iteration once the same failure comes
//! back, whose findings go to the next attempt.

use crate::support::{Scratch, agent, scripted};

const AGENT: &str = r#"if printf '%s' "$prompt" | grep -q 'DEBUG: find the cause'; then
  echo '{"at": "agent.sh:1", "hypothesis": 1, "values": {"fixed": false}}' >> agentloop-debug.log
  echo 'HYPOTHESIS: nothing creates fixed.txt | TEST: ls | RESULT: confirmed'
  echo 'HYPOTHESIS: the check looks in the wrong place | TEST: read the Verify line | RESULT: refuted'
  echo 'UNDERSTANDING:'
  echo 'The claim was made without creating fixed.txt.'
elif printf '%s' "$prompt" | grep -q 'The claim was made without creating fixed.txt'; then
  touch fixed.txt
  echo TASK_COMPLETE
else
  date +%N > attempt.txt
  echo TASK_COMPLETE
fi
"#;

#[test]
fn the_same_failure_twice_brings_a_debug_iteration_whose_findings_go_to_the_next() {
    let p = scripted(
        "# Debug\n\n## T1: Make fixed.txt\nVerify: test -f fixed.txt\n",
        AGENT,
    );
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains("debugging the repeated failure"),
        "{}",
        r.stderr
    );
    let kinds: Vec<String> = crate::real_cli::journal_events(&p)
        .iter()
        .filter(|e| e["kind"] == "iteration_started")
        .map(|e| e["data"]["kind"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kinds, ["work", "retry", "debug", "retry"]);
    let dir = p.run_dir().join("iterations/0003");
    let understanding = std::fs::read_to_string(dir.join("understanding.md")).unwrap();
    assert!(understanding.contains("UNDERSTANDING:"), "{understanding}");
    let hypotheses: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("hypotheses.json")).unwrap())
            .unwrap();
    assert_eq!(hypotheses[0]["hypothesis"], "nothing creates fixed.txt");
    assert_eq!(hypotheses[0]["result"], "confirmed");
    assert_eq!(hypotheses[1]["result"], "refuted");
    let debug_prompt = std::fs::read_to_string(dir.join("prompt.md")).unwrap();
    assert!(
        debug_prompt.contains("## The failure that keeps coming back")
            && !debug_prompt.contains("TASK_COMPLETE"),
        "{debug_prompt}"
    );
    // The instrumentation step: NDJSON logging points, kept with the iteration and
    // taken out of the tree (not the agent's change).
    assert!(
        debug_prompt.contains("2. Instrument:") && debug_prompt.contains("`agentloop-debug.log`"),
        "{debug_prompt}"
    );
    let kept = std::fs::read_to_string(dir.join("debug.log")).unwrap();
    assert!(kept.contains("\"hypothesis\": 1"), "{kept}");
    assert!(!p.path().join("agentloop-debug.log").exists());
    let finished = crate::real_cli::journal_events(&p)
        .into_iter()
        .find(|e| e["kind"] == "agent_finished" && e["data"]["iteration"] == 3)
        .unwrap();
    assert!(
        !finished.to_string().contains("agentloop-debug.log"),
        "not a change of the agent's: {finished}"
    );
    // The debug iteration is not verified.
    let verified: Vec<u64> = crate::real_cli::journal_events(&p)
        .iter()
        .filter(|e| e["kind"] == "verify_finished")
        .map(|e| e["data"]["iteration"].as_u64().unwrap())
        .collect();
    assert_eq!(verified, [1, 2, 4]);
    let log = p.run(&["log"]).stdout;
    assert!(log.contains("debug"), "{log}");
}

#[test]
fn debug_after_zero_goes_straight_up_the_ladder() {
    let p = crate::support::Scratch::new()
        .plan("# Debug\n\n## T1: Make fixed.txt\nVerify: test -f fixed.txt\n")
        .agent(&crate::support::agent(AGENT))
        .config("[breakers]\ndebug_after = 0\nsame_failure = 2\n")
        .build();
    let r = p.run(&["run", "--no-wait"]);
    assert_ne!(r.code, Some(0), "{}", r.stderr);
    assert!(
        !crate::support::journal_has(&p, "\"kind\":\"debug\""),
        "no debug iteration"
    );
}

const BREAKS_T1: &str = "# Two\n\n## T1: Make a.txt\nVerify: test -f a.txt\n\n## T2: Make b.txt\nDepends: T1\nVerify: test -f b.txt\n";

/// T2 passes its own check by deleting what T1 made: the VALIDATE phase catches it on
/// the whole project and hands the agent a fix task; validated again, the run ends.
#[test]
fn a_later_task_breaking_an_earlier_ones_check_reopens_work() {
    let p = scripted(
        BREAKS_T1,
        "case \"$task\" in T1) touch a.txt ;; T2) rm -f a.txt; touch b.txt ;; VALIDATE-*) touch a.txt ;; esac\necho TASK_COMPLETE\n",
    );
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("validation FAILED on the whole project: `test -f a.txt`"),
        "{}",
        r.stderr
    );
    let events = crate::real_cli::journal_events(&p);
    let passed: Vec<bool> = events
        .iter()
        .filter(|e| e["kind"] == "validated")
        .map(|e| e["data"]["passed"].as_bool().unwrap())
        .collect();
    assert_eq!(passed, [false, true]);
    let s = p.status();
    assert_eq!(s["tasks"][2]["id"], "VALIDATE-1");
    assert_eq!(s["tasks"][2]["status"], "done");
    let prompt = std::fs::read_to_string(p.run_dir().join("iterations/0003/prompt.md")).unwrap();
    assert!(
        prompt.contains("Make the run's checks pass on the whole project")
            && prompt.contains("`test -f a.txt` exited 1"),
        "{prompt}"
    );
    let md = std::fs::read_to_string(p.run_dir().join("validation.md")).unwrap();
    assert!(
        md.contains("**passed**") && md.contains("| `test -f a.txt` | exit 0"),
        "{md}"
    );
    assert!(p.path().join("a.txt").exists() && p.path().join("b.txt").exists());
}

#[test]
fn a_validation_that_cannot_be_fixed_ends_the_run_failed() {
    let p = crate::support::Scratch::new()
        .plan(BREAKS_T1)
        .agent(&crate::support::agent(
            "case \"$task\" in T1) touch a.txt ;; T2) rm -f a.txt; touch b.txt ;; esac\necho TASK_COMPLETE\n",
        ))
        .config("[verify]\nvalidate_fixes = 0\n")
        .build();
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("the run's checks fail on the whole project after 0 fixes"),
        "{}",
        r.stderr
    );
    let md = std::fs::read_to_string(p.run_dir().join("validation.md")).unwrap();
    assert!(
        md.contains("**FAILED**") && md.contains("| `test -f a.txt` | exit 1 |"),
        "{md}"
    );
    assert_eq!(p.status()["verdict"], "MONITOR");
}

/// The plan's clarity and the shape of work: `plan check` scores it; `shape = "auto"`
/// refuses a plan that is only an intent (with the questions) and gives a middling one
/// the colleague's gates; a task of reversibility class 1 waits for a person first.
#[test]
fn clarity_and_shape_set_the_gates() {
    let thin = "---\nrun:\n  shape: auto\n---\n# P\n\n## T1: one\nVerify: test -f one.txt\n";
    let p = scripted(thin, "touch one.txt\necho TASK_COMPLETE\n");
    let r = p.run(&["plan", "check"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout.contains(
            "clarity 2/10 (outcome 0, scope 0, constraints 0, success 2, done 0) · shape intent: waits at plan approval with its questions"
        ),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("class 2A"), "{}", r.stdout);
    // Too vague to run unasked: it waits at plan approval with its questions (it used
    // to be refused), and a person's rejection ends it.
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert!(
        r.stderr.contains("waiting for a person: approve the plan")
            && r.stderr.contains("shape intent")
            && r.stderr.contains("What must not change?"),
        "{}",
        r.stderr
    );
    assert_eq!(p.status()["shape"], "intent");
    assert_eq!(p.status()["iterations"], 0);
    assert_eq!(p.run(&["reject", "--note", "too vague"]).code, Some(0));
    assert_eq!(p.status()["status"], "stopped", "{}", p.status());
    // `--yes`: the person says go; no gate that only confirms, the questions said.
    let r = p.run(&["run", "--yes", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains("not clear enough to run unasked")
            && r.stderr.contains("What must not change?"),
        "{}",
        r.stderr
    );
    assert_eq!(p.status()["status"], "completed");
    // Middling: the colleague's gates, from the plan's approval on.
    p.write(
        "PLAN.md",
        "---\nrun:\n  shape: auto\n---\n# P\n\nMake one.txt for the greeter, nothing else.\n\n## T1: Make one.txt\nVerify: test -f one.txt\n",
    );
    p.commit("clearer");
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["shape"], "colleague", "{s}");
    assert_eq!(s["gate"]["point"], "plan", "{s}");
    // Approved and resumed, the run keeps its shape and the colleague's gates: it
    // waits after the task, and at the end (a resume used to build its settings
    // afresh from the configuration and lose them).
    assert_eq!(p.run(&["approve"]).code, Some(0));
    // Gate 2, of its own: what agentloop found reading the plan, to accept.
    let r = p.run(&["resume", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert_eq!(p.status()["gate"]["point"], "plan_review");
    assert_eq!(p.status()["iterations"], 0);
    assert!(
        r.stderr.contains("accept the plan's review")
            && r.stderr
                .contains("- constraints 0/2: nothing says what must not change")
            && r.stderr.contains("What must not change?"),
        "{}",
        r.stderr
    );
    assert_eq!(p.run(&["approve"]).code, Some(0));
    let r = p.run(&["resume", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["shape"], "colleague", "{s}");
    assert_eq!(s["gate"]["point"], "after_task", "{s}");
    assert_eq!(p.run(&["approve"]).code, Some(0));
    let r = p.run(&["resume", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert_eq!(p.status()["gate"]["point"], "final", "{}", r.stderr);
    assert!(p.run(&["status"]).stdout.contains("shape: colleague"));
    assert_eq!(p.run(&["approve"]).code, Some(0));
    let r = p.run(&["resume", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // Seed 002's phrase in the front matter: the same plan runs without confirmation,
    // and a resume keeps it so.
    p.write(
        "PLAN.md",
        "---\nproceed: without confirmation\nrun:\n  shape: auto\n---\n# P\n\nMake one.txt for the greeter, nothing else.\n\n## T1: Make one.txt\nVerify: test -f one.txt\n\n## T2: Keep one.txt\nDepends: T1\nVerify: test -f one.txt\n",
    );
    p.commit("no confirmation");
    let r = p.run(&["plan", "check"]);
    assert!(
        r.stdout.contains("proceeds without confirmation"),
        "{}",
        r.stdout
    );
    p.run(&["run", "--max-iterations", "1", "--no-wait"]);
    assert!(p.status()["gate"].is_null(), "{}", p.status());
    assert_eq!(p.status()["iterations"], 1, "{}", p.status());
    let r = p.run(&["resume", "--iterations", "+5", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.status()["status"], "completed");
    // The shaping step's file may say it too; a plan that says both ways is refused.
    p.write("PLAN.md", "# P\n\nMake one.txt for the greeter, nothing else.\n\n## T1: Make one.txt\nVerify: test -f one.txt\n");
    p.write(
        ".loop/shape/SHAPE.md",
        "---\nproceed: without confirmation\n---\nShaped.\n",
    );
    let r = p.run(&["plan", "check"]);
    assert!(
        r.stdout.contains("proceeds without confirmation"),
        "{}{}",
        r.stdout,
        r.stderr
    );
    std::fs::remove_file(p.path().join(".loop/shape/SHAPE.md")).unwrap();
    p.write("PLAN.md", "---\nproceed: without confirmation\nrun:\n  confirm: true\n---\n# P\n\n## T1: a\nVerify: true\n");
    let r = p.run(&["plan", "check"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("asks for confirmation"), "{}", r.stderr);
    // A bad word there is refused with the line, and changes nothing.
    p.write(
        "PLAN.md",
        "---\nproceed: quickly\n---\n# P\n\n## T1: a\nVerify: true\n",
    );
    let r = p.run(&["plan", "check"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("proceed: `quickly` is not a way to proceed"),
        "{}",
        r.stderr
    );
}

/// A new user's defaults: the shape is `auto`, so a vague plan waits at plan approval
/// and the bundled kind of plan (clear) runs without asking.
#[test]
fn by_default_the_plans_clarity_decides_whether_anyone_is_asked() {
    let p = scripted(
        "# P\n\n## T1: one\nVerify: test -f one.txt\n",
        "touch one.txt\necho TASK_COMPLETE\n",
    )
    .with_defaults();
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert_eq!(p.status()["shape"], "intent");
    assert_eq!(p.status()["gate"]["point"], "plan");
    let clear = "---\nmustNot:\n  - touch src/\n---\n# Greeter\n\nA file one.txt that the greeter reads, and nothing else changes.\n\n## T1: Make one.txt\nVerify: test -f one.txt\n\nAcceptance:\n- [ ] one.txt exists\n";
    p.write("PLAN.md", clear);
    p.commit("clear");
    assert_eq!(p.run(&["reject", "--note", "vague"]).code, Some(0));
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.status()["shape"], "tool");
}

#[test]
fn a_task_hours_to_undo_waits_for_a_person_before_it_starts() {
    let p = scripted(
        "# Users\n\n## T1: Add a migration for the users table\nVerify: test -f m.sql\n",
        "touch m.sql\necho TASK_COMPLETE\n",
    );
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert_eq!(p.status()["gate"]["point"], "before_task");
    assert_eq!(p.status()["iterations"], 0);
    assert_eq!(p.status()["tasks"][0]["class"], "1");
    assert_eq!(p.run(&["approve"]).code, Some(0));
    let r = p.run(&["resume"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
}

/// The same kind of failure three times across tasks: the person is told it is worth
/// a learning, and so is the agent's next attempt.
#[test]
fn a_failure_that_keeps_coming_back_across_tasks_is_called_a_pattern() {
    let plan = "---\nverify:\n  commands: [\"test -f shared.ok\"]\n---\n# Three\n\n## T1: a\nVerify: test -f T1.txt\n\n## T2: b\nDepends: T1\nVerify: test -f T2.txt\n\n## T3: c\nDepends: T2\nVerify: test -f T3.txt\n";
    let p = scripted(
        plan,
        "touch \"$task.txt\"\nif [ \"$n\" = 1 ]; then rm -f shared.ok; else touch shared.ok; fi\necho TASK_COMPLETE\n",
    );
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(
        r.stderr
            .matches("agentloop: pattern: the same failure came back 3 times across T1, T2, T3")
            .count(),
        1,
        "{}",
        r.stderr
    );
    // Its sample is the failure's headline, not the lead-in to the output it quotes.
    assert!(
        r.stderr
            .contains("(`test -f shared.ok` exited 1.): a `LEARNING:`"),
        "{}",
        r.stderr
    );
    assert!(
        !r.stderr.contains("The end of its output:)"),
        "{}",
        r.stderr
    );
    let prompt = std::fs::read_to_string(p.run_dir().join("iterations/0006/prompt.md")).unwrap();
    assert!(
        prompt.contains("## A failure that keeps coming back"),
        "{prompt}"
    );
    let earlier = std::fs::read_to_string(p.run_dir().join("iterations/0004/prompt.md")).unwrap();
    assert!(!earlier.contains("keeps coming back"), "{earlier}");
    assert!(
        p.run(&["status"])
            .stdout
            .contains("pattern: the same failure came back 3 times")
    );
}

/// The kind of work: the plan's words only suggest one that costs iterations or a
/// person's time; the plan's front matter (or `[run] workflow`) takes it. A bug is
/// root-caused first (a DEBUG iteration before each task's work), a library choice
/// waits for a person.
#[test]
fn the_workflow_of_a_plan_sets_its_gates() {
    let bug = "# Fix the crash on an empty name\n\n## T1: Handle the empty name\nVerify: test -f fixed.txt\n";
    let debugging = "if printf '%s' \"$prompt\" | grep -q 'DEBUG: find the cause'; then echo 'UNDERSTANDING: nothing handles it'; else touch fixed.txt; echo TASK_COMPLETE; fi\n";
    // Words alone: suggested, not taken.
    let p = scripted(bug, debugging);
    let r = p.run(&["plan", "check"]);
    assert!(
        r.stdout.contains(
            "workflow feature · suggested: bug (the plan speaks of \"fix\"; it spends one DEBUG iteration finding the cause before each task's fix): `[run] workflow = \"bug\"` or the plan's front matter takes it"
        ),
        "{}",
        r.stdout
    );
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(iteration_kinds(&p), ["work"]);
    assert_eq!(p.status()["workflow"], "feature");
    // Taken by the plan: the cause first.
    let p = scripted(
        &format!("---\nrun:\n  workflow: bug\n---\n{bug}"),
        debugging,
    );
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(iteration_kinds(&p), ["debug", "work"]);
    // Nothing failed yet: the first iteration looks for the cause, not "the repeated
    // failure".
    assert!(
        r.stderr
            .contains("debugging: finding the cause before the fix"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("repeated failure"), "{}", r.stderr);
    let work = std::fs::read_to_string(p.run_dir().join("iterations/0002/prompt.md")).unwrap();
    assert!(work.contains("nothing handles it"), "{work}");
    assert_eq!(p.status()["workflow"], "bug");
    // A library choice by its words: no gate.
    let library = "# Choose a JSON library\n\n## T1: Compare two\nVerify: test -f notes.md\n";
    let p = scripted(library, "touch notes.md\necho TASK_COMPLETE\n");
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // Taken by the plan: approved before anything starts.
    let p = scripted(
        &format!("---\nrun:\n  workflow: library\n---\n{library}"),
        "touch notes.md\necho TASK_COMPLETE\n",
    );
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert_eq!(p.status()["gate"]["point"], "plan");
    // Approved and resumed, it keeps its final review.
    assert_eq!(p.run(&["approve"]).code, Some(0));
    let r = p.run(&["resume", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert_eq!(p.status()["gate"]["point"], "final");
    assert_eq!(p.status()["workflow"], "library");
    // A bug run stopped before its task and resumed still understands first.
    let p = scripted(
        &format!("---\nrun:\n  workflow: bug\ngates:\n  plan_approval: true\n---\n{bug}"),
        debugging,
    );
    assert_eq!(p.run(&["run", "--no-wait"]).code, Some(5));
    assert_eq!(p.run(&["approve"]).code, Some(0));
    let r = p.run(&["resume"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(iteration_kinds(&p), ["debug", "work"]);
}

/// The kind of each iteration the run started, in order.
fn iteration_kinds(p: &crate::support::Project) -> Vec<String> {
    crate::real_cli::journal_events(p)
        .iter()
        .filter(|e| e["kind"] == "iteration_started")
        .map(|e| e["data"]["kind"].as_str().unwrap().to_string())
        .collect()
}

/// `.loop/shape/SHAPE.md` (what a shaping step writes) is read when it exists: its
/// front matter holds the plan's fields, the plan's own win, and the run records the
/// result, so a resume keeps it.
#[test]
fn the_shape_file_sets_what_the_plan_does_not() {
    let p = scripted(
        "# Add a greeting\n\n## T1: Greet\nVerify: test -f fixed.txt\n",
        "if printf '%s' \"$prompt\" | grep -q 'DEBUG: find the cause'; then echo 'UNDERSTANDING: none'; else touch fixed.txt; echo TASK_COMPLETE; fi\n",
    );
    p.write(
        ".loop/shape/SHAPE.md",
        "---\nrun:\n  workflow: bug\nbudgets:\n  task_retries: 3\ncriteria:\n  - \"execution: test -f fixed.txt\"\nmustNot: touch vendor/\n---\n# Shape\n\nA bug, by the shaping.\n",
    );
    let r = p.run(&["plan", "check"]);
    assert!(
        r.stdout.contains("workflow bug"),
        "{}{}",
        r.stdout,
        r.stderr
    );
    // Each setting says where it came from: the shape, not the plan.
    let shown = p.run(&["config", "show"]).stdout;
    assert!(
        shown.contains("budgets.task_retries = 3")
            && shown.contains("# shape .loop/shape/SHAPE.md"),
        "{shown}"
    );
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(iteration_kinds(&p), ["debug", "work"]);
    assert_eq!(p.status()["workflow"], "bug");
    // The plan's own front matter wins.
    p.write(
        "PLAN.md",
        "---\nrun:\n  workflow: feature\n---\n# Add a greeting\n\n## T1: Greet\nVerify: test -f fixed2.txt\n",
    );
    p.write("agent.sh", "touch fixed2.txt\necho TASK_COMPLETE\n");
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.status()["workflow"], "feature");
    // A key the shape has wrong is the shape's error, not the plan's.
    p.write(".loop/shape/SHAPE.md", "---\nrun:\n  workflw: bug\n---\n");
    let r = p.run(&["config", "show"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("shape .loop/shape/SHAPE.md: run.workflw: unknown field")
            && !r.stderr.contains("PLAN.md"),
        "{}",
        r.stderr
    );
    // A shape that does not read is bad input, and nothing starts.
    p.write(".loop/shape/SHAPE.md", "---\nrun: [unclosed\n");
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains(".loop/shape/SHAPE.md"), "{}", r.stderr);
}

/// Workflow C, a refactor: told apart from a feature by the plan's words; every task's
/// prompt says to delete before redesigning and to keep what the code does.
#[test]
fn a_refactor_is_its_own_workflow() {
    let p = scripted(
        "# Refactor and clean up the parser\n\n## T1: Drop the old tokenizer\nVerify: test -f done.txt\n",
        "touch done.txt\necho TASK_COMPLETE\n",
    );
    let r = p.run(&["plan", "check"]);
    assert!(
        r.stdout
            .contains("workflow refactor (the plan speaks of \"refactor\""),
        "{}",
        r.stdout
    );
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.status()["workflow"], "refactor");
    let prompt = std::fs::read_to_string(p.run_dir().join("iterations/0001/prompt.md")).unwrap();
    assert!(
        prompt.contains("## Workflow: refactor") && prompt.contains("Delete before you redesign"),
        "{prompt}"
    );
}

/// Each `NEXT_ACTION_NEEDED` value has an effect: DEBUG gives the task a DEBUG
/// iteration next, VALIDATE is a claim (verified), and a value agentloop does not act
/// on is named in the agent's next prompt.
#[test]
fn the_agents_next_action_is_acted_on_or_named_as_not() {
    let p = scripted(
        "# Two\n\n## T1: One\nVerify: test -f one.txt\n",
        r#"if printf '%s' "$prompt" | grep -q 'DEBUG: find the cause'; then echo 'UNDERSTANDING: it was never made'; exit 0; fi
case "$n" in
  1) echo 'Stuck.'; echo 'NEXT_ACTION_NEEDED: DEBUG' ;;
  3) echo 'NEXT_ACTION_NEEDED: DEPLOY' ;;
  *) touch one.txt; echo 'ACTION_RESULT:'; echo '- status: ready'; echo 'NEXT_ACTION_NEEDED: VALIDATE' ;;
esac
"#,
    );
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(iteration_kinds(&p)[..2], ["work", "debug"]);
    let after_deploy = (1..=6)
        .map(|i| p.run_dir().join(format!("iterations/{i:04}/prompt.md")))
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .find(|t| t.contains("## What agentloop could not act on"))
        .expect("a prompt that names the value");
    assert!(
        after_deploy.contains("`NEXT_ACTION_NEEDED: DEPLOY`")
            && after_deploy.contains("DEBUG (the next iteration"),
        "{after_deploy}"
    );
    assert_eq!(p.status()["tasks"][0]["status"], "done");
}

/// A class 2B task (under five minutes to roll back) keeps a checkpoint of each
/// iteration: a commit of the tree under `refs/agentloop/RUN/checkpoints/`, the tree
/// and the branch untouched, listed in the handoff.
#[test]
fn a_class_2b_task_checkpoints_each_iteration_for_a_rollback() {
    let p = scripted(
        "# Config\n\n## T1: Change the config\nReversibility: 2B\nVerify: test -f two.txt\n",
        "echo \"$n\" > step.txt\nif [ \"$n\" = 2 ]; then touch two.txt; fi\necho TASK_COMPLETE\n",
    );
    let head = p.git_cmd(&["rev-parse", "HEAD"]);
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(
        p.git_cmd(&["rev-parse", "HEAD"]),
        head,
        "the branch is the person's"
    );
    let run = p
        .run_dir()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let refs = p.git_cmd(&[
        "for-each-ref",
        "--format=%(refname)",
        &format!("refs/agentloop/{run}/checkpoints/"),
    ]);
    assert_eq!(
        refs.lines().collect::<Vec<_>>(),
        [
            format!("refs/agentloop/{run}/checkpoints/T1/1"),
            format!("refs/agentloop/{run}/checkpoints/T1/2")
        ]
    );
    // The first checkpoint is the tree after the failed attempt.
    let first = format!("refs/agentloop/{run}/checkpoints/T1/1");
    assert_eq!(
        p.git_cmd(&["show", &format!("{first}:step.txt")]).trim(),
        "1"
    );
    let handoff = std::fs::read_to_string(p.run_dir().join("handoff.md")).unwrap();
    assert!(
        handoff.contains("## Checkpoints (class 2B tasks: to roll back)")
            && handoff.contains("- T1 after iteration 1: `"),
        "{handoff}"
    );
}

/// `[validate] security` and `performance` (seed 004's completion criteria): steps of
/// VALIDATE after every done task's checks, judged as checks; a failing one reopens
/// work with its output, and validation.md names the step.
#[test]
fn validate_runs_the_security_and_performance_steps() {
    let p = crate::support::Scratch::new()
        .plan("# One\n\n## T1: Make a.txt\nVerify: test -f a.txt\n")
        .agent(&crate::support::agent(
            "case \"$task\" in T1) touch a.txt ;; VALIDATE-*) touch audited.txt ;; esac\necho TASK_COMPLETE\n",
        ))
        .config("[validate]\nsecurity = \"test -f audited.txt || { echo 'vulnerable: lodash 4.17.20'; exit 1; }\"\nperformance = \"true\"\n")
        .build();
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["tasks"][1]["id"], "VALIDATE-1", "{s:#}");
    let prompt = std::fs::read_to_string(p.run_dir().join("iterations/0002/prompt.md")).unwrap();
    assert!(prompt.contains("vulnerable: lodash 4.17.20"), "{prompt}");
    let md = std::fs::read_to_string(p.run_dir().join("validation.md")).unwrap();
    assert!(
        md.contains("**passed**")
            && md.contains("(security step) | exit 0")
            && md.contains("| `true` (performance step) | exit 0"),
        "{md}"
    );
}

/// What the agent leaves as `agentloop-debug.log` is its own: a FIFO (or a link, or a
/// device) there is neither read nor removed, so it cannot hang the driver.
#[test]
fn a_debug_log_that_is_not_a_file_does_not_hang_the_driver() {
    let p = scripted(
        "# Fix the crash\n\n## T1: Make fixed.txt\nVerify: test -f fixed.txt\n",
        "if printf '%s' \"$prompt\" | grep -q 'DEBUG: find the cause'; then mkfifo agentloop-debug.log; echo 'UNDERSTANDING: none'; else rm -f agentloop-debug.log; touch fixed.txt; echo TASK_COMPLETE; fi\n",
    );
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(!p.run_dir().join("iterations/0001/debug.log").exists());
}

/// Seed 004's mandatory skills: each phase's are installed before the run starts, and
/// each iteration of that phase is told to use them, with their SKILL.md.
#[test]
fn the_skills_a_phase_requires_must_be_installed_and_are_named_in_its_prompts() {
    let p = Scratch::new()
        .plan("# P\n\n## T1: one\nVerify: test -f one.txt\n")
        .agent(&agent("touch one.txt\necho TASK_COMPLETE\n"))
        .config("[prompt.require_skills]\ndevelop = [\"tdd\"]\nreview = [\"security-review\"]\n")
        .file(
            ".claude/skills/tdd/SKILL.md",
            "---\nname: tdd\n---\nRed, green, refactor.\n",
        )
        .build();
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("[prompt.require_skills] review: the skill `security-review` is not installed (no .claude/skills/security-review/SKILL.md"),
        "{}",
        r.stderr
    );
    assert_eq!(p.run(&["status"]).code, Some(2), "no run was made");
    p.write(
        ".claude/skills/security-review/SKILL.md",
        "---\nname: security-review\n---\nLook for injections.\n",
    );
    p.commit("the review skill");
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let prompt = std::fs::read_to_string(p.run_dir().join("iterations/0001/prompt.md")).unwrap();
    assert!(
        prompt.contains("## Skills this project requires here (develop)")
            && prompt.contains("- `tdd` (.claude/skills/tdd/SKILL.md)")
            && !prompt.contains("security-review"),
        "{prompt}"
    );
    // A required skill tells every later iteration what to do: an agent that removes
    // it changes the verification surface, and a person decides.
    let p = Scratch::new()
        .plan("# P\n\n## T1: one\nVerify: test -f one.txt\n")
        .agent(&agent(
            "rm -rf .claude\ntouch one.txt\necho TASK_COMPLETE\n",
        ))
        .config("[prompt.require_skills]\ndevelop = [\"tdd\"]\n")
        .file(".claude/skills/tdd/SKILL.md", "Red, green, refactor.\n")
        .build();
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert_eq!(p.status()["gate"]["point"], "surface", "{}", r.stderr);
    assert!(
        crate::support::surface_paths(&p.status())
            .iter()
            .any(|f| f == ".claude/skills/tdd/SKILL.md"),
        "{}",
        p.status()
    );
}

/// A required skill is skipped only with a reason, and only one the run requires:
/// later prompts do not name it, and the handoff keeps why.
#[test]
fn a_required_skill_is_skipped_with_its_reason() {
    let p = Scratch::new()
        .plan("# P\n\n## T1: one\nVerify: test -f one.txt\n")
        .agent(&agent("touch one.txt\necho TASK_COMPLETE\n"))
        .config("[gates]\nplan_approval = true\n\n[prompt.require_skills]\ndevelop = [\"tdd\"]\n")
        .file(".claude/skills/tdd/SKILL.md", "Red, green, refactor.\n")
        .build();
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    let r = p.run(&["skip", "--skill", "tdd"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("only with a reason"), "{}", r.stderr);
    let r = p.run(&["skip", "--skill", "lint", "--reason", "x"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("requires no skill \"lint\": the skills it requires: tdd"),
        "{}",
        r.stderr
    );
    let r = p.run(&["skip", "--skill", "tdd", "--reason", "a one-line change"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.run(&["approve"]).code, Some(0));
    let r = p.run(&["resume", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let prompt = std::fs::read_to_string(p.run_dir().join("iterations/0001/prompt.md")).unwrap();
    assert!(!prompt.contains("tdd"), "{prompt}");
    let handoff = std::fs::read_to_string(p.run_dir().join("handoff.md")).unwrap();
    assert!(
        handoff.contains("Required skills skipped: tdd (a one-line change)"),
        "{handoff}"
    );
}

/// The validation failed: its coverage step wrote no report of this run's. No
/// command is blamed for it (they passed), and no fix task is spent on it: no agent
/// can mend the configuration's step.
fn no_fresh_report(p: &crate::support::Project) {
    let r = p.run(&["run", "--no-wait"]);
    assert_ne!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("coverage: the coverage step wrote no report"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("validation cannot pass whatever the agents do")
            && !r.stderr.contains("FAILED on the whole project: `true`"),
        "{}",
        r.stderr
    );
    let tasks = p.status()["tasks"].as_array().unwrap().len();
    assert_eq!(tasks, 1, "a fix task was spent: {}", p.status());
}

/// VALIDATE's coverage (seed 004): the project's coverage step runs on the whole
/// project and its report becomes `coverage.json`; under `coverage_min`, or with no
/// fresh report (one left in the tree is not this run's), the validation fails.
#[test]
fn validate_keeps_the_coverage_report_and_holds_its_minimum() {
    let plan = "# P\n\n## T1: one\nVerify: test -f one.txt\n";
    let go = "printf 'mode: set\\nm/a.go:1.1,2.2 5 1\\nm/a.go:3.1,4.2 1 0\\n' > coverage.out\n";
    let p = Scratch::new()
        .plan(plan)
        .agent(&agent("touch one.txt\necho TASK_COMPLETE\n"))
        .config("[validate]\ncoverage = \"sh cov.sh\"\ncoverage_min = 50\n")
        .file("cov.sh", go)
        .build();
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("coverage: 83.33% of 6 lines covered (go, from coverage.out)"),
        "{}",
        r.stderr
    );
    let cov: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p.run_dir().join("coverage.json")).unwrap())
            .unwrap();
    assert_eq!(cov["lines"]["percent"], 83.33);
    assert_eq!(cov["files"][0]["path"], "m/a.go");
    assert!(!p.path().join("coverage.out").exists(), "ran on a copy");
    // A report in the tree, and a step that writes none: not this run's coverage.
    let p = Scratch::new()
        .plan(plan)
        .agent(&agent("touch one.txt\necho TASK_COMPLETE\n"))
        .config("[validate]\ncoverage = \"true\"\n")
        .file("coverage.out", "mode: set\nm/a.go:1.1,2.2 5 1\n")
        .build();
    no_fresh_report(&p);
    assert!(!p.run_dir().join("coverage.json").exists());
    // Nor one whose time was set ahead to pass for fresh, outside a clean copy.
    let p = Scratch::new()
        .plan(plan)
        .agent(&agent(
            "touch one.txt\nprintf 'mode: set\\nm/a.go:1.1,2.2 5 1\\n' > coverage.out\ntouch -d tomorrow coverage.out\necho TASK_COMPLETE\n",
        ))
        .config("[verify]\nvalidate_fixes = 0\nclean_copy = false\n\n[validate]\ncoverage = \"true\"\n")
        .build();
    no_fresh_report(&p);
    // A report that counts no line says nothing about a minimum.
    let p = Scratch::new()
        .plan(plan)
        .agent(&agent("touch one.txt\necho TASK_COMPLETE\n"))
        .config("[verify]\nvalidate_fixes = 0\n\n[validate]\ncoverage = \"printf 'mode: set\\\\n' > coverage.out\"\ncoverage_min = 50\n")
        .build();
    let r = p.run(&["run", "--no-wait"]);
    assert_ne!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains("a report that counts no line"),
        "{}",
        r.stderr
    );
    // Settings that cannot mean anything are refused before anything runs.
    let base = p
        .read("agentloop.toml")
        .split("[verify]")
        .next()
        .unwrap()
        .to_string();
    for (config, says) in [
        (
            "coverage = \"true\"\ncoverage_min = 150\n",
            "must be a percent, from 0 to 100",
        ),
        ("coverage_min = 50\n", "set `[validate] coverage` too"),
        ("coverage = \" \"\n", "is an empty command"),
    ] {
        p.write("agentloop.toml", format!("{base}\n[validate]\n{config}"));
        let r = p.run(&["plan", "check"]);
        assert_eq!(r.code, Some(2), "{config}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{config}: {}", r.stderr);
    }
}

/// A DEBUG iteration the agent asked for says so, not that a failure repeated.
#[test]
fn a_debug_iteration_the_agent_asked_for_is_named_as_asked() {
    let p = scripted(
        "# Debug\n\n## T1: Make fixed.txt\nVerify: test -f fixed.txt\n",
        r#"if printf '%s' "$prompt" | grep -q 'DEBUG: find the cause'; then
  echo 'UNDERSTANDING:'
  echo 'Nothing makes fixed.txt yet.'
elif [ -f asked.txt ]; then
  touch fixed.txt
  echo TASK_COMPLETE
else
  touch asked.txt
  echo 'NEXT_ACTION_NEEDED: DEBUG'
fi
"#,
    );
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("debugging, as asked"), "{}", r.stderr);
    assert!(!r.stderr.contains("repeated failure"), "{}", r.stderr);
}
