//! JUnit XML, read with the `junit-parser` crate: pytest's (`--junitxml`), nextest's,
//! Maven Surefire's and Gradle's (a directory of `TEST-*.xml`), RSpec's JUnit
//! formatter's, and whatever a check writes to `$AGENTLOOP_TEST_REPORT`.

use std::path::Path;

use crate::report::{Format, MAX_REPORT_BYTES, Outcome, Report, ReportError, TestResult};

/// How a test case's id is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ids {
    /// `classname::name` (`name` alone without a class name).
    Plain,
    /// pytest's node id: `tests/test_div.py::TestK::test_p[1]`, from the case's `file`
    /// and the part of `classname` after the module's dotted path.
    Pytest,
}

/// Parses one JUnit XML document.
pub fn parse(bytes: &[u8], ids: Ids) -> Result<Report, String> {
    parse_at(bytes, ids, None)
}

/// [`parse`], for a report of a run in `root` (where pytest's test modules are
/// looked for, when a case's `file` is not its test's module).
pub fn parse_at(bytes: &[u8], ids: Ids, root: Option<&Path>) -> Result<Report, String> {
    let suites = junit_parser::from_reader(bytes).map_err(|e| format!("not JUnit XML: {e}"))?;
    if !closed(bytes) {
        return Err("the XML ends before its last element is closed (a truncated report)".into());
    }
    let mut tests = Vec::new();
    for s in &suites.suites {
        collect(s, ids, root, &mut tests);
    }
    Ok(Report::from_tests(tests))
}

/// Every `*.xml` in `dir` (Surefire's and Gradle's one file per class), as one report.
pub fn read_dir(dir: &Path, format: Format, root: &Path) -> Result<Report, ReportError> {
    let shown = dir.display().to_string();
    let unreadable = |why: String| ReportError::Unreadable {
        path: shown.clone(),
        why,
    };
    let mut files: Vec<_> = walk(dir).map_err(|e| unreadable(e.to_string()))?;
    files.sort();
    if files.is_empty() {
        return Err(ReportError::Missing(shown));
    }
    let ids = if format == Format::PytestJunit {
        Ids::Pytest
    } else {
        Ids::Plain
    };
    let mut total = 0u64;
    let mut tests = Vec::new();
    let mut notes = Vec::new();
    for f in files {
        total += std::fs::metadata(&f).map(|m| m.len()).unwrap_or(0);
        if total > MAX_REPORT_BYTES {
            return Err(ReportError::TooLarge(shown));
        }
        let bytes = std::fs::read(&f).map_err(|e| unreadable(e.to_string()))?;
        let r = parse_at(&bytes, ids, Some(root)).map_err(|why| ReportError::Unreadable {
            path: f.display().to_string(),
            why,
        })?;
        tests.extend(r.tests);
        notes.extend(r.notes);
    }
    let mut r = Report::from_tests(tests);
    r.notes.splice(0..0, notes);
    Ok(r)
}

/// The XML files under `dir`, at any depth (Gradle writes one folder per task).
fn walk(dir: &Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d)? {
            let e = e?;
            let t = e.file_type()?;
            let p = e.path();
            if t.is_dir() {
                todo.push(p);
            } else if t.is_file() && p.extension().is_some_and(|x| x == "xml") {
                out.push(p);
            }
        }
    }
    Ok(out)
}

/// Whether the document's last element is closed: a report cut off mid-write is not
/// evidence, even where the parser takes what it got.
fn closed(bytes: &[u8]) -> bool {
    let text = bytes.trim_ascii_end();
    let Some(open) = text.iter().rposition(|&b| b == b'<') else {
        return false;
    };
    let last = &text[open..];
    last.ends_with(b">") && (last.starts_with(b"</") || last.ends_with(b"/>"))
}

fn collect(
    suite: &junit_parser::TestSuite,
    ids: Ids,
    root: Option<&Path>,
    out: &mut Vec<TestResult>,
) {
    for case in &suite.cases {
        out.push(result(case, ids, root));
    }
    for inner in &suite.suites {
        collect(inner, ids, root, out);
    }
}

fn result(case: &junit_parser::TestCase, ids: Ids, root: Option<&Path>) -> TestResult {
    use junit_parser::TestStatus;
    let (outcome, message) = match &case.status {
        TestStatus::Success => (Outcome::Passed, None),
        TestStatus::Failure(f) => (Outcome::Failed, Some(say(&f.message, &f.text))),
        TestStatus::Error(e) => (Outcome::Errored, Some(say(&e.message, &e.text))),
        TestStatus::Skipped(s) => {
            // pytest writes its xfail as a skip of type `pytest.xfail`.
            let xfail = s.skipped_type.ends_with("xfail");
            let o = if xfail {
                Outcome::Xfail
            } else {
                Outcome::Skipped
            };
            (o, Some(say(&s.message, &s.text)).filter(|m| !m.is_empty()))
        }
    };
    // pytest's report (its cases name their `.py` file), wherever it came from.
    let pytest = ids == Ids::Pytest || case.file.as_deref().is_some_and(|f| f.ends_with(".py"));
    let id = if pytest {
        pytest_id(case, root)
    } else {
        case.name.clone()
    };
    TestResult {
        id,
        outcome,
        duration_ms: (case.time.max(0.0) * 1000.0).round() as u64,
        message,
    }
}

