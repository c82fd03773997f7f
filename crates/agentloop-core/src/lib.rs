//! agentloop's core: plan, config, journal, state fold, policy, prompts, signals and
//! the verification runner. It knows nothing of HTTP, terminals or any particular
//! agent; the policy does no I/O at all.

pub mod config;
pub mod event;
pub mod fsutil;
pub mod git;
pub mod import;
pub mod journal;
pub mod plan;
pub mod policy;
pub mod progress;
pub mod prompt;
pub mod redact;
pub mod signals;
pub mod state;
pub mod supervise;
pub mod verify;
pub mod workspace;
