//! What a hook and the resident say to each other: the socket's place, the sealed
//! question and answer, and how fresh a question must be.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use agentloop_exec::git::Snapshot;
use agentloop_journal::SurfaceChange;

/// The first argument that makes agentloop's binary a run's resident.
pub const RESIDENT_ARG: &str = "__agentloop_resident";

/// A Unix socket's path holds at most this many bytes (with its terminating zero).
const SUN_PATH: usize = 108;

/// The socket of the resident of the run in `run_dir`; `None` where the path is too
/// long for a Unix socket (the run then has no resident).
pub fn socket_of(run_dir: &Path) -> Option<PathBuf> {
    let path = run_dir.join("resident.sock");
    (path.as_os_str().len() < SUN_PATH).then_some(path)
}

/// A question as a hook seals it: for which run and project, and when.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Asked {
    pub(crate) run_dir: PathBuf,
    pub(crate) root: PathBuf,
    pub(crate) at_ms: u64,
    pub(crate) question: Question,
}

/// How old a sealed question may be when it arrives.
pub(crate) const FRESH_MS: u64 = 30_000;

/// The sealed form of `body` on the wire: its seal, a newline, the body, a newline.
pub(crate) fn sealed(seal: &str, body: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(seal.len() + body.len() + 2);
    bytes.extend_from_slice(seal.as_bytes());
    bytes.push(b'\n');
    bytes.extend_from_slice(body);
    bytes.push(b'\n');
    bytes
}

/// Whether `seal` is the journal key's seal of `bytes` (computed again: never taken on
/// trust, whatever this process may read without the key).
pub(crate) fn seals(bytes: &[u8], seal: &str) -> bool {
    agentloop_journal::seal(bytes).is_some_and(|s| s == seal)
}

/// What an answer's seal covers: the question's seal and the answer.
pub(crate) fn answer_bytes(question_seal: &str, body: &[u8]) -> Vec<u8> {
    let mut bytes = question_seal.as_bytes().to_vec();
    bytes.push(b'\n');
    bytes.extend_from_slice(body);
    bytes
}

/// What a hook asks; `seq` is the last record of the journal as the hook has it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "ask", rename_all = "snake_case")]
pub(crate) enum Question {
    /// The project's surface against the run's baseline, for the tree as `now` has it.
    Surface { seq: u64, now: Snapshot },
    /// The clean copy brought up to the tree as `now` has it, for a verification of
    /// the work of every done task and of `tasks` (what it keeps out of what the agent
    /// added depends on them).
    Copy {
        seq: u64,
        now: Snapshot,
        #[serde(default)]
        tasks: Vec<String>,
    },
    /// agentloop used the copy otherwise: its next refresh takes the full way.
    Forget,
    /// The run is over.
    End,
}

/// What the resident answers.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub(crate) enum Answer {
    Surface {
        changes: Vec<SurfaceChange>,
        warning: Option<String>,
    },
    Copy {
        dir: PathBuf,
        warning: Option<String>,
        #[serde(default)]
        left_out: Vec<agentloop_journal::LeftOut>,
        #[serde(default)]
        admitted: Vec<String>,
    },
    Done,
    /// The hook takes the full way.
    Unsure {
        why: String,
    },
}
