//! One snapshot of a large work tree (what each iteration's end takes to know what the
//! agent changed), beside its anchor in the same run: a plain `git status
//! --porcelain` of the same tree.
//!
//! `cargo bench -p agentloop --bench snapshot` (env `FILES`, default 100,000; `RUNS`,
//! default 15)

#[path = "common/mod.rs"]
mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use agentloop_core::exec::git::Snapshots;

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
    let (mut ours, mut anchor) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let t = Instant::now();
        let s = snapshots.take().expect("a snapshot");
        ours.push(t.elapsed());
        assert_eq!(s.dirty.len(), 5, "{:?}", s.dirty.keys());
        let t = Instant::now();
        let out = Command::new("git")
            .args(["status", "--porcelain"])
            .current_dir(root)
            .output()
            .unwrap();
        anchor.push(t.elapsed());
        assert!(out.status.success());
    }
    println!("snapshot of a {files}-file work tree (5 paths changed), {runs} runs, median:");
    println!("  agentloop snapshot: {:.1} ms", median(ours));
    println!("  anchor, git status --porcelain: {:.1} ms", median(anchor));
}
