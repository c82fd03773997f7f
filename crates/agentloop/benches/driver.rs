//! Driver overhead per iteration, excluding the agent and verification: the real
//! binary drives a plan of trivial tasks in a real git repository; the journal's own
//! timings of the agent are subtracted from the wall-clock time.
//!
//! Then, as a user sees it, beside its anchor in the same run and the same repository:
//! the time per iteration, agent included, of agentloop and of a naive bash loop that
//! spawns the same agent, runs one `git status --porcelain` and appends one line to a
//! file.
//!
//! `cargo bench -p agentloop --bench driver` (env `TASKS`, default 200; `FILES`,
//! default 2,000)

#[path = "common/mod.rs"]
mod common;

use std::process::Command;
use std::time::Instant;

use agentloop_journal as journal;
use agentloop_journal::Event;

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let tasks: usize = common::env_usize("TASKS", 200);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    common::isolate(root);
    // A project of realistic size for git to look at (env `FILES`, default 2,000).
    let files: usize = common::env_usize("FILES", 2000);
    common::trivial_project(root, tasks, files, "cat >/dev/null; echo TASK_COMPLETE", "");
    // The project's files are older than the run, as a real project's are (a file
    // written in the last two seconds is hashed at every surface check).
    std::thread::sleep(std::time::Duration::from_millis(2100));

    // What making a file costs where the bench runs: agentloop makes five per
    // iteration (its directory, the prompt, the agent's log and pid, the result), the
    // naive loop none, so the ratio moves with it (`TMPDIR` picks the place).
    let create_ms = common::create_cost(root);
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .args(["run", "--quiet"])
        .current_dir(root)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let wall = t.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let runs = root.join(".agentloop/runs");
    let run = std::fs::read_dir(&runs)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let c = journal::read(&run.join("journal.jsonl")).unwrap();
    let mut agent_ms = 0u64;
    let mut verify_ms = 0u64;
    let mut iterations = 0u64;
    for r in &c.records {
        match &r.event {
            Event::AgentFinished(a) => {
                agent_ms += a.duration_ms;
                iterations += 1;
            }
            Event::VerifyFinished(v) => {
                verify_ms += v.commands.iter().map(|c| c.duration_ms).sum::<u64>()
            }
            _ => {}
        }
    }
    let overhead = wall.as_secs_f64() * 1000.0 - agent_ms as f64 - verify_ms as f64;
    println!("driver overhead: {tasks} tasks, {iterations} iterations, {files}-file repository");
    println!(
        "  wall {:.0} ms, agent {agent_ms} ms, verification {verify_ms} ms",
        wall.as_secs_f64() * 1000.0
    );
    println!(
        "  overhead per iteration: {:.2} ms",
        overhead / iterations as f64
    );

    // The anchor: the loop a user would write in bash, on the same repository.
    let naive = format!(
        r#"i=0
while [ $i -lt {tasks} ]; do
  i=$((i+1))
  printf 'Task %s: nothing to do.\n' $i | sh -c 'cat >/dev/null; echo TASK_COMPLETE' > .git/naive-out
  git status --porcelain > /dev/null
  echo "iteration $i: $(cat .git/naive-out)" >> .git/naive-log
done
"#
    );
    let t = Instant::now();
    let ok = Command::new("bash")
        .args(["-c", &naive])
        .current_dir(root)
        .status()
        .unwrap()
        .success();
    let naive_wall = t.elapsed();
    assert!(ok, "the naive loop failed");
    let ours = wall.as_secs_f64() * 1000.0 / iterations as f64;
    let theirs = naive_wall.as_secs_f64() * 1000.0 / tasks as f64;
    println!("end to end, agent included, per iteration:");
    println!("  agentloop run: {ours:.2} ms");
    println!("  naive bash loop (agent, git status, one line appended): {theirs:.2} ms");
    println!("  ratio (agentloop / naive loop): {:.2}", ours / theirs);
    println!(
        "  a file made in {}: {create_ms:.3} ms (median of 100)",
        root.parent().unwrap_or(root).display()
    );
}
