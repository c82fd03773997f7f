//! What agentloop adds to an agent CLI's iteration, beside a bare run of the same CLI on
//! the same prompt in the same run: Qwen Code, Factory Droid and Cline (pinned, as
//! `scripts/test` installs them) against the testkit's mock Chat Completions API, which
//! answers each with a shell tool call and then `TASK_COMPLETE`. agentloop's figure is
//! a whole `agentloop run` of a one-task plan: creating the run, probing the CLI, the
//! baseline, the iteration, and the task's verification.
//!
//! `cargo bench -p agentloop --bench agents` (env `RUNS`, default 5; `AGENTS`, default
//! `qwen,droid,cline`).

#[path = "common/mod.rs"]
mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use agentloop_testkit::{Api, MockServer, Scenario, Step, Tokens};
use common::{tools, write};
use serde_json::json;

const PROMPT: &str = "Create hello.txt containing hello.";

/// The mock's answers: the CLI's shell tool writes the file, then it says it is done.
fn server(cli: &str) -> MockServer {
    let (tool, input) = match cli {
        "qwen" => (
            "run_shell_command",
            json!({"command": "echo hello > hello.txt"}),
        ),
        "cline" => (
            "run_commands",
            json!({"commands": ["echo hello > hello.txt"]}),
        ),
        _ => (
            "Execute",
            json!({"summary": "Create the file", "command": "echo hello > hello.txt",
                   "riskLevelReason": "It writes one file.", "riskLevel": "medium"}),
        ),
    };
    let tokens = Tokens {
        input: 100,
        output: 10,
        ..Tokens::default()
    };
    MockServer::start(
        Api::Chat,
        Scenario::new(vec![
            Step::Tool {
                name: tool.into(),
                input,
                tokens,
            },
            Step::Text {
                text: "TASK_COMPLETE".into(),
                tokens,
            },
        ]),
    )
}

/// The CLI's home, set up as a user with their own model would, and its variables.
fn home(cli: &str, dir: &Path, url: &str) -> Vec<(String, String)> {
    let home = dir.join(format!("{cli}-home"));
    let mut env = vec![("HOME".to_string(), home.display().to_string())];
    match cli {
        "qwen" => {
            write(
                &home,
                ".qwen/settings.json",
                r#"{"security": {"auth": {"selectedType": "openai"}}}"#,
            );
            env.extend(
                [
                    ("OPENAI_API_KEY", "not-a-real-key".to_string()),
                    ("OPENAI_BASE_URL", format!("{url}/v1")),
                    ("OPENAI_MODEL", "mock-model".into()),
                ]
                .map(|(k, v)| (k.to_string(), v)),
            );
        }
        "cline" => {
            // What `cline auth -p openai -k KEY -m MODEL -b URL` writes.
            let providers = json!({"version": 1, "lastUsedProvider": "openai-compatible",
                "modes": {}, "providers": {"openai-compatible": {"settings": {
                    "provider": "openai-compatible", "apiKey": "not-a-real-key",
                    "model": "mock-model", "baseUrl": format!("{url}/v1")},
                "updatedAt": "2026-12-06T00:00:00.000Z", "tokenSource": "manual"}}});
            write(
                &home,
                ".cline/data/settings/providers.json",
                &providers.to_string(),
            );
            // Bare as agentloop runs it: no hub daemon left behind.
            env.push(("CLINE_SESSION_BACKEND_MODE".into(), "local".into()));
        }
        _ => {
            let models = json!({"customModels": [{"model": "mock-model", "displayName": "Mock",
                "baseUrl": format!("{url}/v1"), "apiKey": "not-a-real-key",
                "provider": "generic-chat-completion-api", "maxOutputTokens": 4096}]});
            write(&home, ".factory/settings.json", &models.to_string());
            env.push(("FACTORY_AIRGAP_ENABLED".into(), "1".into()));
        }
    }
    env
}

