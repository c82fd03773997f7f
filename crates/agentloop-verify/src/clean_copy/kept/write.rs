//! What the short way writes into the copy, and takes back before a full refresh.

use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};

use super::{CleanCopy, Full, Kept, parent};

impl Kept {
    /// Before the full way: the files the short way added go (the copy's own git does
    /// not know them, and would keep one its rules ignore).
    pub(super) fn unwind(&self, copy: &CleanCopy) {
        for p in self.files.difference(&self.base_files) {
            let _ = std::fs::remove_file(copy.dir.join(p));
            let mut d = parent(p);
            while !d.is_empty() && std::fs::remove_dir(copy.dir.join(d)).is_ok() {
                d = parent(d);
            }
        }
    }

    /// Writes the project's file `p` into the copy (a new file renamed over the old).
    pub(super) fn write(&mut self, copy: &CleanCopy, p: &str) -> Result<(), Full> {
        let from = copy.root.join(p);
        let bytes = std::fs::read(&from).map_err(|_| ())?;
        let exec = std::fs::metadata(&from)
            .map_err(|_| ())?
            .permissions()
            .mode()
            & 0o100
            != 0;
        let dir = parent(p);
        let mut made = Vec::new();
        {
            let mut d = dir;
            while !self.tree_dirs.contains(d) {
                made.push(d.to_string());
                d = parent(d);
            }
        }
        for d in made.iter().rev() {
            if let Some(true) = self.extras.get(d.as_str()) {
                // An ignored directory of the checks' becomes the tree's: full way.
                return Err(());
            }
            std::fs::create_dir(copy.dir.join(d)).map_err(|_| ())?;
            self.tree_dirs.insert(d.clone());
            self.watch_dir(&copy.dir, d)?;
        }
        let to = copy.dir.join(p);
        let tmp = copy.dir.join(dir).join(format!(
            ".{}.agentloop-{}",
            p.rsplit('/').next().unwrap_or(p),
            std::process::id()
        ));
        self.unwatch_file(p);
        let written = (|| -> std::io::Result<()> {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(if exec { 0o777 } else { 0o666 })
                .open(&tmp)?;
            f.write_all(&bytes)?;
            std::fs::rename(&tmp, &to)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
            return Err(());
        }
        self.files.insert(p.to_string());
        self.extras.remove(p);
        self.watch_file(&copy.dir, p)
    }

    /// Removes `p` from the copy, and the directories it leaves empty.
    pub(super) fn remove(&mut self, copy: &CleanCopy, p: &str) -> Result<(), Full> {
        self.unwatch_file(p);
        match std::fs::remove_file(copy.dir.join(p)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => return Err(()),
        }
        self.files.remove(p);
        self.extras.remove(p);
        let mut d = parent(p);
        while !d.is_empty() && std::fs::remove_dir(copy.dir.join(d)).is_ok() {
            self.tree_dirs.remove(d);
            d = parent(d);
        }
        Ok(())
    }
}
