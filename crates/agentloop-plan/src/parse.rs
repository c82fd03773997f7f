//! PLAN.md text to a `Plan`. The syntax is documented in `docs/PLAN.md`. Parsing is
//! strict: every error names the file, the line and what to do, and nothing is guessed.

use std::collections::BTreeMap;
use std::path::Path;

use super::front::{front_lines, linear, parse_front_matter, proceed};
use crate::error::PlanError;
use crate::model::{Criterion, GatePoint, Plan, Task};

/// The longest line a plan may have, in bytes.
pub const MAX_LINE_BYTES: usize = 64 * 1024;
/// The largest plan file, in bytes.
pub const MAX_PLAN_BYTES: usize = 16 * 1024 * 1024;

impl Plan {
    /// Reads and validates a plan file.
    pub fn load(path: &Path) -> Result<Plan, PlanError> {
        Plan::load_named(path, &path.display().to_string())
    }

    /// Like [`Plan::load`], naming the file `name` in messages.
    pub fn load_named(path: &Path, name: &str) -> Result<Plan, PlanError> {
        let plan = Plan::load_growing(path, name)?;
        plan.validate(name)?;
        Ok(plan)
    }

    /// Like [`Plan::load_named`], a plan without a task accepted (planners grow it).
    pub fn load_growing(path: &Path, name: &str) -> Result<Plan, PlanError> {
        let name = name.to_string();
        let bytes = std::fs::read(path).map_err(|e| {
            PlanError::whole(&name, format!("cannot read the plan: {e}"))
                .hint("create one with `agentloop init`, or name the plan file: `agentloop run path/to/PLAN.md`")
        })?;
        let text = Plan::text_of(&name, &bytes)?;
        Plan::parse_unchecked(&name, &text).and_then(|p| {
            p.validate_growing(&name)?;
            Ok(p)
        })
    }

    /// Parses plan bytes; `file` is only used in messages.
    pub fn parse_bytes(file: &str, bytes: &[u8]) -> Result<Plan, PlanError> {
        let text = Plan::text_of(file, bytes)?;
        Plan::parse(file, &text)
    }

    /// A plan file's bytes as text: within the size limit, UTF-8.
    fn text_of(file: &str, bytes: &[u8]) -> Result<String, PlanError> {
        if bytes.len() > MAX_PLAN_BYTES {
            return Err(PlanError::whole(
                file,
                format!(
                    "the plan is {} bytes; the limit is {MAX_PLAN_BYTES}",
                    bytes.len()
                ),
            ));
        }
        let text = std::str::from_utf8(bytes).map_err(|e| {
            let line = bytes[..e.valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count()
                + 1;
            PlanError::at(
                file,
                line,
                format!("not valid UTF-8 (byte {})", e.valid_up_to()),
            )
            .hint("save the plan as UTF-8")
        })?;
        Ok(text.to_string())
    }

    pub fn parse(file: &str, text: &str) -> Result<Plan, PlanError> {
        let plan = Plan::parse_unchecked(file, text)?;
        plan.validate(file)?;
        Ok(plan)
    }

    /// Parses a plan without checking it as a whole (its ids, dependencies and
    /// cycles): a fragment of tasks meant to join another plan.
    pub fn parse_unchecked(file: &str, text: &str) -> Result<Plan, PlanError> {
        // Editors on some systems start UTF-8 files with a byte-order mark.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        if let Some(at) = text.find('\0') {
            let line = text[..at].matches('\n').count() + 1;
            return Err(PlanError::at(file, line, "the plan contains a NUL byte")
                .hint("a plan is text: save it without NUL bytes"));
        }
        let lines: Vec<&str> = text
            .split('\n')
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
            .collect();
        for (i, l) in lines.iter().enumerate() {
            if l.len() > MAX_LINE_BYTES {
                return Err(PlanError::at(
                    file,
                    i + 1,
                    format!(
                        "line is {} bytes long; the limit is {MAX_LINE_BYTES}",
                        l.len()
                    ),
                ));
            }
        }
        let mut i = 0;
        let mut settings = parse_front_matter(file, &lines, &mut i)?;
        let must_not = front_lines(
            file,
            &mut settings,
            &["mustNot", "must_not", "must-not"],
            |t| crate::tripwire::Tripwire::parse(t).map(|_| ()),
        )?;
        let criteria = front_lines(file, &mut settings, &["criteria"], |t| {
            crate::criteria::Requirement::parse(t).map(|_| ())
        })?;
        proceed(file, &mut settings)?;
        linear(file, &mut settings)?;

        // Title.
        let mut title = None;
        while i < lines.len() {
            let l = lines[i].trim();
            i += 1;
            if l.is_empty() {
                continue;
            }
            if let Some(t) = l.strip_prefix("# ") {
                title = Some(t.trim().to_string());
                break;
            }
            return Err(PlanError::at(file, i, "expected the plan's `# Title` line")
                .hint("a plan starts with `# Title`, then an optional goal, then `## ID: Title` tasks"));
        }
        let title = title.ok_or_else(|| {
            PlanError::whole(file, "the plan has no `# Title` line")
                .hint("start the plan with `# <title>`")
        })?;

        // Goal: everything up to the first task heading.
        let mut goal = Vec::new();
        while i < lines.len() && !is_task_heading(lines[i]) {
            goal.push(lines[i]);
            i += 1;
        }
        let goal = goal.join("\n").trim().to_string();

        let mut tasks = Vec::new();
        while i < lines.len() {
            let start = i;
            i += 1;
            while i < lines.len() && !is_task_heading(lines[i]) {
                i += 1;
            }
            tasks.push(parse_task(file, &lines[start..i], start + 1)?);
        }
        let plan = Plan {
            title,
            goal,
            settings,
            shaped: Default::default(),
            must_not,
            criteria,
            tasks,
        };
        Ok(plan)
    }
}

