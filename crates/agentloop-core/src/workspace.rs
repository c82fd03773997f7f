//! `.agentloop/`: the runs of a project, each in its own directory with its journal,
//! derived files, iteration records and the lock held by its one driver.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::event::{Event, Request, Settings};
use crate::fsutil::write_atomic;
use crate::journal::{self, JournalError, Record, Scan, Writer};
use crate::plan::Plan;
use crate::state::{FoldError, RunState};

#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no runs in {0}")]
    NoRuns(PathBuf),
    #[error("no run matches \"{0}\"")]
    UnknownRun(String),
    #[error("\"{0}\" matches several runs: {1}")]
    AmbiguousRun(String, String),
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error("{path}: {source}")]
    Fold { path: PathBuf, source: FoldError },
    #[error("\"{0}\" cannot name a run: use 1 to 64 letters, digits, '-', '_' or '.'")]
    BadRunId(String),
    #[error("a run named {0} already exists")]
    RunExists(String),
    #[error("run {run} is already driven by pid {pid}")]
    Locked { run: String, pid: String },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> WorkspaceError + '_ {
    move |source| WorkspaceError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The project directory and its `.agentloop/`.
#[derive(Debug, Clone)]
pub struct Workspace {
    pub root: PathBuf,
    pub dir: PathBuf,
}

impl Workspace {
    /// The workspace for `start`: the top of its git work tree, or `start` itself.
    pub fn find(start: &Path) -> Workspace {
        let root = crate::git::toplevel(start).unwrap_or_else(|| start.to_path_buf());
        Workspace {
            dir: root.join(".agentloop"),
            root,
        }
    }

    pub fn at(root: &Path) -> Workspace {
        Workspace {
            root: root.to_path_buf(),
            dir: root.join(".agentloop"),
        }
    }

    pub fn runs_dir(&self) -> PathBuf {
        self.dir.join("runs")
    }

    /// Run ids, oldest first (ids sort by creation time).
    pub fn run_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = std::fs::read_dir(self.runs_dir())
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.path().join("journal.jsonl").exists())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        ids.sort();
        ids
    }

    /// A run by id or unique prefix; the newest run when `run` is `None`.
    pub fn resolve(&self, run: Option<&str>) -> Result<RunDir, WorkspaceError> {
        let ids = self.run_ids();
        let id = match run {
            None => ids
                .last()
                .cloned()
                .ok_or_else(|| WorkspaceError::NoRuns(self.runs_dir()))?,
            Some(want) => {
                if ids.iter().any(|i| i == want) {
                    want.to_string()
                } else {
                    let hits: Vec<&String> = ids
                        .iter()
                        .filter(|i| i.starts_with(want) || i.ends_with(want))
                        .collect();
                    match hits.as_slice() {
                        [] => return Err(WorkspaceError::UnknownRun(want.to_string())),
                        [one] => (*one).clone(),
                        many => {
                            let list = many
                                .iter()
                                .map(|s| s.as_str())
                                .collect::<Vec<_>>()
                                .join(", ");
                            return Err(WorkspaceError::AmbiguousRun(want.to_string(), list));
                        }
                    }
                }
            }
        };
        Ok(RunDir {
            path: self.runs_dir().join(&id),
            id,
        })
    }

    /// Creates a run directory and its journal with the first event.
    pub fn create_run(
        &self,
        plan_file: &Path,
        plan: &Plan,
        settings: Settings,
    ) -> Result<(RunDir, Writer, RunState), WorkspaceError> {
        self.create_run_with_id(None, plan_file, plan, settings)
    }

    /// [`Workspace::create_run`] under an id the caller chose (see [`valid_run_id`]),
    /// which must be new.
    pub fn create_run_with_id(
        &self,
        want: Option<&str>,
        plan_file: &Path,
        plan: &Plan,
        settings: Settings,
    ) -> Result<(RunDir, Writer, RunState), WorkspaceError> {
        std::fs::create_dir_all(self.runs_dir()).map_err(io(&self.dir))?;
        // Git never sees agentloop's own files, whatever the project's .gitignore says.
        let ignore = self.dir.join(".gitignore");
        if !ignore.exists() {
            std::fs::write(&ignore, "*\n").map_err(io(&ignore))?;
        }
        let (id, path) = loop {
            let id = want.map(str::to_string).unwrap_or_else(new_run_id);
            if !valid_run_id(&id) {
                return Err(WorkspaceError::BadRunId(id));
            }
            let path = self.runs_dir().join(&id);
            match std::fs::create_dir(&path) {
                Ok(()) => break (id, path),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && want.is_none() => {
                    continue;
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    return Err(WorkspaceError::RunExists(id));
                }
                Err(e) => return Err(io(&path)(e)),
            }
        };
        let run = RunDir {
            id: id.clone(),
            path,
        };
        std::fs::create_dir_all(run.path.join("plan")).map_err(io(&run.path))?;
        std::fs::create_dir_all(run.path.join("iterations")).map_err(io(&run.path))?;
        let first = Event::RunCreated {
            run_id: id,
            plan_file: plan_file.display().to_string(),
            workdir: self.root.display().to_string(),
            plan: plan.clone(),
            settings,
        };
        let (writer, rec) = Writer::create(&run.journal(), &first)?;
        let state = RunState::from_first(&rec).map_err(|source| WorkspaceError::Fold {
            path: run.journal(),
            source,
        })?;
        write_atomic(&run.plan_version(1), plan.to_markdown().as_bytes()).map_err(io(&run.path))?;
        // The machine-wide list of runs, so one server can show them all (best effort:
        // a run works without it).
        let _ = register(&run);
        Ok((run, writer, state))
    }
}

