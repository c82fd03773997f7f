//! What an agent leaves behind: helpers that left its process group come back to the
//! driver (a child subreaper) and are ended with it; a group whose driver was killed
//! is ended by the driver that takes over.

use std::os::unix::ffi::OsStrExt;
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

/// Live processes (not zombies) whose first three `/proc/PID/stat` fields after the
/// command name (state, ppid, pgrp) satisfy `keep`. (Only those are split out: the
/// scan runs after every program a lane supervised, over every process there is.)
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
                    .split_ascii_whitespace()
                    .take(3)
                    .collect();
                fields.first() != Some(&"Z") && keep(&fields)
            })
        })
        .collect()
}

/// Whether this process has a child at all, running or exited: one `waitid` that
/// reaps nothing. When it has none, no process needs to be read from `/proc`.
fn has_children() -> bool {
    use nix::sys::wait::{Id, WaitPidFlag, waitid};
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
    !matches!(waitid(Id::All, flags), Err(nix::errno::Errno::ECHILD))
}

/// This process's children (orphans reparented to us, as a subreaper), from a scan of
/// `/proc`. (Not the threads' `/proc/self/task/TID/children` lists: the kernel goes on
/// with such a list by position, so a child another lane reaps meanwhile can make it
/// skip a live one, and its orphan would outlive its program.)
fn children() -> Vec<Pid> {
    if !has_children() {
        return Vec::new();
    }
    let me = std::process::id().to_string();
    processes(|f| f.get(1) == Some(&me.as_str()))
        .into_iter()
        .map(Pid::from_raw)
        .collect()
}

/// Children this process started on purpose besides the agent (a notification
/// command): never taken for an agent's leftovers.
static SPARED: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

/// Starts `cmd` as a child of ours that is not an agent's leftover: orphan killing
/// leaves it alone until [`release`]. The pid is marked before anyone can look.
pub fn spawn_spared(cmd: &mut std::process::Command) -> std::io::Result<std::process::Child> {
    let mut spared = SPARED.lock().unwrap_or_else(|e| e.into_inner());
    let child = cmd.spawn()?;
    spared.push(child.id() as i32);
    Ok(child)
}

/// Ends the spare given by [`spawn_spared`] (once the child was waited for).
pub fn release(pid: u32) {
    if let Ok(mut s) = SPARED.lock() {
        s.retain(|p| *p != pid as i32);
    }
}

/// This process's children that no one spared: what agents left behind.
fn leftovers() -> Vec<Pid> {
    let spared = SPARED.lock().map(|s| s.clone()).unwrap_or_default();
    children()
        .into_iter()
        .filter(|p| !spared.contains(&p.as_raw()))
        .collect()
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

/// Several children run at once (workers): a sweep takes only the leftovers of the
/// program that ended, known by [`OWNER_VAR`] in their environment, and reaps only
/// them, never another thread's child.
static SHARED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The variable that marks every process a supervised program starts as its.
pub const OWNER_VAR: &str = "AGENTLOOP_OWNER";

/// Switches between one supervised program at a time (every leftover child is that
/// program's) and several at once (see [`SHARED`]).
pub fn share(shared: bool) {
    SHARED.store(shared, std::sync::atomic::Ordering::SeqCst);
}

fn owned_by(pid: Pid, owner: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
        env.split(|b| *b == 0).any(|kv| {
            kv.strip_prefix(OWNER_VAR.as_bytes())
                .and_then(|r| r.strip_prefix(b"="))
                == Some(owner.as_bytes())
        })
    })
}

