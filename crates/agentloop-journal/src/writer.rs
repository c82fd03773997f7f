//! Appending to a journal: under its lock, after catching up with what other
//! processes appended, one fsync per step (see [`Writer::group_syncs`]). With a shared
//! store installed ([`super::shared`]) each record goes to the store first, and the
//! file is its copy.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::event::{Event, Forged};
use super::shared::{Put, SharedJournal, installed};
use super::store::{JournalError, Record, encode, read_from};
use agentloop_ground::clock::now_rfc3339;

/// What [`Writer::append_if_current`] did.
#[derive(Debug)]
pub enum Appended {
    /// The event was written: the records, the new one last.
    Written(Vec<Record>),
    /// Others had appended these first; nothing was written.
    Stale(Vec<Record>),
}

/// An open journal that appends. Several writers may hold one for the same file.
#[derive(Debug)]
pub struct Writer {
    path: PathBuf,
    file: File,
    /// Bytes of the file this writer has read.
    offset: u64,
    next_seq: u64,
    /// Unsealed lines met while catching up, not yet reported.
    forged: Vec<Forged>,
    /// Whether the records that [`Event::may_wait_for_sync`] names may wait for the
    /// next record that does not, or for [`Writer::sync`] (see [`Writer::group_syncs`]).
    grouped: bool,
    /// Written, not yet made durable.
    unsynced: bool,
    /// The journal's truth when a store is installed.
    shared: Option<Box<dyn SharedJournal>>,
}

/// The run's journal in the installed store, if one is.
fn shared_for(path: &Path) -> Result<Option<Box<dyn SharedJournal>>, JournalError> {
    let Some(store) = installed() else {
        return Ok(None);
    };
    let run = path
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    store
        .journal(&run)
        .map(Some)
        .map_err(|message| JournalError::Store {
            path: path.to_path_buf(),
            store: store.describe(),
            message,
        })
}

impl Writer {
    /// Creates a new journal with its first event; fails if the file exists.
    pub fn create(path: &Path, first: &Event) -> Result<(Writer, Record), JournalError> {
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create_new(true)
            .open(path)
            .map_err(|e| JournalError::io(path, e))?;
        let mut shared = match shared_for(path) {
            Ok(s) => s,
            Err(e) => {
                let _ = std::fs::remove_file(path);
                return Err(e);
            }
        };
        let mut w = Writer {
            path: path.to_path_buf(),
            file,
            offset: 0,
            next_seq: 1,
            forged: Vec::new(),
            grouped: false,
            unsynced: false,
            shared: None,
        };
        if let Some(s) = shared.as_mut() {
            // The run is made in the store first: a name taken there is refused. The
            // file stays locked until its first line is in: a reader that finds it
            // empty copies the store's records into it under that lock, and must not
            // copy record 1 beside the one written here.
            w.file.lock().map_err(|e| JournalError::io(path, e))?;
            let line = encode(1, &now_rfc3339(), first);
            if let Err(message) = s.create(text(&line)) {
                drop(w);
                let _ = std::fs::remove_file(path);
                return Err(JournalError::Store {
                    path: path.to_path_buf(),
                    store: installed().map(|s| s.describe()).unwrap_or_default(),
                    message,
                });
            }
            w.write_line(&line)?;
            w.sync()?;
            let _ = w.file.unlock();
            w.shared = shared;
            let c = read_from(path, 0, 1)?;
            w.offset = c.valid_len;
            w.next_seq = 2;
            let rec = c.records.into_iter().next().ok_or(JournalError::Empty {
                path: path.to_path_buf(),
            })?;
            if let Some(dir) = path.parent() {
                agentloop_ground::fsutil::sync_dir(dir).map_err(|e| JournalError::io(dir, e))?;
            }
            return Ok((w, rec));
        }
        let mut recs = w.append(first)?;
        let rec = recs.pop().expect("append returns the new record last");
        if let Some(dir) = path.parent() {
            agentloop_ground::fsutil::sync_dir(dir).map_err(|e| JournalError::io(dir, e))?;
        }
        Ok((w, rec))
    }

