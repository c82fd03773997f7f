//! The machine-wide registry of runs, so one server can show them all.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;

use crate::run_dir::RunDir;

/// The registry of runs on this machine: `$XDG_STATE_HOME/agentloop/runs.jsonl`
/// (`~/.local/state/agentloop/runs.jsonl`), one `{"run_id","path"}` line per run.
pub fn registry_path() -> Option<PathBuf> {
    agentloop_ground::fsutil::state_dir().map(|d| d.join("runs.jsonl"))
}

pub(crate) fn register(run: &RunDir) -> std::io::Result<()> {
    let path = registry_path().ok_or_else(|| std::io::Error::other("no state directory"))?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let line = serde_json::json!({ "run_id": run.id, "path": run.path }).to_string() + "\n";
    let mut f = OpenOptions::new().create(true).append(true).open(&path)?;
    f.write_all(line.as_bytes())
}

/// Every run in the registry, newest last; duplicates and malformed lines skipped.
pub fn registered_runs() -> Vec<RunDir> {
    let Some(text) = registry_path().and_then(|p| {
        let bytes = agentloop_ground::fsutil::read_regular(&p, 64 << 20).ok()?;
        String::from_utf8(bytes).ok()
    }) else {
        return Vec::new();
    };
    let mut out: Vec<RunDir> = Vec::new();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let (Some(id), Some(path)) = (v["run_id"].as_str(), v["path"].as_str()) else {
            continue;
        };
        if !out.iter().any(|r| r.id == id) {
            out.push(RunDir {
                id: id.to_string(),
                path: PathBuf::from(path),
            });
        }
    }
    out
}
