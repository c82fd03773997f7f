//! The child's pipes: its output capped into the log and kept in memory (the tail),
//! and the one thread that serves all three.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::process::ChildStdin;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use super::{STDERR_TAIL_BYTES, STDOUT_COPY_BYTES, TAIL_BYTES};

#[derive(Default)]
pub(super) struct Sink {
    pub(super) log: Option<File>,
    pub(super) cap: u64,
    pub(super) written: u64,
    pub(super) total: u64,
    /// Output past the cap: only the end is kept.
    pub(super) overflow: VecDeque<u8>,
    pub(super) tail: VecDeque<u8>,
    pub(super) tail_cap: usize,
    pub(super) stderr_tail: VecDeque<u8>,
    /// `Spec::stdout_copy`, and what was written to it.
    pub(super) stdout_copy: Option<(File, u64)>,
}

impl Sink {
    fn push(&mut self, bytes: &[u8], stream: Stream) {
        self.total += bytes.len() as u64;
        if !stream.stderr
            && let Some((f, written)) = &mut self.stdout_copy
        {
            let room = STDOUT_COPY_BYTES.saturating_sub(*written) as usize;
            let now = &bytes[..room.min(bytes.len())];
            if f.write_all(now).is_ok() {
                *written += now.len() as u64;
            }
        }
        if stream.keep_tail {
            extend_ring(&mut self.tail, bytes, self.tail_cap);
        }
        if stream.stderr {
            extend_ring(&mut self.stderr_tail, bytes, STDERR_TAIL_BYTES);
        }
        let room = self.cap.saturating_sub(self.written) as usize;
        let (now, later) = bytes.split_at(room.min(bytes.len()));
        if !now.is_empty() {
            if let Some(f) = &mut self.log {
                let _ = f.write_all(now);
            }
            self.written += now.len() as u64;
        }
        if !later.is_empty() {
            extend_ring(&mut self.overflow, later, TAIL_BYTES);
        }
    }

    pub(super) fn finish(&mut self) -> bool {
        let truncated = self.total > self.written;
        if let Some(f) = &mut self.log {
            if truncated {
                let omitted = self.total - self.written - self.overflow.len() as u64;
                let _ = write!(
                    f,
                    "\n[agentloop: output truncated at {} bytes; {omitted} bytes omitted; the last {} bytes follow]\n",
                    self.cap,
                    self.overflow.len()
                );
                let (a, b) = self.overflow.as_slices();
                let _ = f.write_all(a);
                let _ = f.write_all(b);
            }
            let _ = f.flush();
        }
        truncated
    }
}

/// Which stream a reader reads, and whether its bytes go into `tail`.
#[derive(Clone, Copy)]
pub(super) struct Stream {
    pub(super) stderr: bool,
    pub(super) keep_tail: bool,
}

fn extend_ring(ring: &mut VecDeque<u8>, bytes: &[u8], cap: usize) {
    let bytes = if bytes.len() > cap {
        &bytes[bytes.len() - cap..]
    } else {
        bytes
    };
    let excess = (ring.len() + bytes.len()).saturating_sub(cap);
    ring.drain(..excess);
    ring.extend(bytes);
}

/// One thread serves the child's pipes, not one each (every thread started is time an
/// iteration pays): both output streams read as they come, into the sink, and the
/// input written as the child takes it — never more at once than a pipe takes
/// without blocking once it says it has room, so a child that reads nothing cannot
/// stop its output being read. `drained` is told when both output streams ended; the
/// input the child has not taken yet is written on after that (it may still read it).
pub(super) fn pump(
    mut streams: [Option<(File, Stream)>; 2],
    input: Option<(ChildStdin, Vec<u8>)>,
    sink: Arc<Mutex<Sink>>,
    drained: Sender<()>,
) -> JoinHandle<()> {
    /// What a pipe takes at once without blocking once poll(2) says it can be written.
    const PIPE_BUF: usize = 4096;
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        let (mut stdin, input) = match input {
            Some((i, bytes)) => (Some(i), bytes),
            None => (None, Vec::new()),
        };
        let mut written = 0;
        if input.is_empty() {
            stdin = None;
        }
        while streams.iter().any(Option::is_some) {
            let (ready, writable) = {
                let mut fds: Vec<PollFd> = streams
                    .iter()
                    .flatten()
                    .map(|(f, _)| PollFd::new(f.as_fd(), PollFlags::POLLIN))
                    .collect();
                let reading = fds.len();
                if let Some(i) = &stdin {
                    fds.push(PollFd::new(i.as_fd(), PollFlags::POLLOUT));
                }
                match poll(&mut fds, PollTimeout::NONE) {
                    Ok(_) => {}
                    Err(nix::errno::Errno::EINTR) => continue,
                    Err(_) => break,
                }
                let any = |f: &PollFd| f.revents().is_some_and(|r| !r.is_empty());
                let ready: Vec<bool> = fds[..reading].iter().map(any).collect();
                (ready, fds.get(reading).is_some_and(any))
            };
            let mut ready = ready.into_iter();
            for slot in streams.iter_mut() {
                let Some((f, stream)) = slot else { continue };
                if ready.next() != Some(true) {
                    continue;
                }
                match f.read(&mut buf) {
                    Ok(0) => *slot = None,
                    Ok(n) => {
                        if let Ok(mut s) = sink.lock() {
                            s.push(&buf[..n], *stream);
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => *slot = None,
                }
            }
            if writable && let Some(i) = &mut stdin {
                let end = input.len().min(written + PIPE_BUF);
                match i.write(&input[written..end]) {
                    Ok(n) => written += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    // The child closed its end: what it did not take is not wanted.
                    Err(_) => written = input.len(),
                }
                if written == input.len() {
                    stdin = None;
                }
            }
        }
        let _ = drained.send(());
        if let Some(mut i) = stdin {
            let _ = i.write_all(&input[written..]);
        }
    })
}
