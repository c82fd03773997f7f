//! `Must-not:` tripwires in the journal: what a check of an iteration found. How a
//! person's answer at the tripwire gate moves the state is in `control`.

use serde::{Deserialize, Serialize};

/// A tripwire the agent hit, with what shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TripHit {
    /// The `Must-not:` line.
    pub wire: String,
    /// The file and line, the command's failure, or the command seen.
    pub evidence: String,
}

/// The open iteration's tripwire check.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TripCheck {
    pub hits: Vec<TripHit>,
    /// Nothing hit, or a person accepted the hits.
    pub settled: bool,
    /// A person rejected the hits (the note).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected: Option<String>,
}

/// The hits as one line each, for messages and digests.
pub fn hits_words(hits: &[TripHit]) -> String {
    hits.iter()
        .map(|h| format!("`{}` ({})", h.wire, h.evidence))
        .collect::<Vec<_>>()
        .join("; ")
}
