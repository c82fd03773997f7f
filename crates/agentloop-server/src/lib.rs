//! The control API behind `agentloop serve`: every run on the machine (from the
//! registry), one run's state, its iterations, control requests appended to its
//! journal like any other, and a live event stream (SSE) that resumes with
//! `Last-Event-ID`. Loopback by default; every request needs the token.

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agentloop_core::event::{Event, Request, RunStatus};
use agentloop_core::journal;
use agentloop_core::state::RunState;
use agentloop_core::workspace::{RunDir, registered_runs};
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

/// The largest request body accepted.
pub const MAX_BODY: usize = 64 * 1024;

#[derive(Clone)]
pub struct Server {
    token: Arc<String>,
    /// Extra runs to serve besides the registry (tests, `serve --run`).
    runs: Arc<Vec<RunDir>>,
}

impl Server {
    pub fn new(token: String, extra_runs: Vec<RunDir>) -> Server {
        Server {
            token: Arc::new(token),
            runs: Arc::new(extra_runs),
        }
    }

    fn all_runs(&self) -> Vec<RunDir> {
        let mut runs = registered_runs();
        for r in self.runs.iter() {
            if !runs.iter().any(|x| x.id == r.id) {
                runs.push(r.clone());
            }
        }
        runs
    }

    fn find(&self, id: &str) -> Result<RunDir, ApiError> {
        self.all_runs()
            .into_iter()
            .find(|r| r.id == id)
            .ok_or(ApiError::NotFound(format!("no run {id}")))
    }

    pub fn router(self) -> Router {
        Router::new()
            .route("/api/runs", get(list_runs))
            .route("/api/runs/{id}", get(run_state))
            .route("/api/runs/{id}/plan", get(plan_versions))
            .route("/api/runs/{id}/iterations", get(iterations))
            .route("/api/runs/{id}/iterations/{n}", get(iteration))
            .route("/api/runs/{id}/control", post(control))
            .route("/api/runs/{id}/events", get(events))
            .route("/api/events", get(all_events))
            .layer(DefaultBodyLimit::max(MAX_BODY))
            .with_state(self)
    }
}

#[derive(Debug)]
pub enum ApiError {
    Unauthorized,
    NotFound(String),
    Bad(String),
    Conflict(String),
    Internal(String),
    /// Axum's own rejection (malformed JSON 400, too large 413, …).
    Rejected(StatusCode, String),
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, message) = match self {
            ApiError::Unauthorized => (
                StatusCode::UNAUTHORIZED,
                "a valid token is required".to_string(),
            ),
            ApiError::NotFound(m) => (StatusCode::NOT_FOUND, m),
            ApiError::Bad(m) => (StatusCode::BAD_REQUEST, m),
            ApiError::Conflict(m) => (StatusCode::CONFLICT, m),
            ApiError::Internal(m) => (StatusCode::INTERNAL_SERVER_ERROR, m),
            ApiError::Rejected(status, m) => (status, m),
        };
        (status, Json(json!({ "error": message }))).into_response()
    }
}

#[derive(Deserialize, Default)]
struct TokenQuery {
    token: Option<String>,
}

/// The token from `Authorization: Bearer …` or `?token=` (for EventSource).
fn authorize(s: &Server, headers: &HeaderMap, q: &TokenQuery) -> Result<(), ApiError> {
    let given = headers
        .get("authorization")
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.strip_prefix("Bearer "))
        .map(str::to_string)
        .or_else(|| q.token.clone());
    // Constant-time enough for a local token: compare every byte.
    match given {
        Some(g)
            if g.len() == s.token.len()
                && g.bytes()
                    .zip(s.token.bytes())
                    .fold(0u8, |a, (x, y)| a | (x ^ y))
                    == 0 =>
        {
            Ok(())
        }
        _ => Err(ApiError::Unauthorized),
    }
}

fn summary(run: &RunDir, s: &RunState) -> Value {
    let done = s.done_count();
    json!({
        "run_id": s.run_id,
        "status": s.status,
        "title": s.plan.title,
        "workdir": s.workdir,
        "tasks_done": done,
        "tasks_total": s.tasks.len(),
        "iterations": s.iterations,
        "cost_usd": s.cost_usd,
        "tokens": s.usage.total(),
        "active_ms": s.active_ms,
        "created": s.created,
        "updated": s.updated,
        "gate": s.gate,
        "limit_until_ms": s.limit_until_ms,
        "needs_attention": s.gate.is_some() || s.status == RunStatus::Blocked || s.limit_until_ms.is_some(),
        "path": run.path,
    })
}

