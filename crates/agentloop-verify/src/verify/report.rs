//! Where a check's report is made ready before it runs, and what it says after: the
//! report of a runner agentloop recognised, or, for any other check, JUnit XML or TAP
//! written to `$AGENTLOOP_TEST_REPORT`, or TAP on its standard output.

use std::path::Path;

use agentloop_evidence::runner::Jobs;
use agentloop_evidence::{self as evidence, Expected, Invocation, Report, ReportAt, ReportError};

use super::written;

/// One check's report, as read.
pub(super) struct Evidence {
    pub(super) runner: String,
    pub(super) report: Result<Report, String>,
}

/// A watch on who writes a report file (a file report, or `$AGENTLOOP_TEST_REPORT`).
pub(super) fn watch_report(inv: &Invocation) -> Option<written::Written> {
    match &inv.report {
        ReportAt::File(p) => written::Written::watch(p),
        _ if inv.runner.is_none() => written::Written::watch(&inv.report_var),
        _ => None,
    }
}

/// The report directory made empty and the command's invocation in it.
pub(super) fn prepare(
    cmd: &str,
    workdir: &Path,
    dir: &Path,
    jobs: Option<Jobs>,
) -> std::io::Result<Invocation> {
    ready(dir, |dir| Invocation::with_jobs(cmd, workdir, dir, jobs))
}

/// `dir` made empty, the invocation `make` gives for it, and the files it needs there.
pub(super) fn ready(
    dir: &Path,
    make: impl FnOnce(&Path) -> Invocation,
) -> std::io::Result<Invocation> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(agentloop_ground::fsutil::named(dir, e)),
    }
    std::fs::create_dir_all(dir).map_err(|e| agentloop_ground::fsutil::named(dir, e))?;
    let inv = make(dir);
    for (p, text) in &inv.files {
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).map_err(|e| agentloop_ground::fsutil::named(d, e))?;
        }
        std::fs::write(p, text).map_err(|e| agentloop_ground::fsutil::named(p, e))?;
    }
    Ok(inv)
}

/// What a check's report says: a runner agentloop recognised must have written one;
/// any other check has evidence only if it wrote `$AGENTLOOP_TEST_REPORT` or printed
/// TAP.
pub(super) fn read_evidence(inv: &Invocation, workdir: &Path) -> Option<Evidence> {
    match inv.runner {
        Some(r) => Some(Evidence {
            runner: r.name().to_string(),
            report: evidence::read(inv.format, inv.report.path(), workdir).map_err(|e| match e {
                ReportError::Missing(_) => format!(
                    "{} wrote no report (it crashed, or something kept it from finishing)",
                    r.name()
                ),
                e => e.to_string(),
            }),
        }),
        // agentloop made the file, empty: a check that wrote nothing there has none.
        None if std::fs::metadata(&inv.report_var).is_ok_and(|m| m.len() > 0) => {
            // JUnit XML, or TAP.
            let tap =
                std::fs::read(&inv.report_var).is_ok_and(|b| evidence::tap::looks_like_tap(&b));
            let (name, format) = if tap {
                ("tap", evidence::Format::Tap)
            } else {
                ("junit", evidence::Format::Junit)
            };
            Some(Evidence {
                runner: format!("{name} (${})", evidence::runner::REPORT_VAR),
                report: evidence::read(format, &inv.report_var, workdir).map_err(|e| e.to_string()),
            })
        }
        // TAP on its standard output: what shell, C and Perl test scripts print.
        None => {
            let out = inv.output_copy()?;
            let bytes = std::fs::read(&out).ok()?;
            evidence::tap::looks_like_tap(&bytes).then(|| Evidence {
                runner: "tap (its output)".into(),
                report: evidence::read(evidence::Format::Tap, &out, workdir)
                    .map_err(|e| e.to_string()),
            })
        }
    }
}

/// `evidence` unless the check's baseline says the check itself did not write it (said
/// in the log, and then its exit code decides): a check that passed at the baseline
/// without writing `$AGENTLOOP_TEST_REPORT` and writes one now, or one that reported
/// one way there (TAP on its output) and another now (a report at
/// `$AGENTLOOP_TEST_REPORT`) — what wrote it may be the code under test, written over
/// what the check itself says. A runner agentloop recognised reports its own way.
pub(super) fn as_at_baseline(
    evidence: Option<Evidence>,
    inv: &Invocation,
    expected: &Expected,
    cmd: &str,
    log: &mut impl std::io::Write,
) -> std::io::Result<Option<Evidence>> {
    let Some(ev) = evidence else {
        return Ok(None);
    };
    if inv.runner.is_some() {
        return Ok(Some(ev));
    }
    if expected.silent_at_baseline(cmd) {
        writeln!(
            log,
            "[a report appeared at ${} that this check did not write when it passed at the baseline: not evidence; its exit code decides]",
            evidence::runner::REPORT_VAR
        )?;
        return Ok(None);
    }
    if let Some(was) = expected.reported_at_baseline(cmd)
        && was != ev.runner
    {
        writeln!(
            log,
            "[this check reported as {was} at the baseline and as {} now: not evidence; its exit code decides]",
            ev.runner
        )?;
        return Ok(None);
    }
    Ok(Some(ev))
}
