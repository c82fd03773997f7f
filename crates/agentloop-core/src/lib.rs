//! agentloop's core: plan, config, journal, state fold, policy, prompts, signals and
//! the verification runner. It knows nothing of HTTP, terminals or any particular
//! agent; the policy does no I/O at all.
//!
//! Layers, from the bottom: `values`, `words`, `paths`, `clock`, `fsutil`, `redact`,
//! `failure`, `signals`, `evidence` → `plan` → `config` → `journal` → `policy`; `exec` and `workspace` are the
//! effects beside the policy.

pub mod clock;
pub mod config;
pub mod evidence;
pub mod exec;
pub mod failure;
pub mod fsutil;
pub mod journal;
pub mod paths;
pub mod plan;
pub mod policy;
pub mod redact;
pub mod reports;
pub mod signals;
pub mod values;
pub mod words;
pub mod workspace;

#[cfg(test)]
pub(crate) mod testing;
