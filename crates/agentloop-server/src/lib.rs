//! The control API behind `agentloop serve`: every run on the machine (from the
//! registry), one run's state, its iterations, control requests appended to its
//! journal like any other, and a live event stream (SSE) that resumes with
//! `Last-Event-ID`. Loopback by default; every request needs the token.

mod dashboard;
mod start;

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentloop_core::journal;
use agentloop_core::journal::RunState;
use agentloop_core::journal::{Event, Request, RunStatus};
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
    /// Extra runs to serve besides the registry: the current project's, and runs this
    /// server started.
    runs: Arc<Mutex<Vec<RunDir>>>,
    /// How to start runs (`POST /api/runs`), when this server can.
    starter: Option<Arc<start::Starter>>,
}

impl Server {
    pub fn new(token: String, extra_runs: Vec<RunDir>) -> Server {
        Server {
            token: Arc::new(token),
            runs: Arc::new(Mutex::new(extra_runs)),
            starter: None,
        }
    }

    /// Lets clients start runs: `exe` is the agentloop binary run as
    /// `exe run PLAN --run-id ID` in a registered repository; `repos` are repositories
    /// besides those of registered runs (the project `serve` was started in).
    pub fn with_starter(mut self, exe: PathBuf, repos: Vec<PathBuf>) -> Server {
        self.starter = Some(Arc::new(start::Starter::new(exe, repos)));
        self
    }

    fn all_runs(&self) -> Vec<RunDir> {
        let mut runs = registered_runs();
        let extra = self.runs.lock().unwrap_or_else(|e| e.into_inner()).clone();
        for r in extra.iter() {
            if !runs.iter().any(|x| x.id == r.id) {
                runs.push(r.clone());
            }
        }
        runs
    }

    fn find(&self, id: &str) -> Result<RunDir, ApiError> {
        let run = self
            .all_runs()
            .into_iter()
            .find(|r| r.id == id)
            .ok_or(ApiError::NotFound(format!("no run {id}")))?;
        if !run.journal().exists() {
            return Err(ApiError::Gone(format!(
                "run {id} is gone: {} was deleted",
                run.path.display()
            )));
        }
        Ok(run)
    }

    pub fn router(self) -> Router {
        Router::new()
            .route("/api/runs", get(list_runs).post(start::start))
            .route("/api/repos", get(start::repos))
            .route("/api/runs/{id}", get(run_state))
            .route("/api/runs/{id}/plan", get(plan_versions))
            .route("/api/runs/{id}/iterations", get(iterations))
            .route("/api/runs/{id}/iterations/{n}", get(iteration))
            .route("/api/runs/{id}/iterations/{n}/output", get(output))
            .route("/api/runs/{id}/control", post(control))
            .route("/api/runs/{id}/events", get(events))
            .route("/api/events", get(all_events))
            .merge(dashboard::routes())
            .layer(DefaultBodyLimit::max(MAX_BODY))
            .with_state(self)
    }
}

#[derive(Debug)]
pub enum ApiError {
    Unauthorized,
    NotFound(String),
    /// A registered run whose directory was deleted.
    Gone(String),
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
            ApiError::Gone(m) => (StatusCode::GONE, m),
            ApiError::Bad(m) => (StatusCode::BAD_REQUEST, m),
            ApiError::Conflict(m) => (StatusCode::CONFLICT, m),
            ApiError::Internal(m) => (StatusCode::INTERNAL_SERVER_ERROR, m),
            ApiError::Rejected(status, m) => (status, m),
        };
        (status, Json(json!({ "error": message }))).into_response()
    }
}

/// `Query`, whose rejections answer in the API's JSON error shape.
struct Q<T>(T);

impl<T, S> axum::extract::FromRequestParts<S> for Q<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, ApiError> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(q)| Q(q))
            .map_err(|e| ApiError::Rejected(e.status(), e.body_text()))
    }
}

