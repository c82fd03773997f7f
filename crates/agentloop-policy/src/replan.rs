//! REPLAN proposals: checked against the current plan, never touching done tasks.

use agentloop_evidence::names::{NameCheck, check_names};
use agentloop_journal::{Event, RunState, TaskStatus};
use agentloop_plan::{Mode, Plan, Task};

/// Checks a REPLAN proposal against the current plan. Accepted proposals replace the
/// task being worked on with the proposed tasks; completed tasks never change.
pub fn review_replan(s: &RunState, task: &str, proposal: &str) -> Event {
    let reject = |reason: String| Event::ReplanRejected {
        task: task.to_string(),
        reason,
    };
    if s.replans_used >= s.settings.budgets.max_replans {
        return reject(format!(
            "the replan limit ({}) is reached",
            s.settings.budgets.max_replans
        ));
    }
    match apply_replan(s, task, proposal) {
        Ok(plan) => {
            let old: Vec<&str> = s.plan.ids();
            let new: Vec<&str> = plan.ids();
            let added = new
                .iter()
                .filter(|i| !old.contains(i))
                .map(|i| i.to_string())
                .collect();
            let removed = old
                .iter()
                .filter(|i| !new.contains(i))
                .map(|i| i.to_string())
                .collect();
            Event::ReplanAccepted {
                task: task.to_string(),
                version: s.plan_version + 1,
                plan,
                added,
                removed,
            }
        }
        Err(reason) => reject(reason),
    }
}

/// `into` gets each item of `from` it lacks.
fn keep_all<T: Clone + PartialEq>(into: &mut Vec<T>, from: &[T]) {
    for v in from {
        if !into.contains(v) {
            into.push(v.clone());
        }
    }
}

fn apply_replan(s: &RunState, task: &str, proposal: &str) -> Result<Plan, String> {
    let text = format!("# replan\n\n{proposal}\n");
    let proposed = Plan::parse("REPLAN", &text).map_err(|e| {
        let mut m = e.located();
        if let Some(h) = e.hint {
            m.push_str(&format!(" ({h})"));
        }
        m
    })?;
    for p in &proposed.tasks {
        if let Some(st) = s.task(&p.id)
            && st.status == TaskStatus::Done
        {
            return Err(format!("task {} is completed and cannot change", p.id));
        }
    }
    let original = s
        .plan_task(task)
        .ok_or_else(|| format!("task {task} is not in the plan"))?
        .clone();
    let mentioned: Vec<&str> = proposed.ids();
    let mut new_tasks: Vec<Task> = Vec::new();
    let mut replacement: Vec<Task> = proposed
        .tasks
        .iter()
        .filter(|p| p.id == task || s.plan_task(&p.id).is_none())
        .cloned()
        .collect();
    // The replaced task's tripwires hold for each of its replacements.
    for r in &mut replacement {
        keep_all(&mut r.must_not, &original.must_not);
    }
    // Its criteria, like its checks, still have to hold once its replacement is done.
    if let Some(last) = replacement.last_mut() {
        keep_all(&mut last.criteria, &original.criteria);
    }
    // The original task's checks still have to pass once its replacement is done, and
    // nothing of the agent's runs beside them: a command of its own, run first in the
    // same copy, could write what the checks then load (a stand-in module, a
    // `conftest.py`). New checks go in a task of their own.
    if let Some(last) = replacement.last_mut() {
        no_checks_added(&last.id, &last.verify, &original)?;
        keep_all(&mut last.verify, &original.verify);
        keep_all(&mut last.tests, &original.tests);
    }
    let replacement_ids: Vec<String> = replacement.iter().map(|t| t.id.clone()).collect();
    for t in &s.plan.tasks {
        if t.id == task {
            new_tasks.append(&mut replacement);
            continue;
        }
        // Other pending tasks may be revised by the proposal; completed ones were refused above.
        let mut t = proposed
            .task(&t.id)
            .filter(|_| mentioned.contains(&t.id.as_str()))
            .cloned()
            .unwrap_or_else(|| t.clone());
        // A revision cannot drop what checks a task or what it must not do, nor add a
        // check of its own beside them.
        if let Some(before) = s.plan_task(&t.id) {
            if mentioned.contains(&t.id.as_str()) {
                no_checks_added(&t.id, &t.verify, before)?;
            }
            keep_all(&mut t.verify, &before.verify);
            keep_all(&mut t.tests, &before.tests);
            keep_all(&mut t.must_not, &before.must_not);
            keep_all(&mut t.criteria, &before.criteria);
        }
        // Whoever depended on the replaced task now depends on all of its replacements.
        if !replacement_ids.iter().any(|r| r == task) && t.depends.iter().any(|d| d == task) {
            t.depends.retain(|d| d != task);
            t.depends.extend(replacement_ids.iter().cloned());
        }
        new_tasks.push(t);
    }
    if replacement_ids.is_empty() && !mentioned.contains(&task) {
        return Err(format!("the proposal has no task to replace {task}"));
    }
    let plan = Plan {
        title: s.plan.title.clone(),
        goal: s.plan.goal.clone(),
        settings: s.plan.settings.clone(),
        shaped: s.plan.shaped.clone(),
        must_not: s.plan.must_not.clone(),
        criteria: s.plan.criteria.clone(),
        tasks: new_tasks,
    };
    plan.validate("REPLAN").map_err(|e| e.message)?;
    grants_itself_no_tests(s, task, &plan)?;
    Ok(plan)
}

