//! Mock model services on 127.0.0.1, driven by a scenario: the real agent CLIs talk
//! to them in tests instead of the remote service. Every request is recorded.
//!
//! A scenario is a list of steps. Each request that offers tools (the agent's main
//! conversation) takes the next step; requests without tools (titles and other side
//! calls) get a short text reply that uses no tokens.

pub mod efficiency;

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Token counts a reply reports, chosen by the scenario so the ledger can be checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum Step {
    /// A text answer that ends the turn.
    Text {
        text: String,
        #[serde(default)]
        tokens: Tokens,
    },
    /// A tool call, e.g. Claude's `Bash` with `{"command": …}` or Codex's
    /// `exec_command` with `{"cmd": …}`.
    Tool {
        name: String,
        input: Value,
        #[serde(default)]
        tokens: Tokens,
    },
    /// An HTTP error: 429 (with `retry_after` seconds), 529, 401…
    Error {
        status: u16,
        #[serde(default = "default_error_type")]
        kind: String,
        message: String,
        #[serde(default)]
        retry_after: Option<u64>,
    },
    /// Accept the request, send nothing for `seconds`.
    Stall { seconds: u64 },
}

fn default_error_type() -> String {
    "api_error".into()
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    pub steps: Vec<Step>,
    /// Conversations that run at once (agents of several workers): a request whose
    /// body contains a lane's key is answered from that lane's steps, in order, so
    /// the answers do not depend on which request comes first.
    #[serde(default)]
    pub lanes: Vec<(String, Vec<Step>)>,
}

impl Scenario {
    pub fn new(steps: Vec<Step>) -> Scenario {
        Scenario {
            steps,
            lanes: Vec::new(),
        }
    }

    /// A scenario of lanes only (see [`Scenario::lanes`]).
    pub fn lanes(lanes: Vec<(String, Vec<Step>)>) -> Scenario {
        Scenario {
            steps: Vec::new(),
            lanes,
        }
    }
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub body: Value,
    /// The index of the step it was answered with (`None`: a side call).
    pub step: Option<usize>,
    /// The lane it was answered from, if it was.
    pub lane: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// Anthropic Messages, streaming SSE on `/v1/messages`.
    Anthropic,
    /// OpenAI Responses, streaming SSE on `/v1/responses`.
    OpenAi,
}

struct Shared {
    api: Api,
    steps: Vec<Step>,
    next: Mutex<usize>,
    lanes: Vec<(String, Vec<Step>)>,
    /// The next step of each lane.
    lane_next: Mutex<Vec<usize>>,
    requests: Mutex<Vec<Recorded>>,
    stop: AtomicBool,
}

/// A running mock server; stops when dropped.
pub struct MockServer {
    addr: std::net::SocketAddr,
    shared: Arc<Shared>,
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
}

