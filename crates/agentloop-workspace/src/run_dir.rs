//! One run's directory: its journal, derived files and iteration records.

use std::path::PathBuf;

use crate::error::{WorkspaceError, io};
use agentloop_ground::fsutil::write_atomic;
use agentloop_ground::redact::Redactor;
use agentloop_journal::{
    self as journal, Appended, Event, FoldError, JournalError, Record, Request, RunState,
    RunStatus, Scan, Writer,
};

/// The largest `state.json` read back (a cache: a larger one is read from the journal).
const STATE_BYTES: u64 = 256 << 20;

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
    /// The run's store could not be read: what was read is this machine's copy of the
    /// journal, which may be behind the store (why, for a warning). Writing to the run
    /// fails until the store is back.
    pub stale: Option<String>,
}

/// What [`RunDir::copy_from_store`] copied in, and where the file now ends.
type Copied = Option<(Vec<Record>, u64)>;

impl Loaded {
    /// A writer positioned at the end of what was read (carrying the lines that were
    /// not agentloop's, for its owner to report).
    pub fn writer(&self, run: &RunDir) -> Result<Writer, WorkspaceError> {
        let mut w = Writer::open(&run.journal(), self.scan.valid_len, self.state.last_seq + 1)?;
        w.note_forged(self.scan.forged.clone());
        Ok(w)
    }
}

