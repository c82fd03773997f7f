//! A plan that cannot be used, and where.

/// A plan that cannot be used, with where and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {message}", line = line.map(|l| l.to_string()).unwrap_or_default())]
pub struct PlanError {
    pub file: String,
    /// `None` for errors about the whole file.
    pub line: Option<usize>,
    pub message: String,
    pub hint: Option<String>,
}

impl PlanError {
    pub(crate) fn at(file: &str, line: usize, message: impl Into<String>) -> Self {
        PlanError {
            file: file.to_string(),
            line: Some(line),
            message: message.into(),
            hint: None,
        }
    }
    pub(crate) fn whole(file: &str, message: impl Into<String>) -> Self {
        PlanError {
            file: file.to_string(),
            line: None,
            message: message.into(),
            hint: None,
        }
    }
    pub(crate) fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// The message as a person reads it: `file:line: message` (or `file: message`).
    pub fn located(&self) -> String {
        match self.line {
            Some(l) => format!("{}:{}: {}", self.file, l, self.message),
            None => format!("{}: {}", self.file, self.message),
        }
    }
}
