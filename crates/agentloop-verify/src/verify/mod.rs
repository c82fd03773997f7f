//! The verification runner: the task's and the plan's commands, run by agentloop itself
//! in the working tree, with a timeout and an output cap. The output, not the agent's
//! summary, goes into the record.
//!
//! With per-test evidence ([`TestsCheck`]), a check that starts a test runner agentloop
//! knows is given the arguments that make the runner write its report into a directory
//! of agentloop's (outside the copy the check runs in), and every check gets
//! `$AGENTLOOP_TEST_REPORT` for a JUnit or TAP report of its own (or prints TAP); the
//! report (`report`), judged against
//! the run's baseline and the task's named tests, decides the check, not its exit code.

mod baseline;
mod holdout;
mod jobs;
pub mod left_out;
pub mod oversized;
mod parts;
mod report;
mod rerun;
mod since;
mod staged;
mod written;

pub use baseline::BaselineCache;
pub use holdout::{
    HeldOut, clear_leftovers as clear_held_out_leftovers, problem as holdout_problem,
};
use report::{Evidence, prepare, read_evidence, ready, watch_report};

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agentloop_evidence::{
    self as evidence, CommandTests, CommandVerdict, Expected, Invocation, Judged, Outcome, Report,
    ReportAt,
};
use agentloop_exec::sandbox::bytecode::Bytecode;
use agentloop_exec::supervise::{self, Finished, Spec};
use agentloop_ground::failure::{fingerprint, last_lines};
use agentloop_journal::{CommandResult, VerifyFinished};
use agentloop_plan::Threshold;

pub struct Runner<'a> {
    pub workdir: &'a Path,
    pub timeout: Duration,
    pub output_cap: u64,
    pub log: &'a Path,
    /// The command each check runs under (`[sandbox] verify`: `bwrap … --`); empty:
    /// none.
    pub wrap: Vec<std::ffi::OsString>,
    /// Where a confined check's Python bytecode comes from: compiled by the check,
    /// kept after it (the baseline's), or the baseline's put back.
    pub bytecode: Bytecode,
    /// Per-test evidence: what the checks must show; `None`: exit codes, as before.
    pub tests: Option<TestsCheck<'a>>,
    /// Workers a check's runner may use (`[verify] jobs`); 0: as the runner chooses.
    pub jobs: agentloop_config::CheckJobs,
}

/// What per-test evidence needs: what to expect, and where reports go.
pub struct TestsCheck<'a> {
    pub expected: &'a Expected,
    /// agentloop's own directory for this verification's reports, outside the copy
    /// (emptied before each check).
    pub reports: PathBuf,
}