impl RunDir {
    pub fn journal(&self) -> PathBuf {
        self.path.join("journal.jsonl")
    }
    pub fn state_file(&self) -> PathBuf {
        self.path.join("state.json")
    }
    /// The seal of `state.json`, written by agentloop with it.
    pub fn state_seal_file(&self) -> PathBuf {
        self.path.join("state.json.seal")
    }
    /// What the last full check of the verification surface saw (sealed; a cache).
    pub fn surface_stamp_file(&self) -> PathBuf {
        self.path.join("surface-stamp")
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

    /// With a shared store, copies into the file the records the store has beyond it
    /// (a writer killed between the two, a writer on another machine): the records
    /// copied and where the file now ends, or `None` without a store. `offset` bytes of
    /// the file are known to hold the records before `next_seq`.
    fn copy_from_store(
        &self,
        offset: u64,
        next_seq: u64,
    ) -> Result<Option<(Vec<Record>, u64)>, WorkspaceError> {
        if journal::shared::installed().is_none() {
            return Ok(None);
        }
        let mut w = Writer::open(&self.journal(), offset, next_seq)?;
        let records = w.catch_up()?;
        Ok(Some((records, w.offset())))
    }

    /// [`Self::copy_from_store`], with a store that cannot be read taken as nothing
    /// to copy: the error, for the reader to warn about.
    fn copy_or_stale(
        &self,
        offset: u64,
        next_seq: u64,
    ) -> Result<(Copied, Option<String>), WorkspaceError> {
        match self.copy_from_store(offset, next_seq) {
            Ok(copied) => Ok((copied, None)),
            Err(WorkspaceError::Journal(JournalError::Store { store, message, .. })) => {
                Ok((None, Some(format!("{store}: {message}"))))
            }
            Err(e) => Err(e),
        }
    }

    /// Reads, checks and folds the journal, one record at a time.
    pub fn load(&self) -> Result<Loaded, WorkspaceError> {
        // A copy of a store's run starts empty: its records come first.
        if std::fs::metadata(self.journal()).is_ok_and(|m| m.len() == 0) {
            self.copy_from_store(0, 1)?;
        }
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
                // What the store has beyond the file, copied in and folded: the file is
                // read once.
                let mut scan = scan;
                let (copied, stale) = self.copy_or_stale(scan.valid_len, state.last_seq + 1)?;
                if let Some((records, end)) = copied {
                    for r in &records {
                        state.apply(r);
                    }
                    scan.count += records.len() as u64;
                    scan.valid_len = end;
                    scan.torn_tail = None;
                }
                // The sealed cache knows how far the journal went: records missing at
                // the end were altered or removed.
                if let Some(cached) = self.sealed_cache()
                    && cached.last_seq > state.last_seq
                {
                    let line = scan
                        .forged
                        .first()
                        .map_or(scan.count as usize + 1, |f| f.line);
                    return Err(JournalError::Corrupt {
                        path,
                        line,
                        message: format!(
                            "records {}..{} are missing or altered: the journal ends at {} where agentloop had written {}",
                            state.last_seq + 1,
                            cached.last_seq,
                            state.last_seq,
                            cached.last_seq
                        ),
                    }
                    .into());
                }
                state.journal_bytes = scan.valid_len;
                Ok(Loaded {
                    state,
                    scan,
                    cache_lag: u64::MAX,
                    stale,
                })
            }
        }
    }

    /// `state.json` if agentloop sealed it as it stands (an edited cache is ignored).
    fn sealed_cache(&self) -> Option<RunState> {
        let read = |p: PathBuf| agentloop_ground::fsutil::read_regular(&p, STATE_BYTES);
        let seal = String::from_utf8(read(self.state_seal_file()).ok()?).ok()?;
        read(self.state_file())
            .ok()
            .filter(|b| journal::verifies(b, seal.trim()))
            .and_then(|b| serde_json::from_slice::<RunState>(&b).ok())
            .filter(|s| s.v == journal::STATE_VERSION)
    }

    /// Loads the run from its cached `state.json` plus the journal written after it,
    /// falling back to a full [`RunDir::load`] when the cache is missing, stale in an
    /// unexpected way, or of another version. Every journal line read is checked.
    pub fn load_cached(&self) -> Result<Loaded, WorkspaceError> {
        // The cache is used only as agentloop sealed it: an edited state.json is ignored.
        let len = std::fs::metadata(self.journal()).map_or(0, |m| m.len());
        // A journal shorter than the cache says was cut: the full load says where.
        let cached = self
            .sealed_cache()
            .filter(|s| s.journal_bytes > 0 && s.journal_bytes <= len);
        let Some(mut state) = cached else {
            return self.load();
        };
        state.reindex();
        let from = state.journal_bytes;
        let next = state.last_seq + 1;
        let (_, stale) = self.copy_or_stale(from, next)?;
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
                    stale,
                })
            }
            Err(_) => self.load(),
        }
    }

    /// Rewrites only `progress.md` (when `state.json` is still a close enough cache).
    pub fn write_progress(&self, s: &RunState) -> Result<(), WorkspaceError> {
        write_atomic(
            &self.progress_file(),
            journal::render_progress(s).as_bytes(),
        )
        .map_err(io(&self.path))
    }

    /// Rewrites `state.json` and `progress.md` from the state (both are caches).
    /// `state.json` is one line: it is read at every hook call, and a large run's
    /// indentation would be a quarter of it.
    pub fn write_derived(&self, s: &RunState) -> Result<(), WorkspaceError> {
        let mut bytes = serde_json::to_vec(s).expect("state serializes");
        bytes.push(b'\n');
        write_atomic(&self.state_file(), &bytes).map_err(io(&self.path))?;
        // Its seal beside it (a crash between the two leaves a cache that is not used).
        let seal = journal::seal(&bytes).unwrap_or_default();
        write_atomic(&self.state_seal_file(), seal.as_bytes()).map_err(io(&self.path))?;
        write_atomic(
            &self.progress_file(),
            journal::render_progress(s).as_bytes(),
        )
        .map_err(io(&self.path))?;
        Ok(())
    }

    /// Appends a control request from another process (CLI, server, hook). Returns
    /// the record it became and the state after it. A request made from inside the
    /// agent's own process tree is refused ([`WorkspaceError::Refused`]) and journaled
    /// as an attempt.
    pub fn append_control(
        &self,
        loaded: Loaded,
        id: String,
        source: &str,
        request: Request,
    ) -> Result<(Record, RunState), WorkspaceError> {
        self.append_control_from(loaded, id, source, request, |_| std::process::id())
    }

    /// Whether a control request from this process would be refused as the agent's own
    /// (why), as [`append_control`](Self::append_control) judges it.
    pub fn refused_here(&self, state: &RunState) -> Option<String> {
        self.asker(state, false).refusal(std::process::id())
    }

    /// What a control request to this run is judged by: the run's drivers and bound
    /// session (`slash`: it came from the session's slash command).
    fn asker(&self, state: &RunState, slash: bool) -> super::origin::Asker<'_> {
        super::origin::Asker {
            run_id: &self.id,
            drivers: [
                self.lock_holder().and_then(|p| p.trim().parse().ok()),
                state.driver_pid,
            ],
            session_pid: state.session_pid,
            slash,
        }
    }

    /// [`append_control`](Self::append_control) from this process while it holds the
    /// driver lock it took to act on the request (`resume`'s top-up, recorded only once
    /// this process is sure to drive the run: a `resume` that loses the lock to another
    /// records nothing). Judged as a request from the process that held no lock: the
    /// agent's environment or session still refuses it, and an earlier driver that
    /// is somehow alive still counts.
    pub fn append_control_holding(
        &self,
        _lock: &super::DriverLock,
        loaded: Loaded,
        id: String,
        source: &str,
        request: Request,
    ) -> Result<(Record, RunState), WorkspaceError> {
        let me = std::process::id();
        self.append_control_judged(loaded, id, source, request, |a| {
            for d in &mut a.drivers {
                if *d == Some(me) {
                    *d = None;
                }
            }
            me
        })
    }

    /// [`append_control`](Self::append_control) for a request made by the process
    /// `asker` names, given what the refusal checks (the client of an API connection,
    /// looked for among [`Asker::agent_tree`](super::origin::Asker::agent_tree)).
    pub fn append_control_from(
        &self,
        loaded: Loaded,
        id: String,
        source: &str,
        request: Request,
        asker: impl FnOnce(&super::origin::Asker) -> u32,
    ) -> Result<(Record, RunState), WorkspaceError> {
        self.append_control_judged(loaded, id, source, request, |a| asker(a))
    }

    /// The appending of a control request, judged as `judge` has it (which may take a
    /// driver off the list, see [`append_control_holding`](Self::append_control_holding))
    /// and returns the pid asking.
    fn append_control_judged(
        &self,
        loaded: Loaded,
        id: String,
        source: &str,
        request: Request,
        judge: impl FnOnce(&mut super::origin::Asker) -> u32,
    ) -> Result<(Record, RunState), WorkspaceError> {
        let mut w = loaded.writer(self)?;
        let mut state = loaded.state;
        // A secret typed into a note is redacted like everything else written.
        let request = request.redacted(&Redactor::from_env(std::iter::empty()));
        let mut check = self.asker(&state, source == "session");
        let pid = judge(&mut check);
        if let Some(why) = check.refusal(pid) {
            w.append(&Event::ControlRefused {
                source: source.to_string(),
                request,
                why: why.clone(),
            })?;
            return Err(WorkspaceError::Refused { why });
        }
        let by = match source {
            "http" => "the API's token".to_string(),
            _ => local_user(),
        };
        let event = Event::Control {
            id,
            source: source.to_string(),
            request,
            by: Some(by),
        };
        // Written only on the journal the request was judged on: a run that completed
        // meanwhile (its driver wrote the last records while this one was loading)
        // would take it and never read it.
        let was_completed = state.status == RunStatus::Completed;
        let recs = loop {
            match w.append_if_current(&event)? {
                Appended::Written(recs) => break recs,
                Appended::Stale(others) => {
                    for r in &others {
                        state.apply(r);
                    }
                    if !was_completed && state.status == RunStatus::Completed {
                        return Err(WorkspaceError::CompletedMeanwhile(self.id.clone()));
                    }
                }
            }
        };
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
}

/// Events in the journal when a scan began at sequence `next`.
fn state_count(scan: &Scan, next: u64) -> u64 {
    next - 1 + scan.count
}

/// Who runs this process: `user@host`.
pub fn local_user() -> String {
    let user = ["USER", "LOGNAME"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| {
            // The real uid, from the kernel's own account of this process.
            std::fs::read_to_string("/proc/self/status")
                .ok()
                .and_then(|t| {
                    t.lines()
                        .find_map(|l| l.strip_prefix("Uid:"))
                        .and_then(|v| v.split_whitespace().next().map(String::from))
                })
                .map_or_else(|| "someone".to_string(), |u| format!("uid {u}"))
        });
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    if host.is_empty() {
        user
    } else {
        format!("{user}@{host}")
    }
}
