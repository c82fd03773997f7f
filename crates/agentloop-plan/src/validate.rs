//! Checks a plan as a whole: ids, dependencies and cycles.

use std::collections::HashMap;

use crate::error::PlanError;
use crate::model::Plan;

impl Plan {
    /// Checks ids, dependencies and cycles; a plan needs a task.
    pub fn validate(&self, file: &str) -> Result<(), PlanError> {
        if self.tasks.is_empty() {
            return Err(Plan::no_tasks(file));
        }
        self.validate_growing(file)
    }

    /// The error of a plan without a task.
    pub fn no_tasks(file: &str) -> PlanError {
        PlanError::whole(file, "the plan has no tasks").hint(
            "add a task as a level-2 heading: `## T1: Write the parser`, or let planners add them: [run] planners = 1",
        )
    }

    /// Checks ids, dependencies and cycles of a plan that planners grow (`[run]
    /// planners`): it may start with its goal alone.
    pub fn validate_growing(&self, file: &str) -> Result<(), PlanError> {
        let mut seen: HashMap<&str, usize> = HashMap::new();
        let mut folded: HashMap<String, (&str, usize)> = HashMap::new();
        for t in &self.tasks {
            if let Some((other, line)) = folded.get(&t.id.to_lowercase())
                && *other != t.id
            {
                return Err(PlanError::at(
                    file,
                    t.line,
                    format!(
                        "task id \"{}\" differs from \"{other}\" (line {line}) only in case",
                        t.id
                    ),
                )
                .hint("ids are compared exactly; give the two tasks ids that differ in more than case"));
            }
            folded.insert(t.id.to_lowercase(), (t.id.as_str(), t.line));
            if let Some(first) = seen.insert(t.id.as_str(), t.line) {
                return Err(PlanError::at(
                    file,
                    t.line,
                    format!(
                        "duplicate task id \"{}\" (first defined on line {first})",
                        t.id
                    ),
                )
                .hint("give every task its own id"));
            }
        }
        for t in &self.tasks {
            for d in &t.depends {
                if d == &t.id {
                    return Err(PlanError::at(
                        file,
                        t.line,
                        format!("task \"{}\" depends on itself", t.id),
                    ));
                }
                if !seen.contains_key(d.as_str()) {
                    let hint = match folded.get(&d.to_lowercase()) {
                        Some((id, _)) => {
                            format!("ids are compared exactly: did you mean \"{id}\"?")
                        }
                        None => format!("known tasks: {}", self.ids().join(", ")),
                    };
                    return Err(PlanError::at(
                        file,
                        t.line,
                        format!("task \"{}\" depends on unknown task \"{d}\"", t.id),
                    )
                    .hint(hint));
                }
            }
            if let Some(v) = t.verify.iter().find(|v| is_placeholder(v)) {
                return Err(PlanError::at(
                    file,
                    t.line,
                    format!("task \"{}\": `Verify: {v}` always passes, so it checks nothing", t.id),
                )
                .hint("replace it with a command that fails until the task is done, e.g. `cargo test parser` or `sh tests/t1.sh`"));
            }
        }
        if let Some(cycle) = self.find_cycle() {
            let first = self.task(&cycle[0]).map(|t| t.line).unwrap_or(0);
            return Err(PlanError::at(
                file,
                first,
                format!("dependency cycle: {}", cycle.join(" → ")),
            )
            .hint("remove one of these dependencies"));
        }
        Ok(())
    }

    /// A cycle as a list of ids whose last element equals the first, if any.
    fn find_cycle(&self) -> Option<Vec<String>> {
        let index: HashMap<&str, usize> = self
            .tasks
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id.as_str(), i))
            .collect();
        // 0 = unvisited, 1 = on stack, 2 = done. Iterative DFS so 10,000-task chains do not overflow.
        let mut color = vec![0u8; self.tasks.len()];
        for root in 0..self.tasks.len() {
            if color[root] != 0 {
                continue;
            }
            let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
            color[root] = 1;
            while let Some(&mut (node, ref mut next)) = stack.last_mut() {
                let deps = &self.tasks[node].depends;
                if *next < deps.len() {
                    let d = index[deps[*next].as_str()];
                    *next += 1;
                    match color[d] {
                        0 => {
                            color[d] = 1;
                            stack.push((d, 0));
                        }
                        1 => {
                            let pos = stack.iter().position(|&(n, _)| n == d).unwrap_or(0);
                            let mut cycle: Vec<String> = stack[pos..]
                                .iter()
                                .map(|&(n, _)| self.tasks[n].id.clone())
                                .collect();
                            cycle.push(self.tasks[d].id.clone());
                            return Some(cycle);
                        }
                        _ => {}
                    }
                } else {
                    color[node] = 2;
                    stack.pop();
                }
            }
        }
        None
    }
}

/// A `Verify:` that cannot fail: an `echo` alone (the placeholder `init` writes).
fn is_placeholder(command: &str) -> bool {
    let c = command.trim();
    (c == "echo" || c.starts_with("echo "))
        && !["|", ">", "<", "&&", "||", ";", "$(", "`"]
            .iter()
            .any(|op| c.contains(op))
}
