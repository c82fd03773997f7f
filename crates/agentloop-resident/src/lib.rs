//! A hook-mode run's resident: a process of agentloop's own that lives between Stop
//! hooks and remembers what one hook process cannot — the run's clean copy kept in
//! step (`exec::clean_copy::kept`, its inotify watch on the copy) and the surface's
//! stamp with each surface file watched (`exec::surface::Remembered`). A Stop hook is
//! a new process each turn; without the resident every verification takes the full
//! way (ten git processes for the copy, every surface file's status read).
//!
//! The first Stop hook that needs it starts it (`agentloop __agentloop_resident RUN
//! ROOT`, in a session of its own, no standard streams) and verifies the full way
//! itself; later hooks ask it through a Unix socket in the run's directory, one
//! question per connection, and take the full way whenever it does not answer. It
//! answers only for the journal as the asking hook has it (the sequence number of its
//! last record): it follows the journal itself and folds every record, so both judge
//! by the same state, or it says it is unsure.
//!
//! Who may ask, and what may answer. Each question is sealed with the journal's key
//! (`journal::seal`) over its body, which names the run's directory, the project and
//! the moment it was asked; the resident acts on nothing else — a question an agent
//! wrote (a snapshot of its making, a `forget` in the middle of a check) is dropped
//! unanswered — and answers only for its own run and project. Each answer is sealed
//! over the question's seal and the answer. The socket's other end (`SO_PEERCRED`)
//! must moreover run agentloop's own program (`/proc/PID/exe`) as the asking user,
//! started with the same variables that decide how agentloop and git run (`PATH`,
//! `HOME`, `LD_*`, `GIT_*`, `XDG_*`, `AGENTLOOP_*`), and the copy it names must be the
//! run's. Anything else is not asked again: a resident that failed this way is ended
//! (by its pid, once it was found to be agentloop's own), its socket removed and a
//! resident of the hook's own started. Without a journal key there is no resident.
//!
//! It ends when the run is finished or gone, when its socket is no longer its own,
//! when a hook says the run is over, and after an hour without a sealed question.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use agentloop_exec::git::Snapshot;
use agentloop_journal::SurfaceChange;

mod ask;
mod serve;

pub use ask::Resident;
pub use serve::serve;

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
struct Asked {
    run_dir: PathBuf,
    root: PathBuf,
    at_ms: u64,
    question: Question,
}

/// How old a sealed question may be when it arrives.
const FRESH_MS: u64 = 30_000;

/// The sealed form of `body` on the wire: its seal, a newline, the body, a newline.
fn sealed(seal: &str, body: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(seal.len() + body.len() + 2);
    bytes.extend_from_slice(seal.as_bytes());
    bytes.push(b'\n');
    bytes.extend_from_slice(body);
    bytes.push(b'\n');
    bytes
}

/// Whether `seal` is the journal key's seal of `bytes` (computed again: never taken on
/// trust, whatever this process may read without the key).
fn seals(bytes: &[u8], seal: &str) -> bool {
    agentloop_journal::seal(bytes).is_some_and(|s| s == seal)
}

/// What an answer's seal covers: the question's seal and the answer.
fn answer_bytes(question_seal: &str, body: &[u8]) -> Vec<u8> {
    let mut bytes = question_seal.as_bytes().to_vec();
    bytes.push(b'\n');
    bytes.extend_from_slice(body);
    bytes
}

/// What a hook asks; `seq` is the last record of the journal as the hook has it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "ask", rename_all = "snake_case")]
enum Question {
    /// The project's surface against the run's baseline, for the tree as `now` has it.
    Surface { seq: u64, now: Snapshot },
    /// The clean copy brought up to the tree as `now` has it.
    Copy { seq: u64, now: Snapshot },
    /// agentloop used the copy otherwise: its next refresh takes the full way.
    Forget,
    /// The run is over.
    End,
}

/// What the resident answers.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
enum Answer {
    Surface {
        changes: Vec<SurfaceChange>,
        warning: Option<String>,
    },
    Copy {
        dir: PathBuf,
        warning: Option<String>,
    },
    Done,
    /// The hook takes the full way.
    Unsure {
        why: String,
    },
}
