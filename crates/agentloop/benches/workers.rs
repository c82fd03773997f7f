//! Workers against wall time: a plan of 16 independent tasks whose scripted agent
//! takes a fixed 2 s, driven by the real binary at 1, 2, 4 and 8 workers. Prints the
//! wall time, the speed-up over one worker, and what the merge queue adds per task
//! (from `merge_started` to `merged` in the journal, less the checks it ran).
//!
//! `cargo bench -p agentloop --bench workers` (env `TASKS`, default 16; `SECONDS`,
//! default 2; `WORKERS`, default "1,2,4,8")

#[path = "common/mod.rs"]
mod common;

use std::process::Command;
use std::time::Instant;

use agentloop_core::journal::{self, Event};

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let tasks = common::env_usize("TASKS", 16);
    let seconds = common::env_usize("SECONDS", 2);
    let counts: Vec<usize> = std::env::var("WORKERS")
        .unwrap_or_else(|_| "1,2,4,8".into())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    println!("workers: {tasks} independent tasks, a {seconds} s agent each");
    // One state directory (journal key) for every round: the key is read once.
    let state = tempfile::tempdir().unwrap();
    common::isolate(state.path());
    let mut one = None;
    for n in counts {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        common::parallel_project(root, tasks, seconds, n, "");
        let t = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_agentloop"))
            .args(["run", "--quiet"])
            .current_dir(root)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let wall = t.elapsed().as_secs_f64();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let run = std::fs::read_dir(root.join(".agentloop/runs"))
            .unwrap()
            .flatten()
            .next()
            .unwrap()
            .path();
        let c = journal::read(&run.join("journal.jsonl")).unwrap();
        let mut started = std::collections::HashMap::new();
        let mut merge_ms = Vec::new();
        for r in &c.records {
            match &r.event {
                Event::MergeStarted { iteration, .. } => {
                    started.insert(*iteration, r.time_ms());
                }
                Event::Merged { iteration, .. } => {
                    if let Some(s) = started.get(iteration) {
                        merge_ms.push(r.time_ms().saturating_sub(*s));
                    }
                }
                _ => {}
            }
        }
        // The checks the queue ran on the merged result, as the merge logs time them.
        let mut checks_ms = Vec::new();
        for e in std::fs::read_dir(run.join("iterations")).unwrap().flatten() {
            if let Ok(log) = std::fs::read_to_string(e.path().join("merge.log")) {
                let ms: f64 = log
                    .lines()
                    .filter_map(|l| l.strip_prefix("[exit 0 after "))
                    .filter_map(|l| l.strip_suffix("s]"))
                    .filter_map(|s| s.parse::<f64>().ok())
                    .sum::<f64>()
                    * 1000.0;
                checks_ms.push(ms);
            }
        }
        let speedup = match one {
            None => {
                one = Some(wall);
                1.0
            }
            Some(w) => w / wall,
        };
        if merge_ms.is_empty() {
            println!("  {n} worker(s): wall {wall:.2} s (in the working tree, no merge queue)");
        } else {
            merge_ms.sort_unstable();
            let median = merge_ms[merge_ms.len() / 2] as f64;
            checks_ms.sort_by(|a, b| a.total_cmp(b));
            let checks = checks_ms.get(checks_ms.len() / 2).copied().unwrap_or(0.0);
            println!(
                "  {n} workers: wall {wall:.2} s, speed-up {speedup:.2}x; merge queue per task: median {median:.0} ms from merge_started to merged, of which {checks:.0} ms the checks on the merged result"
            );
        }
    }
}
