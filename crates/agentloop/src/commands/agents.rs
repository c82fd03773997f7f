//! `agentloop agents`: the known agents, whether each is installed, its version and
//! what agentloop reads from it.

use std::path::Path;

use agentloop_exec::sandbox::Sandbox;
use serde_json::{Map, json};

use crate::error::{CliError, ExitKind};

pub fn agents(cwd: &Path, as_json: bool) -> Result<ExitKind, CliError> {
    let ws = agentloop_workspace::Workspace::find(cwd);
    let config =
        super::load_config(&ws.root, Path::new("PLAN.md"), &Map::new(), Map::new())?.config;
    let mut names: Vec<String> = agentloop_agents::BUILTIN
        .iter()
        .map(|s| s.to_string())
        .collect();
    names.extend(
        config
            .agents
            .keys()
            .filter(|k| !names.contains(k))
            .cloned()
            .collect::<Vec<_>>(),
    );
    // Each probe starts the CLI with `--version`, which takes seconds for some (Node.js
    // loading a large bundle, Python importing a package): all at once, not one after
    // the other.
    let probes: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = names
            .iter()
            .map(|name| s.spawn(|| agentloop_agents::probe::probe_fresh(&config, name)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    let mut rows = Vec::new();
    for (name, probe) in names.iter().zip(probes) {
        let kind = config
            .agents
            .get(name)
            .map(|a| a.kind.to_string())
            .unwrap_or_else(|| name.clone());
        match probe {
            Ok(p) => {
                let untested = p
                    .version
                    .as_deref()
                    .and_then(|v| agentloop_agents::probe::newer_than_tested(&kind, v));
                rows.push(json!({"name": name, "kind": kind, "program": p.program, "installed": true, "usable": true,
                    "version": p.version, "supports": p.supports, "default": config.run.agent == *name,
                    "newest_tested": untested}))
            }
            Err(e) => {
                use agentloop_agents::probe::ProbeError;
                // Which of the words is true: not there at all, or there but unusable.
                let (installed, state) = match &e {
                    ProbeError::Missing { .. } => (false, "not installed".to_string()),
                    ProbeError::TooOld { found, .. } => (true, format!("too old ({found})")),
                    ProbeError::Slow { .. } => (true, "installed, slow to answer --version".into()),
                    ProbeError::Failed { .. } => (true, "installed, does not start".into()),
                    ProbeError::Unconfigured { .. } => {
                        (true, "installed, no model configured".into())
                    }
                };
                // A slow answer is no broken CLI: a run goes on with it.
                let usable = matches!(e, ProbeError::Slow { .. });
                rows.push(
                    json!({"name": name, "kind": kind, "installed": installed, "usable": usable,
                    "state": state, "problem": e.to_string(),
                    "hint": e.hint(), "default": config.run.agent == *name}),
                )
            }
        }
    }
    if as_json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&rows).unwrap_or_default()
        );
        return Ok(ExitKind::Completed);
    }
    for r in rows {
        let mark = if r["default"] == true { "*" } else { " " };
        let name = r["name"].as_str().unwrap_or_default();
        let kind = r["kind"].as_str().unwrap_or_default();
        if r.get("state").is_none() {
            let version = r["version"].as_str().unwrap_or("-");
            outln!(
                "{mark} {name:12} {kind:8} {version:28} {}",
                r["supports"].as_str().unwrap_or_default()
            );
            if let Some(tested) = r["newest_tested"].as_str() {
                outln!(
                    "  {:21} newer than the newest version agentloop was tested with ({tested}); `scripts/drift` runs the suite against it",
                    ""
                );
            }
        } else {
            outln!(
                "{mark} {name:12} {kind:8} {:28} {}",
                r["state"].as_str().unwrap_or("not installed"),
                r["hint"].as_str().unwrap_or_default()
            );
            // Why it does not start, which the words above do not say (`--json` has it
            // too); a version too old or a model missing they say already.
            let failed = r["state"].as_str().is_some_and(|s| {
                s.starts_with("installed, does not") || s.starts_with("installed, slow")
            });
            if failed && let Some(problem) = r["problem"].as_str() {
                outln!("  {:21} {problem}", "");
            }
        }
    }
    // Whether `[sandbox] mode = "workspace"` can confine the agents here, and
    // whether the checks run confined.
    match config.sandbox.check() {
        Ok(()) => outln!(
            "sandbox: {} works here: `[sandbox] mode = \"workspace\"` (or --sandbox workspace) confines each agent",
            config.sandbox.bwrap
        ),
        Err(e) => outln!("sandbox: not available: {e}"),
    }
    match agentloop_exec::sandbox::judge::unconfined(&config.sandbox) {
        None => outln!("checks: confined (no network, only their copy writable)"),
        Some(why) => outln!("checks: unconfined ({why}): a run's verdict is MONITOR at best"),
    }
    Ok(ExitKind::Completed)
}
