//! A report read from where the runner wrote it, by its format's reader.

use std::path::Path;

use crate::report::{Format, MAX_REPORT_BYTES, Report, ReportError};
use crate::{gotest, json, junit, libtest, pytest_json, tap};

/// Reads the report at `at` in `format`; test files named in it are made relative to
/// `workdir` (where the check ran).
pub fn read(format: Format, at: &Path, workdir: &Path) -> Result<Report, ReportError> {
    let shown = at.display().to_string();
    let meta = std::fs::symlink_metadata(at).map_err(|_| ReportError::Missing(shown.clone()))?;
    if meta.is_dir() {
        return junit::read_dir(at, format, workdir);
    }
    if !meta.is_file() {
        return Err(ReportError::Unreadable {
            path: shown,
            why: "not a regular file".into(),
        });
    }
    if meta.len() > MAX_REPORT_BYTES {
        return Err(ReportError::TooLarge(shown));
    }
    // agentloop makes the file, empty, before the check: still empty, nothing wrote it.
    if meta.len() == 0 {
        return Err(ReportError::Missing(shown));
    }
    let bytes = std::fs::read(at).map_err(|e| ReportError::Unreadable {
        path: shown.clone(),
        why: e.to_string(),
    })?;
    parse(format, &bytes, workdir).map_err(|why| ReportError::Unreadable { path: shown, why })
}

/// Parses a report's bytes.
pub fn parse(format: Format, bytes: &[u8], workdir: &Path) -> Result<Report, String> {
    match format {
        Format::Junit => junit::parse_at(bytes, junit::Ids::Plain, Some(workdir)),
        Format::PytestJunit => junit::parse_at(bytes, junit::Ids::Pytest, Some(workdir)),
        Format::PytestJson => pytest_json::parse(bytes),
        Format::GoJson => gotest::parse(bytes),
        Format::Libtest => libtest::parse(bytes),
        Format::JestJson => json::jest(bytes, workdir),
        Format::MochaJson => json::mocha(bytes, workdir),
        Format::RspecJson => json::rspec(bytes, workdir),
        Format::Tap => tap::parse(bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_report_is_an_error_not_a_pass() {
        let dir = tempfile::tempdir().unwrap();
        let e = read(Format::Junit, &dir.path().join("none.xml"), dir.path()).unwrap_err();
        assert!(matches!(e, ReportError::Missing(_)));
    }
}
