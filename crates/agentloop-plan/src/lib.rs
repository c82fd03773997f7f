//! PLAN.md: a goal and tasks, written by people, agents and other tools. Read
//! (`parse`), checked as a whole (`validate`), written back (`write`), and brought in
//! from other tools' formats (`import`) and issue trackers (`issues`).

mod clarity;
mod criteria;
mod error;
mod findings;
mod front;
mod import;
mod issues;
mod kind;
mod model;
mod parse;
mod shape;
mod tripwire;
mod validate;
mod write;

pub use clarity::{Clarity, Shape, Workflow, assess, reversibility, workflow};
pub use criteria::{Evidence, Op, Requirement, Threshold};
pub use error::PlanError;
pub use findings::findings;
pub use import::{ImportError, Imported, import};
pub use issues::{IssueTask, plan_from_issues};
pub use kind::{interface_update, interface_updates};
pub use model::{Class, Criterion, GatePoint, Mode, Plan, Task};
pub use parse::{MAX_LINE_BYTES, MAX_PLAN_BYTES};
pub use shape::SHAPE_FILE;
pub use tripwire::{Glob, Tripwire};
