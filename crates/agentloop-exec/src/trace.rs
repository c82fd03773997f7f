//! What a check reads: the project files opened while it runs, seen with inotify on
//! every directory of the copy that holds a tracked file. Taken once per test
//! baseline, on the clean copy no agent has touched, so that a script a check calls
//! or a module its tests import is known before any agent could change it.
//!
//! An open is seen whoever opens the file (the check, a runner it starts, a program it
//! executes: `execve` opens the file too) and however it was named (a relative path, a
//! symbolic link into the copy). It is not seen when the file was mapped or opened
//! before the trace began, or through a directory the trace did not watch (one made
//! during the check, or reached through a link that leads out of the copy); a queue
//! overflow or a watch limit makes the trace incomplete, and that is said.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{PipeReader, PipeWriter};
use std::os::fd::AsFd;
use std::path::Path;

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::inotify::{AddWatchFlags as F, InitFlags, Inotify, WatchDescriptor};

/// The most directories watched; a project with more is traced in part (said).
const MOST_DIRS: usize = 20_000;

/// A trace under way.
pub struct Trace {
    /// Closed to end the trace: the thread waits on its other end beside inotify's.
    stop: PipeWriter,
    thread: std::thread::JoinHandle<Traced>,
}

/// What a trace saw.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Traced {
    /// The files opened, relative to the copy (only files of `files` given to
    /// [`Trace::start`]).
    pub read: BTreeSet<String>,
    /// Why the trace may have missed opens (a queue overflow, too many directories).
    pub incomplete: Option<String>,
}

impl Trace {
    /// Starts watching the directories of `files` (paths relative to `dir`); `None`
    /// when inotify is not available.
    pub fn start(dir: &Path, files: &[String]) -> Option<Trace> {
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok()?;
        let wanted: BTreeSet<String> = files.iter().cloned().collect();
        let dirs: BTreeSet<&str> = files
            .iter()
            .map(|f| f.rsplit_once('/').map_or("", |(d, _)| d))
            .collect();
        let mut watched: BTreeMap<WatchDescriptor, String> = BTreeMap::new();
        let mut incomplete = None;
        for d in dirs {
            if watched.len() >= MOST_DIRS {
                incomplete = Some(format!("more than {MOST_DIRS} directories"));
                break;
            }
            let path = if d.is_empty() {
                dir.to_path_buf()
            } else {
                dir.join(d)
            };
            match inotify.add_watch(&path, F::IN_OPEN | F::IN_ONLYDIR | F::IN_DONT_FOLLOW) {
                Ok(wd) => {
                    watched.insert(wd, d.to_string());
                }
                // A directory that is a link, or is gone: nothing of the tree to see.
                Err(nix::errno::Errno::ENOTDIR | nix::errno::Errno::ENOENT) => {}
                Err(e) => {
                    incomplete = Some(format!("cannot watch {d}/: {e}"));
                    break;
                }
            }
        }
        let (stopping, stop) = std::io::pipe().ok()?;
        let thread = std::thread::Builder::new()
            .name("trace".into())
            .spawn(move || follow(inotify, watched, wanted, incomplete, &stopping))
            .ok()?;
        Some(Trace { stop, thread })
    }

    /// Ends the trace (after the check ended): what it saw. Every open the check made
    /// is queued by then (inotify queues an event within the `open` itself), so the
    /// thread reads the queue once more and ends at once.
    pub fn finish(self) -> Traced {
        drop(self.stop);
        self.thread.join().unwrap_or_else(|_| Traced {
            read: BTreeSet::new(),
            incomplete: Some("the trace failed".into()),
        })
    }
}

fn follow(
    inotify: Inotify,
    watched: BTreeMap<WatchDescriptor, String>,
    wanted: BTreeSet<String>,
    incomplete: Option<String>,
    stop: &PipeReader,
) -> Traced {
    let mut out = Traced {
        read: BTreeSet::new(),
        incomplete,
    };
    loop {
        let mut fds = [
            PollFd::new(inotify.as_fd(), PollFlags::POLLIN),
            PollFd::new(stop.as_fd(), PollFlags::POLLIN),
        ];
        // The stop's end closed: this round reads what is queued and is the last.
        let last = match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => fds[1].revents().is_none_or(|r| !r.is_empty()),
            Err(nix::errno::Errno::EINTR) => false,
            Err(e) => {
                out.incomplete = Some(format!("cannot wait for inotify: {e}"));
                true
            }
        };
        while let Ok(events) = inotify.read_events() {
            if events.is_empty() {
                break;
            }
            for e in events {
                if e.mask.contains(F::IN_Q_OVERFLOW) {
                    out.incomplete =
                        Some("too many files opened at once for inotify's queue".into());
                    continue;
                }
                if e.mask.contains(F::IN_ISDIR) {
                    continue;
                }
                let (Some(d), Some(name)) = (watched.get(&e.wd), e.name) else {
                    continue;
                };
                let name = name.to_string_lossy();
                let path = if d.is_empty() {
                    name.into_owned()
                } else {
                    format!("{d}/{name}")
                };
                if wanted.contains(&path) {
                    out.read.insert(path);
                }
            }
        }
        if last {
            return out;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sees_files_read_and_run_by_a_child_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("scripts")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(
            root.join("check.sh"),
            "sh scripts/helper.sh\ncat src/a.txt\n",
        )
        .unwrap();
        std::fs::write(root.join("scripts/helper.sh"), "./scripts/run\n").unwrap();
        std::fs::write(root.join("scripts/run"), "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::write(root.join("src/a.txt"), "a").unwrap();
        std::fs::write(root.join("src/unread.txt"), "b").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            root.join("scripts/run"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let files: Vec<String> = [
            "check.sh",
            "scripts/helper.sh",
            "scripts/run",
            "src/a.txt",
            "src/unread.txt",
        ]
        .map(String::from)
        .to_vec();
        let trace = Trace::start(root, &files).unwrap();
        let ok = std::process::Command::new("sh")
            .arg("check.sh")
            .current_dir(root)
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(ok.success());
        let traced = trace.finish();
        assert_eq!(traced.incomplete, None);
        let read: Vec<&str> = traced.read.iter().map(String::as_str).collect();
        assert_eq!(
            read,
            ["check.sh", "scripts/helper.sh", "scripts/run", "src/a.txt"],
            "an executed file counts as read; one never opened does not"
        );
    }
}
