//! Hook mode inside a Codex and a Gemini CLI session, the real programs against the
//! mocks: `agentloop hook install --agent codex|gemini` writes their hook settings,
//! and their `Stop` / `AfterAgent` hook drives one session through the plan with the
//! same verification, journal and usage accounting as Claude Code's.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::real_cli::{Cli, say};
use crate::support::{Project, Scratch, assert_ok};

const PLAN: &str =
    "# Two\n\n## T1: A\nVerify: test -f a.txt\n\n## T2: B\nDepends: T1\nVerify: test -f b.txt\n";

/// A hook-mode run of `PLAN` with agentloop's hooks installed for `agent` and
/// committed, as a user would.
fn setup(agent: &str) -> Project {
    let p = Scratch::new().plan(PLAN).build();
    let r = p.run(&["hook", "install", "--agent", agent]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    p.commit("agentloop's hooks");
    let r = p.run(&["hook", "start"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // It names the CLI whose hooks are installed.
    let cli = if agent == "codex" {
        "Codex"
    } else {
        "Gemini CLI"
    };
    assert!(
        r.stderr
            .contains(&format!("the next {cli} session in this project")),
        "{}",
        r.stderr
    );
    p
}

/// The CLI in the project with agentloop's state where its hooks find it.
fn session(p: &Project, program: &str, env: &[(String, String)]) -> Command {
    let mut c = Command::new(program);
    c.current_dir(p.path())
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("XDG_STATE_HOME", p.state_home())
        .env("XDG_CACHE_HOME", p.cache.path())
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn run_with_prompt(mut c: Command, prompt: &str) -> std::process::Output {
    let mut child = c.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(prompt.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// Both tasks verified in one session; every continuation went to the same
/// conversation and carried agentloop's prompt; the session's tokens were counted.
fn check_driven(p: &Project, server: &agentloop_testkit::MockServer, steps: usize) {
    let s = p.status();
    assert_eq!(s["status"], "completed", "{s}");
    assert_eq!(s["iterations"], 2);
    assert!(p.path().join("b.txt").exists());
    assert_eq!(server.steps_used(), steps, "one session, every step used");
    let last = server
        .requests()
        .into_iter()
        .rev()
        .find(|r| r.step.is_some())
        .unwrap();
    assert!(last.body.to_string().contains("Your task: T2"));
    assert!(
        s["tokens"]["input"].as_u64().unwrap() > 0,
        "the session's tokens were read from its transcript: {s}"
    );
    // Each model answer once, the session's turn before its first task too (10 + 20 +
    // 30 + 40 + 50 input tokens): Gemini CLI writes a message with tool calls twice,
    // and it still counts once.
    assert_eq!(
        (&s["tokens"]["input"], &s["tokens"]["output"]),
        (&serde_json::json!(150), &serde_json::json!(15)),
        "{s}"
    );
    let served = server.served();
    assert_eq!((served.input, served.output), (150, 15));
}

#[test]
fn codexs_stop_hook_drives_one_session_through_the_plan() {
    let server = Cli::Codex.mock(vec![
        say("Ready.", 10, 1, 0),
        Cli::Codex.shell("echo a > a.txt", 20, 2),
        say("TASK_COMPLETE", 30, 3, 0),
        Cli::Codex.shell("echo b > b.txt", 40, 4),
        say("TASK_COMPLETE", 50, 5, 0),
    ]);
    let p = setup("codex");
    let hooks = p.read(".codex/hooks.json");
    assert!(hooks.contains("hook stop"), "{hooks}");
    assert!(p.read(".codex/config.toml").contains("hooks = true"));
    // The session's Codex: the mock provider, this project trusted.
    let home = p.path().join(".git/codex-home");
    std::fs::create_dir_all(&home).unwrap();
    Cli::Codex.config(&server, &home);
    let mut config = std::fs::read_to_string(home.join("config.toml")).unwrap();
    config.push_str(&format!(
        "\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
        p.path().display()
    ));
    std::fs::write(home.join("config.toml"), config).unwrap();
    let env = vec![
        ("CODEX_HOME".to_string(), home.display().to_string()),
        ("HOME".into(), home.display().to_string()),
        ("MOCK_API_KEY".into(), "not-a-real-key".into()),
    ];
    let mut c = session(&p, "codex", &env);
    c.args([
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--sandbox",
        "danger-full-access",
        // Hooks need a person's review in Codex; this is the automation's way past it.
        "--dangerously-bypass-hook-trust",
        "-",
    ]);
    let out = run_with_prompt(c, "Start.");
    assert_ok(&out);
    check_driven(&p, &server, 5);
    // The continuation reached Codex as its hook prompt.
    let second = server
        .requests()
        .into_iter()
        .find(|r| r.step == Some(1))
        .unwrap();
    assert!(second.body.to_string().contains("hook_prompt"));
}

#[test]
fn geminis_after_agent_hook_drives_one_session_through_the_plan() {
    let server = Cli::Gemini.mock(vec![
        say("Ready.", 10, 1, 0),
        Cli::Gemini.shell("echo a > a.txt", 20, 2),
        say("TASK_COMPLETE", 30, 3, 0),
        Cli::Gemini.shell("echo b > b.txt", 40, 4),
        say("TASK_COMPLETE", 50, 5, 0),
    ]);
    let p = setup("gemini");
    let settings = p.read(".gemini/settings.json");
    assert!(settings.contains("hook after-agent"), "{settings}");
    let home = p.path().join(".git/gemini-home");
    std::fs::create_dir_all(&home).unwrap();
    Cli::Gemini.config(&server, &home);
    let mut env = Cli::Gemini.user_env(&server, &home);
    env.push(("GEMINI_CLI_TRUST_WORKSPACE".into(), "true".into()));
    let mut c = session(&p, "gemini", &env);
    c.args(["-o", "stream-json", "--approval-mode=yolo"]);
    let out = run_with_prompt(c, "Start.");
    assert_ok(&out);
    check_driven(&p, &server, 5);
}

#[test]
fn hook_install_registers_the_mcp_server_for_each_cli() {
    let p = Scratch::new().plan(PLAN).build();
    let install = |agent: &str| {
        let r = p.run(&["hook", "install", "--agent", agent, "--mcp"]);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
    };
    install("claude");
    let mcp: serde_json::Value = serde_json::from_str(&p.read(".mcp.json")).unwrap();
    assert_eq!(mcp["mcpServers"]["agentloop"]["args"][0], "mcp");
    install("gemini");
    let gemini: serde_json::Value = serde_json::from_str(&p.read(".gemini/settings.json")).unwrap();
    assert_eq!(gemini["mcpServers"]["agentloop"]["args"][0], "mcp");
    assert!(gemini["hooks"]["AfterAgent"].is_array());
    install("codex");
    let config: toml::Table = p.read(".codex/config.toml").parse().unwrap();
    assert_eq!(config["features"]["hooks"].as_bool(), Some(true));
    assert_eq!(
        config["mcp_servers"]["agentloop"]["args"][0].as_str(),
        Some("mcp")
    );
    // Twice changes nothing.
    let before = p.read(".codex/config.toml");
    install("codex");
    assert_eq!(p.read(".codex/config.toml"), before);
    // Uninstall takes the hooks out again, and the MCP server entries install added.
    let r = p.run(&["hook", "uninstall", "--agent", "codex"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(!p.path().join(".codex/hooks.json").exists());
    let config: toml::Table = p.read(".codex/config.toml").parse().unwrap();
    assert!(config.get("mcp_servers").is_none(), "{config}");
    assert_eq!(config["features"]["hooks"].as_bool(), Some(true));
    let r = p.run(&["hook", "uninstall", "--agent", "gemini"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(!p.path().join(".gemini/settings.json").exists());
    // One a person changed is theirs: left, and said.
    let mut mcp: serde_json::Value = serde_json::from_str(&p.read(".mcp.json")).unwrap();
    mcp["mcpServers"]["other"] = serde_json::json!({"command": "other-server"});
    p.write(".mcp.json", mcp.to_string());
    let r = p.run(&["hook", "uninstall"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let mcp: serde_json::Value = serde_json::from_str(&p.read(".mcp.json")).unwrap();
    assert!(mcp["mcpServers"].get("agentloop").is_none(), "{mcp}");
    assert_eq!(mcp["mcpServers"]["other"]["command"], "other-server");
    install("claude");
    let mut mcp: serde_json::Value = serde_json::from_str(&p.read(".mcp.json")).unwrap();
    mcp["mcpServers"]["agentloop"]["args"] = serde_json::json!(["mcp", "--mine"]);
    p.write(".mcp.json", mcp.to_string());
    let r = p.run(&["hook", "uninstall"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains("not as `install --mcp` wrote it"),
        "{}",
        r.stderr
    );
    assert!(p.read(".mcp.json").contains("--mine"));
}
