//! `resume` keeps the run's settings, takes over a killed driver without its leftovers,
//! and never drives a hook-mode run headlessly unless asked.

use std::time::Duration;

use crate::real_cli::journal_events;
use crate::support::{PRELUDE, Scratch, alive, scripted, wait_exit, wait_for};

const THREE: &str = "# Three\n\n## T1: A\nVerify: test -f T1.txt\n\n## T2: B\nDepends: T1\nVerify: test -f T2.txt\n\n## T3: C\nDepends: T2\nVerify: test -f T3.txt\n";

#[test]
fn resume_keeps_the_runs_flags_and_ends_what_a_killed_driver_left() {
    // The configured default agent is `b`, which would leave a mark; the run is
    // started with `--agent a --max-iterations 2`.
    let a = format!(
        "{PRELUDE}if [ ! -f .git/killed-once ]; then touch .git/killed-once; sleep 60 & echo $! > .git/grandchild; wait; fi\ntouch $task.txt\necho TASK_COMPLETE\n"
    );
    let p = Scratch::new()
        .plan(THREE)
        .file("agent-a.sh", &a)
        .config("[run]\nagent = \"b\"\n\n[agents.a]\ncommand = [\"sh\", \"agent-a.sh\"]\n\n[agents.b]\ncommand = [\"sh\", \"-c\", \"touch b-was-used; cat >/dev/null\"]\n")
        .build();
    let mut driver = p
        .cmd(&["run", "--agent", "a", "--max-iterations", "2", "--quiet"])
        .spawn()
        .unwrap();
    wait_for(&p, "the agent's helper to start", |p| {
        p.path().join(".git/grandchild").exists()
    });
    let grandchild = crate::support::pid_in(&p, ".git/grandchild");
    driver.kill().unwrap();
    driver.wait().unwrap();
    assert!(alive(&grandchild), "the helper outlived the killed driver");
    let r = p.run(&["resume"]);
    assert!(
        r.stderr
            .contains("ended 1 process left behind by the interrupted iteration 1"),
        "{}",
        r.stderr
    );
    assert!(!alive(&grandchild), "the takeover ended the helper");
    assert!(
        !p.path().join("b-was-used").exists(),
        "resume used the run's --agent"
    );
    assert_eq!(
        r.code,
        Some(3),
        "the run's --max-iterations 2 held: {}",
        r.stderr
    );
    let s = p.status();
    assert_eq!(s["budget_spent"], "budget spent: iterations 2 of 2");
    assert_eq!(s["iterations"], 3, "the aborted iteration did not count");
    assert_eq!(s["tasks"][1]["status"], "done");
    assert_eq!(s["tasks"][2]["status"], "pending");
}

#[test]
fn a_flag_given_to_resume_overrides_the_runs_own_and_is_recorded() {
    let p = scripted(THREE, "touch $task.txt\necho TASK_COMPLETE\n");
    assert_eq!(
        p.run(&["run", "--max-iterations", "1", "--mode", "quick", "--quiet"])
            .code,
        Some(3)
    );
    let r = p.run(&["resume", "--max-iterations", "5", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let started: Vec<serde_json::Value> = journal_events(&p)
        .into_iter()
        .filter(|e| e["kind"] == "driver_started")
        .collect();
    assert_eq!(started.len(), 2);
    let flags = &started[1]["data"]["settings"]["flags"];
    assert_eq!(flags["budgets"]["max_iterations"], 5);
    assert_eq!(flags["run"]["mode"], "quick", "the run's own flag is kept");
}

#[test]
fn a_hook_mode_run_is_not_driven_headlessly_unless_asked() {
    let p = scripted(THREE, "touch $task.txt\necho TASK_COMPLETE\n");
    assert_eq!(p.run(&["hook", "start"]).code, Some(0));
    let before = p.tree();
    let r = p.run(&["resume"]);
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr
            .contains("is a hook-mode run: it goes on in its Claude Code session"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("`agentloop resume --headless`"),
        "{}",
        r.stderr
    );
    assert!(p.tree() == before, "a refused resume changes nothing");
    let mut headless = p.cmd(&["resume", "--headless", "--quiet"]).spawn().unwrap();
    let st = wait_exit(&mut headless, Duration::from_secs(30));
    assert_eq!(st.code(), Some(0));
    assert_eq!(p.status()["status"], "completed");
}

/// The top-ups the journal holds, as `log` shows them.
fn top_ups(p: &crate::support::Project) -> usize {
    p.run(&["log"]).stdout.matches("budgets topped up").count()
}

#[test]
fn a_refused_resume_records_nothing_and_two_at_once_add_only_what_they_report() {
    let p = scripted(THREE, "touch $task.txt\necho TASK_COMPLETE\n");
    assert_eq!(
        p.run(&["run", "--max-iterations", "1", "--quiet"]).code,
        Some(3)
    );
    // Two resumes with a top-up at once: one drives; the other either finds it
    // driving (its top-up reaches that driver) or loses the lock and adds nothing.
    let mut both: Vec<_> = (0..2)
        .map(|_| {
            p.cmd(&["resume", "--iterations", "+1", "--quiet"])
                .spawn()
                .unwrap()
        })
        .collect();
    let codes: Vec<_> = both
        .iter_mut()
        .map(|c| wait_exit(c, Duration::from_secs(60)).code())
        .collect();
    let reported = codes.iter().filter(|c| **c != Some(2)).count();
    assert!(reported >= 1, "one of them drove the run: {codes:?}");
    assert_eq!(
        top_ups(&p),
        reported,
        "only the resumes that did not fail added to the budget: {codes:?}"
    );
    // A run that is completed: the resume is refused, and its top-up with it.
    let r = p.run(&["resume", "--iterations", "+5", "--quiet"]);
    if p.status()["status"] != "completed" {
        assert_eq!(r.code, Some(0), "{}", r.stderr);
    }
    assert_eq!(p.status()["status"], "completed");
    let before = top_ups(&p);
    let r = p.run(&["resume", "--iterations", "+20"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("is completed"), "{}", r.stderr);
    assert_eq!(top_ups(&p), before, "a refused resume recorded its top-up");
}
