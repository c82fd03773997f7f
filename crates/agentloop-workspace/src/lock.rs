//! The lock held by a run's one driver, with the pid of who holds it.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};

use crate::error::{WorkspaceError, io};
use crate::run_dir::RunDir;

impl RunDir {
    /// The pid of the live driver holding this run's lock, if any; with a shared
    /// store, the driver that holds the run there (on another machine, say) when none
    /// does here. A lock held while the driver it names is dead is no driver's: a
    /// process the dead one was starting holds it for a moment (see
    /// [`lock_driver`](Self::lock_driver), which waits for it).
    pub fn lock_holder(&self) -> Option<String> {
        let here = OpenOptions::new()
            .read(true)
            .write(true)
            .open(self.lock_file())
            .ok()
            .and_then(|f| match f.try_lock() {
                Ok(()) => {
                    let _ = f.unlock();
                    None
                }
                Err(_) => live_driver(&f),
            });
        here.or_else(|| agentloop_journal::shared::installed()?.driver_of(&self.id))
    }

    /// Takes the driver lock. Fails naming the holder when another driver is alive;
    /// when the previous driver died, returns its pid so the caller can warn.
    pub fn lock_driver(&self) -> Result<DriverLock, WorkspaceError> {
        self.lock(true)
    }

    /// Takes the lock for a moment's work that is no driver's (`settle`, after a
    /// control request): its pid is not written in, so a `resume` or `status` at the
    /// same moment sees no driver, and waits the moment out rather than refusing.
    pub fn lock_briefly(&self) -> Result<DriverLock, WorkspaceError> {
        self.lock(false)
    }

    fn lock(&self, named: bool) -> Result<DriverLock, WorkspaceError> {
        let path = self.lock_file();
        let mut f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io(&path))?;
        if f.try_lock().is_err() && !held_only_by_the_dead(&f) {
            return Err(WorkspaceError::Locked {
                run: self.id.clone(),
                pid: read_pid(&f),
            });
        }
        // With a shared store, a driver on another machine holds the run there.
        let held = match agentloop_journal::shared::installed() {
            Some(store) => Some(store.hold_driver(&self.id).map_err(|refused| {
                let _ = f.unlock();
                match refused {
                    agentloop_journal::shared::HoldRefused::Taken(message) => {
                        WorkspaceError::HeldElsewhere {
                            run: self.id.clone(),
                            message,
                        }
                    }
                    agentloop_journal::shared::HoldRefused::Unreachable(message) => {
                        WorkspaceError::StoreUnreachable {
                            run: self.id.clone(),
                            store: store.describe(),
                            message,
                        }
                    }
                }
            })?),
            None => None,
        };
        let previous = read_pid(&f);
        if !named {
            return Ok(DriverLock {
                file: f,
                took_over: None,
                named,
                _held: held,
            });
        }
        let took_over = (!previous.is_empty()).then_some(previous);
        f.set_len(0).map_err(io(&path))?;
        f.rewind().map_err(io(&path))?;
        let me = std::process::id();
        let since = started(me as i32)
            .map(|t| t.to_string())
            .unwrap_or_default();
        writeln!(f, "{me} {since}").map_err(io(&path))?;
        f.sync_all().map_err(io(&path))?;
        Ok(DriverLock {
            file: f,
            took_over,
            named,
            _held: held,
        })
    }
}

/// The lock is held, but the driver it names is dead: a process it was starting when
/// it died can hold the lock's file for a moment, between its fork and its exec (which
/// closes it). Waits up to five seconds for that; true once the lock is taken.
fn held_only_by_the_dead(f: &File) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(5) {
        if live_driver(f).is_some() {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        if f.try_lock().is_ok() {
            return true;
        }
    }
    false
}

/// The pid of the driver a lock file names, when it is alive: a process has that pid
/// and, when the file says when the driver started, started then — a pid the kernel
/// has given to another process since (soon, where `pid_max` is 32,768) is no driver.
fn live_driver(f: &File) -> Option<String> {
    let (pid, since) = read_holder(f);
    let alive = pid.parse::<i32>().is_ok_and(|p| {
        p > 0
            && nix::sys::signal::kill(nix::unistd::Pid::from_raw(p), None).is_ok()
            && since.is_none_or(|t| started(p) == Some(t))
    });
    alive.then_some(pid)
}

fn started(pid: i32) -> Option<u64> {
    agentloop_exec::reap::started(u32::try_from(pid).ok()?)
}

/// The pid a lock file names, and when that process started if it says.
fn read_holder(f: &File) -> (String, Option<u64>) {
    let mut s = String::new();
    let _ = (&*f).rewind();
    let _ = (&*f).read_to_string(&mut s);
    let mut words = s.split_whitespace();
    let pid = words.next().unwrap_or_default().to_string();
    (pid, words.next().and_then(|t| t.parse().ok()))
}

