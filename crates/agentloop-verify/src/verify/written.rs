//! Who wrote the report: a runner writes its report file once, at its end. A second
//! write (the code under test overwriting it at exit with a report of its own, through
//! the path or through a hard link made to it elsewhere), a rename over it, a link
//! left to it, or the report's directory replaced means something besides the runner
//! wrote it, and the report is not evidence.
//!
//! agentloop makes the report file itself, empty, before the check, and watches with
//! inotify both that file (its inode: a write through any link to it is seen) and the
//! directory it made for it (a file renamed over it). A writer inside the runner's own
//! process that writes while the runner still holds the file open is not told apart:
//! that is code that recognises the test harness, the reviewer's to catch.

use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::sys::inotify::{AddWatchFlags as F, InitFlags, Inotify, WatchDescriptor};

pub(super) struct Written {
    inotify: Inotify,
    path: PathBuf,
    file: OsString,
    /// The watch on the report file's own inode.
    inode: WatchDescriptor,
    ino: u64,
    writes: u32,
    /// Writes to the report's name seen on the directory (a file renamed into place
    /// is another inode than the one watched).
    named_writes: u32,
    renamed: bool,
    replaced: bool,
}

/// Opens and writes too: the kernel merges identical events that follow each other,
/// so two writers' closes would read as one without something between them.
fn writes() -> F {
    F::IN_OPEN | F::IN_MODIFY | F::IN_CLOSE_WRITE
}

impl Written {
    /// Makes `report` (empty) in the directory agentloop made for it, and watches it
    /// from now on.
    pub(super) fn watch(report: &Path) -> Option<Written> {
        let dir = report.parent()?;
        let file = report.file_name()?.to_os_string();
        std::fs::File::create(report).ok()?;
        let ino = std::fs::metadata(report).ok()?.ino();
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok()?;
        inotify
            .add_watch(
                dir,
                writes() | F::IN_MOVED_TO | F::IN_DELETE_SELF | F::IN_MOVE_SELF,
            )
            .ok()?;
        let inode = inotify.add_watch(report, writes()).ok()?;
        Some(Written {
            inotify,
            path: report.to_path_buf(),
            file,
            inode,
            ino,
            writes: 0,
            named_writes: 0,
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
                        if e.mask
                            .intersects(F::IN_Q_OVERFLOW | F::IN_DELETE_SELF | F::IN_MOVE_SELF)
                        {
                            self.replaced = true;
                        }
                        if e.wd == self.inode {
                            // Its own inode, written through any of its links.
                            if e.mask.contains(F::IN_CLOSE_WRITE) {
                                self.writes += 1;
                            }
                            continue;
                        }
                        if e.mask.contains(F::IN_IGNORED) {
                            self.replaced = true;
                        }
                        if e.name.as_deref() == Some(self.file.as_os_str()) {
                            if e.mask.contains(F::IN_MOVED_TO) {
                                self.renamed = true;
                            }
                            if e.mask.contains(F::IN_CLOSE_WRITE) {
                                self.named_writes += 1;
                            }
                        }
                    }
                }
                Err(Errno::EAGAIN) => break,
                Err(e) => return Some(format!("its writes could not be followed ({e})")),
            }
        }
        let now = std::fs::metadata(&self.path).ok();
        let writes = self.writes;
        if self.replaced {
            Some("the directory agentloop made for it was replaced or flooded while the check ran: something besides the runner wrote there".into())
        } else if writes > 1 {
            Some(format!(
                "it was written {writes} times: a runner writes its report once, so something besides the runner (the code under test?) wrote it too"
            ))
        } else if self.renamed && (writes > 0 || self.named_writes > 0) {
            Some("it was written and then replaced by another file: something besides the runner wrote it".into())
        } else if now.as_ref().is_some_and(|m| m.nlink() > 1) {
            Some("another name links to it: something besides the runner can write it".into())
        } else if self.renamed && now.as_ref().is_some_and(|m| m.ino() == self.ino) {
            // Renamed into place, yet the same file: moved away and back.
            Some("it was moved away and back while the check ran".into())
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
        assert_eq!(std::fs::metadata(&report).unwrap().len(), 0, "made empty");
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

    #[test]
    fn a_write_through_a_hard_link_made_elsewhere_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let reports = dir.path().join("reports");
        std::fs::create_dir(&reports).unwrap();
        let report = reports.join("r.xml");
        let mut w = Written::watch(&report).unwrap();
        std::fs::write(&report, "<runner/>").unwrap();
        let link = dir.path().join("elsewhere.xml");
        std::fs::hard_link(&report, &link).unwrap();
        std::fs::write(&link, "<forged/>").unwrap();
        std::fs::remove_file(&link).unwrap();
        assert!(w.tampered().unwrap().contains("written 2 times"));
        // A link left behind, even with nothing written through it.
        let mut w = Written::watch(&report).unwrap();
        std::fs::write(&report, "<runner/>").unwrap();
        std::fs::hard_link(&report, &link).unwrap();
        assert!(w.tampered().unwrap().contains("links to it"));
    }
}
