//! What a failure looks like to the loop: a fingerprint that ignores noise (so the
//! same failure twice is recognised as the same), and the lines of output a digest
//! quotes. Pure: the verification runner and the policy both use it.

use std::sync::LazyLock;

use regex::Regex;

/// Lines of a failing command's output quoted in the digest.
const DIGEST_LINES: usize = 60;
const DIGEST_BYTES: usize = 6 * 1024;

/// The last lines of a command's output, as much as a digest quotes.
pub fn last_lines(text: &str) -> String {
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

/// The line of a failed command's output that most likely says why it failed, for
/// the places a person looks first (the console, `status`, `log`, the dashboard): the
/// first line that reads like an error (a missing module or program, an exception, a
/// failed assertion, a panic), else its last line; at most 160 characters.
pub fn cause_line(text: &str) -> Option<String> {
    static ERROR: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?i)(\berror\b|\w+Error:|no module named|not found|no such file|cannot |can't |permission denied|panicked|\bFAIL(ED)?\b|assert|exception|fatal)",
        )
        .expect("a valid pattern")
    });
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('$') && !l.starts_with("[agentloop"))
        .collect();
    let line = lines.iter().find(|l| ERROR.is_match(l)).or(lines.last())?;
    // The check's output is the agent's to write: no control character (a terminal
    // escape) reaches the person's console through it.
    let mut line: String = line.chars().filter(|c| !c.is_control()).collect();
    if line.chars().count() > 160 {
        line = line.chars().take(159).collect::<String>() + "…";
    }
    Some(line)
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
        // Random seeds: "Randomized with seed 1234", "--seed=42", "seed: 7".
        (r"(?i)\b(seed)\b[ =:]+\d+", "$1 <n>"),
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
    fn the_cause_of_a_failure_is_the_line_that_says_it() {
        assert_eq!(
            cause_line("\n/usr/bin/python3: No module named pytest\n").as_deref(),
            Some("/usr/bin/python3: No module named pytest")
        );
        assert_eq!(
            cause_line("collected 3 items\n\ntests/test_a.py F..\nE   assert 1 == 2\n1 failed\n")
                .as_deref(),
            Some("E   assert 1 == 2")
        );
        assert_eq!(
            cause_line("ok\nnothing to see\n").as_deref(),
            Some("nothing to see")
        );
        assert_eq!(cause_line("  \n"), None);
        assert_eq!(
            cause_line("E   \x1b]0;pwned\x07assert \x1b[2J1 == 2\n").as_deref(),
            Some("E   ]0;pwnedassert [2J1 == 2")
        );
        assert_eq!(cause_line(&"x".repeat(500)).unwrap().chars().count(), 160);
    }

    #[test]
    fn fingerprint_ignores_noise() {
        // Temp paths, durations, times, random seeds, pids.
        for (a, b) in [
            (
                "test foo ... FAILED\nat /tmp/.tmpAbC123/src/lib.rs:3\nfinished in 0.23s\n2026-11-22T10:00:01Z",
                "test foo ... FAILED\nat /tmp/.tmpXyZ987/src/lib.rs:3\nfinished in 1.5s\n2026-11-23T11:22:33Z",
            ),
            (
                "Randomized with seed 1234\nfailed: expected 3, got 4 (pid 4242)",
                "Randomized with seed 98765\nfailed: expected 3, got 4 (pid 17)",
            ),
            ("--seed=1 FAILED", "--seed=2 FAILED"),
        ] {
            assert_eq!(fingerprint("t", a), fingerprint("t", b), "{a}");
        }
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
}
