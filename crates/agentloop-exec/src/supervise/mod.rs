//! Running a child program under supervision: its own process group, a timeout, a
//! stop request, output capped and streamed to a log, and no hang when a grandchild
//! keeps the pipes open. Used for agents and for verification commands.

use std::ffi::OsString;

use agentloop_config::env_allowed;
use std::fs::File;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use exit::{Exit, terminate};
use pipes::{Sink, Stream, pump};

mod exit;
mod pipes;

/// How long a reader may go on after the child exited (a grandchild holding the pipe).
const DRAIN_LIMIT: Duration = Duration::from_secs(2);
/// How often `should_stop` is asked while the program runs.
const STOP_POLL: Duration = Duration::from_millis(100);
/// Bytes of the end of the output kept in memory (for the final message and digests).
pub const TAIL_BYTES: usize = 64 * 1024;
/// Bytes of the end of standard error kept in memory.
pub const STDERR_TAIL_BYTES: usize = 8 * 1024;

#[derive(Debug, Clone)]
pub struct Spec {
    pub program: OsString,
    pub args: Vec<OsString>,
    pub cwd: PathBuf,
    /// Extra variables on top of the inherited environment.
    pub env: Vec<(OsString, OsString)>,
    /// When set, only inherited variables matching these names pass (`NAME` or a
    /// `PREFIX_*` pattern); `env` is added on top.
    pub pass_env: Option<Vec<String>>,
    pub stdin: Option<Vec<u8>>,
    pub timeout: Duration,
    /// Bytes written to the log before it is truncated.
    pub output_cap: u64,
    pub log: Option<PathBuf>,
    /// Append to `log` instead of replacing it.
    pub log_append: bool,
    /// Time between SIGINT, SIGTERM and SIGKILL.
    pub grace: Duration,
    /// Keep stderr out of `tail` (it still goes to the log).
    pub tail_stdout_only: bool,
    /// Bytes of the end of the output kept in memory.
    pub tail_bytes: usize,
    /// Where to write the child's pid (its process group) once it runs, so a driver
    /// that takes over after a crash can end what is left of the group.
    pub pid_file: Option<PathBuf>,
    /// Marks the child and everything it starts (`AGENTLOOP_OWNER` in their
    /// environment), so what it leaves behind is known as its own when several run.
    pub owner: Option<String>,
    /// A command the program runs under (a sandbox: `bwrap … --`), when not empty.
    pub wrap: Vec<OsString>,
    /// All of standard output, uncapped (up to [`STDOUT_COPY_BYTES`]), also written
    /// here: a runner's report that is its output (`go test -json`).
    pub stdout_copy: Option<PathBuf>,
}

/// The most of standard output [`Spec::stdout_copy`] keeps.
pub const STDOUT_COPY_BYTES: u64 = 256 * 1024 * 1024;

impl Spec {
    pub fn new(program: impl Into<OsString>, cwd: impl Into<PathBuf>) -> Spec {
        Spec {
            program: program.into(),
            args: Vec::new(),
            cwd: cwd.into(),
            env: Vec::new(),
            pass_env: None,
            stdin: None,
            timeout: Duration::from_secs(600),
            output_cap: 8 * 1024 * 1024,
            log: None,
            log_append: false,
            grace: Duration::from_secs(5),
            tail_stdout_only: false,
            tail_bytes: TAIL_BYTES,
            pid_file: None,
            owner: None,
            wrap: Vec::new(),
            stdout_copy: None,
        }
    }

    pub fn arg(mut self, a: impl Into<OsString>) -> Spec {
        self.args.push(a.into());
        self
    }
}

#[derive(Debug, Clone, Default)]
pub struct Finished {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    /// Ended because the caller asked it to stop.
    pub killed: bool,
    pub duration: Duration,
    pub output_bytes: u64,
    pub truncated: bool,
    /// The end of the output (`Spec::tail_bytes` of it).
    pub tail: Vec<u8>,
    /// The end of standard error alone ([`STDERR_TAIL_BYTES`]), where a program that
    /// failed says why.
    pub stderr_tail: Vec<u8>,
}

impl Finished {
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out && !self.killed
    }
}

/// A running child in its own process group.
pub struct Running {
    child: Child,
    pgid: Pid,
    started: Instant,
    sink: Arc<Mutex<Sink>>,
    /// The thread serving the child's pipes.
    pump: JoinHandle<()>,
    /// Its message that both output streams reached their end.
    drained: Receiver<()>,
    spec: Spec,
}

