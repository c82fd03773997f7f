//! The surface's watch: what it must report, and an adversary's attempts on its word.
use super::*;
use agentloop_journal::SurfaceFile;

#[test]
fn a_write_by_any_name_a_rename_over_and_a_mode_change_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("p");
    std::fs::create_dir_all(root.join("tests")).unwrap();
    std::fs::write(root.join("tests/t.py"), "t").unwrap();
    let file = SurfaceFile {
        blob: "b".into(),
        mode: 0o100644,
        why: "test".into(),
    };
    let base: Baseline = [("tests/t.py".to_string(), file)].into_iter().collect();
    let outside = dir.path().join("link");
    let changes: [&dyn Fn(); 3] = [
        &|| {
            let _ = std::fs::remove_file(&outside);
            std::fs::hard_link(root.join("tests/t.py"), &outside).unwrap();
            std::fs::write(&outside, "through the link").unwrap();
        },
        &|| {
            std::fs::write(root.join("tests/new"), "other").unwrap();
            std::fs::rename(root.join("tests/new"), root.join("tests/t.py")).unwrap();
        },
        &|| {
            use std::os::unix::fs::PermissionsExt;
            let p = std::fs::Permissions::from_mode(0o755);
            std::fs::set_permissions(root.join("tests/t.py"), p).unwrap();
        },
    ];
    for change in changes {
        let mut w = SurfaceWatch::start(&root, &base).unwrap();
        assert!(w.covers(&base));
        assert!(w.quiet());
        w.looked();
        assert!(w.quiet() && w.trusted());
        change();
        assert!(!w.quiet());
        assert!(!w.trusted());
    }
    // A file that is not there cannot be watched: no watch's word then.
    std::fs::remove_file(root.join("tests/t.py")).unwrap();
    assert!(SurfaceWatch::start(&root, &base).is_none());
}

/// Adversarial attempts on the watch's word: each sets up a trusted watch on a baseline
/// file, changes what the file's path holds, and asks that the watch report it.
mod attacks {
    use std::os::fd::{AsFd, AsRawFd};
    use std::path::{Path, PathBuf};

    use super::super::*;
    use agentloop_journal::SurfaceFile;
    use nix::libc;

