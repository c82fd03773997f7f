//! Hook mode and its session: a run drives only the session that claimed it (a stale
//! one drives nobody), the plugin installs and validates as Claude Code plugins do, its
//! slash commands take the exact words a person typed, subagents do not end a turn,
//! and the session's spending reaches the run's budget. With the real `claude`.

use std::path::Path;

use serde_json::{Value, json};

use crate::hook_mode::{bash, claude, say};
use crate::real_cli::{Cli, journal_events};
use crate::support::{BIN, Project, Scratch, assert_ok, hook};

const ONE: &str = "# One\n\n## T1: A\nVerify: test -f a.txt\n";

fn stop_input(p: &Project, session: &str, transcript: Option<&Path>) -> Vec<u8> {
    json!({"session_id": session, "cwd": p.path(), "hook_event_name": "Stop",
        "stop_hook_active": false, "last_assistant_message": "Hi.", "transcript_path": transcript})
    .to_string()
    .into_bytes()
}

fn session_start(p: &Project, session: &str) -> String {
    let input = json!({"session_id": session, "cwd": p.path(), "hook_event_name": "SessionStart", "source": "startup"});
    hook(p, "session-start", input.to_string().as_bytes()).1
}

/// The plugin directory, and a PATH on which `agentloop` is the binary under test.
fn plugin_env() -> (std::path::PathBuf, String) {
    let plugin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugin");
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (plugin, path)
}

/// One `claude -p` turn with the plugin loaded (a new session, or `resume` one); its
/// stream-json output.
fn prompt_session(
    p: &Project,
    server: &agentloop_testkit::MockServer,
    prompt: &str,
    resume: Option<&str>,
) -> String {
    let (plugin, path) = plugin_env();
    let mut c = claude(p, server);
    c.args(["-p", prompt, "--plugin-dir"])
        .arg(&plugin)
        .env("PATH", &path);
    if let Some(s) = resume {
        c.args(["--resume", s]);
    }
    let out = c.output().unwrap();
    assert_ok(&out);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The session id in a `claude -p` stream-json output.
fn session_id(out: &str) -> String {
    out.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| v["session_id"].as_str().map(String::from))
        .expect("a session id")
}

#[test]
fn a_stale_unclaimed_run_never_drives_an_unrelated_session() {
    let p = Scratch::new()
        .plan(ONE)
        .config("[hook]\nclaim_window = \"1s\"\n")
        .build();
    assert_eq!(p.run(&["hook", "start"]).code, Some(0));
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // A later session that never heard of the run: it asks "What is 2+2?" and stops.
    let transcript = p.path().join(".git/unrelated.jsonl");
    std::fs::write(
        &transcript,
        "{\"type\":\"user\",\"message\":{\"content\":\"What is 2+2?\"}}\n",
    )
    .unwrap();
    let before = p.tree();
    let (code, out, _) = hook(&p, "stop", &stop_input(&p, "later", Some(&transcript)));
    assert_eq!(
        (code, out.as_str()),
        (Some(0), ""),
        "the session is left alone"
    );
    assert_eq!(
        session_start(&p, "later"),
        "",
        "and is not told about the run"
    );
    assert!(p.tree() == before, "nothing was recorded");
    // A session that started the run from inside (its transcript names it) drives it.
    let id = p.status()["run_id"].as_str().unwrap().to_string();
    let own = p.path().join(".git/own.jsonl");
    std::fs::write(
        &own,
        format!(
            "{{\"type\":\"user\",\"message\":{{\"content\":\"agentloop: hook-mode run {id}\"}}}}\n"
        ),
    )
    .unwrap();
    let (_, out, _) = hook(&p, "stop", &stop_input(&p, "own", Some(&own)));
    assert!(out.contains("\"decision\":\"block\""), "{out}");
    assert_eq!(p.status()["status"], "running");
}

#[test]
fn the_first_session_claims_a_fresh_run_and_its_context_names_the_run_and_its_gate() {
    let p = Scratch::new()
        .plan(ONE)
        .config("[gates]\nplan_approval = true\n")
        .build();
    assert_eq!(p.run(&["hook", "start"]).code, Some(0));
    let id = p.status()["run_id"].as_str().unwrap().to_string();
    let out = session_start(&p, "first");
    let v: Value = serde_json::from_str(&out).unwrap();
    let context = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        context.starts_with(&format!("agentloop run {id} drives this session")),
        "{context}"
    );
    assert!(
        context.contains("The run waits for a person: approve the plan before the first iteration"),
        "{context}"
    );
    let bound: Vec<Value> = journal_events(&p)
        .into_iter()
        .filter(|e| e["kind"] == "session_bound")
        .collect();
    assert_eq!(bound.len(), 1);
    assert_eq!(bound[0]["data"]["session_id"], "first");
    // Another session is not driven, and not told it is.
    assert_eq!(session_start(&p, "second"), "");
    let (_, out, _) = hook(&p, "stop", &stop_input(&p, "second", None));
    assert_eq!(out, "");
}

