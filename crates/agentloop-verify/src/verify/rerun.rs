//! A check's report judged against what it must show; a test that passed before and
//! fails now is run again, with the check's other failed tests, in one process, and
//! forgiven as flaky when it passes then.

use std::io::Write;

use super::report::{Evidence, read_evidence, ready, watch_report};
use super::{Runner, TestsCheck};
use agentloop_evidence::{self as evidence, CommandVerdict, Invocation, Outcome};
use agentloop_exec::supervise::Finished;

/// The most failed tests run again, per check: with more, the failure is no flake
/// and counts as it is.
const RERUNS: usize = 50;

impl Runner<'_> {
    /// A check's report judged; a test that passed before and fails now is run once
    /// more alone, and forgiven as flaky if it passes then.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn verdict(
        &self,
        t: &TestsCheck,
        cmd: &str,
        jobs: Option<evidence::runner::Jobs>,
        f: &Finished,
        ev: &Evidence,
        k: usize,
        log: &mut std::fs::File,
        should_stop: &mut impl FnMut() -> bool,
    ) -> std::io::Result<CommandVerdict> {
        let Ok(report) = &ev.report else {
            return Ok(CommandVerdict {
                passed: false,
                reason: ev.report.as_ref().err().cloned(),
                ..Default::default()
            });
        };
        let expect = t.expected.expect(cmd);
        let mut v = evidence::judge_command(report, f.exit_code, &expect);
        let mut forgiven = Vec::new();
        // A test that failed may be flaky; one that is gone is not. All of them are
        // run again in one process (the runner selecting them where it can), and
        // only when they are few.
        let failed: Vec<&str> = v
            .regressions
            .iter()
            .filter(|s| matches!(s.now, Some(Outcome::Failed | Outcome::Errored)))
            .map(|s| s.id.as_str())
            .collect();
        if failed.len() > RERUNS {
            writeln!(
                log,
                "[{} tests that passed before failed: more than {RERUNS}, none run again]\n",
                failed.len()
            )?;
        }
        if !failed.is_empty() && failed.len() <= RERUNS {
            // The failed tests selected; when the runner gives no report of that (an
            // id it would not take), the whole check once more.
            let mut passed = std::collections::BTreeSet::new();
            let mut ended_well = false;
            for (n, whole) in [false, true].into_iter().enumerate() {
                let dir = t.reports.join(format!("{k}-again-{n}"));
                // As the check ran: its workers too.
                let again = ready(&dir, |dir| match whole {
                    false => Invocation::again_with(cmd, &failed, self.workdir, dir, jobs),
                    true => Invocation::with_jobs(cmd, self.workdir, dir, jobs),
                })?;
                writeln!(
                    log,
                    "[{} failed; run again: {}]",
                    failed.join(", "),
                    again.command
                )?;
                log.flush()?;
                let mut written = watch_report(&again);
                let g = self.spawn(&again.command, Some(&again), should_stop)?;
                let report = read_evidence(&again, self.workdir)
                    .map(|e| e.unless_tampered(written.as_mut()))
                    .and_then(|e| e.report.ok());
                ended_well = !g.timed_out && !g.killed;
                if let Some(r) = report {
                    passed = r
                        .tests
                        .into_iter()
                        .filter(|x| x.outcome == Outcome::Passed)
                        .map(|x| x.id)
                        .collect();
                    break;
                }
                let selected = Invocation::with_jobs(cmd, self.workdir, &dir, jobs).command;
                if whole || again.command == selected || !ended_well {
                    break;
                }
                writeln!(log, "[no report of the tests selected: the check again]")?;
            }
            for id in &failed {
                let passed = passed.contains(*id);
                writeln!(
                    log,
                    "[{id}: {} when run again]",
                    if passed { "passed" } else { "not passed" }
                )?;
                if passed && ended_well {
                    forgiven.push(id.to_string());
                }
            }
            writeln!(log)?;
        }
        if !forgiven.is_empty() {
            let mut expect = expect;
            expect
                .known
                .flaky
                .extend(forgiven.iter().map(String::as_str));
            v = evidence::judge_command(report, f.exit_code, &expect);
        }
        Ok(v)
    }
}
