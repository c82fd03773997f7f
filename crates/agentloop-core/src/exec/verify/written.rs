//! Who wrote the report: a runner writes its report file once, at its end. A second
//! write (the code under test overwriting it at exit with a report of its own), a
//! rename over it, or the report's directory replaced means something besides the
//! runner wrote it, and the report is not evidence. Watched with inotify on the
//! directory agentloop made for it. (A writer inside the runner's own process that
//! writes while the runner still holds the file open is not told apart: that is code
//! that recognises the test harness, the reviewer's to catch.)

use std::ffi::OsString;
use std::path::Path;

use nix::errno::Errno;
use nix::sys::inotify::{AddWatchFlags as F, InitFlags, Inotify};

pub(super) struct Written {
    inotify: Inotify,
    file: OsString,
    writes: u32,
    renamed: bool,
    replaced: bool,
}

impl Written {
    /// Watches `report`'s directory (which agentloop made, empty) from now on.
    pub(super) fn watch(report: &Path) -> Option<Written> {
        let dir = report.parent()?;
        let file = report.file_name()?.to_os_string();
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok()?;
        inotify
            .add_watch(
                dir,
                // Opens and writes too: the kernel merges identical events that follow
                // each other, so two writers' closes would read as one without them.
                F::IN_OPEN
                    | F::IN_MODIFY
                    | F::IN_CLOSE_WRITE
                    | F::IN_MOVED_TO
                    | F::IN_DELETE_SELF
                    | F::IN_MOVE_SELF,
            )
            .ok()?;
        Some(Written {
            inotify,
            file,
            writes: 0,
            renamed: false,
            replaced: false,
        })
    }

    /// Why the report cannot be the runner's alone, if it cannot.
    pub(super) fn tampered(&mut self) -> Option<String> {
        loop {
            match self.inotify.read_events() {
                Ok(events) => {
                    for e in events {
                        if e.mask.intersects(
                            F::IN_Q_OVERFLOW | F::IN_DELETE_SELF | F::IN_MOVE_SELF | F::IN_IGNORED,
                        ) {
                            self.replaced = true;
                        }
                        if e.name.as_deref() != Some(self.file.as_os_str()) {
                            continue;
                        }
                        if e.mask.contains(F::IN_CLOSE_WRITE) {
                            self.writes += 1;
                        }
                        if e.mask.contains(F::IN_MOVED_TO) {
                            self.renamed = true;
                        }
                    }
                }
                Err(Errno::EAGAIN) => break,
                Err(e) => return Some(format!("its writes could not be followed ({e})")),
            }
        }
        let writes = self.writes;
        if self.replaced {
            Some("the directory agentloop made for it was replaced or flooded while the check ran: something besides the runner wrote there".into())
        } else if writes > 1 {
            Some(format!(
                "it was written {writes} times: a runner writes its report once, so something besides the runner (the code under test?) wrote it too"
            ))
        } else if self.renamed && writes > 0 {
            Some("it was written and then replaced by another file: something besides the runner wrote it".into())
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_write_is_the_runners_a_second_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let report = dir.path().join("r.xml");
        // Two writes one after the other, read together (the kernel would merge their
        // closes if nothing came between them).
        let mut w = Written::watch(&report).unwrap();
        std::fs::write(&report, "<a/>").unwrap();
        std::fs::write(&report, "<b/>").unwrap();
        assert!(w.tampered().is_some());
        let mut w = Written::watch(&report).unwrap();
        std::fs::write(&report, "<a/>").unwrap();
        std::fs::write(dir.path().join("other.txt"), "x").unwrap();
        assert_eq!(w.tampered(), None);
        std::fs::write(&report, "<b/>").unwrap();
        assert!(
            w.tampered().unwrap().contains("written 2 times"),
            "the second write is seen"
        );
        let mut w = Written::watch(&report).unwrap();
        let tmp = dir.path().join("tmp.xml");
        std::fs::write(&tmp, "<c/>").unwrap();
        std::fs::rename(&tmp, &report).unwrap();
        // A report renamed into place once is a runner's (it wrote a temp file first).
        assert_eq!(w.tampered(), None);
        std::fs::write(&report, "<d/>").unwrap();
        assert!(
            w.tampered().is_some(),
            "written after being renamed into place"
        );
    }
}
