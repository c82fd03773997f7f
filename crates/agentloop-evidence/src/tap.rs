//! The Test Anything Protocol (TAP 13 and 14), as shell, C, Perl and Node test
//! scripts print it on standard output, or write it to `$AGENTLOOP_TEST_REPORT`:
//! `ok 1 - adds`, `not ok 2 - divides # TODO`, `1..2`. Each test's id is its
//! description (its number when it has none); a `# SKIP` is skipped, a failing
//! `# TODO` is an expected failure; indented lines (subtests, YAML diagnostics) are
//! the test's own, and a YAML `message:` is its failure's message. A plan that more
//! tests were promised than ran, or a `Bail out!`, is one errored entry, so a suite
//! that stopped half-way is never a pass.

use crate::report::{Outcome, Report, TestResult};

/// Whether `bytes` read as TAP: a plan line (`1..N`) and a test line at the top level.
pub fn looks_like_tap(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    let mut plan = false;
    let mut test = false;
    for line in text.lines() {
        plan |= plan_count(line).is_some();
        test |= test_line(line).is_some();
        if plan && test {
            return true;
        }
    }
    false
}

/// `1..N` (with an optional `# reason`): N.
fn plan_count(line: &str) -> Option<usize> {
    let rest = line.strip_prefix("1..")?;
    let n: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let after = rest[n.len()..].trim_start();
    if n.is_empty() || !(after.is_empty() || after.starts_with('#')) {
        return None;
    }
    n.parse().ok()
}

/// A test line: (passed, number, description, directive).
fn test_line(line: &str) -> Option<(bool, Option<usize>, String, Option<String>)> {
    let (ok, rest) = if let Some(r) = line.strip_prefix("not ok") {
        (false, r)
    } else if let Some(r) = line.strip_prefix("ok") {
        (true, r)
    } else {
        return None;
    };
    if !(rest.is_empty() || rest.starts_with(' ')) {
        return None;
    }
    let rest = rest.trim_start();
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let number = digits.parse().ok();
    let rest = rest[digits.len()..].trim_start();
    let rest = rest
        .strip_prefix("- ")
        .unwrap_or(rest.strip_prefix('-').unwrap_or(rest));
    // A directive follows an unescaped `#`.
    let (desc, directive) = match rest
        .find(" #")
        .or_else(|| rest.starts_with('#').then_some(0))
    {
        Some(at) => (
            rest[..at].trim().to_string(),
            Some(
                rest[at..]
                    .trim_start()
                    .trim_start_matches('#')
                    .trim()
                    .to_string(),
            ),
        ),
        None => (rest.trim().to_string(), None),
    };
    Some((ok, number, desc, directive))
}

pub fn parse(bytes: &[u8]) -> Result<Report, String> {
    let text = String::from_utf8_lossy(bytes);
    let mut tests: Vec<TestResult> = Vec::new();
    let mut planned = None;
    let mut bailed: Option<String> = None;
    // The YAML block of the last test, read for its `message:`.
    let mut in_yaml = false;
    for line in text.lines() {
        if let Some(reason) = line.strip_prefix("Bail out!") {
            bailed = Some(reason.trim().to_string());
            break;
        }
        if line.starts_with([' ', '\t']) {
            let t = line.trim();
            if t == "---" {
                in_yaml = true;
            } else if t == "..." {
                in_yaml = false;
            } else if in_yaml
                && let Some(m) = t.strip_prefix("message:")
                && let Some(last) = tests.last_mut()
                && last.outcome == Outcome::Failed
                && last.message.is_none()
            {
                let m = m.trim().trim_matches(['\'', '"']);
                if !m.is_empty() {
                    last.message = Some(m.to_string());
                }
            }
            continue;
        }
        in_yaml = false;
        if let Some(n) = plan_count(line) {
            planned = Some(n);
            continue;
        }
        let Some((ok, number, desc, directive)) = test_line(line) else {
            continue;
        };
        let directive = directive.unwrap_or_default().to_ascii_lowercase();
        let outcome = match (ok, directive.split_whitespace().next()) {
            (_, Some("skip")) => Outcome::Skipped,
            (false, Some("todo")) => Outcome::Xfail,
            (true, _) => Outcome::Passed,
            (false, _) => Outcome::Failed,
        };
        let id = if desc.is_empty() {
            format!("test {}", number.unwrap_or(tests.len() + 1))
        } else {
            desc
        };
        tests.push(TestResult {
            id,
            outcome,
            duration_ms: 0,
            message: None,
        });
    }
    if tests.is_empty() && planned.is_none() {
        return Err("no TAP test lines".into());
    }
    let ran = tests.len();
    let stopped = match (&bailed, planned) {
        (Some(why), _) => Some(format!("Bail out! {why}").trim().to_string()),
        (None, Some(n)) if ran < n => Some(format!("planned {n} tests, {ran} ran")),
        _ => None,
    };
    if let Some(why) = stopped {
        tests.push(TestResult {
            id: "TAP plan".into(),
            outcome: Outcome::Errored,
            duration_ms: 0,
            message: Some(why),
        });
    }
    Ok(Report::from_tests(tests))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcomes(text: &str) -> Vec<(String, Outcome)> {
        parse(text.as_bytes())
            .unwrap()
            .tests
            .into_iter()
            .map(|t| (t.id, t.outcome))
            .collect()
    }

    #[test]
    fn each_test_line_by_its_description() {
        let text = "TAP version 13\n1..6\nok 1 - adds\nnot ok 2 - divides\n  ---\n  message: 'expected 2, got 0'\n  ...\nok 3 skipped one # SKIP no network\nnot ok 4 - later # TODO not yet\nok 5\n# a comment\nok 6 - shouts # todo done early\n";
        assert_eq!(
            outcomes(text),
            [
                ("adds".to_string(), Outcome::Passed),
                ("divides".into(), Outcome::Failed),
                ("skipped one".into(), Outcome::Skipped),
                ("later".into(), Outcome::Xfail),
                ("test 5".into(), Outcome::Passed),
                ("shouts".into(), Outcome::Passed),
            ]
        );
        let r = parse(text.as_bytes()).unwrap();
        assert_eq!(r.tests[1].message.as_deref(), Some("expected 2, got 0"));
        assert!(looks_like_tap(text.as_bytes()));
    }

    #[test]
    fn a_suite_that_stopped_half_way_is_never_a_pass() {
        assert_eq!(
            outcomes("1..3\nok 1 - a\nok 2 - b\n").last().unwrap(),
            &("TAP plan".to_string(), Outcome::Errored)
        );
        assert_eq!(
            outcomes("ok 1 - a\nBail out! the database is down\nok 2 - b\n1..2\n"),
            [
                ("a".to_string(), Outcome::Passed),
                ("TAP plan".into(), Outcome::Errored)
            ]
        );
        assert!(parse(b"hello\n").is_err());
    }

    #[test]
    fn only_tap_looks_like_tap() {
        assert!(looks_like_tap(b"ok 1 - a\n1..1\n"));
        assert!(!looks_like_tap(b"everything ok\n"));
        assert!(!looks_like_tap(b"ok 1 - a\n"), "no plan");
        assert!(
            !looks_like_tap(b"1..2 steps\nok then\n"),
            "not a plan, not a test line"
        );
        assert!(!looks_like_tap(b"okay 1\n1..1\n"));
    }
}
