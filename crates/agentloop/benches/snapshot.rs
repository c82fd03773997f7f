//! One snapshot of a large work tree (what each iteration's end takes to know what the
//! agent changed), beside its anchor in the same run: a plain `git status
//! --porcelain` of the same tree. Three snapshots are timed: the full one (one `git
//! status`, what an iteration that claims a task ends with), the watched one after an
//! agent rewrote three files (`exec::watch`: git asked about those only), and the
//! watched one when nothing was touched.
//!
//! `cargo bench -p agentloop --bench snapshot` (env `FILES`, default 100,000; `RUNS`,
//! default 15)

#[path = "common/mod.rs"]
mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use agentloop_exec::git::Snapshots;
use agentloop_exec::watch::Watched;

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1000.0
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let files = common::env_usize("FILES", 100_000);
    let runs = common::env_usize("RUNS", 15);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    common::git(root, &["init", "-q"]);
    for i in 0..files {
        let d = root.join(format!("src/d{}/e{}", i / 10_000, (i / 100) % 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&d).unwrap();
        }
        std::fs::write(d.join(format!("f{i}.rs")), format!("pub fn f{i}() {{}}\n")).unwrap();
    }
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    common::git(root, &["add", "-A"]);
    common::git(root, &["commit", "-qm", "bench"]);
    // An agent's work: three files edited, two new, junk that is ignored.
    for i in [7, 4_242, files - 1] {
        let d = format!("src/d{}/e{}", i / 10_000, (i / 100) % 100);
        std::fs::write(root.join(format!("{d}/f{i}.rs")), "pub fn changed() {}\n").unwrap();
    }
    std::fs::write(root.join("src/new.rs"), "pub fn new() {}\n").unwrap();
    std::fs::write(root.join("NOTES.md"), "notes\n").unwrap();
    std::fs::create_dir_all(root.join("target")).unwrap();
    std::fs::write(root.join("target/junk"), "x").unwrap();
    // The index's stat data is up to date, as after any earlier status.
    common::git(root, &["status", "-s"]);

    let snapshots = Snapshots::known(root);
    let t = Instant::now();
    let mut watched = Watched::start(snapshots.clone()).expect("the tree can be watched");
    let started = t.elapsed();
    watched.take(false).expect("the first snapshot");
    let (mut full, mut touched, mut quiet, mut anchor) = (vec![], vec![], vec![], vec![]);
    for run in 0..runs {
        let t = Instant::now();
        let s = snapshots.take().expect("a snapshot");
        full.push(t.elapsed());
        assert_eq!(
            s.dirty.len(),
            if run == 0 { 5 } else { 8 },
            "{:?}",
            s.dirty.keys()
        );
        let t = Instant::now();
        let out = Command::new("git")
            .args(["status", "--porcelain"])
            .current_dir(root)
            .output()
            .unwrap();
        anchor.push(t.elapsed());
        assert!(out.status.success());
        // An iteration's agent rewrites three files.
        for i in [11, 5_555, files - 2] {
            let d = format!("src/d{}/e{}", i / 10_000, (i / 100) % 100);
            std::fs::write(root.join(format!("{d}/f{i}.rs")), format!("// {run}\n")).unwrap();
        }
        let t = Instant::now();
        let s = watched.take(false).expect("a watched snapshot");
        touched.push(t.elapsed());
        assert_eq!(s.dirty.len(), 8, "{:?}", s.dirty.keys());
        let t = Instant::now();
        let again = watched.take(false).expect("a watched snapshot");
        quiet.push(t.elapsed());
        assert_eq!(again, s);
    }
    println!("snapshot of a {files}-file work tree, {runs} runs, median:");
    println!(
        "  full (one git status, 5 to 8 paths changed): {:.1} ms",
        median(full)
    );
    println!(
        "  watched, 3 files rewritten since the last: {:.1} ms",
        median(touched)
    );
    println!("  watched, nothing touched: {:.3} ms", median(quiet));
    println!("  anchor, git status --porcelain: {:.1} ms", median(anchor));
    println!(
        "  starting the watch (once per driver): {:.1} ms",
        started.as_secs_f64() * 1000.0
    );
}
