//! `[run] cycle`: how long a cycle of a long run is (a number of tasks, or a time).

use serde::{Deserialize, Serialize};

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
            Cycle::Tasks(n) => agentloop_ground::words::plural(n as usize, "task", "tasks"),
            Cycle::Every(ms) => {
                humantime::format_duration(std::time::Duration::from_millis(ms)).to_string()
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
