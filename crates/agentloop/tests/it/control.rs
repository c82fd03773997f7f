//! Control from another process while a real driver runs: stop, stop --now, pause and
//! resume, gates, blocked tasks, breakers, budgets, replans, locks and killed drivers.

use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

use crate::support::{Scratch, agent, alive, journal_has, scripted, started, wait_exit, wait_for};

const TWO_TASKS: &str = "# Two\n\n## T1: First\nVerify: test -f one.txt\n\n## T2: Second\nDepends: T1\nVerify: test -f two.txt\n";

#[test]
fn stop_now_kills_the_agent_group_and_the_run_is_stopped() {
    // The agent starts a grandchild too; both must die.
    let p = scripted(
        TWO_TASKS,
        "sleep 60 &\necho $! > .git/agent-state/grandchild\nsleep 60\n",
    );
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    wait_for(&p, "the agent to start", |p| {
        p.path().join(".git/agent-state/grandchild").exists()
    });
    let pid = crate::support::pid_in(&p, ".git/agent-state/pid");
    let grandchild = crate::support::pid_in(&p, ".git/agent-state/grandchild");
    let t = Instant::now();
    let r = p.run(&["stop", "--now"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let st = wait_exit(&mut driver, Duration::from_secs(15));
    assert_eq!(st.code(), Some(6), "a stopped run exits 6");
    assert!(
        t.elapsed() < Duration::from_secs(8),
        "stop --now took {:?}",
        t.elapsed()
    );
    assert!(
        !alive(&pid) && !alive(&grandchild),
        "the agent's process group is gone"
    );
    let s = p.status();
    assert_eq!(s["status"], "stopped");
    assert_eq!(s["tasks"][0]["status"], "pending");
}

#[test]
fn stop_waits_for_the_current_iteration() {
    let p = scripted(
        TWO_TASKS,
        "sleep 1\ntouch one.txt two.txt\necho TASK_COMPLETE\n",
    );
    let mut driver = started(&p);
    assert_eq!(p.run(&["stop"]).code, Some(0));
    let st = wait_exit(&mut driver, Duration::from_secs(20));
    assert_eq!(st.code(), Some(6));
    let s = p.status();
    assert_eq!(s["status"], "stopped");
    // The iteration in flight was finished and verified, not thrown away.
    assert_eq!(s["tasks"][0]["status"], "done");
    assert_eq!(s["tasks"][1]["status"], "pending");
    // A stopped run can be resumed to the end.
    let r = p.run(&["resume", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.status()["status"], "completed");
}

#[test]
fn pause_then_resume_from_another_process() {
    let p = scripted(
        TWO_TASKS,
        "sleep 0.5\ntouch one.txt two.txt\necho TASK_COMPLETE\n",
    );
    let mut driver = started(&p);
    assert_eq!(p.run(&["pause"]).code, Some(0));
    wait_for(&p, "the run to pause", |p| p.status()["status"] == "paused");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        p.status()["iterations"],
        1,
        "no iteration starts while paused"
    );
    let second = p.run(&["pause"]);
    assert!(
        second.stderr.contains("already paused"),
        "{}",
        second.stderr
    );
    let r = p.run(&["resume"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("resume requested"), "{}", r.stderr);
    let st = wait_exit(&mut driver, Duration::from_secs(20));
    assert_eq!(st.code(), Some(0));
    assert_eq!(p.status()["status"], "completed");
}

#[test]
fn a_second_driver_is_refused_with_the_holders_pid() {
    let p = scripted(
        TWO_TASKS,
        "sleep 2\ntouch one.txt two.txt\necho TASK_COMPLETE\n",
    );
    let mut driver = started(&p);
    let r = p.run(&["resume"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr
            .contains(&format!("is already driven by pid {}", driver.id())),
        "{}",
        r.stderr
    );
    let _ = p.run(&["stop", "--now"]);
    wait_exit(&mut driver, Duration::from_secs(15));
}

#[test]
fn a_killed_driver_is_taken_over_and_the_run_completes() {
    let p = scripted(TWO_TASKS, "sleep 30\n");
    let mut driver = started(&p);
    let agent_pid = crate::support::pid_in(&p, ".git/agent-state/pid");
    driver.kill().unwrap();
    driver.wait().unwrap();
    wait_for(&p, "the orphaned agent to die", |_| !alive(&agent_pid));
    // Now a working agent: the resumed run aborts the dead iteration and redoes it.
    p.write(
        "agent.sh",
        agent("touch one.txt two.txt\necho TASK_COMPLETE\n"),
    );
    p.commit("fix agent");
    let r = p.run(&["resume"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("is gone; taking over"), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["status"], "completed");
    let log = p.run(&["log"]).stdout;
    assert!(
        log.contains("Aborted · the iteration was interrupted before the agent finished"),
        "{log}"
    );
}

#[test]
fn sigint_exits_130_and_resume_finishes() {
    let p = scripted(TWO_TASKS, "trap 'exit 130' INT\nsleep 30 & wait\n");
    let mut driver = started(&p);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(driver.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let st = wait_exit(&mut driver, Duration::from_secs(20));
    assert_eq!(st.code(), Some(130), "signal {:?}", st.signal());
    assert_eq!(
        p.status()["status"],
        "running",
        "an interrupted run is not finished"
    );
    p.write(
        "agent.sh",
        agent("touch one.txt two.txt\necho TASK_COMPLETE\n"),
    );
    p.commit("fix agent");
    assert_eq!(p.run(&["resume", "--quiet"]).code, Some(0));
    assert_eq!(p.status()["status"], "completed");
}

#[test]
fn gate_after_a_task_waits_for_approval() {
    let plan = "# Gate\n\n## T1: First\nVerify: test -f one.txt\nGate: after\n\n## T2: Second\nDepends: T1\nVerify: test -f two.txt\n";
    let p = scripted(plan, "touch one.txt two.txt\necho TASK_COMPLETE\n");
    let r = p.run(&["run", "--no-wait", "--quiet"]);
    assert_eq!(
        r.code,
        Some(5),
        "waiting for a person exits 5: {}",
        r.stderr
    );
    let s = p.status();
    assert_eq!(s["status"], "waiting");
    assert_eq!(s["needs_attention"], true);
    assert_eq!(s["gate"]["point"], "after_task");
    // Interactive: the driver waits, a person approves from elsewhere, it goes on.
    let mut driver = p.cmd(&["resume", "--quiet"]).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(400));
    assert!(
        driver.try_wait().unwrap().is_none(),
        "the driver waits at the gate"
    );
    let a = p.run(&["approve", "--note", "looks good"]);
    assert_eq!(a.code, Some(0), "{}", a.stderr);
    let st = wait_exit(&mut driver, Duration::from_secs(20));
    assert_eq!(st.code(), Some(0));
    assert_eq!(p.status()["status"], "completed");
    assert!(journal_has(
        &p,
        "\"action\":\"approve\",\"note\":\"looks good\""
    ));
}

#[test]
fn approve_without_a_gate_is_refused() {
    let p = Scratch::new()
        .plan(TWO_TASKS)
        .agent(&agent("touch one.txt two.txt\necho TASK_COMPLETE\n"))
        .config("[gates]\nfinal_review = true\n")
        .build();
    assert_eq!(p.run(&["run", "--no-wait", "--quiet"]).code, Some(5));
    let r = p.run(&["reject"]);
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr.contains("a rejection needs a reason"),
        "{}",
        r.stderr
    );
    assert_eq!(p.run(&["approve"]).code, Some(0));
    assert_eq!(
        p.status()["status"],
        "running",
        "approve without a driver only records; resume drives"
    );
    assert_eq!(p.run(&["resume", "--quiet"]).code, Some(0));
    assert_eq!(p.status()["status"], "completed");
    let r = p.run(&["approve"]);
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("is completed"), "{}", r.stderr);
}

#[test]
fn blocked_question_waits_then_retry_with_a_note() {
    let body = r#"case "$task$prompt" in
T2*) touch two.txt; echo TASK_COMPLETE ;;
*"Use sqlite"*) touch one.txt; echo TASK_COMPLETE ;;
*) echo "BLOCKED: Which database should I use?" ;;
esac
"#;
    let p = scripted(TWO_TASKS, body);
    let r = p.run(&["run", "--no-wait", "--quiet"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["status"], "blocked");
    assert_eq!(
        s["tasks"][0]["blocked"],
        "the agent asks: Which database should I use?"
    );
    // A secret typed into the note, in no environment variable, is written nowhere.
    assert_eq!(
        p.run(&[
            "steer",
            "Use sqlite; the admin password=Tr0ub4dor&3 and key AKIAIOSFODNN7EXAMPLE"
        ])
        .code,
        Some(0)
    );
    assert_eq!(p.run(&["retry", "T1"]).code, Some(0));
    let r = p.run(&["resume", "--quiet", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.status()["status"], "completed");
    let journal = std::fs::read_to_string(p.run_dir().join("journal.jsonl")).unwrap();
    let prompt = std::fs::read_to_string(p.run_dir().join("iterations/0002/prompt.md")).unwrap();
    let log = p.run(&["log"]).stdout;
    for (what, text) in [("journal", &journal), ("prompt", &prompt), ("log", &log)] {
        assert!(
            !text.contains("Tr0ub4dor") && !text.contains("AKIAIOSFODNN7EXAMPLE"),
            "{what}: {text}"
        );
    }
    assert!(prompt.contains("password=[REDACTED:password]"), "{prompt}");
}

#[test]
fn a_stuck_agent_trips_the_breaker_and_blocks() {
    // Never changes anything, never claims completion.
    let p = Scratch::new()
        .plan(TWO_TASKS)
        .agent(&agent("echo 'still thinking'\n"))
        .config("[budgets]\nmax_replans = 0\n")
        .build();
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(4), "a breaker exits 4: {}", r.stderr);
    assert!(
        r.stderr
            .contains("no change in the working tree for 3 iterations; next: block it"),
        "{}",
        r.stderr
    );
    let s = p.status();
    assert_eq!(s["status"], "blocked");
    assert_eq!(s["iterations"], 3, "stopped after three wasted iterations");
}

#[test]
fn a_spent_budget_pauses_the_run_and_a_top_up_goes_on() {
    let p = scripted(
        TWO_TASKS,
        "echo \"try $n\" > attempt.txt\necho TASK_COMPLETE\n",
    );
    let r = p.run(&["run", "--no-wait", "--quiet", "--max-iterations", "2"]);
    assert_eq!(r.code, Some(3), "{}", r.stderr);
    let s = p.status();
    assert_eq!(
        s["status"], "paused",
        "a budget pauses, it does not end the run"
    );
    assert_eq!(s["iterations"], 2);
    assert_eq!(s["budget_spent"], "budget spent: iterations 2 of 2");
    assert!(s["finished"].is_null());
    // Bad amounts change nothing.
    let r = p.run(&["resume", "--iterations", "+0"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    let r = p.run(&["resume", "--budget", "lots"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    for (flag, v) in [
        ("--budget", "+0.001"),
        ("--budget", "+1e30"),
        ("--tokens", "+inf"),
        ("--tokens", "+1e30"),
        ("--tokens", "+0.2"),
        ("--time", "+0s"),
        ("--time", "+5000y"),
    ] {
        let r = p.run(&["resume", flag, v]);
        assert_eq!(r.code, Some(2), "{flag} {v}: {}", r.stderr);
        assert!(r.stderr.contains("is not an amount to add"), "{}", r.stderr);
    }
    assert!(!p.run(&["log"]).stdout.contains("topped up"));
    assert_eq!(p.status()["iterations"], 2);
    // A top-up is journaled and the run goes on from where it paused.
    let r = p.run(&["resume", "--iterations", "+1", "--quiet"]);
    assert_eq!(r.code, Some(3), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["iterations"], 3);
    assert_eq!(s["budget_spent"], "budget spent: iterations 3 of 3");
    assert!(
        p.run(&["log"])
            .stdout
            .contains("budgets topped up: +1 iteration (from cli)"),
        "{}",
        p.run(&["log"]).stdout
    );
}

#[test]
fn replan_splits_a_task_and_keeps_its_checks() {
    let plan = "# Replan\n\n## T1: Everything at once\nVerify: test -f a.txt && test -f b.txt\n";
    let body = r#"case "$task" in
T1) printf 'This is two tasks.\nREPLAN\n## T1a: Part A\nVerify: test -f a.txt\n\n## T1b: Part B\nDepends: T1a\n' ;;
T1a) touch a.txt; echo TASK_COMPLETE ;;
T1b) touch b.txt; echo TASK_COMPLETE ;;
esac
"#;
    let p = scripted(plan, body);
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("replan accepted (plan v2): T1 → T1a, T1b"),
        "{}",
        r.stderr
    );
    let s = p.status();
    assert_eq!(s["plan"]["version"], 2);
    let ids: Vec<&str> = s["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["T1a", "T1b"]);
    let v2 = std::fs::read_to_string(p.run_dir().join("plan/v2.md")).unwrap();
    assert!(
        v2.contains("## T1b: Part B\n\nDepends: T1a\nVerify: test -f a.txt && test -f b.txt"),
        "{v2}"
    );
}

#[test]
fn tdd_mode_requires_a_test_change() {
    let plan = "# TDD\n\n## T1: Feature\nVerify: test -f feature.txt\n";
    let body = r#"touch feature.txt
if [ "$n" -ge 2 ]; then mkdir -p tests; echo ok > tests/feature_test.sh; fi
echo TASK_COMPLETE
"#;
    let p = scripted(plan, body);
    let r = p.run(&["run", "--mode", "tdd", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let log = p.run(&["log"]).stdout;
    assert!(
        log.contains("tdd mode: verification passes but no test file was changed"),
        "{log}"
    );
    assert_eq!(p.status()["tasks"][0]["iterations"], 2);
}

#[test]
fn log_follow_prints_events_until_the_run_ends() {
    let p = scripted(
        TWO_TASKS,
        "sleep 0.3\ntouch one.txt two.txt\necho TASK_COMPLETE\n",
    );
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    wait_for(&p, "the run to start", |p| {
        p.path().join(".git/agent-state/pid").exists()
    });
    let follow = p
        .cmd(&["log", "--follow", "--json"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert_eq!(
        wait_exit(&mut driver, Duration::from_secs(20)).code(),
        Some(0)
    );
    let out = follow.wait_with_output().unwrap();
    let kinds: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["event"]["kind"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(kinds.first().map(String::as_str), Some("run_created"));
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("run_finished"),
        "--follow ends with the run"
    );
    assert_eq!(
        kinds.iter().filter(|k| *k == "iteration_finished").count(),
        2
    );
}

#[test]
fn agents_get_an_allow_listed_environment() {
    let p = Scratch::new()
        .plan("# E\n\n## T1: Env\nVerify: test -f one.txt\n")
        .agent(&agent(
            "env | sort > .git/agent-state/env\ntouch one.txt\necho TASK_COMPLETE\n",
        ))
        .config("[agents.scripted.env]\nGIVEN = \"yes\"\n")
        .build();
    let r: crate::support::Run = p
        .cmd(&["run", "--quiet"])
        .env("UNRELATED_SETTING", "should-not-pass")
        .env("LC_ALL", "C")
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let env = p.read(".git/agent-state/env");
    assert!(env.lines().any(|l| l.starts_with("PATH=")), "{env}");
    assert!(
        env.contains("LC_ALL=C") && env.contains("GIVEN=yes"),
        "{env}"
    );
    assert!(!env.contains("UNRELATED_SETTING"), "{env}");
    // pass_env lets more through.
    p.write(
        "agentloop.toml",
        format!(
            "{}pass_env = [\"UNRELATED_*\"]\n",
            p.read("agentloop.toml")
                .replace("[agents.scripted.env]\nGIVEN = \"yes\"\n", "")
        ),
    );
    p.commit("pass more");
    let r: crate::support::Run = p
        .cmd(&["run", "--quiet"])
        .env("UNRELATED_SETTING", "passes")
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        p.read(".git/agent-state/env")
            .contains("UNRELATED_SETTING=passes")
    );
}

#[test]
fn step_mode_takes_one_decision_at_a_time() {
    let p = scripted(
        TWO_TASKS,
        "case $task in T1) touch one.txt ;; T2) touch two.txt ;; esac\necho TASK_COMPLETE\n",
    );
    // The first step takes the test baseline (where what the checks read is traced).
    let r = p.run(&["run", "--step", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains("agentloop: did take the test baseline"),
        "{}",
        r.stderr
    );
    let r = p.run(&["next", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains("agentloop: did iteration 1: task"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("agentloop: next: verify iteration 1"),
        "{}",
        r.stderr
    );
    let s = p.status();
    assert_eq!(
        (s["iterations"].as_u64(), s["tasks"][0]["status"].as_str()),
        (Some(1), Some("running"))
    );
    let r = p.run(&["next", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("did verify iteration 1"), "{}", r.stderr);
    assert!(r.stderr.contains("next: iteration 2: task"), "{}", r.stderr);
    assert_eq!(p.status()["tasks"][0]["status"], "done");
    // Three more steps finish the plan (the last validates the whole project); then
    // there is nothing to do.
    assert_eq!(p.run(&["next", "--quiet"]).code, Some(0));
    let r = p.run(&["next", "--quiet"]);
    assert!(r.stderr.contains("did verify iteration 2"), "{}", r.stderr);
    assert!(
        r.stderr.contains("next: validate the whole project"),
        "{}",
        r.stderr
    );
    let r = p.run(&["next", "--quiet"]);
    assert!(
        r.stderr.contains("did validate the whole project"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("next: nothing: the run is completed"),
        "{}",
        r.stderr
    );
    assert_eq!(p.status()["status"], "completed");
}

#[test]
fn every_prompt_names_the_projects_own_instructions() {
    let p = crate::support::Scratch::new()
        .plan("# C\n\n## T1: One\nVerify: test -f one.txt\n")
        .agent(&crate::support::agent(
            "touch one.txt\necho TASK_COMPLETE\n",
        ))
        .file("AGENTS.md", "Use tabs.\n")
        .file("docs/STYLE.md", "Short names.\n")
        .config("[prompt]\ncontext = [\"docs/STYLE.md\", \"docs/GONE.md\"]\n")
        .build();
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let prompt = std::fs::read_to_string(p.run_dir().join("iterations/0001/prompt.md")).unwrap();
    assert!(
        prompt.contains("Read first, before you change anything: `AGENTS.md`, `docs/STYLE.md` (the project's own instructions)."),
        "{prompt}"
    );
    assert!(
        !prompt.contains("GONE"),
        "a file that is not there is not named"
    );
}
