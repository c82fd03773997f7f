//! `Criteria:` lines: what "done" means, each with how it is known — in a task, or in
//! the front matter (`criteria:`) for the whole run.
//!
//! - `execution: COMMAND`: the command passes (a check, like `Verify:`);
//! - `measurement: NAME OP NUMBER[UNIT] by COMMAND`: the command passes and the value it
//!   prints for NAME (`p95: 87ms`, `p95 = 0.087s`) holds against the threshold
//!   (`<`, `<=`, `>`, `>=`, `=`);
//! - `observation: TEXT`: a person confirms it at a gate after the task (the run's: at
//!   the final review), with the evidence shown;
//! - `assumption: TEXT`: recorded, never verified.

use regex::Regex;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Evidence {
    Execution,
    Measurement,
    Observation,
    Assumption,
}

impl Evidence {
    pub fn as_str(self) -> &'static str {
        match self {
            Evidence::Execution => "execution",
            Evidence::Measurement => "measurement",
            Evidence::Observation => "observation",
            Evidence::Assumption => "assumption",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
}

impl Op {
    fn holds(self, value: f64, limit: f64) -> bool {
        match self {
            Op::Lt => value < limit,
            Op::Le => value <= limit,
            Op::Gt => value > limit,
            Op::Ge => value >= limit,
            Op::Eq => (value - limit).abs() <= f64::EPSILON * limit.abs().max(1.0),
        }
    }
}

/// A measurement's threshold: `p95 < 100ms`.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    pub name: String,
    pub op: Op,
    pub op_text: String,
    /// In the unit's base (seconds, bytes, or as written).
    pub limit: f64,
    pub limit_text: String,
}

/// One criterion as read.
#[derive(Debug, Clone, PartialEq)]
pub struct Requirement {
    pub kind: Evidence,
    /// What follows the kind: the command, or the text.
    pub text: String,
    /// The command that shows it (execution, measurement).
    pub command: Option<String>,
    pub threshold: Option<Threshold>,
}

/// A number with an optional unit, in the unit's base: time in seconds, sizes in bytes,
/// anything else as written (the unit must then match exactly).
fn scaled(number: f64, unit: &str) -> Option<(f64, &'static str)> {
    Some(match unit.to_ascii_lowercase().as_str() {
        "" => (number, ""),
        "ns" => (number / 1e9, "s"),
        "us" | "µs" => (number / 1e6, "s"),
        "ms" => (number / 1e3, "s"),
        "s" | "sec" | "secs" => (number, "s"),
        "m" | "min" => (number * 60.0, "s"),
        "b" => (number, "b"),
        "kb" | "kib" => (number * 1024.0, "b"),
        "mb" | "mib" => (number * 1024.0 * 1024.0, "b"),
        "gb" | "gib" => (number * 1024.0 * 1024.0 * 1024.0, "b"),
        "%" => (number, "%"),
        _ => return None,
    })
}

fn number_unit(text: &str) -> Option<(f64, String)> {
    let re = Regex::new(r"^([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-zµ%]*)$").ok()?;
    let c = re.captures(text.trim())?;
    Some((c[1].parse().ok()?, c[2].to_string()))
}

impl Threshold {
    /// The value `output` gives for the name (the last one, when it prints several),
    /// and whether it holds; `None` when the output has no such value.
    pub fn check(&self, output: &str) -> Option<(String, bool)> {
        let re = Regex::new(&format!(
            r"(?i)\b{}\b\s*[:=]?\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-zµ%]*)",
            regex::escape(&self.name)
        ))
        .ok()?;
        let c = re.captures_iter(output).last()?;
        let number: f64 = c[1].parse().ok()?;
        let unit = c[2].to_string();
        let (_, want_unit) = number_unit(&self.limit_text)?;
        let (value, base) = scaled(number, &unit).unwrap_or((number, ""));
        let (_, limit_base) = scaled(1.0, &want_unit).unwrap_or((1.0, ""));
        let seen = format!("{}{unit}", &c[1]);
        if base != limit_base {
            return Some((seen, false));
        }
        Some((seen, self.op.holds(value, self.limit)))
    }
}

