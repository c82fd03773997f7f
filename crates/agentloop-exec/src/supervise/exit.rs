//! Waiting for the child's exit, and ending its process group.

use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::process::{Child, ExitStatus};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// How the child's exit is waited for: a pidfd polled on this thread, or — on a
/// kernel without pidfds (before Linux 5.3) — a thread blocked in `wait`.
pub(super) enum Exit {
    Pidfd(OwnedFd, Child),
    Thread(Receiver<std::io::Result<ExitStatus>>),
}

impl Exit {
    pub(super) fn of(child: Child) -> Exit {
        // SAFETY: pidfd_open(2) takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { nix::libc::syscall(nix::libc::SYS_pidfd_open, child.id(), 0) };
        if fd >= 0 {
            // SAFETY: the descriptor was just opened and is owned by no one else.
            let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
            return Exit::Pidfd(fd, child);
        }
        Exit::thread(child)
    }

    pub(super) fn thread(mut child: Child) -> Exit {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait());
        });
        Exit::Thread(rx)
    }

    /// The child's exit status once it exited, waiting at most `timeout`; `None`
    /// while it runs.
    pub(super) fn within(&mut self, timeout: Duration) -> std::io::Result<Option<ExitStatus>> {
        match self {
            Exit::Pidfd(fd, child) => {
                // Rounded up: a wait cut to 0 ms would spin until the time is up.
                let ms = timeout.as_micros().div_ceil(1000).min(i32::MAX as u128);
                let ms = PollTimeout::try_from(ms as i32).unwrap_or(PollTimeout::MAX);
                let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
                match poll(&mut fds, ms) {
                    Ok(0) | Err(nix::errno::Errno::EINTR) => Ok(None),
                    Ok(_) => child.wait().map(Some),
                    Err(e) => Err(e.into()),
                }
            }
            Exit::Thread(rx) => match rx.recv_timeout(timeout) {
                Ok(st) => st.map(Some),
                Err(RecvTimeoutError::Timeout) => Ok(None),
                Err(RecvTimeoutError::Disconnected) => Err(waiter_gone()),
            },
        }
    }
}

/// SIGINT, then SIGTERM, then SIGKILL to the process group, a grace period apart;
/// `exited` gives the child's exit.
pub(super) fn terminate(
    pgid: Pid,
    exited: &mut Exit,
    grace: Duration,
) -> std::io::Result<ExitStatus> {
    for sig in [Signal::SIGINT, Signal::SIGTERM] {
        let _ = killpg(pgid, sig);
        let until = Instant::now() + grace;
        while Instant::now() < until {
            if let Some(st) = exited.within(until.saturating_duration_since(Instant::now()))? {
                return Ok(st);
            }
        }
    }
    let _ = killpg(pgid, Signal::SIGKILL);
    loop {
        if let Some(st) = exited.within(Duration::from_secs(60))? {
            return Ok(st);
        }
    }
}

fn waiter_gone() -> std::io::Error {
    std::io::Error::other("the thread waiting for the program ended without its exit status")
}
