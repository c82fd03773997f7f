//! Cycles (`[run] cycle`): a long run judged at the end of each — every N tasks done,
//! or every so long — by a rule or an agent, which says go on, stop, or restart the
//! workers fresh from the integration branch (against drift). The verdict's record,
//! and how it moves the state.

use serde::{Deserialize, Serialize};

use super::state::RunState;
use crate::words::add_usd;

/// How long a cycle is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cycle {
    /// Until this many more tasks are done.
    Tasks(u32),
    /// This many milliseconds of the run's time.
    Every(u64),
}

impl Cycle {
    /// `"10 tasks"`, `"1 task"`, or a duration (`"1h"`, `"30m"`).
    pub fn parse(s: &str) -> Result<Cycle, String> {
        let s = s.trim();
        let words: Vec<&str> = s.split_whitespace().collect();
        if let [n, unit] = words.as_slice()
            && matches!(*unit, "task" | "tasks")
        {
            return match n.parse::<u32>() {
                Ok(n) if n > 0 => Ok(Cycle::Tasks(n)),
                _ => Err(format!("`{s}`: the number of tasks must be 1 or more")),
            };
        }
        match humantime::parse_duration(s) {
            Ok(d) if d.as_secs() >= 1 => Ok(Cycle::Every(d.as_millis() as u64)),
            Ok(_) => Err(format!("`{s}`: a cycle lasts at least 1s")),
            Err(_) => Err(format!(
                "`{s}` is neither a number of tasks (`10 tasks`) nor a duration (`1h`)"
            )),
        }
    }

    pub fn describe(self) -> String {
        match self {
            Cycle::Tasks(n) => crate::words::plural(n as usize, "task", "tasks"),
            Cycle::Every(ms) => {
                humantime::format_duration(std::time::Duration::from_millis(ms)).to_string()
            }
        }
    }
}

/// A judge's verdict at the end of a cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CycleVerdict {
    GoOn,
    Stop,
    /// The tasks not done start again from the integration branch's head, their work
    /// so far set aside (kept under `refs/agentloop/RUN/attempts/`).
    Restart,
}

impl CycleVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            CycleVerdict::GoOn => "go on",
            CycleVerdict::Stop => "stop",
            CycleVerdict::Restart => "restart fresh",
        }
    }
}

/// The end of cycle `cycle`, judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CycleJudged {
    pub cycle: u32,
    pub verdict: CycleVerdict,
    pub reasons: Vec<String>,
    /// `rule`, or the judging agent's name.
    pub by: String,
    #[serde(default)]
    pub cost_usd: f64,
}

/// Where the run is in its cycles.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cycles {
    /// Cycles judged so far (the current one is the next).
    #[serde(default)]
    pub judged: u32,
    /// When the current cycle began (Unix ms; 0: when the run was created).
    #[serde(default)]
    pub since_ms: u64,
    /// Tasks done when it began.
    #[serde(default)]
    pub done_at_start: u32,
    /// The last verdict, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<(CycleVerdict, Vec<String>)>,
}

impl Cycles {
    pub fn is_idle(&self) -> bool {
        *self == Cycles::default()
    }
}

impl RunState {
    pub(super) fn cycle_judged(&mut self, j: &CycleJudged, at_ms: u64) {
        self.cost_usd = add_usd(self.cost_usd, j.cost_usd);
        self.cycles.judged = self.cycles.judged.max(j.cycle);
        self.cycles.since_ms = at_ms;
        self.cycles.done_at_start = self.done_count() as u32;
        self.cycles.last = Some((j.verdict, j.reasons.clone()));
        if j.verdict == CycleVerdict::Restart {
            for t in &mut self.tasks {
                if !t.status.is_settled() {
                    t.fresh_start = true;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cycle_is_a_number_of_tasks_or_a_duration() {
        assert_eq!(Cycle::parse("10 tasks"), Ok(Cycle::Tasks(10)));
        assert_eq!(Cycle::parse(" 1 task "), Ok(Cycle::Tasks(1)));
        assert_eq!(Cycle::parse("1h"), Ok(Cycle::Every(3_600_000)));
        for bad in ["0 tasks", "ten tasks", "forever", "0s", ""] {
            assert!(Cycle::parse(bad).is_err(), "{bad}");
        }
    }
}