impl Requirement {
    /// Reads one `Criteria:` line (`KIND: TEXT`).
    pub fn parse(line: &str) -> Result<Requirement, String> {
        let line = line.trim();
        let (kind, text) = line.split_once(':').ok_or_else(|| {
            format!(
                "`{line}` has no kind; write `execution: COMMAND`, `measurement: NAME < VALUE by COMMAND`, `observation: TEXT` or `assumption: TEXT`"
            )
        })?;
        let text = text.trim().to_string();
        let kind = match kind.trim().to_ascii_lowercase().as_str() {
            "execution" => Evidence::Execution,
            "measurement" => Evidence::Measurement,
            "observation" => Evidence::Observation,
            "assumption" => Evidence::Assumption,
            other => {
                return Err(format!(
                    "`{other}` is not a kind of criterion; use execution, measurement, observation or assumption"
                ));
            }
        };
        if text.is_empty() {
            return Err(format!("`{}:` needs a text", kind.as_str()));
        }
        let (command, threshold) = match kind {
            Evidence::Execution => (Some(text.clone()), None),
            Evidence::Measurement => {
                let (expr, command) = text
                    .split_once(" by ")
                    .or_else(|| text.split_once(" from "))
                    .ok_or_else(|| {
                        format!(
                            "measurement `{text}` names no command: write `NAME < VALUE by COMMAND`"
                        )
                    })?;
                let re = Regex::new(r"^\s*(\S+)\s*(<=|>=|<|>|==|=)\s*(.+?)\s*$")
                    .map_err(|e| e.to_string())?;
                let c = re.captures(expr).ok_or_else(|| {
                    format!("measurement `{expr}` is not `NAME OP VALUE` (e.g. `p95 < 100ms`)")
                })?;
                let (number, unit) = number_unit(&c[3])
                    .ok_or_else(|| format!("measurement `{expr}`: `{}` is not a number", &c[3]))?;
                let (limit, _) = scaled(number, &unit).ok_or_else(|| {
                    format!("measurement `{expr}`: `{unit}` is not a unit agentloop knows (ms, s, MB, %, …)")
                })?;
                let op = match &c[2] {
                    "<" => Op::Lt,
                    "<=" => Op::Le,
                    ">" => Op::Gt,
                    ">=" => Op::Ge,
                    _ => Op::Eq,
                };
                (
                    Some(command.trim().to_string()),
                    Some(Threshold {
                        name: c[1].to_string(),
                        op,
                        op_text: c[2].to_string(),
                        limit,
                        limit_text: c[3].to_string(),
                    }),
                )
            }
            Evidence::Observation | Evidence::Assumption => (None, None),
        };
        if command.as_deref().is_some_and(str::is_empty) {
            return Err(format!("`{}:` needs a command", kind.as_str()));
        }
        Ok(Requirement {
            kind,
            text,
            command,
            threshold,
        })
    }

    /// How it reads in a summary: `p95 < 100ms (by ./bench.sh)`.
    pub fn describe(&self) -> String {
        match (&self.threshold, &self.command) {
            (Some(t), Some(c)) => format!("{} {} {} (by `{c}`)", t.name, t.op_text, t.limit_text),
            (None, Some(c)) => format!("`{c}` passes"),
            _ => self.text.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_reads() {
        let r = Requirement::parse("execution: cargo test").unwrap();
        assert_eq!(
            (r.kind, r.command.as_deref()),
            (Evidence::Execution, Some("cargo test"))
        );
        let r = Requirement::parse("measurement: p95 < 100ms by ./bench.sh --quick").unwrap();
        assert_eq!(r.command.as_deref(), Some("./bench.sh --quick"));
        let t = r.threshold.unwrap();
        assert_eq!((t.name.as_str(), t.op, t.limit), ("p95", Op::Lt, 0.1));
        assert_eq!(
            Requirement::parse("Observation: the page reads well")
                .unwrap()
                .kind,
            Evidence::Observation
        );
        assert!(Requirement::parse("assumption:").is_err());
        assert!(Requirement::parse("guess: it works").is_err());
        assert!(Requirement::parse("measurement: p95 < 100ms").is_err());
        assert!(Requirement::parse("measurement: p95 < fast by x").is_err());
        assert!(Requirement::parse("measurement: p95 < 3 parsecs by x").is_err());
    }

    #[test]
    fn a_threshold_reads_the_value_the_command_printed() {
        let t = Requirement::parse("measurement: p95 < 100ms by b")
            .unwrap()
            .threshold
            .unwrap();
        assert_eq!(t.check("warmup\np95: 87ms\n"), Some(("87ms".into(), true)));
        assert_eq!(t.check("p95 = 0.2s"), Some(("0.2s".into(), false)));
        assert_eq!(
            t.check("p95: 1ms\np95: 130ms"),
            Some(("130ms".into(), false))
        );
        assert_eq!(t.check("p50: 3ms"), None);
        // A value in another kind of unit never holds.
        assert_eq!(t.check("p95: 50MB"), Some(("50MB".into(), false)));
        let pct = Requirement::parse("measurement: coverage >= 80% by c")
            .unwrap()
            .threshold
            .unwrap();
        assert_eq!(pct.check("coverage: 83.5%"), Some(("83.5%".into(), true)));
    }
}