impl MockServer {
    pub fn start(api: Api, scenario: Scenario) -> MockServer {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind 127.0.0.1"));
        let addr = server.server_addr().to_ip().expect("an IP address");
        let shared = Arc::new(Shared {
            api,
            steps: scenario.steps,
            next: Mutex::new(0),
            lane_next: Mutex::new(vec![0; scenario.lanes.len()]),
            lanes: scenario.lanes,
            requests: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
        });
        let (s, sh) = (server.clone(), shared.clone());
        let thread = std::thread::spawn(move || {
            for req in s.incoming_requests() {
                if sh.stop.load(Ordering::SeqCst) {
                    break;
                }
                let sh = sh.clone();
                std::thread::spawn(move || handle(&sh, req));
            }
        });
        MockServer {
            addr,
            shared,
            server,
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared
            .requests
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    /// Steps answered so far.
    pub fn steps_used(&self) -> usize {
        self.shared.next.lock().map(|n| *n).unwrap_or(0)
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn handle(sh: &Shared, mut req: tiny_http::Request) {
    let mut body = String::new();
    let _ = req.as_reader().read_to_string(&mut body);
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let method = req.method().to_string();
    let path = req.url().to_string();
    let is_model_call = method == "POST"
        && match sh.api {
            Api::Anthropic => path.starts_with("/v1/messages") && !path.contains("count_tokens"),
            Api::OpenAi => path.starts_with("/v1/responses"),
        };
    if !is_model_call {
        sh.requests.lock().unwrap().push(Recorded {
            method,
            path,
            body,
            step: None,
            lane: None,
        });
        let _ = req.respond(
            tiny_http::Response::from_string("{}")
                .with_header(header("Content-Type", "application/json")),
        );
        return;
    }
    let main = body
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty());
    let text = body.to_string();
    let lane = sh
        .lanes
        .iter()
        .position(|(key, _)| main && text.contains(key.as_str()));
    let step = if let Some(l) = lane {
        let mut next = sh.lane_next.lock().unwrap();
        let i = next[l];
        next[l] += 1;
        Some(i)
    } else if main {
        let mut next = sh.next.lock().unwrap();
        let i = *next;
        *next += 1;
        Some(i)
    } else {
        None
    };
    sh.requests.lock().unwrap().push(Recorded {
        method,
        path,
        body: body.clone(),
        step,
        lane: lane.map(|l| sh.lanes[l].0.clone()),
    });
    let steps = match lane {
        Some(l) => &sh.lanes[l].1,
        None => &sh.steps,
    };
    let reply = match step {
        Some(i) => steps.get(i).cloned().unwrap_or(Step::Text {
            text: format!("(mock scenario exhausted after {} steps)", steps.len()),
            tokens: Tokens::default(),
        }),
        None => Step::Text {
            text: "Mock title".into(),
            tokens: Tokens::default(),
        },
    };
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("mock-model")
        .to_string();
    match reply {
        Step::Error {
            status,
            kind,
            message,
            retry_after,
        } => {
            let payload = match sh.api {
                Api::Anthropic => {
                    json!({"type": "error", "error": {"type": kind, "message": message}})
                }
                Api::OpenAi => json!({"error": {"type": kind, "code": kind, "message": message}}),
            };
            let mut resp = tiny_http::Response::from_string(payload.to_string())
                .with_status_code(status)
                .with_header(header("Content-Type", "application/json"));
            if let Some(s) = retry_after {
                // Both the generic header and Anthropic's unified rate-limit headers,
                // whose reset time Claude Code reports.
                let reset = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs() + s)
                    .unwrap_or(0);
                resp = resp
                    .with_header(header("retry-after", &s.to_string()))
                    .with_header(header("anthropic-ratelimit-unified-status", "rejected"))
                    .with_header(header(
                        "anthropic-ratelimit-unified-reset",
                        &reset.to_string(),
                    ))
                    .with_header(header("anthropic-ratelimit-unified-5h-status", "rejected"))
                    .with_header(header(
                        "anthropic-ratelimit-unified-5h-reset",
                        &reset.to_string(),
                    ))
                    .with_header(header(
                        "anthropic-ratelimit-unified-representative-claim",
                        "five_hour",
                    ));
            }
            let _ = req.respond(resp);
        }
        Step::Stall { seconds } => {
            let reader = Stall {
                until: Instant::now() + Duration::from_secs(seconds),
            };
            let resp = tiny_http::Response::new(
                200.into(),
                vec![header("Content-Type", "text/event-stream")],
                reader,
                None,
                None,
            );
            let _ = req.respond(resp);
        }
        Step::Text { .. } | Step::Tool { .. } => {
            let sse = match sh.api {
                Api::Anthropic => anthropic_sse(&reply, &model, step.unwrap_or(0)),
                Api::OpenAi => openai_sse(&reply, &model, step.unwrap_or(0)),
            };
            let resp = tiny_http::Response::from_data(sse)
                .with_header(header("Content-Type", "text/event-stream"))
                .with_header(header("Cache-Control", "no-cache"));
            let _ = req.respond(resp);
        }
    }
}

fn header(k: &str, v: &str) -> tiny_http::Header {
    tiny_http::Header::from_bytes(k.as_bytes(), v.as_bytes()).expect("valid header")
}

/// A body that sends nothing until its time is up.
struct Stall {
    until: Instant,
}

impl Read for Stall {
    fn read(&mut self, _buf: &mut [u8]) -> std::io::Result<usize> {
        while Instant::now() < self.until {
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(0)
    }
}

fn event(out: &mut String, name: &str, data: Value) {
    out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
}

fn anthropic_sse(step: &Step, model: &str, n: usize) -> Vec<u8> {
    let (tokens, block, delta, stop) = match step {
        Step::Text { text, tokens } => (
            *tokens,
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": text}),
            "end_turn",
        ),
        Step::Tool {
            name,
            input,
            tokens,
        } => (
            *tokens,
            json!({"type": "tool_use", "id": format!("toolu_mock_{n}"), "name": name, "input": {}}),
            json!({"type": "input_json_delta", "partial_json": input.to_string()}),
            "tool_use",
        ),
        _ => unreachable!("only replies with content are streamed"),
    };
    let mut out = String::new();
    event(
        &mut out,
        "message_start",
        json!({"type": "message_start", "message": {
        "id": format!("msg_mock_{n}"), "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": tokens.input, "output_tokens": 0,
                  "cache_read_input_tokens": tokens.cache_read, "cache_creation_input_tokens": tokens.cache_write}}}),
    );
    event(
        &mut out,
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": block}),
    );
    event(
        &mut out,
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 0, "delta": delta}),
    );
    event(
        &mut out,
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    event(
        &mut out,
        "message_delta",
        json!({"type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": null},
        "usage": {"output_tokens": tokens.output}}),
    );
    event(&mut out, "message_stop", json!({"type": "message_stop"}));
    out.into_bytes()
}

fn openai_sse(step: &Step, model: &str, n: usize) -> Vec<u8> {
    let (tokens, item) = match step {
        Step::Text { text, tokens } => (
            *tokens,
            json!({"type": "message", "id": format!("msg_mock_{n}"), "role": "assistant", "status": "completed",
                   "content": [{"type": "output_text", "text": text, "annotations": []}]}),
        ),
        Step::Tool {
            name,
            input,
            tokens,
        } => (
            *tokens,
            json!({"type": "function_call", "id": format!("fc_mock_{n}"), "call_id": format!("call_mock_{n}"),
                   "name": name, "arguments": input.to_string(), "status": "completed"}),
        ),
        _ => unreachable!("only replies with content are streamed"),
    };
    let id = format!("resp_mock_{n}");
    let mut out = String::new();
    event(
        &mut out,
        "response.created",
        json!({"type": "response.created", "response": {"id": id, "model": model, "status": "in_progress", "output": []}}),
    );
    event(
        &mut out,
        "response.output_item.added",
        json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
    );
    if let Step::Text { text, .. } = step {
        event(
            &mut out,
            "response.output_text.delta",
            json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "item_id": format!("msg_mock_{n}"), "delta": text}),
        );
    }
    event(
        &mut out,
        "response.output_item.done",
        json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
    );
    event(
        &mut out,
        "response.completed",
        json!({"type": "response.completed", "response": {
        "id": id, "model": model, "status": "completed", "output": [item],
        "usage": {"input_tokens": tokens.input + tokens.cache_read,
                  "input_tokens_details": {"cached_tokens": tokens.cache_read},
                  "output_tokens": tokens.output,
                  "output_tokens_details": {"reasoning_tokens": 0},
                  "total_tokens": tokens.input + tokens.cache_read + tokens.output}}}),
    );
    out.into_bytes()
}
