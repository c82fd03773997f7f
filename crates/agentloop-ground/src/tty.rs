//! A terminal's input, waited for with a deadline and without reading it: whether keys
//! wait, nothing does, or the terminal is gone.
//!
//! A terminal whose other end closed (an ssh connection dropped, a tmux session
//! killed, a terminal window shut) stays readable for ever, each read giving nothing: a
//! reader that waits for input and reads until it has a key spins. This tells that
//! terminal from one that is only quiet.

use std::os::fd::{AsRawFd, BorrowedFd};
use std::time::Duration;

/// What a terminal's input has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// Bytes to read.
    Keys,
    /// Nothing within the wait.
    Quiet,
    /// The terminal is gone: hung up, its other end closed, or at the end of its input
    /// (keys it still holds included: nobody is there to have typed more).
    Gone,
}

/// What the terminal `fd` has within `wait` (a signal ends the wait early: `Quiet`).
pub fn wait_input(fd: BorrowedFd<'_>, wait: Duration) -> Input {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = libc::c_int::try_from(wait.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: one valid pollfd, its length 1.
    let n = unsafe { libc::poll(&mut p, 1, ms) };
    if n < 0 {
        return match std::io::Error::last_os_error().kind() {
            std::io::ErrorKind::Interrupted => Input::Quiet,
            _ => Input::Gone,
        };
    }
    if n == 0 {
        return Input::Quiet;
    }
    if p.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
        return Input::Gone;
    }
    if p.revents & libc::POLLIN == 0 {
        return Input::Quiet;
    }
    // Readable with nothing to read: the end of the input.
    let mut waiting: libc::c_int = 0;
    // SAFETY: FIONREAD writes one c_int to the pointer it is given.
    let asked = unsafe { libc::ioctl(fd.as_raw_fd(), libc::FIONREAD, &mut waiting) };
    if asked == 0 && waiting == 0 {
        Input::Gone
    } else {
        Input::Keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsFd;

    #[test]
    fn a_pipe_is_quiet_has_keys_and_is_gone_once_its_writer_closes() {
        let (reader, mut writer) = std::io::pipe().unwrap();
        let wait = Duration::from_millis(10);
        assert_eq!(wait_input(reader.as_fd(), wait), Input::Quiet);
        writer.write_all(b"q").unwrap();
        assert_eq!(wait_input(reader.as_fd(), wait), Input::Keys);
        let mut byte = [0u8; 1];
        std::io::Read::read(&mut &reader, &mut byte).unwrap();
        assert_eq!(wait_input(reader.as_fd(), wait), Input::Quiet);
        // Whoever typed is gone, and keys still unread with them.
        writer.write_all(b"q").unwrap();
        drop(writer);
        assert_eq!(wait_input(reader.as_fd(), wait), Input::Gone);
    }
}