async fn list_runs(
    State(s): State<Server>,
    headers: HeaderMap,
    Query(q): Query<TokenQuery>,
) -> Result<Json<Value>, ApiError> {
    authorize(&s, &headers, &q)?;
    let runs = tokio::task::spawn_blocking(move || {
        s.all_runs()
            .into_iter()
            .map(|run| {
                if !run.journal().exists() {
                    return json!({ "run_id": run.id, "status": "gone", "path": run.path });
                }
                match run.load_cached() {
                    Ok(l) => summary(&run, &l.state),
                    Err(e) => {
                        json!({ "run_id": run.id, "status": "unreadable", "error": e.to_string() })
                    }
                }
            })
            .collect::<Vec<_>>()
    })
    .await
    .map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(Json(json!({ "runs": runs })))
}

async fn load(s: &Server, id: &str) -> Result<(RunDir, RunState), ApiError> {
    let run = s.find(id)?;
    let r = run.clone();
    let state = tokio::task::spawn_blocking(move || r.load_cached().map(|l| l.state))
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?
        .map_err(|e| ApiError::Conflict(format!("run {id} cannot be read: {e}")))?;
    Ok((run, state))
}

async fn run_state(
    State(s): State<Server>,
    headers: HeaderMap,
    Query(q): Query<TokenQuery>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    authorize(&s, &headers, &q)?;
    let (run, state) = load(&s, &id).await?;
    let mut v = summary(&run, &state);
    v["plan_version"] = json!(state.plan_version);
    v["plan"] = json!(state.plan);
    v["finished"] = json!(state.finished.as_ref().map(|r| r.describe()));
    v["learnings"] = json!(state.learnings);
    v["budgets"] = json!(state.settings.budgets);
    v["tasks"] = json!(state
        .tasks
        .iter()
        .map(|t| json!({"id": t.id, "title": t.title, "status": t.status, "iterations": t.iterations,
            "cost_usd": t.cost_usd, "blocked": t.blocked, "rung": t.rung}))
        .collect::<Vec<_>>());
    v["progress_md"] = json!(std::fs::read_to_string(run.progress_file()).unwrap_or_default());
    Ok(Json(v))
}

/// Every plan version of a run (v1 and one per accepted replan), as Markdown.
async fn plan_versions(
    State(s): State<Server>,
    headers: HeaderMap,
    Query(q): Query<TokenQuery>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    authorize(&s, &headers, &q)?;
    let (run, state) = load(&s, &id).await?;
    let versions: Vec<Value> = (1..=state.plan_version)
        .map(|v| json!({ "version": v, "markdown": std::fs::read_to_string(run.plan_version(v)).unwrap_or_default() }))
        .collect();
    Ok(Json(
        json!({ "current": state.plan_version, "versions": versions }),
    ))
}

/// The routes this server answers, as `(method, path)` (the OpenAPI document lists
/// exactly these).
pub const ROUTES: &[(&str, &str)] = &[
    ("get", "/api/runs"),
    ("get", "/api/runs/{id}"),
    ("get", "/api/runs/{id}/plan"),
    ("get", "/api/runs/{id}/iterations"),
    ("get", "/api/runs/{id}/iterations/{n}"),
    ("post", "/api/runs/{id}/control"),
    ("get", "/api/runs/{id}/events"),
    ("get", "/api/events"),
];

/// The OpenAPI document, checked in at `docs/openapi.json`.
pub const OPENAPI: &str = include_str!("../../../docs/openapi.json");

async fn iterations(
    State(s): State<Server>,
    headers: HeaderMap,
    Query(q): Query<TokenQuery>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    authorize(&s, &headers, &q)?;
    let run = s.find(&id)?;
    let list = tokio::task::spawn_blocking(move || {
        let mut out = Vec::new();
        let _ = journal::scan(&run.journal(), 0, 1, |r| {
            if let Event::IterationFinished(f) = &r.event {
                out.push(json!({"iteration": f.iteration, "outcome": f.outcome, "reason": f.reason, "time": r.time}));
            }
        });
        out
    })
    .await
    .map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(Json(json!({ "iterations": list })))
}

