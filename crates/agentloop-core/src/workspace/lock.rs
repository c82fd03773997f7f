//! The lock held by a run's one driver, with the pid of who holds it.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};

use super::{RunDir, WorkspaceError, io};

impl RunDir {
    /// The pid of the live driver holding this run's lock, if any; with a shared
    /// store, the driver that holds the run there (on another machine, say) when none
    /// does here.
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
                Err(_) => Some(read_pid(&f)),
            });
        here.or_else(|| crate::journal::shared::installed()?.driver_of(&self.id))
    }

    /// Takes the driver lock. Fails naming the holder when another driver is alive;
    /// when the previous driver died, returns its pid so the caller can warn.
    pub fn lock_driver(&self) -> Result<DriverLock, WorkspaceError> {
        let path = self.lock_file();
        let mut f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io(&path))?;
        if f.try_lock().is_err() {
            return Err(WorkspaceError::Locked {
                run: self.id.clone(),
                pid: read_pid(&f),
            });
        }
        // With a shared store, a driver on another machine holds the run there.
        let held = match crate::journal::shared::installed() {
            Some(store) => Some(store.hold_driver(&self.id).map_err(|refused| {
                let _ = f.unlock();
                match refused {
                    crate::journal::shared::HoldRefused::Taken(message) => {
                        WorkspaceError::HeldElsewhere {
                            run: self.id.clone(),
                            message,
                        }
                    }
                    crate::journal::shared::HoldRefused::Unreachable(message) => {
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
        let took_over = (!previous.is_empty()).then_some(previous);
        f.set_len(0).map_err(io(&path))?;
        f.rewind().map_err(io(&path))?;
        writeln!(f, "{}", std::process::id()).map_err(io(&path))?;
        f.sync_all().map_err(io(&path))?;
        Ok(DriverLock {
            file: f,
            took_over,
            _held: held,
        })
    }
}

fn read_pid(f: &File) -> String {
    let mut s = String::new();
    let _ = (&*f).rewind();
    let _ = (&*f).read_to_string(&mut s);
    s.trim().to_string()
}

/// Held while a driver runs; released (and the pid cleared) on drop. If the driver is
/// killed the kernel releases the lock and the pid stays behind as evidence.
pub struct DriverLock {
    file: File,
    /// Pid of a previous driver that died holding the run.
    pub took_over: Option<String>,
    /// The run held in the shared store, when there is one.
    _held: Option<Box<dyn crate::journal::shared::DriverHold>>,
}

impl Drop for DriverLock {
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
        let _ = self.file.unlock();
    }
}