/// `verify`, proposed for task `id`, which carries `carried`'s checks, names no
/// command `carried` does not.
fn no_checks_added(id: &str, verify: &[String], carried: &Task) -> Result<(), String> {
    let added: Vec<&str> = verify
        .iter()
        .filter(|v| !carried.verify.contains(v))
        .map(String::as_str)
        .collect();
    if added.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{id} carries the checks of {} and a replan cannot add a check beside them (`{}`): put a new check in a task of its own",
        carried.id,
        added.join("`, `")
    ))
}

/// A replan writes no tests of its own into a task that, as a person wrote it, does
/// not write tests (its mode is not `tdd`, it names no `(new)` test and none the
/// baseline did not collect): default-deny would leave the files of such tests out of
/// the checks (what a task may add that the checks load comes from the task as
/// written: `RunState::as_written`), and the task could never pass. Refused, with
/// the reason, before it binds the task.
fn grants_itself_no_tests(s: &RunState, task: &str, plan: &Plan) -> Result<(), String> {
    let collected = s
        .tests_baseline
        .as_ref()
        .map(|b| b.all_tests())
        .unwrap_or_default();
    // What in a task says it writes tests.
    let writes = |t: &Task| -> Vec<String> {
        let mut out: Vec<String> = t
            .tests
            .iter()
            .zip(check_names(&t.tests, &collected))
            .filter(|(n, c)| n.new || *c == NameCheck::Unmatched)
            .map(|(n, _)| n.pattern.clone())
            .collect();
        if t.mode.unwrap_or(s.settings.mode) == Mode::Tdd {
            out.push("mode: tdd".into());
        }
        out
    };
    for t in &plan.tasks {
        let before = s.plan_task(&t.id);
        if before == Some(t) {
            continue;
        }
        let origin = match before {
            Some(_) if t.id != task => s.as_written(&t.id),
            _ => s.as_written(task),
        };
        let Some(origin) = origin else { continue };
        if !writes(origin).is_empty() {
            continue;
        }
        let added: Vec<String> = writes(t)
            .into_iter()
            .filter(|n| !origin.tests.iter().any(|o| o.pattern == *n))
            .collect();
        if !added.is_empty() {
            return Err(format!(
                "{} as the plan's author wrote it writes no tests, and a replan cannot add tests of its own ({}): name only tests the baseline has",
                origin.id,
                added.join(", ")
            ));
        }
    }
    Ok(())
}
