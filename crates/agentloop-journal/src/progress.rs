//! `progress.md`: the run as a person reads it, derived from the state.

use std::fmt::Write as _;

use super::state::RunState;
use super::task::TaskStatus;
use agentloop_ground::words::{money, plural};

pub fn render(s: &RunState) -> String {
    let mut p = String::new();
    let _ = writeln!(p, "# Progress: {}\n", s.plan.title);
    let _ = writeln!(
        p,
        "Run `{}` · status **{}** · {}/{} · {} · {}\n",
        s.run_id,
        s.status.as_str(),
        s.done_count(),
        plural(s.tasks.len(), "task", "tasks"),
        plural(s.iterations as usize, "iteration", "iterations"),
        money(s.cost_usd)
    );
    p.push_str("## Goal\n\n");
    let _ = writeln!(
        p,
        "{}\n",
        if s.plan.goal.is_empty() {
            "(none given)"
        } else {
            &s.plan.goal
        }
    );
    // Each completion as it happened: the list only grows, even when a task is
    // reopened later.
    p.push_str("## Completed Tasks\n\n");
    for line in &s.completed_log {
        let _ = writeln!(p, "- [x] {line}");
    }
    for t in s.tasks.iter().filter(|t| t.status == TaskStatus::Skipped) {
        let _ = writeln!(
            p,
            "- [ ] {}: {} (skipped{})",
            t.id,
            t.title,
            t.skip_reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        );
    }
    if s.completed_log.is_empty() && !s.tasks.iter().any(|t| t.status == TaskStatus::Skipped) {
        p.push_str("(none yet)\n");
    }
    p.push_str("\n## Learnings\n\n");
    if s.learnings.is_empty() {
        p.push_str("(none yet)\n");
    }
    for (i, l) in s.learnings.iter().enumerate() {
        match s.learned_at.get(i) {
            Some(at) => {
                let _ = writeln!(p, "- {l} ({at})");
            }
            None => {
                let _ = writeln!(p, "- {l}");
            }
        }
    }
    p.push_str("\n## Current Task\n\n");
    match s
        .current()
        .map(|o| o.started.task.clone())
        .or_else(|| s.next_task().map(|t| t.id.clone()))
    {
        Some(id) if !s.is_finished() => {
            let t = s.task(&id);
            let _ = writeln!(
                p,
                "{}: {} (iteration {} of this task)",
                id,
                t.map(|t| t.title.as_str()).unwrap_or(""),
                t.map(|t| t.iterations).unwrap_or(0)
            );
            if let Some(d) = t.and_then(|t| t.last_digest.as_ref()) {
                let _ = writeln!(p, "\nLast failure:\n\n{d}");
            }
        }
        _ => p.push_str("(none)\n"),
    }
    p.push_str("\n## Blocked\n\n");
    let blocked: Vec<_> = s
        .tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Blocked)
        .collect();
    if blocked.is_empty() {
        p.push_str("(nothing)\n");
    }
    for t in blocked {
        let _ = writeln!(
            p,
            "- {}: {}\n\n{}\n",
            t.id,
            t.title,
            t.blocked.as_deref().unwrap_or("")
        );
    }
    if let Some(issue) = &s.settings.tracker.issue {
        let source = s.settings.tracker.source.as_deref().unwrap_or("no tracker");
        let title = if source.starts_with("linear:") {
            "Linear Issue"
        } else {
            "Tracker Issue"
        };
        let _ = writeln!(p, "\n## {title}\n\n{issue} ({source})");
        let told = s
            .ship
            .issues
            .get(agentloop_config::RUN_ISSUE)
            .map(|st| format!("moved to {st}"))
            .unwrap_or_else(|| "not told yet".into());
        let notes = s
            .ship
            .issues
            .keys()
            .filter(|k| k.starts_with(&format!("{}:", agentloop_config::RUN_ISSUE)))
            .count();
        let _ = writeln!(
            p,
            "\n{told}; {} about tasks{}",
            plural(notes, "comment", "comments"),
            if s.settings.tracker.sync {
                ""
            } else {
                " (`[tracker] sync` is off)"
            }
        );
    }
    if let Some(g) = &s.gate {
        let _ = writeln!(
            p,
            "\nWaiting for a person: {}. Run `agentloop approve` or `agentloop reject`.",
            g.describe()
        );
    }
    p
}
