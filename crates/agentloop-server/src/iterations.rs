//! Iterations: the timeline of a run, one iteration's files, and its output followed
//! live by offset.

use std::path::PathBuf;

use agentloop_journal::{self as journal, Event};
use axum::Json;
use axum::extract::{Path, State};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::Server;
use crate::error::{ApiError, Q};

pub(crate) async fn iterations(
    State(s): State<Server>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let run = s.find(&id)?;
    let list = tokio::task::spawn_blocking(move || {
        // One row per iteration, filled in as its events go by; the open one has no
        // outcome yet.
        let mut rows: Vec<Value> = Vec::new();
        let row = |rows: &mut Vec<Value>, n: u32| -> Option<usize> {
            rows.iter().rposition(|r| r["iteration"] == n)
        };
        let _ = journal::scan(&run.journal(), 0, 1, |r| match &r.event {
            Event::IterationStarted(st) => rows.push(json!({
                "iteration": st.iteration, "task": st.task, "attempt": st.attempt,
                "kind": st.kind, "agent": st.agent, "started": r.time, "outcome": null,
                "duration_ms": null, "agent_ms": null, "verify_ms": null, "cost_usd": 0.0,
                "tokens": 0, "verified": null, "reason": null,
            })),
            Event::AgentFinished(a) => {
                if let Some(i) = row(&mut rows, a.iteration) {
                    rows[i]["agent_ms"] = json!(a.duration_ms);
                    rows[i]["cost_usd"] = json!(a.cost_usd);
                    rows[i]["tokens"] = json!(a.usage.total());
                    rows[i]["exit_code"] = json!(a.exit_code);
                    rows[i]["final_message"] = json!(a.final_message);
                    rows[i]["session_id"] = json!(a.session_id);
                }
            }
            Event::VerifyFinished(v) => {
                if let Some(i) = row(&mut rows, v.iteration) {
                    rows[i]["verified"] = json!(v.passed);
                    rows[i]["verify_ms"] =
                        json!(v.commands.iter().map(|c| c.duration_ms).sum::<u64>());
                }
            }
            Event::IterationFinished(f) => {
                if let Some(i) = row(&mut rows, f.iteration) {
                    rows[i]["outcome"] = json!(f.outcome);
                    rows[i]["reason"] = json!(f.reason);
                    rows[i]["finished"] = json!(r.time);
                    let ms = |t: &Value| {
                        t.as_str()
                            .and_then(|t| humantime::parse_rfc3339(t).ok())
                            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                            .map(|d| d.as_millis() as u64)
                    };
                    if let (Some(a), Some(b)) = (ms(&rows[i]["started"]), ms(&rows[i]["finished"]))
                    {
                        rows[i]["duration_ms"] = json!(b.saturating_sub(a));
                    }
                }
            }
            _ => {}
        });
        rows
    })
    .await
    .map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(Json(json!({ "iterations": list })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OutputQuery {
    /// Checked by the auth layer; allowed here so the query is not refused.
    #[serde(rename = "token")]
    _token: Option<String>,
    #[serde(default)]
    offset: u64,
    #[serde(default)]
    file: Option<String>,
}

/// The most one `output` call returns.
const OUTPUT_CHUNK: u64 = 64 * 1024;

/// An iteration's agent (or verification) output from a byte offset on, for following
/// it live: `{text, offset, size}` where `offset` is where the next call starts.
pub(crate) async fn output(
    State(s): State<Server>,
    Q(q): Q<OutputQuery>,
    Path((id, n)): Path<(String, u32)>,
) -> Result<Json<Value>, ApiError> {
    let name = match q.file.as_deref() {
        None | Some("agent") => "agent.log",
        Some("verify") => "verify.log",
        Some(other) => {
            return Err(ApiError::Bad(format!(
                "file must be agent or verify, not `{other}`"
            )));
        }
    };
    let run = s.find(&id)?;
    let dir = run.iteration_dir(n);
    if !dir.is_dir() {
        return Err(ApiError::NotFound(format!("run {id} has no iteration {n}")));
    }
    let path = dir.join(name);
    let out = tokio::task::spawn_blocking(move || -> std::io::Result<Value> {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(json!({"text": "", "offset": 0, "size": 0}));
            }
            Err(e) => return Err(e),
        };
        let size = f.metadata()?.len();
        let from = q.offset.min(size);
        f.seek(SeekFrom::Start(from))?;
        let mut buf = Vec::new();
        f.take(OUTPUT_CHUNK).read_to_end(&mut buf)?;
        // Stop before a character cut in half; the next call starts there.
        let keep = match std::str::from_utf8(&buf) {
            Ok(_) => buf.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => buf.len(),
        };
        let text = String::from_utf8_lossy(&buf[..keep]).into_owned();
        Ok(json!({"text": text, "offset": from + keep as u64, "size": size}))
    })
    .await
    .map_err(|e| ApiError::Internal(e.to_string()))?
    .map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(Json(out))
}

/// One iteration's files; only files inside the run's own directory are read.
pub(crate) async fn iteration(
    State(s): State<Server>,
    Path((id, n)): Path<(String, u32)>,
) -> Result<Json<Value>, ApiError> {
    let run = s.find(&id)?;
    let dir: PathBuf = run.iteration_dir(n);
    if !dir.is_dir() {
        return Err(ApiError::NotFound(format!("run {id} has no iteration {n}")));
    }
    let read = |name: &str| {
        let text = std::fs::read(dir.join(name))
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        // At most the last 256 KiB of a log.
        let cut = text.len().saturating_sub(256 * 1024);
        let cut = (cut..text.len())
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(text.len());
        text[cut..].to_string()
    };
    let result: Value = serde_json::from_str(&read("result.json")).unwrap_or(Value::Null);
    let mut prompt = read("prompt.md");
    if prompt.is_empty() {
        // A view a power cut may have lost: the journal keeps what it said.
        let journal = run.journal();
        prompt = tokio::task::spawn_blocking(move || {
            journal::read(&journal)
                .ok()
                .and_then(|c| agentloop_policy::prompt_of_iteration(&c.records, n))
        })
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?
        .unwrap_or_default();
    }
    Ok(Json(json!({
        "iteration": n,
        "prompt": prompt,
        "agent_log": read("agent.log"),
        "verify_log": read("verify.log"),
        "result": result,
    })))
}
