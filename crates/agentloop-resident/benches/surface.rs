//! What trust costs per verification: comparing the verification surface with the
//! run's baseline, and bringing the clean copy the checks run in up to date — on a
//! 10-file and a 2,000-file repository (a fifth of them tests), with the agent's
//! usual leftovers (edited sources, a new file). Beside them, in the same run, the
//! anchor: one `git status` snapshot, which every iteration already pays twice. Also
//! what trust added since: checking the copy's surface against agentloop's own copy
//! of the baseline (`mend`, part of every refresh), and setting up and ending the
//! trace of what the checks read (once per test baseline).
//!
//! `cargo bench -p agentloop-resident --bench surface`

use std::hint::black_box;

mod common;
use std::time::Instant;

use agentloop_exec::git::Snapshots;
use agentloop_exec::trace::Trace;
use agentloop_project::Project;
use agentloop_verify::clean_copy::CleanCopy;
use agentloop_verify::surface;
use criterion::{Criterion, criterion_group, criterion_main};

/// A committed repository of `files` files, then an agent's work on it.
fn repo(files: usize) -> tempfile::TempDir {
    let dir = common::python_repo(files, "# P\n\n## T1: t\nVerify: pytest -q tests\n");
    let root = dir.path();
    // The agent's work: a few sources edited, a new module, some ignored junk.
    for i in [1, 2, 3] {
        let p = root.join(format!("src/m0/f{i}.py"));
        if p.exists() {
            std::fs::write(p, "def changed():\n    return 0\n").unwrap();
        }
    }
    std::fs::write(root.join("src/new.py"), "x = 1\n").unwrap();
    std::fs::create_dir_all(root.join("__pycache__")).unwrap();
    std::fs::write(root.join("__pycache__/junk.pyc"), "junk").unwrap();
    dir
}

fn bench(c: &mut Criterion) {
    for files in [10usize, 2000] {
        let dir = repo(files);
        let root = dir.path();
        let rules = Project::from_names(root, &[], "PLAN.md", vec!["pytest -q tests".into()], &[]);
        let base = surface::record(root, &rules).unwrap();
        let copies = tempfile::tempdir().unwrap();
        let copy = CleanCopy {
            root: root.to_path_buf(),
            dir: copies.path().join("run"),
        };
        let t = Instant::now();
        copy.refresh(Some(&base), &[]).unwrap();
        println!(
            "clean copy, first verification of the run ({files} files): {:.1} ms (worktree add)",
            t.elapsed().as_secs_f64() * 1000.0
        );
        let snapshots = Snapshots::new(root).unwrap();
        let mut g = c.benchmark_group(format!("{files}_files"));
        g.sample_size(20);
        g.bench_function("anchor_git_status_snapshot", |b| {
            b.iter(|| black_box(snapshots.take()))
        });
        g.bench_function("surface_check", |b| {
            b.iter(|| black_box(surface::check(root, &base, &rules).unwrap()))
        });
        g.bench_function("clean_copy_refresh", |b| {
            b.iter(|| black_box(copy.refresh(Some(&base), &[]).unwrap()))
        });
        // Of the refresh: the surface files of the copy checked against agentloop's
        // own copy of the baseline (one `git hash-object --stdin-paths`).
        g.bench_function("mend", |b| {
            b.iter(|| black_box(surface::mend(root, &copy.dir, &base).unwrap()))
        });
        // Once per test baseline: watching every directory of the copy, and ending
        // the watch (what the trace adds besides the check itself).
        let tracked: Vec<String> = surface::project_files(&copy.dir).unwrap();
        g.bench_function("trace_start_and_finish", |b| {
            b.iter(|| black_box(Trace::start(&copy.dir, &tracked).unwrap().finish()))
        });
        g.finish();
        copy.remove();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
