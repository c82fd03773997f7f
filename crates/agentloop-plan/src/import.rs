//! Converting other tools' plans into a [`Plan`]: snarktank/ralph `prd.json` and
//! Task Master `tasks.json`.

use serde_json::Value;

use crate::model::{Criterion, Plan, Task};

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{file}: not valid JSON: {message}")]
    Json { file: String, message: String },
    #[error("{file}: {message}")]
    Format { file: String, message: String },
}

/// What an import produced, and what it left out.
#[derive(Debug)]
pub struct Imported {
    pub plan: Plan,
    pub format: &'static str,
    /// Items left out because the source marks them as finished or cancelled.
    pub left_out: Vec<String>,
}

pub fn import(file: &str, bytes: &[u8]) -> Result<Imported, ImportError> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| ImportError::Json {
        file: file.into(),
        message: e.to_string(),
    })?;
    let bad = |m: &str| ImportError::Format {
        file: file.into(),
        message: m.into(),
    };
    if v.get("userStories").is_some() {
        return prd(file, &v);
    }
    let tasks = v.get("tasks").or_else(|| {
        // Task Master's tagged layout: {"master": {"tasks": [...]}, ...}
        v.get("master")
            .or_else(|| {
                v.as_object()
                    .and_then(|o| o.values().find(|x| x.get("tasks").is_some()))
            })?
            .get("tasks")
    });
    match tasks {
        Some(t) => task_master(file, t),
        None => Err(bad(
            "neither a prd.json (`userStories`) nor a Task Master tasks.json (`tasks`)",
        )),
    }
}

