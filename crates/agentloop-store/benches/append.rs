//! One journal append with the journal in PostgreSQL, beside the file journal's own
//! append (the anchor) and a bare `INSERT` and commit (the floor), in the same run.
//!
//! `cargo bench -p agentloop-store --bench append` — against the server of
//! `AGENTLOOP_BENCH_STORE_URL`, else one `scripts/pg-server` starts in
//! `target/tmp/pg-bench` (its `fsync` off, as the tests run it: the figures are the
//! round trips and the work, not a disk's flush).

use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use agentloop_journal::{Event, Writer};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn url() -> String {
    if let Ok(url) = std::env::var("AGENTLOOP_BENCH_STORE_URL") {
        return url;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(root.join("scripts/pg-server"))
        .arg("ensure")
        .arg(root.join("target/tmp/pg-bench"))
        .output()
        .expect("scripts/pg-server");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn event(i: u64) -> Event {
    Event::ReplanRejected {
        task: format!("T{i}"),
        reason: "the replacement drops an acceptance criterion".into(),
    }
}

fn first() -> Event {
    event(0)
}

fn bench(c: &mut Criterion) {
    let url = url();
    agentloop_store::migrate(&url).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut g = c.benchmark_group("append");
    g.throughput(Throughput::Elements(1));
    {
        let path = dir.path().join("file-run");
        std::fs::create_dir_all(&path).unwrap();
        let (mut w, _) = Writer::create(&path.join("journal.jsonl"), &first()).unwrap();
        let mut i = 0;
        g.bench_function("file (the anchor): line + fsync", |b| {
            b.iter(|| {
                i += 1;
                w.append(black_box(&event(i))).unwrap();
            })
        });
    }
    {
        let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        client
            .batch_execute("CREATE TEMP TABLE floor (seq bigint PRIMARY KEY, line text)")
            .unwrap();
        let mut i = 0i64;
        g.bench_function("postgres floor: INSERT + commit", |b| {
            b.iter(|| {
                i += 1;
                let mut tx = client.transaction().unwrap();
                tx.execute(
                    "INSERT INTO floor VALUES ($1, $2)",
                    &[
                        &i,
                        &"a line of about a hundred bytes, as a journal's short records are",
                    ],
                )
                .unwrap();
                tx.commit().unwrap();
            })
        });
    }
    {
        agentloop_journal::shared::install(Arc::new(agentloop_store::PgStore::new(&url).unwrap()));
        let run = format!("bench-{}", std::process::id());
        let path = dir.path().join(&run);
        std::fs::create_dir_all(&path).unwrap();
        let (mut w, _) = Writer::create(&path.join("journal.jsonl"), &first()).unwrap();
        let mut i = 0;
        g.bench_function(
            "postgres: row (locked, checked, notified) + line + fsync",
            |b| {
                b.iter(|| {
                    i += 1;
                    w.append(black_box(&event(i))).unwrap();
                })
            },
        );
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