#[test]
fn the_plugin_installs_from_its_marketplace_and_validates_strictly() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let home = tempfile::tempdir().unwrap();
    let claude = |args: &[&str]| {
        std::process::Command::new("claude")
            .args(args)
            .env("CLAUDE_CONFIG_DIR", home.path())
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .output()
            .unwrap()
    };
    for what in [root.join("plugin"), root.clone()] {
        let out = claude(&["plugin", "validate", "--strict", what.to_str().unwrap()]);
        assert_ok(&out);
        assert!(String::from_utf8_lossy(&out.stdout).contains("Validation passed"));
    }
    assert_ok(&claude(&[
        "plugin",
        "marketplace",
        "add",
        root.to_str().unwrap(),
    ]));
    assert_ok(&claude(&["plugin", "install", "agentloop@agentloop"]));
    let listed = claude(&["plugin", "list"]);
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(
        text.contains("agentloop@agentloop") && text.contains("enabled"),
        "{text}"
    );
    // No command runs a shell with the person's words, and none is the model's to call.
    for e in std::fs::read_dir(root.join("plugin/commands"))
        .unwrap()
        .flatten()
    {
        let md = std::fs::read_to_string(e.path()).unwrap();
        assert!(
            !md.contains("$ARGUMENTS") && !md.contains("!`"),
            "{:?}",
            e.path()
        );
        assert!(
            md.contains("disable-model-invocation: true"),
            "{:?}",
            e.path()
        );
    }
    assert!(root.join("plugin/LICENSE").is_file());
}

#[test]
fn slash_commands_take_the_exact_words_and_the_session_spending_is_counted() {
    let server = Cli::Claude.mock(vec![
        say("Ready."),
        bash("echo a > a.txt"),
        say("TASK_COMPLETE"),
        say("Approved, going on."),
        say("ok"),
    ]);
    let p = Scratch::new()
        .plan(ONE)
        .config("[gates]\nfinal_review = true\n")
        .build();
    let run = |prompt: &str, resume: Option<&str>| prompt_session(&p, &server, prompt, resume);
    // `/agentloop:start` with a plan path: the run starts bound to this session, and
    // the plugin's Stop hook drives the session through T1 to the final review.
    let out = run("/agentloop:start PLAN.md --mode quick", None);
    let session = session_id(&out);
    let s = p.status();
    assert_eq!(s["tasks"][0]["status"], "done", "{s}");
    assert_eq!(s["status"], "waiting", "at the final review");
    let bound = journal_events(&p)
        .into_iter()
        .find(|e| e["kind"] == "session_bound")
        .unwrap();
    assert_eq!(bound["data"]["session_id"], session.as_str());
    // The session's tokens and their cost at the model's list price reach the run.
    assert!(s["tokens"]["total"].as_u64().unwrap() > 0, "{s}");
    assert!(s["cost_usd"].as_f64().unwrap() > 0.0, "{s}");
    // `/agentloop:approve` with quotes, a backtick and `$(…)`: recorded word for word,
    // from the person in the session; nothing ran.
    let note = r#"it's "fine" `touch pwned1` $(touch pwned2)"#;
    run(&format!("/agentloop:approve {note}"), Some(&session));
    let approve = journal_events(&p)
        .into_iter()
        .find(|e| e["kind"] == "control" && e["data"]["request"]["action"] == "approve")
        .expect("an approval");
    assert_eq!(approve["data"]["request"]["note"], note);
    assert_eq!(approve["data"]["source"], "session");
    assert!(!p.path().join("pwned1").exists() && !p.path().join("pwned2").exists());
    assert_eq!(p.status()["status"], "completed");
}