/// A failure's message, or the first lines of its text.
fn say(message: &str, text: &str) -> String {
    let m = message.trim();
    let t = text.trim();
    if t.is_empty() || t == m {
        m.to_string()
    } else if m.is_empty() {
        t.to_string()
    } else {
        format!("{m}\n{t}")
    }
}

/// pytest's node id from a JUnit case: `file::Class::name`; a collection error
/// (empty class name) is its file. The case's `file` is where the test function was
/// defined, which is not its test module when the function was inherited from a class
/// of another module, imported, or wrapped: then the module is read from the class
/// path (which follows the node id), as the file it names under `root`.
fn pytest_id(case: &junit_parser::TestCase, root: Option<&Path>) -> String {
    let name = &case.original_name;
    let class = case.classname.as_deref().unwrap_or("");
    let file = case.file.clone().unwrap_or_else(|| {
        // xunit2 reports carry no file: the module from the class path.
        test_module(class, root).0
    });
    if class.is_empty() {
        return file;
    }
    let module = file.trim_end_matches(".py").replace(['/', '\\'], ".");
    let (file, inner) = match class
        .strip_prefix(module.as_str())
        .filter(|rest| rest.is_empty() || rest.starts_with('.'))
    {
        Some(rest) => (file, rest.trim_start_matches('.').to_string()),
        None => test_module(class, root),
    };
    let mut id = file;
    for part in inner.split('.').filter(|p| !p.is_empty()) {
        id.push_str("::");
        id.push_str(part);
    }
    id.push_str("::");
    id.push_str(name);
    id
}

/// The test module a dotted class path (`tests.test_memory.TestMemoryStore`) names,
/// as a file (`tests/test_memory.py`), and the classes after it: the longest leading
/// run of its parts that is a file under `root`; else (no root, or no such file) the
/// parts before the first that starts upper case, as classes do.
fn test_module(class: &str, root: Option<&Path>) -> (String, String) {
    let parts: Vec<&str> = class.split('.').collect();
    let found = root.and_then(|r| {
        (1..=parts.len())
            .rev()
            .find(|&i| r.join(format!("{}.py", parts[..i].join("/"))).is_file())
    });
    let at = found.unwrap_or_else(|| {
        parts
            .iter()
            .position(|p| p.starts_with(|c: char| c.is_ascii_uppercase()))
            .unwrap_or(parts.len())
            .max(1)
    });
    (
        format!("{}.py", parts[..at].join("/")),
        parts[at..].join("."),
    )
}

#[cfg(test)]
mod tests {

