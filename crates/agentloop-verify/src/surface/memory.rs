//! The surface as a process that lives on remembers it between checks: the last full
//! check's [`Stamp`], in memory and sealed on disk, and (for a process that lives on
//! across iterations) each surface file watched itself. A check then reads no file's
//! content and starts no git process while the stamp holds for the tree as its
//! snapshot has it; while the watch reports nothing after a full look, not even every
//! file's status is read again. Anything else is the full check, stamped again when it
//! finds nothing. The driver keeps one; so does a hook-mode run's resident
//! (`exec::resident`), for the Stop hooks that ask it.

use std::path::{Path, PathBuf};

use super::{Stamp, SurfaceWatch};
use agentloop_exec::git::Snapshot;
use agentloop_journal::{Baseline, SurfaceChange};
use agentloop_project::Project;

/// What one process remembers of a project's surface.
pub struct Remembered {
    /// Where the sealed stamp is kept between processes.
    at: PathBuf,
    stamp: Option<Stamp>,
    watch: Option<SurfaceWatch>,
}

/// A check's outcome: what differs from the baseline, and a warning to pass on.
pub struct Checked {
    pub changes: Vec<SurfaceChange>,
    pub warning: Option<String>,
}

impl Remembered {
    /// Nothing remembered yet; the stamp is kept at `at`.
    pub fn new(at: PathBuf) -> Remembered {
        Remembered {
            at,
            stamp: None,
            watch: None,
        }
    }

    /// The surface under `root` against `base`, for the tree as `now` (a snapshot taken
    /// after the work) has it: nothing changed if the stamp of the last full check
    /// still holds, else the full check. `watch`: this process lives on, so each
    /// surface file is watched from now on.
    pub fn check(
        &mut self,
        root: &Path,
        base: &Baseline,
        rules: &Project,
        now: Option<&Snapshot>,
        watch: bool,
    ) -> Result<Checked, String> {
        // While the watch reports nothing, no status need be read again (see `watch`).
        let quiet = self
            .watch
            .as_mut()
            .filter(|w| w.covers(base))
            .map(|w| w.quiet());
        if quiet != Some(true) && watch {
            self.watch = SurfaceWatch::start(root, base);
        }
        let trusted = quiet == Some(true) && self.watch.as_ref().is_some_and(|w| w.trusted());
        if self.stamp.is_none() {
            self.stamp = Stamp::load(&self.at);
        }
        if let (Some(now), Some(stamp)) = (now, &self.stamp) {
            if trusted && stamp.holds_but_statuses(root, base, rules, now) {
                return Ok(Checked::nothing());
            }
            if stamp.holds(root, base, rules, now) {
                if let Some(w) = self.watch.as_mut() {
                    w.looked();
                }
                return Ok(Checked::nothing());
            }
        }
        let head = now.and_then(|n| n.head.clone());
        let (changes, stamp) = super::check_stamped(root, base, rules, head)?;
        self.stamp = stamp.clone();
        let kept = match stamp {
            Some(s) => s.save(&self.at),
            None => Stamp::remove(&self.at),
        };
        Ok(Checked {
            changes,
            warning: kept
                .err()
                .map(|e| format!("cannot keep the surface's stamp: {e}")),
        })
    }
}

impl Checked {
    fn nothing() -> Checked {
        Checked {
            changes: Vec::new(),
            warning: None,
        }
    }
}
