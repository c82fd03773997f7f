//! Writing into a repository's LFS store without following a link: every directory
//! below the common git directory (`lfs`, `tmp`, `objects`, the two levels of the
//! object's name) is opened with `O_NOFOLLOW` from the one above it, and the object is
//! made and renamed through those descriptors. An agent that can write the
//! repository's `.git` (a link `lfs/objects/ab -> /etc/cron.d`) cannot have agentloop's
//! own git, outside any sandbox, write a file of its choosing elsewhere.

use std::ffi::CString;
use std::fs::File;
use std::io::{Error, Result};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

use nix::libc;

/// A directory, opened.
pub(super) struct Dir(OwnedFd);

fn c_name(name: &str) -> Result<CString> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(Error::other(format!("not a plain name: {name:?}")));
    }
    CString::new(name).map_err(Error::other)
}

impl Dir {
    /// `openat(2)` of its `name` with `flags` (and `mode`, for a file it makes).
    fn open_at(&self, name: &str, flags: libc::c_int, mode: libc::c_uint) -> Result<OwnedFd> {
        let c = c_name(name)?;
        // SAFETY: openat(2) with a descriptor this value owns and a C string; the
        // descriptor it returns is owned by the `OwnedFd` made from it.
        let fd = unsafe { libc::openat(self.0.as_raw_fd(), c.as_ptr(), flags, mode) };
        if fd < 0 {
            return Err(Error::last_os_error());
        }
        // SAFETY: a descriptor just opened, owned by no one else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// The directory at `path` (a link on the way to it is followed: it is the
    /// repository's own common git directory, found by agentloop).
    pub(super) fn open(path: &Path) -> Result<Dir> {
        use std::os::unix::fs::OpenOptionsExt;
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
            .open(path)?;
        Ok(Dir(f.into()))
    }

    /// Its directory `name`, made first when `make`; never through a link.
    pub(super) fn sub(&self, name: &str, make: bool) -> Result<Dir> {
        let c = c_name(name)?;
        if make {
            // SAFETY: mkdirat(2) with a descriptor this value owns and a C string.
            let r = unsafe { libc::mkdirat(self.0.as_raw_fd(), c.as_ptr(), 0o755) };
            if r != 0 {
                let e = Error::last_os_error();
                if e.raw_os_error() != Some(libc::EEXIST) {
                    return Err(e);
                }
            }
        }
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        self.open_at(name, flags, 0).map(Dir)
    }

    /// A new file `name` in it, for writing (never an existing one, never a link).
    pub(super) fn create(&self, name: &str) -> Result<File> {
        let flags =
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        self.open_at(name, flags, 0o644).map(File::from)
    }

    /// Its regular file `name`, to read: never a link, never a FIFO or a device (opened
    /// without waiting, then refused by its type), never a file with holes (a sparse
    /// file of a terabyte takes no room and would take hours to read).
    pub(super) fn open_file(&self, name: &str) -> Result<File> {
        let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
        let f = File::from(self.open_at(name, flags, 0)?);
        let meta = f.metadata()?;
        if !meta.file_type().is_file() {
            return Err(Error::other(format!("{name}: not a regular file")));
        }
        // SAFETY: lseek(2) on a descriptor `f` owns.
        let hole = unsafe { libc::lseek(f.as_raw_fd(), 0, libc::SEEK_HOLE) };
        if hole >= 0 && (hole as u64) < meta.len() {
            return Err(Error::other(format!("{name}: a file with holes")));
        }
        // SAFETY: as above; back to the start.
        unsafe { libc::lseek(f.as_raw_fd(), 0, libc::SEEK_SET) };
        Ok(f)
    }

    /// Whether it holds a regular file `name` (a link is not one).
    pub(super) fn has_file(&self, name: &str) -> bool {
        let Ok(c) = c_name(name) else {
            return false;
        };
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: fstatat(2) writes a `stat` into the buffer given when it returns 0.
        let r = unsafe {
            libc::fstatat(
                self.0.as_raw_fd(),
                c.as_ptr(),
                st.as_mut_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        // SAFETY: filled, since it returned 0.
        r == 0 && (unsafe { st.assume_init() }.st_mode & libc::S_IFMT) == libc::S_IFREG
    }

    /// Renames its `from` to `to` in `into`.
    pub(super) fn rename(&self, from: &str, into: &Dir, to: &str) -> Result<()> {
        let (f, t) = (c_name(from)?, c_name(to)?);
        // SAFETY: renameat(2) with descriptors these values own and C strings.
        let r = unsafe {
            libc::renameat(
                self.0.as_raw_fd(),
                f.as_ptr(),
                into.0.as_raw_fd(),
                t.as_ptr(),
            )
        };
        if r != 0 {
            return Err(Error::last_os_error());
        }
        Ok(())
    }

    /// Removes its file `name`, if it is there.
    pub(super) fn remove(&self, name: &str) {
        if let Ok(c) = c_name(name) {
            // SAFETY: unlinkat(2) with a descriptor this value owns and a C string.
            unsafe { libc::unlinkat(self.0.as_raw_fd(), c.as_ptr(), 0) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_on_the_way_is_refused_and_nothing_is_written_through_it() {
        let d = tempfile::tempdir().unwrap();
        let common = d.path().join("git");
        let elsewhere = d.path().join("elsewhere");
        std::fs::create_dir_all(common.join("lfs/objects")).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, common.join("lfs/objects/ab")).unwrap();
        let objects = Dir::open(&common)
            .unwrap()
            .sub("lfs", true)
            .unwrap()
            .sub("objects", true)
            .unwrap();
        assert!(objects.sub("ab", true).is_err(), "a link is no directory");
        assert!(objects.create("ab").is_err(), "nor a file to write");
        let cd = objects.sub("cd", true).unwrap();
        let mut f = cd.create("x").unwrap();
        std::io::Write::write_all(&mut f, b"x").unwrap();
        assert!(cd.has_file("x"));
        assert!(cd.create("x").is_err(), "never an existing file");
        assert!(cd.sub("..", false).is_err() && cd.create("../y").is_err());
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    }
}