impl Runner<'_> {
    /// Runs `commands` in order through `sh -c`, stopping at the first failure.
    /// `should_stop` ends the running command early (`stop --now`).
    pub fn run(
        &self,
        iteration: u32,
        commands: &[String],
        should_stop: impl FnMut() -> bool,
    ) -> std::io::Result<VerifyFinished> {
        self.run_measured(iteration, commands, &[], should_stop)
    }

    /// As `run`; a command of `measures` passes only if the value it prints holds
    /// against its threshold (read from the end of its output).
    pub fn run_measured(
        &self,
        iteration: u32,
        commands: &[String],
        measures: &[(String, Threshold)],
        mut should_stop: impl FnMut() -> bool,
    ) -> std::io::Result<VerifyFinished> {
        // Commands append their output to the same file, so ours appends too. Nothing to
        // run and nothing to say makes no log (a file made is time an iteration pays):
        // one an earlier check left there goes.
        let silent = commands.is_empty()
            && self
                .tests
                .as_ref()
                .is_none_or(|t| t.expected.named.is_empty());
        let mut log = if silent {
            match std::fs::remove_file(self.log) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
            std::fs::OpenOptions::new().append(true).open("/dev/null")?
        } else {
            std::fs::File::create(self.log)?;
            std::fs::OpenOptions::new().append(true).open(self.log)?
        };
        let mut slots: Vec<Option<CommandResult>> = vec![None; commands.len()];
        let mut failure: Option<(String, String, Option<i32>, bool)> = None;
        let mut measured_failure: Option<(String, String, String)> = None;
        // A check decided by its report: its reason, and the digest of what it showed.
        let mut tests_failure: Option<(String, String)> = None;
        let mut judged = Judged::default();
        let mut any_evidence = false;
        let mut kept: Vec<serde_json::Value> = Vec::new();
        // Every test any report had (for what landed tasks made pass).
        let mut reported: std::collections::BTreeSet<String> = Default::default();
        // A check that runs a part of another's tests is read from the other's run.
        let measured: Vec<&str> = measures.iter().map(|(c, _)| c.as_str()).collect();
        let parts = parts::Parts::new(
            commands,
            &measured,
            self.tests.as_ref().map(|t| t.expected),
            self.workdir,
        );
        let mut wholes: Vec<Option<parts::WholeRun>> = commands.iter().map(|_| None).collect();
        for k in parts.order() {
            let cmd = &commands[k];
            writeln!(log, "$ {cmd}")?;
            let read = parts.whole_of(k).and_then(|(w, paths)| {
                let whole = wholes[w].as_ref()?;
                whole.cut(paths).map(|(report, code)| (whole, report, code))
            });
            let (f, evidence, verdict, read_from) = match (read, &self.tests) {
                (Some((whole, report, code)), Some(t)) => {
                    writeln!(
                        log,
                        "[read from `{}`'s run: {} of its tests]\n",
                        whole.command,
                        report.tests.len()
                    )?;
                    let v = whole.judge(t.expected, cmd, &report, code);
                    let ev = Evidence {
                        runner: whole.runner.clone(),
                        report: Ok(report),
                    };
                    let f = Finished {
                        exit_code: Some(code),
                        signal: None,
                        timed_out: false,
                        killed: false,
                        duration: Duration::ZERO,
                        output_bytes: 0,
                        truncated: false,
                        tail: Vec::new(),
                        stderr_tail: Vec::new(),
                    };
                    (f, Some(ev), Some(v), Some(whole.command.clone()))
                }
                _ => {
                    let (f, ev, v) = self.run_one(k, cmd, &mut log, &mut should_stop)?;
                    (f, ev, v, None)
                }
            };
            let tail = String::from_utf8_lossy(&f.tail).into_owned();
            let measure = measures
                .iter()
                .find(|(c, _)| c == cmd)
                .filter(|_| f.success())
                .map(|(_, t)| (t, t.check(&tail)));
            let mut result = CommandResult {
                command: cmd.clone(),
                exit_code: f.exit_code,
                timed_out: f.timed_out,
                duration_ms: f.duration.as_millis() as u64,
                output_bytes: f.output_bytes,
                truncated: f.truncated,
                measured: measure
                    .as_ref()
                    .and_then(|(_, m)| m.as_ref().map(|(v, _)| v.clone())),
                tests: None,
                cause: (f.exit_code != Some(0) || f.timed_out)
                    .then(|| agentloop_ground::failure::cause_line(&tail))
                    .flatten(),
            };
            // A check that timed out or was stopped proves nothing, whatever it wrote.
            let finished = !f.timed_out && !f.killed;
            if let (Some(t), Some(ev)) = (&self.tests, &evidence) {
                let judged_by_tests = t.expected.judged_by_tests(cmd);
                any_evidence |= judged_by_tests;
                let mut ct = CommandTests {
                    runner: ev.runner.clone(),
                    counts: ev.report.as_ref().map(Report::counts).unwrap_or_default(),
                    problem: ev.report.as_ref().err().cloned(),
                    reason: None,
                    notes: ev
                        .report
                        .as_ref()
                        .map(|r| r.notes.clone())
                        .unwrap_or_default(),
                    judged: judged_by_tests,
                    read_from: read_from.clone(),
                };
                if let Ok(r) = &ev.report {
                    writeln!(log, "[{}: {}]", ev.runner, r.counts().words())?;
                    if finished {
                        reported.extend(r.tests.iter().map(|t| t.id.clone()));
                    }
                    kept.push(serde_json::json!({
                        "command": cmd,
                        "runner": ev.runner,
                        "tests": r.tests,
                    }));
                } else if let Err(p) = &ev.report {
                    writeln!(log, "[{}: no per-test evidence: {p}]", ev.runner)?;
                }
                if let Some(v) = &verdict {
                    judged.add(v);
                    ct.reason = v.reason.clone();
                }
                result.tests = Some(ct);
                if judged_by_tests {
                    let failed = match (&ev.report, &verdict) {
                        (Err(p), _) => Some(format!("`{cmd}`: no per-test evidence: {p}")),
                        (Ok(_), Some(v)) if !v.passed => {
                            Some(format!("`{cmd}`: {}", v.reason.clone().unwrap_or_default()))
                        }
                        _ => None,
                    };
                    let cut_short = !finished;
                    if cut_short {
                        failure = Some((cmd.clone(), tail, f.exit_code, f.timed_out));
                        slots[k] = Some(result);
                        break;
                    }
                    slots[k] = Some(result);
                    if let Some(reason) = failed {
                        let digest = judged.digest().unwrap_or_else(|| {
                            format!(
                                "{reason}. The end of its output:\n```\n{}\n```",
                                last_lines(&tail)
                            )
                        });
                        tests_failure = Some((reason, digest));
                        break;
                    }
                    // Its parts are read from this run: one that ran to its end with
                    // the runner's own report.
                    if parts.is_whole(k)
                        && read_from.is_none()
                        && matches!(f.exit_code, Some(0 | 1))
                        && let (Ok(report), Some(v)) = (&ev.report, &verdict)
                    {
                        wholes[k] = Some(parts::WholeRun {
                            command: cmd.clone(),
                            runner: ev.runner.clone(),
                            report: report.clone(),
                            flaky: v.flaky.clone(),
                        });
                    }
                    continue;
                }
            }
            slots[k] = Some(result);
            if !f.success() {
                failure = Some((cmd.clone(), tail, f.exit_code, f.timed_out));
                break;
            }
            if let Some((t, m)) = measure {
                let want = format!("{} {} {}", t.name, t.op_text, t.limit_text);
                let said = match m {
                    Some((_, true)) => continue,
                    Some((seen, false)) => {
                        format!("measured {} = {seen}; the criterion wants {want}", t.name)
                    }
                    None => format!(
                        "printed no value for {}; the criterion wants {want}",
                        t.name
                    ),
                };
                writeln!(log, "[{said}]\n")?;
                measured_failure = Some((cmd.clone(), said, tail));
                break;
            }
        }
        let results: Vec<CommandResult> = slots.into_iter().flatten().collect();
        // Every named test must have been reported by some check.
        let all_ran = failure.is_none() && measured_failure.is_none() && tests_failure.is_none();
        if let Some(t) = &self.tests
            && all_ran
            && !t.expected.named.is_empty()
            && let Some(reason) = judged.close(&t.expected.named)
        {
            writeln!(log, "[{reason}]")?;
            let digest = judged.digest().unwrap_or_else(|| reason.clone());
            tests_failure = Some((reason, digest));
        } else if let Some(t) = &self.tests {
            judged.close(&t.expected.named);
        }
        // On a merged result: what the tasks already landed made pass still runs.
        if let Some(t) = &self.tests
            && failure.is_none()
            && measured_failure.is_none()
            && tests_failure.is_none()
        {
            let missing = t.expected.missing_landed(&reported);
            if !missing.is_empty() {
                let list = missing
                    .iter()
                    .map(|(id, task)| format!("{id} ({task})"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let reason = format!(
                    "{} that tasks already merged made pass {} in no check's report: {list}",
                    agentloop_ground::words::plural(missing.len(), "test", "tests"),
                    if missing.len() == 1 { "is" } else { "are" },
                );
                writeln!(log, "[{reason}]")?;
                for (id, _) in &missing {
                    judged.regressions.push(evidence::Seen {
                        id: id.to_string(),
                        before: t
                            .expected
                            .baseline
                            .as_deref()
                            .and_then(|b| b.all_tests().get(id).copied()),
                        now: None,
                        message: None,
                    });
                }
                any_evidence = true;
                let digest = judged.digest().unwrap_or_else(|| reason.clone());
                tests_failure = Some((reason, digest));
            }
        }
        if let Some(t) = &self.tests {
            // The tests, one by one, beside the log (`verify.tests.json`) for people;
            // the reports themselves are not needed once read.
            if !kept.is_empty() {
                let at = self.log.with_extension("tests.json");
                let _ = std::fs::write(&at, agentloop_ground::fsutil::pretty_json(&kept));
            }
            let _ = std::fs::remove_dir_all(&t.reports);
        }
        if !commands.is_empty() {
            log.sync_all()?;
        }
        let passed = failure.is_none() && measured_failure.is_none() && tests_failure.is_none();
        let (fingerprint, digest) = match (failure, measured_failure, tests_failure) {
            (None, None, None) => (None, None),
            (None, None, Some((reason, digest))) => (
                Some(fingerprint("tests", &judged_ids(&judged, &reason))),
                Some(digest),
            ),
            (None, Some((cmd, said, tail)), _) => (
                Some(fingerprint(&cmd, &said)),
                Some(format!(
                    "`{cmd}` passed but {said}. The end of its output:\n```\n{}\n```",
                    last_lines(&tail)
                )),
            ),
            (Some((cmd, tail, code, timed_out)), _, _) => {
                let fp = fingerprint(&cmd, &tail);
                let head = if timed_out {
                    format!(
                        "`{cmd}` timed out after {}.",
                        humantime::format_duration(self.timeout)
                    )
                } else {
                    format!(
                        "`{cmd}` exited {}.",
                        code.map(|c| c.to_string())
                            .unwrap_or_else(|| "by a signal".into())
                    )
                };
                (
                    Some(fp),
                    Some(format!(
                        "{head} The end of its output:\n```\n{}\n```",
                        last_lines(&tail)
                    )),
                )
            }
        };
        let evidence = (any_evidence
            || self
                .tests
                .as_ref()
                .is_some_and(|t| !t.expected.named.is_empty()))
        .then_some(judged);
        Ok(VerifyFinished {
            iteration,
            passed,
            commands: results,
            fingerprint,
            digest,
            evidence,
            held_out: Vec::new(),
            left_out: Vec::new(),
            admitted: Vec::new(),
        })
    }

    /// Runs check `k` as written, and judges what its report shows.
    fn run_one(
        &self,
        k: usize,
        cmd: &str,
        log: &mut std::fs::File,
        should_stop: &mut impl FnMut() -> bool,
    ) -> std::io::Result<(Finished, Option<Evidence>, Option<CommandVerdict>)> {
        log.flush()?;
        let jobs = self.tests.as_ref().and_then(|_| self.jobs_of(cmd));
        let inv = match &self.tests {
            Some(t) => Some(prepare(
                cmd,
                self.workdir,
                &t.reports.join(k.to_string()),
                jobs,
            )?),
            None => None,
        };
        if let Some(i) = inv.as_ref().filter(|i| i.command != *cmd) {
            writeln!(log, "[agentloop runs it as: {}]", i.command)?;
            log.flush()?;
        }
        let mut written = inv.as_ref().and_then(watch_report);
        let f = self.spawn(
            inv.as_ref().map_or(cmd, |i| &i.command),
            inv.as_ref(),
            should_stop,
        )?;
        let status = self.status_words(&f);
        writeln!(log, "[{status} after {:.2}s]\n", f.duration.as_secs_f64())?;
        let mut evidence = inv
            .as_ref()
            .and_then(|i| read_evidence(i, self.workdir))
            .map(|e| e.unless_tampered(written.as_mut()));
        if let (Some(t), Some(i)) = (&self.tests, &inv) {
            evidence = report::as_at_baseline(evidence, i, t.expected, cmd, log)?;
        }
        // A check that timed out or was stopped proves nothing, whatever it wrote.
        let finished = !f.timed_out && !f.killed;
        let verdict = match (&self.tests, &evidence) {
            (Some(t), Some(ev)) if finished => {
                Some(self.verdict(t, cmd, jobs, &f, ev, k, log, should_stop)?)
            }
            _ => None,
        };
        Ok((f, evidence, verdict))
    }

    /// Runs one command (`sh -c`) under supervision.
    fn spawn(
        &self,
        command: &str,
        inv: Option<&Invocation>,
        should_stop: &mut impl FnMut() -> bool,
    ) -> std::io::Result<Finished> {
        let mut spec = Spec::new("sh", self.workdir).arg("-c").arg(command);
        spec.timeout = self.timeout;
        spec.output_cap = self.output_cap;
        spec.grace = Duration::from_secs(2);
        spec.log = Some(self.log.to_path_buf());
        spec.log_append = true;
        spec.wrap = self.wrap_staged();
        spec.env.extend(judged_tree_env(
            self.workdir,
            inv.and_then(|i| i.python_path.as_deref()),
        ));
        // Python's bytecode beside the copy's sources, never in a cache an earlier
        // run filled (`PYTHONPYCACHEPREFIX`; empty is unset to Python): a module found
        // compiled there is not opened, and the baseline's trace would miss it.
        spec.env.push(("PYTHONPYCACHEPREFIX".into(), "".into()));
        if let Some(i) = inv {
            spec.env.push((
                evidence::runner::REPORT_VAR.into(),
                i.report_var.clone().into_os_string(),
            ));
            spec.env
                .extend(i.env.iter().map(|(k, v)| (k.into(), v.into())));
            if let ReportAt::Stdout(p) = &i.report {
                spec.stdout_copy = Some(p.clone());
            }
            if let Some(p) = i.output_copy() {
                spec.stdout_copy = Some(p);
            }
        }
        supervise::run(spec, should_stop)
    }

    fn status_words(&self, f: &Finished) -> String {
        match (f.exit_code, f.timed_out) {
            (_, true) => format!(
                "timed out after {}",
                humantime::format_duration(self.timeout)
            ),
            (Some(c), _) => format!("exit {c}"),
            (None, _) => format!("killed by signal {}", f.signal.unwrap_or(0)),
        }
    }
}

impl Evidence {
    /// No evidence if something besides the runner wrote the report.
    fn unless_tampered(mut self, written: Option<&mut written::Written>) -> Evidence {
        if let Some(why) = written.and_then(|w| w.tampered())
            && self.report.is_ok()
        {
            self.report = Err(format!("the report cannot be trusted: {why}"));
        }
        self
    }
}

/// What every check run in `workdir` (a project's, a held-out one) gets so that it
/// imports the project from the tree judged, whatever an editable install points at:
/// the tree's `src/` (or root) first on `PYTHONPATH`; and `plugins` (where agentloop's
/// pytest plugin is) last, after what the environment put there.
pub(super) fn judged_tree_env(
    workdir: &Path,
    plugins: Option<&Path>,
) -> Option<(std::ffi::OsString, std::ffi::OsString)> {
    let first = agentloop_project::python_first(workdir);
    if first.is_empty() && plugins.is_none() {
        return None;
    }
    let inherited = std::env::var_os("PYTHONPATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    let path = std::env::join_paths(
        first
            .into_iter()
            .chain(inherited)
            .chain(plugins.map(Path::to_path_buf)),
    )
    .ok()?;
    Some(("PYTHONPATH".into(), path))
}

/// What a failure of the tests is, for its fingerprint: which tests, how they ended.
fn judged_ids(j: &Judged, reason: &str) -> String {
    let mut out = String::new();
    for s in j
        .named
        .iter()
        .filter(|s| s.now != Some(Outcome::Passed))
        .chain(&j.regressions)
        .chain(&j.dropped)
        .chain(&j.failing)
    {
        out.push_str(&format!("{} {}\n", s.id, s.now_words()));
    }
    for u in &j.unmatched {
        out.push_str(&format!("{u} unmatched\n"));
    }
    if out.is_empty() {
        out.push_str(reason);
    }
    out
}

/// Where a run's verification reports go: agentloop's cache, outside every copy.
pub fn reports_dir(run_id: &str, iteration: u32) -> Option<PathBuf> {
    Some(
        agentloop_ground::fsutil::cache_dir()?
            .join("reports")
            .join(run_id)
            .join(iteration.to_string()),
    )
}

#[cfg(test)]
mod tests;