#[derive(Deserialize, Default)]
struct TokenQuery {
    token: Option<String>,
}

/// The token from `Authorization: Bearer …` or `?token=` (for EventSource).
fn authorize(s: &Server, headers: &HeaderMap, query_token: Option<&str>) -> Result<(), ApiError> {
    let given = headers
        .get("authorization")
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.strip_prefix("Bearer "))
        .map(str::to_string)
        .or_else(|| query_token.map(str::to_string));
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

/// What waits for a person in this run, in words (empty when nothing does).
fn attention(s: &RunState) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(g) = &s.gate {
        out.push(format!("gate: {}", g.describe()));
    }
    for t in &s.tasks {
        if let Some(why) = &t.blocked {
            let what = if t.blocked_by_breaker {
                "breaker tripped"
            } else {
                "blocked"
            };
            out.push(format!("{} {what}: {why}", t.id));
        }
    }
    if let Some(until) = s.limit_until_ms {
        out.push(format!(
            "usage limit: waiting until {}",
            humantime_ms(until)
        ));
    }
    if let Some(agentloop_core::journal::FinishReason::Budget { budget, .. }) = &s.finished {
        out.push(format!("budget spent: {budget}"));
    }
    out
}

fn humantime_ms(ms: u64) -> String {
    let t = std::time::UNIX_EPOCH + Duration::from_millis(ms);
    humantime::format_rfc3339_seconds(t).to_string()
}

fn summary(run: &RunDir, s: &RunState) -> Value {
    let done = s.done_count();
    let attention = attention(s);
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
        "gate_text": s.gate.as_ref().map(|g| g.describe()),
        "limit_until_ms": s.limit_until_ms,
        "needs_attention": !attention.is_empty(),
        "attention": attention,
        "path": run.path,
    })
}

/// Budget gauges: what was used of each budget the run has.
fn gauges(s: &RunState) -> Vec<Value> {
    let b = &s.settings.budgets;
    let mut out = vec![
        json!({"name": "iterations", "used": s.iterations, "limit": b.max_iterations, "unit": ""}),
    ];
    out.push(json!({"name": "cost", "used": s.cost_usd, "limit": b.max_cost_usd, "unit": "USD"}));
    out.push(json!({"name": "tokens", "used": s.usage.total(), "limit": b.max_tokens, "unit": ""}));
    out.push(json!({"name": "time", "used": s.active_ms as f64 / 1000.0,
        "limit": b.max_duration.map(|d| d.as_secs_f64()), "unit": "s"}));
    out
}

async fn list_runs(
    State(s): State<Server>,
    headers: HeaderMap,
    Q(q): Q<TokenQuery>,
) -> Result<Json<Value>, ApiError> {
    authorize(&s, &headers, q.token.as_deref())?;
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
    Q(q): Q<TokenQuery>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    authorize(&s, &headers, q.token.as_deref())?;
    let (run, state) = load(&s, &id).await?;
    let mut v = summary(&run, &state);
    v["plan_version"] = json!(state.plan_version);
    v["plan"] = json!(state.plan);
    v["finished"] = json!(state.finished.as_ref().map(|r| r.describe()));
    v["learnings"] = json!(state.learnings);
    v["budgets"] = json!(state.settings.budgets);
    v["gauges"] = json!(gauges(&state));
    v["agent"] = json!(state.settings.agent);
    v["mode"] = json!(state.settings.mode);
    v["paused"] = json!(state.paused);
    v["last_seq"] = json!(state.last_seq);
    v["stop_requested"] = json!(state.stop.is_some());
    v["current"] = json!(state.open.as_ref().map(|o| json!({
        "iteration": o.started.iteration, "task": o.started.task, "attempt": o.started.attempt,
        "kind": o.started.kind, "agent": o.started.agent, "started_ms": o.started_ms,
        "phase": if o.verify.is_some() { "deciding" } else if o.agent.is_some() { "verifying" } else { "agent" },
    })));
    v["tasks"] = json!(state
        .tasks
        .iter()
        .map(|t| {
            let plan = state.plan.tasks.iter().find(|p| p.id == t.id);
            json!({"id": t.id, "title": t.title, "status": t.status, "iterations": t.iterations,
                "attempts": t.attempts, "cost_usd": t.cost_usd, "tokens": t.tokens, "blocked": t.blocked,
                "blocked_by_breaker": t.blocked_by_breaker, "rung": t.rung, "commit": t.commit,
                "depends": plan.map(|p| p.depends.clone()).unwrap_or_default()})
        })
        .collect::<Vec<_>>());
    v["progress_md"] = json!(std::fs::read_to_string(run.progress_file()).unwrap_or_default());
    Ok(Json(v))
}