fn is_task_heading(line: &str) -> bool {
    line.starts_with("## ")
}

fn parse_task(file: &str, lines: &[&str], first_line: usize) -> Result<Task, PlanError> {
    let heading = lines[0].trim_start_matches("## ").trim();
    let Some((id, title)) = heading.split_once(':') else {
        return Err(PlanError::at(
            file,
            first_line,
            format!("task heading \"{heading}\" has no id"),
        )
        .hint("write task headings as `## ID: Title`, for example `## T1: Add the parser`"));
    };
    let id = id.trim();
    let title = title.trim();
    if id.is_empty()
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(PlanError::at(
            file,
            first_line,
            format!("task id \"{id}\" may only use letters, digits, `-` and `_`"),
        ));
    }
    if title.is_empty() {
        return Err(PlanError::at(
            file,
            first_line,
            format!("task \"{id}\" has no title"),
        ));
    }
    let mut task = Task::new(id, title);
    task.line = first_line;
    let mut body: Vec<&str> = Vec::new();
    let mut in_fence = false;
    let mut in_acceptance = false;
    let mut seen_fields: BTreeMap<&'static str, usize> = BTreeMap::new();
    for (off, raw) in lines.iter().enumerate().skip(1) {
        let n = first_line + off;
        let trimmed = raw.trim();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            in_acceptance = false;
            body.push(raw);
            continue;
        }
        if in_fence {
            body.push(raw);
            continue;
        }
        if in_acceptance {
            if let Some(c) = parse_checkbox(trimmed) {
                task.acceptance.push(c);
                continue;
            }
            if trimmed.is_empty() {
                continue;
            }
            in_acceptance = false;
        }
        let Some((key, value)) = field(raw) else {
            body.push(raw);
            continue;
        };
        let once =
            |seen: &mut BTreeMap<&'static str, usize>, k: &'static str| -> Result<(), PlanError> {
                if let Some(prev) = seen.insert(k, n) {
                    return Err(PlanError::at(
                        file,
                        n,
                        format!("task \"{id}\" has a second `{k}:` line (first on line {prev})"),
                    )
                    .hint("merge them into one line"));
                }
                Ok(())
            };
        match key {
            "depends" => {
                once(&mut seen_fields, "Depends")?;
                task.depends = list(value);
                if task.depends.iter().any(|d| d.eq_ignore_ascii_case("none"))
                    && task.depends.len() == 1
                {
                    task.depends.clear();
                }
            }
            "verify" => {
                if value.is_empty() {
                    return Err(PlanError::at(file, n, "`Verify:` needs a command"));
                }
                task.verify.push(value.to_string());
            }
            "holdout" => {
                for name in list(value) {
                    if name.is_empty()
                        || name.starts_with('.')
                        || !name
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                    {
                        return Err(PlanError::at(
                            file,
                            n,
                            format!(
                                "`Holdout: {name}`: a held-out check's name is letters, digits, `-`, `_` and `.` (its file is NAME.sh in `[verify] holdout`)"
                            ),
                        ));
                    }
                    if !task.holdout.contains(&name) {
                        task.holdout.push(name);
                    }
                }
            }
            "tests" => {
                let names = agentloop_evidence::TestName::parse_list(value)
                    .map_err(|e| PlanError::at(file, n, format!("Tests: {e}")))?;
                for name in names {
                    if !task.tests.contains(&name) {
                        task.tests.push(name);
                    }
                }
            }
            "gate" => {
                once(&mut seen_fields, "Gate")?;
                task.gate = Some(match value.to_ascii_lowercase().as_str() {
                    "before" => GatePoint::Before,
                    "after" => GatePoint::After,
                    other => {
                        return Err(PlanError::at(
                            file,
                            n,
                            format!("unknown gate `{other}`; expected before or after"),
                        ));
                    }
                });
            }
            "agent" => {
                once(&mut seen_fields, "Agent")?;
                if value.is_empty() {
                    return Err(PlanError::at(file, n, "`Agent:` needs an agent name"));
                }
                task.agent = Some(value.to_string());
            }
            "mode" => {
                once(&mut seen_fields, "Mode")?;
                let mode: crate::model::Mode = value
                    .parse()
                    .map_err(|e: String| PlanError::at(file, n, e))?;
                if mode == crate::model::Mode::Swarm {
                    return Err(PlanError::at(
                        file,
                        n,
                        "swarm is a run's mode (`--mode swarm` or `[run] workers`), not a task's",
                    ));
                }
                task.mode = Some(mode);
            }
            "scope" => {
                once(&mut seen_fields, "Scope")?;
                task.scope = list(value);
            }
            "max-iterations" => {
                once(&mut seen_fields, "Max-iterations")?;
                let v: u32 = value
                    .parse()
                    .ok()
                    .filter(|v| (1..=1000).contains(v))
                    .ok_or_else(|| {
                        PlanError::at(
                            file,
                            n,
                            format!(
                                "`Max-iterations: {value}` must be a whole number from 1 to 1000"
                            ),
                        )
                    })?;
                task.max_iterations = Some(v);
            }
            "milestone" => {
                once(&mut seen_fields, "Milestone")?;
                task.milestone = match value.to_ascii_lowercase().as_str() {
                    "yes" | "true" => true,
                    "no" | "false" => false,
                    other => {
                        return Err(PlanError::at(
                            file,
                            n,
                            format!("`Milestone: {other}` must be yes or no"),
                        ));
                    }
                };
            }
            "reversibility" => {
                once(&mut seen_fields, "Reversibility")?;
                task.reversibility = Some(crate::model::Class::parse(value).ok_or_else(|| {
                    PlanError::at(
                        file,
                        n,
                        format!("`Reversibility: {value}` must be 1, 2A or 2B"),
                    )
                })?);
            }
            "criteria" => {
                crate::criteria::Requirement::parse(value)
                    .map_err(|e| PlanError::at(file, n, format!("Criteria: {e}")))?;
                task.criteria.push(value.to_string());
            }
            "must-not" => {
                crate::tripwire::Tripwire::parse(value)
                    .map_err(|e| PlanError::at(file, n, format!("Must-not: {e}")))?;
                task.must_not.push(value.to_string());
            }
            "acceptance" => {
                once(&mut seen_fields, "Acceptance")?;
                in_acceptance = true;
                if !value.is_empty() {
                    task.acceptance.push(Criterion {
                        text: value.to_string(),
                        checked: false,
                    });
                }
            }
            _ => body.push(raw),
        }
    }
    if in_fence {
        return Err(PlanError::at(
            file,
            first_line,
            format!("task \"{id}\" has a code fence that is never closed"),
        ));
    }
    task.body = body.join("\n").trim().to_string();
    Ok(task)
}

