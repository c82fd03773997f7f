//! Cycles (`[run] cycle`): a run judged at the end of each — by the rule (go on while
//! tasks get done; restart the workers fresh once when a cycle got none; then stop) or
//! by an agent (`[run] judge`).

use crate::support::{Project, Scratch};

/// A scripted agent: as a judge (its prompt starts `# Judging cycle`) it answers
/// `judge`; as a worker it runs `work` with `$task` and `$n` (its attempt) set, in
/// its worktree.
fn project(plan: &str, run: &str, judge: &str, work: &str) -> Project {
    let p = Scratch::new().plan(plan).build();
    let state = p.path().join(".git/agent-state");
    p.write(
        "agent.sh",
        format!(
            r#"prompt=$(cat)
state={state}
mkdir -p "$state"
if printf '%s\n' "$prompt" | head -n 1 | grep -q '^# Judging cycle'; then
  printf '%s\n' "$prompt" > "$state/judge-prompt.md"
  printf '%s\n' '{judge}'
  exit 0
fi
task=$(printf '%s\n' "$prompt" | sed -n 's/^## Your task: \([A-Za-z0-9_-]*\) .*/\1/p' | head -n 1)
n=$(cat "$state/$task" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$state/$task"
{work}
"#,
            state = state.display()
        ),
    );
    p.write(
        "agentloop.toml",
        format!(
            "[run]\nagent = \"scripted\"\n{run}\n\n[agents.scripted]\ncommand = [\"sh\", \"{}\"]\ntimeout = \"60s\"\n",
            p.path().join("agent.sh").display()
        ),
    );
    p.commit("a scripted agent");
    p
}

const THREE: &str = "# Three\n\n## T1: One\nVerify: test -f t1.txt\n\n## T2: Two\nVerify: test -f t2.txt\n\n## T3: Three\nVerify: test -f t3.txt\n";

const MAKE: &str =
    "echo \"$task\" > \"$(echo \"$task\" | tr 'A-Z' 'a-z').txt\"\necho TASK_COMPLETE";

#[test]
fn the_rule_lets_a_run_go_on_while_its_cycles_get_tasks_done() {
    let p = project(THREE, "cycle = \"1 task\"", "", MAKE);
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let log = p.run(&["log"]).stdout;
    // Judged after the first and the second task; the third ends the run.
    assert!(
        log.contains("cycle 1 judged by rule: go on (1 task done in this cycle)"),
        "{log}"
    );
    assert!(log.contains("cycle 2 judged by rule: go on"), "{log}");
    assert!(!log.contains("cycle 3 judged"), "{log}");
    let s = p.status();
    assert_eq!(s["status"], "completed");
    assert_eq!(s["cycles"]["every"], "1 task", "{s}");
    // The cycle and its last verdict, in status, `watch` and the dashboard.
    let said = "cycle: 3 (every 1 task; 1 done in it) · last verdict: go on (";
    let human = p.run(&["status"]).stdout;
    assert!(human.contains(said), "{human}");
    let frame = agentloop::watch_frame(&crate::cli::cached_state(&p), "", "watching", 160, 40);
    assert!(
        frame.contains(" tasks · cycle 3 · last verdict: go on "),
        "{frame}"
    );
    let server = crate::support::serve(&p);
    let id = s["run_id"].as_str().unwrap();
    let (code, body) = crate::support::http_request(
        &server.addr,
        "GET",
        &format!("/api/runs/{id}"),
        Some(&server.token),
        None,
    );
    assert_eq!(code, 200, "{body}");
    let run: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (&run["cycles"]["current"], &run["cycles"]["last"]["verdict"]),
        (&serde_json::json!(3), &serde_json::json!("go on")),
        "{run}"
    );

    // A cycle that is neither is refused before anything runs.
    let bad = project(THREE, "cycle = \"forever\"", "", MAKE);
    let r = bad.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("run.cycle") && r.stderr.contains("neither a number of tasks"),
        "{}",
        r.stderr
    );
    assert!(!bad.path().join(".agentloop/runs").exists());
}

#[test]
fn a_cycle_without_a_task_done_restarts_the_workers_fresh_then_the_next_stops_the_run() {
    // T1 never passes; each attempt takes a second and says what it found of the
    // attempts before it in its worktree.
    let work = "ls wip-*.txt 2>/dev/null | tr '\\n' ' ' > \"$state/seen-$n\"\necho work > wip-$n.txt\nsleep 1\necho TASK_COMPLETE";
    let plan = "# Stuck\n\n## T1: Never\nVerify: test -f never.txt\n";
    let p = project(plan, "workers = 2\ncycle = \"2s\"", "", work);
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(6), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["status"], "stopped", "{s}");
    assert!(
        s["finished"].as_str().unwrap().contains(
            "stopped by the judge of cycle 2: no task done in this cycle, nor in the one before it"
        ),
        "{s}"
    );
    let log = p.run(&["log"]).stdout;
    assert!(
        log.contains("cycle 1 judged by rule: restart fresh (no task done in this cycle"),
        "{log}"
    );
    // The attempt after the restart started from the integration branch: none of the
    // earlier attempts' work was in its worktree.
    let state = p.path().join(".git/agent-state");
    let attempts: u32 = std::fs::read_to_string(state.join("T1"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let seen: Vec<String> = (1..=attempts)
        .map(|n| std::fs::read_to_string(state.join(format!("seen-{n}"))).unwrap_or_default())
        .collect();
    assert!(
        seen[1].contains("wip-1.txt"),
        "{seen:?}: the second attempt goes on from the first"
    );
    assert!(
        seen.iter().skip(1).any(|s| s.trim().is_empty()),
        "{seen:?}: an attempt after the restart found nothing of the ones before"
    );
    // The set-aside work is kept among the task's attempts.
    let run = s["run_id"].as_str().unwrap();
    assert!(
        !p.git_cmd(&["for-each-ref", &format!("refs/agentloop/{run}/attempts/")])
            .trim()
            .is_empty()
    );
}

#[test]
fn a_judging_agent_stops_the_run_with_its_reasons() {
    let p = project(
        THREE,
        "cycle = \"1 task\"\njudge = \"scripted\"",
        "JUDGE: STOP\n- enough for today",
        MAKE,
    );
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(6), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["status"], "stopped");
    assert!(
        s["finished"].as_str().unwrap().contains("enough for today"),
        "{s}"
    );
    let done = s["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["status"] == "done")
        .count();
    assert_eq!(done, 1, "{s}");
    // It was told how the cycle went.
    let prompt =
        std::fs::read_to_string(p.path().join(".git/agent-state/judge-prompt.md")).unwrap();
    assert!(prompt.contains("tasks done in it: 1"), "{prompt}");
    assert!(prompt.contains("T2: Two [pending"), "{prompt}");
    assert!(
        p.run(&["log"])
            .stdout
            .contains("cycle 1 judged by scripted: stop (enough for today)")
    );
}
