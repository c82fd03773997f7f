//! `cargo test`'s per-test lines (`test ops::div ... ok`), read from the standard
//! output of the run (libtest writes no report file on stable Rust), and libtest's JSON
//! events where a project turned them on. Ids are the test's path (`tests::div_ok`);
//! the same path in two test binaries is one id with the worse outcome. Only the
//! result lines count: what a failing test printed (quoted after `failures:`) is its
//! message, never a result.

use serde::Deserialize;

use crate::report::{Outcome, Report, TestResult};

#[derive(Deserialize)]
struct JsonEvent {
    #[serde(rename = "type")]
    kind: String,
    event: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    exec_time: Option<f64>,
    #[serde(default)]
    stdout: Option<String>,
}

#[derive(PartialEq)]
enum Section {
    /// Between test binaries.
    Idle,
    /// After `running N tests`: result lines.
    Results,
    /// After `failures:`: each failing test's output, quoted.
    Failures,
}

pub fn parse(bytes: &[u8]) -> Result<Report, String> {
    let text = String::from_utf8_lossy(bytes);
    let mut tests: Vec<TestResult> = Vec::new();
    let mut section = Section::Idle;
    let mut runs = 0usize;
    // The test whose quoted output is being read.
    let mut quoting: Option<(String, String)> = None;
    let mut messages: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if line.starts_with('{') {
            if let Ok(e) = serde_json::from_str::<JsonEvent>(line)
                && e.kind == "test"
                && let Some(outcome) = json_outcome(&e.event)
            {
                runs += 1;
                tests.push(TestResult {
                    id: e.name,
                    outcome,
                    duration_ms: (e.exec_time.unwrap_or(0.0).max(0.0) * 1000.0).round() as u64,
                    message: e.stdout.filter(|s| !s.is_empty()),
                });
            }
            continue;
        }
        if line.starts_with("running ") && (line.ends_with(" tests") || line.ends_with(" test")) {
            section = Section::Results;
            runs += 1;
            continue;
        }
        if line.starts_with("test result: ") {
            if let Some(q) = quoting.take() {
                messages.push(q);
            }
            section = Section::Idle;
            continue;
        }
        match section {
            Section::Idle => {}
            Section::Results => {
                if line == "failures:" {
                    section = Section::Failures;
                } else if let Some(t) = result_line(line) {
                    tests.push(t);
                }
            }
            Section::Failures => {
                if let Some(name) = line
                    .strip_prefix("---- ")
                    .and_then(|r| r.strip_suffix(" stdout ----"))
                {
                    if let Some(q) = quoting.replace((name.to_string(), String::new())) {
                        messages.push(q);
                    }
                } else if line == "failures:" {
                    if let Some(q) = quoting.take() {
                        messages.push(q);
                    }
                } else if let Some((_, text)) = &mut quoting
                    && text.len() < 4096
                {
                    text.push_str(line);
                    text.push('\n');
                }
            }
        }
    }
    if runs == 0 {
        return Err("no test binary ran (no `running N tests` line)".into());
    }
    for (name, text) in messages {
        if let Some(t) = tests
            .iter_mut()
            .find(|t| t.id == name && t.outcome == Outcome::Failed && t.message.is_none())
        {
            t.message = Some(text);
        }
    }
    Ok(Report::from_tests(tests))
}

/// `test a::b ... ok`, `... FAILED`, `... ignored`, `... ignored, reason`.
fn result_line(line: &str) -> Option<TestResult> {
    let rest = line.strip_prefix("test ")?;
    let (name, result) = rest.rsplit_once(" ... ")?;
    let outcome = match result.trim() {
        "ok" => Outcome::Passed,
        "FAILED" => Outcome::Failed,
        r if r.starts_with("ignored") => Outcome::Skipped,
        // `bench: …` lines and anything else are not results.
        _ => return None,
    };
    Some(TestResult {
        id: name.to_string(),
        outcome,
        duration_ms: 0,
        message: None,
    })
}

fn json_outcome(event: &str) -> Option<Outcome> {
    Some(match event {
        "ok" => Outcome::Passed,
        "failed" => Outcome::Failed,
        "ignored" => Outcome::Skipped,
        "timeout" => Outcome::Errored,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: &str = "
running 3 tests
test tests::div_ignored ... ignored
test tests::div_ok ... ok
test tests::div_bad ... FAILED

failures:

---- tests::div_bad stdout ----

thread 'tests::div_bad' panicked at src/lib.rs:5:28:
assertion `left == right` failed

failures:
    tests::div_bad

test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.08s


running 2 tests
test it_ok ... ok
test it_bad ... FAILED

failures:

---- it_bad stdout ----
test it_ok ... FAILED
test liar ... ok

thread 'it_bad' panicked at tests/it.rs:2:76:
boom

failures:
    it_bad

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.09s


running 1 test
test src/lib.rs - documented (line 8) ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
";

    #[test]
    fn cargo_test_lines_read_and_what_a_test_printed_is_never_a_result() {
        let r = parse(OUT.as_bytes()).unwrap();
        let got: Vec<(&str, Outcome)> =
            r.tests.iter().map(|t| (t.id.as_str(), t.outcome)).collect();
        assert_eq!(
            got,
            [
                ("tests::div_ignored", Outcome::Skipped),
                ("tests::div_ok", Outcome::Passed),
                ("tests::div_bad", Outcome::Failed),
                ("it_ok", Outcome::Passed),
                ("it_bad", Outcome::Failed),
                ("src/lib.rs - documented (line 8)", Outcome::Passed),
            ],
            "`test liar ... ok`, printed by a failing test, is not a test"
        );
        assert!(
            r.tests[2]
                .message
                .as_deref()
                .unwrap()
                .contains("left == right")
        );
        assert!(r.tests[4].message.as_deref().unwrap().contains("boom"));
    }

    #[test]
    fn libtest_json_events_read_too_and_no_run_is_an_error() {
        let json = "{ \"type\": \"suite\", \"event\": \"started\", \"test_count\": 2 }\n{ \"type\": \"test\", \"event\": \"ok\", \"name\": \"a::b\", \"exec_time\": 0.002 }\n{ \"type\": \"test\", \"event\": \"failed\", \"name\": \"a::c\", \"stdout\": \"boom\" }\n";
        let r = parse(json.as_bytes()).unwrap();
        assert_eq!(r.counts().words(), "2 tests: 1 passed, 1 failed");
        assert_eq!(r.tests[0].duration_ms, 2);
        assert!(parse(b"error: could not compile `ops`").is_err());
    }
}
