//! Per-test evidence's own cost: reading a 10,000-test JUnit report (pytest's, with
//! failures and skips among the cases) into tests, beside the anchor of reading the
//! same file's bytes; and judging it against a 10,000-test baseline with ten named
//! tests.
//!
//! `cargo bench -p agentloop-evidence --bench evidence`

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::hint::black_box;

use agentloop_evidence::{self as evidence, Expect, Format, KnownGood, Outcome, TestName};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const TESTS: usize = 10_000;

/// A pytest-style JUnit report: 100 modules of 100 tests, one in fifty failing with
/// a message, one in a hundred skipped.
fn report() -> String {
    let mut x = String::from(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><testsuites name=\"pytest tests\"><testsuite name=\"pytest\" errors=\"0\" failures=\"200\" skipped=\"100\" tests=\"10000\" time=\"12.5\">",
    );
    for i in 0..TESTS {
        let (module, test) = (i / 100, i % 100);
        let _ = write!(
            x,
            "<testcase classname=\"tests.test_m{module}\" name=\"test_{test}\" file=\"tests/test_m{module}.py\" line=\"{test}\" time=\"0.001\""
        );
        if i % 50 == 7 {
            let _ = write!(
                x,
                "><failure message=\"assert {i} == {}\">&gt;   assert f({i}) == {}\nE   assert {i} == {}\n\ntests/test_m{module}.py:{test}: AssertionError</failure></testcase>",
                i + 1,
                i + 1,
                i + 1
            );
        } else if i % 100 == 3 {
            x.push_str(
                "><skipped type=\"pytest.skip\" message=\"later\">later</skipped></testcase>",
            );
        } else {
            x.push_str("/>");
        }
    }
    x.push_str("</testsuite></testsuites>");
    x
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pytest.xml");
    let xml = report();
    std::fs::write(&path, &xml).unwrap();
    let mut g = c.benchmark_group("evidence");
    g.throughput(Throughput::Elements(TESTS as u64));
    g.bench_function("read the report's bytes (anchor)", |b| {
        b.iter(|| black_box(std::fs::read(&path).unwrap()))
    });
    g.bench_function("read and parse a 10,000-test JUnit report", |b| {
        b.iter(|| black_box(evidence::read(Format::PytestJunit, &path, dir.path()).unwrap()))
    });
    let parsed = evidence::read(Format::PytestJunit, &path, dir.path()).unwrap();
    assert_eq!(parsed.tests.len(), TESTS);
    let baseline: BTreeMap<String, Outcome> = parsed
        .tests
        .iter()
        .map(|t| (t.id.clone(), Outcome::Passed))
        .collect();
    let names: Vec<TestName> = (0..10)
        .map(|i| TestName::parse(&format!("tests/test_m{i}.py::test_7")).unwrap())
        .collect();
    let expect = Expect {
        named: &names,
        own: true,
        landed: false,
        known: KnownGood {
            baseline: Some(&baseline),
            ..KnownGood::default()
        },
    };
    g.bench_function("judge it against a 10,000-test baseline", |b| {
        b.iter(|| black_box(evidence::judge_command(&parsed, Some(1), &expect)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
