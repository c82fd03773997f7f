//! The project's queue of plans (`.agentloop/queue.json`): plans run one after
//! another, or once the entries they wait for are done; each one is a run of its own.
//! Every change is made under an exclusive lock and written atomically; a queue file
//! that does not read is an error that changes nothing.

use std::fs::OpenOptions;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{WorkspaceError, io};
use crate::runs::Workspace;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryState {
    /// Not started.
    Waiting,
    /// Its run is being driven (or its driver died: `queue run` resumes it).
    Running,
    Done,
    /// Its run waits for a person (a gate, a blocked task, a spent budget).
    Blocked,
    /// Its run ended without completing, or could not start.
    Failed,
    /// Its run was stopped on request.
    Stopped,
}

impl EntryState {
    pub fn as_str(self) -> &'static str {
        match self {
            EntryState::Waiting => "waiting",
            EntryState::Running => "running",
            EntryState::Done => "done",
            EntryState::Blocked => "blocked",
            EntryState::Failed => "failed",
            EntryState::Stopped => "stopped",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub id: String,
    /// The plan file, relative to the project.
    pub plan: String,
    /// Entries that must be done first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<String>,
    pub state: EntryState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// How its run ended, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Queue {
    pub entries: Vec<Entry>,
}

impl Queue {
    pub fn get(&self, id: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.id == id)
    }

    pub fn get_mut(&mut self, id: &str) -> Option<&mut Entry> {
        self.entries.iter_mut().find(|e| e.id == id)
    }

    /// The id the next entry gets.
    pub fn next_id(&self) -> String {
        let n = self
            .entries
            .iter()
            .filter_map(|e| e.id.strip_prefix('q')?.parse::<u32>().ok())
            .max()
            .unwrap_or(0);
        format!("q{}", n + 1)
    }

    /// The first waiting entry whose entries to wait for are all done.
    pub fn next(&self) -> Option<&Entry> {
        self.entries.iter().find(|e| {
            e.state == EntryState::Waiting
                && e.after
                    .iter()
                    .all(|a| self.get(a).is_some_and(|a| a.state == EntryState::Done))
        })
    }

    /// Waiting entries that cannot start, each with the entry it waits on that is not
    /// done.
    pub fn held(&self) -> Vec<(&Entry, &Entry)> {
        self.entries
            .iter()
            .filter(|e| e.state == EntryState::Waiting)
            .filter_map(|e| {
                let on = e
                    .after
                    .iter()
                    .filter_map(|a| self.get(a))
                    .find(|a| a.state != EntryState::Done)?;
                Some((e, on))
            })
            .collect()
    }
}

impl Workspace {
    pub fn queue_file(&self) -> PathBuf {
        self.dir.join("queue.json")
    }

    /// The queue as it is (empty when there is none).
    pub fn read_queue(&self) -> Result<Queue, WorkspaceError> {
        let path = self.queue_file();
        match agentloop_ground::fsutil::read_regular(&path, 64 << 20) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| WorkspaceError::Refused {
                why: format!("{} does not read ({e}); fix or remove it", path.display()),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Queue::default()),
            Err(e) => Err(io(&path)(e)),
        }
    }

    /// Changes the queue under its lock: `f` sees it as it is now; what it leaves is
    /// written when it returns `Ok`.
    pub fn change_queue<T>(
        &self,
        f: impl FnOnce(&mut Queue) -> Result<T, String>,
    ) -> Result<T, WorkspaceError> {
        std::fs::create_dir_all(&self.dir).map_err(io(&self.dir))?;
        let lock_path = self.dir.join("queue.lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io(&lock_path))?;
        lock.lock().map_err(io(&lock_path))?;
        let result = (|| {
            let mut q = self.read_queue()?;
            let out = f(&mut q).map_err(|why| WorkspaceError::Refused { why })?;
            let mut text = serde_json::to_string_pretty(&q).unwrap_or_default();
            text.push('\n');
            let path = self.queue_file();
            agentloop_ground::fsutil::write_atomic(&path, text.as_bytes()).map_err(io(&path))?;
            Ok(out)
        })();
        let _ = lock.unlock();
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, after: &[&str], state: EntryState) -> Entry {
        Entry {
            id: id.into(),
            plan: format!("{id}.md"),
            after: after.iter().map(|s| s.to_string()).collect(),
            state,
            run: None,
            note: None,
        }
    }

    #[test]
    fn a_blocked_entry_holds_only_what_waits_for_it() {
        let q = Queue {
            entries: vec![
                entry("q1", &[], EntryState::Blocked),
                entry("q2", &["q1"], EntryState::Waiting),
                entry("q3", &[], EntryState::Waiting),
            ],
        };
        assert_eq!(q.next().map(|e| e.id.as_str()), Some("q3"));
        let held: Vec<(&str, &str)> = q
            .held()
            .iter()
            .map(|(e, on)| (e.id.as_str(), on.id.as_str()))
            .collect();
        assert_eq!(held, [("q2", "q1")]);
        assert_eq!(q.next_id(), "q4");
    }

    #[test]
    fn a_queue_that_does_not_read_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::at(dir.path());
        std::fs::create_dir_all(&ws.dir).unwrap();
        std::fs::write(ws.queue_file(), "{not json").unwrap();
        let e = ws
            .change_queue(|q| {
                q.entries.clear();
                Ok(())
            })
            .unwrap_err();
        assert!(e.to_string().contains("does not read"), "{e}");
        assert_eq!(
            std::fs::read_to_string(ws.queue_file()).unwrap(),
            "{not json"
        );
    }
}
