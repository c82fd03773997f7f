//! Workers against wall time: a plan of independent tasks whose scripted agent sleeps,
//! driven by the real binary at several counts of workers and sizes of the merge
//! queue's batches. Prints the wall time, the speed-up over the first round, and
//! what the merge queue adds per task (from `merge_started` to `merged` in the
//! journal, and the checks it ran on merged results).
//!
//! `cargo bench -p agentloop --bench workers` (env `TASKS`, default 16; `SECONDS`, the
//! agent's seconds, `2` or a range `1-3` (task i takes lo + i mod the range's width),
//! default 2; `WORKERS`, default "1,2,4,8"; `BATCH`, the `[merge] batch` sizes,
//! default "1"; `CHECK_SECONDS`, a run-wide check of that many seconds, default 0).
//!
//! The merge queue's curve: `TASKS=32 SECONDS=1-3 CHECK_SECONDS=2 WORKERS=16
//! BATCH=1,4,8,16 cargo bench -p agentloop --bench workers`.

#[path = "common/mod.rs"]
mod common;

use std::process::Command;
use std::time::Instant;

use agentloop_journal::{self as journal, Event};

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let tasks = common::env_usize("TASKS", 16);
    let seconds = std::env::var("SECONDS").unwrap_or_else(|_| "2".into());
    let (lo, hi) = match seconds.split_once('-') {
        Some((a, b)) => (a.parse().unwrap(), b.parse().unwrap()),
        None => {
            let s = seconds.parse().unwrap();
            (s, s)
        }
    };
    let check = common::env_usize("CHECK_SECONDS", 0);
    let counts = common::env_list::<usize>("WORKERS", "1,2,4,8");
    let batches = common::env_list::<usize>("BATCH", "1");
    let config = if check > 0 {
        format!("[verify]\ncommands = [\"sleep {check}\"]\n")
    } else {
        String::new()
    };
    println!(
        "workers: {tasks} independent tasks, a {seconds} s agent each, a run-wide check of {check} s"
    );
    // One state directory (journal key) for every round: the key is read once.
    let state = tempfile::tempdir().unwrap();
    common::isolate(state.path());
    let mut one = None;
    let rounds: Vec<(usize, usize)> = counts
        .iter()
        .flat_map(|&n| batches.iter().map(move |&b| (n, b)))
        .collect();
    for (n, batch) in rounds {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let config = format!("{config}[merge]\nbatch = {batch}\n");
        common::parallel_project(root, tasks, (lo, hi), n, &config);
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
        let mut heads = std::collections::HashSet::new();
        // VALIDATE: from the last merge to its record; the test baseline: from the
        // driver's start to its record.
        let (mut last_merge, mut validate_ms) = (0u64, 0u64);
        let (mut driver_started, mut baseline_ms) = (None, 0u64);
        for r in &c.records {
            match &r.event {
                Event::DriverStarted { .. } => {
                    driver_started.get_or_insert(r.time_ms());
                }
                Event::TestsBaseline(_) => {
                    baseline_ms = r.time_ms().saturating_sub(driver_started.unwrap_or(0))
                }
                Event::Validated { .. } => validate_ms = r.time_ms().saturating_sub(last_merge),
                Event::MergeStarted { iteration, head } => {
                    started.insert(*iteration, r.time_ms());
                    heads.insert(head.clone());
                }
                Event::Merged { iteration, .. } => {
                    last_merge = r.time_ms();
                    if let Some(s) = started.get(iteration) {
                        merge_ms.push(r.time_ms().saturating_sub(*s));
                    }
                }
                _ => {}
            }
        }
        // The checks the queue ran on the merged result, as the merge logs time them.
        let mut checks_ms = Vec::new();
        let mut merged_checks = 0;
        let mut suite_runs = 0;
        for e in std::fs::read_dir(run.join("iterations")).unwrap().flatten() {
            if let Ok(log) = std::fs::read_to_string(e.path().join("merge.log")) {
                merged_checks += log
                    .lines()
                    .filter(|l| l.starts_with("$ test -f out/t"))
                    .count();
                suite_runs += log.lines().filter(|l| l.starts_with("$ sleep ")).count();
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
            // In batches only the log of a batch's last task times its checks: the
            // checks' total over the run, per task.
            let checks = checks_ms.iter().sum::<f64>() / tasks as f64;
            let md = std::fs::read_to_string(run.join("validation.md")).unwrap_or_default();
            let taken = md.matches("in the merge queue's last check").count();
            let rows = md.lines().filter(|l| l.starts_with("| `")).count();
            println!(
                "  {n} workers, batch {batch}: wall {wall:.2} s, speed-up {speedup:.2}x; {} batches, the run-wide check run {suite_runs} times and the tasks' own {merged_checks} times on merged results; merge queue per task: median {median:.0} ms from merge_started to merged, and {checks:.0} ms of checks on merged results per task over the run; the test baseline {baseline_ms} ms, VALIDATE {validate_ms} ms after the last merge, {taken} of its {rows} checks taken from the merge queue's last check",
                heads.len()
            );
        }
    }
}