fn read_pid(f: &File) -> String {
    read_holder(f).0
}

/// Held while a driver runs; released (and the pid cleared) on drop. If the driver is
/// killed the kernel releases the lock and the pid stays behind as evidence.
pub struct DriverLock {
    file: File,
    /// Pid of a previous driver that died holding the run.
    pub took_over: Option<String>,
    /// Its pid is in the file (a driver's); else the file is left as it was.
    named: bool,
    /// The run held in the shared store, when there is one.
    _held: Option<Box<dyn agentloop_journal::shared::DriverHold>>,
}

impl Drop for DriverLock {
    fn drop(&mut self) {
        if self.named {
            let _ = self.file.set_len(0);
        }
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use std::fs::OpenOptions;
    use std::io::{Seek, Write};
    use std::path::Path;
    use std::time::{Duration, Instant};

    use crate::runs::Workspace;
    use agentloop_config::{Config, Settings};
    use agentloop_plan::Plan;

    /// A pid no process has (one that just ended, its number not reused this soon).
    fn dead_pid() -> u32 {
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let pid = c.id();
        c.wait().unwrap();
        pid
    }

    /// A run in a workspace of its own (kept while the directory is).
    fn a_run() -> (tempfile::TempDir, crate::run_dir::RunDir) {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::at(dir.path());
        let plan = Plan::parse("PLAN.md", "# P\n\n## T1: a\nVerify: true\n").unwrap();
        let (run, _w, _s) = ws
            .create_run(
                Path::new("PLAN.md"),
                &plan,
                Settings::from_config(&Config::default()),
            )
            .unwrap();
        (dir, run)
    }

    /// A control request's settling (a `steer` with no driver) holds the lock for a
    /// moment without naming itself: a `resume` meanwhile waits the moment out and
    /// drives the run, it is not told the run is "driven by" the `steer`.
    #[test]
    fn a_brief_lock_is_no_driver() {
        let (_dir, run) = a_run();
        let brief = run.lock_briefly().unwrap();
        assert_eq!(run.lock_holder(), None);
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            drop(brief);
        });
        let lock = run.lock_driver();
        release.join().unwrap();
        let lock = lock.expect("the driver lock, once the moment is over");
        assert_eq!(run.lock_holder(), Some(std::process::id().to_string()));
        // Held by a driver, it is not taken briefly either.
        assert!(run.lock_briefly().is_err());
        drop(lock);
    }

    #[test]
    fn a_lock_a_dead_drivers_child_holds_for_a_moment_is_waited_for() {
        let (_dir, run) = a_run();
        // Another open file holds the lock; the pid in it is a dead driver's.
        let mut other = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(run.lock_file())
            .unwrap();
        other.try_lock().unwrap();
        writeln!(other, "{}", dead_pid()).unwrap();
        // Nobody drives it meanwhile: `resume` goes on to take the lock (and waits),
        // `status` says no driver (it refused at once with that pid before: a CI
        // flake of `workers::sigkill_with_four_workers…`).
        assert_eq!(run.lock_holder(), None);
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            drop(other);
        });
        let t = Instant::now();
        let lock = run.lock_driver();
        release.join().unwrap();
        assert!(lock.is_ok(), "{:?}", lock.err());
        assert!(t.elapsed() >= Duration::from_millis(250));
        drop(lock);
        // Held with a live driver's pid (this process): refused at once.
        let mut live = OpenOptions::new()
            .read(true)
            .write(true)
            .open(run.lock_file())
            .unwrap();
        live.try_lock().unwrap();
        live.set_len(0).unwrap();
        writeln!(live, "{}", std::process::id()).unwrap();
        assert_eq!(run.lock_holder(), Some(std::process::id().to_string()));
        // The same pid, but a start time another process had: the pid was reused, the
        // driver is gone.
        let me = std::process::id();
        let since = super::started(me as i32).expect("this process's start time");
        live.set_len(0).unwrap();
        live.rewind().unwrap();
        writeln!(live, "{me} {}", since + 1).unwrap();
        assert_eq!(run.lock_holder(), None);
        live.set_len(0).unwrap();
        live.rewind().unwrap();
        writeln!(live, "{me} {since}").unwrap();
        assert_eq!(run.lock_holder(), Some(me.to_string()));
        let t = Instant::now();
        let err = run.lock_driver().err().expect("refused");
        assert!(t.elapsed() < Duration::from_secs(1));
        assert!(err.to_string().contains("already driven by pid"), "{err}");
    }
}
