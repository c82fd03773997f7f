//! A hook's side: reaching the run's resident (or starting one), asking it, and
//! making sure what answers is agentloop's own.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::{Answer, Question, RESIDENT_ARG, socket_of};
use crate::exec::git::Snapshot;
use crate::exec::surface::Checked;

/// How long a hook waits for an answer unless told otherwise (a first full refresh of
/// a large project included) before it takes the full way itself.
const ANSWERED_WITHIN: Duration = Duration::from_secs(600);

/// The resident of one run, as a hook reaches it.
pub struct Resident {
    socket: PathBuf,
    /// How long an answer is waited for.
    patience: Duration,
    /// What answered was not agentloop's own resident.
    impostor: std::cell::Cell<bool>,
    run_dir: PathBuf,
    root: PathBuf,
}

impl Resident {
    /// The resident of the run in `run_dir` (of the project at `root`), when its
    /// socket is there; otherwise one is started for the hooks that come after, and
    /// this one takes the full way (`None`).
    pub fn reach(run_dir: &Path, root: &Path) -> Option<Resident> {
        let r = Resident::of(run_dir, root)?;
        if std::fs::symlink_metadata(&r.socket).is_ok() {
            return Some(r);
        }
        r.start();
        None
    }

    /// The resident of the run, if its socket is there (none is started).
    pub fn find(run_dir: &Path, root: &Path) -> Option<Resident> {
        Resident::of(run_dir, root).filter(|r| std::fs::symlink_metadata(&r.socket).is_ok())
    }

    fn of(run_dir: &Path, root: &Path) -> Option<Resident> {
        Some(Resident {
            socket: socket_of(run_dir)?,
            patience: ANSWERED_WITHIN,
            impostor: std::cell::Cell::new(false),
            run_dir: run_dir.to_path_buf(),
            root: root.to_path_buf(),
        })
    }

    /// The project's surface against the run's baseline; `Err` says why the hook
    /// takes the full way.
    pub fn surface(&mut self, seq: u64, now: &Snapshot) -> Result<Checked, String> {
        let now = now.clone();
        match self.ask(&Question::Surface { seq, now })? {
            Answer::Surface { changes, warning } => Ok(Checked { changes, warning }),
            other => Err(unexpected(other)),
        }
    }

    /// The clean copy brought up to the tree as `now` has it: its directory, and a
    /// warning to pass on.
    pub fn copy(&mut self, seq: u64, now: &Snapshot) -> Result<(PathBuf, Option<String>), String> {
        let now = now.clone();
        match self.ask(&Question::Copy { seq, now })? {
            Answer::Copy { dir, warning } => Ok((dir, warning)),
            other => Err(unexpected(other)),
        }
    }

    /// agentloop used the copy otherwise: the resident's next refresh is a full one
    /// (it ends if it cannot be told, so that no resident refreshes from a stale copy).
    pub fn forget(&mut self) {
        if !matches!(self.ask(&Question::Forget), Ok(Answer::Done)) {
            self.replace();
        }
    }

    /// The run is over: the resident ends.
    pub fn end(&mut self) {
        if self.ask(&Question::End).is_err() {
            let _ = std::fs::remove_file(&self.socket);
        }
    }

    /// The resident did not answer as it should: its socket goes (a resident whose
    /// socket is gone ends) and a new one is started for the next hook.
    pub fn replace(&self) {
        let _ = std::fs::remove_file(&self.socket);
        self.start();
    }

    /// Answers are waited for until `deadline` at the latest (a hook's own time).
    pub fn wait_until(&mut self, deadline: std::time::Instant) {
        self.patience = deadline.saturating_duration_since(std::time::Instant::now());
    }

    /// Whether something other than agentloop's own resident answered.
    pub fn impostor(&self) -> bool {
        self.impostor.get()
    }