/// Starts the program. The child gets its own process group and is killed if this
/// process dies (Linux parent-death signal).
pub fn spawn(spec: Spec) -> std::io::Result<Running> {
    // The program under its sandbox's command, and — for an owned program when
    // several run at once — under a keeper that ends whatever it leaves behind.
    let mut argv: Vec<&std::ffi::OsStr> = spec.wrap.iter().map(|a| a.as_os_str()).collect();
    argv.push(&spec.program);
    let keeper = super::keeper::keeper().filter(|_| spec.owner.is_some());
    if let Some(k) = keeper {
        argv.splice(
            0..0,
            [
                k.as_os_str(),
                super::keeper::KEEP_ARG.as_ref(),
                "--".as_ref(),
            ],
        );
    }
    let mut cmd = Command::new(argv[0]);
    cmd.args(&argv[1..]);
    if let Some(allowed) = &spec.pass_env {
        cmd.env_clear();
        cmd.envs(
            std::env::vars_os()
                .filter(|(k, _)| k.to_str().is_some_and(|k| env_allowed(k, allowed))),
        );
    }
    if let Some(owner) = &spec.owner {
        cmd.env(super::reap::OWNER_VAR, owner);
    }
    cmd.args(&spec.args)
        .current_dir(&spec.cwd)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // SAFETY: the closure only calls prctl(2), which is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(std::io::Error::from)?;
            Ok(())
        });
    }
    let log = match &spec.log {
        Some(p) if spec.log_append => Some(
            std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(p)?,
        ),
        Some(p) => Some(File::create(p)?),
        None => None,
    };
    let mut child = cmd.spawn()?;
    let pgid = Pid::from_raw(child.id() as i32);
    if let Some(p) = &spec.pid_file {
        // Best effort: without it a takeover cannot end a crashed driver's leftovers.
        // Not fsynced: a driver that crashed left it in the page cache, and a machine
        // that lost power has no leftovers.
        let _ = std::fs::write(p, format!("{}\n", child.id()));
    }
    let stdout_copy = match &spec.stdout_copy {
        Some(p) => Some((File::create(p)?, 0)),
        None => None,
    };
    let sink = Arc::new(Mutex::new(Sink {
        log,
        stdout_copy,
        cap: spec.output_cap,
        tail_cap: spec.tail_bytes,
        ..Sink::default()
    }));
    let (drained_tx, drained) = mpsc::channel();
    let streams = [
        child.stdout.take().map(|o| {
            let stream = Stream {
                stderr: false,
                keep_tail: true,
            };
            (File::from(OwnedFd::from(o)), stream)
        }),
        child.stderr.take().map(|e| {
            let stream = Stream {
                stderr: true,
                keep_tail: !spec.tail_stdout_only,
            };
            (File::from(OwnedFd::from(e)), stream)
        }),
    ];
    let input = child.stdin.take().zip(spec.stdin.clone());
    let pump = pump(streams, input, sink.clone(), drained_tx);
    Ok(Running {
        child,
        pgid,
        started: Instant::now(),
        sink,
        pump,
        drained,
        spec,
    })
}

impl Running {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the child; `should_stop` is polled and ends the child (SIGINT →
    /// SIGTERM → SIGKILL to its whole group) when it returns true. The exit is seen
    /// the moment it happens (a thread waits for it), not at the next poll.
    pub fn wait(self, mut should_stop: impl FnMut() -> bool) -> std::io::Result<Finished> {
        let Running {
            child,
            pgid,
            started,
            sink,
            pump,
            drained,
            spec,
        } = self;
        let mut exited = Exit::of(child);
        let mut timed_out = false;
        let mut killed = false;
        let deadline = started.checked_add(spec.timeout);
        let mut next_poll = Instant::now() + STOP_POLL;
        let status = loop {
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                timed_out = true;
                break terminate(pgid, &mut exited, spec.grace)?;
            }
            if now >= next_poll {
                next_poll = now + STOP_POLL;
                if should_stop() {
                    killed = true;
                    break terminate(pgid, &mut exited, spec.grace)?;
                }
            }
            let wake = deadline.map_or(next_poll, |d| d.min(next_poll));
            if let Some(st) = exited.within(wake.saturating_duration_since(now))? {
                break st;
            }
        };
        // Whatever is left in the group (grandchildren) goes too, so pipes close.
        let _ = killpg(pgid, Signal::SIGKILL);
        if super::reap::is_subreaper() {
            // Helpers that left the group (a `setsid`, a double fork) came back to us:
            // nothing the program started outlives it. SIGTERM first, so they can let go
            // of their locks.
            super::reap::kill_orphans(Duration::from_secs(2), spec.owner.as_deref());
        }
        if drained.recv_timeout(DRAIN_LIMIT).is_ok() && pump.is_finished() {
            let _ = pump.join();
        }
        let mut sink = sink
            .lock()
            .map_err(|_| std::io::Error::other("output sink poisoned"))?;
        let truncated = sink.finish();
        if let Some((f, _)) = &mut sink.stdout_copy {
            let _ = f.flush();
        }
        // Under bubblewrap (a confined agent or check) a death by signal N comes back
        // as bubblewrap's exit 128 + N: told as the signal it was.
        let (exit_code, signal) = match (status.code(), status.signal()) {
            (Some(c), None) if !spec.wrap.is_empty() && (129..160).contains(&c) => {
                (None, Some(c - 128))
            }
            other => other,
        };
        Ok(Finished {
            exit_code,
            signal,
            timed_out,
            killed,
            duration: started.elapsed(),
            output_bytes: sink.total,
            truncated,
            tail: sink.tail.iter().copied().collect(),
            stderr_tail: sink.stderr_tail.iter().copied().collect(),
        })
    }
}

