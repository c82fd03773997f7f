//! Hook mode with the real `claude`: agentloop's Stop hook drives one interactive
//! session through the plan, verifying each task itself.

use std::process::Command;

use agentloop_testkit::{Api, MockServer, Scenario, Step};
use serde_json::json;

use crate::real_cli::Cli;
use crate::support::{BIN, Project, Scratch, assert_ok, hook};

pub(crate) fn bash(cmd: &str) -> Step {
    Cli::Claude.shell(cmd, 10, 2)
}

pub(crate) fn say(text: &str) -> Step {
    crate::real_cli::say(text, 10, 2, 0)
}

const PLAN: &str = "# Three\n\n## T1: A\nVerify: test -f a.txt\n\n## T2: B\nDepends: T1\nVerify: test -f b.txt\n\n## T3: C\nDepends: T2\nVerify: test -f c.txt\n";

/// `claude` in the project, pointed at the mock, isolated from the user's config.
pub(crate) fn claude(p: &Project, server: &MockServer) -> Command {
    let home = p.path().join(".git/claude-home");
    std::fs::create_dir_all(&home).unwrap();
    let mut c = Command::new("claude");
    c.args([
        "--output-format",
        "stream-json",
        "--verbose",
        "--model",
        "claude-sonnet-4-5",
    ])
    .args([
        "--allowedTools",
        "Bash,Write,Read",
        "--disallowedTools",
        "WebFetch,WebSearch",
    ])
    .current_dir(p.path())
    .env("ANTHROPIC_BASE_URL", server.url())
    .env("ANTHROPIC_API_KEY", "sk-test-not-a-real-key")
    .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    .env("CLAUDE_CODE_MAX_RETRIES", "0")
    .env("CLAUDE_CONFIG_DIR", &home)
    // A home of its own: the login shells its Bash tool starts read no profile of
    // this machine's (a slow or broken one would be the test's problem otherwise).
    .env("HOME", &home)
    .env("NO_COLOR", "1")
    .env("XDG_CONFIG_HOME", p.xdg_config_home())
    // The hooks it runs share the project's agentloop state (and journal key).
    .env("XDG_STATE_HOME", p.state_home())
    .env("XDG_CACHE_HOME", p.cache.path())
    .stdin(std::process::Stdio::null());
    c
}

/// agentloop's hooks as `--settings` JSON.
pub(crate) fn hook_settings() -> String {
    json!({"hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": format!("{BIN} hook stop"), "timeout": 120}]}],
        "SessionStart": [{"hooks": [{"type": "command", "command": format!("{BIN} hook session-start"), "timeout": 60}]}],
    }})
    .to_string()
}

/// Runs `claude -p PROMPT` in the project with agentloop's hooks injected.
fn claude_session(p: &Project, server: &MockServer, prompt: &str) -> std::process::Output {
    claude(p, server)
        .args(["-p", prompt, "--settings", &hook_settings()])
        .output()
        .unwrap()
}

pub(crate) fn setup(plan: &str) -> Project {
    start(Scratch::new().plan(plan))
}

/// `hook start` in the project `scratch` builds.
pub(crate) fn start(scratch: Scratch) -> Project {
    let p = scratch.build();
    // No hooks installed here or in this home (the tests pass them with --settings):
    // it says so.
    let out = p
        .cmd(&["hook", "start"])
        .env("HOME", p.path().join(".git"))
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("the next agent CLI session")
            && stderr.contains("no agent CLI has agentloop's hooks here yet"),
        "{stderr}"
    );
    p
}

