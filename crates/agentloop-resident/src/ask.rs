//! A hook's side: reaching the run's resident (or starting one), asking it, and
//! making sure what answers is agentloop's own.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::protocol::{
    Answer, Asked, Question, RESIDENT_ARG, answer_bytes, sealed, seals, socket_of,
};
use agentloop_exec::git::Snapshot;
use agentloop_verify::surface::Checked;

/// The clean copy a resident brought up to date for a hook.
pub struct Copied {
    pub dir: PathBuf,
    pub warning: Option<String>,
    /// What of the agent's added files it kept out.
    pub left_out: Vec<agentloop_journal::LeftOut>,
    /// What it let in because the work writes tests.
    pub admitted: Vec<String>,
}

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
    /// It failed otherwise than by saying it is unsure: it is replaced.
    broken: std::cell::Cell<bool>,
    /// The pid of what answered, once it was found to be agentloop's own.
    peer: std::cell::Cell<Option<i32>>,
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
        // Questions are sealed with the journal's key: without one, no resident.
        agentloop_journal::seal(b"")?;
        Some(Resident {
            socket: socket_of(run_dir)?,
            patience: ANSWERED_WITHIN,
            impostor: std::cell::Cell::new(false),
            broken: std::cell::Cell::new(false),
            peer: std::cell::Cell::new(None),
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
    pub fn copy(&mut self, seq: u64, now: &Snapshot, tasks: &[&str]) -> Result<Copied, String> {
        let now = now.clone();
        let tasks = tasks.iter().map(|t| t.to_string()).collect();
        match self.ask(&Question::Copy { seq, now, tasks })? {
            Answer::Copy {
                dir,
                warning,
                left_out,
                admitted,
            } => Ok(Copied {
                dir,
                warning,
                left_out,
                admitted,
            }),
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
            self.stop();
        }
    }

    /// Whether it failed otherwise than by saying it is unsure (then [`replace`] it).
    pub fn broken(&self) -> bool {
        self.broken.get()
    }

    /// The resident did not answer as it should: it is ended (when it was found to be
    /// agentloop's own: by its pid, and waited for, so that it writes in the copy no
    /// more), its socket goes, and a new one is started for the next hook.
    pub fn replace(&self) {
        self.stop();
        self.start();
    }

    fn stop(&self) {
        if let Some(pid) = self.peer.get() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
            let gone = std::time::Instant::now();
            while alive(pid) && gone.elapsed() < Duration::from_secs(2) {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        let _ = std::fs::remove_file(&self.socket);
    }

    /// Answers are waited for at most half the time left until `deadline` (a hook's
    /// own), so that the full way still fits after them.
    pub fn wait_until(&mut self, deadline: std::time::Instant) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        self.patience = (left / 2).min(ANSWERED_WITHIN);
    }

    /// Whether something other than agentloop's own resident answered.
    pub fn impostor(&self) -> bool {
        self.impostor.get()
    }

    fn ask(&self, question: &Question) -> Result<Answer, String> {
        let asked = self.asked(question);
        if asked.is_err() {
            self.broken.set(true);
        }
        match asked? {
            Answer::Unsure { why } => Err(why),
            a => Ok(a),
        }
    }

    /// One sealed question on a connection of its own, and its sealed answer.
    fn asked(&self, question: &Question) -> Result<Answer, String> {
        let body = serde_json::to_vec(&Asked {
            run_dir: self.run_dir.clone(),
            root: self.root.clone(),
            at_ms: agentloop_ground::clock::now_ms(),
            question: clone_of(question),
        })
        .map_err(|e| e.to_string())?;
        let seal = agentloop_journal::seal(&body).ok_or("no journal key")?;
        let stream = connect(&self.socket)?;
        let pid = ours(&stream).inspect_err(|_| self.impostor.set(true))?;
        self.peer.set(Some(pid));
        stream
            .set_read_timeout(Some(self.patience.max(Duration::from_millis(100))))
            .map_err(|e| e.to_string())?;
        stream
            .set_write_timeout(Some(Duration::from_secs(2)))
            .map_err(|e| e.to_string())?;
        (&stream)
            .write_all(&sealed(&seal, &body))
            .map_err(|e| e.to_string())?;
        let mut answer = Vec::new();
        (&stream)
            .read_to_end(&mut answer)
            .map_err(|e| e.to_string())?;
        let text = String::from_utf8(answer).map_err(|_| "the answer is not text")?;
        let (answer_seal, rest) = text.split_once('\n').ok_or("no answer")?;
        let answer_body = rest.strip_suffix('\n').ok_or("a cut answer")?;
        if !seals(&answer_bytes(&seal, answer_body.as_bytes()), answer_seal) {
            self.impostor.set(true);
            return Err("the answer is not sealed for this question".into());
        }
        serde_json::from_str(answer_body).map_err(|e| format!("the answer does not read: {e}"))
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
        let _ = agentloop_exec::reap::spawn_spared(&mut cmd);
    }
}

/// A question's copy (questions hold a snapshot; they are not `Clone` otherwise).
fn clone_of(q: &Question) -> Question {
    match q {
        Question::Surface { seq, now } => Question::Surface {
            seq: *seq,
            now: now.clone(),
        },
        Question::Copy { seq, now, tasks } => Question::Copy {
            seq: *seq,
            now: now.clone(),
            tasks: tasks.clone(),
        },
        Question::Forget => Question::Forget,
        Question::End => Question::End,
    }
}

/// Connects without waiting: a resident whose queue of connections is full (held by
/// someone who asks nothing) is as good as gone.
fn connect(path: &Path) -> Result<UnixStream, String> {
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, UnixAddr, connect, socket};
    let fd = socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
        None,
    )
    .map_err(|e| e.to_string())?;
    let addr = UnixAddr::new(path).map_err(|e| e.to_string())?;
    connect(std::os::fd::AsRawFd::as_raw_fd(&fd), &addr).map_err(|e| e.to_string())?;
    let stream = UnixStream::from(fd);
    stream.set_nonblocking(false).map_err(|e| e.to_string())?;
    Ok(stream)
}

/// Whether process `pid` lives (not a zombie).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| !r.trim_start().starts_with('Z'))
    })
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
/// process's governing variables: its pid.
fn ours(stream: &UnixStream) -> Result<i32, String> {
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
    Ok(pid)
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
