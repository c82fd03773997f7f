//! `.agentloop/`: the runs of a project, each in its own directory with its journal,
//! derived files, iteration records and the lock held by its one driver.

mod error;
mod lock;
pub mod origin;
mod queue;
mod registry;
mod run_dir;
mod runs;
mod settle;

pub use error::WorkspaceError;
pub use lock::DriverLock;
pub use queue::{Entry, EntryState, Queue};
pub use registry::{registered_runs, registry_path};
pub use run_dir::{Loaded, RunDir, local_user};
pub use runs::{Workspace, baseline, new_run_id, valid_run_id};