    /// A temp dir with `p/tests/t.py` in the baseline, and a watch on it that a full look
    /// trusts.
    fn trusted() -> (tempfile::TempDir, PathBuf, Baseline, SurfaceWatch) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        std::fs::create_dir_all(root.join("tests")).unwrap();
        std::fs::write(root.join("tests/t.py"), "assert False\n").unwrap();
        let base = baseline();
        let w = watch(&root, &base);
        (dir, root, base, w)
    }

    fn baseline() -> Baseline {
        let file = SurfaceFile {
            blob: "b".into(),
            mode: 0o100644,
            why: "test".into(),
        };
        [("tests/t.py".to_string(), file)].into_iter().collect()
    }

    fn watch(root: &Path, base: &Baseline) -> SurfaceWatch {
        let mut w = SurfaceWatch::start(root, base).unwrap();
        assert!(w.quiet());
        w.looked();
        assert!(w.quiet() && w.trusted());
        w
    }

    fn content(root: &Path) -> String {
        std::fs::read_to_string(root.join("tests/t.py")).unwrap_or_default()
    }

    /// `tests/t.py` (13 bytes) mapped shared for writing, its descriptor closed.
    fn map_shared(root: &Path) -> *mut libc::c_void {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(root.join("tests/t.py"))
            .unwrap();
        // SAFETY: a fresh shared mapping of a 13-byte file; the caller unmaps it.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                13,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            )
        };
        assert_ne!(map, libc::MAP_FAILED);
        map
    }

    // Missed before the fix: the watch is on the file's inode, not on its path.
    // Renaming its directory reports nothing to the file's own watch (IN_MOVE_SELF is
    // for the watched inode itself), and a new directory in its place gives the path
    // new content. The driver then trusts `holds_but_statuses`, which reads no status,
    // and git's dirty entry for the path is skipped because the path is in the
    // baseline.
    #[test]
    fn parent_directory_moved_away_and_replaced() {
        let (dir, root, _, mut w) = trusted();
        std::fs::rename(root.join("tests"), dir.path().join("elsewhere")).unwrap();
        std::fs::create_dir(root.join("tests")).unwrap();
        std::fs::write(root.join("tests/t.py"), "assert True\n").unwrap();
        assert_eq!(content(&root), "assert True\n");
        assert!(!w.quiet(), "tests/ replaced: not reported");
    }

    // Missed before the fix: as above, the directory swapped for a symbolic link to
    // another one.
    #[test]
    fn parent_directory_swapped_for_a_symlink() {
        let (dir, root, _, mut w) = trusted();
        let fake = dir.path().join("fake");
        std::fs::create_dir(&fake).unwrap();
        std::fs::write(fake.join("t.py"), "assert True\n").unwrap();
        std::fs::rename(root.join("tests"), dir.path().join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(&fake, root.join("tests")).unwrap();
        assert_eq!(content(&root), "assert True\n");
        assert!(!w.quiet(), "tests/ -> symlink: not reported");
    }

    // Missed before the fix: the work tree's root itself moved away and made again
    // (from above it, or any ancestor of it renamed): the watched inode is untouched.
    #[test]
    fn root_moved_away_and_replaced() {
        let (dir, root, _, mut w) = trusted();
        std::fs::rename(&root, dir.path().join("p.old")).unwrap();
        std::fs::create_dir_all(root.join("tests")).unwrap();
        std::fs::write(root.join("tests/t.py"), "assert True\n").unwrap();
        assert!(!w.quiet(), "root replaced: not reported");
    }

    // A LIMIT (only if a process outlives the iteration, or maps before a new watch
    // begins): a shared mapping made while no watch existed, its descriptor closed
    // before the watch began; the writes through it report nothing, and the mapping's
    // last reference (and so IN_CLOSE_WRITE) goes when the process ends. A real agent's
    // processes are killed (subreaper) before the check, which makes this moot unless
    // the kill fails; kept to document the assumption.
    #[test]
    #[ignore = "a documented limit (docs/SECURITY.md): a write through a mapping made before the watch began, by a process that outlives its iteration"]
    fn shared_mapping_made_before_the_watch() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        std::fs::create_dir_all(root.join("tests")).unwrap();
        std::fs::write(root.join("tests/t.py"), "assert False\n").unwrap();
        let map = map_shared(&root);
        let mut w = watch(&root, &baseline());
        // SAFETY: within the mapping.
        unsafe { std::ptr::copy_nonoverlapping(b"assert  True".as_ptr(), map as *mut u8, 12) };
        assert_eq!(content(&root), "assert  True\n");
        let quiet = w.quiet();
        // SAFETY: the mapping made above.
        unsafe { libc::munmap(map, 13) };
        assert!(!quiet, "write through an older mapping: not reported");
    }

    #[test]
    fn shared_mapping_made_after_the_watch_reports_at_unmap() {
        let (_dir, root, _, mut w) = trusted();
        let map = map_shared(&root);
        // SAFETY: within the mapping; then unmapped (the process's end does the same).
        unsafe {
            std::ptr::copy_nonoverlapping(b"assert  True".as_ptr(), map as *mut u8, 12);
            libc::munmap(map, 13);
        }
        assert!(!w.quiet());
    }

    #[test]
    fn unlink_and_recreate() {
        let (_dir, root, _, mut w) = trusted();
        std::fs::remove_file(root.join("tests/t.py")).unwrap();
        std::fs::write(root.join("tests/t.py"), "assert True\n").unwrap();
        assert!(!w.quiet());
    }

    #[test]
    fn unlink_while_held_open_and_recreate() {
        let (_dir, root, _, mut w) = trusted();
        let _held = std::fs::File::open(root.join("tests/t.py")).unwrap();
        std::fs::remove_file(root.join("tests/t.py")).unwrap();
        std::fs::write(root.join("tests/t.py"), "assert True\n").unwrap();
        assert!(!w.quiet());
    }

    #[test]
    fn rename_the_file_away_and_another_in() {
        let (dir, root, _, mut w) = trusted();
        std::fs::rename(root.join("tests/t.py"), dir.path().join("old")).unwrap();
        std::fs::write(root.join("tests/t.py"), "assert True\n").unwrap();
        assert!(!w.quiet());
    }

    #[test]
    fn hard_link_made_before_the_watch() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        std::fs::create_dir_all(root.join("tests")).unwrap();
        std::fs::write(root.join("tests/t.py"), "assert False\n").unwrap();
        std::fs::hard_link(root.join("tests/t.py"), dir.path().join("link")).unwrap();
        let mut w = watch(&root, &baseline());
        std::fs::write(dir.path().join("link"), "assert True\n").unwrap();
        assert!(!w.quiet());
    }

    #[test]
    fn truncate() {
        let (_dir, root, _, mut w) = trusted();
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(root.join("tests/t.py"))
            .unwrap();
        f.set_len(0).unwrap();
        std::mem::forget(f); // no IN_CLOSE_WRITE: the truncate itself must be seen
        assert!(!w.quiet());
    }

    #[test]
    fn truncate_by_path() {
        let (_dir, root, _, mut w) = trusted();
        let p =
            std::ffi::CString::new(root.join("tests/t.py").as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::truncate(p.as_ptr(), 0) }, 0);
        assert!(!w.quiet());
    }

    /// A descriptor opened for writing before the watch began, kept open (never closed
    /// during the test, so no IN_CLOSE_WRITE): each way of writing through it.
    fn open_before() -> (tempfile::TempDir, PathBuf, std::fs::File, SurfaceWatch) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        std::fs::create_dir_all(root.join("tests")).unwrap();
        std::fs::write(root.join("tests/t.py"), "assert False\n").unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(root.join("tests/t.py"))
            .unwrap();
        let w = watch(&root, &baseline());
        (dir, root, f, w)
    }

    #[test]
    fn fallocate_punch_hole_through_an_older_descriptor() {
        let (_dir, root, f, mut w) = open_before();
        // SAFETY: a valid descriptor.
        let r = unsafe {
            libc::fallocate(
                f.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                0,
                4096,
            )
        };
        if r != 0 {
            eprintln!(
                "punch hole unsupported here: {}",
                std::io::Error::last_os_error()
            );
            return;
        }
        assert_eq!(content(&root), "\0".repeat(13));
        assert!(!w.quiet());
        std::mem::forget(f);
    }

    #[test]
    fn fallocate_zero_range_through_an_older_descriptor() {
        let (_dir, root, f, mut w) = open_before();
        // SAFETY: a valid descriptor.
        let r = unsafe {
            libc::fallocate(
                f.as_raw_fd(),
                libc::FALLOC_FL_ZERO_RANGE | libc::FALLOC_FL_KEEP_SIZE,
                0,
                4,
            )
        };
        if r != 0 {
            eprintln!(
                "zero range unsupported here: {}",
                std::io::Error::last_os_error()
            );
            return;
        }
        assert!(content(&root).starts_with("\0\0\0\0"));
        assert!(!w.quiet());
        std::mem::forget(f);
    }

    #[test]
    fn fallocate_collapse_range_through_an_older_descriptor() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        std::fs::create_dir_all(root.join("tests")).unwrap();
        let mut body = vec![b'#'; 8192];
        body.extend_from_slice(b"assert False\n");
        std::fs::write(root.join("tests/t.py"), &body).unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(root.join("tests/t.py"))
            .unwrap();
        let mut w = watch(&root, &baseline());
        // SAFETY: a valid descriptor.
        let r = unsafe { libc::fallocate(f.as_raw_fd(), libc::FALLOC_FL_COLLAPSE_RANGE, 0, 4096) };
        if r != 0 {
            eprintln!(
                "collapse range unsupported here: {}",
                std::io::Error::last_os_error()
            );
            return;
        }
        assert!(!w.quiet());
        std::mem::forget(f);
    }

    #[test]
    fn copy_file_range_into_an_older_descriptor() {
        let (dir, root, f, mut w) = open_before();
        std::fs::write(dir.path().join("src"), "assert True\n").unwrap();
        let src = std::fs::File::open(dir.path().join("src")).unwrap();
        let (mut a, mut b) = (0i64, 0i64);
        // SAFETY: valid descriptors and offsets.
        let n =
            unsafe { libc::copy_file_range(src.as_raw_fd(), &mut a, f.as_raw_fd(), &mut b, 12, 0) };
        assert_eq!(n, 12);
        assert_eq!(content(&root), "assert True\n\n");
        assert!(!w.quiet());
        std::mem::forget(f);
    }

    #[test]
    fn sendfile_into_an_older_descriptor() {
        let (dir, root, f, mut w) = open_before();
        std::fs::write(dir.path().join("src"), "assert True\n").unwrap();
        let src = std::fs::File::open(dir.path().join("src")).unwrap();
        // SAFETY: valid descriptors.
        let n = unsafe { libc::sendfile(f.as_raw_fd(), src.as_raw_fd(), std::ptr::null_mut(), 12) };
        assert_eq!(n, 12);
        assert!(content(&root).starts_with("assert True"));
        assert!(!w.quiet());
        std::mem::forget(f);
    }

    #[test]
    fn splice_from_a_pipe_into_an_older_descriptor() {
        let (_dir, root, f, mut w) = open_before();
        let mut fds = [0; 2];
        // SAFETY: a two-int array.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: the pipe's write end.
        assert_eq!(
            unsafe { libc::write(fds[1], b"assert True\n".as_ptr().cast(), 12) },
            12
        );
        let mut off = 0i64;
        // SAFETY: valid descriptors.
        let n =
            unsafe { libc::splice(fds[0], std::ptr::null_mut(), f.as_raw_fd(), &mut off, 12, 0) };
        assert_eq!(n, 12);
        assert!(content(&root).starts_with("assert True"));
        assert!(!w.quiet());
        std::mem::forget(f);
    }

    #[test]
    fn pwritev2_through_an_older_descriptor() {
        let (_dir, root, f, mut w) = open_before();
        let iov = libc::iovec {
            iov_base: b"assert True\n".as_ptr() as *mut _,
            iov_len: 12,
        };
        // SAFETY: one valid iovec.
        let n = unsafe { libc::pwritev2(f.as_raw_fd(), &iov, 1, 0, libc::RWF_DSYNC) };
        assert_eq!(n, 12);
        assert!(content(&root).starts_with("assert True"));
        assert!(!w.quiet());
        std::mem::forget(f);
    }

    #[test]
    fn write_via_proc_self_fd_of_an_older_descriptor() {
        let (_dir, root, f, w) = open_before();
        // A read-only descriptor from before the watch, reopened for writing by /proc.
        let ro = std::fs::File::open(root.join("tests/t.py")).unwrap();
        drop(w);
        let mut w = watch(&root, &baseline());
        let via = format!("/proc/self/fd/{}", ro.as_raw_fd());
        std::fs::OpenOptions::new()
            .write(true)
            .open(&via)
            .and_then(|mut g| {
                use std::io::Write;
                let r = g.write_all(b"assert True\n");
                std::mem::forget(g);
                r
            })
            .unwrap();
        assert!(content(&root).starts_with("assert True"));
        assert!(!w.quiet());
        std::mem::forget(f);
    }

    #[test]
    fn times_put_back_after_a_write() {
        let (_dir, root, f, mut w) = open_before();
        let m = std::fs::metadata(root.join("tests/t.py")).unwrap();
        use std::io::Write;
        (&f).write_all(b"assert  True").unwrap();
        f.set_modified(m.modified().unwrap()).unwrap();
        assert!(!w.quiet());
        std::mem::forget(f);
    }

    // The watch's own queue overflowing: IN_Q_OVERFLOW is an event like any other.
    #[test]
    fn the_watch_queue_overflowed() {
        use std::os::unix::fs::PermissionsExt;
        let (_dir, root, _, mut w) = trusted();
        let p = root.join("tests/t.py");
        let max: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(16384);
        // Alternate kinds so the kernel does not merge consecutive equal events.
        for i in 0..max + 16 {
            let mode = if i % 2 == 0 { 0o600 } else { 0o644 };
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        assert!(!w.quiet());
    }

    // The driver's inotify descriptor taken by another process of the same user (no
    // Yama here; pidfd_getfd needs ptrace rights over the driver) and its events read
    // there: the driver then reads nothing. Simulated on this process itself.
    // A LIMIT when an agent may ptrace the driver (not specific to the watch: such an
    // agent could also change the driver's memory), see the report.
    #[test]
    #[ignore = "a documented limit (docs/SECURITY.md): an agent that may ptrace the driver"]
    fn the_watch_queue_drained_by_another_holder_of_the_descriptor() {
        let (_dir, root, _, mut w) = trusted();
        // SAFETY: plain syscalls on this process.
        let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) } as i32;
        assert!(pidfd >= 0);
        let theirs = unsafe {
            libc::syscall(
                libc::SYS_pidfd_getfd,
                pidfd,
                w.inotify.as_fd().as_raw_fd(),
                0,
            )
        } as i32;
        if theirs < 0 {
            eprintln!("pidfd_getfd refused: {}", std::io::Error::last_os_error());
            return;
        }
        std::fs::write(root.join("tests/t.py"), "assert True\n").unwrap();
        let mut buf = [0u8; 4096];
        // SAFETY: a valid buffer (the descriptor is non-blocking).
        let n = unsafe { libc::read(theirs, buf.as_mut_ptr().cast(), buf.len()) };
        assert!(n > 0, "the other holder read the events");
        assert!(!w.quiet(), "events drained by another holder: not reported");
    }

    // Missed before the fix: the same attack as
    // `parent_directory_moved_away_and_replaced`, taken through what the driver's
    // `check_project_surface` does with a real repository, baseline and stamp: after
    // the swap the watch is quiet and trusted, the stamp `holds_but_statuses` (the fast
    // path returns no change) while `holds` (the full look) and `check` see the new
    // content.
    #[test]
    fn parent_directory_replaced_through_the_drivers_fast_path() {
        use crate::surface::{Stamp, check, record, stamp::Statuses};
        use agentloop_exec::git::Snapshots;
        use agentloop_exec::testing::git;
        use agentloop_project::Project;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        std::fs::create_dir_all(root.join("tests")).unwrap();
        git(&root, &["init", "-q"]);
        std::fs::write(
            root.join("tests/test_a.py"),
            "def test_a():\n    assert False\n",
        )
        .unwrap();
        std::fs::write(root.join("PLAN.md"), "- [ ] a\n").unwrap();
        git(&root, &["add", "-A"]);
        git(&root, &["commit", "-qm", "start"]);
        let rules = Project::from_names(&root, &[], "PLAN.md", vec!["pytest".into()], &[]);
        let base = record(&root, &rules).unwrap();
        assert!(base.contains_key("tests/test_a.py"), "{base:?}");
        // Out of the racy window (the change time cannot be put back).
        std::thread::sleep(std::time::Duration::from_millis(2100));
        let snapshots = Snapshots::known(&root);
        let now = snapshots.take().unwrap();
        let mut w = SurfaceWatch::start(&root, &base).unwrap();
        let read = Statuses::read(&root, &base);
        let stamp = Stamp::new(now.head.clone(), &rules, &base, &read).unwrap();
        assert!(w.quiet());
        assert!(stamp.holds(&root, &base, &rules, &now));
        w.looked();

        // The agent's iteration.
        std::fs::rename(root.join("tests"), root.join(".git/old-tests")).unwrap();
        std::fs::create_dir(root.join("tests")).unwrap();
        std::fs::write(
            root.join("tests/test_a.py"),
            "def test_a():\n    assert True\n",
        )
        .unwrap();

        let now = snapshots.take().unwrap();
        let full = stamp.holds(&root, &base, &rules, &now);
        let changes = check(&root, &base, &rules).unwrap();
        let fast = w.quiet() && w.trusted() && stamp.holds_but_statuses(&root, &base, &rules, &now);
        assert!(!full && !changes.is_empty());
        assert!(
            !fast,
            "the fast path trusts a replaced tests/ ({changes:?})"
        );
    }
}