/// Every plan version of a run (v1 and one per accepted replan), as Markdown.
async fn plan_versions(
    State(s): State<Server>,
    headers: HeaderMap,
    Q(q): Q<TokenQuery>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    authorize(&s, &headers, q.token.as_deref())?;
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
    ("post", "/api/runs"),
    ("get", "/api/repos"),
    ("get", "/api/runs/{id}"),
    ("get", "/api/runs/{id}/plan"),
    ("get", "/api/runs/{id}/iterations"),
    ("get", "/api/runs/{id}/iterations/{n}"),
    ("get", "/api/runs/{id}/iterations/{n}/output"),
    ("post", "/api/runs/{id}/control"),
    ("get", "/api/runs/{id}/events"),
    ("get", "/api/events"),
];

/// The OpenAPI document, checked in at `docs/openapi.json`.
pub const OPENAPI: &str = include_str!("../../../docs/openapi.json");

async fn iterations(
    State(s): State<Server>,
    headers: HeaderMap,
    Q(q): Q<TokenQuery>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    authorize(&s, &headers, q.token.as_deref())?;
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
struct OutputQuery {
    token: Option<String>,
    #[serde(default)]
    offset: u64,
    #[serde(default)]
    file: Option<String>,
}

/// The most one `output` call returns.
const OUTPUT_CHUNK: u64 = 64 * 1024;

/// An iteration's agent (or verification) output from a byte offset on, for following
/// it live: `{text, offset, size}` where `offset` is where the next call starts.
async fn output(
    State(s): State<Server>,
    headers: HeaderMap,
    Q(q): Q<OutputQuery>,
    Path((id, n)): Path<(String, u32)>,
) -> Result<Json<Value>, ApiError> {
    authorize(&s, &headers, q.token.as_deref())?;
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
async fn iteration(
    State(s): State<Server>,
    headers: HeaderMap,
    Q(q): Q<TokenQuery>,
    Path((id, n)): Path<(String, u32)>,
) -> Result<Json<Value>, ApiError> {
    authorize(&s, &headers, q.token.as_deref())?;
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

/// A JSON body, or the reason it is not one; serde's unknown-field errors are a bad
/// request, not "unprocessable".
fn json_body<T>(
    body: Result<Json<T>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<T>, ApiError> {
    body.map_err(|e| {
        let status = if e.status() == StatusCode::UNPROCESSABLE_ENTITY {
            StatusCode::BAD_REQUEST
        } else {
            e.status()
        };
        ApiError::Rejected(status, e.body_text())
    })
}

async fn control(
    State(s): State<Server>,
    headers: HeaderMap,
    Q(q): Q<TokenQuery>,
    Path(id): Path<String>,
    body: Result<Json<ControlBody>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    authorize(&s, &headers, q.token.as_deref())?;
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

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct EventsQuery {
    token: Option<String>,
    /// Like `Last-Event-ID`, for clients that cannot set headers (EventSource).
    after: Option<String>,
    /// Every run: begin at each run's current end instead of replaying history.
    #[serde(default)]
    tail: bool,
}

/// Where to begin reading a run's journal to send what follows `after`: its end when
/// `after` is the last event (from the cached state, without reading the journal),
/// else its start. Returns `(byte offset, sequence number there)`.
fn start_point(run: &RunDir, after: u64) -> (u64, u64) {
    match run.load_cached() {
        Ok(l) if l.state.last_seq <= after => (l.state.journal_bytes, l.state.last_seq + 1),
        _ => (0, 1),
    }
}

/// How often a stream looks for new journal lines.
const POLL: Duration = Duration::from_millis(50);

/// Live journal events of one run as SSE; each event's id is its sequence number, so a
/// client reconnecting with `Last-Event-ID` (or `?after=`) misses nothing.
async fn events(
    State(s): State<Server>,
    headers: HeaderMap,
    Q(q): Q<EventsQuery>,
    Path(id): Path<String>,
) -> Result<Sse<impl tokio_stream::Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    authorize(&s, &headers, q.token.as_deref())?;
    let run = s.find(&id)?;
    let after: u64 = headers
        .get("last-event-id")
        .and_then(|h| h.to_str().ok())
        .or(q.after.as_deref())
        .map(|v| {
            v.parse()
                .map_err(|_| ApiError::Bad(format!("`{v}` is not an event id of this run")))
        })
        .transpose()?
        .unwrap_or(0);
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<SseEvent, Infallible>>(256);
    tokio::spawn(async move {
        let r = run.clone();
        let Ok((mut offset, mut next)) =
            tokio::task::spawn_blocking(move || start_point(&r, after)).await
        else {
            return;
        };
        loop {
            let path = run.journal();
            // A stat is all an idle poll costs; the journal is read only when it grew.
            let grown = std::fs::metadata(&path).map(|m| m.len() > offset);
            if let Ok(false) = grown {
                // A client that went away while nothing happened: end here.
                if tx.is_closed() {
                    return;
                }
                tokio::time::sleep(POLL).await;
                continue;
            }
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
            tokio::time::sleep(POLL).await;
        }
    });
    Ok(Sse::new(tokio_stream::wrappers::ReceiverStream::new(rx)).keep_alive(KeepAlive::default()))
}

/// Live events of every run. Each event's id lists every run's position
/// (`RUN:SEQ,RUN:SEQ…`), so `Last-Event-ID` resumes all of them at once.
async fn all_events(
    State(s): State<Server>,
    headers: HeaderMap,
    Q(q): Q<EventsQuery>,
) -> Result<Sse<impl tokio_stream::Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    authorize(&s, &headers, q.token.as_deref())?;
    let tail = q.tail;
    let mut seen: std::collections::BTreeMap<String, u64> = headers
        .get("last-event-id")
        .and_then(|h| h.to_str().ok())
        .or(q.after.as_deref())
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
        let mut first = true;
        loop {
            for run in s.all_runs() {
                if !run.journal().exists() {
                    continue;
                }
                let (offset, next) = match offsets.get(&run.id) {
                    Some(at) => *at,
                    None => {
                        // Runs found when the stream opens begin at their end with
                        // `tail`; runs that appear later are sent whole.
                        let after = seen
                            .get(&run.id)
                            .copied()
                            .or((first && tail).then_some(u64::MAX))
                            .unwrap_or(0);
                        let r = run.clone();
                        let Ok(at) =
                            tokio::task::spawn_blocking(move || start_point(&r, after)).await
                        else {
                            continue;
                        };
                        at
                    }
                };
                let path = run.journal();
                if std::fs::metadata(&path).is_ok_and(|m| m.len() <= offset) {
                    offsets.insert(run.id.clone(), (offset, next));
                    continue;
                }
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
            first = false;
            if tx.is_closed() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    });
    Ok(Sse::new(tokio_stream::wrappers::ReceiverStream::new(rx)).keep_alive(KeepAlive::default()))
}
