//! `go test -json`: one JSON event per line (`run`, `output`, `pass`, `fail`, `skip`
//! per test and per package). Ids are `package::Test` (`example.com/m/ops::TestDiv`,
//! subtests `…::TestSub/one`). A package that does not build is an errored entry of
//! its own; a test that started and never ended (a panic, a timeout) errored.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::report::{Outcome, Report, TestResult};

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Event {
    action: String,
    #[serde(default)]
    package: String,
    #[serde(default)]
    test: Option<String>,
    #[serde(default)]
    elapsed: Option<f64>,
    #[serde(default)]
    output: Option<String>,
}

/// Bytes of a test's own output kept for its failure message.
const OUTPUT_BYTES: usize = 4096;

#[derive(Default)]
struct Seen {
    outcome: Option<Outcome>,
    elapsed: f64,
    output: String,
}

pub fn parse(bytes: &[u8]) -> Result<Report, String> {
    let mut order: Vec<(String, String)> = Vec::new();
    let mut tests: BTreeMap<(String, String), Seen> = BTreeMap::new();
    let mut packages: BTreeMap<String, (bool, String)> = BTreeMap::new();
    let mut events = 0usize;
    for line in bytes.split(|&b| b == b'\n') {
        let line = String::from_utf8_lossy(line);
        let line = line.trim();
        if let Some(pkg) = build_failure(line) {
            packages.entry(pkg.to_string()).or_default().0 = true;
            continue;
        }
        if !line.starts_with('{') {
            continue;
        }
        let Ok(e) = serde_json::from_str::<Event>(line) else {
            continue;
        };
        events += 1;
        let Some(test) = e.test else {
            let p = packages.entry(e.package.clone()).or_default();
            match e.action.as_str() {
                "fail" => p.0 = true,
                "output" => push_output(&mut p.1, e.output.as_deref().unwrap_or("")),
                _ => {}
            }
            continue;
        };
        let key = (e.package, test);
        let seen = tests.entry(key.clone()).or_insert_with(|| {
            order.push(key.clone());
            Seen::default()
        });
        match e.action.as_str() {
            "pass" => seen.outcome = Some(Outcome::Passed),
            "fail" => seen.outcome = Some(Outcome::Failed),
            "skip" => seen.outcome = Some(Outcome::Skipped),
            "output" => push_output(&mut seen.output, e.output.as_deref().unwrap_or("")),
            _ => {}
        }
        if let Some(el) = e.elapsed {
            seen.elapsed = el;
        }
    }
    if events == 0 && packages.is_empty() {
        return Err("no `go test -json` events in the output".into());
    }
    let mut out = Vec::new();
    for key in order {
        let seen = tests.remove(&key).unwrap_or_default();
        let (outcome, message) = match seen.outcome {
            Some(Outcome::Passed) => (Outcome::Passed, None),
            Some(Outcome::Skipped) => (Outcome::Skipped, None),
            Some(o) => (o, Some(seen.output)),
            None => (
                Outcome::Errored,
                Some(format!("it started and never ended\n{}", seen.output)),
            ),
        };
        out.push(TestResult {
            id: format!("{}::{}", key.0, key.1),
            outcome,
            duration_ms: (seen.elapsed.max(0.0) * 1000.0).round() as u64,
            message,
        });
    }
    // A package that failed with no test of its own failing did not build or start,
    // or failed outside its tests (a `TestMain` that exits 1 after them, as a check
    // for leaked goroutines does): a skipped test does not account for it.
    for (pkg, (failed, output)) in packages {
        let any_failed = out.iter().any(|t| {
            t.id.starts_with(&format!("{pkg}::"))
                && matches!(t.outcome, Outcome::Failed | Outcome::Errored)
        });
        if failed && !any_failed {
            out.push(TestResult {
                id: pkg,
                outcome: Outcome::Errored,
                duration_ms: 0,
                message: Some(if output.is_empty() {
                    "the package failed before its tests ran (it does not build?)".into()
                } else {
                    output
                }),
            });
        }
    }
    Ok(Report::from_tests(out))
}

