//! Control requests reach the right run and are never lost: one run per work tree, a
//! plain `approve` for the run waiting at its gate, a skip during an iteration, notes
//! fired at any moment, secrets in notes, and the same effect from the API as from
//! the CLI.

use std::time::{Duration, Instant};

use crate::support::{
    Scratch, agent, copy_dir, http_request, scripted, serve, wait_exit, wait_for,
};

const TWO: &str = "# Two\n\n## T1: First\nVerify: test -f one.txt\n\n## T2: Second\nDepends: T1\nVerify: test -f two.txt\n";
const GATED: &str = "# Gated\n\n## T1: First\nVerify: test -f one.txt\nGate: before\n";

#[test]
fn a_second_run_in_the_same_work_tree_is_refused_naming_the_first() {
    let p = scripted(GATED, "touch one.txt\necho TASK_COMPLETE\n");
    assert_eq!(p.run(&["run", "--no-wait", "--quiet"]).code, Some(5));
    let first = p.status()["run_id"].as_str().unwrap().to_string();
    let before = p.tree();
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr.starts_with(&format!(
            "error: run {first} is active in this work tree (waiting); one run drives a work tree at a time"
        )),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains(&format!("agentloop stop --run {first}")));
    assert!(p.tree() == before, "nothing was created");
    // Once it ends, a new run may start.
    assert_eq!(p.run(&["stop"]).code, Some(0));
    assert_eq!(p.status()["status"], "stopped");
    assert_eq!(p.run(&["run", "--no-wait", "--quiet"]).code, Some(5));
}

#[test]
fn a_plain_approve_goes_to_the_run_at_its_gate_and_never_guesses() {
    let p = scripted(GATED, "touch one.txt\necho TASK_COMPLETE\n");
    assert_eq!(p.run(&["run", "--no-wait", "--quiet"]).code, Some(5));
    let waiting = p.run_dir();
    let id = waiting.file_name().unwrap().to_str().unwrap().to_string();
    // Two more runs of the same plan appear beside it (as from an older agentloop, or
    // another tool): one finished and newer, one also at a gate.
    let runs = waiting.parent().unwrap();
    let newer_stopped = format!("{id}-z-stopped");
    let also_waiting = format!("{id}-y-waiting");
    for copy in [&newer_stopped, &also_waiting] {
        std::fs::create_dir_all(runs.join(copy)).unwrap();
        copy_dir(&waiting, &runs.join(copy));
    }
    assert_eq!(p.run(&["stop", "--run", &newer_stopped]).code, Some(0));
    // Two runs wait: a plain approve refuses and lists both.
    let before = p.tree();
    let r = p.run(&["approve"]);
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr
            .starts_with("error: 2 runs in this work tree are waiting at a gate: "),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains(&id) && r.stderr.contains(&also_waiting));
    assert!(p.tree() == before, "a refused approve writes nothing");
    // With one of them ended, the plain approve is for the run at its gate, not the
    // newest run.
    assert_eq!(p.run(&["stop", &also_waiting]).code, Some(0));
    let r = p.run(&["approve"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains(&format!("run {id} ·")), "{}", r.stderr);
    let s: serde_json::Value =
        serde_json::from_str(&p.run(&["status", &id, "--json"]).stdout).unwrap();
    assert_eq!(s["gate"], serde_json::Value::Null);
}

#[test]
fn a_skip_during_an_iteration_is_honoured_when_it_ends() {
    let p = Scratch::new()
        .plan(TWO)
        .agent(&agent(
            "case $task in T1) touch .git/t1-started; sleep 1; echo 'not done' ;; *) touch one.txt two.txt; echo TASK_COMPLETE ;; esac\n",
        ))
        .build();
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    wait_for(&p, "T1's iteration", |p| {
        p.path().join(".git/t1-started").exists()
    });
    assert_eq!(p.run(&["skip", "T1"]).code, Some(0));
    let st = wait_exit(&mut driver, Duration::from_secs(30));
    assert_eq!(st.code(), Some(0));
    let s = p.status();
    assert_eq!(s["tasks"][0]["status"], "skipped");
    assert_eq!(s["tasks"][0]["iterations"], 1, "T1 was not tried again");
    assert_eq!(s["tasks"][1]["status"], "done");
}

#[test]
fn a_reject_note_reaches_the_next_prompt() {
    let p = scripted(
        "# R\n\n## T1: First\nVerify: test -f one.txt\nGate: after\n",
        "touch one.txt\necho TASK_COMPLETE\n",
    );
    assert_eq!(p.run(&["run", "--no-wait", "--quiet"]).code, Some(5));
    assert_eq!(
        p.run(&["reject", "--note", "name the file ONE.txt"]).code,
        Some(0)
    );
    assert_eq!(p.run(&["resume", "--no-wait", "--quiet"]).code, Some(5));
    let prompt = std::fs::read_to_string(p.run_dir().join("iterations/0002/prompt.md")).unwrap();
    assert!(prompt.contains("name the file ONE.txt"), "{prompt}");
}