/// Ends every child of this process that the ended program left: SIGTERM, up to a
/// second to go (so helpers can release their locks), then SIGKILL; all are reaped.
/// Gives up after `limit`. With several programs at once, only the leftovers marked
/// with `owner` go (none without one).
pub(super) fn kill_orphans(limit: Duration, owner: Option<&str>) {
    let shared = SHARED.load(std::sync::atomic::Ordering::SeqCst);
    let targets = || -> Vec<Pid> {
        leftovers()
            .into_iter()
            .filter(|p| !shared || owner.is_some_and(|o| owned_by(*p, o)))
            .collect()
    };
    let reap = |pids: &[Pid]| {
        use nix::sys::wait::{WaitPidFlag, waitpid};
        if shared {
            for &p in pids {
                let _ = waitpid(p, Some(WaitPidFlag::WNOHANG));
            }
        } else {
            reap_exited();
        }
    };
    let until = Instant::now() + limit;
    let first = targets();
    if first.is_empty() {
        return;
    }
    for &pid in &first {
        let _ = nix::sys::signal::kill(pid, Signal::SIGTERM);
    }
    let grace = Instant::now() + Duration::from_secs(1);
    while Instant::now() < grace {
        reap(&first);
        if targets().is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    loop {
        let left = targets();
        if left.is_empty() || Instant::now() >= until {
            return;
        }
        for pid in left {
            let _ = nix::sys::signal::kill(pid, Signal::SIGKILL);
            let _ = nix::sys::wait::waitpid(pid, None);
        }
    }
}

/// Ends every leftover child, whoever started it, and reaps every exited child: for
/// the end of a run with workers, when nothing else runs.
pub fn sweep_all() {
    if is_subreaper() {
        share(false);
        kill_orphans(Duration::from_secs(2), None);
        reap_exited();
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

/// Ends every sandbox of this user's (a `bwrap`) whose command line names a path under
/// `dir` (a run's directory: each agent's sandbox binds its iteration's file there),
/// with everything in its process namespace. A driver killed in the few milliseconds
/// while bubblewrap starts leaves one running with no parent: it outlives every
/// parent-death signal and is in a session of its own, so no process group finds it.
/// Returns how many were ended.
pub fn end_sandboxes_naming(dir: &Path) -> usize {
    use std::os::unix::fs::MetadataExt;
    let Ok(me) = std::fs::metadata("/proc/self").map(|m| m.uid()) else {
        return 0;
    };
    let mut ended = 0;
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        if !e.metadata().is_ok_and(|m| m.uid() == me) {
            continue;
        }
        let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let mut args = cmdline.split(|b| *b == 0).filter(|a| !a.is_empty());
        let bwrap = args
            .next()
            .is_some_and(|a| Path::new(std::ffi::OsStr::from_bytes(a)).ends_with("bwrap"));
        if bwrap && args.any(|a| Path::new(std::ffi::OsStr::from_bytes(a)).starts_with(dir)) {
            let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
            ended += 1;
        }
    }
    ended
}

/// The chain of parents of `pid`, nearest first (pid and command name), up to init.
pub fn lineage(pid: u32) -> Vec<(u32, String)> {
    let parent = |p: u32| {
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
        let rest = stat.rsplit(')').next()?;
        rest.split_whitespace().nth(1)?.parse::<u32>().ok()
    };
    let mut out = Vec::new();
    let mut p = pid;
    while let Some(pp) = parent(p).filter(|pp| *pp > 1) {
        let comm = std::fs::read_to_string(format!("/proc/{pp}/comm")).unwrap_or_default();
        out.push((pp, comm.trim().to_string()));
        if out.len() > 256 {
            break;
        }
        p = pp;
    }
    out
}

/// Every live process descending from one of `roots` (not the roots themselves).
pub fn descendants(roots: &[u32]) -> Vec<u32> {
    let mut children: std::collections::HashMap<u32, Vec<u32>> = Default::default();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let ppid = stat
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(ppid) = ppid {
            children.entry(ppid).or_default().push(pid);
        }
    }
    let mut out = Vec::new();
    let mut todo: Vec<u32> = roots.to_vec();
    while let Some(p) = todo.pop() {
        for &c in children.get(&p).map(Vec::as_slice).unwrap_or_default() {
            if !out.contains(&c) && !roots.contains(&c) {
                out.push(c);
                todo.push(c);
            }
        }
    }
    out
}

/// When process `pid` started, in clock ticks since boot (`/proc/PID/stat`, field
/// 22): with the pid, it names one process, since a pid is given again once its
/// process is gone.
pub fn started(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command's closing parenthesis (the command may hold any bytes) comes
    // field 3; the start time is field 22.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Live git processes working inside any of `dirs` (by their working directory).
pub fn gits_in(dirs: &[&Path]) -> Vec<i32> {
    processes(|_| true)
        .into_iter()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim() == "git" || c.starts_with("git-"))
                && std::fs::read_link(format!("/proc/{pid}/cwd"))
                    .is_ok_and(|cwd| dirs.iter().any(|d| cwd.starts_with(d)))
        })
        .collect()
}

/// Ends (SIGKILL) every process working inside `dir` — what a killed driver's agents
/// left in a worktree that is about to go. Returns how many.
pub fn end_processes_in(dir: &Path) -> usize {
    let pids: Vec<i32> = processes(|_| true)
        .into_iter()
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd.starts_with(dir))
        })
        .collect();
    for &pid in &pids {
        let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
    pids.len()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_child_that_exited_is_seen_and_left_to_be_reaped() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(super::has_children());
        // Not reaped by the look: its status is still there for its waiter.
        assert!(child.wait().unwrap().success());
    }

    /// A sandbox naming a path under the run's directory is ended; one naming another
    /// run's is not.
    #[test]
    fn a_sandbox_left_behind_by_the_run_is_ended_and_no_other() {
        use std::os::unix::process::CommandExt;
        let tmp = tempfile::tempdir().unwrap();
        let run = tmp.path().join("runs/r1");
        // A shell called `bwrap` in its command line, naming an iteration's file. It
        // waits on a builtin: a child it forked would carry the same command line for a
        // moment and be counted too.
        let start = |dir: &std::path::Path| {
            std::process::Command::new("sh")
                .arg0("bwrap")
                .args(["-c", "read -r line; :", "--bind"])
                .arg(dir.join("iterations/0001/reports.jsonl"))
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        };
        let (mut ours, mut theirs) = (start(&run), start(&tmp.path().join("runs/r2")));
        assert_eq!(super::end_sandboxes_naming(&run), 1);
        assert!(!ours.wait().unwrap().success());
        assert!(
            theirs.try_wait().unwrap().is_none(),
            "another run's sandbox lives"
        );
        let _ = theirs.kill();
        let _ = theirs.wait();
    }
}