#[test]
fn the_model_cannot_approve_its_own_gate_through_bash_a_person_can_in_the_session() {
    let server = Cli::Claude.mock(vec![
        say("Ready."),
        bash("echo a > a.txt"),
        say("TASK_COMPLETE"),
        // Asked to go on, the model tries to pass the person's gate itself.
        bash("agentloop approve --note 'self-approved by the agent'"),
        say("I could not approve it."),
        say("Approved, going on."),
        say("ok"),
    ]);
    let p = Scratch::new()
        .plan(ONE)
        .config("[gates]\nfinal_review = true\n")
        .build();
    let run = |prompt: &str, resume: Option<&str>| prompt_session(&p, &server, prompt, resume);
    let out = run("/agentloop:start PLAN.md", None);
    let session = session_id(&out);
    assert_eq!(p.status()["gate"]["point"], "final");
    run("Go on with the review, please.", Some(&session));
    let s = p.status();
    assert_eq!(s["status"], "waiting", "still at the final review: {s}");
    assert_eq!(s["refused_requests"], 1);
    let refused = journal_events(&p)
        .into_iter()
        .find(|e| e["kind"] == "control_refused")
        .expect("the attempt is journaled");
    assert!(
        refused["data"]["why"]
            .as_str()
            .unwrap()
            .contains("inside the agent session the run drives"),
        "{refused}"
    );
    // The bound session's process is known from its hooks.
    assert!(
        journal_events(&p)
            .iter()
            .any(|e| e["kind"] == "session_bound" && e["data"]["pid"].is_u64())
    );
    // The person, typing the slash command in the same session, can.
    run("/agentloop:approve looks good", Some(&session));
    assert_eq!(p.status()["status"], "completed");
}

#[test]
fn a_subagent_at_work_does_not_end_the_task_iteration() {
    let server = Cli::Claude.mock(vec![
        say("Ready."),
        crate::support::claude_tool(
            "Task",
            json!({"description": "make a.txt", "prompt": "Create a.txt containing a.", "subagent_type": "general-purpose"}),
        ),
        bash("echo a > a.txt"),
        say("Created a.txt."),
        say("The subagent made it.\nTASK_COMPLETE"),
    ]);
    let p = crate::hook_mode::setup(ONE);
    let settings = json!({"hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": format!("{BIN} hook stop"), "timeout": 120}]}],
        "SubagentStop": [{"hooks": [{"type": "command", "command": format!("{BIN} hook subagent-stop"), "timeout": 120}]}],
    }});
    let out = claude(&p, &server)
        .args(["-p", "Start.", "--settings", &settings.to_string()])
        .args(["--allowedTools", "Bash,Write,Read,Task"])
        .output()
        .unwrap();
    assert_ok(&out);
    let s = p.status();
    assert_eq!(s["status"], "completed", "{s}");
    assert_eq!(
        s["iterations"], 1,
        "the subagent's end was not a failed try: {s}"
    );
}

