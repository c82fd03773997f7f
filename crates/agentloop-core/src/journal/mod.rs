//! The journal: the run's one source of truth. Its event schema (`event`), the
//! checksummed append-only file (`store`), and the state folded from it (`state`,
//! `task`, `control`), with `progress.md` rendered from that state (`progress`).

mod agent;
mod baseline;
mod control;
mod cycles;
mod event;
mod evidence;
mod history;
mod integration;
mod iteration;
mod lanes;
mod open;
mod person;
mod phases;
mod planning;
mod progress;
mod queries;
mod report;
mod review;
mod sandbox;
mod seal;
pub mod shared;
mod ship;
mod state;
mod store;
mod summary;
mod surface;
mod task;
mod tripwire;
mod verdict;
mod workers;
mod writer;

pub use baseline::*;
pub use cycles::{Cycle, CycleJudged, CycleVerdict, Cycles};
pub use event::*;
pub use evidence::{TaskEvidence, TestRow, task_evidence};
pub use integration::{Integration, MergeState};
pub use lanes::{Lane, Phase};
pub use person::{Gate, Request};
pub use planning::{Planned, PlannerFinished, Planning};
pub use progress::render as render_progress;
pub use report::{handoff, pr_body, unit_pr_body};
pub use seal::{key_path, read_unsealed_without_key, seal, verifies};
pub use ship::{CheckOutcome, ShipState, Shipped, Unit};
pub use state::{FoldError, OpenIteration, RunState, STATE_VERSION, StopKind};
pub use store::{
    Contents, JournalError, MAX_LINE_BYTES, Record, SCHEMA_VERSION, Scan, encode, read, read_first,
    read_from, scan,
};
pub use summary::{Met, Row, Verdict, rows as criteria_rows, summary, verdict};
pub use task::{Pattern, TaskState, TaskStatus};
pub use tripwire::{TripCheck, TripHit, hits_words};
pub use writer::{Appended, Writer};
