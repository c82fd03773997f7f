//! The JSON reports of JavaScript's and Ruby's runners: Jest's and Vitest's `--json`
//! result, Mocha's `json` reporter, RSpec's `json` formatter. Ids are
//! `file::full title` (the file relative to where the check ran).

use std::path::Path;

use serde::Deserialize;

use crate::report::{Outcome, Report, TestResult, relative};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JestResult {
    test_results: Vec<JestFile>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JestFile {
    name: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    message: String,
    #[serde(default)]
    assertion_results: Vec<JestTest>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JestTest {
    #[serde(default)]
    ancestor_titles: Vec<String>,
    title: String,
    status: String,
    #[serde(default)]
    duration: Option<f64>,
    #[serde(default)]
    failure_messages: Vec<String>,
}

/// Jest's and Vitest's result (`--json --outputFile`, `--reporter=json`).
pub fn jest(bytes: &[u8], workdir: &Path) -> Result<Report, String> {
    let r: JestResult = serde_json::from_slice(bytes).map_err(|e| format!("not Jest JSON: {e}"))?;
    let mut tests = Vec::new();
    for file in r.test_results {
        let rel = relative(&file.name, workdir);
        if file.assertion_results.is_empty() && file.status == "failed" {
            // The file could not run at all (a syntax or import error).
            tests.push(TestResult {
                id: rel.clone(),
                outcome: Outcome::Errored,
                duration_ms: 0,
                message: Some(file.message.clone()),
            });
        }
        for t in file.assertion_results {
            let outcome = match t.status.as_str() {
                "passed" => Outcome::Passed,
                "failed" => Outcome::Failed,
                "pending" | "skipped" | "todo" | "disabled" => Outcome::Skipped,
                _ => Outcome::Errored,
            };
            let mut full = t.ancestor_titles.clone();
            full.push(t.title);
            tests.push(TestResult {
                id: format!("{rel}::{}", full.join(" ")),
                outcome,
                duration_ms: t.duration.unwrap_or(0.0).max(0.0).round() as u64,
                message: t.failure_messages.first().cloned(),
            });
        }
    }
    Ok(Report::from_tests(tests))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MochaResult {
    tests: Vec<MochaTest>,
    #[serde(default)]
    pending: Vec<MochaTest>,
    #[serde(default)]
    failures: Vec<MochaTest>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MochaTest {
    full_title: String,
    #[serde(default)]
    file: Option<String>,
    #[serde(default)]
    duration: Option<f64>,
    #[serde(default)]
    err: serde_json::Value,
}

impl MochaTest {
    fn id(&self, workdir: &Path) -> String {
        match &self.file {
            Some(f) => format!("{}::{}", relative(f, workdir), self.full_title),
            None => self.full_title.clone(),
        }
    }

    fn error(&self) -> Option<String> {
        self.err
            .get("message")
            .and_then(|m| m.as_str())
            .map(str::to_string)
    }
}

/// Mocha's `json` reporter (`--reporter json --reporter-option output=PATH`).
pub fn mocha(bytes: &[u8], workdir: &Path) -> Result<Report, String> {
    let r: MochaResult =
        serde_json::from_slice(bytes).map_err(|e| format!("not Mocha JSON: {e}"))?;
    let pending: Vec<String> = r.pending.iter().map(|t| t.id(workdir)).collect();
    let failed: Vec<String> = r.failures.iter().map(|t| t.id(workdir)).collect();
    let mut tests: Vec<TestResult> = r
        .tests
        .iter()
        .map(|t| {
            let id = t.id(workdir);
            let message = t.error();
            let outcome = if pending.contains(&id) {
                Outcome::Skipped
            } else if failed.contains(&id) || message.is_some() {
                Outcome::Failed
            } else {
                Outcome::Passed
            };
            TestResult {
                id,
                outcome,
                duration_ms: t.duration.unwrap_or(0.0).max(0.0).round() as u64,
                message,
            }
        })
        .collect();
    // A failing hook is in `failures` and not in `tests`: what it kept from running
    // cannot pass.
    for f in &r.failures {
        let id = f.id(workdir);
        if !tests.iter().any(|t| t.id == id) {
            tests.push(TestResult {
                id,
                outcome: Outcome::Errored,
                duration_ms: 0,
                message: f.error(),
            });
        }
    }
    Ok(Report::from_tests(tests))
}

#[derive(Deserialize)]
struct RspecResult {
    examples: Vec<RspecExample>,
    #[serde(default)]
    summary: Option<RspecSummary>,
    #[serde(default)]
    messages: Vec<String>,
}

#[derive(Deserialize)]
struct RspecSummary {
    #[serde(default)]
    errors_outside_of_examples_count: u32,
}

#[derive(Deserialize)]
struct RspecExample {
    full_description: String,
    status: String,
    #[serde(default)]
    file_path: Option<String>,
    #[serde(default)]
    run_time: Option<f64>,
    #[serde(default)]
    exception: Option<RspecException>,
}

#[derive(Deserialize)]
struct RspecException {
    #[serde(default)]
    message: String,
}

/// RSpec's `json` formatter (`--format json --out PATH`).
pub fn rspec(bytes: &[u8], workdir: &Path) -> Result<Report, String> {
    let r: RspecResult =
        serde_json::from_slice(bytes).map_err(|e| format!("not RSpec JSON: {e}"))?;
    let mut tests: Vec<TestResult> = r
        .examples
        .into_iter()
        .map(|e| {
            let outcome = match e.status.as_str() {
                "passed" => Outcome::Passed,
                "failed" => Outcome::Failed,
                "pending" => Outcome::Skipped,
                _ => Outcome::Errored,
            };
            let id = match &e.file_path {
                Some(f) => format!("{}::{}", relative(f, workdir), e.full_description),
                None => e.full_description.clone(),
            };
            TestResult {
                id,
                outcome,
                duration_ms: (e.run_time.unwrap_or(0.0).max(0.0) * 1000.0).round() as u64,
                message: e.exception.map(|x| x.message),
            }
        })
        .collect();
    let outside = r
        .summary
        .map(|s| s.errors_outside_of_examples_count)
        .unwrap_or(0);
    if outside > 0 {
        tests.push(TestResult {
            id: "(errors outside of examples)".into(),
            outcome: Outcome::Errored,
            duration_ms: 0,
            message: Some(r.messages.join("\n")),
        });
    }
    Ok(Report::from_tests(tests))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jest_and_vitest_results_read_with_file_level_errors() {
        let json = r#"{"numTotalTests":4,"testResults":[
          {"name":"/w/t/div.test.js","status":"failed","message":"","assertionResults":[
            {"ancestorTitles":["div"],"fullName":"div divides","title":"divides","status":"passed","duration":1,"failureMessages":[]},
            {"ancestorTitles":["div"],"fullName":"div bad","title":"bad","status":"failed","duration":2,"failureMessages":["Error: expect(received).toBe(expected)"]},
            {"ancestorTitles":["div"],"fullName":"div later","title":"later","status":"pending","duration":null,"failureMessages":[]}]},
          {"name":"/w/t/broken.test.js","status":"failed","message":"Test suite failed to run","assertionResults":[]}]}"#;
        let r = jest(json.as_bytes(), Path::new("/w")).unwrap();
        let got: Vec<(&str, Outcome)> =
            r.tests.iter().map(|t| (t.id.as_str(), t.outcome)).collect();
        assert_eq!(
            got,
            [
                ("t/div.test.js::div divides", Outcome::Passed),
                ("t/div.test.js::div bad", Outcome::Failed),
                ("t/div.test.js::div later", Outcome::Skipped),
                ("t/broken.test.js", Outcome::Errored),
            ]
        );
        assert!(jest(b"{\"testResults\": 3}", Path::new("/w")).is_err());
    }

    #[test]
    fn mocha_results_read_with_pending_failures_and_hooks() {
        let json = r#"{"stats":{},"tests":[
          {"title":"divides","fullTitle":"div divides","file":"/w/m/div.spec.js","duration":0,"err":{}},
          {"title":"bad","fullTitle":"div bad","file":"/w/m/div.spec.js","duration":1,"err":{"message":"2 == 3"}},
          {"title":"later","fullTitle":"div later","file":"/w/m/div.spec.js","err":{}}],
          "pending":[{"title":"later","fullTitle":"div later","file":"/w/m/div.spec.js","err":{}}],
          "failures":[{"title":"bad","fullTitle":"div bad","file":"/w/m/div.spec.js","err":{"message":"2 == 3"}},
                      {"title":"\"before all\" hook","fullTitle":"db \"before all\" hook","file":"/w/m/db.spec.js","err":{"message":"no db"}}],
          "passes":[]}"#;
        let r = mocha(json.as_bytes(), Path::new("/w")).unwrap();
        let got: Vec<(&str, Outcome)> =
            r.tests.iter().map(|t| (t.id.as_str(), t.outcome)).collect();
        assert_eq!(
            got,
            [
                ("m/div.spec.js::div divides", Outcome::Passed),
                ("m/div.spec.js::div bad", Outcome::Failed),
                ("m/div.spec.js::div later", Outcome::Skipped),
                ("m/db.spec.js::db \"before all\" hook", Outcome::Errored),
            ]
        );
    }

    #[test]
    fn rspec_results_read_with_errors_outside_examples() {
        let json = r#"{"version":"3.13","examples":[
          {"id":"./spec/div_spec.rb[1:1]","description":"divides","full_description":"Div divides","status":"passed","file_path":"./spec/div_spec.rb","line_number":3,"run_time":0.001},
          {"id":"./spec/div_spec.rb[1:2]","description":"bad","full_description":"Div bad","status":"failed","file_path":"./spec/div_spec.rb","line_number":4,"run_time":0.002,"exception":{"class":"RSpec::Expectations::ExpectationNotMetError","message":"expected 3 got 2"}},
          {"id":"./spec/div_spec.rb[1:3]","description":"later","full_description":"Div later","status":"pending","file_path":"./spec/div_spec.rb"}],
          "summary":{"example_count":3,"failure_count":1,"pending_count":1,"errors_outside_of_examples_count":1},
          "messages":["An error occurred while loading ./spec/broken_spec.rb"]}"#;
        let r = rspec(json.as_bytes(), Path::new("/w")).unwrap();
        assert_eq!(
            r.counts().words(),
            "4 tests: 1 passed, 1 failed, 1 errored, 1 skipped"
        );
        assert_eq!(r.tests[1].id, "spec/div_spec.rb::Div bad");
        assert_eq!(r.tests[1].message.as_deref(), Some("expected 3 got 2"));
    }
}
