//! `agentloop config show`.

use std::path::Path;

use agentloop_plan::Plan;
use serde_json::{Map, json};

use crate::error::{CliError, ExitKind};

pub fn show(cwd: &Path, plan: &Path, as_json: bool) -> Result<ExitKind, CliError> {
    let ws = agentloop_workspace::Workspace::find(cwd);
    let plan_path = cwd.join(plan);
    let (front_matter, shaped) = if plan_path.exists() {
        let p = Plan::load(&plan_path)?.with_shape(&ws.root)?;
        (p.settings, p.shaped)
    } else {
        (Map::new(), Map::new())
    };
    let layered = super::load_config_shaped(&ws.root, plan, &front_matter, &shaped, Map::new())?;
    let rows = layered.describe();
    if as_json {
        let map: Map<_, _> = rows
            .into_iter()
            .map(|(k, v, s)| (k, json!({ "value": serde_json::from_str::<serde_json::Value>(&v).unwrap_or_default(), "source": s })))
            .collect();
        outln!("{}", serde_json::to_string_pretty(&map).unwrap_or_default());
        return Ok(ExitKind::Completed);
    }
    // Sources line up, except after the few values longer than a screen's width.
    let width = rows
        .iter()
        .map(|(k, v, _)| k.len() + v.len() + 3)
        .filter(|w| *w <= 100)
        .max()
        .unwrap_or(0);
    for (k, v, s) in rows {
        let kv = format!("{k} = {v}");
        outln!("{kv:width$}  # {s}");
    }
    Ok(ExitKind::Completed)
}