/// The command line agentloop runs for `cli` (the adapters' own).
fn argv(cli: &str) -> Vec<String> {
    let mut c = agentloop_config::AgentConfig::builtin(cli);
    if cli == "droid" {
        c.model = Some("custom:mock-model".into());
    }
    let dir = Path::new("/tmp");
    let inv = agentloop_agents::Invocation {
        run_id: "bench",
        run_dir: dir,
        iteration: 1,
        workdir: dir,
        prompt: PROMPT,
        prompt_file: dir,
        log: dir,
        pid_file: dir,
        wrap: Vec::new(),
    };
    match cli {
        "qwen" => agentloop_agents::qwen::argv(&c, &inv),
        "cline" => agentloop_agents::cline::argv(&c, &inv),
        _ => agentloop_agents::droid::argv(&c, &inv),
    }
}

/// A new committed repository under `dir` with the one-task plan.
fn project(dir: &Path, name: &str, cli: &str) -> PathBuf {
    let root = dir.join(name);
    std::fs::create_dir_all(&root).unwrap();
    common::git(&root, &["init", "-q"]);
    write(
        &root,
        "PLAN.md",
        &format!("# Bench\n\n## T1: Hello\nVerify: test -f hello.txt\n\n{PROMPT}\n"),
    );
    let model = if cli == "droid" {
        "\n[agents.droid]\nmodel = \"custom:mock-model\"\n"
    } else {
        ""
    };
    write(
        &root,
        "agentloop.toml",
        &format!("[run]\nagent = \"{cli}\"\n{model}"),
    );
    write(&root, ".gitignore", ".agentloop/\n");
    common::git(&root, &["add", "-A"]);
    common::git(&root, &["commit", "-qm", "fixture"]);
    root
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let runs = common::env_usize("RUNS", 5);
    let agents = std::env::var("AGENTS").unwrap_or_else(|_| "qwen,droid,cline".into());
    let bin = tools().join("npm/node_modules/.bin");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let dir = tempfile::tempdir().unwrap();
    println!(
        "| CLI | bare run (median of {runs}) | agentloop run of one task | agentloop's part |"
    );
    println!("|---|---|---|---|");
    for cli in agents.split(',').map(str::trim) {
        if !bin.join(cli).exists() {
            println!("| {cli} | skipped: not installed (scripts/test installs it) | | |");
            continue;
        }
        let (mut bare, mut looped) = (Vec::new(), Vec::new());
        for n in 0..runs {
            // Bare: the CLI in a new repository, the prompt on stdin.
            let s = server(cli);
            let env = home(cli, dir.path(), &s.url());
            let root = project(dir.path(), &format!("{cli}-bare-{n}"), cli);
            let argv = argv(cli);
            let t = Instant::now();
            let mut child = Command::new(&argv[0])
                .args(&argv[1..])
                .current_dir(&root)
                .env("PATH", &path)
                .envs(env.iter().map(|(k, v)| (k, v)))
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(PROMPT.as_bytes())
                .unwrap();
            assert!(child.wait().unwrap().success(), "bare {cli}");
            bare.push(t.elapsed().as_secs_f64());
            assert!(root.join("hello.txt").exists(), "bare {cli} did the work");
            // Through agentloop: the same CLI, server answers and prompt's task.
            let s = server(cli);
            let env = home(cli, dir.path(), &s.url());
            let root = project(dir.path(), &format!("{cli}-loop-{n}"), cli);
            let t = Instant::now();
            let out = Command::new(env!("CARGO_BIN_EXE_agentloop"))
                .args(["run", "--yes", "--no-wait", "--quiet"])
                .current_dir(&root)
                .env("PATH", &path)
                .envs(env.iter().map(|(k, v)| (k, v)))
                .env("XDG_CACHE_HOME", dir.path().join("cache"))
                .env("XDG_STATE_HOME", dir.path().join("state"))
                .output()
                .unwrap();
            looped.push(t.elapsed().as_secs_f64());
            assert!(
                out.status.success(),
                "{cli}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let (b, l) = (median(bare), median(looped));
        println!(
            "| {cli} | {:.2} s | {:.2} s | {:+.2} s ({:.2}×) |",
            b,
            l,
            l - b,
            l / b
        );
    }
}
