//! agentloop's own pytest report (`runner/agentloop_pytest_report.py`, loaded with
//! `-p`): each phase pytest reported, by node id. A test's outcome is the worst of its
//! phases, as pytest's JUnit XML told them: a failed set-up, tear-down or collection is
//! an error, a failed call a failure, a skip with `wasxfail` an expected failure; its
//! duration is its phases' together.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::report::{Outcome, PythonNames, Report, TestResult};

#[derive(Deserialize)]
struct Document {
    agentloop_pytest_report: u32,
    reports: Vec<Phase>,
    #[serde(default)]
    python: Option<PythonNames>,
}

#[derive(Deserialize)]
struct Phase {
    id: String,
    when: String,
    outcome: String,
    #[serde(default)]
    duration: f64,
    #[serde(default)]
    xfail: bool,
    #[serde(default)]
    message: Option<String>,
}

/// The report's tests, each once, in the order pytest first reported them.
pub fn parse(bytes: &[u8]) -> Result<Report, String> {
    let doc: Document =
        serde_json::from_slice(bytes).map_err(|e| format!("not agentloop's pytest report: {e}"))?;
    if doc.agentloop_pytest_report != 1 {
        return Err(format!(
            "agentloop's pytest report of another version ({})",
            doc.agentloop_pytest_report
        ));
    }
    let mut at: BTreeMap<String, usize> = BTreeMap::new();
    let mut tests: Vec<TestResult> = Vec::new();
    for p in doc.reports {
        let outcome = match (p.when.as_str(), p.outcome.as_str()) {
            (_, "skipped") if p.xfail => Outcome::Xfail,
            (_, "skipped") => Outcome::Skipped,
            ("call", "failed") => Outcome::Failed,
            (_, "failed") => Outcome::Errored,
            (_, "passed") => Outcome::Passed,
            (when, other) => {
                return Err(format!(
                    "`{}`: an outcome pytest does not give ({when}: {other})",
                    p.id
                ));
            }
        };
        let ms = (p.duration.max(0.0) * 1000.0).round() as u64;
        match at.get(&p.id) {
            Some(&i) => {
                let t = &mut tests[i];
                t.duration_ms += ms;
                if outcome.worst(t.outcome) != t.outcome {
                    t.outcome = outcome;
                    t.message = p.message;
                }
            }
            None => {
                at.insert(p.id.clone(), tests.len());
                tests.push(TestResult {
                    id: p.id,
                    outcome,
                    duration_ms: ms,
                    message: p.message.filter(|_| outcome != Outcome::Passed),
                });
            }
        }
    }
    Ok(Report {
        python: doc.python,
        ..Report::from_tests(tests)
    })
}

#[cfg(test)]
mod tests;
