//! The Stop hook's latency on a run with 1,000 tasks and a 100,000-event journal,
//! fed the recorded Stop input, against a typical bash + jq Stop hook doing the same
//! bookkeeping (read the state JSON, update counters, write it back, print the block).
//!
//! `cargo bench -p agentloop --bench hook` (env `CALLS`, default 40)

#[path = "common/mod.rs"]
mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agentloop_core::config::Config;
use agentloop_core::journal;
use agentloop_core::journal::*;
use agentloop_core::plan::Plan;
use agentloop_core::signals::Signals;

fn percentile(v: &mut [Duration], p: f64) -> f64 {
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1000.0
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let calls: usize = common::env_usize("CALLS", 40);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    if std::env::var_os("KEEP").is_some() {
        eprintln!("project kept in {}", root.display());
    }
    let git = |args: &[&str]| common::git(root, args);
    git(&["init", "-q"]);
    common::isolate(root);
    let mut plan = String::from("---\nbudgets:\n  max_iterations: 1000000\n---\n# Thousand\n\n");
    for i in 0..1000 {
        plan.push_str(&format!(
            "## T{i}: Task {i}\n\nDo thing {i}.\n\nAcceptance:\n- [ ] thing {i} works\n\n"
        ));
    }
    std::fs::write(root.join("PLAN.md"), &plan).unwrap();
    std::fs::write(root.join(".gitignore"), ".agentloop/\n").unwrap();
    git(&["add", "-A"]);
    git(&["commit", "-qm", "bench"]);
    let bin = env!("CARGO_BIN_EXE_agentloop");
    // Keep the bench's runs out of the user's registry.
    let out = Command::new(bin)
        .args(["hook", "start"])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run_id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let run_dir = root.join(".agentloop/runs").join(&run_id);

    // Grow the journal to 100,000 events of controls and failed iterations (no task done).
    let j = run_dir.join("journal.jsonl");
    let mut bytes = std::fs::read(&j).unwrap();
    // After what `hook start` recorded (the run, its baseline).
    let mut seq = bytes.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
    let mut n = 0u32;
    let t = "2026-11-22T10:00:00.000Z";
    bytes.extend(journal::encode(
        seq,
        t,
        &Event::HookStop {
            session_id: "d7a751d6-8da8-4164-91d3-0ee221b7b143".into(),
            active: false,
            pid: None,
        },
    ));
    seq += 1;
    while seq <= 100_000 - 4 {
        n += 1;
        let task = format!("T{}", n % 1000);
        for e in [
            Event::IterationStarted(IterationStarted {
                iteration: n,
                task: task.clone(),
                attempt: 1,
                kind: IterationKind::Work,
                agent: "claude-session".into(),
                tree_before: None,
                head_before: None,
                steer: vec![],
                worktree: None,
            }),
            Event::AgentFinished(AgentFinished {
                iteration: n,
                exit_code: Some(0),
                output_bytes: 10,
                signals: Signals::default(),
                changed_files: vec!["src/x.rs".into()],
                ..AgentFinished::default()
            }),
            Event::IterationFinished(IterationFinished {
                iteration: n,
                outcome: Outcome::Aborted,
                reason: "bench".into(),
                digest: None,
                commit: None,
                agent_failed: false,
                fingerprint: None,
            }),
            Event::Control {
                id: format!("c{n}"),
                source: "bench".into(),
                request: Request::Steer {
                    note: "keep going".into(),
                },
                by: None,
            },
        ] {
            bytes.extend(journal::encode(seq, t, &e));
            seq += 1;
        }
    }
    std::fs::write(&j, &bytes).unwrap();
    let _ = Config::default();
    let _ = Plan::parse("x", "# x\n## A: a\n");

    let input = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/fixtures/claude-code-2.1.197/stop-hook-input.json"),
    )
    .unwrap();
    let mut input: serde_json::Value = serde_json::from_slice(&input).unwrap();
    input["cwd"] = serde_json::json!(root);
    let input = input.to_string();
    let call = |cmd: &mut Command| {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let t = Instant::now();
        let out = child.wait_with_output().unwrap();
        (t.elapsed(), out)
    };
    // The first call folds the whole journal and writes the cache; it is reported apart.
    let (first, out) = call(Command::new(bin).args(["hook", "stop"]).current_dir(root));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("\"decision\":\"block\""),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let cached = std::fs::read(run_dir.join("state.json")).unwrap();
    if let Err(e) = serde_json::from_slice::<agentloop_core::journal::RunState>(&cached) {
        panic!("state.json does not load as a cache: {e}");
    }
    let mut ours = Vec::new();
    for _ in 0..calls {
        let (d, out) = call(Command::new(bin).args(["hook", "stop"]).current_dir(root));
        assert!(String::from_utf8_lossy(&out.stdout).contains("\"decision\":\"block\""));
        ours.push(d);
    }
    let events = journal::read(&j).unwrap().records.len();

    // The bash + jq hook: the same bookkeeping on the same state.
    let state = run_dir.join("state.json");
    let script = format!(
        r#"input=$(cat)
active=$(printf '%s' "$input" | jq -r '.stop_hook_active')
tmp=$(mktemp "{dir}/state.XXXXXX")
jq --arg active "$active" '.iterations += 1 | .hook_chain = (if $active == "true" then .hook_chain + 1 else 0 end) | .tasks[0].iterations += 1' "{state}" > "$tmp" && mv "$tmp" "{state}"
task=$(jq -r '.tasks[] | select(.status != "done") | .id' "{state}" | head -n 1)
jq -n --arg task "$task" '{{decision: "block", reason: ("Work on task " + $task), systemMessage: ("loop: task " + $task)}}'
"#,
        dir = run_dir.display(),
        state = state.display()
    );
    let script_path = root.join("jq-hook.sh");
    std::fs::write(&script_path, script).unwrap();
    let mut theirs = Vec::new();
    for _ in 0..calls {
        let (d, out) = call(Command::new("bash").arg(&script_path).current_dir(root));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("block"),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        theirs.push(d);
    }
    let (p50, p90) = (percentile(&mut ours, 0.5), percentile(&mut ours, 0.9));
    let (j50, j90) = (percentile(&mut theirs, 0.5), percentile(&mut theirs, 0.9));
    println!("stop hook: 1,000 tasks, {events}-event journal, {calls} calls, recorded Stop input");
    println!(
        "  agentloop hook stop: p50 {p50:.1} ms, p90 {p90:.1} ms (first call, full fold: {:.0} ms)",
        first.as_secs_f64() * 1000.0
    );
    println!("  bash + jq hook:      p50 {j50:.1} ms, p90 {j90:.1} ms");
    println!("  ratio (agentloop / bash+jq, p50): {:.2}", p50 / j50);
    if std::env::var_os("KEEP").is_some() {
        std::mem::forget(dir);
    }
}