#[test]
fn a_team_task_in_tdd_mode_counts_the_tests_committed_since_it_began() {
    let p = Scratch::new()
        .plan("# T\n\n## T1: Build A\nMode: tdd\nVerify: test -f a.txt\n")
        .build();
    assert_eq!(p.run(&["hook", "start"]).code, Some(0));
    let done = json!({"session_id": "lead", "cwd": p.path(), "hook_event_name": "TaskCompleted", "task_subject": "T1: Build A"}).to_string();
    p.write("a.txt", "a");
    p.commit("a without a test");
    let (code, _, err) = hook(&p, "task-completed", done.as_bytes());
    assert_eq!(code, Some(2), "no test yet: {err}");
    assert!(
        err.contains("is in tdd mode and no test file changed"),
        "{err}"
    );
    // A teammate writes the test and commits it: the tree is clean, the commit counts.
    p.write("tests/a_test.sh", "test -f a.txt\n");
    p.commit("the test for A");
    let (code, _, err) = hook(&p, "task-completed", done.as_bytes());
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn a_team_task_in_pair_mode_waits_for_a_persons_review() {
    let p = Scratch::new()
        .plan("# T\n\n## T1: Build A\nMode: pair\nVerify: test -f a.txt\n")
        .build();
    assert_eq!(p.run(&["hook", "start"]).code, Some(0));
    p.write("a.txt", "a");
    let done = json!({"session_id": "lead", "cwd": p.path(), "hook_event_name": "TaskCompleted", "task_subject": "T1: Build A", "teammate_name": "ada"}).to_string();
    let (code, _, err) = hook(&p, "task-completed", done.as_bytes());
    assert_eq!(code, Some(0), "{err}");
    // The lead's next stop: the run waits for the person's review of T1.
    let (_, out, _) = hook(&p, "stop", &stop_input(&p, "lead", None));
    assert!(
        out.contains("waiting for a person: review task T1 now that it is verified"),
        "{out}"
    );
    assert_eq!(p.status()["gate"]["point"], "after_task");
    // The hints name what goes on with a hook-mode run: its session, or a headless
    // resume (a plain `resume` refuses it).
    let r = p.run(&["approve"]);
    assert_eq!(r.code, Some(0));
    assert!(
        r.stderr.contains(
            "a message in its Claude Code session goes on with it, or `agentloop resume --headless "
        ),
        "{}",
        r.stderr
    );
    assert!(
        !r.stderr.contains("(`agentloop resume` drives it)"),
        "{}",
        r.stderr
    );
    let shown = p.run(&["status"]).stdout;
    assert!(
        shown.contains("driver: none (a message in its Claude Code session goes on with it"),
        "{shown}"
    );
    let (_, out, _) = hook(&p, "stop", &stop_input(&p, "lead", None));
    assert!(out.contains("the plan is complete and verified"), "{out}");
}

/// `[hook] task_gate = false` (seed 000's `task_gate: off`): a teammate's completion is
/// not checked or refused by the TaskCompleted hook; the task is still verified — when
/// the lead's session stops — and not done before.
#[test]
fn the_task_gate_off_leaves_a_teammates_completion_to_the_leads_stop() {
    let p = Scratch::new()
        .plan("# T\n\n## T1: Build A\nVerify: test -f a.txt\n")
        .config("[hook]\ntask_gate = false\n")
        .build();
    assert_eq!(p.run(&["hook", "start"]).code, Some(0));
    let done = json!({"session_id": "lead", "cwd": p.path(), "hook_event_name": "TaskCompleted", "task_subject": "T1: Build A", "teammate_name": "ada"}).to_string();
    // Not done, and not refused: the gate is off.
    let (code, _, err) = hook(&p, "task-completed", done.as_bytes());
    assert_eq!(code, Some(0), "{err}");
    assert!(
        !crate::support::journal_has(&p, "team_task_completed"),
        "the teammate's word is not recorded as done"
    );
    assert_eq!(p.status()["tasks"][0]["status"], "pending");
    // The lead's stop claims the run; its next stop, with a.txt made, verifies T1.
    let (_, out, _) = hook(&p, "stop", &stop_input(&p, "lead", None));
    assert!(out.contains("T1"), "{out}");
    p.write("a.txt", "a");
    let claim = json!({"session_id": "lead", "cwd": p.path(), "hook_event_name": "Stop",
        "stop_hook_active": true, "last_assistant_message": "Made a.txt.\nTASK_COMPLETE"});
    let (_, out, _) = hook(&p, "stop", claim.to_string().as_bytes());
    assert!(out.contains("the plan is complete and verified"), "{out}");
}

/// Seed 004's session end: the session's pending changes are committed when `[git]
/// commit` is on (and say they are not verified), the handoff is written whatever the
/// run's state, and another session's end changes nothing.
#[test]
fn a_sessions_end_commits_what_it_left_pending_and_writes_the_handoff() {
    let p = Scratch::new()
        .plan("# T\n\n## T1: Build A\nVerify: test -f a.txt\n\n## T2: Build B\nVerify: test -f b.txt\n")
        .config("[git]\ncommit = true\n")
        .build();
    assert_eq!(p.run(&["hook", "start"]).code, Some(0));
    let run = p.run_dir();
    let (_, out, _) = hook(&p, "stop", &stop_input(&p, "lead", None));
    assert!(out.contains("T1"), "{out}");
    let end = |session: &str| {
        json!({"session_id": session, "cwd": p.path(), "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"})
            .to_string()
    };
    // Work under way, left in the tree.
    p.write("a.txt", "half");
    let head = p.git_cmd(&["rev-parse", "HEAD"]);
    let (code, out, err) = hook(&p, "session-end", end("someone-else").as_bytes());
    assert_eq!((code, out.as_str()), (Some(0), ""), "{err}");
    assert_eq!(
        p.git_cmd(&["rev-parse", "HEAD"]),
        head,
        "not this session's run"
    );
    assert!(!run.join("handoff.md").exists());
    let (code, _, err) = hook(&p, "session-end", end("lead").as_bytes());
    assert_eq!(code, Some(0), "{err}");
    let message = p.git_cmd(&["log", "-1", "--format=%B"]);
    assert!(
        message.starts_with(
            "agentloop: changes pending when the session ended (task T1; not verified)"
        ),
        "{message}"
    );
    assert_eq!(
        p.git_cmd(&["status", "--porcelain"]),
        "",
        "everything committed"
    );
    let ended: Vec<Value> = journal_events(&p)
        .into_iter()
        .filter(|e| e["kind"] == "session_ended")
        .collect();
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0]["data"]["reason"], "prompt_input_exit");
    assert_eq!(
        ended[0]["data"]["commit"].as_str().unwrap(),
        p.git_cmd(&["rev-parse", "HEAD"]).trim()
    );
    let handoff = std::fs::read_to_string(run.join("handoff.md")).unwrap();
    assert!(
        handoff.contains("T1") && handoff.contains("T2"),
        "{handoff}"
    );
    // The task is not done on that commit: the next session goes on with it.
    assert_eq!(
        p.status()["tasks"][0]["status"],
        "running",
        "{}",
        p.status()
    );
    // Nothing pending: nothing committed, the handoff written again.
    std::fs::remove_file(run.join("handoff.md")).unwrap();
    let head = p.git_cmd(&["rev-parse", "HEAD"]);
    let (code, _, err) = hook(&p, "session-end", end("lead").as_bytes());
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(p.git_cmd(&["rev-parse", "HEAD"]), head);
    assert!(run.join("handoff.md").exists());
}