    /// A test inherited from a class of another module, or imported, is named by its
    /// test module (the node id pytest gives it), not by the file that defines it.
    #[test]
    fn a_test_defined_in_another_module_is_named_by_its_test_module() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("tests/API")).unwrap();
        std::fs::write(root.path().join("tests/API/test_a.py"), "").unwrap();
        let xml = r#"<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest"><testcase classname="tests.test_memory.TestMemoryStore" name="test_put" file="tests/contract.py" line="3" time="0" /><testcase classname="tests.test_x" name="test_helper" file="tests/helpers.py" line="1" time="0" /><testcase classname="tests.API.test_a.TestK" name="test_k" file="tests/base.py" line="1" time="0" /><testcase classname="tests.test_div2" name="test_d" file="tests/test_div.py" line="1" time="0" /></testsuite></testsuites>"#;
        let ids = |root: Option<&Path>| -> Vec<String> {
            parse_at(xml.as_bytes(), Ids::Pytest, root)
                .unwrap()
                .tests
                .into_iter()
                .map(|t| t.id)
                .collect()
        };
        assert_eq!(
            ids(Some(root.path())),
            [
                "tests/test_memory.py::TestMemoryStore::test_put",
                "tests/test_x.py::test_helper",
                "tests/API/test_a.py::TestK::test_k",
                "tests/test_div2.py::test_d",
            ]
        );
        // With no tree to look in, the class path's lower-case parts are the module.
        assert_eq!(
            ids(None)[0],
            "tests/test_memory.py::TestMemoryStore::test_put"
        );
        assert_eq!(ids(None)[1], "tests/test_x.py::test_helper");
    }

    use super::*;

    const PYTEST: &str = r#"<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="1" failures="1" skipped="2" tests="7" time="0.052" timestamp="2026-11-26T19:31:25.940137+00:00" hostname="vm"><testcase classname="" name="tests.test_broken" file="tests/test_broken.py" time="0.000"><error message="collection failure">ImportError while importing test module</error></testcase><testcase classname="tests.test_div" name="test_div" file="tests/test_div.py" line="2" time="0.001" /><testcase classname="tests.test_div" name="test_bad" file="tests/test_div.py" line="3" time="0.000"><failure message="assert 2.0 == 3&#10; +  where 2.0 = div(4, 2)">E   assert 2.0 == 3</failure></testcase><testcase classname="tests.test_div" name="test_skip" file="tests/test_div.py" line="4" time="0.000"><skipped type="pytest.skip" message="later">tests/test_div.py:5: later</skipped></testcase><testcase classname="tests.test_div" name="test_xf" file="tests/test_div.py" line="6" time="0.000"><skipped type="pytest.xfail" message="" /></testcase><testcase classname="tests.test_div.TestK" name="test_p[1]" file="tests/test_div.py" line="9" time="0.000" /></testsuite></testsuites>"#;

    #[test]
    fn pytest_reports_read_as_node_ids_with_every_outcome() {
        let r = parse(PYTEST.as_bytes(), Ids::Pytest).unwrap();
        let got: Vec<(&str, Outcome)> =
            r.tests.iter().map(|t| (t.id.as_str(), t.outcome)).collect();
        assert_eq!(
            got,
            [
                ("tests/test_broken.py", Outcome::Errored),
                ("tests/test_div.py::test_div", Outcome::Passed),
                ("tests/test_div.py::test_bad", Outcome::Failed),
                ("tests/test_div.py::test_skip", Outcome::Skipped),
                ("tests/test_div.py::test_xf", Outcome::Xfail),
                ("tests/test_div.py::TestK::test_p[1]", Outcome::Passed),
            ]
        );
        assert!(
            r.tests[2]
                .message
                .as_deref()
                .unwrap()
                .starts_with("assert 2.0 == 3")
        );
        assert_eq!(r.tests[1].duration_ms, 1);
    }

    #[test]
    fn nextest_and_surefire_ids_are_class_and_name() {
        let nextest = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="nextest-run" tests="2" failures="1" errors="0">
  <testsuite name="ops" tests="2" failures="1" errors="0">
    <testcase name="tests::div_ok" classname="ops" time="0.005"/>
    <testcase name="tests::div_bad" classname="ops" time="0.159"><failure message="panicked" type="test failure">left: 2 right: 3</failure></testcase>
  </testsuite>
</testsuites>"#;
        let r = parse(nextest.as_bytes(), Ids::Plain).unwrap();
        assert_eq!(r.tests[0].id, "ops::tests::div_ok");
        assert_eq!(r.tests[1].outcome, Outcome::Failed);
        // Surefire: a bare <testsuite> root.
        let surefire = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="com.example.OpsTest" tests="1"><testcase name="testDiv" classname="com.example.OpsTest" time="0.01"/></testsuite>"#;
        let r = parse(surefire.as_bytes(), Ids::Plain).unwrap();
        assert_eq!(r.tests[0].id, "com.example.OpsTest::testDiv");
    }

    #[test]
    fn truncated_or_malformed_xml_is_refused() {
        let cut = &PYTEST[..PYTEST.len() / 2];
        assert!(
            parse(cut.as_bytes(), Ids::Pytest).is_err(),
            "a truncated report"
        );
        assert!(parse(b"not xml at all", Ids::Plain).is_err());
        assert!(
            parse(
                b"<testsuites><testsuite><testcase name=\"a\"></testsuite>",
                Ids::Plain
            )
            .is_err()
        );
        assert!(parse(b"", Ids::Plain).is_err());
    }

    #[test]
    fn nested_suites_are_read_and_a_directory_of_files_is_one_report() {
        let nested = r#"<testsuites><testsuite name="outer"><testsuite name="inner"><testcase classname="A" name="x"/></testsuite><testcase classname="B" name="y"/></testsuite></testsuites>"#;
        let r = parse(nested.as_bytes(), Ids::Plain).unwrap();
        let ids: Vec<&str> = r.tests.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["B::y", "A::x"]);
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("test")).unwrap();
        std::fs::write(
            dir.path().join("TEST-A.xml"),
            r#"<testsuite name="A"><testcase classname="A" name="one"/></testsuite>"#,
        )
        .unwrap();
        std::fs::write(
            dir.path().join("test/TEST-B.xml"),
            r#"<testsuite name="B"><testcase classname="B" name="two"><failure message="no"/></testcase></testsuite>"#,
        )
        .unwrap();
        let r = read_dir(dir.path(), Format::Junit, dir.path()).unwrap();
        assert_eq!(r.counts().words(), "2 tests: 1 passed, 1 failed");
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(
            read_dir(empty.path(), Format::Junit, empty.path()),
            Err(ReportError::Missing(_))
        ));
    }
}
