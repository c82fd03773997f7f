//! What can go wrong with a project's runs, naming the run or the path.

use std::path::{Path, PathBuf};

use agentloop_journal::{FoldError, JournalError};

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
    #[error("run {run} is driven elsewhere: {message}")]
    HeldElsewhere { run: String, message: String },
    #[error("run {run} cannot be driven now: its store ({store}): {message}")]
    StoreUnreachable {
        run: String,
        store: String,
        message: String,
    },
    #[error("refused: {why}")]
    Refused { why: String },
    #[error("run {0} completed while the request was on its way: nothing would read it")]
    CompletedMeanwhile(String),
}

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> WorkspaceError + '_ {
    move |source| WorkspaceError::Io {
        path: path.to_path_buf(),
        source,
    }
}
