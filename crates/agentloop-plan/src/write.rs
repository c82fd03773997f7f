//! A plan back to PLAN.md text; parsing the result gives back an equal plan (apart
//! from line numbers).

use std::fmt::Write as _;

use crate::model::{GatePoint, Plan, Task};

impl Plan {
    /// The plan as PLAN.md text.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        if !self.settings.is_empty() || !self.must_not.is_empty() || !self.criteria.is_empty() {
            out.push_str("---\n");
            // JSON is valid YAML; one key per line keeps it readable.
            for (k, v) in &self.settings {
                let _ = writeln!(out, "{k}: {v}");
            }
            if !self.must_not.is_empty() {
                let _ = writeln!(out, "mustNot: {}", serde_json::json!(self.must_not));
            }
            if !self.criteria.is_empty() {
                let _ = writeln!(out, "criteria: {}", serde_json::json!(self.criteria));
            }
            out.push_str("---\n\n");
        }
        let _ = writeln!(out, "# {}\n", self.title);
        if !self.goal.is_empty() {
            let _ = writeln!(out, "{}\n", self.goal);
        }
        for t in &self.tasks {
            out.push_str(&t.to_markdown());
            out.push('\n');
        }
        out
    }
}

impl Task {
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "## {}: {}\n", self.id, self.title);
        if !self.depends.is_empty() {
            let _ = writeln!(out, "Depends: {}", self.depends.join(", "));
        }
        for v in &self.verify {
            let _ = writeln!(out, "Verify: {v}");
        }
        if !self.tests.is_empty() {
            let names: Vec<String> = self.tests.iter().map(|t| t.to_plan()).collect();
            let _ = writeln!(out, "Tests: {}", names.join(", "));
        }
        if !self.holdout.is_empty() {
            let _ = writeln!(out, "Holdout: {}", self.holdout.join(", "));
        }
        if let Some(g) = self.gate {
            let _ = writeln!(
                out,
                "Gate: {}",
                if g == GatePoint::Before {
                    "before"
                } else {
                    "after"
                }
            );
        }
        if let Some(a) = &self.agent {
            let _ = writeln!(out, "Agent: {a}");
        }
        if let Some(m) = self.mode {
            let _ = writeln!(out, "Mode: {m}");
        }
        if !self.scope.is_empty() {
            let _ = writeln!(out, "Scope: {}", self.scope.join(", "));
        }
        if let Some(n) = self.max_iterations {
            let _ = writeln!(out, "Max-iterations: {n}");
        }
        if self.milestone {
            out.push_str("Milestone: yes\n");
        }
        for m in &self.must_not {
            let _ = writeln!(out, "Must-not: {m}");
        }
        for c in &self.criteria {
            let _ = writeln!(out, "Criteria: {c}");
        }
        if let Some(c) = self.reversibility {
            let _ = writeln!(out, "Reversibility: {}", c.as_str());
        }
        let has_fields = !self.depends.is_empty()
            || !self.must_not.is_empty()
            || !self.criteria.is_empty()
            || self.reversibility.is_some()
            || !self.verify.is_empty()
            || !self.tests.is_empty()
            || !self.holdout.is_empty()
            || self.gate.is_some()
            || self.agent.is_some()
            || self.mode.is_some()
            || !self.scope.is_empty()
            || self.max_iterations.is_some()
            || self.milestone;
        if has_fields {
            out.push('\n');
        }
        if !self.body.is_empty() {
            let _ = writeln!(out, "{}\n", self.body);
        }
        if !self.acceptance.is_empty() {
            out.push_str("Acceptance:\n");
            for c in &self.acceptance {
                let _ = writeln!(out, "- [{}] {}", if c.checked { "x" } else { " " }, c.text);
            }
        }
        out
    }
}
