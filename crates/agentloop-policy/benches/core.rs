//! Benchmarks of the core's hot paths: journal appends with fsync, folding a
//! 1,000,000-event journal, parsing a 1,000-task plan, and checking an iteration
//! against its tripwires (beside the diff gates reading the same diff, the anchor).
//!
//! `cargo bench -p agentloop-policy --bench core`

use std::fmt::Write as _;
use std::hint::black_box;

use agentloop_config::{Config, Settings};
use agentloop_ground::signals::Signals;
use agentloop_ground::values::Usage;
use agentloop_journal::{self as journal, *};
use agentloop_plan::Plan;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};

fn plan_text(tasks: usize) -> String {
    let mut s = String::from("# Big plan\n\nA plan with many tasks.\n\n");
    for i in 0..tasks {
        let _ = write!(
            s,
            "## T{i}: Task number {i}\n{}Verify: cargo test -p crate{i}\n\nDo the thing number {i} with care, and write tests.\n\nAcceptance:\n- [ ] thing {i} works\n- [ ] tests cover it\n\n",
            if i > 0 {
                format!("Depends: T{}\n", i - 1)
            } else {
                String::new()
            }
        );
    }
    s
}

fn created(tasks: usize) -> Event {
    let mut c = Config::default();
    c.budgets.max_iterations = u32::MAX;
    Event::RunCreated {
        run_id: "bench".into(),
        plan_file: "PLAN.md".into(),
        workdir: ".".into(),
        plan: Plan::parse("PLAN.md", &plan_text(tasks)).unwrap(),
        settings: Settings::from_config(&c),
        head: None,
        tree: None,
    }
}

/// The events of one failed-then-completed pair of iterations, cycling over tasks.
fn iteration_events(n: u32, task: &str, complete: bool) -> Vec<Event> {
    vec![
        Event::IterationStarted(IterationStarted {
            iteration: n,
            task: task.into(),
            attempt: 1,
            kind: IterationKind::Work,
            agent: "claude".into(),
            tree_before: Some("4b825dc642cb6eb9a060e54bf8d69288fbee4904".into()),
            head_before: None,
            steer: vec![],
            worktree: None,
        }),
        Event::AgentFinished(AgentFinished {
            iteration: n,
            exit_code: Some(0),
            duration_ms: 41_000,
            output_bytes: 18_000,
            signals: Signals {
                complete: true,
                marker: Some("TASK_COMPLETE".into()),
                ..Signals::default()
            },
            usage: Usage {
                input_tokens: 12_000,
                cached_input_tokens: 40_000,
                cache_write_tokens: 2_000,
                output_tokens: 900,
            },
            cost_usd: 0.21,
            changed_files: vec!["src/lib.rs".into(), "tests/it.rs".into()],
            ..AgentFinished::default()
        }),
        Event::VerifyFinished(VerifyFinished {
            iteration: n,
            passed: complete,
            commands: vec![CommandResult {
                command: "cargo test".into(),
                exit_code: Some(if complete { 0 } else { 101 }),
                timed_out: false,
                duration_ms: 9_000,
                output_bytes: 4_000,
                truncated: false,
                measured: None,
                tests: None,
                cause: None,
            }],
            fingerprint: (!complete).then(|| "a1b2c3d4".into()),
            digest: (!complete).then(|| "`cargo test` exited 101.".into()),
            evidence: None,
            held_out: Vec::new(),
            left_out: Vec::new(),
            admitted: Vec::new(),
        }),
        Event::IterationFinished(IterationFinished {
            iteration: n,
            outcome: if complete {
                Outcome::Completed
            } else {
                Outcome::Failed
            },
            reason: "r".into(),
            digest: None,
            commit: None,
            agent_failed: false,
            fingerprint: None,
            checkpoint: None,
        }),
    ]
}

fn bench_append(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.jsonl");
    let (mut w, _) = Writer::create(&path, &created(10)).unwrap();
    let events = iteration_events(1, "T1", false);
    let mut g = c.benchmark_group("journal");
    g.throughput(Throughput::Elements(1));
    g.bench_function("append_fsync", |b| {
        let mut i = 0;
        b.iter(|| {
            i += 1;
            w.append(black_box(&events[i % events.len()])).unwrap();
        })
    });
    g.finish();
}

