//! The stand-in's streamed answers: watches and followed logs, written as chunks as
//! they come.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::store::{Kind, Selector, status};
use super::{Shared, gone, respond};

/// A streamed answer: the head, then chunks written as they come.
struct Chunked(Box<dyn Write + Send>);

impl Chunked {
    fn start(req: tiny_http::Request, content_type: &str) -> Chunked {
        let mut w = req.into_writer();
        let _ = write!(
            w,
            "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        );
        let _ = w.flush();
        Chunked(w)
    }

    fn send(&mut self, data: &[u8]) -> bool {
        if data.is_empty() {
            return true;
        }
        write!(self.0, "{:x}\r\n", data.len()).is_ok()
            && self.0.write_all(data).is_ok()
            && self.0.write_all(b"\r\n").is_ok()
            && self.0.flush().is_ok()
    }

    /// Breaks the stream off: what follows is no chunk, so the client's reader fails
    /// as on a connection cut mid-body.
    fn break_off(mut self) {
        let _ = self.0.write_all(b"not-a-chunk\r\n\r\n");
        let _ = self.0.flush();
    }

    fn end(mut self) {
        let _ = self.0.write_all(b"0\r\n\r\n");
        let _ = self.0.flush();
    }
}

fn event_line(what: &str, object: &Value) -> Vec<u8> {
    let mut line = json!({"type": what, "object": object})
        .to_string()
        .into_bytes();
    line.push(b'\n');
    line
}

/// `?watch=true`: the changes after `resourceVersion` (with none, or `0`, every
/// current object as `ADDED` first), until `timeoutSeconds`, the client leaves, or
/// the history is compacted.
pub(super) fn watch_stream(
    sh: &Arc<Shared>,
    req: tiny_http::Request,
    kind: Kind,
    ns: &str,
    selector: &Selector,
    query: &BTreeMap<String, String>,
) {
    let from = query
        .get("resourceVersion")
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|v| *v > 0);
    let timeout = query
        .get("timeoutSeconds")
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(Duration::from_secs(1800), Duration::from_secs);
    let deadline = Instant::now() + timeout;
    let mut out = Chunked::start(req, "application/json");
    let mut st = sh.store.lock().unwrap();
    let generation = st.generation;
    let mut cursor = match from {
        Some(v) if v < st.oldest => {
            let gone = status(
                410,
                "Expired",
                &format!("too old resource version: {v} ({})", st.oldest),
                None,
            );
            drop(st);
            sh.expired.fetch_add(1, Ordering::SeqCst);
            out.send(&event_line("ERROR", &gone));
            return out.end();
        }
        Some(v) => v,
        None => {
            let mut first = Vec::new();
            for o in st.list(kind, ns, selector) {
                first.extend(event_line("ADDED", &o));
            }
            let rv = st.rv;
            drop(st);
            if !out.send(&first) {
                return;
            }
            st = sh.store.lock().unwrap();
            rv
        }
    };
    loop {
        if st.generation != generation
            || sh.stopped.load(Ordering::SeqCst)
            || Instant::now() >= deadline
        {
            drop(st);
            return out.end();
        }
        let mut batch = Vec::new();
        let after = cursor;
        for e in st.events.iter().filter(|e| e.rv > after) {
            cursor = e.rv;
            if e.kind == kind && e.namespace == ns && selector.picks(&e.object) {
                batch.extend(event_line(e.what, &e.object));
            }
        }
        if batch.is_empty() {
            st = sh
                .changed
                .wait_timeout(st, Duration::from_millis(200))
                .unwrap()
                .0;
            continue;
        }
        drop(st);
        if !out.send(&batch) {
            return;
        }
        st = sh.store.lock().unwrap();
    }
}

/// `pods/NAME/log`: `400` while the container waits to start; with `follow=true` the
/// output as it comes, until the container exits.
pub(super) fn log(
    sh: &Arc<Shared>,
    req: tiny_http::Request,
    ns: &str,
    name: &str,
    query: &BTreeMap<String, String>,
) {
    let id = format!("{ns}/{name}");
    let buffer = sh.procs.lock().unwrap().get(&id).map(|p| p.log.clone());
    let Some(buffer) = buffer else {
        let st = sh.store.lock().unwrap();
        let answer = match st.get(&(Kind::Pod, ns.to_string(), name.to_string())) {
            None => gone(Kind::Pod, name),
            Some(p) => {
                let container = p["spec"]["containers"][0]["name"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                let why = p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]
                    .as_str()
                    .unwrap_or("ContainerCreating")
                    .to_string();
                (
                    400,
                    status(
                        400,
                        "BadRequest",
                        &format!(
                            "container \"{container}\" in pod \"{name}\" is waiting to start: {why}"
                        ),
                        None,
                    ),
                )
            }
        };
        drop(st);
        return respond(req, answer);
    };
    let follow = matches!(query.get("follow").map(String::as_str), Some("true" | "1"));
    let mut out = Chunked::start(req, "text/plain");
    let mut sent = 0;
    loop {
        let (chunk, exited) = {
            let log = buffer.lock().unwrap();
            let exited = sh
                .procs
                .lock()
                .unwrap()
                .get(&id)
                .is_none_or(|p| p.exited.is_some());
            (log[sent..].to_vec(), exited)
        };
        sent += chunk.len();
        if !out.send(&chunk) {
            return;
        }
        if sent > 0
            && !exited
            && sh
                .break_logs
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
        {
            // The connection breaks: no end of the chunked body.
            sh.broken_logs.fetch_add(1, Ordering::SeqCst);
            return out.break_off();
        }
        if !follow || (exited && chunk.is_empty()) || sh.stopped.load(Ordering::SeqCst) {
            return out.end();
        }
        if chunk.is_empty() {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