#[test]
fn the_stop_hook_drives_one_session_through_three_verified_tasks() {
    let server = Cli::Claude.mock(vec![
        say("Ready when you are."),
        bash("echo a > a.txt"),
        say("TASK_COMPLETE"),
        bash("echo b > b.txt"),
        say("TASK_COMPLETE"),
        bash("echo c > c.txt"),
        say("All three done.\nTASK_COMPLETE"),
    ]);
    let p = setup(PLAN);
    let out = claude_session(&p, &server, "Start.");
    assert_ok(&out);
    let s = p.status();
    assert_eq!(s["status"], "completed", "{s}");
    assert_eq!(s["iterations"], 3);
    for f in ["a.txt", "b.txt", "c.txt"] {
        assert!(p.path().join(f).exists(), "{f}");
    }
    assert_eq!(
        server.steps_used(),
        7,
        "one session: every continuation went to the same conversation"
    );
    // The continuations carried agentloop's prompts.
    let last = server
        .requests()
        .into_iter()
        .rev()
        .find(|r| r.step.is_some())
        .unwrap();
    assert!(
        last.body.to_string().contains("Your task: T3"),
        "the T3 prompt reached the model"
    );
}

#[test]
fn in_a_session_the_test_baseline_comes_first_and_a_task_is_done_on_its_named_test() {
    let server = Cli::Claude.mock(vec![
        say("Ready."),
        say("TASK_COMPLETE"),
        bash("touch done.txt"),
        say("Done now.\nTASK_COMPLETE"),
    ]);
    let check = "if [ -f done.txt ]; then c='<testcase classname=\"suite\" name=\"the_test\"/>'; else c='<testcase classname=\"suite\" name=\"the_test\"><failure message=\"no done.txt\"/></testcase>'; fi\nprintf '<testsuites><testsuite name=\"s\">%s</testsuite></testsuites>' \"$c\" > \"$AGENTLOOP_TEST_REPORT\"\n";
    let p = Scratch::new()
        .plan("# One\n\n## T1: Done\nVerify: sh check.sh\nTests: suite::the_test\n")
        .file("check.sh", check)
        .build();
    let r = p.run(&["hook", "start"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let out = claude_session(&p, &server, "Start.");
    assert_ok(&out);
    let s = p.status();
    assert_eq!(s["status"], "completed", "{s:#}");
    assert_eq!(s["tests_baseline"]["failing"], 1, "{s:#}");
    assert_eq!(s["tasks"][0]["evidence"]["named_passing"], 1, "{s:#}");
    // The false claim was caught by the named test, whose failure the retry carried.
    let retry = server
        .requests()
        .into_iter()
        .find(|r| r.step == Some(2))
        .unwrap();
    assert!(
        retry.body.to_string().contains("suite::the_test: failed"),
        "the retry prompt names the failing test"
    );
}

#[test]
fn what_a_session_breaks_before_its_first_stop_is_not_in_the_test_baseline() {
    // The session breaks a test that passes (`suite::other`) before the first stop,
    // which takes the baseline: the baseline is the tree `hook start` saw, so the
    // broken test is a regression, not a test "failing at the baseline".
    let server = Cli::Claude.mock(vec![
        bash("touch broken.txt"),
        say("Ready."),
        bash("touch done.txt"),
        say("TASK_COMPLETE"),
        say("TASK_COMPLETE"),
    ]);
    let check = "tc() { if [ \"$2\" = ok ]; then printf '<testcase classname=\"suite\" name=\"%s\"/>' \"$1\"; else printf '<testcase classname=\"suite\" name=\"%s\"><failure message=\"no\"/></testcase>' \"$1\"; fi; }\n{ printf '<testsuites><testsuite name=\"s\">'; tc the_test $( [ -f done.txt ] && echo ok ); tc other $( [ -f broken.txt ] || echo ok ); printf '</testsuite></testsuites>'; } > \"$AGENTLOOP_TEST_REPORT\"\n";
    let p = Scratch::new()
        .plan("# One\n\n## T1: Done\nMax-iterations: 2\nVerify: sh check.sh\nTests: suite::the_test\n")
        .file("check.sh", check)
        .file("agentloop.toml", "[breakers]\ndebug_after = 0\n")
        .build();
    let r = p.run(&["hook", "start"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let _ = claude_session(&p, &server, "Start.");
    let s = p.status();
    assert_ne!(s["tasks"][0]["status"], "done", "{s:#}");
    assert_eq!(
        s["tests_baseline"]["failing"], 1,
        "only the named test failed then: {s:#}"
    );
    let regressions = &s["tasks"][0]["evidence"]["regressions"];
    assert_eq!(regressions[0]["id"], "suite::other", "{s:#}");
}

#[test]
fn a_false_completion_is_caught_and_retried_in_the_same_session() {
    let server = Cli::Claude.mock(vec![
        say("Hi."),
        say("TASK_COMPLETE"),
        bash("echo a > a.txt"),
        say("Fixed.\nTASK_COMPLETE"),
    ]);
    let p = setup("# One\n\n## T1: A\nVerify: test -f a.txt\n");
    let out = claude_session(&p, &server, "Start.");
    assert_ok(&out);
    let s = p.status();
    assert_eq!(
        (s["status"].as_str(), s["iterations"].as_u64()),
        (Some("completed"), Some(2))
    );
    let retry = server
        .requests()
        .into_iter()
        .find(|r| r.step == Some(2))
        .unwrap();
    assert!(
        retry.body.to_string().contains("Last attempt failed"),
        "the retry prompt carries the digest"
    );
}

#[test]
fn a_cap_ends_the_session_instead_of_blocking() {
    let server = Cli::Claude.mock(vec![say("Hi."), say("TASK_COMPLETE"), say("TASK_COMPLETE")]);
    let p = setup(
        "---\nbudgets:\n  max_iterations: 2\n---\n# One\n\n## T1: A\nVerify: test -f a.txt\n",
    );
    let out = claude_session(&p, &server, "Start.");
    assert_ok(&out);
    let s = p.status();
    assert_eq!(s["status"], "paused");
    assert_eq!(s["budget_spent"], "budget spent: iterations 2 of 2");
    assert_eq!(
        server.steps_used(),
        3,
        "no request after the cap: the session ended"
    );
}

#[test]
fn a_second_session_in_the_same_repo_is_not_driven() {
    let server = Cli::Claude.mock(vec![
        say("Hi."),
        bash("echo a > a.txt"),
        say("TASK_COMPLETE"),
    ]);
    let p = setup("# One\n\n## T1: A\nVerify: test -f a.txt\n\n## T2: B\nVerify: test -f b.txt\n");
    // Bind the run to a first session by hand, as its first Stop would.
    let stop = |session: &str| {
        let mut c = p.cmd(&["hook", "stop"]);
        c.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = c.spawn().unwrap();
        let input = json!({"session_id": session, "cwd": p.path(), "hook_event_name": "Stop", "stop_hook_active": false, "last_assistant_message": "hello"});
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.to_string().as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let first = stop("session-one");
    assert!(first.contains("\"decision\":\"block\""), "{first}");
    // The real claude session is another one: its stops are left alone.
    let out = claude_session(&p, &server, "Start.");
    assert_ok(&out);
    assert_eq!(
        server.steps_used(),
        1,
        "the other session was not continued"
    );
    assert_eq!(p.status()["iterations"], 1);
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/fixtures/claude-code-2.1.197")
            .join(name),
    )
    .unwrap()
}

/// The recorded input, pointed at this project.
pub(crate) fn recorded(p: &Project, name: &str) -> Vec<u8> {
    let mut v: serde_json::Value = serde_json::from_slice(&fixture(name)).unwrap();
    v["cwd"] = json!(p.path());
    v.to_string().into_bytes()
}

#[test]
fn recorded_inputs_without_a_run_change_nothing() {
    let p = Project::git();
    p.write("PLAN.md", "# One\n\n## T1: A\nVerify: true\n");
    for name in ["stop-hook-input.json", "stop-hook-input-active.json"] {
        let before = p.tree();
        let (code, out, _) = hook(&p, "stop", &recorded(&p, name));
        assert_eq!(
            (code, out.as_str()),
            (Some(0), ""),
            "{name}: no run, no answer: the session stops as usual"
        );
        assert!(p.tree() == before);
    }
}

#[test]
fn recorded_stop_inputs_drive_a_hook_run() {
    let p = setup("# One\n\n## T1: A\nVerify: test -f a.txt\n");
    // The recorded stop ("Done. TASK_COMPLETE") starts task 1: a block with its prompt.
    let (code, out, _) = hook(&p, "stop", &recorded(&p, "stop-hook-input.json"));
    assert_eq!(code, Some(0));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["decision"], "block");
    assert!(
        v["reason"]
            .as_str()
            .unwrap()
            .contains("## Your task: T1 — A")
    );
    assert_eq!(
        v["systemMessage"],
        "agentloop: task 1/1 T1, attempt 1 of at most 16, $0.00"
    );
    // The next recorded stop claims completion, but a.txt is missing: retried with the digest.
    let (_, out, _) = hook(&p, "stop", &recorded(&p, "stop-hook-input-active.json"));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["decision"], "block");
    assert!(
        v["reason"]
            .as_str()
            .unwrap()
            .contains("## Last attempt failed"),
        "{v}"
    );
    // Once the file exists the claim verifies and the session may end.
    p.write("a.txt", "a");
    let (_, out, _) = hook(&p, "stop", &recorded(&p, "stop-hook-input-active.json"));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v,
        json!({"continue": false, "stopReason": "agentloop: the plan is complete and verified"})
    );
    // SessionStart of the bound session gets the run as context.
    let start = json!({"session_id": "d7a751d6-8da8-4164-91d3-0ee221b7b143", "cwd": p.path(), "hook_event_name": "SessionStart", "source": "resume"});
    let (code, out, _) = hook(&p, "session-start", start.to_string().as_bytes());
    assert_eq!(
        (code, out.as_str()),
        (Some(0), ""),
        "a finished run gives no context"
    );
}

#[test]
fn malformed_input_gets_a_non_blocking_answer_and_writes_nothing() {
    let p = setup("# One\n\n## T1: A\nVerify: true\n");
    let cases: [(&str, &[u8], &str); 4] = [
        (
            "stop",
            b"{not json",
            "agentloop: the hook input is not JSON: key must be a string at line 1 column 2",
        ),
        (
            "stop",
            b"[1, 2]",
            "agentloop: the hook input is not a JSON object",
        ),
        (
            "stop",
            br#"{"cwd": "/"}"#,
            "agentloop: the hook input has no session_id",
        ),
        (
            "pre-flight",
            b"{}",
            "agentloop: unknown hook event `pre-flight`",
        ),
    ];
    for (event, input, message) in cases {
        let before = p.tree();
        let (code, out, _) = hook(&p, event, input);
        assert_eq!(code, Some(0), "{message}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v, json!({"systemMessage": message}));
        assert!(p.tree() == before, "{message}: changed files");
    }
    // A corrupt journal: a clear message, no block, nothing written.
    let j = p.run_dir().join("journal.jsonl");
    let text = std::fs::read_to_string(&j)
        .unwrap()
        .replacen("\"One\"", "\"Two\"", 1);
    std::fs::write(&j, text).unwrap();
    let before = p.tree();
    let (code, out, _) = hook(&p, "stop", &recorded(&p, "stop-hook-input.json"));
    assert_eq!(code, Some(0));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let msg = v["systemMessage"].as_str().unwrap();
    assert!(
        msg.starts_with("agentloop: run ")
            && msg.contains("cannot be read, so it is not driven:")
            && msg.contains("first record is not sealed with this machine's key"),
        "{msg}"
    );
    assert!(v.get("decision").is_none(), "never a block");
    assert!(p.tree() == before);
}

#[test]
fn the_eight_block_limit_is_survived_by_picking_the_run_up_again() {
    let mut steps = vec![say("Hi.")];
    for i in 1..=10 {
        steps.push(bash(&format!("echo {i} > f{i}.txt")));
        steps.push(say("TASK_COMPLETE"));
    }
    // After 8 continuations in a row agentloop stops asking; the person's next
    // message resumes the session and the run goes on.
    steps.insert(17, say("Continuing."));
    let server = MockServer::start(Api::Anthropic, Scenario::new(steps));
    let mut plan = String::from("# Ten\n");
    for i in 1..=10 {
        plan.push_str(&format!("\n## T{i}: File {i}\nVerify: test -f f{i}.txt\n"));
    }
    let p = setup(&plan);
    let out = claude_session(&p, &server, "Start.");
    assert_ok(&out);
    let s = p.status();
    assert_eq!(s["status"], "running");
    let done = s["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["status"] == "done")
        .count();
    assert_eq!(done, 8, "eight continuations in a row, then the turn ended");
    assert_eq!(
        s["iterations"], 8,
        "no ninth iteration was started that Claude Code would not run"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let session = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find_map(|v| v["session_id"].as_str().map(String::from))
        .unwrap();
    // The person says "go on" in the same session.
    let out = claude(&p, &server)
        .args([
            "-p",
            "go on",
            "--resume",
            &session,
            "--settings",
            &hook_settings(),
        ])
        .output()
        .unwrap();
    assert_ok(&out);
    assert_eq!(p.status()["status"], "completed");
    assert_eq!(server.steps_used(), 22);
}

#[test]
fn install_merges_and_uninstall_removes_exactly_what_it_added() {
    let p = Project::git();
    let theirs = json!({"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}], "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit"}]}]}});
    p.write(
        ".claude/settings.json",
        serde_json::to_string_pretty(&theirs).unwrap(),
    );
    assert_eq!(p.run(&["hook", "install"]).code, Some(0));
    assert_eq!(
        p.run(&["hook", "install"]).code,
        Some(0),
        "installing twice adds nothing twice"
    );
    let v: serde_json::Value = serde_json::from_str(&p.read(".claude/settings.json")).unwrap();
    assert_eq!(v["model"], "opus");
    assert_eq!(v["hooks"]["Stop"].as_array().unwrap().len(), 2);
    assert!(
        v["hooks"]["Stop"][1]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .ends_with(" hook stop")
    );
    assert!(
        v["hooks"]["SessionStart"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .ends_with(" hook session-start")
    );
    assert_eq!(p.run(&["hook", "uninstall"]).code, Some(0));
    let back: serde_json::Value = serde_json::from_str(&p.read(".claude/settings.json")).unwrap();
    assert_eq!(back, theirs, "everything else is as it was");
    // A settings file that install created is gone after uninstall.
    let q = Project::git();
    assert_eq!(q.run(&["hook", "install"]).code, Some(0));
    assert_eq!(q.run(&["hook", "uninstall"]).code, Some(0));
    assert!(!q.path().join(".claude/settings.json").exists());
    // A broken settings file is refused and left alone.
    q.write(".claude/settings.json", "{ nope");
    let r = q.run(&["hook", "install"]);
    assert_eq!(r.code, Some(2));
    assert_eq!(q.read(".claude/settings.json"), "{ nope");
}

#[test]
fn the_plugin_directory_loads_the_same_hooks() {
    let server = Cli::Claude.mock(vec![
        say("Hi."),
        bash("echo a > a.txt"),
        say("TASK_COMPLETE"),
    ]);
    let p = setup("# One\n\n## T1: A\nVerify: test -f a.txt\n");
    let plugin = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugin");
    let bin_dir = std::path::Path::new(BIN).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = claude(&p, &server)
        .args(["-p", "Start.", "--plugin-dir"])
        .arg(&plugin)
        .env("PATH", path)
        .output()
        .unwrap();
    assert_ok(&out);
    assert_eq!(
        p.status()["status"],
        "completed",
        "the plugin's Stop hook drove the run"
    );
}

#[test]
fn team_hooks_refuse_unverified_completion_and_idle_teammates() {
    let p = setup(
        "# Team\n\n## T1: Build A\nVerify: test -f a.txt\n\n## T2: Build B\nDepends: T1\nVerify: test -f b.txt\n",
    );
    let input = |extra: serde_json::Value| {
        let mut v = json!({"session_id": "team-lead", "cwd": p.path()});
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        v.to_string().into_bytes()
    };
    let (code, _, err) = hook(
        &p,
        "task-completed",
        &input(
            json!({"hook_event_name": "TaskCompleted", "task_id": "1", "task_subject": "T1: Build A", "teammate_name": "ada"}),
        ),
    );
    assert_eq!(code, Some(2), "refused: a.txt is missing");
    assert!(
        err.starts_with("agentloop: task T1 is not complete: verification failed."),
        "{err}"
    );
    // Rewriting what verifies the task does not complete it.
    let plan = p.read("PLAN.md");
    p.write(
        "PLAN.md",
        plan.replace("Verify: test -f b.txt", "Verify: true"),
    );
    p.write("a.txt", "a");
    let (code, _, err) = hook(
        &p,
        "task-completed",
        &input(json!({"task_subject": "T1: Build A"})),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("files that verify it changed since the run began: PLAN.md"),
        "{err}"
    );
    p.write("PLAN.md", plan);
    let (code, _, _) = hook(
        &p,
        "task-completed",
        &input(json!({"task_subject": "T1: Build A", "teammate_name": "ada"})),
    );
    assert_eq!(code, Some(0), "verified: accepted");
    // The run counts it done, so the team's next task is T2.
    let s = p.status();
    assert_eq!(s["tasks"][0]["status"], "done", "{s}");
    assert!(crate::support::journal_has(&p, "team_task_completed"));
    let (code, _, _) = hook(
        &p,
        "task-completed",
        &input(json!({"task_subject": "Something else entirely"})),
    );
    assert_eq!(code, Some(0), "not a plan task: not ours to judge");
    let (code, _, err) = hook(
        &p,
        "teammate-idle",
        &input(json!({"hook_event_name": "TeammateIdle", "teammate_name": "ada"})),
    );
    assert_eq!(code, Some(2));
    assert_eq!(
        err.trim(),
        "agentloop: task T2 (Build B) is pending and ready; take it next"
    );
}

#[test]
fn the_guard_denies_protected_and_out_of_scope_edits() {
    let p = setup("# G\n\n## T1: Parser\nScope: src/parser/\nVerify: true\n");
    // Start T1 so its scope applies.
    let (_, out, _) = hook(&p, "stop", json!({"session_id": "s", "cwd": p.path(), "stop_hook_active": false, "last_assistant_message": "hi"}).to_string().as_bytes());
    assert!(out.contains("\"decision\":\"block\""));
    let edit = |file: &str| {
        let input = json!({"session_id": "s", "cwd": p.path(), "hook_event_name": "PreToolUse", "tool_name": "Write", "tool_input": {"file_path": p.path().join(file), "content": "x"}});
        hook(&p, "pre-tool-use", input.to_string().as_bytes()).1
    };
    let denied = edit("agentloop.toml");
    assert!(
        denied.contains("\"permissionDecision\":\"deny\"")
            && denied.contains("agentloop.toml is protected"),
        "{denied}"
    );
    let outside = edit("src/main.rs");
    assert!(
        outside.contains("task T1 may only change src/parser/; src/main.rs is outside"),
        "{outside}"
    );
    assert_eq!(
        edit("src/parser/lexer.rs"),
        "",
        "inside the scope: no objection"
    );
    assert!(
        p.run(&["hook", "install", "--guard"])
            .stderr
            .contains("6 agentloop hooks")
    );
    assert!(
        p.read(".claude/settings.json")
            .contains(" hook pre-tool-use")
    );
}

#[test]
fn a_stop_failure_rate_limit_waits_like_driver_mode() {
    let p = setup("---\nlimits:\n  wait: 1s\n---\n# L\n\n## T1: A\nVerify: test -f a.txt\n");
    let stop = |active: bool| {
        let input = json!({"session_id": "s", "cwd": p.path(), "stop_hook_active": active, "last_assistant_message": "Working."});
        hook(&p, "stop", input.to_string().as_bytes()).1
    };
    assert!(stop(false).contains("\"decision\":\"block\""));
    let (code, out, _) = hook(&p, "stop-failure", json!({"session_id": "s", "cwd": p.path(), "hook_event_name": "StopFailure", "error": "rate_limit"}).to_string().as_bytes());
    assert_eq!(code, Some(0));
    assert!(
        out.contains("rate_limit: the run waits for the reset"),
        "{out}"
    );
    let log = p.run(&["log"]).stdout;
    assert!(
        log.contains("limit_hit") && log.contains("Limited"),
        "{log}"
    );
    // Before the reset the session ends waiting; after it the task goes on, retries untouched.
    assert!(stop(false).contains("waiting for a usage limit to reset"));
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let next = stop(false);
    assert!(
        next.contains("\"decision\":\"block\"") && next.contains("attempt 1 of at most 16"),
        "{next}"
    );
}

#[test]
fn a_subagent_finishing_does_not_end_the_task_iteration() {
    let p = setup("# One\n\n## T1: A\nVerify: test -f a.txt\n");
    let stop = json!({"session_id": "s", "cwd": p.path(), "hook_event_name": "Stop", "stop_hook_active": false, "last_assistant_message": "Hello."});
    let (_, out, _) = hook(&p, "stop", stop.to_string().as_bytes());
    assert!(out.contains("\"decision\":\"block\""), "{out}");
    let journal = p.run_dir().join("journal.jsonl");
    let before = std::fs::read(&journal).unwrap();
    // Sent to `hook stop` (as an older install did) or to its own entry point: a
    // subagent's end is typed by its event name and changes nothing.
    let sub = json!({"session_id": "s", "cwd": p.path(), "hook_event_name": "SubagentStop", "stop_hook_active": false, "agent_id": "a1", "agent_type": "general-purpose", "last_assistant_message": "TASK_COMPLETE"});
    for entry in ["stop", "subagent-stop"] {
        let (code, out, _) = hook(&p, entry, sub.to_string().as_bytes());
        assert_eq!((code, out.as_str()), (Some(0), ""));
    }
    assert_eq!(std::fs::read(&journal).unwrap(), before, "nothing recorded");
    assert_eq!(p.status()["iterations"], 1);
    assert_eq!(p.status()["tasks"][0]["status"], "running");
}

/// In hook mode too, checks that cannot be confined are said once (recorded) by the
/// stop that runs them, not again by the stops after it.
#[test]
fn in_hook_mode_unconfined_checks_are_recorded_once() {
    let p = start(
        Scratch::new()
            .plan("# One\n\n## T1: A\nVerify: test -f a.txt\n")
            .config("[sandbox]\nbwrap = \"/nonexistent/bwrap\"\n"),
    );
    let said = |p: &Project| {
        crate::workers::events(p)
            .iter()
            .filter(|e| e["kind"] == "checks_unconfined")
            .count()
    };
    hook(&p, "stop", &recorded(&p, "stop-hook-input.json"));
    hook(&p, "stop", &recorded(&p, "stop-hook-input-active.json"));
    assert_eq!(said(&p), 1, "the verifying stop says it");
    p.write("a.txt", "a");
    hook(&p, "stop", &recorded(&p, "stop-hook-input-active.json"));
    assert_eq!(said(&p), 1, "not again");
    assert_eq!(p.status()["verdict"], "MONITOR");
}

/// `hook start` says what the session that claims the run gets first: the plan's
/// approval where the run waits for it, else task 1; `--yes` starts without the gates
/// that only confirm, as `run --yes` does.
#[test]
fn hook_start_says_whether_the_run_waits_for_approval_and_yes_skips_it() {
    let p = Scratch::new()
        .plan("# One\n\n## T1: Done\nVerify: test -f done.txt\n")
        .config("[gates]\nplan_approval = true\n")
        .build();
    let r = p.run(&["hook", "start"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("claims it and waits for the plan's approval"),
        "{}",
        r.stderr
    );
    let r = p.run(&["hook", "start", "--yes"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains("claims it and gets task 1"),
        "{}",
        r.stderr
    );
    let j = std::fs::read_to_string(p.run_dir().join("journal.jsonl")).unwrap();
    let created = j.lines().next().unwrap();
    assert!(created.contains("\"plan_approval\":false"), "{created}");
}