#[test]
fn notes_sent_at_any_moment_each_reach_exactly_one_prompt() {
    // Twelve quick tasks; notes arrive while iterations start and end.
    let mut plan = String::from("# Many\n");
    for i in 1..=12 {
        plan.push_str(&format!("\n## T{i}: Task {i}\nVerify: test -f T{i}.txt\n"));
    }
    let p = scripted(&plan, "sleep 0.05\ntouch $task.txt\necho TASK_COMPLETE\n");
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    wait_for(&p, "the first iteration", |p| {
        p.path().join(".git/agent-state/pid").exists()
    });
    let mut sent = Vec::new();
    let t = Instant::now();
    for i in 0..30 {
        let note = format!("note number {i:02}");
        let r = p.run(&["steer", &note]);
        if r.code != Some(0) {
            break; // the run finished
        }
        sent.push(note);
        // Irregular gaps, so notes land at every point of an iteration.
        std::thread::sleep(Duration::from_millis([3, 17, 41, 9, 73][i % 5]));
        if t.elapsed() > Duration::from_secs(20) {
            break;
        }
    }
    let st = wait_exit(&mut driver, Duration::from_secs(60));
    assert_eq!(st.code(), Some(0));
    assert!(sent.len() >= 5, "only {} notes were sent", sent.len());
    let mut prompts = Vec::new();
    for e in std::fs::read_dir(p.run_dir().join("iterations"))
        .unwrap()
        .flatten()
    {
        prompts.push(std::fs::read_to_string(e.path().join("prompt.md")).unwrap());
    }
    // A note sent after the last iteration began waits for a next one that never
    // comes; every other note is in exactly one prompt.
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p.run_dir().join("state.json")).unwrap())
            .unwrap();
    let pending: Vec<String> = state["steer"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect();
    for note in &sent {
        let n = prompts.iter().filter(|p| p.contains(note.as_str())).count();
        if pending.contains(note) {
            assert_eq!(n, 0, "{note} is still pending, yet in a prompt");
        } else {
            assert_eq!(n, 1, "{note} is in {n} prompts");
        }
    }
}

#[test]
fn a_secret_typed_into_a_note_is_redacted() {
    let p = Scratch::new()
        .plan(GATED)
        .agent(&agent("touch one.txt\necho TASK_COMPLETE\n"))
        .config("[agents.scripted.env]\nDEPLOY_TOKEN = \"tok-live-abcdef0123456789\"\n")
        .build();
    assert_eq!(p.run(&["run", "--no-wait", "--quiet"]).code, Some(5));
    let r = p
        .cmd(&[
            "steer",
            "use key sk-shell-9876543210 and tok-live-abcdef0123456789",
        ])
        .env("MY_API_KEY", "sk-shell-9876543210")
        .output()
        .unwrap();
    assert!(r.status.success());
    for (name, text) in p
        .tree()
        .into_iter()
        .filter(|(n, _)| n.starts_with(".agentloop"))
    {
        let text = String::from_utf8_lossy(&text);
        assert!(
            !text.contains("sk-shell-9876543210") && !text.contains("tok-live-abcdef0123456789"),
            "{name} holds a secret"
        );
    }
    let log = p.run(&["log"]).stdout;
    assert!(
        log.contains("[REDACTED:MY_API_KEY]") && log.contains("[REDACTED:DEPLOY_TOKEN]"),
        "{log}"
    );
}

#[test]
fn a_stop_from_the_api_ends_a_run_with_no_driver_as_the_cli_does() {
    let p = scripted(GATED, "touch one.txt\necho TASK_COMPLETE\n");
    assert_eq!(p.run(&["run", "--no-wait", "--quiet"]).code, Some(5));
    let id = p.status()["run_id"].as_str().unwrap().to_string();
    let s = serve(&p);
    let (status, body) = http_request(
        &s.addr,
        "POST",
        &format!("/api/runs/{id}/control"),
        Some(&s.token),
        Some(r#"{"request_id":"stop-1","action":"stop"}"#),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(p.status()["status"], "stopped");
}

#[test]
fn a_run_whose_driver_was_killed_is_interrupted_and_resume_from_the_api_drives_it() {
    let p = scripted(
        TWO,
        "if [ ! -f .git/killed-once ]; then touch .git/killed-once; sleep 60; fi\ntouch one.txt two.txt\necho TASK_COMPLETE\n",
    );
    let mut driver = crate::support::started(&p);
    driver.kill().unwrap();
    driver.wait().unwrap();
    let id = p.status()["run_id"].as_str().unwrap().to_string();
    let s = serve(&p);
    let get = |path: &str| {
        let (status, body) = http_request(&s.addr, "GET", path, Some(&s.token), None);
        assert_eq!(status, 200, "{body}");
        serde_json::from_str::<serde_json::Value>(&body).unwrap()
    };
    let run = get(&format!("/api/runs/{id}"));
    assert_eq!(
        run["status"], "interrupted",
        "not 'running': its driver is gone"
    );
    assert!(
        run["attention"].to_string().contains("interrupted"),
        "{run}"
    );
    let listed = get("/api/runs");
    assert_eq!(listed["runs"][0]["status"], "interrupted");
    let (status, body) = http_request(
        &s.addr,
        "POST",
        &format!("/api/runs/{id}/control"),
        Some(&s.token),
        Some(r#"{"request_id":"resume-1","action":"resume"}"#),
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"driver\":\"started\""), "{body}");
    wait_for(&p, "the resumed run to complete", |p| {
        p.status()["status"] == "completed"
    });
    assert_eq!(get(&format!("/api/runs/{id}"))["status"], "completed");
}

#[test]
fn requests_to_a_finished_run_say_so_without_suggesting_resume() {
    let p = scripted(TWO, "touch one.txt two.txt\necho TASK_COMPLETE\n");
    assert_eq!(p.run(&["run", "--quiet"]).code, Some(0));
    for cmd in [&["approve"][..], &["stop"], &["pause"]] {
        let r = p.run(cmd);
        assert_eq!(r.code, Some(2), "{cmd:?}");
        assert!(
            r.stderr.contains("is completed: there is nothing to"),
            "{}",
            r.stderr
        );
        assert!(!r.stderr.contains("resume"), "{cmd:?}: {}", r.stderr);
    }
}
