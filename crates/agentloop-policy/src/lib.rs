//! The policy: a pure function from the run's state to the next action. No I/O.
//!
//! The driver asks `next_action` after every event it records and does what it is told:
//! record a decision, run an iteration, run verification, wait for a person, or exit.
mod action;
mod cycles;
mod diffgates;
pub mod evidence;
mod judge;
mod ladder;
mod next;
pub mod planning;
mod prompt;
mod replan;
pub mod review;
mod schedule;
mod ship;
mod signature;
pub mod told;
mod tripwire;
mod validate;

pub use action::{Action, IterationPlan, ShipStep, WaitReason};
pub use cycles::{
    done_in_cycle, parse as parse_judgement, prompt as judge_prompt, rule as cycle_rule,
};
pub use diffgates::{
    DiffInput, FileDiff, enabled as diff_gate_enabled, parse_unified, reviewers as gate_reviewers,
    triggered, triggered_interface, unread,
};
pub use ladder::{attempt_of, attempt_words, rung_budget, standing, task_bound};
pub use next::{next_action, step};
pub use prompt::{DEBUG_LOG, build as build_prompt, of_iteration as prompt_of_iteration};
pub use replan::review_replan;
pub use schedule::{Pick, pick, schedule};
pub use ship::{next_unit, to_release};
pub use tripwire::{commands as tripwire_commands, tripped, wires_for};
