//! Criteria with their kinds of evidence, and the verdict a run ends with: SHIP when
//! every criterion was run, measured or confirmed by a person; MONITOR when something
//! rests on the agent's word; RESEARCH when something is only assumed.

use crate::support::{Project, Scratch, agent};

const BENCH: &str = "echo \"p95: $(cat latency.txt 2>/dev/null || echo 999ms)\"\n";

fn project(plan: &str, script: &str) -> Project {
    Scratch::new()
        .plan(plan)
        .agent(&agent(script))
        .file("bench.sh", BENCH)
        .build()
}

fn summary(p: &Project) -> String {
    std::fs::read_to_string(p.run_dir().join("summary.md")).unwrap()
}

/// A check that writes its one test's result as JUnit to `$AGENTLOOP_TEST_REPORT`:
/// `sh has.sh FILE` passes when FILE exists.
const HAS: &str = r#"if test -f "$1"; then c="<testcase classname=\"files\" name=\"$1\"/>"; r=0; else c="<testcase classname=\"files\" name=\"$1\"><failure message=\"no $1\"/></testcase>"; r=1; fi
printf '<testsuites><testsuite name="files">%s</testsuite></testsuites>' "$c" > "$AGENTLOOP_TEST_REPORT"
exit $r
"#;

#[test]
fn every_criterion_verified_is_a_ship_verdict_with_its_evidence() {
    let plan = "---\ncriteria:\n  - \"execution: test -f a.txt\"\n---\n# Fast\n\n## T1: Make a.txt\nVerify: test -f a.txt\nCriteria: measurement: p95 < 100ms by sh bench.sh\n\n## T2: Make b.txt\nDepends: T1\nCriteria: execution: sh has.sh b.txt\nTests: files::b.txt\n";
    let p = Scratch::new()
        .plan(plan)
        .agent(&agent(
            "case \"$task\" in T1) touch a.txt; echo 87ms > latency.txt ;; T2) touch b.txt ;; esac\necho TASK_COMPLETE\n",
        ))
        .file("bench.sh", BENCH)
        .file("has.sh", HAS)
        .build();
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("verdict: SHIP"), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["verdict"], "SHIP", "{s}");
    let md = summary(&p);
    assert!(md.contains("**Verdict: SHIP**"), "{md}");
    assert!(
        md.contains("| T1 | measurement | p95 < 100ms (by `sh bench.sh`) | verified | measured 87ms in iteration 1 |"),
        "{md}"
    );
    assert!(
        md.contains("| T2 | execution | `sh has.sh b.txt` passes | verified | junit ($AGENTLOOP_TEST_REPORT): 1 test: 1 passed in iteration 2 |"),
        "{md}"
    );
    assert!(
        md.contains("| T2 | tests | its named tests pass, and every test that passed at the baseline still does | verified | FAIL_TO_PASS 1/1; PASS_TO_PASS: 0 tests still pass in iteration 2 |"),
        "{md}"
    );
    assert!(
        md.contains("| (run) | execution | `test -f a.txt` passes | verified | passed with each of the 2 tasks done |"),
        "{md}"
    );
    // The run's criterion is one of every task's checks.
    let prompt = std::fs::read_to_string(p.run_dir().join("iterations/0002/prompt.md")).unwrap();
    assert!(prompt.contains("- `test -f a.txt`"), "{prompt}");
}

#[test]
fn checks_that_pass_by_their_exit_code_alone_are_a_monitor_verdict_that_says_so() {
    let plan = "# Files\n\n## T1: Make a.txt\nVerify: test -f a.txt\n";
    let p = project(plan, "touch a.txt\necho TASK_COMPLETE\n");
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["verdict"], "MONITOR", "{s}");
    assert_eq!(s["tasks"][0]["evidence"]["exit_code_only"], true, "{s}");
    let md = summary(&p);
    assert!(
        md.contains("| T1 | tests | every test that passed at the baseline still passes | exit code only | exit code only: no per-test evidence (no check's runner gave a report) |"),
        "{md}"
    );
    let text = p.run(&["status"]).stdout;
    assert!(
        text.contains("tests: exit code only: no per-test evidence"),
        "{text}"
    );
}