    /// Opens an existing journal for appending, positioned after `known` bytes that
    /// hold `known_records` events (pass 0/0 to read everything on the first append).
    pub fn open(path: &Path, offset: u64, next_seq: u64) -> Result<Writer, JournalError> {
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(path)
            .map_err(|e| JournalError::io(path, e))?;
        Ok(Writer {
            path: path.to_path_buf(),
            file,
            offset,
            next_seq,
            forged: Vec::new(),
            grouped: false,
            unsynced: false,
            shared: shared_for(path)?,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// One fsync for the records of one step: the bookkeeping between an agent's end
    /// and the next agent's start (its result, the surface check, the verdict) is
    /// written at once but made durable with the record that comes before anything
    /// leaves the process — the next `iteration_started`, a control, a gate — or at
    /// [`Writer::sync`] (before a notification, a hook's answer, an exit) or when the
    /// writer is dropped. Each record is still written whole as it is made: a killed
    /// process loses nothing; a machine that loses power loses at most those records,
    /// which the policy decides again from the record before them (an agent's
    /// finished turn among them: its iteration is then aborted and done again).
    pub fn group_syncs(&mut self) {
        self.grouped = true;
    }

    /// Makes every record written so far durable.
    pub fn sync(&mut self) -> Result<(), JournalError> {
        if self.unsynced {
            self.file
                .sync_data()
                .map_err(|e| JournalError::io(&self.path, e))?;
            self.unsynced = false;
        }
        Ok(())
    }

    /// Bytes of the journal this writer has read or written.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Appends `event` under the journal lock and fsyncs it. Returns the records other
    /// processes appended since this writer last looked, followed by the new one.
    pub fn append(&mut self, event: &Event) -> Result<Vec<Record>, JournalError> {
        self.file
            .lock()
            .map_err(|e| JournalError::io(&self.path, e))?;
        let result = self.append_locked(event);
        let _ = self.file.unlock();
        result
    }

    /// Appends `event` only if nothing was appended since this writer last looked: a
    /// decision made on what this writer had read is recorded only while that is still
    /// the whole journal. Otherwise returns what others appended, and writes nothing.
    pub fn append_if_current(&mut self, event: &Event) -> Result<Appended, JournalError> {
        self.file
            .lock()
            .map_err(|e| JournalError::io(&self.path, e))?;
        let result = match self.catch_up_locked() {
            Ok(others) if others.is_empty() => match self.put_locked(event) {
                Ok(Ok(written)) => Ok(Appended::Written(written)),
                Ok(Err(others)) => Ok(Appended::Stale(others)),
                Err(e) => Err(e),
            },
            Ok(others) => Ok(Appended::Stale(others)),
            Err(e) => Err(e),
        };
        let _ = self.file.unlock();
        result
    }

    fn append_locked(&mut self, event: &Event) -> Result<Vec<Record>, JournalError> {
        let mut others = self.catch_up_locked()?;
        loop {
            match self.put_locked(event)? {
                Ok(mut written) => {
                    others.append(&mut written);
                    return Ok(others);
                }
                // Others appended to the store first: their records are copied in, and
                // the event goes after them.
                Err(mut behind) => others.append(&mut behind),
            }
        }
    }

    /// Writes `event` as the next record: `Ok` with it, or `Err` with the records the
    /// store had first (copied into the file), nothing written.
    #[allow(clippy::type_complexity)]
    fn put_locked(
        &mut self,
        event: &Event,
    ) -> Result<Result<Vec<Record>, Vec<Record>>, JournalError> {
        failpoint("before-append", self.next_seq, event.kind());
        let time = now_rfc3339();
        let line = encode(self.next_seq, &time, event);
        if let Some(shared) = self.shared.as_mut() {
            match shared.append(self.next_seq, text(&line)) {
                Ok(Put::Appended) => {}
                Ok(Put::Behind(lines)) => return self.copy_in(&lines).map(Err),
                Err(message) => return Err(self.store_error(message)),
            }
            failpoint("after-store-append", self.next_seq, event.kind());
        }
        self.write_line(&line)?;
        if !(self.grouped && event.may_wait_for_sync()) {
            self.sync()?;
        }
        failpoint("after-append", self.next_seq, event.kind());
        let rec = Record {
            seq: self.next_seq,
            time,
            event: event.clone(),
        };
        self.offset += line.len() as u64;
        self.next_seq += 1;
        Ok(Ok(vec![rec]))
    }

    fn write_line(&mut self, line: &[u8]) -> Result<(), JournalError> {
        self.file
            .write_all(line)
            .map_err(|e| JournalError::io(&self.path, e))?;
        self.unsynced = true;
        Ok(())
    }

    /// Copies lines the store has and the file lacks into the file, and reads them.
    fn copy_in(&mut self, lines: &[String]) -> Result<Vec<Record>, JournalError> {
        for line in lines {
            self.write_line(line.as_bytes())?;
            self.write_line(b"\n")?;
        }
        self.sync()?;
        self.catch_up_locked()
    }

    fn store_error(&self, message: String) -> JournalError {
        JournalError::Store {
            path: self.path.clone(),
            store: installed().map(|s| s.describe()).unwrap_or_default(),
            message,
        }
    }

    fn file_len(&self) -> Result<u64, JournalError> {
        Ok(self
            .file
            .metadata()
            .map_err(|e| JournalError::io(&self.path, e))?
            .len())
    }

    /// Records appended by others since this writer last looked (takes the lock).
    pub fn catch_up(&mut self) -> Result<Vec<Record>, JournalError> {
        if self.shared.is_some() {
            self.file
                .lock()
                .map_err(|e| JournalError::io(&self.path, e))?;
            let r = self.catch_up_shared_locked();
            let _ = self.file.unlock();
            return r;
        }
        if self.file_len()? == self.offset {
            return Ok(Vec::new());
        }
        self.file
            .lock()
            .map_err(|e| JournalError::io(&self.path, e))?;
        let r = self.catch_up_locked();
        let _ = self.file.unlock();
        r
    }

    fn catch_up_locked(&mut self) -> Result<Vec<Record>, JournalError> {
        if self.file_len()? == self.offset {
            return Ok(Vec::new());
        }
        let c = read_from(&self.path, self.offset, self.next_seq)?;
        if c.torn_tail.is_some() {
            // Only a crashed writer leaves a torn line, and we hold the lock: drop it.
            self.file
                .set_len(c.valid_len)
                .map_err(|e| JournalError::io(&self.path, e))?;
            self.file
                .sync_all()
                .map_err(|e| JournalError::io(&self.path, e))?;
        }
        self.offset = c.valid_len;
        self.next_seq += c.records.len() as u64;
        self.forged.extend(c.forged);
        Ok(c.records)
    }

    /// The file's new records, then what the store has beyond them.
    fn catch_up_shared_locked(&mut self) -> Result<Vec<Record>, JournalError> {
        let mut records = self.catch_up_locked()?;
        let seq = self.next_seq;
        let lines = match self.shared.as_mut().map(|s| s.since(seq)) {
            Some(Ok(lines)) => lines,
            Some(Err(message)) => return Err(self.store_error(message)),
            None => Vec::new(),
        };
        if !lines.is_empty() {
            records.extend(self.copy_in(&lines)?);
        }
        Ok(records)
    }

    /// Unsealed lines found by an earlier read, for this writer's owner to report.
    pub fn note_forged(&mut self, forged: Vec<Forged>) {
        self.forged.extend(forged);
    }

    /// Lines found since the last call that agentloop did not write: skipped, for the
    /// caller to report.
    pub fn take_forged(&mut self) -> Vec<Forged> {
        std::mem::take(&mut self.forged)
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.sync();
    }
}

/// A journal line (agentloop writes only UTF-8) without its newline.
fn text(line: &[u8]) -> &str {
    std::str::from_utf8(line)
        .unwrap_or_default()
        .trim_end_matches('\n')
}

/// Test hook for crash tests: `AGENTLOOP_FAILPOINT=after-append:12` kills this process
/// with SIGKILL right after event 12 is durable (`before-append:N`: before it is written).
/// `after-append:planner_finished#2` names the second record of that kind this process
/// writes instead: with workers and planners on threads the sequence numbers of two runs
/// differ, the order of one kind's records does not.
fn failpoint(point: &str, seq: u64, kind: &str) {
    use std::sync::atomic::{AtomicU64, Ordering};
    enum At {
        Seq(u64),
        Nth(String, u64),
    }
    static SPEC: std::sync::OnceLock<Option<(String, At)>> = std::sync::OnceLock::new();
    static SEEN: AtomicU64 = AtomicU64::new(0);
    let spec = SPEC.get_or_init(|| {
        let v = std::env::var("AGENTLOOP_FAILPOINT").ok()?;
        let (p, at) = v.split_once(':')?;
        let at = match at.split_once('#') {
            Some((kind, n)) => At::Nth(kind.to_string(), n.parse().ok()?),
            None => At::Seq(at.parse().ok()?),
        };
        Some((p.to_string(), at))
    });
    let Some((p, at)) = spec else { return };
    if p != point {
        return;
    }
    let hit = match at {
        At::Seq(n) => *n == seq,
        At::Nth(k, n) => k == kind && SEEN.fetch_add(1, Ordering::SeqCst) + 1 == *n,
    };
    if hit {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::this(), nix::sys::signal::Signal::SIGKILL);
    }
}

impl Event {
    /// Bookkeeping between an agent's end and the next step that leaves the process:
    /// it may share that step's fsync ([`Writer::group_syncs`]).
    pub fn may_wait_for_sync(&self) -> bool {
        matches!(
            self,
            Event::AgentFinished(_)
                | Event::SurfaceChecked { .. }
                | Event::TripwiresChecked { .. }
                | Event::VerifyFinished(_)
                | Event::IterationFinished(_)
                | Event::HookStop { .. }
                | Event::SandboxDenied { .. }
                | Event::JobState(_)
        )
    }
}
