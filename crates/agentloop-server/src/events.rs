//! Live journal events as server-sent events, for one run or every run, resumable
//! from any point.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::time::Duration;

use agentloop_journal as journal;
use agentloop_workspace::RunDir;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use serde::Deserialize;
use serde_json::json;

use crate::Server;
use crate::error::{ApiError, Q};

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct EventsQuery {
    /// Checked by the auth layer; allowed here so the query is not refused.
    #[serde(rename = "token")]
    _token: Option<String>,
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

/// A run's journal followed by its size: an idle poll costs one stat, and only what
/// was appended is read.
struct Tail {
    run: RunDir,
    offset: u64,
    next: u64,
}

impl Tail {
    /// Follows `run` from what comes after event `after` (see [`start_point`]).
    async fn after(run: RunDir, after: u64) -> Option<Tail> {
        let r = run.clone();
        let (offset, next) = tokio::task::spawn_blocking(move || start_point(&r, after))
            .await
            .ok()?;
        Some(Tail { run, offset, next })
    }

    /// The records appended since the last poll (none when the journal did not
    /// grow); `None` when the journal cannot be read.
    async fn poll(&mut self) -> Option<Vec<journal::Record>> {
        let path = self.run.journal();
        if std::fs::metadata(&path).is_ok_and(|m| m.len() <= self.offset) {
            return Some(Vec::new());
        }
        let (offset, next) = (self.offset, self.next);
        let c = tokio::task::spawn_blocking(move || journal::read_from(&path, offset, next))
            .await
            .ok()?
            .ok()?;
        if let Some(r) = c.records.last() {
            self.next = r.seq + 1;
        }
        self.offset = c.valid_len;
        Some(c.records)
    }
}

/// Live journal events of one run as SSE; each event's id is its sequence number, so a
/// client reconnecting with `Last-Event-ID` (or `?after=`) misses nothing.
pub(crate) async fn events(
    State(s): State<Server>,
    headers: HeaderMap,
    Q(q): Q<EventsQuery>,
    Path(id): Path<String>,
) -> Result<Sse<impl tokio_stream::Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
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
        let Some(mut tail) = Tail::after(run, after).await else {
            return;
        };
        while let Some(records) = tail.poll().await {
            // A client that went away while nothing happened: end here.
            if records.is_empty() && tx.is_closed() {
                return;
            }
            for r in records.into_iter().filter(|r| r.seq > after) {
                let data = json!({ "seq": r.seq, "time": r.time, "event": r.event }).to_string();
                let ev = SseEvent::default()
                    .id(r.seq.to_string())
                    .event(r.event.kind())
                    .data(data);
                if tx.send(Ok(ev)).await.is_err() {
                    return;
                }
            }
            tokio::time::sleep(POLL).await;
        }
    });
    Ok(Sse::new(tokio_stream::wrappers::ReceiverStream::new(rx)).keep_alive(KeepAlive::default()))
}

/// Live events of every run. Each event's id lists every run's position
/// (`RUN:SEQ,RUN:SEQ…`), so `Last-Event-ID` resumes all of them at once.
pub(crate) async fn all_events(
    State(s): State<Server>,
    headers: HeaderMap,
    Q(q): Q<EventsQuery>,
) -> Result<Sse<impl tokio_stream::Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let tail = q.tail;
    let mut seen: BTreeMap<String, u64> = headers
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
        let mut tails: BTreeMap<String, Tail> = BTreeMap::new();
        let mut first = true;
        loop {
            for run in s.all_runs() {
                if !run.journal().exists() {
                    continue;
                }
                if !tails.contains_key(&run.id) {
                    // Runs found when the stream opens begin at their end with `tail`;
                    // runs that appear later are sent whole.
                    let after = seen
                        .get(&run.id)
                        .copied()
                        .or((first && tail).then_some(u64::MAX))
                        .unwrap_or(0);
                    let Some(t) = Tail::after(run.clone(), after).await else {
                        continue;
                    };
                    tails.insert(run.id.clone(), t);
                }
                let Some(records) = tails.get_mut(&run.id).expect("inserted above").poll().await
                else {
                    continue;
                };
                let after = seen.get(&run.id).copied().unwrap_or(0);
                for r in records.into_iter().filter(|r| r.seq > after) {
                    seen.insert(run.id.clone(), r.seq);
                    let id = seen
                        .iter()
                        .map(|(k, v)| format!("{k}:{v}"))
                        .collect::<Vec<_>>()
                        .join(",");
                    let data =
                        json!({ "run_id": run.id, "seq": r.seq, "time": r.time, "event": r.event })
                            .to_string();
                    let ev = SseEvent::default().id(id).event(r.event.kind()).data(data);
                    if tx.send(Ok(ev)).await.is_err() {
                        return;
                    }
                }
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
