//! A git command with a deadline, for git agentloop runs on what an agent made (its
//! objects fetched back from a sandbox): a store it made to be slow holds one lane at
//! most that long, never the driver for good. The command runs in a process group of
//! its own, so the programs git starts (`index-pack`, `upload-pack`) end with it.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Runs `c` (with `input` on its stdin) to its end within `deadline`: its stdout, or
/// why not (its stderr, or the deadline passed, when the whole group is killed).
pub fn run_git_within(
    mut c: Command,
    input: Option<&[u8]>,
    deadline: Duration,
) -> Result<Vec<u8>, String> {
    c.process_group(0)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().map_err(|e| format!("git: {e}"))?;
    // Written while the output is read: a pipe full both ways would wait for good.
    if let (Some(mut stdin), Some(bytes)) = (child.stdin.take(), input) {
        let bytes = bytes.to_vec();
        std::thread::spawn(move || {
            use std::io::Write;
            let _ = stdin.write_all(&bytes);
        });
    }
    let group = nix::unistd::Pid::from_raw(-(child.id() as i32));
    let read = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let out = read(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = read(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = match rx.recv_timeout(deadline) {
        Ok(status) => status.map_err(|e| format!("git: {e}")),
        Err(_) => {
            let _ = nix::sys::signal::kill(group, nix::sys::signal::Signal::SIGKILL);
            let _ = waiter.join();
            // The group is gone; what it wrote is read to its end, and dropped.
            let _ = (out.join(), err.join());
            return Err(format!(
                "git did not finish within {}",
                humantime::format_duration(deadline)
            ));
        }
    };
    let _ = waiter.join();
    let (out, err) = (
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    );
    match status {
        Ok(s) if s.success() => Ok(out),
        Ok(_) => Err(format!(
            "git failed: {}",
            String::from_utf8_lossy(&err).trim()
        )),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_git_past_its_deadline_ends_with_what_it_started() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("still-here");
        let mut c = Command::new("git");
        c.current_dir(dir.path()).args([
            "-c",
            &format!("alias.hang=!sleep 2; touch {}", marker.display()),
            "hang",
        ]);
        let t = std::time::Instant::now();
        let e = run_git_within(c, None, Duration::from_millis(300)).unwrap_err();
        assert!(e.contains("did not finish within 300ms"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        std::thread::sleep(Duration::from_millis(2200));
        assert!(!marker.exists(), "the program git started was killed too");

        let mut c = Command::new("git");
        c.current_dir(dir.path()).args(["version"]);
        let out = run_git_within(c, None, Duration::from_secs(30)).unwrap();
        assert!(String::from_utf8_lossy(&out).starts_with("git version"));
        let mut c = Command::new("git");
        c.current_dir(dir.path()).args(["hash-object", "--stdin"]);
        let out = run_git_within(c, Some(b"x\n"), Duration::from_secs(30)).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out).trim(),
            "587be6b4c3f93f93c489c0111bba5596147a26cb"
        );
        let mut c = Command::new("git");
        c.current_dir(dir.path()).args(["rev-parse", "HEAD"]);
        let e = run_git_within(c, None, Duration::from_secs(30)).unwrap_err();
        assert!(e.starts_with("git failed: fatal:"), "{e}");
    }
}