#[test]
fn a_measurement_out_of_bounds_fails_the_task_until_it_holds() {
    let plan = "# Fast\n\n## T1: Be fast\nCriteria: measurement: p95 < 100ms by sh bench.sh\n";
    let p = project(
        plan,
        "if printf '%s' \"$prompt\" | grep -q 'wants p95 < 100ms'; then echo 0.08s > latency.txt; else echo 130ms > latency.txt; fi\necho TASK_COMPLETE\n",
    );
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["iterations"], 2);
    let events = crate::real_cli::journal_events(&p);
    let first = events
        .iter()
        .find(|e| e["kind"] == "verify_finished")
        .unwrap();
    assert_eq!(first["data"]["passed"], false);
    assert!(
        first["data"]["digest"].as_str().unwrap().contains(
            "`sh bench.sh` passed but measured p95 = 130ms; the criterion wants p95 < 100ms"
        ),
        "{first}"
    );
    assert!(summary(&p).contains("measured 0.08s in iteration 2"));
    assert_eq!(s["verdict"], "SHIP");
}

#[test]
fn an_observation_waits_for_a_person_and_an_assumption_makes_it_research() {
    let plan = "# Greeting\n\n## T1: Greet\nVerify: test -f hello.txt\nCriteria: observation: the greeting reads well\nCriteria: assumption: users have UTF-8 terminals\n";
    let p = project(
        plan,
        "echo 'Hello, world' > hello.txt\necho TASK_COMPLETE\n",
    );
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert_eq!(p.status()["gate"]["point"], "after_task");
    let prompt = std::fs::read_to_string(p.run_dir().join("iterations/0001/prompt.md")).unwrap();
    assert!(
        prompt.contains("the greeting reads well (a person will confirm it)")
            && prompt.contains("users have UTF-8 terminals (assumed)"),
        "{prompt}"
    );
    let r = p.run(&["approve"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // Work that rests on an assumption is not declared done on its own: the final
    // review waits for a person to accept it (seed 002: no exit signal on one).
    let r = p.run(&["resume", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert_eq!(p.status()["gate"]["point"], "final", "{}", r.stderr);
    assert_eq!(p.run(&["approve"]).code, Some(0));
    let r = p.run(&["resume"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("verdict: RESEARCH"), "{}", r.stderr);
    // Who passed the gate is recorded: user@host for the CLI.
    let approvals = p.status()["approvals"].clone();
    let who = approvals[0].as_str().unwrap_or_default();
    assert!(
        who.starts_with("after T1 by ") && who.contains('@'),
        "{approvals}"
    );
    let handoff = std::fs::read_to_string(p.run_dir().join("handoff.md")).unwrap();
    assert!(handoff.contains(&format!("- Approved: {who}")), "{handoff}");
    let md = summary(&p);
    assert!(
        md.contains("| T1 | observation | the greeting reads well | verified | a person confirmed it at the gate after the task |"),
        "{md}"
    );
    assert!(
        md.contains(
            "| T1 | assumption | users have UTF-8 terminals | assumed | assumed, never verified |"
        ),
        "{md}"
    );
}

#[test]
fn a_task_done_on_the_agents_word_is_a_monitor_verdict_with_the_risks_it_reported() {
    let p = project(
        "# Trust me\n\n## T1: Do it\n",
        "echo 'RISK: the cache is never invalidated'\necho 'ALTERNATIVE: a TTL of one hour'\necho TASK_COMPLETE\n",
    );
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.status()["verdict"], "MONITOR");
    let md = summary(&p);
    assert!(
        md.contains("| T1 | review | done, as the agent said | review only | nothing checks it: the agent's word |"),
        "{md}"
    );
    assert!(
        md.contains(
            "- T1 risk: the cache is never invalidated\n- T1 alternative: a TTL of one hour"
        ),
        "{md}"
    );
    let human = p.run(&["status"]).stdout;
    assert!(human.contains("verdict: MONITOR"), "{human}");
}

/// The agent cannot fake a measurement by rewriting the command that measures: the
/// script is one of the checks' files, and the change waits for a person.
#[test]
fn rewriting_the_measuring_script_is_caught() {
    let plan = "# Fast\n\n## T1: Be fast\nCriteria: measurement: p95 < 100ms by sh bench.sh\n";
    let p = project(
        plan,
        "echo 'echo p95: 1ms' > bench.sh\necho TASK_COMPLETE\n",
    );
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["gate"]["point"], "surface", "{s}");
    assert_ne!(s["tasks"][0]["status"], "done");
}

#[test]
fn a_criterion_that_does_not_read_is_refused_with_its_line() {
    let p = project(
        "# Bad\n\n## T1: x\nCriteria: guess: it works\n",
        "echo TASK_COMPLETE\n",
    );
    let r = p.run(&["plan", "check"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("PLAN.md:4: Criteria: `guess` is not a kind of criterion"),
        "{}",
        r.stderr
    );
}
