//! What the sandbox refused an agent in one iteration: the hosts the proxy refused
//! (written by the proxy as they happen) and, where the agent's own output shows it, a
//! write the read-only file system refused or a hidden path it could not read.

use std::path::{Path, PathBuf};

use agentloop_journal::{Denial, DenialKind};

/// The file the proxy appends its refusals to, in the iteration's directory.
pub const NETWORK_FILE: &str = "sandbox-network.jsonl";

/// At most this many refusals are recorded for one iteration.
pub const MAX_PER_ITERATION: usize = 20;

/// The refusals of the iteration whose directory is `dir`: the proxy's, then what
/// the agent's log shows; `hidden` are the hidden paths (absolute).
pub fn of_iteration(dir: &Path, hidden: &[PathBuf]) -> Vec<Denial> {
    let mut out: Vec<Denial> = std::fs::read_to_string(dir.join(NETWORK_FILE))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    if let Ok(bytes) = std::fs::read(dir.join("agent.log")) {
        out.extend(in_output(&String::from_utf8_lossy(&bytes), hidden));
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|d| seen.insert((d.kind, d.target.clone())));
    out.truncate(MAX_PER_ITERATION);
    out
}

const READ_ONLY: &str = "Read-only file system";
/// What a rename over a read-only bind mount answers.
const BUSY: &str = "Device or resource busy";
/// Words of a failed write beside [`BUSY`] (an `umount` is not the agent's write).
const BUSY_WRITES: &[&str] = &[
    "could not write",
    "unable to write",
    "cannot rename",
    "could not rename",
    "unable to rename",
    "cannot create",
    "could not commit",
];
const NOT_READ: &[&str] = &[
    "No such file or directory",
    "Directory nonexistent",
    "Permission denied",
    "Not a directory",
];

/// What an agent's output shows the sandbox refused. Lines are split at real and
/// JSON-escaped newlines (the agents' stream logs carry tool output as JSON strings).
pub fn in_output(text: &str, hidden: &[PathBuf]) -> Vec<Denial> {
    let mut out = Vec::new();
    for piece in text.lines().flat_map(|l| l.split("\\n")) {
        let piece = piece.trim();
        if piece.contains(READ_ONLY) {
            out.push(Denial {
                kind: DenialKind::Write,
                target: write_target(piece, READ_ONLY),
                detail: clip(piece),
            });
        } else if piece.contains(BUSY) && BUSY_WRITES.iter().any(|w| piece.contains(w)) {
            // A file the sandbox binds read-only, replaced by a rename (git's
            // `config` and `index`): the kernel answers "busy", not "read-only".
            out.push(Denial {
                kind: DenialKind::Write,
                target: write_target(piece, BUSY),
                detail: clip(piece),
            });
        } else if NOT_READ.iter().any(|w| piece.contains(w))
            && let Some(p) = hidden.iter().find(|p| mentions(piece, p))
        {
            out.push(Denial {
                kind: DenialKind::Read,
                target: p.display().to_string(),
                detail: clip(piece),
            });
        }
    }
    out
}

/// Whether `line` names `path` (absolute, or under `~/`).
fn mentions(line: &str, path: &Path) -> bool {
    let abs = path.display().to_string();
    if line.contains(&abs) {
        return true;
    }
    let home = std::env::var("HOME").unwrap_or_default();
    !home.is_empty()
        && abs
            .strip_prefix(&home)
            .is_some_and(|rest| line.contains(&format!("~{rest}")))
}

/// The path in a read-only error: `cannot create /x: Read-only…`, `touch: cannot
/// touch '/x': Read-only…`, `[Errno 30] Read-only file system: '/x'`.
fn write_target(line: &str, marker: &str) -> String {
    let (before, after) = line.split_once(marker).unwrap_or((line, ""));
    let clean = |s: &str| {
        s.trim_matches(|c: char| c == '\'' || c == '"' || c == '`' || c == '\\' || c == ':')
            .to_string()
    };
    // Python's `Read-only file system: '/x'`; not the JSON that follows a message.
    let after = after.strip_prefix(':').unwrap_or("").trim();
    if after.starts_with(['\'', '"', '/']) {
        let tok = after.split_whitespace().next().unwrap_or("");
        return clean(tok);
    }
    let before = before.trim_end().trim_end_matches(':');
    let tok = before.rsplit(char::is_whitespace).next().unwrap_or("");
    let tok = clean(tok);
    if tok.is_empty() { clip(line) } else { tok }
}

fn clip(s: &str) -> String {
    if s.chars().count() <= 200 {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(200).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_hidden_reads_are_read_from_the_output() {
        let hidden = vec![PathBuf::from("/home/u/.ssh")];
        let text = "sh: 1: cannot create /home/u/outside: Read-only file system\n\
            {\"content\":\"touch: cannot touch '/p/.agentloop/x': Read-only file system\\ncat: /home/u/.ssh/id_rsa: No such file or directory\"}\n\
            OSError: [Errno 30] Read-only file system: '/etc/y'\n\
            {\"content\":\"Exit code 1\\n/bin/bash: line 1: /home/u/o2: Read-only file system\",\"is_error\":true}\n\
            error: could not write config file .git/config: Device or resource busy\n\
            umount: /mnt: target is busy; Device or resource busy elsewhere\n\
            cat: nothing: No such file or directory\n";
        let d = in_output(text, &hidden);
        let got: Vec<(DenialKind, &str)> = d.iter().map(|d| (d.kind, d.target.as_str())).collect();
        assert_eq!(
            got,
            vec![
                (DenialKind::Write, "/home/u/outside"),
                (DenialKind::Write, "/p/.agentloop/x"),
                (DenialKind::Read, "/home/u/.ssh"),
                (DenialKind::Write, "/etc/y"),
                (DenialKind::Write, "/home/u/o2"),
                (DenialKind::Write, ".git/config"),
            ]
        );
    }
}