fn bench_fold(c: &mut Criterion) {
    // A 1,000,000-event journal on disk: 1,000 tasks, 250,000 iterations.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.jsonl");
    let mut bytes = journal::encode(1, "2026-11-22T10:00:00.000Z", &created(1000));
    let mut seq = 2;
    let mut n = 0u32;
    while seq <= 1_000_000 {
        n += 1;
        let task = format!("T{}", (n / 2) % 1000);
        for e in iteration_events(n, &task, n.is_multiple_of(2)) {
            if seq > 1_000_000 {
                break;
            }
            bytes.extend(journal::encode(seq, "2026-11-22T10:00:00.000Z", &e));
            seq += 1;
        }
    }
    std::fs::write(&path, &bytes).unwrap();
    eprintln!("fold bench journal: {} MB", bytes.len() / 1_000_000);
    let mut g = c.benchmark_group("journal");
    g.sample_size(10);
    g.throughput(Throughput::Elements(1_000_000));
    // What `agentloop status` does: stream the file, check every line, fold.
    g.bench_function("read_and_fold_1m_events", |b| {
        b.iter(|| {
            let mut state: Option<RunState> = None;
            journal::scan(&path, 0, 1, |r| match &mut state {
                None => state = Some(RunState::from_first(&r).unwrap()),
                Some(s) => s.apply(&r),
            })
            .unwrap();
            black_box(state.unwrap().iterations)
        })
    });
    let contents = journal::read(&path).unwrap();
    g.bench_function("fold_only_1m_events", |b| {
        b.iter_batched(
            || (),
            |_| black_box(RunState::fold(&contents.records).unwrap().iterations),
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

fn bench_plan(c: &mut Criterion) {
    let text = plan_text(1000);
    let mut g = c.benchmark_group("plan");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("parse_1000_tasks", |b| {
        b.iter(|| Plan::parse("PLAN.md", black_box(&text)).unwrap())
    });
    g.finish();
}

/// A diff of `files` files with `lines` added lines each, as `git diff -U0` prints it.
fn big_diff(files: usize, lines: usize) -> String {
    let mut d = String::new();
    for f in 0..files {
        let _ = write!(
            d,
            "diff --git a/src/m{f}.rs b/src/m{f}.rs\n--- a/src/m{f}.rs\n+++ b/src/m{f}.rs\n@@ -1,0 +1,{lines} @@\n"
        );
        for l in 0..lines {
            let _ = writeln!(
                d,
                "+    let value_{l} = compute({f}, {l}); // keep it simple"
            );
        }
    }
    d
}

fn bench_tripwires(c: &mut Criterion) {
    use agentloop_policy::{DiffInput, parse_unified, triggered, tripped};
    let diff = DiffInput {
        files: parse_unified(&big_diff(1000, 20)),
        base_top: Default::default(),
    };
    // 8 MB of an agent's stream-json log, no hit in it.
    let mut log = String::new();
    while log.len() < 8 * 1024 * 1024 {
        log.push_str("{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"tool_use\",\"name\":\"Bash\",\"input\":{\"command\":\"cargo test -p parser\"}}]}}\n");
    }
    let wires: Vec<String> = [
        "touch migrations/, *.sql",
        "match /unsafe\\s*\\{/",
        "add dependency",
        "run git push --force",
        "run rm -rf /",
    ]
    .map(String::from)
    .to_vec();
    let mut gates = agentloop_ground::values::Gates::default();
    for g in [
        &mut gates.security,
        &mut gates.database,
        &mut gates.external,
        &mut gates.architecture,
    ] {
        g.enabled = true;
    }
    let mut g = c.benchmark_group("tripwires");
    g.sample_size(20);
    g.bench_function("diff_gates_1000_files_anchor", |b| {
        b.iter(|| triggered(black_box(&gates), black_box(&diff)))
    });
    g.bench_function("check_1000_files_and_8mb_log", |b| {
        b.iter(|| tripped(black_box(&wires), black_box(&diff), black_box(&log)))
    });
    g.finish();
}

criterion_group!(
    benches,
    bench_append,
    bench_fold,
    bench_plan,
    bench_tripwires
);
criterion_main!(benches);
