//! A journal shared beyond this machine (`[store] url`): the sealed lines of a run's
//! journal kept as rows of a database (PostgreSQL, in `agentloop-store`), which is
//! then the journal's truth. The run's `journal.jsonl` stays, as a copy every local
//! reader keeps using: a [`Writer`](crate::writer::Writer) appends to the store first, in a
//! transaction under the run's lock there, then to the file; what the file lacks (a
//! writer killed between the two, a writer on another machine) is copied into it from
//! the store when a writer next catches up.
//!
//! The store is installed once per process ([`install`]) from the configuration; the
//! journal's code stays free of any database.

use std::sync::{Arc, OnceLock};

/// What [`SharedJournal::append`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Put {
    /// The line is the journal's record at its sequence number.
    Appended,
    /// Records from that number on were there already (others appended first): the
    /// lines, in order; nothing was written.
    Behind(Vec<String>),
}

/// One run's journal in the store.
pub trait SharedJournal: Send + std::fmt::Debug {
    /// Makes the run's journal with its first line (record 1); fails if the run is
    /// there already.
    fn create(&mut self, first: &str) -> Result<(), String>;
    /// Appends `line` as record `seq` — only if the journal holds exactly `seq - 1`
    /// records, which it checks under the run's lock. A try whose answer was lost
    /// and that did write counts as appended.
    fn append(&mut self, seq: u64, line: &str) -> Result<Put, String>;
    /// The lines of the records from `seq` on.
    fn since(&mut self, seq: u64) -> Result<Vec<String>, String>;
}

/// Held while a driver drives a run: no other driver, on any machine, can take it.
pub trait DriverHold: Send {}

/// Why a run could not be taken for a driver.
#[derive(Debug, Clone)]
pub enum HoldRefused {
    /// Another driver holds it (who, in words).
    Taken(String),
    /// The store did not answer, or cannot be reached (why).
    Unreachable(String),
}

/// Where runs' journals are shared.
pub trait SharedStore: Send + Sync {
    /// The journal of run `run`.
    fn journal(&self, run: &str) -> Result<Box<dyn SharedJournal>, String>;
    /// Takes run `run` for this process's driver; who holds it when another does.
    fn hold_driver(&self, run: &str) -> Result<Box<dyn DriverHold>, HoldRefused>;
    /// Who drives run `run` now, wherever that is (`None`: no driver).
    fn driver_of(&self, run: &str) -> Option<String>;
    /// Where it is, for messages (no password).
    fn describe(&self) -> String;
    /// Why the store's setting cannot be used, when the server answered and refused
    /// what it names (a database it does not have, a user it does not take): a
    /// setting to mend, not a service down. Asks the store once per process.
    fn refused(&self) -> Option<String> {
        None
    }
}

static STORE: OnceLock<Arc<dyn SharedStore>> = OnceLock::new();

/// Makes `store` the journals' store for the rest of the process (the first one
/// installed stays).
pub fn install(store: Arc<dyn SharedStore>) {
    let _ = STORE.set(store);
}

/// The store installed, if any.
pub fn installed() -> Option<Arc<dyn SharedStore>> {
    STORE.get().cloned()
}
