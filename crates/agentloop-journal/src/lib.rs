//! The journal: the run's one source of truth. Its records — the event schema
//! (`event`) and the types its events carry (`cycles`, `planning`, `denial`,
//! `prerequisites`, `gate_trigger`, …) —, the checksummed append-only file (`store`,
//! `writer`, `seal`), the state folded from it (`state`, with `task` and `control`),
//! and what is read off that state: `progress.md` (`progress`), the summary and the
//! verdict (`summary`, `verdict`), handoffs and pull request bodies (`report`).
//!
//! The records import nothing of the fold: a file that adds a record type keeps its
//! fold beside `state` (`state/cycles.rs`, `state/planning.rs`).

mod agent;
mod baseline;
mod check_outcome;
mod control;
mod cycles;
mod denial;
mod event;
mod evidence;
mod gate_trigger;
mod history;
mod integration;
mod iteration;
mod lanes;
mod open;
mod person;
mod phases;
mod planning;
mod prerequisites;
mod progress;
mod project;
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
pub use check_outcome::CheckOutcome;
pub use cycles::{CycleJudged, CycleVerdict, Cycles};
pub use denial::{Denial, DenialKind, RECENT_REFUSALS, Refusals};
pub use event::*;
pub use evidence::{TaskEvidence, TestRow, task_evidence};
pub use gate_trigger::GateTrigger;
pub use integration::{Integration, MergeState};
pub use lanes::{Lane, Phase};
pub use person::{Gate, Request};
pub use planning::{Planned, PlannerFinished, Planning};
pub use prerequisites::Prerequisites;
pub use progress::render as render_progress;
pub use report::{handoff, pr_body, unit_pr_body};
pub use seal::{key_path, read_unsealed_without_key, seal, verifies};
pub use ship::{ShipState, Shipped, Unit};
pub use state::{FoldError, OpenIteration, RunState, STATE_VERSION, StopKind};
pub use store::{
    Contents, JournalError, MAX_LINE_BYTES, Record, SCHEMA_VERSION, Scan, encode, read, read_first,
    read_from, scan,
};
pub use summary::{Met, Row, Verdict, rows as criteria_rows, summary, verdict};
pub use task::{Pattern, TaskState, TaskStatus};
pub use tripwire::{TripCheck, TripHit, hits_words};
pub use writer::{Appended, Writer};

#[doc(hidden)]
pub mod testing;