/// The registry of runs on this machine: `$XDG_STATE_HOME/agentloop/runs.jsonl`
/// (`~/.local/state/agentloop/runs.jsonl`), one `{"run_id","path"}` line per run.
pub fn registry_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))?;
    Some(base.join("agentloop").join("runs.jsonl"))
}

fn register(run: &RunDir) -> std::io::Result<()> {
    let path = registry_path().ok_or_else(|| std::io::Error::other("no state directory"))?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let line = serde_json::json!({ "run_id": run.id, "path": run.path }).to_string() + "\n";
    let mut f = OpenOptions::new().create(true).append(true).open(&path)?;
    f.write_all(line.as_bytes())
}

/// Every run in the registry, newest last; duplicates and malformed lines skipped.
pub fn registered_runs() -> Vec<RunDir> {
    let Some(text) = registry_path().and_then(|p| std::fs::read_to_string(p).ok()) else {
        return Vec::new();
    };
    let mut out: Vec<RunDir> = Vec::new();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let (Some(id), Some(path)) = (v["run_id"].as_str(), v["path"].as_str()) else {
            continue;
        };
        if !out.iter().any(|r| r.id == id) {
            out.push(RunDir {
                id: id.to_string(),
                path: PathBuf::from(path),
            });
        }
    }
    out
}

/// Events in the journal when a scan began at sequence `next`.
fn state_count(scan: &Scan, next: u64) -> u64 {
    next - 1 + scan.count
}

/// Whether `id` can name a run: 1 to 64 ASCII letters, digits, `-`, `_` or `.`, not
/// starting with a dot.
pub fn valid_run_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// A run id that sorts by creation time, to the millisecond: `20261122-104259-042-3fa2`.
pub fn new_run_id() -> String {
    let now = SystemTime::now();
    let stamp = humantime::format_rfc3339_millis(now).to_string();
    let digits: String = stamp.chars().filter(|c| c.is_ascii_digit()).collect();
    let nanos = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let salt = (nanos ^ std::process::id().rotate_left(16)) & 0xffff;
    format!(
        "{}-{}-{}-{salt:04x}",
        &digits[..8],
        &digits[8..14],
        &digits[14..17]
    )
}

#[derive(Debug, Clone)]
pub struct RunDir {
    pub id: String,
    pub path: PathBuf,
}

/// A loaded run: its state, and where its journal ends.
pub struct Loaded {
    pub state: RunState,
    pub scan: Scan,
    /// Events read past the cached `state.json` (`u64::MAX` when there was no cache).
    pub cache_lag: u64,
}

impl Loaded {
    /// A writer positioned at the end of what was read.
    pub fn writer(&self, run: &RunDir) -> Result<Writer, WorkspaceError> {
        Ok(Writer::open(
            &run.journal(),
            self.scan.valid_len,
            self.state.last_seq + 1,
        )?)
    }
}

impl RunDir {
    pub fn journal(&self) -> PathBuf {
        self.path.join("journal.jsonl")
    }
    pub fn state_file(&self) -> PathBuf {
        self.path.join("state.json")
    }
    pub fn progress_file(&self) -> PathBuf {
        self.path.join("progress.md")
    }
    pub fn lock_file(&self) -> PathBuf {
        self.path.join("lock")
    }
    pub fn plan_version(&self, v: u32) -> PathBuf {
        self.path.join("plan").join(format!("v{v}.md"))
    }
    pub fn iteration_dir(&self, n: u32) -> PathBuf {
        self.path.join("iterations").join(format!("{n:04}"))
    }

    /// Reads, checks and folds the journal, one record at a time.
    pub fn load(&self) -> Result<Loaded, WorkspaceError> {
        let path = self.journal();
        let mut state: Option<Result<RunState, FoldError>> = None;
        let scan = journal::scan(&path, 0, 1, |r| match &mut state {
            None => state = Some(RunState::from_first(&r)),
            Some(Ok(s)) => s.apply(&r),
            Some(Err(_)) => {}
        })?;
        match state {
            None => Err(JournalError::Empty { path }.into()),
            Some(Err(source)) => Err(WorkspaceError::Fold { path, source }),
            Some(Ok(mut state)) => {
                state.journal_bytes = scan.valid_len;
                Ok(Loaded {
                    state,
                    scan,
                    cache_lag: u64::MAX,
                })
            }
        }
    }

