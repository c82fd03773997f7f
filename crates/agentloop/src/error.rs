//! The one error type of the command line: a message, a kind that picks the exit code,
//! and a hint telling the person what to do next.

use agentloop_config::ConfigError;
use agentloop_journal::JournalError;
use agentloop_plan::PlanError;
use agentloop_workspace::WorkspaceError;

/// Process exit codes, as documented in `--help` and the README.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ExitKind {
    /// The plan completed and every task was verified.
    Completed = 0,
    Internal = 1,
    /// Usage, configuration or plan errors.
    BadInput = 2,
    /// A budget or cap was reached.
    Budget = 3,
    /// A breaker tripped (the run is blocked on it).
    Breaker = 4,
    /// Waiting for a person: a gate or a blocked task.
    Waiting = 5,
    /// Stopped on request.
    Stopped = 6,
    /// A service the run needs failed (the journal's store): nothing about the run or
    /// its input is wrong; it goes on once the service is back.
    Infrastructure = 7,
    Interrupted = 130,
}

#[derive(Debug)]
pub struct CliError {
    pub kind: ExitKind,
    pub message: String,
    pub hint: Option<String>,
}

impl CliError {
    pub fn user(message: impl Into<String>) -> Self {
        CliError {
            kind: ExitKind::BadInput,
            message: message.into(),
            hint: None,
        }
    }
    pub fn internal(message: impl Into<String>) -> Self {
        CliError {
            kind: ExitKind::Internal,
            message: message.into(),
            hint: None,
        }
    }
    /// Ends the command with nothing more to say (the reader of stdout went away).
    pub fn quiet() -> Self {
        CliError {
            kind: ExitKind::Completed,
            message: String::new(),
            hint: None,
        }
    }
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
    pub fn exit_kind(&self) -> ExitKind {
        self.kind
    }
}

impl From<PlanError> for CliError {
    fn from(e: PlanError) -> Self {
        CliError {
            kind: ExitKind::BadInput,
            message: e.located(),
            hint: e.hint,
        }
    }
}

impl From<ConfigError> for CliError {
    fn from(e: ConfigError) -> Self {
        CliError::user(e.to_string())
            .hint("`agentloop config show` prints every setting and where it comes from")
    }
}

impl From<JournalError> for CliError {
    fn from(e: JournalError) -> Self {
        let hint = match &e {
            JournalError::UnknownVersion { .. } => {
                Some("this journal was written by a newer agentloop; upgrade to read it")
            }
            JournalError::Corrupt { .. } => Some(
                "the journal was changed by something other than agentloop; `agentloop journal verify` checks it",
            ),
            _ => None,
        };
        let kind = match e {
            JournalError::Io { .. } => ExitKind::Internal,
            JournalError::Store { .. } => ExitKind::Infrastructure,
            _ => ExitKind::BadInput,
        };
        CliError {
            kind,
            message: e.to_string(),
            hint: hint.map(String::from),
        }
    }
}

impl From<WorkspaceError> for CliError {
    fn from(e: WorkspaceError) -> Self {
        match e {
            WorkspaceError::Journal(j) => j.into(),
            WorkspaceError::NoRuns(_) => {
                CliError::user(e.to_string()).hint("start one with `agentloop run`, or `agentloop demo` to see one")
            }
            WorkspaceError::UnknownRun(_) | WorkspaceError::AmbiguousRun(..) => {
                CliError::user(e.to_string()).hint("`agentloop runs` lists the runs of this project")
            }
            WorkspaceError::Locked { .. } | WorkspaceError::HeldElsewhere { .. } => CliError::user(e.to_string())
                .hint("control it from here with `agentloop pause|stop|steer …`, or wait for that driver to end"),
            WorkspaceError::Refused { .. } => CliError::user(e.to_string()).hint(
                "a person's request comes from outside the agent: another terminal, the dashboard, or the plugin's slash command typed in the session; the attempt is in the run's journal",
            ),
            WorkspaceError::CompletedMeanwhile(_) => {
                CliError::user(e.to_string()).hint("start a new run with `agentloop run`")
            }
            WorkspaceError::Io { .. } => CliError::internal(e.to_string()),
            WorkspaceError::StoreUnreachable { .. } => CliError {
                kind: ExitKind::Infrastructure,
                message: e.to_string(),
                hint: Some("`agentloop resume` once the store answers again; `agentloop status` reads this machine's copy meanwhile".into()),
            },
            WorkspaceError::Fold { .. }
            | WorkspaceError::BadRunId(_)
            | WorkspaceError::RunExists(_) => CliError::user(e.to_string()),
        }
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        CliError::internal(e.to_string())
    }
}
