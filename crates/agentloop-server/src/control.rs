//! Control requests over HTTP: appended to the run's journal like the CLI's, and
//! idempotent by the client's request id.

use agentloop_journal::{self as journal, Event, Request, RunStatus};
use axum::Json;
use axum::extract::{ConnectInfo, Path, State};
use serde::Deserialize;
use serde_json::{Value, json};

use agentloop_workspace::WorkspaceError;

use crate::Server;
use crate::error::{ApiError, json_body};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ControlBody {
    /// Chosen by the client: the same id twice is one request.
    request_id: String,
    action: String,
    #[serde(default)]
    note: Option<String>,
    #[serde(default)]
    task: Option<String>,
    /// approve: a diff gate by name (security, database, external, architecture, deploy).
    #[serde(default)]
    gate: Option<String>,
}

pub(crate) async fn control(
    State(s): State<Server>,
    Path(id): Path<String>,
    ConnectInfo(client): ConnectInfo<std::net::SocketAddr>,
    body: Result<Json<ControlBody>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(b) = json_body(body)?;
    if b.request_id.is_empty() || b.request_id.len() > 128 {
        return Err(ApiError::Bad(
            "request_id must be 1 to 128 characters".into(),
        ));
    }
    let request = match (b.action.as_str(), b.task.clone(), b.note.clone()) {
        ("pause", ..) => Request::Pause,
        ("resume", ..) => Request::Resume,
        ("stop", ..) => Request::Stop,
        ("stop_now", ..) => Request::StopNow,
        ("approve", _, note) => Request::Approve {
            note,
            gate: b.gate.clone(),
        },
        ("reject", _, note) => Request::Reject { note },
        ("skip", Some(task), note) => Request::Skip { task, reason: note },
        ("retry", Some(task), _) => Request::Retry { task },
        ("steer", _, Some(note)) if !note.trim().is_empty() => Request::Steer { note },
        ("skip" | "retry", None, _) => {
            return Err(ApiError::Bad(format!("{} needs a task", b.action)));
        }
        ("steer", ..) => return Err(ApiError::Bad("steer needs a note".into())),
        (other, ..) => return Err(ApiError::Bad(format!("unknown action `{other}`"))),
    };
    let run = s.find(&id)?;
    let starter = s.starter.clone();
    let rid = format!("http-{}", b.request_id);
    let out = tokio::task::spawn_blocking(move || -> Result<Value, ApiError> {
        let loaded = run
            .load_cached()
            .map_err(|e| ApiError::Conflict(e.to_string()))?;
        if loaded.state.has_request(&rid) {
            // Idempotent: the same request again is the event it already became.
            let mut seq = 0;
            let _ = journal::scan(&run.journal(), 0, 1, |r| {
                if matches!(&r.event, Event::Control { id, .. } if *id == rid) {
                    seq = r.seq;
                }
            });
            return Ok(json!({ "seq": seq, "duplicate": true }));
        }
        if let Request::Skip { task, .. } | Request::Retry { task } = &request
            && loaded.state.task(task).is_none()
        {
            return Err(ApiError::Bad(format!("run {} has no task {task}", run.id)));
        }
        if matches!(request, Request::Approve { .. } | Request::Reject { .. })
            && loaded.state.gate.is_none()
        {
            return Err(ApiError::Conflict(format!(
                "run {} is not waiting at a gate",
                run.id
            )));
        }
        if loaded.state.status == RunStatus::Completed {
            return Err(ApiError::Conflict(format!("run {} is completed", run.id)));
        }
        // A hook-mode run goes on in its agent's session: `agentloop resume` refuses
        // it, and so does the API (accepted, it would be "running" with nothing
        // driving it).
        if request == Request::Resume && run.lock_holder().is_none() && loaded.state.settings.hook {
            return Err(ApiError::Conflict(format!(
                "run {} is a hook-mode run: it goes on in its Claude Code session (send any message there), or `agentloop resume --headless {}` drives it with the configured agent",
                run.id, run.id
            )));
        }
        // Resuming a run whose driver is gone means driving it again, as the CLI does.
        if request == Request::Resume
            && run.lock_holder().is_none()
            && !loaded.state.settings.hook
            && let Some(starter) = &starter
        {
            let workdir = std::path::PathBuf::from(&loaded.state.workdir);
            starter.resume(&run, &workdir)?;
            let seq = run.load_cached().map(|l| l.state.last_seq).unwrap_or(0);
            return Ok(json!({ "seq": seq, "duplicate": false, "driver": "started" }));
        }
        // The client's process, when it is one of the agent's, to refuse the agent's
        // own requests (a client off this machine is a person's; loopback is all
        // `serve` listens on by default).
        let (rec, _) = run
            .append_control_from(loaded, rid, "http", request, |check| {
                crate::peer::client_among(client, &check.agent_tree()).unwrap_or(0)
            })
            .map_err(|e| match e {
                WorkspaceError::Refused { .. } => ApiError::Forbidden(e.to_string()),
                WorkspaceError::CompletedMeanwhile(_) => ApiError::Conflict(e.to_string()),
                e => ApiError::Internal(e.to_string()),
            })?;
        // With no driver, what follows from the request alone is recorded now, as
        // for the CLI: a stop ends the run, an interrupted iteration is aborted.
        run.settle()
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        Ok(json!({ "seq": rec.seq, "duplicate": false }))
    })
    .await
    .map_err(|e| ApiError::Internal(e.to_string()))??;
    Ok(Json(out))
}
