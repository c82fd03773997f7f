//! What the last `--version` of each program said, kept in agentloop's cache
//! (`probes.json`) so a run does not start a CLI only to ask it again: Cline's
//! `--version` starts a 150 MB binary (2.3–2.9 s), Gemini CLI's took 34 s on a busy
//! machine. An answer holds while the program's file and its directory are the ones
//! it came from (an upgrade replaces them) and for a day at most (a wrapper script
//! that runs another program does not change when that program does). How long the
//! answer took sets the next probe's deadline.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How long an answer is trusted.
const KEPT_SECS: i64 = 24 * 60 * 60;

/// The largest cache file read.
const MOST: u64 = 1024 * 1024;

/// One program's last answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// What identifies the program's file and its directory when it answered.
    pub stamp: String,
    /// Its version line.
    pub version: String,
    /// How long it took, in milliseconds.
    pub took_ms: u64,
    /// When (Unix seconds).
    pub at: i64,
}

/// The program `program` (a name on the PATH, or a path) resolved to its file, and
/// that file's stamp now.
pub fn stamp_of(program: &Path) -> Option<(PathBuf, String)> {
    let file = program.canonicalize().ok()?;
    let f = std::fs::metadata(&file).ok()?;
    let d = std::fs::metadata(file.parent()?).ok()?;
    let stamp = format!(
        "{}:{}:{}:{}.{}:{}.{} dir {}:{}.{}",
        f.dev(),
        f.ino(),
        f.len(),
        f.mtime(),
        f.mtime_nsec(),
        f.ctime(),
        f.ctime_nsec(),
        d.ino(),
        d.mtime(),
        d.mtime_nsec()
    );
    Some((file, stamp))
}

/// The cache file: `$XDG_CACHE_HOME/agentloop/probes.json`.
fn path() -> Option<PathBuf> {
    Some(agentloop_ground::fsutil::cache_dir()?.join("probes.json"))
}

fn load(path: &Path) -> BTreeMap<String, Answer> {
    agentloop_ground::fsutil::read_regular(path, MOST)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// What the cache holds of `file`, read once: its answer while it is still the same
/// file and fresh, and how long its last answer took (whatever changed since).
#[derive(Debug, Default)]
pub struct Last {
    pub answer: Option<Answer>,
    pub took: Option<Duration>,
}

pub fn last(file: &Path, stamp: &str, now: i64) -> Last {
    path().map_or_else(Last::default, |cache| last_in(&cache, file, stamp, now))
}

fn last_in(cache: &Path, file: &Path, stamp: &str, now: i64) -> Last {
    let all = load(cache);
    let Some(a) = all.get(file.to_string_lossy().as_ref()) else {
        return Last::default();
    };
    let fresh = a.stamp == stamp && (0..KEPT_SECS).contains(&(now - a.at));
    Last {
        took: Some(Duration::from_millis(a.took_ms)),
        answer: fresh.then(|| a.clone()),
    }
}

/// Keeps `answer` as `file`'s. Probes of several agents run at once: one writer at
/// a time in this process; between processes the last one's file wins.
pub fn keep(file: &Path, answer: Answer) {
    if let Some(cache) = path() {
        keep_in(&cache, file, answer);
    }
}

fn keep_in(cache: &Path, file: &Path, answer: Answer) {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let mut all = load(cache);
    all.insert(file.to_string_lossy().into_owned(), answer);
    if let Some(dir) = cache.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    // A cache: when it cannot be written, the next run asks again.
    let _ = agentloop_ground::fsutil::write_atomic(
        cache,
        &serde_json::to_vec(&all).unwrap_or_default(),
    );
}

/// How long a `--version` may take: 30 s on an idle machine, longer in proportion to
/// the load per core, and at least ten times what this program took last.
pub fn deadline(last: Option<Duration>) -> Duration {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .unwrap_or(0.0);
    scaled(last, load / cores)
}

fn scaled(last: Option<Duration>, load_per_core: f64) -> Duration {
    let base = super::VERSION_WITHIN.mul_f64(load_per_core.clamp(1.0, 10.0));
    base.max(last.map_or(Duration::ZERO, |l| l * 10))
        .min(Duration::from_secs(600))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(stamp: &str, at: i64) -> Answer {
        Answer {
            stamp: stamp.into(),
            version: "3.0.65".into(),
            took_ms: 2500,
            at,
        }
    }

    /// An answer holds for the same file for a day; a changed file, or an older answer,
    /// asks again.
    #[test]
    fn an_answer_holds_for_the_same_file_for_a_day() {
        let d = tempfile::tempdir().unwrap();
        let cache = d.path().join("probes.json");
        let file = Path::new("/usr/bin/cline");
        keep_in(&cache, file, answer("s1", 1000));
        keep_in(&cache, Path::new("/usr/bin/qwen"), answer("q", 1000));
        assert_eq!(
            last_in(&cache, file, "s1", 2000).answer.map(|a| a.version),
            Some("3.0.65".into())
        );
        assert_eq!(last_in(&cache, file, "s2", 2000).answer, None, "upgraded");
        assert_eq!(last_in(&cache, file, "s1", 1000 + KEPT_SECS).answer, None);
        assert_eq!(
            last_in(&cache, file, "s1", 999).answer,
            None,
            "from the future"
        );
        assert!(
            last_in(&cache, Path::new("/usr/bin/qwen"), "q", 2000)
                .answer
                .is_some()
        );
        // What it took last holds whatever changed since: the next deadline's.
        let took = last_in(&cache, file, "s2", 2000).took;
        assert_eq!(took, Some(Duration::from_millis(2500)));
    }

    /// A cache file that is not one (a FIFO, garbage) is no answer, and never blocks.
    #[test]
    fn a_broken_cache_is_no_answer() {
        let d = tempfile::tempdir().unwrap();
        let cache = d.path().join("probes.json");
        std::fs::write(&cache, "not json").unwrap();
        assert_eq!(last_in(&cache, Path::new("/x"), "s", 1).answer, None);
        std::fs::remove_file(&cache).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(&cache)
            .status()
            .unwrap();
        assert!(made.success());
        assert_eq!(last_in(&cache, Path::new("/x"), "s", 1).answer, None);
    }

    /// A file's stamp changes when it is replaced.
    #[test]
    fn a_replaced_program_has_another_stamp() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("cli");
        std::fs::write(&p, "one").unwrap();
        let (file, one) = stamp_of(&p).unwrap();
        assert_eq!(file, p.canonicalize().unwrap());
        std::fs::write(d.path().join("cli.new"), "two").unwrap();
        std::fs::rename(d.path().join("cli.new"), &p).unwrap();
        assert_ne!(stamp_of(&p).unwrap().1, one);
    }

    /// The deadline grows with the load per core and with what the program took last.
    #[test]
    fn the_deadline_scales_with_the_load_and_the_program() {
        assert_eq!(scaled(None, 0.2), Duration::from_secs(30));
        assert_eq!(scaled(None, 3.0), Duration::from_secs(90));
        assert_eq!(
            scaled(Some(Duration::from_secs(5)), 0.5),
            Duration::from_secs(50)
        );
        assert_eq!(scaled(None, 50.0), Duration::from_secs(300));
        assert_eq!(
            scaled(Some(Duration::from_secs(100)), 1.0),
            Duration::from_secs(600)
        );
    }
}
