//! The verification runner: the task's and the plan's commands, run by agentloop itself
//! in the working tree, with a timeout and an output cap. The output, not the agent's
//! summary, goes into the record.

use std::io::Write;
use std::path::Path;
use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;

use super::supervise::{self, Spec};
use crate::journal::{CommandResult, VerifyFinished};

/// Lines of a failing command's output quoted in the digest.
const DIGEST_LINES: usize = 60;
const DIGEST_BYTES: usize = 6 * 1024;

pub struct Runner<'a> {
    pub workdir: &'a Path,
    pub timeout: Duration,
    pub output_cap: u64,
    pub log: &'a Path,
}

impl Runner<'_> {
    /// Runs `commands` in order through `sh -c`, stopping at the first failure.
    /// `should_stop` ends the running command early (`stop --now`).
    pub fn run(
        &self,
        iteration: u32,
        commands: &[String],
        mut should_stop: impl FnMut() -> bool,
    ) -> std::io::Result<VerifyFinished> {
        // Commands append their output to the same file, so ours appends too.
        std::fs::File::create(self.log)?;
        let mut log = std::fs::OpenOptions::new().append(true).open(self.log)?;
        let mut results = Vec::new();
        let mut failure: Option<(String, String, Option<i32>, bool)> = None;
        for cmd in commands {
            writeln!(log, "$ {cmd}")?;
            log.flush()?;
            let mut spec = Spec::new("sh", self.workdir).arg("-c").arg(cmd);
            spec.timeout = self.timeout;
            spec.output_cap = self.output_cap;
            spec.grace = Duration::from_secs(2);
            spec.log = Some(self.log.to_path_buf());
            spec.log_append = true;
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
            results.push(CommandResult {
                command: cmd.clone(),
                exit_code: f.exit_code,
                timed_out: f.timed_out,
                duration_ms: f.duration.as_millis() as u64,
                output_bytes: f.output_bytes,
                truncated: f.truncated,
            });
            if !f.success() {
                let tail = String::from_utf8_lossy(&f.tail).into_owned();
                failure = Some((cmd.clone(), tail, f.exit_code, f.timed_out));
                break;
            }
        }
        log.sync_all()?;
        let passed = failure.is_none();
        let (fingerprint, digest) = match failure {
            None => (None, None),
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

fn last_lines(text: &str) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    let mut out = lines[lines.len().saturating_sub(DIGEST_LINES)..].join("\n");
    if out.len() > DIGEST_BYTES {
        let mut cut = out.len() - DIGEST_BYTES;
        while !out.is_char_boundary(cut) {
            cut += 1;
        }
        out = format!("…{}", &out[cut..]);
    }
    out
}

static NOISE: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    [
        // Temp paths and per-run directories.
        (r"(/tmp|/var/folders|/private/var)/[^\s:'\x22)]*", "<tmp>"),
        // ISO dates and clock times.
        (
            r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?",
            "<time>",
        ),
        (r"\b\d{1,2}:\d{2}:\d{2}(\.\d+)?\b", "<time>"),
        // Durations: 0.23s, 12ms, 1.5 seconds, 3m12s.
        (
            r"\b\d+(\.\d+)?\s?(ns|µs|us|ms|s|sec|secs|seconds|m|min|h)\b",
            "<dur>",
        ),
        // Addresses, hashes, ids.
        (r"\b0x[0-9a-fA-F]+\b", "<addr>"),
        (r"\b[0-9a-f]{8,}\b", "<hex>"),
        (
            r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",
            "<uuid>",
        ),
        (r"\b(pid|PID|port|thread)[ =:]+\d+", "$1 <n>"),
    ]
    .into_iter()
    .map(|(re, to)| (Regex::new(re).expect("noise patterns are valid"), to))
    .collect()
});

/// A fingerprint of a failure that ignores noise (temp paths, times, durations,
/// addresses) but keeps what distinguishes one failure from another, such as which
/// tests fail and how many.
pub fn fingerprint(command: &str, output: &str) -> String {
    let mut text = output.to_string();
    for (re, to) in NOISE.iter() {
        text = re.replace_all(&text, *to).into_owned();
    }
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let tail = lines[lines.len().saturating_sub(40)..].join("\n");
    let mut h = crc32fast::Hasher::new();
    h.update(command.as_bytes());
    h.update(b"\0");
    h.update(tail.as_bytes());
    format!("{:08x}", h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_ignores_noise() {
        let a = "test foo ... FAILED\nat /tmp/.tmpAbC123/src/lib.rs:3\nfinished in 0.23s\n2026-11-22T10:00:01Z";
        let b = "test foo ... FAILED\nat /tmp/.tmpXyZ987/src/lib.rs:3\nfinished in 1.5s\n2026-11-23T11:22:33Z";
        assert_eq!(fingerprint("cargo test", a), fingerprint("cargo test", b));
    }

    #[test]
    fn fingerprint_keeps_progress() {
        let a = "3 passed; 7 failed";
        let b = "4 passed; 6 failed";
        assert_ne!(fingerprint("t", a), fingerprint("t", b));
        assert_ne!(
            fingerprint("t", "test a FAILED"),
            fingerprint("t", "test b FAILED")
        );
    }

    #[test]
    fn runs_and_stops_at_first_failure() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("verify.log");
        let r = Runner {
            workdir: dir.path(),
            timeout: Duration::from_secs(10),
            output_cap: 4096,
            log: &log,
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