    /// Loads the run from its cached `state.json` plus the journal written after it,
    /// falling back to a full [`RunDir::load`] when the cache is missing, stale in an
    /// unexpected way, or of another version. Every journal line read is checked.
    pub fn load_cached(&self) -> Result<Loaded, WorkspaceError> {
        let cached = std::fs::read(self.state_file())
            .ok()
            .and_then(|b| serde_json::from_slice::<RunState>(&b).ok())
            .filter(|s| s.v == crate::state::STATE_VERSION && s.journal_bytes > 0);
        let Some(mut state) = cached else {
            return self.load();
        };
        state.reindex();
        let from = state.journal_bytes;
        let next = state.last_seq + 1;
        let mut records = Vec::new();
        match journal::scan(&self.journal(), from, next, |r| records.push(r)) {
            Ok(scan) => {
                for r in &records {
                    state.apply(r);
                }
                state.journal_bytes = scan.valid_len;
                Ok(Loaded {
                    state,
                    scan: Scan {
                        count: state_count(&scan, next),
                        ..scan
                    },
                    cache_lag: records.len() as u64,
                })
            }
            Err(_) => self.load(),
        }
    }

    /// Rewrites only `progress.md` (when `state.json` is still a close enough cache).
    pub fn write_progress(&self, s: &RunState) -> Result<(), WorkspaceError> {
        write_atomic(&self.progress_file(), crate::progress::render(s).as_bytes())
            .map_err(io(&self.path))
    }

    /// Rewrites `state.json` and `progress.md` from the state (both are caches).
    pub fn write_derived(&self, s: &RunState) -> Result<(), WorkspaceError> {
        write_atomic(&self.state_file(), &journal::pretty(s)).map_err(io(&self.path))?;
        write_atomic(&self.progress_file(), crate::progress::render(s).as_bytes())
            .map_err(io(&self.path))?;
        Ok(())
    }

    /// Appends a control request from another process (CLI, server, hook). Returns
    /// the record it became and the state after it.
    pub fn append_control(
        &self,
        loaded: Loaded,
        id: String,
        source: &str,
        request: Request,
    ) -> Result<(Record, RunState), WorkspaceError> {
        let mut w = loaded.writer(self)?;
        let mut state = loaded.state;
        let recs = w.append(&Event::Control {
            id,
            source: source.to_string(),
            request,
        })?;
        for r in &recs {
            state.apply(r);
        }
        let rec = recs
            .last()
            .cloned()
            .expect("append returns the new record last");
        // Leave the caches to the driver when there is one; otherwise keep them fresh.
        if self.lock_holder().is_none() {
            self.write_derived(&state)?;
        }
        Ok((rec, state))
    }

    /// The pid of the live driver holding this run's lock, if any.
    pub fn lock_holder(&self) -> Option<String> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .open(self.lock_file())
            .ok()?;
        match f.try_lock() {
            Ok(()) => {
                let _ = f.unlock();
                None
            }
            Err(_) => Some(read_pid(&f)),
        }
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
        let previous = read_pid(&f);
        let took_over = (!previous.is_empty()).then_some(previous);
        f.set_len(0).map_err(io(&path))?;
        f.rewind().map_err(io(&path))?;
        writeln!(f, "{}", std::process::id()).map_err(io(&path))?;
        f.sync_all().map_err(io(&path))?;
        Ok(DriverLock { file: f, took_over })
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
}

impl Drop for DriverLock {
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn the_state_cache_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::at(dir.path());
        let plan = Plan::parse("PLAN.md", "# P\n\n## T1: a\nVerify: true\n").unwrap();
        let (run, mut w, mut state) = ws
            .create_run(
                Path::new("PLAN.md"),
                &plan,
                Settings::from_config(&Config::default()),
            )
            .unwrap();
        for r in w
            .append(&Event::Control {
                id: "x".into(),
                source: "t".into(),
                request: Request::Pause,
            })
            .unwrap()
        {
            state.apply(&r);
        }
        state.journal_bytes = w.offset();
        run.write_derived(&state).unwrap();
        let text = std::fs::read_to_string(run.state_file()).unwrap();
        let back: Result<RunState, _> = serde_json::from_str(&text);
        assert!(back.is_ok(), "{:?}", back.err());
        let loaded = run.load_cached().unwrap();
        assert_eq!(loaded.state.last_seq, 2);
        assert!(loaded.state.paused && loaded.state.has_request("x"));
    }
}
