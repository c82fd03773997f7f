//! What is mounted where, as this process sees it: a mount over a watched file or
//! directory changes what a path reads without any notification, so the fast paths
//! that trust inotify (the surface's watch, the clean copy kept in step) also check
//! that the mount table is as it was.

/// This process's mount table as the kernel gives it (`/proc/self/mountinfo`, a few
/// kilobytes, compared whole); `None` when it cannot be read (then nothing can be
/// trusted to it).
pub fn table() -> Option<Vec<u8>> {
    std::fs::read("/proc/self/mountinfo").ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_mount_table_reads_the_same_twice() {
        let a = super::table();
        assert!(a.as_ref().is_some_and(|t| !t.is_empty()));
        assert_eq!(a, super::table());
    }
}
