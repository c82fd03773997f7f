//! `agentloop verify-surface`: the files that decide "done" for a run, their baseline
//! versions, and what differs from them now; `--accept` takes a person's own changes
//! as the new baseline.

use std::collections::BTreeMap;
use std::path::Path;

use agentloop_ground::values::OnProtectedChange;
use agentloop_ground::words::plural;
use agentloop_journal::{Baseline, Request, RunState, SurfaceChange};
use agentloop_verify::surface;
use agentloop_workspace::Workspace;
use serde_json::json;

use crate::error::{CliError, ExitKind};
use crate::render::paint;

pub fn verify_surface(
    ws: &Workspace,
    run: Option<&str>,
    as_json: bool,
    accept: bool,
) -> Result<ExitKind, CliError> {
    let run = super::pick_run(ws, run, super::Want::Unfinished)?;
    let loaded = run.load()?;
    let s = &loaded.state;
    let root = Path::new(&s.workdir).to_path_buf();
    let Some(base) = s.baseline.clone() else {
        let why = if s.settings.on_protected_change == OnProtectedChange::Allow {
            "on_protected_change = \"allow\": only each iteration's own changes are checked against `protected`"
        } else {
            "it started without one (not a git work tree, or an older agentloop)"
        };
        return Err(CliError::user(format!(
            "run {} has no verification surface: {why}",
            run.id
        )));
    };
    let changes = surface::check(&root, &base, &s.project(&root))
        .map_err(|e| CliError::internal(format!("cannot check the verification surface: {e}")))?;
    if accept {
        return accept_changes(&run, loaded, &changes);
    }
    if as_json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "run_id": s.run_id,
                "on_protected_change": s.settings.on_protected_change,
                "clean_copy": s.settings.clean_copy,
                "baseline": base,
                "changes": changes,
            }))
            .unwrap_or_default()
        );
        return Ok(ExitKind::Completed);
    }
    print_surface(s, &base, &changes)?;
    Ok(ExitKind::Completed)
}

fn print_surface(s: &RunState, base: &Baseline, changes: &[SurfaceChange]) -> Result<(), CliError> {
    outln!(
        "run {} · verification surface: {} · on_protected_change = {} · checks run {}",
        s.run_id,
        plural(base.len(), "file", "files"),
        match s.settings.on_protected_change {
            OnProtectedChange::Gate => "gate",
            OnProtectedChange::Restore => "restore",
            OnProtectedChange::Allow => "allow",
        },
        if s.settings.clean_copy {
            "on a clean copy"
        } else {
            "in the working tree"
        }
    );
    let changed: BTreeMap<&str, &SurfaceChange> =
        changes.iter().map(|c| (c.path.as_str(), c)).collect();
    let width = base.keys().map(|p| p.len()).max().unwrap_or(4).min(48);
    for (path, f) in base {
        let mark = match changed.get(path.as_str()) {
            Some(c) => paint("1;31", c.kind.as_str()),
            None => String::new(),
        };
        outln!(
            "  {path:width$}  {}  {}  {mark}",
            &f.blob[..f.blob.len().min(10)],
            f.why
        );
    }
    if changes.is_empty() {
        outln!("the tree matches the baseline");
        return Ok(());
    }
    outln!(
        "\n{} since the baseline:",
        plural(changes.len(), "change", "changes")
    );
    for c in changes {
        outln!("{} {}", paint("1;33", "●"), c.describe());
        for line in c.diff.lines() {
            outln!("    {line}");
        }
    }
    outln!(
        "\nA task claimed with these changes waits for a person (gate), or gets the baseline back (restore). Changes you made yourself: `agentloop verify-surface --accept`."
    );
    Ok(())
}

/// Records the surface as it is now as the new baseline (a person's own edits).
fn accept_changes(
    run: &agentloop_workspace::RunDir,
    loaded: agentloop_workspace::Loaded,
    changes: &[SurfaceChange],
) -> Result<ExitKind, CliError> {
    if changes.is_empty() {
        eprintln!(
            "agentloop: run {}: the tree matches the baseline; nothing to accept",
            run.id
        );
        return Ok(ExitKind::Completed);
    }
    if loaded.state.running.iter().any(|o| o.agent.is_none()) {
        return Err(CliError::user(format!(
            "run {} has an iteration in progress: its agent may be making these changes",
            run.id
        ))
        .hint(
            "accept between iterations (`agentloop pause` first), or approve at the surface gate",
        ));
    }
    let files = changes
        .iter()
        .map(|c| (c.path.clone(), c.after.clone()))
        .collect();
    let list: Vec<String> = changes.iter().map(|c| c.describe()).collect();
    let (rec, _) = run.append_control(
        loaded,
        super::request_id("cli"),
        "cli",
        Request::AcceptSurface { files },
    )?;
    eprintln!(
        "agentloop: run {} · event {} · the new baseline takes {}",
        run.id,
        rec.seq,
        list.join(", ")
    );
    Ok(ExitKind::Completed)
}
