//! The Stop hook's latency on a run with 1,000 tasks and a 100,000-event journal,
//! fed the recorded Stop input, beside the anchor in the same run: the ralph-loop
//! plugin's Stop hook, written again from its documented behaviour (bash, jq, perl,
//! sed on its front-matter state file and the session's transcript).
//!
//! `cargo bench -p agentloop --bench hook` (env `CALLS`, default 40; `CLAIMS`, default 20:
//! Stop hooks that each verify a claim on a 2,000-file project, with the run's resident
//! and without it)

#[path = "common/mod.rs"]
mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agentloop_config::Config;
use agentloop_ground::signals::Signals;
use agentloop_journal as journal;
use agentloop_journal::*;
use agentloop_plan::Plan;

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
    let mut plan = String::from("---\nbudgets:\n  max_iterations: 10000\n---\n# Thousand\n\n");
    for i in 0..1000 {
        plan.push_str(&format!(
            "## T{i}: Task {i}\n\nDo thing {i}.\n\nAcceptance:\n- [ ] thing {i} works\n\n"
        ));
    }
    std::fs::write(root.join("PLAN.md"), &plan).unwrap();
    std::fs::write(root.join(".gitignore"), ".agentloop/\n").unwrap();
    // A tool's shape: no person asked before the first iteration.
    std::fs::write(root.join("agentloop.toml"), "[run]\nshape = \"tool\"\n").unwrap();
    git(&["add", "-A"]);
    git(&["commit", "-qm", "bench"]);
    // The project's files are older than the run, as a real project's are (a file
    // written in the last two seconds is never trusted by the surface's stamp).
    std::thread::sleep(std::time::Duration::from_millis(2100));
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
                checkpoint: None,
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
    let call = |cmd: &mut Command, input: &str| {
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
    let (first, out) = call(
        Command::new(bin).args(["hook", "stop"]).current_dir(root),
        &input,
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("\"decision\":\"block\""),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let cached = std::fs::read(run_dir.join("state.json")).unwrap();
    if let Err(e) = serde_json::from_slice::<agentloop_journal::RunState>(&cached) {
        panic!("state.json does not load as a cache: {e}");
    }
    let mut ours = Vec::new();
    for _ in 0..calls {
        let (d, out) = call(
            Command::new(bin).args(["hook", "stop"]).current_dir(root),
            &input,
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("\"decision\":\"block\""));
        ours.push(d);
    }
    let events = journal::read(&j).unwrap().records.len();

    // The anchor: the ralph-loop plugin's Stop hook, written again from its documented
    // behaviour — bash reads the front matter of its state file, jq the transcript's
    // last assistant message, perl the promise tag, sed rewrites the iteration, jq
    // prints the block — on a transcript of the same session length.
    let transcript = root.join("transcript.jsonl");
    let mut t = String::new();
    for n in 0..200 {
        t.push_str(&serde_json::json!({"type": "user", "message": {"role": "user", "content": format!("step {n}")}}).to_string());
        t.push('\n');
        t.push_str(&serde_json::json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": format!("Worked on step {n}; the tests are not green yet.")}]}}).to_string());
        t.push('\n');
    }
    std::fs::write(&transcript, t).unwrap();
    let state = root.join(".claude/ralph-loop.local.md");
    std::fs::create_dir_all(state.parent().unwrap()).unwrap();
    std::fs::write(
        &state,
        "---\nactive: true\niteration: 1\nmax_iterations: 100000\ncompletion_promise: \"ALL TASKS DONE\"\n---\n\nWork through PLAN.md one task at a time; run the tests.\n",
    )
    .unwrap();
    let script = format!(
        r#"set -euo pipefail
input=$(cat)
state="{state}"
[ -f "$state" ] || exit 0
front=$(sed -n '/^---$/,/^---$/{{ /^---$/d; p; }}' "$state")
iteration=$(printf '%s\n' "$front" | grep '^iteration:' | sed 's/iteration: *//')
max=$(printf '%s\n' "$front" | grep '^max_iterations:' | sed 's/max_iterations: *//')
promise=$(printf '%s\n' "$front" | grep '^completion_promise:' | sed 's/completion_promise: *//; s/^"\(.*\)"$/\1/')
case "$iteration$max" in *[!0-9]*) rm -f "$state"; exit 0;; esac
if [ "$max" -gt 0 ] && [ "$iteration" -ge "$max" ]; then rm -f "$state"; exit 0; fi
transcript=$(printf '%s' "$input" | jq -r '.transcript_path')
last=$(grep '"role":"assistant"' "$transcript" | tail -n 1)
text=$(printf '%s' "$last" | jq -r '.message.content | map(select(.type == "text")) | map(.text) | join("\n")')
if [ -n "$promise" ]; then
  said=$(printf '%s' "$text" | perl -0777 -ne 'print $1 if /<promise>(.*?)<\/promise>/s' | perl -pe 's/^\s+|\s+$//g; s/\s+/ /g')
  if [ "$said" = "$promise" ]; then rm -f "$state"; exit 0; fi
fi
next=$((iteration + 1))
prompt=$(awk '/^---$/{{c++; next}} c>=2' "$state")
tmp="$state.tmp.$$"
sed "s/^iteration: .*/iteration: $next/" "$state" > "$tmp" && mv "$tmp" "$state"
jq -n --arg prompt "$prompt" --arg msg "ralph iteration $next | to stop: output <promise>$promise</promise>" '{{decision: "block", reason: $prompt, systemMessage: $msg}}'
"#,
        state = state.display()
    );
    let script_path = root.join("ralph-stop.sh");
    std::fs::write(&script_path, script).unwrap();
    let mut ralph_input: serde_json::Value = serde_json::from_str(&input).unwrap();
    ralph_input["transcript_path"] = serde_json::json!(transcript);
    let ralph_input = ralph_input.to_string();
    let mut theirs = Vec::new();
    for _ in 0..calls {
        let (d, out) = call(
            Command::new("bash").arg(&script_path).current_dir(root),
            &ralph_input,
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("\"decision\": \"block\""),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        theirs.push(d);
    }
    let iteration = std::fs::read_to_string(&state).unwrap();
    assert!(
        iteration.contains(&format!("iteration: {}", calls + 1)),
        "{iteration}"
    );
    let (p50, p90) = (percentile(&mut ours, 0.5), percentile(&mut ours, 0.9));
    let (j50, j90) = (percentile(&mut theirs, 0.5), percentile(&mut theirs, 0.9));
    println!("stop hook: 1,000 tasks, {events}-event journal, {calls} calls, recorded Stop input");
    println!(
        "  agentloop hook stop: p50 {p50:.1} ms, p90 {p90:.1} ms (first call, full fold: {:.0} ms)",
        first.as_secs_f64() * 1000.0
    );
    println!(
        "  ralph-loop's hook (bash, jq, perl, sed; re-implemented): p50 {j50:.1} ms, p90 {j90:.1} ms"
    );
    println!("  ratio (agentloop / ralph-loop, p50): {:.2}", p50 / j50);
    if std::env::var_os("KEEP").is_some() {
        std::mem::forget(dir);
    }
    let claims = common::env_usize("CLAIMS", 20);
    if claims > 0 {
        let with = claimed(bin, claims, false);
        let without = claimed(bin, claims, true);
        println!(
            "stop hook that verifies a claim (2,000 files, `Verify: test -f …`), {claims} claims, p50 / p90:"
        );
        println!(
            "  the run's resident asked: {:.1} / {:.1} ms",
            with.0, with.1
        );
        println!(
            "  no resident (a project too deep for its socket): {:.1} / {:.1} ms",
            without.0, without.1
        );
    }
}

/// `claims` Stop hooks in a row, each claiming a task whose file was just written, on
/// a 2,000-file project; p50 and p90 in ms. `deep`: the project lies too deep for the
/// resident's socket, so every hook verifies the full way.
fn claimed(bin: &str, claims: usize, deep: bool) -> (f64, f64) {
    let top = tempfile::tempdir().unwrap();
    let root = if deep {
        top.path()
            .join("a-project-whose-path-is-too-long-for-a-unix-socket-".repeat(2))
    } else {
        top.path().join("p")
    };
    std::fs::create_dir_all(&root).unwrap();
    let mut plan = String::from("# Claims\n\n");
    for k in 0..=claims {
        plan.push_str(&format!(
            "## T{k}: task {k}\n\nVerify: test -f done/f{k}.txt\n\n"
        ));
    }
    common::git(&root, &["init", "-q"]);
    std::fs::write(root.join("PLAN.md"), plan).unwrap();
    for i in 0..2000 {
        let d = root.join(format!("src/m{}", i / 100));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join(format!("f{i}.py")),
            format!("def f{i}():\n    return {i}\n"),
        )
        .unwrap();
    }
    std::fs::create_dir_all(root.join("done")).unwrap();
    std::fs::write(root.join("done/.keep"), "").unwrap();
    std::fs::write(root.join(".gitignore"), ".agentloop/\n").unwrap();
    std::fs::write(root.join("agentloop.toml"), "[run]\nshape = \"tool\"\n").unwrap();
    common::git(&root, &["add", "-A"]);
    common::git(&root, &["commit", "-qm", "bench"]);
    std::thread::sleep(Duration::from_millis(2100));
    let out = Command::new(bin)
        .args(["hook", "start"])
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fixture = |name: &str| {
        let bytes = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../../shared/fixtures/claude-code-2.1.197")
                .join(name),
        )
        .unwrap();
        let mut v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        v["cwd"] = serde_json::json!(root);
        // A person's message in between each time: no chain of continuations that
        // Claude Code would cut at eight.
        v["stop_hook_active"] = serde_json::json!(false);
        v.to_string()
    };
    let (start, claim) = (
        fixture("stop-hook-input.json"),
        fixture("stop-hook-input-active.json"),
    );
    let stop = |input: &str| {
        let mut child = Command::new(bin)
            .args(["hook", "stop"])
            .current_dir(&root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let t = Instant::now();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        (
            t.elapsed(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (_, out) = stop(&start);
    assert!(out.contains("Your task: T0"), "{out}");
    let mut took = Vec::new();
    for k in 0..claims {
        std::fs::write(root.join(format!("done/f{k}.txt")), "done").unwrap();
        let (d, out) = stop(&claim);
        assert!(out.contains(&format!("Your task: T{}", k + 1)), "{out}");
        // The first claim starts the resident, the second has it make the copy.
        if k >= 2 {
            took.push(d);
        }
    }
    (percentile(&mut took, 0.5), percentile(&mut took, 0.9))
}
