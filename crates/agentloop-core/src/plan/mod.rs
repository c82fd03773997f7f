//! PLAN.md: a goal and tasks, written by people, agents and other tools. Read
//! (`parse`), checked as a whole (`validate`), written back (`write`), and brought in
//! from other tools' formats (`import`).

mod error;
mod import;
mod model;
mod parse;
mod validate;
mod write;

pub use error::PlanError;
pub use import::{ImportError, Imported, import};
pub use model::{Criterion, GatePoint, Mode, Plan, Task};
pub use parse::{MAX_LINE_BYTES, MAX_PLAN_BYTES};
