//! The verification runner: the task's and the plan's commands, run by agentloop itself
//! in the working tree, with a timeout and an output cap. The output, not the agent's
//! summary, goes into the record.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use super::supervise::{self, Spec};
use crate::failure::{fingerprint, last_lines};
use crate::journal::{CommandResult, VerifyFinished};
use crate::plan::Threshold;

pub struct Runner<'a> {
    pub workdir: &'a Path,
    pub timeout: Duration,
    pub output_cap: u64,
    pub log: &'a Path,
    /// The command each check runs under (`[sandbox] verify`: `bwrap … --`); empty:
    /// none.
    pub wrap: Vec<std::ffi::OsString>,
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
        // Commands append their output to the same file, so ours appends too.
        std::fs::File::create(self.log)?;
        let mut log = std::fs::OpenOptions::new().append(true).open(self.log)?;
        let mut results = Vec::new();
        let mut failure: Option<(String, String, Option<i32>, bool)> = None;
        let mut measured_failure: Option<(String, String, String)> = None;
        for cmd in commands {
            writeln!(log, "$ {cmd}")?;
            log.flush()?;
            let mut spec = Spec::new("sh", self.workdir).arg("-c").arg(cmd);
            spec.timeout = self.timeout;
            spec.output_cap = self.output_cap;
            spec.grace = Duration::from_secs(2);
            spec.log = Some(self.log.to_path_buf());
            spec.log_append = true;
            spec.wrap = self.wrap.clone();
            let f = supervise::run(spec, &mut should_stop)?;
            let status = match (f.exit_code, f.timed_out) {
                (_, true) => format!(
                    "timed out after {}",
                    humantime::format_duration(self.timeout)
                ),
                (Some(c), _) => format!("exit {c}"),
                (None, _) => format!("killed by signal {}", f.signal.unwrap_or(0)),
            };
            writeln!(log, "[{status} after {:.2}s]\n", f.duration.as_secs_f64())?;
            let tail = String::from_utf8_lossy(&f.tail).into_owned();
            let measure = measures
                .iter()
                .find(|(c, _)| c == cmd)
                .filter(|_| f.success())
                .map(|(_, t)| (t, t.check(&tail)));
            results.push(CommandResult {
                command: cmd.clone(),
                exit_code: f.exit_code,
                timed_out: f.timed_out,
                duration_ms: f.duration.as_millis() as u64,
                output_bytes: f.output_bytes,
                truncated: f.truncated,
                measured: measure
                    .as_ref()
                    .and_then(|(_, m)| m.as_ref().map(|(v, _)| v.clone())),
            });
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
        if !commands.is_empty() {
            log.sync_all()?;
        }
        let passed = failure.is_none() && measured_failure.is_none();
        let (fingerprint, digest) = match failure {
            None => match measured_failure {
                None => (None, None),
                Some((cmd, said, tail)) => (
                    Some(fingerprint(&cmd, &said)),
                    Some(format!(
                        "`{cmd}` passed but {said}. The end of its output:\n```\n{}\n```",
                        last_lines(&tail)
                    )),
                ),
            },
            Some((cmd, tail, code, timed_out)) => {
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
        Ok(VerifyFinished {
            iteration,
            passed,
            commands: results,
            fingerprint,
            digest,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_and_stops_at_first_failure() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("verify.log");
        let r = Runner {
            workdir: dir.path(),
            timeout: Duration::from_secs(10),
            output_cap: 4096,
            log: &log,
            wrap: Vec::new(),
        };
        let v = r
            .run(
                1,
                &[
                    "echo ok".into(),
                    "echo broken >&2; exit 2".into(),
                    "echo never".into(),
                ],
                || false,
            )
            .unwrap();
        assert!(!v.passed);
        assert_eq!(v.commands.len(), 2);
        assert_eq!(v.commands[1].exit_code, Some(2));
        assert!(v.digest.unwrap().contains("broken"));
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.contains("$ echo ok\nok\n[exit 0 after"), "{text}");
    }
}
