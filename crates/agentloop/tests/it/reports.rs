//! Reports say what really happened: an agent that crashed or timed out is reported as
//! that wherever a person looks (the console, status, log, progress.md, the next
//! prompt), and counts say how many of what.

use crate::support::{Scratch, agent, scripted};

const ONE: &str = "# One\n\n## T1: First\nVerify: test -f one.txt\n";

#[test]
fn a_crashing_agent_is_reported_as_a_crash_everywhere() {
    // A misspelt script path: `sh` cannot open it and exits 2.
    let p = Scratch::new()
        .plan(ONE)
        .config("[run]\nagent = \"broken\"\n\n[agents.broken]\ncommand = [\"sh\", \"agent/wroker.sh\"]\n")
        .build();
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(
        r.code,
        Some(4),
        "the same crash 3 times is a breaker: {}",
        r.stderr
    );
    let crash = "the agent exited 2 — sh: 0: cannot open agent/wroker.sh: No such file";
    assert_eq!(r.stderr.matches(crash).count(), 3, "{}", r.stderr);
    assert!(!r.stderr.contains("verification failed"), "{}", r.stderr);
    assert!(!r.stderr.contains("no output"), "{}", r.stderr);
    let s = p.status();
    assert_eq!(
        s["iterations"], 3,
        "blocked without a replan: asking a broken agent to replan helps nobody"
    );
    let blocked = s["tasks"][0]["blocked"].as_str().unwrap();
    assert!(
        blocked.starts_with(
            "task T1: the same failure 3 times in a row\nTried: 3 attempts: 1 work, 2 retry"
        ),
        "{blocked}"
    );
    assert!(blocked.contains("cannot open agent/wroker.sh"), "{blocked}");
    assert_eq!(s["tasks"][0]["attempts"], 3);
    let log = p.run(&["log"]).stdout;
    assert!(log.contains("iteration 1 · exit 2 ·"), "{log}");
    assert!(log.contains(crash), "{log}");
    let progress = std::fs::read_to_string(p.run_dir().join("progress.md")).unwrap();
    assert!(
        progress.contains("cannot open agent/wroker.sh"),
        "{progress}"
    );
    let second = std::fs::read_to_string(p.run_dir().join("iterations/0002/prompt.md")).unwrap();
    assert!(
        second.contains(
            "The agent's process failed before its work could be checked: the agent exited 2."
        ),
        "{second}"
    );
    assert!(
        second.contains("sh: 0: cannot open agent/wroker.sh"),
        "{second}"
    );
}

#[test]
fn a_timed_out_agent_is_reported_as_timed_out() {
    let p = Scratch::new()
        .plan(ONE)
        .agent(&agent("echo working; sleep 30\n"))
        .config("[breakers]\nsame_failure = 1\n")
        .build();
    let toml = p
        .read("agentloop.toml")
        .replace("timeout = \"60s\"", "timeout = \"1s\"");
    p.write("agentloop.toml", toml);
    p.commit("one second");
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(4), "{}", r.stderr);
    assert!(
        r.stderr.contains("✗ the agent ran longer than 1s"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("no output"), "{}", r.stderr);
    let log = p.run(&["log"]).stdout;
    assert!(log.contains("iteration 1 · timed out ·"), "{log}");
    let blocked = p.status()["tasks"][0]["blocked"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        blocked.contains("the agent ran longer than 1s"),
        "{blocked}"
    );
}

#[test]
fn counts_say_how_many_of_what() {
    let p = scripted(ONE, "touch one.txt\necho TASK_COMPLETE\n");
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("· 1 task (0 done) ·"), "{}", r.stderr);
    assert!(
        r.stderr.contains("verified (1 command passed)"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains(" · 1/1 task · 1 iteration · "),
        "{}",
        r.stderr
    );
    let log = p.run(&["log"]).stdout;
    assert!(log.contains("passed · 1 command"), "{log}");
    assert!(log.contains("(1 task)"), "{log}");
    assert!(
        p.run(&["plan", "check"])
            .stdout
            .contains("· 1 task · valid")
    );
    let status = p.run(&["status"]).stdout;
    assert!(status.contains("· 1/1 task · 1 iteration ·"), "{status}");
}

/// "attempt N of at most M" is one definition, the same in `status`, `status --json`
/// and the API while a task's second attempt is at work.
#[test]
fn an_attempt_reads_the_same_everywhere() {
    let p = Scratch::new()
        .plan(ONE)
        .agent(&agent(
            "if [ $n -ge 2 ]; then i=0; while [ ! -e .git/agent-state/go ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; touch one.txt; fi\necho TASK_COMPLETE\n",
        ))
        .build();
    let mut run = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    crate::support::wait_for(&p, "the second attempt", |p| {
        p.path().join(".git/agent-state/T1").exists() && p.read(".git/agent-state/T1").trim() == "2"
    });
    let s = p.status();
    let (n, m) = (
        s["tasks"][0]["attempt"].as_u64().unwrap(),
        s["tasks"][0]["attempts_at_most"].as_u64().unwrap(),
    );
    assert_eq!(n, 2, "{s}");
    let words = format!("attempt {n} of at most {m}");
    let shown = p.run(&["status"]).stdout;
    assert!(shown.contains(&words), "{words}: {shown}");
    let served = crate::support::serve(&p);
    let id = s["run_id"].as_str().unwrap();
    let (code, body) = crate::support::http_request(
        &served.addr,
        "GET",
        &format!("/api/runs/{id}"),
        Some(&served.token),
        None,
    );
    assert_eq!(code, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (&v["current"]["attempt"], &v["current"]["at_most"]),
        (&serde_json::json!(n), &serde_json::json!(m)),
        "{body}"
    );
    std::fs::write(p.path().join(".git/agent-state/go"), "").unwrap();
    assert_eq!(run.wait().unwrap().code(), Some(0));
}