/// Runs a program to the end.
pub fn run(spec: Spec, should_stop: impl FnMut() -> bool) -> std::io::Result<Finished> {
    spawn(spec)?.wait(should_stop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Spec {
        Spec::new("sh", std::env::temp_dir()).arg("-c").arg(script)
    }

    #[test]
    fn captures_exit_and_tail() {
        let f = run(sh("echo hello; exit 3"), || false).unwrap();
        assert_eq!(f.exit_code, Some(3));
        assert_eq!(f.tail, b"hello\n");
    }

    #[test]
    fn timeout_kills_the_group() {
        let mut s = sh("sleep 30 & sleep 30");
        s.timeout = Duration::from_millis(200);
        s.grace = Duration::from_millis(100);
        let t = Instant::now();
        let f = run(s, || false).unwrap();
        assert!(f.timed_out);
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    }

    #[test]
    fn grandchild_holding_pipes_does_not_hang() {
        let t = Instant::now();
        let f = run(sh("(sleep 30) & echo bye"), || false).unwrap();
        assert_eq!(f.exit_code, Some(0));
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    }

    /// One thread serves all three pipes: a large input is taken whole while the
    /// child writes more output than a pipe holds on both streams at once.
    #[test]
    fn input_and_both_outputs_flow_at_once() {
        let input: Vec<u8> = (0..1_000_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let mut s = sh(
            "i=0; while [ $i -lt 3000 ]; do echo out$i; echo err$i >&2; i=$((i+1)); done; wc -c",
        );
        s.stdin = Some(input);
        s.tail_bytes = 64;
        let dir = tempfile::tempdir().unwrap();
        s.log = Some(dir.path().join("log"));
        let f = run(s, || false).unwrap();
        assert_eq!(f.exit_code, Some(0));
        assert_eq!(
            String::from_utf8_lossy(&f.tail).lines().last(),
            Some("1000000")
        );
        assert!(f.stderr_tail.ends_with(b"err2999\n"));
        let log = std::fs::read_to_string(dir.path().join("log")).unwrap();
        assert!(log.contains("out2999\n") && log.contains("err0\n"));
    }

    /// A child that reads none of its input, or closes its output and reads its input
    /// after: neither hangs, and the second gets all of it.
    #[test]
    fn input_not_taken_or_taken_after_the_output_closed() {
        let t = Instant::now();
        let mut s = sh("echo done");
        s.stdin = Some(vec![b'x'; 1 << 20]);
        let f = run(s, || false).unwrap();
        assert_eq!((f.exit_code, f.tail.as_slice()), (Some(0), &b"done\n"[..]));
        let dir = tempfile::tempdir().unwrap();
        let counted = dir.path().join("count");
        let mut s = sh(&format!(
            "exec >/dev/null 2>&1; sleep 0.2; wc -c > {}",
            counted.display()
        ));
        s.stdin = Some(vec![b'y'; 300_000]);
        let f = run(s, || false).unwrap();
        assert_eq!(f.exit_code, Some(0));
        assert_eq!(std::fs::read_to_string(&counted).unwrap().trim(), "300000");
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    }

    /// Both ways of waiting for the exit: none while it runs, its status once it ended.
    #[test]
    fn the_exit_is_seen_on_a_pidfd_or_by_a_waiting_thread() {
        for pidfd in [true, false] {
            let child = Command::new("sh")
                .args(["-c", "sleep 0.3; exit 4"])
                .spawn()
                .unwrap();
            let mut exit = if pidfd {
                Exit::of(child)
            } else {
                Exit::thread(child)
            };
            assert_eq!(
                matches!(exit, Exit::Pidfd(..)),
                pidfd,
                "this kernel has pidfds"
            );
            assert!(exit.within(Duration::from_millis(20)).unwrap().is_none());
            let st = exit.within(Duration::from_secs(10)).unwrap().unwrap();
            assert_eq!(st.code(), Some(4));
        }
    }

    #[test]
    fn output_cap_keeps_head_and_notes_truncation() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("out.log");
        let mut s = sh("i=0; while [ $i -lt 2000 ]; do echo line$i; i=$((i+1)); done");
        s.output_cap = 100;
        s.log = Some(log.clone());
        let f = run(s, || false).unwrap();
        assert!(f.truncated);
        let text = std::fs::read_to_string(log).unwrap();
        assert!(text.starts_with("line0\nline1\n"));
        assert!(text.contains("[agentloop: output truncated at 100 bytes;"));
        assert!(text.ends_with("line1999\n"));
    }
}
