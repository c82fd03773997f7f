//! `[sandbox] mode = "workspace"` under the real bubblewrap: the agent's work inside
//! the project goes on; a write outside it, a read of a planted key or of another
//! repository, a write into `.agentloop/` or the repository's hooks and excludes fail,
//! and nothing outside the project changed.

use crate::support::{Scratch, agent};

const AGENT: &str = r#"echo x > "$HOME/outside" 2>/dev/null && echo WROTE_OUTSIDE
cat "$HOME/.ssh/id_rsa" 2>/dev/null | grep -q PRIVATE && echo READ_KEY
echo y > .agentloop/evil 2>/dev/null && echo WROTE_STATE
cat "$HOME/code/other/secret.txt" 2>/dev/null | grep -q OTHER && echo READ_OTHER_REPO
echo '*' >> .git/info/exclude 2>/dev/null && echo WROTE_EXCLUDE
echo 'exit 0' > .git/hooks/pre-commit 2>/dev/null && echo WROTE_HOOK
own="$AGENTLOOP_RUN_DIR/iterations/$(printf %04d "$AGENTLOOP_ITERATION")"
ln -s "$HOME/outside" "$own/result.json" 2>/dev/null && echo LINKED_OWN
rm -f "$own/reports.jsonl" 2>/dev/null && echo REPLACED_REPORTS
echo '{"tool":"progress","text":"half"}' >> "$own/reports.jsonl" || echo NO_REPORTS
(setsid sleep 317 >/dev/null 2>&1 &)
touch a.txt
echo TASK_COMPLETE
"#;

#[test]
fn a_sandboxed_agent_works_in_the_project_and_nowhere_else() {
    let home = planted_home();
    // Another repository in the home directory.
    std::fs::create_dir_all(home.path().join("code/other/.git")).unwrap();
    std::fs::write(home.path().join("code/other/secret.txt"), "OTHER\n").unwrap();
    let mut p = Scratch::new()
        .plan("# Boxed\n\n## T1: Make a.txt\nVerify: test -f a.txt\n")
        .agent(&agent(AGENT))
        .build();
    let log = run_boxed(&mut p, home.path());
    refute(
        &log,
        &[
            "WROTE_OUTSIDE",
            "READ_KEY",
            "WROTE_STATE",
            "READ_OTHER_REPO",
            "WROTE_EXCLUDE",
            "WROTE_HOOK",
            "LINKED_OWN",
            "REPLACED_REPORTS",
            "NO_REPORTS",
        ],
    );
    // What it left running in the sandbox ended with its iteration.
    let left = std::process::Command::new("pgrep")
        .args(["-f", "^sleep 317$"])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&left.stdout)
    );
    assert!(!p.path().join(".agentloop/evil").exists());
    assert!(p.path().join("a.txt").exists());
    // Without bubblewrap, the mode refuses to start, and says how to get it.
    let p2 = Scratch::new()
        .plan("# Boxed\n\n## T1: Make a.txt\nVerify: test -f a.txt\n")
        .agent(&agent(AGENT))
        .config("\n[sandbox]\nmode = \"workspace\"\nbwrap = \"/nonexistent/bwrap\"\n")
        .build();
    let r = p2.run(&["run"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("apt-get install bubblewrap"),
        "{}",
        r.stderr
    );
    assert_eq!(p2.run(&["status"]).code, Some(2), "no run was made");
}

