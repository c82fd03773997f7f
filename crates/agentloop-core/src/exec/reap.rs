//! What an agent leaves behind: helpers that left its process group come back to the
//! driver (a child subreaper) and are ended with it; a group whose driver was killed
//! is ended by the driver that takes over.

use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// Set once this process is a child subreaper (see [`become_subreaper`]).
static SUBREAPER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes this process the reaper of its orphaned descendants (Linux), so helpers an
/// agent starts in a new session (outside its process group) come back to us and are
/// ended with it. Only for a process that supervises one child at a time: after each
/// child ends, every remaining child of ours is killed.
pub fn become_subreaper() -> std::io::Result<()> {
    nix::sys::prctl::set_child_subreaper(true).map_err(std::io::Error::from)?;
    SUBREAPER.store(true, std::sync::atomic::Ordering::SeqCst);
    Ok(())
}

/// Live processes (not zombies) whose `/proc/PID/stat` fields after the command name
/// (state, ppid, pgrp, …) satisfy `keep`.
fn processes(keep: impl Fn(&[&str]) -> bool) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                let fields: Vec<&str> = stat
                    .rsplit(')')
                    .next()
                    .unwrap_or("")
                    .split_whitespace()
                    .collect();
                fields.first() != Some(&"Z") && keep(&fields)
            })
        })
        .collect()
}

/// This process's children (orphans reparented to us, as a subreaper).
fn children() -> Vec<Pid> {
    let me = std::process::id().to_string();
    processes(|f| f.get(1) == Some(&me.as_str()))
        .into_iter()
        .map(Pid::from_raw)
        .collect()
}

/// Ends every child of this process: SIGTERM, up to a second to go (so helpers can
/// release their locks), then SIGKILL; all are reaped. Gives up after `limit`.
pub(super) fn kill_orphans(limit: Duration) {
    let until = Instant::now() + limit;
    let first = children();
    if first.is_empty() {
        return;
    }
    for &pid in &first {
        let _ = nix::sys::signal::kill(pid, Signal::SIGTERM);
    }
    let grace = Instant::now() + Duration::from_secs(1);
    while Instant::now() < grace {
        reap_exited();
        if children().is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    loop {
        let left = children();
        if left.is_empty() || Instant::now() >= until {
            return;
        }
        for pid in left {
            let _ = nix::sys::signal::kill(pid, Signal::SIGKILL);
            let _ = nix::sys::wait::waitpid(pid, None);
        }
    }
}

/// Reaps orphans that have exited, without waiting for the others.
pub(super) fn reap_exited() {
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    while let Ok(st) = waitpid(None, Some(WaitPidFlag::WNOHANG)) {
        if st == WaitStatus::StillAlive {
            break;
        }
    }
}

/// Whether [`become_subreaper`] was called.
pub(super) fn is_subreaper() -> bool {
    SUBREAPER.load(std::sync::atomic::Ordering::SeqCst)
}

/// The live processes of group `pgid`.
fn group_members(pgid: i32) -> Vec<i32> {
    let g = pgid.to_string();
    processes(|f| f.get(2) == Some(&g.as_str()))
}

/// Ends what is left of an agent's process group after its driver was killed (the
/// agent itself died with the driver; its children did not). Only a group with a
/// member working inside `workdir` is touched, so a reused id is left alone. Returns
/// how many processes it ended.
pub fn end_group_left_behind(pgid: i32, workdir: &Path) -> usize {
    let members = group_members(pgid);
    let ours = members.iter().any(|pid| {
        std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd.starts_with(workdir))
    });
    if members.is_empty() || !ours {
        return 0;
    }
    let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    let until = Instant::now() + Duration::from_secs(2);
    while !group_members(pgid).is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    members.len()
}