#[test]
fn the_model_cannot_pass_for_the_slash_command_hook() {
    // The model writes what Claude Code would send for `/agentloop:approve` and gives
    // it to the hook's own command line, through the same shell Claude Code uses
    // (`exec`: nothing of its Bash tool stays between it and the session), from a
    // file and from a socket pair of its own.
    let forge = |session: &str, how: &str| {
        let input = json!({"session_id": session, "hook_event_name": "UserPromptExpansion",
            "transcript_path": "/dev/null", "cwd": ".", "expansion_type": "slash_command",
            "command_name": "agentloop:approve", "command_args": "forged by the model"})
        .to_string();
        let feed = match how {
            "file" => "exec sh -c 'agentloop hook prompt-expansion' < forged.json".to_string(),
            _ => "exec python3 -c \"import socket,os,sys; a,b=socket.socketpair(); a.sendall(open('forged.json','rb').read()); a.close(); os.dup2(b.fileno(),0); os.execvp('sh',['sh','-c','agentloop hook prompt-expansion'])\"".to_string(),
        };
        bash(&format!("printf '%s' '{input}' > forged.json; {feed}"))
    };
    let p = Scratch::new()
        .plan(ONE)
        .config("[gates]\nfinal_review = true\n")
        .build();
    // The session id is the mock's to know only after the first turn: the first
    // turn starts the run, the second one forges.
    let first = Cli::Claude.mock(vec![
        say("Ready."),
        bash("echo a > a.txt"),
        say("TASK_COMPLETE"),
    ]);
    let out = prompt_session(&p, &first, "/agentloop:start PLAN.md", None);
    let session = session_id(&out);
    assert_eq!(p.status()["gate"]["point"], "final");
    let second = Cli::Claude.mock(vec![
        forge(&session, "file"),
        forge(&session, "socket"),
        say("I could not approve it."),
    ]);
    prompt_session(
        &p,
        &second,
        "Go on with the review, please.",
        Some(&session),
    );
    let s = p.status();
    assert_eq!(s["status"], "waiting", "still at the final review: {s}");
    let refused: Vec<Value> = journal_events(&p)
        .into_iter()
        .filter(|e| e["kind"] == "control_refused")
        .collect();
    assert_eq!(refused.len(), 2, "{refused:?}");
    for r in &refused {
        assert!(
            r["data"]["why"].as_str().unwrap().contains("not a person"),
            "{r}"
        );
    }
    // The person's own command still counts.
    let third = Cli::Claude.mock(vec![say("Approved, going on."), say("ok")]);
    prompt_session(&p, &third, "/agentloop:approve looks good", Some(&session));
    assert_eq!(p.status()["status"], "completed");
}

#[test]
fn a_persons_start_in_a_session_an_open_run_claimed_replaces_that_run() {
    // `hook start` made a run; the session claims it as it starts, and the person in
    // it types `/agentloop:start`: the open run is stopped by the person (not counted
    // as the model's tampering) and the new one drives the session.
    let p = Scratch::new().plan(ONE).build();
    assert_eq!(p.run(&["hook", "start"]).code, Some(0));
    let old = p.status()["run_id"].as_str().unwrap().to_string();
    let server = Cli::Claude.mock(vec![
        say("Ready."),
        bash("echo a > a.txt"),
        say("TASK_COMPLETE"),
    ]);
    let out = prompt_session(&p, &server, "/agentloop:start PLAN.md", None);
    let session = session_id(&out);
    let old_run = p.run(&["status", "--json", &old]);
    let old_run: Value = serde_json::from_str(&old_run.stdout).unwrap();
    assert_eq!(old_run["status"], "stopped", "{old_run}");
    assert_eq!(old_run["refused_requests"], 0, "{old_run}");
    assert_eq!(old_run["session"], session.as_str());
    let new = p.status();
    assert_ne!(new["run_id"], old.as_str());
    assert_eq!(new["status"], "completed", "{new}");
    assert_eq!(new["session"], session.as_str());
}