fn text(v: &Value, key: &str) -> String {
    match v.get(key) {
        Some(Value::String(s)) => s.trim().to_string(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

fn clean_id(raw: &str) -> String {
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

fn prd(file: &str, v: &Value) -> Result<Imported, ImportError> {
    let bad = |m: String| ImportError::Format {
        file: file.into(),
        message: m,
    };
    let stories = v["userStories"]
        .as_array()
        .ok_or_else(|| bad("`userStories` is not a list".into()))?;
    let mut items: Vec<(i64, usize, &Value)> = Vec::new();
    for (i, s) in stories.iter().enumerate() {
        items.push((
            s.get("priority")
                .and_then(Value::as_i64)
                .unwrap_or(i64::MAX),
            i,
            s,
        ));
    }
    items.sort_by_key(|(p, i, _)| (*p, *i));
    let mut tasks = Vec::new();
    let mut left_out = Vec::new();
    for (_, i, s) in items {
        let id = clean_id(&text(s, "id"));
        let id = if id.is_empty() {
            format!("US-{:03}", i + 1)
        } else {
            id
        };
        let title = text(s, "title");
        if title.is_empty() {
            return Err(bad(format!("userStories[{i}] has no title")));
        }
        if s.get("passes").and_then(Value::as_bool) == Some(true) {
            left_out.push(format!("{id} (passes: true)"));
            continue;
        }
        let mut t = Task::new(&id, &title);
        let mut body = text(s, "description");
        let notes = text(s, "notes");
        if !notes.is_empty() {
            body.push_str(&format!("\n\nNotes: {notes}"));
        }
        t.body = body.trim().to_string();
        if let Some(ac) = s.get("acceptanceCriteria").and_then(Value::as_array) {
            t.acceptance = ac
                .iter()
                .filter_map(Value::as_str)
                .map(|c| Criterion {
                    text: c.trim().into(),
                    checked: false,
                })
                .collect();
        }
        tasks.push(t);
    }
    let title = [text(v, "project"), text(v, "branchName")]
        .into_iter()
        .find(|s| !s.is_empty())
        .unwrap_or_else(|| "Imported plan".into());
    finish(
        file,
        "prd.json",
        Plan {
            title,
            goal: text(v, "description"),
            settings: Default::default(),
            shaped: Default::default(),
            must_not: Vec::new(),
            criteria: Vec::new(),
            tasks,
        },
        left_out,
    )
}

fn task_master(file: &str, tasks: &Value) -> Result<Imported, ImportError> {
    let bad = |m: String| ImportError::Format {
        file: file.into(),
        message: m,
    };
    let list = tasks
        .as_array()
        .ok_or_else(|| bad("`tasks` is not a list".into()))?;
    let finished = |v: &Value| {
        matches!(
            text(v, "status").as_str(),
            "done" | "cancelled" | "deferred"
        )
    };
    let mut out: Vec<Task> = Vec::new();
    let mut left_out = Vec::new();
    let mut dropped: Vec<String> = Vec::new();
    for (i, t) in list.iter().enumerate() {
        let raw = text(t, "id");
        if raw.is_empty() {
            return Err(bad(format!("tasks[{i}] has no id")));
        }
        let id = format!("T{}", clean_id(&raw));
        let title = text(t, "title");
        if title.is_empty() {
            return Err(bad(format!("task {raw} has no title")));
        }
        if finished(t) {
            left_out.push(format!("{id} (status: {})", text(t, "status")));
            dropped.push(id);
            continue;
        }
        let deps: Vec<String> = t
            .get("dependencies")
            .and_then(Value::as_array)
            .map(|d| {
                d.iter()
                    .map(|x| format!("T{}", clean_id(x.to_string().trim_matches('"'))))
                    .collect()
            })
            .unwrap_or_default();
        let mut sub_ids = Vec::new();
        for s in t
            .get("subtasks")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let sid = format!("{id}-{}", clean_id(&text(s, "id")));
            if finished(s) {
                left_out.push(format!("{sid} (status: {})", text(s, "status")));
                dropped.push(sid);
                continue;
            }
            let mut st = Task::new(&sid, &text(s, "title"));
            st.body = body(s);
            st.depends = deps.clone();
            for d in s
                .get("dependencies")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let d = d.to_string().trim_matches('"').to_string();
                // Subtask dependencies are sibling numbers, or full "1.2" references.
                let dep = match d.split_once('.') {
                    Some((p, c)) => format!("T{}-{}", clean_id(p), clean_id(c)),
                    None => format!("{id}-{}", clean_id(&d)),
                };
                st.depends.push(dep);
            }
            sub_ids.push(sid);
            out.push(st);
        }
        let mut task = Task::new(&id, &title);
        task.body = body(t);
        task.depends = deps;
        task.depends.extend(sub_ids);
        out.push(task);
    }
    for t in &mut out {
        t.depends.retain(|d| !dropped.contains(d));
        if t.title.is_empty() {
            t.title = t.id.clone();
        }
    }
    finish(
        file,
        "tasks.json",
        Plan {
            title: "Imported plan".into(),
            goal: String::new(),
            settings: Default::default(),
            shaped: Default::default(),
            must_not: Vec::new(),
            criteria: Vec::new(),
            tasks: out,
        },
        left_out,
    )
}

fn body(t: &Value) -> String {
    let mut parts = vec![text(t, "description"), text(t, "details")];
    let ts = text(t, "testStrategy");
    if !ts.is_empty() {
        parts.push(format!("Test strategy: {ts}"));
    }
    parts.retain(|p| !p.is_empty());
    parts.join("\n\n")
}

fn finish(
    file: &str,
    format: &'static str,
    plan: Plan,
    left_out: Vec<String>,
) -> Result<Imported, ImportError> {
    plan.validate(file).map_err(|e| ImportError::Format {
        file: file.into(),
        message: e.message,
    })?;
    Ok(Imported {
        plan,
        format,
        left_out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prd_json_by_priority_without_passed_stories() {
        let json = br#"{"project":"Shop","description":"Checkout flow","userStories":[
            {"id":"US-002","title":"Pay","description":"As a buyer I pay","acceptanceCriteria":["card works"],"priority":2,"passes":false},
            {"id":"US-001","title":"Cart","acceptanceCriteria":[],"priority":1,"passes":true},
            {"id":"US-003","title":"Receipt","acceptanceCriteria":["email sent","Typecheck passes"],"priority":1,"passes":false}]}"#;
        let i = import("prd.json", json).unwrap();
        assert_eq!(i.plan.ids(), vec!["US-003", "US-002"]);
        assert_eq!(i.plan.tasks[0].acceptance.len(), 2);
        assert_eq!(i.left_out, vec!["US-001 (passes: true)"]);
        assert_eq!(i.plan.title, "Shop");
    }

    #[test]
    fn task_master_with_subtasks_and_dependencies() {
        let json = br#"{"master":{"tasks":[
            {"id":1,"title":"Setup","status":"done","dependencies":[]},
            {"id":2,"title":"API","description":"Build it","testStrategy":"curl it","status":"pending","dependencies":[1],
             "subtasks":[{"id":1,"title":"Routes","status":"pending","dependencies":[]},{"id":2,"title":"Auth","status":"pending","dependencies":[1]}]},
            {"id":3,"title":"UI","status":"pending","dependencies":[2]}]}}"#;
        let i = import("tasks.json", json).unwrap();
        assert_eq!(i.plan.ids(), vec!["T2-1", "T2-2", "T2", "T3"]);
        assert_eq!(i.plan.task("T2-2").unwrap().depends, vec!["T2-1"]);
        assert_eq!(i.plan.task("T2").unwrap().depends, vec!["T2-1", "T2-2"]);
        assert!(
            i.plan
                .task("T2")
                .unwrap()
                .body
                .contains("Test strategy: curl it")
        );
        assert_eq!(i.left_out, vec!["T1 (status: done)"]);
    }
}
