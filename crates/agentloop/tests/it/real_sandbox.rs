//! The real Claude Code and Codex CLIs in `[sandbox] mode = "workspace"`, against the
//! mock model servers: the model has the CLI write outside the project, read a
//! planted key, reach example.com and write into `.agentloop/`. Each fails, is
//! journaled as a refusal and told in the next prompt, and nothing outside the project
//! changed; the task's own work, and the model traffic to the allowed mock host, go on.

use crate::real_cli::{Cli, journal_events, say};
use crate::support::Project;

const PLAN: &str = "# Boxed\n\n## T1: Hello\nVerify: test -f hello.txt\n\nCreate hello.txt.\n\n## T2: World\nDepends: T1\nVerify: grep -q world world.txt\n\nCreate world.txt containing world.\n";

/// Every file below `d` but the CLI's own directories (which it may write).
fn listing(d: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if [".claude", ".codex", ".cache", ".claude.json"].contains(&name.as_str()) {
            continue;
        }
        out.push(p.display().to_string());
        if p.is_dir() {
            out.extend(listing(&p));
        }
    }
    out.sort();
    out
}

fn confined(cli: Cli) {
    let steps = vec![
        cli.shell("echo x > ~/outside", 100, 10),
        cli.shell("cat ~/.ssh/id_rsa", 100, 10),
        cli.shell("curl -sS -m 5 https://example.com/ | head -c 100", 100, 10),
        cli.shell("echo y > .agentloop/evil", 100, 10),
        cli.shell("echo hello > hello.txt", 100, 10),
        say("Done. TASK_COMPLETE", 100, 10, 0),
        cli.shell("echo world > world.txt", 100, 10),
        say("Done. TASK_COMPLETE", 100, 10, 0),
    ];
    let (p, home, server) = boxed(cli, steps);
    let h = home.path();
    let before = listing(h);
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert_eq!(listing(h), before, "nothing outside the project changed");
    assert!(!p.path().join(".agentloop/evil").exists());
    assert!(p.path().join("hello.txt").exists() && p.path().join("world.txt").exists());
    // The CLI saw each command fail (what its shell tool sent back to the model).
    let sent: String = server
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    assert!(!sent.contains("PLANTED"), "the key never reached the model");
    assert!(sent.contains("Read-only file system"), "{sent}");
    let denied: Vec<(String, String)> = journal_events(&p)
        .iter()
        .filter(|e| e["kind"] == "sandbox_denied")
        .map(|e| {
            (
                e["data"]["kind"].as_str().unwrap_or("").to_string(),
                e["data"]["target"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let hs = h.display().to_string();
    for want in [
        ("write".to_string(), format!("{hs}/outside")),
        ("read".into(), format!("{hs}/.ssh")),
        ("network".into(), "example.com:443".into()),
        ("write".into(), ".agentloop/evil".into()),
    ] {
        assert!(denied.contains(&want), "{want:?} in {denied:?}");
    }
    assert!(
        !denied
            .iter()
            .any(|(_, t)| t.starts_with("127.0.0.1") || t.starts_with("localhost")),
        "the model traffic was let through: {denied:?}"
    );
    let prompt = std::fs::read_to_string(p.run_dir().join("iterations/0002/prompt.md")).unwrap();
    assert!(
        prompt.contains("network: example.com:443") && prompt.contains(&format!("{hs}/outside")),
        "{prompt}"
    );
}

/// A project driving `cli` in workspace mode against the mock playing `steps`, with a
/// home outside the project and /tmp (a planted key in it; the CLI's configuration in
/// its own directory there, so the home itself stays read-only).
fn boxed(
    cli: Cli,
    steps: Vec<agentloop_testkit::Step>,
) -> (Project, tempfile::TempDir, agentloop_testkit::MockServer) {
    let home = tempfile::Builder::new()
        .prefix("agentloop-home-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let h = home.path();
    let own = h.join(match cli {
        Cli::Claude => ".claude",
        _ => ".codex",
    });
    std::fs::create_dir_all(&own).unwrap();
    std::fs::create_dir_all(h.join(".ssh")).unwrap();
    std::fs::write(
        h.join(".ssh/id_rsa"),
        "-----BEGIN OPENSSH PRIVATE KEY-----\nPLANTED\n",
    )
    .unwrap();
    let server = cli.mock(steps);
    let config = cli.config(&server, h);
    let config = match cli {
        Cli::Claude => config.replace(
            &format!("CLAUDE_CONFIG_DIR = \"{}\"", h.display()),
            &format!("CLAUDE_CONFIG_DIR = \"{}\"", own.display()),
        ),
        _ => {
            std::fs::rename(h.join("config.toml"), own.join("config.toml")).unwrap();
            config.replace(
                &format!("CODEX_HOME = \"{}\"", h.display()),
                &format!("CODEX_HOME = \"{}\"", own.display()),
            )
        }
    };
    let mut p = crate::support::Scratch::new().plan(PLAN).build();
    p.write(
        "agentloop.toml",
        format!("{config}\n[sandbox]\nmode = \"workspace\"\n"),
    );
    p.commit("agent configuration");
    p.env = vec![("HOME".into(), h.display().to_string())];
    (p, home, server)
}

/// The hosts an agent may reach are read when the run is created: Codex writing a new
/// address into its own config file (which it may write) does not open it.
#[test]
fn codex_cannot_widen_its_own_allow_list() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let reached = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = reached.clone();
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            drop(c);
        }
    });
    let cli = Cli::Codex;
    let (p, _home, _server) = boxed(
        cli,
        vec![
            cli.shell(
                &format!("printf '# base_url = \"http://127.0.0.1:{port}/v1\"\\n' >> \"$CODEX_HOME/config.toml\""),
                100,
                10,
            ),
            cli.shell("echo hello > hello.txt", 100, 10),
            say("Done. TASK_COMPLETE", 100, 10, 0),
            cli.shell(
                &format!("curl -sS -m 5 http://127.0.0.1:{port}/ ; echo world > world.txt"),
                100,
                10,
            ),
            say("Done. TASK_COMPLETE", 100, 10, 0),
        ],
    );
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(
        !reached.load(std::sync::atomic::Ordering::SeqCst),
        "the address the agent added was reached"
    );
    let refused = journal_events(&p).into_iter().any(|e| {
        e["kind"] == "sandbox_denied" && e["data"]["target"] == format!("127.0.0.1:{port}")
    });
    assert!(refused, "the refusal is journaled");
}

#[test]
fn claude_code_in_the_sandbox() {
    confined(Cli::Claude);
}

#[test]
fn codex_in_the_sandbox() {
    confined(Cli::Codex);
}