/// One iteration's files; only files inside the run's own directory are read.
async fn iteration(
    State(s): State<Server>,
    headers: HeaderMap,
    Query(q): Query<TokenQuery>,
    Path((id, n)): Path<(String, u32)>,
) -> Result<Json<Value>, ApiError> {
    authorize(&s, &headers, &q)?;
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
    Ok(Json(json!({
        "iteration": n,
        "prompt": read("prompt.md"),
        "agent_log": read("agent.log"),
        "verify_log": read("verify.log"),
        "result": result,
    })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ControlBody {
    /// Chosen by the client: the same id twice is one request.
    request_id: String,
    action: String,
    #[serde(default)]
    note: Option<String>,
    #[serde(default)]
    task: Option<String>,
}

async fn control(
    State(s): State<Server>,
    headers: HeaderMap,
    Query(q): Query<TokenQuery>,
    Path(id): Path<String>,
    body: Result<Json<ControlBody>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    authorize(&s, &headers, &q)?;
    let Json(b) = body.map_err(|e| {
        // serde's unknown-field errors are a bad request, not "unprocessable".
        let status = if e.status() == StatusCode::UNPROCESSABLE_ENTITY {
            StatusCode::BAD_REQUEST
        } else {
            e.status()
        };
        ApiError::Rejected(status, e.body_text())
    })?;
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
        ("approve", _, note) => Request::Approve { note },
        ("reject", _, note) => Request::Reject { note },
        ("skip", Some(task), _) => Request::Skip { task },
        ("retry", Some(task), _) => Request::Retry { task },
        ("steer", _, Some(note)) if !note.trim().is_empty() => Request::Steer { note },
        ("skip" | "retry", None, _) => {
            return Err(ApiError::Bad(format!("{} needs a task", b.action)));
        }
        ("steer", ..) => return Err(ApiError::Bad("steer needs a note".into())),
        (other, ..) => return Err(ApiError::Bad(format!("unknown action `{other}`"))),
    };
    let run = s.find(&id)?;
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
        if let Request::Skip { task } | Request::Retry { task } = &request
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
        let (rec, _) = run
            .append_control(loaded, rid, "http", request)
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        Ok(json!({ "seq": rec.seq, "duplicate": false }))
    })
    .await
    .map_err(|e| ApiError::Internal(e.to_string()))??;
    Ok(Json(out))
}

/// Live journal events of one run as SSE; each event's id is its sequence number, so a
/// client reconnecting with `Last-Event-ID` misses nothing.
async fn events(
    State(s): State<Server>,
    headers: HeaderMap,
    Query(q): Query<TokenQuery>,
    Path(id): Path<String>,
) -> Result<Sse<impl tokio_stream::Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    authorize(&s, &headers, &q)?;
    let run = s.find(&id)?;
    let after: u64 = headers
        .get("last-event-id")
        .and_then(|h| h.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<SseEvent, Infallible>>(256);
    tokio::spawn(async move {
        let (mut offset, mut next) = (0u64, 1u64);
        loop {
            let path = run.journal();
            let (o, n) = (offset, next);
            let batch = tokio::task::spawn_blocking(move || journal::read_from(&path, o, n)).await;
            let Ok(Ok(c)) = batch else { break };
            for r in c.records {
                next = r.seq + 1;
                if r.seq <= after {
                    continue;
                }
                let data = json!({ "seq": r.seq, "time": r.time, "event": r.event }).to_string();
                let ev = SseEvent::default()
                    .id(r.seq.to_string())
                    .event(r.event.kind())
                    .data(data);
                if tx.send(Ok(ev)).await.is_err() {
                    return;
                }
            }
            offset = c.valid_len;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    Ok(Sse::new(tokio_stream::wrappers::ReceiverStream::new(rx)).keep_alive(KeepAlive::default()))
}

/// Live events of every run. Each event's id lists every run's position
/// (`RUN:SEQ,RUN:SEQ…`), so `Last-Event-ID` resumes all of them at once.
async fn all_events(
    State(s): State<Server>,
    headers: HeaderMap,
    Query(q): Query<TokenQuery>,
) -> Result<Sse<impl tokio_stream::Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    authorize(&s, &headers, &q)?;
    let mut seen: std::collections::BTreeMap<String, u64> = headers
        .get("last-event-id")
        .and_then(|h| h.to_str().ok())
        .map(|v| {
            v.split(',')
                .filter_map(|p| p.rsplit_once(':'))
                .filter_map(|(run, seq)| Some((run.to_string(), seq.parse().ok()?)))
                .collect()
        })
        .unwrap_or_default();
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<SseEvent, Infallible>>(256);
    tokio::spawn(async move {
        // Byte offsets per run, so each poll reads only what is new.
        let mut offsets: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
        loop {
            for run in s.all_runs() {
                if !run.journal().exists() {
                    continue;
                }
                let (offset, next) = offsets.get(&run.id).copied().unwrap_or((0, 1));
                let path = run.journal();
                let Ok(Ok(c)) =
                    tokio::task::spawn_blocking(move || journal::read_from(&path, offset, next))
                        .await
                else {
                    continue;
                };
                let after = seen.get(&run.id).copied().unwrap_or(0);
                let mut last = next - 1;
                for r in c.records {
                    last = r.seq;
                    if r.seq <= after {
                        continue;
                    }
                    seen.insert(run.id.clone(), r.seq);
                    let id = seen
                        .iter()
                        .map(|(k, v)| format!("{k}:{v}"))
                        .collect::<Vec<_>>()
                        .join(",");
                    let data =
                        json!({ "run_id": run.id, "seq": r.seq, "time": r.time, "event": r.event })
                            .to_string();
                    if tx
                        .send(Ok(SseEvent::default()
                            .id(id)
                            .event(r.event.kind())
                            .data(data)))
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
                offsets.insert(run.id.clone(), (c.valid_len, last + 1));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    });
    Ok(Sse::new(tokio_stream::wrappers::ReceiverStream::new(rx)).keep_alive(KeepAlive::default()))
}