/// What a person writes into the tree during a run is theirs: `agentloop run >
/// run1.err` inside the repository, and a note written while no agent works, are never
/// charged to the agent (they were: "changed files outside the task's scope").
#[test]
fn files_the_person_writes_during_a_run_are_theirs() {
    let plan = "# One\n\n## T1: First\nScope: src/\nVerify: test -f src/one.txt\n";
    let p = Scratch::new()
        .plan(plan)
        .agent(&agent(
            "if [ $n -ge 2 ]; then mkdir -p src; touch src/one.txt; else while [ ! -e .git/agent-state/noted ]; do sleep 0.05; done; fi\necho TASK_COMPLETE\n",
        ))
        .build();
    let out = std::fs::File::create(p.path().join("run1.err")).unwrap();
    let mut run = p
        .cmd(&["run"])
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .unwrap();
    // The person pauses the run during the first attempt and, while it is paused (no
    // agent at work), writes a note into the tree; then resumes it.
    crate::support::wait_for(&p, "the first attempt", |p| {
        p.path().join(".git/agent-state/T1").exists()
    });
    assert_eq!(p.run(&["pause"]).code, Some(0));
    std::fs::write(p.path().join(".git/agent-state/noted"), "").unwrap();
    // Paused, and the first attempt over: no agent at work.
    crate::support::wait_for(&p, "the pause", |p| {
        let s = p.status();
        s["status"] == "paused" && s["tasks"][0]["status"] == "pending"
    });
    std::fs::write(p.path().join("notes.txt"), "mine\n").unwrap();
    assert_eq!(p.run(&["resume"]).code, Some(0));
    let t = std::time::Instant::now();
    while run.try_wait().unwrap().is_none() {
        if t.elapsed() > std::time::Duration::from_secs(30) {
            let _ = run.kill();
            panic!(
                "the run did not end: {}\n{}",
                p.read("run1.err"),
                p.run(&["status"]).stdout
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(
        run.wait().unwrap().code(),
        Some(0),
        "{}",
        p.read("run1.err")
    );
    let log = p.read("run1.err");
    assert!(!log.contains("outside the task's scope"), "{log}");
    assert_eq!(
        log.matches("notes.txt changed while no agent was at work: taken as yours")
            .count(),
        1,
        "{log}"
    );
    assert_eq!(p.status()["tasks"][0]["status"], "done");
    assert_eq!(p.read("notes.txt"), "mine\n", "left alone");
}

/// A task nothing checks is done on the agent's word, and the run says so: not
/// "verified (0 commands passed)", not "every task is done and verified".
#[test]
fn a_task_with_no_check_is_not_called_verified() {
    let plan =
        "# Two\n\n## T1: Checked\nVerify: test -f one.txt\n\n## T2: Unchecked\nWrite notes.\n";
    let p = scripted(plan, "touch one.txt notes.txt\necho TASK_COMPLETE\n");
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("done on the agent's word: nothing checks this task"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("0 commands passed"), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("every task is done: 1 verified by their checks, 1 with no check (T2)"),
        "{}",
        r.stderr
    );
    assert!(
        !r.stderr.contains("every task is done and verified"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_spent_retry_budget_says_how_many_of_how_many_and_what_was_tried() {
    // Fails the same check every time while changing the tree: only the retry
    // budget stops it (2 tries), then one replan try, then it is blocked.
    let p = Scratch::new()
        .plan(ONE)
        .agent(&agent("echo $n > try-$n.txt\necho 'not yet'\n"))
        .config("[budgets]\ntask_retries = 2\n\n[breakers]\nsame_failure = 0\n")
        .build();
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert!(r.stderr.contains("attempt 2 of at most 7"), "{}", r.stderr);
    let s = p.status();
    let blocked = s["tasks"][0]["blocked"].as_str().unwrap();
    assert!(
        blocked.starts_with("task T1: 2 of 2 attempts without a verified result, then 1 of 1 attempt without a verified result\nTried: 3 attempts: 1 work, 1 retry, 1 replan"),
        "{blocked}"
    );
    assert_eq!(s["tasks"][0]["attempts"], 3);
}

#[test]
fn an_answer_to_a_question_reaches_the_next_prompt_with_the_question() {
    let body = r#"if [ "$n" -ge 2 ]; then touch one.txt; echo TASK_COMPLETE; else echo "BLOCKED: Which port should it listen on?"; fi
"#;
    let p = scripted(ONE, body);
    assert_eq!(p.run(&["run", "--no-wait", "--quiet"]).code, Some(5));
    assert_eq!(p.run(&["steer", "Port 8080."]).code, Some(0));
    assert_eq!(p.run(&["retry", "T1"]).code, Some(0));
    let r = p.run(&["resume", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let prompt = std::fs::read_to_string(p.run_dir().join("iterations/0002/prompt.md")).unwrap();
    assert!(
        prompt.contains("In the last iteration you asked: Which port should it listen on?"),
        "{prompt}"
    );
    assert!(prompt.contains("- Port 8080."), "{prompt}");
}