    fn ask(&self, question: &Question) -> Result<Answer, String> {
        let stream = UnixStream::connect(&self.socket).map_err(|e| e.to_string())?;
        ours(&stream).inspect_err(|_| self.impostor.set(true))?;
        stream
            .set_read_timeout(Some(self.patience.max(Duration::from_millis(100))))
            .map_err(|e| e.to_string())?;
        let mut bytes = serde_json::to_vec(question).map_err(|e| e.to_string())?;
        bytes.push(b'\n');
        (&stream).write_all(&bytes).map_err(|e| e.to_string())?;
        let mut answer = Vec::new();
        (&stream)
            .read_to_end(&mut answer)
            .map_err(|e| e.to_string())?;
        match serde_json::from_slice(&answer) {
            Ok(Answer::Unsure { why }) => Err(why),
            Ok(a) => Ok(a),
            Err(e) => Err(format!("the resident's answer does not read: {e}")),
        }
    }

    /// Starts a resident, in a session of its own and with no standard streams: the
    /// CLI that ran the hook waits for neither.
    fn start(&self) {
        let Ok(program) = std::env::current_exe() else {
            return;
        };
        let mut cmd = Command::new(program);
        cmd.arg(RESIDENT_ARG)
            .arg(&self.run_dir)
            .arg(&self.root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
        unsafe {
            cmd.pre_exec(|| {
                nix::unistd::setsid().map_err(std::io::Error::from)?;
                Ok(())
            });
        }
        // Spared: the end of a check's process ends every other child of a driver.
        let _ = crate::exec::reap::spawn_spared(&mut cmd);
    }
}

fn unexpected(a: Answer) -> String {
    format!("the resident answered another question ({a:?})")
}

/// The variables that decide how agentloop and its git run.
fn governs(name: &str) -> bool {
    name == "PATH"
        || name == "HOME"
        || ["LD_", "GIT_", "XDG_", "AGENTLOOP_"]
            .iter()
            .any(|p| name.starts_with(p))
}

/// The governing variables of an environment block (`/proc/PID/environ`), sorted.
fn governing(block: &[u8]) -> Vec<&[u8]> {
    let mut vars: Vec<&[u8]> = block
        .split(|b| *b == 0)
        .filter(|kv| {
            let name = kv.split(|b| *b == b'=').next().unwrap_or_default();
            std::str::from_utf8(name).is_ok_and(governs)
        })
        .collect();
    vars.sort();
    vars
}

/// The socket's other end is agentloop's own program, run by this user with this
/// process's governing variables.
fn ours(stream: &UnixStream) -> Result<(), String> {
    use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
    let creds = getsockopt(stream, PeerCredentials).map_err(|e| e.to_string())?;
    // `/proc/self` belongs to the process's own user.
    let me = std::fs::metadata("/proc/self").map_err(|e| e.to_string())?;
    if creds.uid() != std::os::unix::fs::MetadataExt::uid(&me) {
        return Err("the resident's socket is another user's".into());
    }
    let pid = creds.pid();
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).map_err(|e| e.to_string())?;
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    if exe != me {
        return Err(format!(
            "what listens on the resident's socket runs {}, not agentloop",
            exe.display()
        ));
    }
    let theirs = std::fs::read(format!("/proc/{pid}/environ")).map_err(|e| e.to_string())?;
    let mine = std::fs::read("/proc/self/environ").map_err(|e| e.to_string())?;
    if governing(&theirs) != governing(&mine) {
        return Err("the resident runs with other variables than this hook".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_variables_that_decide_how_agentloop_runs_are_compared() {
        let a = b"PATH=/bin\0TERM=xterm\0GIT_DIR=x\0LD_PRELOAD=/evil.so\0CLAUDE_X=1\0";
        let b = b"GIT_DIR=x\0CLAUDE_X=2\0PATH=/bin\0LD_PRELOAD=/evil.so\0";
        assert_eq!(governing(a), governing(b));
        let c = b"PATH=/bin\0GIT_DIR=x\0";
        assert_ne!(governing(a), governing(c));
        let d = b"PATH=/tmp/fake:/bin\0GIT_DIR=x\0LD_PRELOAD=/evil.so\0";
        assert_ne!(governing(a), governing(d));
    }
}