/// `Key: value` field lines; the key is matched without regard to case.
fn field(line: &str) -> Option<(&'static str, &str)> {
    const KEYS: [&str; 14] = [
        "depends",
        "verify",
        "tests",
        "holdout",
        "gate",
        "agent",
        "mode",
        "scope",
        "max-iterations",
        "milestone",
        "acceptance",
        "must-not",
        "criteria",
        "reversibility",
    ];
    let (k, v) = line.split_once(':')?;
    if k.starts_with(char::is_whitespace) {
        return None;
    }
    // `mustNot:` and `Must not:` are `Must-not:` too.
    let k = if ["mustnot", "must not", "must_not"].contains(&k.to_ascii_lowercase().as_str()) {
        "must-not"
    } else {
        k
    };
    let key = KEYS.into_iter().find(|key| key.eq_ignore_ascii_case(k))?;
    Some((key, v.trim()))
}

fn list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn parse_checkbox(line: &str) -> Option<Criterion> {
    let rest = line
        .strip_prefix("- [")
        .or_else(|| line.strip_prefix("* ["))?;
    let (mark, text) = rest.split_once(']')?;
    let checked = match mark {
        " " | "" => false,
        "x" | "X" => true,
        _ => return None,
    };
    Some(Criterion {
        text: text.trim().to_string(),
        checked,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Mode;

    const SAMPLE: &str = "---\nbudgets:\n  max_iterations: 20\n---\n# Demo\n\nShip it.\n\n## T1: First\n\nDo the first thing.\nVerify: sh test.sh\nAcceptance:\n- [ ] it works\n- [x] it is fast\n\n## T2: Second\nDepends: T1\nGate: after\nMode: tdd\nScope: src/, tests/\nMax-iterations: 3\n\n```\nVerify: not a field\n```\n";

    #[test]
    fn parses_fields_and_body() {
        let p = Plan::parse("PLAN.md", SAMPLE).unwrap();
        assert_eq!(p.title, "Demo");
        assert_eq!(p.goal, "Ship it.");
        assert_eq!(p.settings["budgets"]["max_iterations"], 20);
        let t1 = &p.tasks[0];
        assert_eq!(t1.verify, vec!["sh test.sh"]);
        assert_eq!(t1.acceptance.len(), 2);
        assert!(t1.acceptance[1].checked);
        assert_eq!(t1.body, "Do the first thing.");
        let t2 = &p.tasks[1];
        assert_eq!(t2.depends, vec!["T1"]);
        assert_eq!(t2.gate, Some(GatePoint::After));
        assert_eq!(t2.mode, Some(Mode::Tdd));
        assert_eq!(t2.scope, vec!["src/", "tests/"]);
        assert_eq!(t2.max_iterations, Some(3));
        assert!(
            t2.verify.is_empty(),
            "a field inside a code fence is body text"
        );
        assert!(t2.body.contains("Verify: not a field"));
        assert_eq!(t2.line, 17);
    }

    #[test]
    fn round_trips_through_markdown() {
        let p = Plan::parse("PLAN.md", SAMPLE).unwrap();
        let mut again = Plan::parse("v2.md", &p.to_markdown()).unwrap();
        let mut orig = p.clone();
        for t in orig.tasks.iter_mut().chain(again.tasks.iter_mut()) {
            t.line = 0;
        }
        assert_eq!(orig, again);
    }

    #[test]
    fn reports_unknown_dependency_with_line() {
        let e = Plan::parse("PLAN.md", "# X\n## T1: a\n## T3: b\nDepends: T9\n").unwrap_err();
        assert_eq!(
            e.located(),
            "PLAN.md:3: task \"T3\" depends on unknown task \"T9\""
        );
    }

    #[test]
    fn reports_cycles() {
        let e = Plan::parse(
            "PLAN.md",
            "# X\n## A: a\nDepends: C\n## B: b\nDepends: A\n## C: c\nDepends: B\n",
        )
        .unwrap_err();
        assert_eq!(e.message, "dependency cycle: A → C → B → A");
    }
}
