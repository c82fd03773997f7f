//! `agentloop handoff`: a run's handoff (what was built, what was left, open
//! questions), and with `--to-issues` its follow-ups filed on the configured tracker —
//! one issue per task not done and per open question, each said once: an open issue
//! with the same title is not filed again.

use agentloop_journal::{RunState, TaskStatus};
use agentloop_workspace::Workspace;

use crate::error::{CliError, ExitKind};

/// A follow-up: its issue's title and body.
struct FollowUp {
    title: String,
    body: String,
}

/// What a run leaves to do: every task not done (with why), every open question.
fn follow_ups(s: &RunState) -> Vec<FollowUp> {
    let mut out = Vec::new();
    let from = format!(
        "From agentloop run `{}` ({}), which ended {}.",
        s.run_id,
        s.plan.title,
        s.status.as_str()
    );
    for t in s.tasks.iter().filter(|t| t.status != TaskStatus::Done) {
        let why = t
            .skip_reason
            .as_deref()
            .or(t.blocked.as_deref())
            .unwrap_or("not reached");
        let body = s
            .plan_task(&t.id)
            .map(|p| p.body.trim().to_string())
            .filter(|b| !b.is_empty())
            .map(|b| format!("\n\n{b}"))
            .unwrap_or_default();
        out.push(FollowUp {
            title: format!("{}: {} ({})", t.id, t.title, t.status.as_str()),
            body: format!(
                "{from}\n\nTask {} was left {}: {why}{body}",
                t.id,
                t.status.as_str()
            ),
        });
    }
    for t in &s.tasks {
        if let Some(q) = &t.question {
            out.push(FollowUp {
                title: format!("{}: an open question", t.id),
                body: format!("{from}\n\nThe agent working on {} asked: {q}", t.id),
            });
        }
    }
    out
}

pub fn handoff(
    ws: &Workspace,
    run: Option<&str>,
    to_issues: bool,
    dry_run: bool,
) -> Result<ExitKind, CliError> {
    let run = ws.resolve(run)?;
    let state = run.load()?.state;
    if !to_issues {
        outln!("{}", agentloop_journal::handoff(&state));
        return Ok(ExitKind::Completed);
    }
    if !state.is_finished() {
        return Err(CliError::user(format!(
            "run {} is not over: its follow-ups are filed once it ends",
            state.run_id
        ))
        .hint("`agentloop handoff` prints where it stands now"));
    }
    // The run's tracker; one started without any files on the one configured now.
    let tracker = match state.settings.tracker.source {
        Some(_) => state.settings.tracker.clone(),
        None => super::run_config(&ws.root, &state)?.config.tracker,
    };
    let Some(source) = tracker.source.as_deref() else {
        return Err(CliError::user(
            "no tracker to file follow-ups on: `[tracker] source` is not set",
        )
        .hint("set it in agentloop.toml, e.g. `[tracker] source = \"github:OWNER/REPO\"`"));
    };
    let source = agentloop_forge::tracker::Source::parse(source)
        .ok_or_else(|| CliError::user(format!("[tracker] source: `{source}` is not a tracker")))?;
    let todo = follow_ups(&state);
    if todo.is_empty() {
        eprintln!("agentloop: run {} left nothing to follow up", state.run_id);
        return Ok(ExitKind::Completed);
    }
    if dry_run {
        for f in &todo {
            outln!("would file: {}", f.title);
        }
        return Ok(ExitKind::Completed);
    }
    let t =
        agentloop_forge::tracker(&source, tracker.api_url.as_deref()).map_err(CliError::user)?;
    let forge = |e: agentloop_forge::ForgeError| {
        CliError::user(format!("{}: {e}", source.without_filter()))
    };
    let open = t.issues("").map_err(forge)?;
    for f in todo {
        if let Some(i) = open.iter().find(|i| i.title == f.title) {
            outln!("already filed: {} {}", i.key, i.url);
            continue;
        }
        let i = t.create(&f.title, &f.body).map_err(forge)?;
        outln!("filed: {} {} ({})", i.key, i.url, f.title);
    }
    Ok(ExitKind::Completed)
}