/// `FAIL\texample.com/m/broken [build failed]` (what older `go test -json` prints as
/// plain text).
fn build_failure(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("FAIL")?.trim_start();
    let (pkg, why) = rest.split_once(char::is_whitespace)?;
    why.trim()
        .strip_prefix('[')
        .filter(|w| w.ends_with("failed]"))
        .map(|_| pkg)
}

fn push_output(into: &mut String, more: &str) {
    if into.len() < OUTPUT_BYTES {
        into.push_str(more);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = r#"FAIL	example.com/m/broken [build failed]
{"Action":"run","Package":"example.com/m/ops","Test":"TestDiv"}
{"Action":"pass","Package":"example.com/m/ops","Test":"TestDiv","Elapsed":0.01}
{"Action":"run","Package":"example.com/m/ops","Test":"TestBad"}
{"Action":"output","Package":"example.com/m/ops","Test":"TestBad","Output":"    ops_test.go:4: got 2\n"}
{"Action":"fail","Package":"example.com/m/ops","Test":"TestBad","Elapsed":0}
{"Action":"skip","Package":"example.com/m/ops","Test":"TestSkip","Elapsed":0}
{"Action":"run","Package":"example.com/m/ops","Test":"TestSub/one"}
{"Action":"pass","Package":"example.com/m/ops","Test":"TestSub/one","Elapsed":0}
{"Action":"run","Package":"example.com/m/ops","Test":"TestHang"}
{"Action":"fail","Package":"example.com/m/ops","Elapsed":0.002}
"#;

    #[test]
    fn go_test_json_reads_tests_subtests_hangs_and_build_failures() {
        let r = parse(RUN.as_bytes()).unwrap();
        let got: Vec<(&str, Outcome)> =
            r.tests.iter().map(|t| (t.id.as_str(), t.outcome)).collect();
        assert_eq!(
            got,
            [
                ("example.com/m/ops::TestDiv", Outcome::Passed),
                ("example.com/m/ops::TestBad", Outcome::Failed),
                ("example.com/m/ops::TestSkip", Outcome::Skipped),
                ("example.com/m/ops::TestSub/one", Outcome::Passed),
                ("example.com/m/ops::TestHang", Outcome::Errored),
                ("example.com/m/broken", Outcome::Errored),
            ]
        );
        assert!(r.tests[1].message.as_deref().unwrap().contains("got 2"));
        assert!(parse(b"ok  \texample.com/m 0.1s\n").is_err());
    }

    /// A `TestMain` that fails the package after its tests (a goroutine leak check):
    /// the package fails though no test did, and a skipped test does not hide it.
    #[test]
    fn a_package_that_fails_after_its_tests_is_an_errored_entry_beside_a_skip() {
        let run = [
            r#"{"Action":"run","Package":"example.com/m/watch","Test":"TestStop"}"#,
            r#"{"Action":"pass","Package":"example.com/m/watch","Test":"TestStop","Elapsed":0}"#,
            r#"{"Action":"run","Package":"example.com/m/watch","Test":"TestReal"}"#,
            r#"{"Action":"skip","Package":"example.com/m/watch","Test":"TestReal","Elapsed":0}"#,
            r#"{"Action":"output","Package":"example.com/m/watch","Output":"leak: 1 goroutines left running\n"}"#,
            r#"{"Action":"fail","Package":"example.com/m/watch","Elapsed":0.1}"#,
        ]
        .join("\n");
        let r = parse(run.as_bytes()).unwrap();
        let got: Vec<(&str, Outcome)> =
            r.tests.iter().map(|t| (t.id.as_str(), t.outcome)).collect();
        assert_eq!(
            got,
            [
                ("example.com/m/watch::TestStop", Outcome::Passed),
                ("example.com/m/watch::TestReal", Outcome::Skipped),
                ("example.com/m/watch", Outcome::Errored),
            ]
        );
        assert!(r.tests[2].message.as_deref().unwrap().contains("leak"));
    }
}
