//! The executors against each other: a plan of 16 independent tasks whose scripted
//! agent takes a fixed 2 s, 4 workers, run by the local executor and then as Slurm
//! jobs on a one-node cluster on this machine (`scripts/slurm-cluster`). Prints the
//! wall time of each, and the overhead per job: from `iteration_started` to
//! `agent_finished` in the journal, less the agent's own 2 s (for Slurm: the push of
//! the task's start, `sbatch`, the scheduler, the clone on the node, the push of the
//! result and its fetch back), and as Kubernetes Jobs on the API stand-in of
//! agentloop-testkit (its pods are processes of this machine: what this measures is
//! agentloop's own overhead, the API calls, the watch and the log, not a cluster's).
//!
//! `cargo bench -p agentloop --bench executors` (env `TASKS`, default 16; `SECONDS`,
//! default 2; `WORKERS`, default 4; `ROUNDS`, default 1)

#[path = "common/mod.rs"]
mod common;

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use agentloop_journal::{self as journal, Event};

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let tasks = common::env_usize("TASKS", 16);
    let seconds = common::env_usize("SECONDS", 2);
    let workers = common::env_usize("WORKERS", 4);
    let rounds = common::env_usize("ROUNDS", 1);
    let state = tempfile::tempdir().unwrap();
    common::isolate(state.path());
    let cluster = Path::new(env!("CARGO_TARGET_TMPDIR")).join("slurm-bench");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/slurm-cluster");
    let out = Command::new(&script)
        .arg("ensure")
        .arg(&cluster)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let conf = String::from_utf8_lossy(&out.stdout).trim().to_string();
    println!("executors: {tasks} independent tasks, a {seconds} s agent each, {workers} workers");
    let k = agentloop_testkit::MockKubernetes::start("bench", "64", "256Gi");
    let kubeconfig = state.path().join("kubeconfig");
    std::fs::write(&kubeconfig, k.kubeconfig("bench")).unwrap();
    let env = [
        ("SLURM_CONF", conf.as_str()),
        ("KUBECONFIG", kubeconfig.to_str().unwrap()),
    ];
    for round in 0..rounds {
        for kind in ["local", "slurm", "kubernetes"] {
            let extra = match kind {
                "kubernetes" => format!(
                    "program = \"{}\"\n[executor.kubernetes]\nimage = \"bench\"\n",
                    env!("CARGO_BIN_EXE_agentloop")
                ),
                _ => String::new(),
            };
            let (wall, overhead) = run(kind, &extra, tasks, seconds, workers, &env);
            println!(
                "  round {round}, {kind}: wall {wall:.2} s (ideal {:.1} s); overhead per job: median {:.0} ms, max {:.0} ms",
                (tasks * seconds) as f64 / workers as f64,
                overhead[overhead.len() / 2],
                overhead[overhead.len() - 1]
            );
        }
    }
    let _ = Command::new(&script).arg("stop").arg(&cluster).output();
}

/// One run: its wall time in seconds and each job's overhead in ms, sorted.
fn run(
    kind: &str,
    extra: &str,
    tasks: usize,
    seconds: usize,
    workers: usize,
    env: &[(&str, &str)],
) -> (f64, Vec<f64>) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    std::fs::create_dir_all(&root).unwrap();
    common::parallel_project(
        &root,
        tasks,
        (seconds, seconds),
        workers,
        &format!("[executor]\nkind = \"{kind}\"\npoll = \"200ms\"\n{extra}"),
    );
    common::git(dir.path(), &["init", "-q", "--bare", "origin.git"]);
    common::git(&root, &["remote", "add", "origin", "../origin.git"]);
    common::git(&root, &["push", "-q", "origin", "main"]);
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .args(["run", "--quiet"])
        .current_dir(&root)
        .env("NO_COLOR", "1")
        .envs(env.iter().copied())
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
    let mut overhead = Vec::new();
    for r in &c.records {
        match &r.event {
            Event::IterationStarted(s) => {
                started.insert(s.iteration, r.time_ms());
            }
            Event::AgentFinished(f) => {
                if let Some(s) = started.get(&f.iteration) {
                    let ms = r.time_ms().saturating_sub(*s) as f64 - (seconds * 1000) as f64;
                    overhead.push(ms);
                }
            }
            _ => {}
        }
    }
    overhead.sort_by(|a, b| a.total_cmp(b));
    (wall, overhead)
}