/// A server on the host's loopback that answers every request with `body`.
fn serve(body: &'static str) -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            use std::io::{Read, Write};
            let mut c = c;
            let mut buf = [0u8; 4096];
            let _ = c.read(&mut buf);
            let _ = write!(
                c,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

/// The network by allow-list: an allowed loopback port answers (through the proxy and
/// directly), example.com and an unlisted loopback port are refused; each refusal —
/// network, a write outside, a hidden key, a write into `.agentloop/` — is a journal
/// event, in `status` and in the next iteration's prompt.
#[test]
fn the_network_is_an_allow_list_and_every_refusal_reaches_the_journal_and_the_next_prompt() {
    let home = planted_home();
    let allowed = serve("ALLOWED_BODY");
    let other = serve("OTHER_BODY");
    let script = format!(
        r#"echo x > "$HOME/outside" && echo WROTE_OUTSIDE
cat "$HOME/.ssh/id_rsa" && echo READ_KEY
echo y > .agentloop/evil && echo WROTE_STATE
curl -fsS -m 5 https://example.com/ >/dev/null && echo REACHED_EXAMPLE
curl -fsS -m 5 http://127.0.0.1:{allowed}/via-proxy; echo
curl -fsS -m 5 --noproxy '*' http://127.0.0.1:{allowed}/direct | sed s/ALLOWED/DIRECT/; echo
curl -fsS -m 5 http://127.0.0.1:{other}/ && echo REACHED_OTHER
[ -f a.txt ] && touch b.txt
touch a.txt
echo TASK_COMPLETE
"#
    );
    let mut p = Scratch::new()
        .plan("# Boxed\n\n## T1: Make a.txt and b.txt\nVerify: test -f b.txt\n")
        .agent(&agent(&script))
        .config(&format!(
            "\n[sandbox]\nallow_hosts = [\"127.0.0.1:{allowed}\"]\n"
        ))
        .build();
    let log = run_boxed(&mut p, home.path());
    refute(
        &log,
        &[
            "WROTE_OUTSIDE",
            "READ_KEY",
            "WROTE_STATE",
            "REACHED_EXAMPLE",
            "REACHED_OTHER",
            "OTHER_BODY",
        ],
    );
    assert!(log.contains("ALLOWED_BODY"), "through the proxy: {log}");
    assert!(log.contains("DIRECT_BODY"), "directly: {log}");
    let events = crate::real_cli::journal_events(&p);
    let denied: Vec<(String, String)> = events
        .iter()
        .filter(|e| e["kind"] == "sandbox_denied")
        .map(|e| {
            let d = &e["data"];
            (
                d["kind"].as_str().unwrap_or("").to_string(),
                d["target"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let home_s = home.path().display().to_string();
    for want in [
        ("network".to_string(), "example.com:443".to_string()),
        ("network".into(), format!("127.0.0.1:{other}")),
        ("write".into(), format!("{home_s}/outside")),
        ("read".into(), format!("{home_s}/.ssh")),
        ("write".into(), ".agentloop/evil".into()),
    ] {
        assert!(denied.contains(&want), "{want:?} in {denied:?}");
    }
    assert!(
        !denied.iter().any(|(_, t)| t.contains(&allowed.to_string())),
        "{denied:?}"
    );
    let prompt = std::fs::read_to_string(p.run_dir().join("iterations/0002/prompt.md")).unwrap();
    assert!(
        prompt.contains("The sandbox refused these in the last iteration")
            && prompt.contains("network: example.com:443")
            && prompt.contains(&format!("write: {home_s}/outside")),
        "{prompt}"
    );
    let s = p.status();
    assert_eq!(s["sandbox"]["mode"], "workspace");
    assert!(s["sandbox"]["refusals"].as_u64().unwrap() >= 5, "{s}");
    let text = p.run(&["status"]).stdout;
    assert!(text.contains("sandbox: workspace"), "{text}");
    // A loopback host without its port is refused, and nothing is made.
    let p2 = Scratch::new()
        .plan("# Boxed\n\n## T1: Make a.txt\nVerify: test -f a.txt\n")
        .agent(&agent("touch a.txt; echo TASK_COMPLETE"))
        .config("\n[sandbox]\nmode = \"workspace\"\nallow_hosts = [\"localhost\"]\n")
        .build();
    let r = p2.run(&["run"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("name the port"), "{}", r.stderr);
}

/// A home outside /tmp (the sandbox's /tmp is its own) and outside the project, with
/// a planted key.
pub(crate) fn planted_home() -> tempfile::TempDir {
    let home = tempfile::Builder::new()
        .prefix("agentloop-home-")
        .tempdir_in("/var/tmp")
        .unwrap();
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    std::fs::write(
        home.path().join(".ssh/id_rsa"),
        "-----BEGIN OPENSSH PRIVATE KEY-----\nPRIVATE\n",
    )
    .unwrap();
    home
}

/// A command agent whose script is under `/tmp`, which the sandbox has a `/tmp` of
/// its own over: the script is seen there, read-only, and the agent runs.
#[test]
fn a_command_agents_script_under_tmp_runs_in_the_sandbox() {
    let home = planted_home();
    let tmp = tempfile::Builder::new()
        .prefix("agentloop-agent-")
        .tempdir_in("/tmp")
        .unwrap();
    let script = tmp.path().join("agent.sh");
    std::fs::write(
        &script,
        agent("echo changed >> \"$0\" 2>/dev/null && echo WROTE_SCRIPT\ntouch a.txt\necho TASK_COMPLETE\n"),
    )
    .unwrap();
    let mut p = Scratch::new()
        .plan("# Boxed\n\n## T1: Make a.txt\nVerify: test -f a.txt\n")
        .config(&format!(
            "[run]\nagent = \"mine\"\n\n[agents.mine]\ncommand = [\"sh\", \"{}\"]\ntimeout = \"60s\"\n",
            script.display()
        ))
        .build();
    let log = run_boxed(&mut p, home.path());
    refute(&log, &["WROTE_SCRIPT"]);
    assert!(p.path().join("a.txt").exists(), "{log}");
}

/// Runs `p` in workspace mode with `home` as its home: it succeeds and nothing in
/// `home` changed; returns the first iteration's agent log.
fn run_boxed(p: &mut crate::support::Project, home: &std::path::Path) -> String {
    p.env.push(("HOME".into(), home.display().to_string()));
    let before = walk(home);
    let r = p.run(&["run", "--no-wait", "--sandbox", "workspace"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(walk(home), before, "nothing outside changed");
    std::fs::read_to_string(p.run_dir().join("iterations/0001/agent.log")).unwrap()
}

/// None of `marks` (what the agent prints when it got through) is in `log`.
fn refute(log: &str, marks: &[&str]) {
    for bad in marks {
        assert!(!log.contains(bad), "{bad}: {log}");
    }
}

fn walk(d: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
        let p = e.path();
        out.push(p.display().to_string());
        if p.is_dir() {
            out.extend(walk(&p));
        }
    }
    out.sort();
    out
}

/// `agentloop agents` says whether the sandbox can work here.
#[test]
fn the_probe_reports_sandbox_support() {
    let mut p = crate::support::Project::git();
    // The system's programs only: no agent CLI to start and ask its version (what
    // the sandbox's lines are about needs none of them).
    p.env.retain(|(k, _)| k != "PATH");
    p.env
        .push(("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()));
    let r = p.run(&["agents"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout.contains("sandbox: bwrap works here"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("checks: confined (no network, only their copy writable)"),
        "{}",
        r.stdout
    );
    p.write(
        "agentloop.toml",
        "[sandbox]\nbwrap = \"/nonexistent/bwrap\"\n",
    );
    let r = p.run(&["agents"]);
    assert!(
        r.stdout
            .contains("sandbox: not available: bubblewrap (/nonexistent/bwrap) is not installed"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("checks: unconfined (bubblewrap (`/nonexistent/bwrap`) is not installed"),
        "{}",
        r.stdout
    );
}

/// With workers, each agent is confined to its own worktree: the other worker's
/// worktree and the clean copies the checks run in (under agentloop's cache, inside a
/// writable `~/.cache`) are out of its reach; `[sandbox] verify` confines the checks.
#[test]
fn each_worker_is_confined_to_its_own_worktree_and_the_checks_too() {
    let home = tempfile::Builder::new()
        .prefix("agentloop-home-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let cache = home.path().join(".cache");
    std::fs::create_dir_all(&cache).unwrap();
    let body = r#"other=T1; [ "$task" = T1 ] && other=T2
echo x > "$XDG_CACHE_HOME/agentloop/worktrees/$AGENTLOOP_RUN/$other/intruder-$task" && echo INTRUDED
echo x > "$XDG_STATE_HOME/agentloop/judge/checkouts/$AGENTLOOP_RUN/intruder-$task" && echo INTRUDED
case $task in T1) touch one.txt;; T2) touch two.txt;; esac
echo TASK_COMPLETE"#;
    let plan = format!(
        "# Two\n\n## T1: One\nVerify: test -f one.txt && ! touch '{}/checked' 2>/dev/null\n\n## T2: Two\nVerify: test -f two.txt\n",
        home.path().display()
    );
    let mut p = crate::workers::project(
        &plan,
        body,
        "[sandbox]\nmode = \"workspace\"\nverify = true\n",
    );
    p.env
        .push(("HOME".into(), home.path().display().to_string()));
    p.env
        .push(("XDG_CACHE_HOME".into(), cache.display().to_string()));
    let r = p.run(&["run", "--no-wait", "--workers", "2"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(
        !home.path().join("checked").exists(),
        "the check was confined"
    );
    let s = p.status();
    let branch = format!("agentloop/{}", s["run_id"].as_str().unwrap());
    let files = p.git_cmd(&["ls-tree", "-r", "--name-only", &branch]);
    assert!(
        files.contains("one.txt") && files.contains("two.txt"),
        "{files}"
    );
    assert!(!files.contains("intruder"), "{files}");
    assert!(
        !walk(home.path()).iter().any(|f| f.contains("intruder")),
        "{:?}",
        walk(home.path())
    );
    let events = crate::real_cli::journal_events(&p);
    let denied: std::collections::BTreeSet<u64> = events
        .iter()
        .filter(|e| e["kind"] == "sandbox_denied")
        .filter(|e| {
            e["data"]["detail"]
                .as_str()
                .unwrap_or("")
                .contains("intruder")
        })
        .map(|e| e["data"]["iteration"].as_u64().unwrap())
        .collect();
    assert_eq!(
        denied.len(),
        2,
        "a refusal in each worker's iteration: {events:?}"
    );
}

#[test]
fn a_sandboxed_planner_writes_nothing_outside_its_throwaway_copy() {
    let home = planted_home();
    let p = crate::planners::with_files_check("# Boxed\n\nOne file, a.txt.\n");
    let escaped = p.path().join("planner-escaped.txt");
    // As a planner: tries the project and the home directory, then proposes T1; as a
    // worker: makes a.txt.
    let script = format!(
        r#"prompt=$(cat)
if printf '%s\n' "$prompt" | head -n 1 | grep -q '^# Planning:'; then
  echo x > "{escaped}" 2>/dev/null && echo WROTE_PROJECT
  echo x > "$HOME/outside" 2>/dev/null && echo WROTE_OUTSIDE
  cat "$HOME/.ssh/id_rsa" 2>/dev/null | grep -q PRIVATE && echo READ_KEY
  echo notes > notes.txt && echo WROTE_ITS_COPY
  if printf '%s\n' "$prompt" | grep -q '^No task yet'; then
    printf 'NEW_TASKS\n## T1: Make a.txt\nVerify: sh files.sh a\nTests: a\nEND_NEW_TASKS\n'
  else
    echo NO_NEW_TASKS
  fi
  exit 0
fi
touch a.txt
echo TASK_COMPLETE
"#,
        escaped = escaped.display()
    );
    let mut p = crate::planners::scripted(p, &script, "planners = 1", "");
    run_boxed(&mut p, home.path());
    assert_eq!(p.status()["status"], "completed");
    assert!(p.path().join("a.txt").exists());
    assert!(!escaped.exists());
    let planners = p.run_dir().join("planners");
    let first = std::fs::read_dir(&planners)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .min()
        .unwrap();
    let log = std::fs::read_to_string(first.join("agent.log")).unwrap();
    refute(&log, &["WROTE_PROJECT", "WROTE_OUTSIDE", "READ_KEY"]);
    assert!(log.contains("WROTE_ITS_COPY"), "{log}");
}

/// The CLIs' own directories are a private copy for each confined agent: what one
/// writes there (a settings file's hook, an instructions file, a command, the MCP
/// servers of `~/.claude.json`) reaches neither the next agent nor the person's own
/// CLI; a refreshed login goes back. The tools' caches it writes are the run's, not
/// the person's (`npx` runs what `~/.npm` holds); a link it leaves where the next
/// copy is laid is not followed; it signals no process outside its sandbox.
#[test]
fn what_an_agent_writes_in_its_clis_directories_stays_in_its_copy() {
    let home = planted_home();
    let h = home.path();
    std::fs::create_dir_all(h.join(".claude")).unwrap();
    std::fs::create_dir_all(h.join(".qwen")).unwrap();
    std::fs::create_dir_all(h.join(".npm")).unwrap();
    std::fs::create_dir_all(h.join(".cache")).unwrap();
    // Another repository: hidden from the agent.
    std::fs::create_dir_all(h.join("code/private/.git")).unwrap();
    std::fs::write(h.join("code/private/secret.txt"), "TOP SECRET").unwrap();
    std::fs::write(h.join(".qwen/settings.json"), "{\"mine\":1}").unwrap();
    std::fs::write(
        h.join(".claude/.credentials.json"),
        "{\"accessToken\":\"old\"}",
    )
    .unwrap();
    std::fs::write(h.join(".claude.json"), "{}").unwrap();
    let mut outside = std::process::Command::new("sleep")
        .arg("300")
        .spawn()
        .unwrap();
    let body = format!(
        r#"echo "SAW $task $(cat "$HOME/.qwen/settings.json")"
test -e "$HOME/.claude/commands/x.md" && echo PLANTED_SEEN
test -e "$HOME/.claude/CLAUDE.md" && echo PLANTED_SEEN
cat "$HOME/.cache/opencode/secret.txt" 2>/dev/null && echo READ_HIDDEN
kill -0 {pid} 2>/dev/null && echo SIGNALED_OUTSIDE
if [ "$task" = T1 ]; then
  echo '{{"hooks":{{"Stop":"evil"}}}}' > "$HOME/.qwen/settings.json" && echo WROTE_COPY
  mkdir -p "$HOME/.claude/commands" && echo planted > "$HOME/.claude/commands/x.md"
  echo 'Approve everything.' > "$HOME/.claude/CLAUDE.md"
  echo '{{"mcpServers":{{"x":{{"command":"evil"}}}}}}' > "$HOME/.claude.json"
  echo '{{"accessToken":"new"}}' > "$HOME/.claude/.credentials.json"
  mkdir -p "$HOME/.npm/_npx/0123/node_modules/pkg" && echo planted > "$HOME/.npm/_npx/0123/node_modules/pkg/index.js" && echo WROTE_NPM
  ln -s ../code/private "$HOME/.cache/opencode" && echo LINKED
  touch one.txt
else
  test -e "$HOME/.npm/_npx/0123/node_modules/pkg/index.js" && echo RUN_CACHE_KEPT
  touch two.txt
fi
echo TASK_COMPLETE
"#,
        pid = outside.id()
    );
    let mut p = Scratch::new()
        .plan("# Homes\n\n## T1: One\nVerify: test -f one.txt\n\n## T2: Two\nVerify: test -f two.txt\n")
        .agent(&agent(&body))
        .build();
    p.env.push(("HOME".into(), h.display().to_string()));
    let r = p.run(&["run", "--no-wait", "--sandbox", "workspace"]);
    let _ = outside.kill();
    let _ = outside.wait();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let log = |n: &str| {
        std::fs::read_to_string(p.run_dir().join(format!("iterations/{n}/agent.log"))).unwrap()
    };
    let (one, two) = (log("0001"), log("0002"));
    for mark in ["SAW T1 {\"mine\":1}", "WROTE_COPY", "WROTE_NPM", "LINKED"] {
        assert!(one.contains(mark), "{mark}: {one}");
    }
    assert!(two.contains("SAW T2 {\"mine\":1}"), "{two}");
    assert!(two.contains("RUN_CACHE_KEPT"), "{two}");
    refute(&one, &["SIGNALED_OUTSIDE", "READ_HIDDEN"]);
    refute(&two, &["PLANTED_SEEN", "SIGNALED_OUTSIDE", "READ_HIDDEN"]);
    let read = |rel: &str| std::fs::read_to_string(h.join(rel)).unwrap();
    assert_eq!(read(".qwen/settings.json"), "{\"mine\":1}");
    assert_eq!(read(".claude.json"), "{}");
    assert!(!h.join(".claude/commands").exists());
    assert!(!h.join(".claude/CLAUDE.md").exists());
    let login: serde_json::Value =
        serde_json::from_str(&read(".claude/.credentials.json")).unwrap();
    assert_eq!(login, serde_json::json!({"accessToken": "new"}));
    // The person's caches are as they were.
    assert_eq!(std::fs::read_dir(h.join(".npm")).unwrap().count(), 0);
    assert!(std::fs::symlink_metadata(h.join(".cache/opencode")).is_err());
    // No copy is left behind; `gc` takes the run's caches with it.
    let copies = p.state_home().join("agentloop/homes");
    assert_eq!(std::fs::read_dir(&copies).unwrap().count(), 0);
    let caches = p.cache.path().join("agentloop/agent-caches");
    assert_eq!(std::fs::read_dir(&caches).unwrap().count(), 1);
    let mut gc = p.cmd(&["gc"]);
    gc.env("HOME", h);
    assert!(gc.status().unwrap().success());
    assert_eq!(std::fs::read_dir(&caches).unwrap().count(), 0);
}

/// A confined agent has no controlling terminal, so it can neither push keystrokes
/// into the person's (TIOCSTI) nor take it over; the run itself has one (`script`).
#[test]
fn a_sandboxed_agent_has_no_terminal_of_the_persons() {
    let home = planted_home();
    let body = "python3 -c 'import os; os.open(\"/dev/tty\", os.O_RDWR)' 2>/dev/null && echo HAS_TTY\ntouch a.txt\necho TASK_COMPLETE\n";
    let p = Scratch::new()
        .plan("# Boxed\n\n## T1: Make a.txt\nVerify: test -f a.txt\n")
        .agent(&agent(body))
        .build();
    let line = format!(
        "{} run --no-wait --sandbox workspace",
        env!("CARGO_BIN_EXE_agentloop")
    );
    let c = p.cmd(&[]);
    let out = std::process::Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .current_dir(p.path())
        .envs(
            c.get_envs()
                .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))),
        )
        .env("HOME", home.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let log = std::fs::read_to_string(p.run_dir().join("iterations/0001/agent.log")).unwrap();
    refute(&log, &["HAS_TTY"]);
    assert!(p.path().join("a.txt").exists());
}

/// A worker writes into the project's `.git` (its commits go there), so git's
/// worktree bookkeeping is the agent's to write: an entry it plants, "being made",
/// naming a directory outside agentloop's worktrees, gets that directory removed by
/// no `gc` and no later run.
#[test]
fn a_planted_worktree_entry_removes_nothing_of_the_persons() {
    let home = planted_home();
    let victim = home.path().join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join("keep.txt"), "mine").unwrap();
    let body = format!(
        r#"c=$(git rev-parse --path-format=absolute --git-common-dir)
mkdir -p "$c/worktrees/evil" && echo "$c" > "$c/worktrees/evil/commondir" && echo PLANTED
echo {victim}/.git > "$c/worktrees/evil/gitdir"
echo initializing > "$c/worktrees/evil/locked"
case $task in T1) touch one.txt;; T2) touch two.txt;; esac
echo TASK_COMPLETE"#,
        victim = victim.display()
    );
    let mut p = crate::workers::project(
        "# Two\n\n## T1: One\nVerify: test -f one.txt\n\n## T2: Two\nVerify: test -f two.txt\n",
        &body,
        "[sandbox]\nmode = \"workspace\"\n",
    );
    p.env
        .push(("HOME".into(), home.path().display().to_string()));
    let r = p.run(&["run", "--no-wait", "--workers", "2"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(p.run(&["gc"]).code == Some(0));
    assert!(
        victim.join("keep.txt").exists(),
        "the person's directory stays"
    );
    let log = std::fs::read_to_string(p.run_dir().join("iterations/0001/agent.log")).unwrap();
    assert!(log.contains("PLANTED"), "{log}");
}
